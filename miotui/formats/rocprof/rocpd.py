"""rocprofv3's SQLite output, the rocpd database (``rocprofv3 --kernel-trace --output-format rocpd``,
the default format from ROCm 7.0: ``<host>/<pid>_results.db``), read for what the joins to a
MIOpen log need: kernel dispatches (name, start, end, correlation id), and the regions beside
them: the runtime API calls that launched them (``--hip-trace``) and roctx ranges
(``--marker-trace``).

Read from the schema the ROCprofiler-SDK documents (its ``rocpd_tables.sql`` and views):

* ``rocpd_kernel_dispatch``: ``kernel_id`` -> ``rocpd_info_kernel_symbol`` (``display_name``,
  ``kernel_name``), ``event_id`` -> ``rocpd_event`` (``correlation_id``), and its times;
* ``rocpd_region``: ``name_id`` -> ``rocpd_string`` (the API call's name), ``track_id`` ->
  ``rocpd_track`` (``pid``, ``tid``), ``event_id`` -> ``rocpd_event`` (``correlation_id``; a roctx
  range's text is its ``extdata``'s ``message``), and its times.

Times are ``start_id``/``end_id`` into ``rocpd_timestamp`` (``value``, ns) in schema 3, or
``start``/``end`` columns where a table has them.  In a file rocprofv3 writes, these names are views
over tables whose names end in a uuid (one set per process); the names without it are what the
SDK's own views and tools query, so they are what is read here.  Built against the documentation
only: no real rocpd database could be made or found for this project (no AMD GPU); the tests build
one from the documented tables.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from miotui.formats.rocprof.kernel_trace import Dispatch, KernelTraceError, kernel_family

SQLITE_MAGIC = b"SQLite format 3\x00"
#: rows read from each table (beyond this the rest is not joined, and the join says so)
ROWS_KEPT = 20_000_000
#: the longest name or roctx text kept
NAME_CHARS = 4096


def looks_like_rocpd(head: bytes) -> bool:
    """Whether a file's first bytes are a rocpd database's: SQLite's header, and the schema (on
    the first pages, written when the file was created) naming rocpd's tables."""
    return head.startswith(SQLITE_MAGIC) and b"rocpd_" in head


@dataclass(frozen=True)
class Region:
    """A span on a CPU thread: a runtime API call (its correlation id ties it to the kernel it
    launched) or a roctx range (``marker``: ``name`` is the range's text)."""

    name: str
    start_ns: int
    end_ns: int
    thread: tuple
    correlation: Optional[int]
    marker: bool


@dataclass(frozen=True)
class RocpdTrace:
    dispatches: tuple[Dispatch, ...]
    regions: tuple[Region, ...]
    #: rows past ``ROWS_KEPT`` left unread, per table
    dropped: tuple[tuple[str, int], ...] = ()


def read_rocpd(path: str, problems: list) -> RocpdTrace:
    """The dispatches and regions of a rocpd database; a row that does not read is appended to
    ``problems`` as (its place in the table's read order, reason naming its id); KernelTraceError
    when the file is not one."""
    try:
        db = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise KernelTraceError(f"the rocpd database cannot be opened: {e}") from None
    try:
        tables = _names(db)
        for needed in ("rocpd_kernel_dispatch", "rocpd_info_kernel_symbol"):
            if needed not in tables:
                raise KernelTraceError(f"not a rocpd database with a kernel trace: no {needed} "
                                       "(record with rocprofv3 --kernel-trace)")
        dropped: list[tuple[str, int]] = []
        dispatches = tuple(_dispatches(db, tables, problems, dropped))
        regions = tuple(_regions(db, tables, problems, dropped)) if "rocpd_region" in tables else ()
        return RocpdTrace(dispatches, regions, tuple(dropped))
    except sqlite3.Error as e:
        raise KernelTraceError(f"the rocpd database cannot be read: {e}") from None
    finally:
        db.close()


def _names(db: sqlite3.Connection) -> set[str]:
    return {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f'PRAGMA table_info("{table}")')}


def _times(db: sqlite3.Connection, tables: set[str], table: str, alias: str) -> tuple[str, str, str]:
    """(start, end, joins): the SQL for a table's times, as its schema version keeps them."""
    cols = _columns(db, table)
    if {"start", "end"} <= cols:
        return f'{alias}."start"', f'{alias}."end"', ""
    if {"start_id", "end_id"} <= cols and "rocpd_timestamp" in tables:
        guid = "guid" in cols and "guid" in _columns(db, "rocpd_timestamp")
        on = (lambda t: f" AND {t}.guid = {alias}.guid") if guid else (lambda t: "")
        return ("TS.value", "TE.value", f"JOIN rocpd_timestamp TS ON TS.id = {alias}.start_id{on('TS')} "
                                        f"JOIN rocpd_timestamp TE ON TE.id = {alias}.end_id{on('TE')}")
    raise KernelTraceError(f"{table} has neither start/end nor start_id/end_id with rocpd_timestamp")


def _event(db: sqlite3.Connection, tables: set[str], alias: str) -> tuple[str, str, str]:
    """(correlation id, extdata, join) from ``rocpd_event`` where the database has it."""
    if "rocpd_event" not in tables:
        return "NULL", "NULL", ""
    has_extdata = "extdata" in _columns(db, "rocpd_event")
    return "E.correlation_id", "E.extdata" if has_extdata else "NULL", \
        f"LEFT JOIN rocpd_event E ON E.id = {alias}.event_id"


def _rows(db: sqlite3.Connection, sql: str, table: str, dropped: list):
    cursor = db.execute(sql)
    for n, row in enumerate(cursor, 1):
        if n > ROWS_KEPT:
            dropped.append((table, 1 + sum(1 for _ in cursor)))
            return
        yield n, row


def _dispatches(db: sqlite3.Connection, tables: set[str], problems: list, dropped: list):
    start, end, time_joins = _times(db, tables, "rocpd_kernel_dispatch", "K")
    correlation, _, event_join = _event(db, tables, "K")
    symbol = _columns(db, "rocpd_info_kernel_symbol")
    name = "COALESCE(S.display_name, S.kernel_name)" if "display_name" in symbol else "S.kernel_name"
    sql = (f"SELECT K.id, {name}, {start}, {end}, {correlation} FROM rocpd_kernel_dispatch K "
           f"JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id {time_joins} {event_join} ORDER BY K.id")
    for n, (row_id, kernel, t0, t1, corr) in _rows(db, sql, "rocpd_kernel_dispatch", dropped):
        if type(t0) is not int or type(t1) is not int or t1 < t0:
            problems.append((n, f"rocpd_kernel_dispatch id {row_id}: no integer start and end in order"))
            continue
        text = str(kernel or "")[:NAME_CHARS]
        yield Dispatch(text, t0, t1, kernel_family(text), corr if type(corr) is int else None)


def _regions(db: sqlite3.Connection, tables: set[str], problems: list, dropped: list):
    start, end, time_joins = _times(db, tables, "rocpd_region", "R")
    correlation, extdata, event_join = _event(db, tables, "R")
    thread, track_join = ("T.pid, T.tid", "LEFT JOIN rocpd_track T ON T.id = R.track_id") \
        if "rocpd_track" in tables else ("NULL, NULL", "")
    sql = (f"SELECT R.id, N.string, {start}, {end}, {thread}, {correlation}, {extdata} FROM rocpd_region R "
           f"JOIN rocpd_string N ON N.id = R.name_id {time_joins} {track_join} {event_join} ORDER BY R.id")
    for n, (row_id, name, t0, t1, pid, tid, corr, ext) in _rows(db, sql, "rocpd_region", dropped):
        if type(t0) is not int or type(t1) is not int or t1 < t0:
            problems.append((n, f"rocpd_region id {row_id}: no integer start and end in order"))
            continue
        message = _message(ext)
        yield Region((message if message is not None else str(name or ""))[:NAME_CHARS], t0, t1, (pid, tid),
                     corr if type(corr) is int else None, message is not None)


def _message(extdata: object) -> Optional[str]:
    """A roctx range's text: its event's ``extdata`` ``message`` (None: not a range with one)."""
    if isinstance(extdata, bytes):
        extdata = extdata.decode("utf-8", "replace")
    if not isinstance(extdata, str) or '"message"' not in extdata:
        return None
    try:
        value = json.loads(extdata).get("message")
    except (ValueError, AttributeError, RecursionError):
        return None
    return value if isinstance(value, str) else None

"""The unique-layer table: one row per distinct problem, with how it was seen.

A training log repeats the same few dozen layers thousands of times, so memory here
grows with unique layers (plus a bounded list of undecoded lines), never with the
log's size.  The catalog is written by one scanner thread and read by the UI thread;
readers get frozen ``LayerSnapshot`` copies and ask only for rows that changed since
the version they last saw, so the UI can update rows in place.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from miotui.driver import DriverCommandError, to_driver_command
from miotui.problems import Problem
from miotui.startup import NO_STARTUP, LayerStartup, LayerStartupCounts, StartupLedger
from miotui.views.timing import KernelTime

#: Source lines kept per layer (the first sighting's block or command), for the detail view.
RAW_LINES_PER_LAYER = 40
#: Undecoded records kept (all are counted).
UNDECODED_KEPT = 10_000
#: Annotation values kept per layer and name (e.g. every solver a Find-Db lists).
ANNOTATION_VALUES_KEPT = 16


@dataclass(frozen=True)
class LayerSnapshot:
    index: int
    problem: Problem
    executions: int
    finds: int
    mentions: int
    first_line: int
    last_line: int
    sources: tuple[str, ...]
    files: tuple[str, ...]
    #: latest value per name, in first-seen order
    annotations: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]
    raw: tuple[tuple[int, str], ...]
    driver_command: str
    #: every kept value per name (e.g. all find results), for the detail view
    annotation_history: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: what its first iteration cost (Finds, searches, compiles: ``miotui.startup``)
    startup: LayerStartup = NO_STARTUP
    #: executions per file, for a layer seen in several (ranks): (file, executions) in first-seen order
    file_executions: tuple[tuple[str, int], ...] = ()

    @property
    def id(self) -> int:
        """The layer's id everywhere (app, ``decode``, exports, ``run --layer``): its
        arrival order in the log, 1 for the first layer met."""
        return self.index + 1

    @property
    def total(self) -> int:
        return self.executions + self.finds + self.mentions

    def annotation(self, name: str, default: str = "") -> str:
        for k, v in self.annotations:
            if k == name:
                return v
        return default


@dataclass(frozen=True)
class UndecodedRecord:
    line: int
    reason: str
    text: str
    file: str = ""


class _Row:
    """One layer's mutable state.  ``last_line`` is the latest line a sighting of it was at
    (-1: none yet); a layer's last line is that or, for a layer so far only annotated, the line
    it was created at (``first_line``).  Kept apart, with ``sighted`` and ``counted_if_new``,
    because ``Catalog.merge`` must tell a later file's sightings of a layer from the row that
    file's own catalog had to create for it."""

    __slots__ = ("index", "problem", "counts", "first_line", "last_line", "sources", "files",
                 "annotations", "warnings", "raw", "driver_command", "version", "_snapshot", "startup",
                 "sighted", "counted_if_new", "file_executions")

    def __init__(self, index: int, problem: Problem, line: int):
        self.index = index
        self.problem = problem
        self.counts = {"execution": 0, "find": 0, "mention": 0}
        self.first_line = line
        self.last_line = -1
        #: ``add_sighting`` met it (it then carries the sighting's file)
        self.sighted = False
        #: the role of a sighting counted only because the row was new (``only_if_new``)
        self.counted_if_new: Optional[str] = None
        self.sources: dict[str, None] = {}
        self.files: dict[str, None] = {}
        #: executions per file (only where a file was named): the detail's per-file counts
        self.file_executions: Optional[dict[str, int]] = None
        self.annotations: dict[str, list[str]] = {}
        self.warnings: dict[str, None] = {}
        self.raw: list[tuple[int, str]] = []
        #: written when first asked for (``snapshot``): a log of many distinct layers creates a
        #: row per line, and a reader may never want the command (the table does not show it)
        self.driver_command: Optional[str] = None
        self.version = 0
        self._snapshot: Optional[LayerSnapshot] = None
        self.startup: Optional[LayerStartupCounts] = None

    def _write_command(self) -> None:
        """The layer's MIOpenDriver command ("" when the driver cannot express it, with a
        warning that says why, first among the row's warnings)."""
        try:
            self.driver_command = to_driver_command(self.problem)
        except DriverCommandError as e:
            self.driver_command = ""
            self.warnings = {f"no MIOpenDriver command: {e}": None, **self.warnings}

    def snapshot(self) -> LayerSnapshot:
        if self._snapshot is None:
            if self.driver_command is None:
                self._write_command()
            notes = self.annotations
            counts = self.counts
            # positional, in LayerSnapshot's field order: every layer of an export is snapshot once
            self._snapshot = LayerSnapshot(
                self.index, self.problem, counts["execution"], counts["find"], counts["mention"], self.first_line,
                max(self.first_line, self.last_line), tuple(self.sources), tuple(self.files),
                tuple([(k, v[-1]) for k, v in notes.items()]) if notes else (), tuple(self.warnings),
                tuple(self.raw), self.driver_command,
                tuple([(k, tuple(v)) for k, v in notes.items()]) if notes else (),
                NO_STARTUP if self.startup is None else self.startup.freeze(),
                tuple(self.file_executions.items()) if self.file_executions else ())
        return self._snapshot


#: the type of a catalog's rows, for code that must tell a row from a value (``decoding.ranges``)
LayerRow = _Row


class Catalog:
    """Unique layers keyed by their problem value (op, direction, dtype, layout and shape)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.version = 0
        self._rows: list[_Row] = []
        self._by_problem: dict[Problem, _Row] = {}
        self._undecoded: deque[UndecodedRecord] = deque(maxlen=UNDECODED_KEPT)
        self.undecoded_count = 0
        #: Finds whose problem no line named (``Info [FindConv...] requestAlgoCount`` alone)
        self.unknown_finds = 0
        self.lines = 0
        self.bytes = 0
        self.started = time.monotonic()
        self.finished: Optional[float] = None
        #: the first iteration's totals, settings, searches in progress and timeline
        self.startup = StartupLedger()
        #: GPU kernel time a trace measured, by time source (``profiler``): in all and under layers
        self.kernel_time: dict[str, KernelTime] = {}
        #: what joining a trace to the log found, one line per trace (``decoding.whole.join_traces``)
        self.joined: list[str] = []
        #: the log formats read into it, in the order first seen (``MIOpen``, ``cuDNN``): the
        #: status bar names them, the empty state says how to log the format it is waiting on
        self.formats: dict[str, None] = {}
        #: problems of rows made by ``carry_rows`` (empty for a catalog of a whole file)
        self.carried: set[Problem] = set()
        #: how many times a row's latest annotation values changed: a scanner's replay of a
        #: stretch of lines that asked ``has_latest`` holds while this holds (``RunPlan``)
        self.annotation_changes = 0

    # ------------------------------------------------------------------ writing (scanner thread)

    def writing(self) -> threading.RLock:
        """The lock a writer holds over one batch of writes (a chunk of a log): readers see
        whole chunks, and one lock per chunk costs nothing next to one per call."""
        return self.lock

    def read_bytes(self, count: int) -> None:
        """``count`` more bytes of input were read."""
        self.bytes += count

    def read_lines(self, count: int) -> None:
        """``count`` more lines of input were read."""
        self.lines += count

    def note_joins(self, lines: list[str]) -> None:
        """What joining traces to this catalog's layers found, a line per trace (``decode`` prints them)."""
        self.joined = list(lines)

    def unknown_find(self) -> None:
        """A Find whose problem no line named (``Info [FindConv...] requestAlgoCount`` alone)."""
        self.unknown_finds += 1

    def input_ended(self) -> None:
        """The writer read its whole input (``seconds`` stops there)."""
        self.finished = time.monotonic()

    def log_is_timed(self) -> None:
        """The log's lines carry a time field (the first-iteration view can show durations)."""
        self.startup.timed = True

    @property
    def timed(self) -> bool:
        return self.startup.timed

    def setting(self, name: str, value: str) -> None:
        """A setting the log reports (``MIOPEN_FIND_MODE = ...``)."""
        self.startup.set(name, value)

    def search_progress(self, progress, tid: str) -> None:
        """A tuning search's progress on thread ``tid`` (None: it ended)."""
        self.startup.progress(progress, tid)

    @staticmethod
    def problem_of(row: _Row) -> Problem:
        """The layer a row (as ``add_sighting`` returned it) is of."""
        return row.problem

    @staticmethod
    def layer_id(row: _Row) -> int:
        """The id of a row's layer (``LayerSnapshot.id``)."""
        return row.index + 1

    @staticmethod
    def touched_last(rows: dict[str, _Row]) -> str:
        """The key of the row written last among ``rows`` ("" for none): which thread's call a
        line with no thread of its own belongs to."""
        return max(rows, key=lambda t: rows[t].version) if rows else ""

    def _touch(self, row: _Row) -> None:
        self.version += 1
        row.version = self.version
        row._snapshot = None

    def row_for(self, problem: Problem, line: int, file: str = "") -> _Row:
        row = self._by_problem.get(problem)
        if row is None:
            row = _Row(len(self._rows), problem, line)
            if file:
                row.files[file] = None
            self._rows.append(row)
            self._by_problem[problem] = row
        return row

    def has_row(self, problem: Problem) -> bool:
        return problem in self._by_problem

    def existing_row(self, problem: Problem) -> Optional[_Row]:
        return self._by_problem.get(problem)

    def add_sighting(self, problem: Problem, role: str, source: str, line: int, file: str = "",
                     warnings: Iterable[str] = (), annotations: Iterable[tuple[str, str]] = (),
                     raw: Optional[Callable[[], Iterable[tuple[int, str]]]] = None,
                     count: bool = True, only_if_new: bool = False) -> _Row:
        """Record one sighting. ``count`` False adds the source without counting the call
        again (its other form, e.g. the Command line of an API block already counted);
        ``only_if_new``: count it only if no row had its problem yet (a level line that
        repeats what a call's other form counts).  ``raw`` builds the source-line excerpt;
        it is called only for a row that has none."""
        row = self._by_problem.get(problem)
        if row is None:
            row = self.row_for(problem, line, file)
            if only_if_new and count:
                row.counted_if_new = role
        elif only_if_new:
            count = False
        row.sighted = True
        if count:
            row.counts[role] += 1
            if file and role == "execution":
                self._count_in_file(row, file, 1)
        if line > row.last_line:
            row.last_line = line
        row.sources[source] = None
        if file:
            row.files[file] = None
        for w in warnings:
            row.warnings[w] = None
        for name, value in annotations:
            values = row.annotations.get(name)
            if values is None or values[-1] != value:  # else already the latest: a repeated call
                self._annotate_row(row, name, value)
        if not row.raw and raw is not None:
            row.raw = list(raw())[:RAW_LINES_PER_LAYER]
        # _touch, inline: this runs for every call a log shows
        self.version = version = self.version + 1
        row.version = version
        row._snapshot = None
        return row

    @staticmethod
    def _count_in_file(row: _Row, file: str, times: int) -> None:
        per_file = row.file_executions
        if per_file is None:
            per_file = row.file_executions = {}
        per_file[file] = per_file.get(file, 0) + times

    def count_again(self, row: _Row, role: str, line: int, times: int = 1, file: str = "") -> None:
        """``times`` more calls of a layer, each seen exactly as one before it (the scanner's
        repeated-line path: what ``add_sighting`` does for a row whose sources, file,
        warnings and source lines are already there); ``line``: the last one's; ``file``:
        the file they are in."""
        row.counts[role] += times
        if file and role == "execution":
            self._count_in_file(row, file, times)
        if line > row.last_line:
            row.last_line = line
        self.version = version = self.version + 1
        row.version = version
        row._snapshot = None

    def seen_again(self, row: _Row, line: int) -> None:
        """Another form of a call already counted, seen exactly as before (not counted)."""
        if line > row.last_line:
            row.last_line = line
        self.version = version = self.version + 1
        row.version = version
        row._snapshot = None

    @staticmethod
    def has_latest(row: _Row, pairs: Iterable[tuple[str, str]]) -> bool:
        """Whether every (name, value) is already the row's latest value of that name."""
        annotations = row.annotations
        for name, value in pairs:
            values = annotations.get(name)
            if not values or values[-1] != value:
                return False
        return True

    def _annotate_row(self, row: _Row, name: str, value: str) -> None:
        values = row.annotations.get(name)
        if values is None:
            values = row.annotations[name] = []
        elif values[-1] == value:  # already the latest (the common case: a repeated call)
            return
        self.annotation_changes += 1
        if value in values:
            values.remove(value)
        values.append(value)
        if len(values) > ANNOTATION_VALUES_KEPT:
            del values[0]

    def annotate(self, row: _Row, name: str, value: str) -> None:
        self._annotate_row(row, name, value)
        self._touch(row)

    def record_startup(self, row: Optional[_Row], kind: str, ms: Optional[float], line: int,
                       clock_ms: Optional[float], name: str = "") -> None:
        """A first-iteration fact (``miotui.startup``) for ``row``'s layer, or unattributed."""
        counts = None
        if row is not None:
            counts = row.startup
            if counts is None:
                counts = row.startup = LayerStartupCounts()
            self._touch(row)
        else:
            self.version += 1
        self.startup.record(counts, None if row is None else row.index + 1, kind, ms, line, clock_ms, name)

    def add_undecoded(self, line: int, reason: str, text: str, file: str = "") -> None:
        self.undecoded_count += 1
        self._undecoded.append(UndecodedRecord(line, reason, text[:500], file))
        self.version += 1

    # ------------------------------------------------------------------ merging (decoding files apart)

    def rows_met(self) -> list[_Row]:
        """Every row, in the order made (what a scanner carries to ``carry_rows``)."""
        return list(self._rows)

    def carry_rows(self, rows: Iterable[_Row]) -> dict[int, _Row]:
        """Rows a scanner met before this catalog began (a range of one file decoded after a
        warm-up over the lines before it, ``miotui.decoding.ranges``): each made here with no
        count, sighting or line of its own, touched in the order they were last touched, so
        the scanner goes on reading them as before.  Their problems are kept in
        ``carried``: the merge must find each in the catalog before (else the range's start
        was not what the serial run saw).  Returns old row id -> new row."""
        made = {}
        for row in sorted(rows, key=lambda r: r.version):
            new = self.row_for(row.problem, row.first_line)
            self._touch(new)
            made[id(row)] = new
            self.carried.add(row.problem)
        return made

    def merge(self, later: Catalog) -> None:
        """Add ``later``, the catalog of the next file decoded on its own (by its own
        ``LogScanner``, in a fresh catalog), as if that file had been decoded into this one.

        Why this equals the serial run, merged in the order of the paths: a scanner keeps
        all its state to itself and reads from the catalog only whether a row exists (for an
        ``only_if_new`` count: ``counted_if_new`` says which count the later file's fresh
        catalog made that ours would not), rows it met itself, and their latest annotation
        values (which only choose between two paths that give the same result).  So the
        later file makes the same calls on its own catalog as it would on ours, and each
        piece of state merges exactly: rows new to us are appended in the later file's
        order of first sight (the serial order), with its ids remapped; for rows we have,
        counts add, the last line is the latest of both (the later file's sightings only, not
        the line its own catalog created the row at), sources, warnings and (when sighted)
        files join in first-seen order, source lines stay ours when we have some, and each
        annotation's values are ours not named again, then the later ones, the oldest beyond
        the cap dropped: what moving each later value to the end would give.  Undecoded
        records and the startup timeline are concatenated under their caps; counts and the
        startup ledger add (``StartupLedger.merge``).  Only the timing (``started``,
        ``finished``) is the caller's to set."""
        ids: dict[int, int] = {}
        with self.lock:
            for other in later._rows:
                later_id = other.index + 1
                row = self._by_problem.get(other.problem)
                if row is None:
                    row = other
                    row.index = len(self._rows)
                    self._rows.append(row)
                    self._by_problem[row.problem] = row
                else:
                    self._merge_row(row, other)
                ids[later_id] = row.index + 1
                self._touch(row)
            self._undecoded.extend(later._undecoded)
            self.undecoded_count += later.undecoded_count
            self.unknown_finds += later.unknown_finds
            self.lines += later.lines
            self.bytes += later.bytes
            self.startup.merge(later.startup, ids)
            self.joined += later.joined
            for name in later.formats:   # a file's format, as a serial decode notes it
                self.formats.setdefault(name)
            for source, kernel_time in later.kernel_time.items():
                mine = self.kernel_time.get(source)
                self.kernel_time[source] = kernel_time if mine is None else mine + kernel_time
            self.version += 1
            self.annotation_changes += 1    # rows' annotations may have changed

    @staticmethod
    def _merge_row(row: _Row, later: _Row) -> None:
        """Add the later file's row of the same layer to ours (see ``merge``)."""
        for role, n in later.counts.items():
            row.counts[role] += n
        if later.file_executions:
            for file, n in later.file_executions.items():
                Catalog._count_in_file(row, file, n)
        if later.counted_if_new is not None:   # we had the row: that sighting would not have counted
            row.counts[later.counted_if_new] -= 1
            if later.counted_if_new == "execution" and later.file_executions:
                # a later catalog is one file's (one decode worker): the sighting was in it
                file = next(iter(later.file_executions))
                row.file_executions[file] -= 1   # type: ignore[index]
                if not row.file_executions[file]:   # type: ignore[index]
                    del row.file_executions[file]   # type: ignore[union-attr]
        if later.last_line > row.last_line:
            row.last_line = later.last_line
        row.sources.update(later.sources)
        if later.sighted:
            row.files.update(later.files)
            row.sighted = True
        row.warnings.update(later.warnings)
        for name, values in later.annotations.items():
            kept = row.annotations.get(name)
            if kept is None:
                row.annotations[name] = list(values)
                continue
            merged = [v for v in kept if v not in values] + values
            row.annotations[name] = merged[-ANNOTATION_VALUES_KEPT:]
        if not row.raw:
            row.raw = later.raw
        if later.startup is not None:
            if row.startup is None:
                row.startup = later.startup
            else:
                row.startup.merge(later.startup)

    def __getstate__(self) -> dict:
        """Picklable (a worker process sends its file's catalog back): without the lock."""
        state = self.__dict__.copy()
        del state["lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()

    # ------------------------------------------------------------------ reading (any thread)

    def layers(self) -> list[LayerSnapshot]:
        with self.lock:
            return [r.snapshot() for r in self._rows]

    def __len__(self) -> int:
        return len(self._rows)

    def changed_since(self, version: int) -> tuple[int, list[LayerSnapshot]]:
        with self.lock:
            return self.version, [r.snapshot() for r in self._rows if r.version > version]

    def undecoded(self) -> list[UndecodedRecord]:
        with self.lock:
            return list(self._undecoded)

    def most_executed(self) -> list[LayerSnapshot]:
        """Most executed first, then most found, then first seen: the order users ask for."""
        return sorted(self.layers(), key=lambda s: (-s.executions, -s.finds, -s.mentions, s.first_line, s.index))

    @property
    def seconds(self) -> float:
        end = self.finished if self.finished is not None else time.monotonic()
        return end - self.started

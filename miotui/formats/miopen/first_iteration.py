"""The MIOpen scanner's first-iteration attributor, and the log's clock.

The clock: MIOpen's prefix can carry the milliseconds since its previous log line
(``MIOPEN_ENABLE_LOGGING_ELAPSED_TIME``: ``MIOpen(HIP)   1.628: ``, one clock shared by all
threads) and, since 2026, the wall-clock time (``MIOPEN_ENABLE_LOGGING_DATE_TIME``:
``MIOpen(HIP) (2026-11-23T20:00:00.123Z): ``).  The date wins where both are present; else
the elapsed fields are summed.  Without either, nothing has a duration.

The attribution: each fact a level line states (``startup_lines.read_startup_line``) belongs
to the layer its thread's lines named last, and some are spans (a compile from ``Unable to
load binary`` to ``Saving binary`` of the same kernel on the same thread; a search from its
start to ``Done``; a Find from ``requestAlgoCount`` to its ``Chosen Algorithm``).  Inside a
legacy Find whose layer is not named yet a fact waits for the name, and becomes unattributed
if none comes.  Which layer a thread is on is the call tracker's to say: the scanner passes it
in (``fact``), and the tracker tells this object of Finds opened, named and closed.
"""

from __future__ import annotations

from typing import Optional

from miotui.formats.miopen.clock_fields import ChunkFields, advance
from miotui.formats.miopen.sink import CatalogSink
from miotui.formats.miopen.startup_lines import (
    CACHE_MISS,
    FIND_CHOSEN,
    SAVED,
    SEARCH_PROGRESS,
    SETTING,
    StartupFact,
)
from miotui.startup import (
    FIND_DB_HIT,
    FIND_DB_MISS,
    FIND_DONE,
    KERNEL_COMPILED,
    SEARCH_DONE,
    SEARCH_STARTED,
    SearchProgress,
)


class FirstIteration:
    """The clock and the first-iteration facts of one scanner (see the module docstring).
    ``at`` arguments are the scanner's line number when the fact is met: the clock there is
    the chunk's time fields applied up to that line."""

    def __init__(self, sink: CatalogSink) -> None:
        self.sink = sink
        self._clock: Optional[float] = None
        self._chunk_fields: Optional[ChunkFields] = None   # the time fields of the chunk being read
        self._chunk_base = 0        # line number before the chunk's first line
        self._chunk_next = 0        # index of the first field not yet applied
        self._compiling: dict[tuple[str, str], Optional[float]] = {}
        self._searches: dict[str, tuple[Optional[float], SearchProgress]] = {}
        self._find_clock: dict[str, list] = {}   # tid -> [start clock, regenerated]
        self._waiting: dict[str, list[tuple]] = {}
        self._find_db_logged = False  # a Find-Db miss or the find-mode banner was seen
        #: the clock's value is not known here (a range of a timed log read after a warm-up,
        #: ``miotui.decoding.ranges``), and whether a fact asked for it since
        self.clock_unknown = False
        self.clock_asked_unknown = False

    def carried_state(self) -> dict[str, object]:
        """What it carries to the lines after (``LogScanner.carried_state``): not the clock,
        which after a warm-up is not the serial one (a range that asks for it is not trusted,
        ``clock_asked_unknown``)."""
        return {"compiling": self._compiling, "searches": self._searches, "find_clock": self._find_clock,
                "waiting": self._waiting, "find_db_logged": self._find_db_logged}

    # ------------------------------------------------------------------ the clock

    def clock_at(self, at: int) -> Optional[float]:
        """The log's clock at line ``at`` (None in an untimed log): the time fields of the
        chunk's lines up to that one are applied now, as a fact needs them."""
        chunk = self._chunk_fields
        if chunk is not None:
            index = at - self._chunk_base - 1
            lines, fields, i = chunk.lines(), chunk.fields, self._chunk_next
            clock = self._clock
            while i < len(lines) and lines[i] <= index:
                clock = advance(clock, fields[i])
                i += 1
            self._clock, self._chunk_next = clock, i
        if self.clock_unknown:
            self.clock_asked_unknown = True
        return self._clock

    def clock_chunk(self, fields: ChunkFields, line_no: int) -> None:
        """The time fields of the chunk about to be read (``clock_fields.lift``), whose first
        line is ``line_no + 1``."""
        self._chunk_fields, self._chunk_base, self._chunk_next = fields, line_no, 0

    def clock_chunk_done(self) -> None:
        """The chunk is read: the fields no fact asked for move the clock in one pass."""
        chunk = self._chunk_fields
        if chunk is not None:
            self._clock = chunk.apply(self._clock, self._chunk_next)
            self._chunk_fields = None

    def clock_line(self, fields: list[str]) -> None:
        """The line-by-line path: one line's fields move the clock before it is handled."""
        for field in fields:
            self._clock = advance(self._clock, field)

    def _since(self, start: Optional[float], at: int) -> Optional[float]:
        if start is None or self.clock_at(at) is None:
            return None
        return max(0.0, self.clock_at(at) - start)

    # ------------------------------------------------------------------ facts

    def fact(self, tid: str, fact: StartupFact, n: int, waiting: bool, row) -> None:
        """A level line's fact, on line ``n`` of thread ``tid``, whose layer is ``row``
        unless ``waiting`` (a legacy Find whose layer is not named yet)."""
        kind = fact.kind
        if kind == CACHE_MISS:
            self._compiling[(tid, fact.name)] = self.clock_at(n)
        elif kind == SAVED:
            self._record(tid, KERNEL_COMPILED, self._since(self._compiling.pop((tid, fact.name), None), n), n,
                         waiting, row, fact.name)
        elif kind == SEARCH_STARTED:
            layer = None if waiting else row
            progress = SearchProgress(tid, fact.name, fact.total, started_ms=self.clock_at(n),
                                      layer_id=None if layer is None else self.sink.layer_id(layer))
            self._searches[tid] = (self.clock_at(n), progress)
            self.sink.search_progress(progress, tid)
            self._record(tid, SEARCH_STARTED, None, n, waiting, row, fact.name)
        elif kind == SEARCH_PROGRESS:
            start, progress = self._searches.get(tid, (None, None))
            if progress is not None:
                progress = SearchProgress(tid, progress.solver, fact.total or progress.total, fact.done, fact.failed,
                                          fact.best_ms if fact.best_ms is not None else progress.best_ms,
                                          fact.eta_s, progress.started_ms, progress.layer_id)
                self._searches[tid] = (start, progress)
                self.sink.search_progress(progress, tid)
        elif kind == SEARCH_DONE:
            start, progress = self._searches.pop(tid, (None, None))
            self.sink.search_progress(None, tid)
            self._record(tid, SEARCH_DONE, self._since(start, n), n, waiting, row,
                         progress.solver if progress else "")
        elif kind == FIND_DB_MISS:
            self._find_db_logged = True
            find = self._find_clock.get(tid)
            if find is not None:
                find[1] = True
            self._record(tid, FIND_DB_MISS, None, n, waiting, row)
        elif kind == FIND_CHOSEN:
            find = self._find_clock.get(tid)
            if find is not None and find[0] is not None and self.clock_at(n) is not None:
                self._record(tid, FIND_DONE, self._since(find[0], n), n, waiting, row)
                find[0] = None
        elif kind == SETTING:
            if fact.name.startswith("MIOPEN_FIND_MODE"):
                self._find_db_logged = True
            self.sink.setting(fact.name, fact.value)
        else:
            self._record(tid, kind, fact.ms, n, waiting, row, fact.name)

    def _record(self, tid: str, kind: str, ms: Optional[float], n: int, waiting: bool, row, name: str = "") -> None:
        if waiting:
            self._waiting.setdefault(tid, []).append((kind, ms, n, self.clock_at(n), name))
            return
        self.sink.startup_fact(row, kind, ms, n, self.clock_at(n), name)

    def find_opened(self, tid: str, at: int) -> None:
        self._find_clock[tid] = [self.clock_at(at), False]

    def find_named(self, tid: str, row) -> None:
        """The waiting Find's layer is named: what waited is that layer's."""
        for kind, ms, n, clock, name in self._waiting.pop(tid, ()):
            self.sink.startup_fact(row, kind, ms, n, clock, name)

    def find_closed(self, tid: str, row, at: int) -> None:
        """A Find ended (``row`` None: its layer was never named)."""
        for kind, ms, n, clock, name in self._waiting.pop(tid, ()):
            self.sink.startup_fact(row, kind, ms, n, clock, name)
        find = self._find_clock.pop(tid, None)
        if find is not None and not find[1] and self._find_db_logged and row is not None:
            self.sink.startup_fact(row, FIND_DB_HIT, None, at, self.clock_at(at))

    def finish(self) -> None:
        """End of input (before the open Finds are closed): searches still running stay in
        the ledger as in progress (a log cut mid-search), compiles never saved are not
        counted, and a Find cut short is no Find-Db hit."""
        self._compiling.clear()
        self._find_clock.clear()

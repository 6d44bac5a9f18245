"""The log's clock, and the lines that say what MIOpen spent its first iteration on.

The clock: MIOpen's prefix can carry the milliseconds since its previous log line
(``MIOPEN_ENABLE_LOGGING_ELAPSED_TIME``: ``MIOpen(HIP)   1.628: ``, one clock shared by all
threads) and, since 2026, the wall-clock time (``MIOPEN_ENABLE_LOGGING_DATE_TIME``:
``MIOpen(HIP) (2026-11-23T20:00:00.123Z): ``).  The date wins where both are present; else
the elapsed fields are summed.  Without either, nothing has a duration.

The lines (``docs/formats.md`` §10.2; ``binary_cache.cpp``, ``generic_search.hpp``,
``find_db.hpp``, ``find_controls.cpp``): kernel binaries loaded from the cache, or not and
then saved after a compile; a developer build's ``Compile Time, ms``; a tuning search's start,
heartbeat and end; ``Find-db regenerating.`` (a Find that measures the solvers); each solver a
Find measured; the settings MIOpen reports (``MIOPEN_FIND_MODE = ...``).  ``StartupRouting``,
part of ``LogScanner``, gives each fact to the layer the surrounding lines name
(``miotui.startup`` keeps the counts); the JSON records of ``MIOPEN_PERFORMANCE_LOGS`` are read
by ``read_perf_record``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Optional

from miotui.events import Annotation, Event, Setting, Undecoded
from miotui.formats.miopen.clock_fields import FIELD_RE, ChunkFields, advance, field_clock
from miotui.formats.miopen.lines import PREFIX_RE
from miotui.startup import (
    COMPILE_TIME,
    FIND_DB_HIT,
    FIND_DB_MISS,
    FIND_DONE,
    KERNEL_COMPILED,
    KERNEL_FROM_CACHE,
    SEARCH_DONE,
    SEARCH_STARTED,
    SOLVER_MEASURED,
    SearchProgress,
)

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_SEARCHING_RE = re.compile(r"^(\S+?): Searching the best solution among (\d+)( \(spare\))?")
_MONITOR_RE = re.compile(rf"^(\d+)/(\d+)/(\d+) ({_NUM}), best within recent \d+: ({_NUM}) #\d+ .*?, "
                         rf"ETA:\s*({_NUM}) sec")
_PROGRESS_RE = re.compile(rf"^#(\d+)/(\d+)/(\d+)(?: ({_NUM}) < ({_NUM}))?")
_DONE_RE = re.compile(rf"^Done: (\d+)/(\d+)/(\d+), best #\s*(\d+) ({_NUM})")
_COMPILE_TIME_RE = re.compile(rf"Compile Time, ms: ({_NUM})\s*$")
_MEASURED_RE = re.compile(rf"^[^:]+: .+: {_NUM} < {_NUM}\s*$")
_SETTING_RE = re.compile(r"^(MIOPEN_[A-Z_]+) = (\S.*?)\s*$")
_FORCED_RE = re.compile(r"^(MIOPEN_FIND_MODE) is set to (\w+) due to (.*?)\s*$")

#: the Find functions whose ``Chosen Algorithm`` line ends a Find
_CHOSEN_FUNCS = frozenset({"FindConvFwdAlgorithm", "FindConvBwdDataAlgorithm", "FindConvBwdWeightsAlgorithm",
                           "FillFindReturnParameters"})
#: the tuning policies of ``miopenSetTuningPolicy`` (a per-handle MIOPEN_FIND_ENFORCE)
TUNING_POLICIES = {1: "None", 2: "DbUpdate", 3: "Search", 4: "SearchDbUpdate", 5: "DbClean"}

#: fact kinds that only the routing uses (the others are ``miotui.startup``'s)
CACHE_MISS, SAVED, SEARCH_PROGRESS, FIND_CHOSEN, SETTING = ("cache_miss", "saved", "search_progress",
                                                            "find_chosen", "setting")


@dataclass(frozen=True)
class StartupFact:
    """What one level line says about the first iteration."""

    kind: str
    name: str = ""
    value: str = ""
    ms: Optional[float] = None
    done: int = 0
    failed: int = 0
    total: int = 0
    best_ms: Optional[float] = None
    eta_s: Optional[float] = None


def line_clock(line: str) -> tuple[Optional[float], Optional[float]]:
    """(elapsed ms since MIOpen's previous line, wall-clock ms since the epoch) from a line's
    first prefix; None for a field it does not have."""
    m = FIELD_RE.search(line)
    return (None, None) if m is None else field_clock(m.group(2))


def has_clock(text: str) -> Optional[bool]:
    """Whether the MIOpen lines of ``text`` carry a time field; None when it has none of
    MIOpen's prefixed lines to tell by."""
    m = PREFIX_RE.search(text, 0, 1_000_000)
    if m is None:
        return None
    elapsed, wall = line_clock(m.group(0))
    return elapsed is not None or wall is not None


def _float(text: Optional[str]) -> Optional[float]:
    if text is None:
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def read_startup_line(func: str, message: str) -> Optional[StartupFact]:
    """The startup fact a level line states, or None (the cheap answer for most lines)."""
    c = message[:1]
    if func == "LoadBinary":
        if c == "S" and message.startswith("Successfully loaded binary for: "):
            return StartupFact(KERNEL_FROM_CACHE, _kernel(message))
        if c == "U" and message.startswith("Unable to load binary for: "):
            return StartupFact(CACHE_MISS, _kernel(message))
        return None
    if func == "SaveBinary":
        return StartupFact(SAVED, _kernel(message)) if message.startswith("Saving binary for: ") else None
    if func == "Monitor":
        m = _MONITOR_RE.match(message)
        if m is None:
            return None
        return StartupFact(SEARCH_PROGRESS, done=int(m.group(1)), failed=int(m.group(2)), total=int(m.group(3)),
                           best_ms=_float(m.group(5)), eta_s=_float(m.group(6)))
    if func == "GenericSearch" or func == "GetAllConfigs":
        if c == "#":
            m = _PROGRESS_RE.match(message)
            if m is None:
                return None
            return StartupFact(SEARCH_PROGRESS, done=int(m.group(1)), failed=int(m.group(2)), total=int(m.group(3)),
                               best_ms=_float(m.group(4)) if m.group(5) else None)
        if c == "D":
            m = _DONE_RE.match(message)
            if m is None:
                return None
            return StartupFact(SEARCH_DONE, done=int(m.group(1)), failed=int(m.group(2)), total=int(m.group(3)),
                               best_ms=_float(m.group(5)))
        m = _SEARCHING_RE.match(message)
        if m is None:
            return None
        return StartupFact(SEARCH_STARTED, m.group(1), total=int(m.group(2)))
    if func == "TryLoad":
        return StartupFact(FIND_DB_MISS) if message.startswith("Find-db regenerating") else None
    if func == "EvaluateInvokers" or func == "DirConvFindCore":
        if c != "S" and _MEASURED_RE.match(message):
            return StartupFact(SOLVER_MEASURED, message.split(":", 1)[0].strip())
        return None
    if c == "M" and message.startswith("MIOPEN_"):
        m = _SETTING_RE.match(message)
        if m is not None:
            return StartupFact(SETTING, m.group(1), m.group(2))
        m = _FORCED_RE.match(message)
        if m is not None:
            return StartupFact(SETTING, m.group(1), f"{m.group(2)} (forced by {m.group(3)})")
        return None
    if "Chosen Algorithm" in message and (func in _CHOSEN_FUNCS or func.startswith("FindConv")):
        return StartupFact(FIND_CHOSEN)
    if "Compile Time, ms: " in message:
        m = _COMPILE_TIME_RE.search(message)
        if m is not None:
            return StartupFact(COMPILE_TIME, message[:m.start()].strip(), ms=_float(m.group(1)))
    return None


def tuning_policy_block(name: str, p) -> list[Event]:
    """The API block ``miopenSetTuningPolicy(handle, newValue)``: a per-handle
    MIOPEN_FIND_ENFORCE, so a job can tune without any environment variable saying so
    (``p``: the block's ``BlockParams``)."""
    number = (p.get("newValue", "value", "policy") or "").strip()
    label = TUNING_POLICIES.get(int(number)) if number.isascii() and number.isdigit() else None
    return [Setting("tuning policy (miopenSetTuningPolicy)", f"{label}({number})" if label else number or "?")]


def _kernel(message: str) -> str:
    """The kernel file of a binary-cache line, with its build options (the same file is
    built once per option set)."""
    return message.split(": ", 1)[1].strip() if ": " in message else message


def read_perf_record(text: str) -> list[Event]:
    """One ``MIOPEN_PERFORMANCE_LOGS`` JSON record -> annotations of the call it measured:
    the solver, and for an executed solution its mean kernel time (``time_ms``, MIOpen's
    mean after dropping warm-up runs and outliers) and spread."""
    try:
        record = json.loads(text)
    except ValueError as e:
        return [Undecoded(f"MIOPEN_PERFORMANCE_LOGS record cut short or interleaved with other output: {e}")]
    if not isinstance(record, dict) or not isinstance(record.get("solution"), str):
        return [Undecoded("MIOPEN_PERFORMANCE_LOGS record without a solution name")]
    events: list[Event] = [Annotation("solver", record["solution"])]
    phase = record.get("phase")
    configs = record.get("performance_configs")
    config = configs[0] if isinstance(configs, list) and configs and isinstance(configs[0], dict) else {}
    time_ms = config.get("time_ms")
    if phase in ("execution", "unknown", None) and isinstance(time_ms, (int, float)) and math.isfinite(time_ms) \
            and time_ms >= 0:
        events.append(Annotation("perf_time_ms", f"{time_ms:.6g}"))
        std = config.get("time_std_ms")
        if isinstance(std, (int, float)) and math.isfinite(std):
            events.append(Annotation("perf_time_std_ms", f"{std:.6g}"))
    elif isinstance(phase, str):
        events.append(Annotation("perf_phase", phase))
    return events


class StartupRouting:
    """``LogScanner``'s startup bookkeeping: which layer each fact belongs to, and the spans
    (a compile from ``Unable to load binary`` to ``Saving binary`` of the same kernel on the
    same thread; a search from its start to ``Done``; a Find from ``requestAlgoCount`` to its
    ``Chosen Algorithm``).  A fact belongs to the layer its thread's lines named last; inside a
    legacy Find whose layer is not named yet it waits for the name, and becomes unattributed
    if none comes.  State lives on the scanner (``_startup_state``)."""

    def _startup_init(self) -> None:
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

    @property
    def clock_ms(self) -> Optional[float]:
        """The log's clock at the line being handled (None in an untimed log): the time
        fields of the chunk's lines up to this one are applied now, as a fact needs them."""
        chunk = self._chunk_fields
        if chunk is not None:
            index = self.line_no - self._chunk_base - 1
            lines, fields, i = chunk.lines(), chunk.fields, self._chunk_next
            clock = self._clock
            while i < len(lines) and lines[i] <= index:
                clock = advance(clock, fields[i])
                i += 1
            self._clock, self._chunk_next = clock, i
        if self.clock_unknown:
            self.clock_asked_unknown = True
        return self._clock

    def _clock_chunk(self, fields: ChunkFields) -> None:
        """The time fields of the chunk about to be read (``clock_fields.lift``)."""
        self._chunk_fields, self._chunk_base, self._chunk_next = fields, self.line_no, 0

    def _clock_chunk_done(self) -> None:
        """The chunk is read: the fields no fact asked for move the clock in one pass."""
        chunk = self._chunk_fields
        if chunk is not None:
            self._clock = chunk.apply(self._clock, self._chunk_next)
            self._chunk_fields = None

    def _clock_line(self, fields: list[str]) -> None:
        """The line-by-line path: one line's fields move the clock before it is handled."""
        for field in fields:
            self._clock = advance(self._clock, field)

    def _since(self, start: Optional[float]) -> Optional[float]:
        if start is None or self.clock_ms is None:
            return None
        return max(0.0, self.clock_ms - start)

    def _startup_line(self, tid: str, func: str, message: str, n: int) -> bool:
        """Handle a level line's startup fact; whether it had one."""
        fact = read_startup_line(func, message)
        if fact is None:
            return False
        kind = fact.kind
        if kind == CACHE_MISS:
            self._compiling[(tid, fact.name)] = self.clock_ms
        elif kind == SAVED:
            self._startup_fact(tid, KERNEL_COMPILED, self._since(self._compiling.pop((tid, fact.name), None)), n,
                               fact.name)
        elif kind == SEARCH_STARTED:
            layer = self._startup_layer(tid)
            progress = SearchProgress(tid, fact.name, fact.total, started_ms=self.clock_ms,
                                      layer_id=None if layer is None else layer.index + 1)
            self._searches[tid] = (self.clock_ms, progress)
            self.catalog.startup.progress(progress, tid)
            self._startup_fact(tid, SEARCH_STARTED, None, n, fact.name)
        elif kind == SEARCH_PROGRESS:
            start, progress = self._searches.get(tid, (None, None))
            if progress is not None:
                progress = SearchProgress(tid, progress.solver, fact.total or progress.total, fact.done, fact.failed,
                                          fact.best_ms if fact.best_ms is not None else progress.best_ms,
                                          fact.eta_s, progress.started_ms, progress.layer_id)
                self._searches[tid] = (start, progress)
                self.catalog.startup.progress(progress, tid)
        elif kind == SEARCH_DONE:
            start, progress = self._searches.pop(tid, (None, None))
            self.catalog.startup.progress(None, tid)
            self._startup_fact(tid, SEARCH_DONE, self._since(start), n, progress.solver if progress else "")
        elif kind == FIND_DB_MISS:
            self._find_db_logged = True
            find = self._find_clock.get(tid)
            if find is not None:
                find[1] = True
            self._startup_fact(tid, FIND_DB_MISS, None, n)
        elif kind == FIND_CHOSEN:
            find = self._find_clock.get(tid)
            if find is not None and find[0] is not None and self.clock_ms is not None:
                self._startup_fact(tid, FIND_DONE, self._since(find[0]), n)
                find[0] = None
        elif kind == SETTING:
            if fact.name.startswith("MIOPEN_FIND_MODE"):
                self._find_db_logged = True
            self.catalog.startup.set(fact.name, fact.value)
        else:
            self._startup_fact(tid, kind, fact.ms, n, fact.name)
        return True

    def _startup_layer(self, tid: str):
        """The row a fact of this thread belongs to now; None while a Find waits for its name."""
        entry = self._find_open.get(tid) if self._find_open else None
        if entry is not None and entry[1] is None:
            return None
        return self._last_row.get(tid)

    def _startup_fact(self, tid: str, kind: str, ms: Optional[float], n: int, name: str = "") -> None:
        entry = self._find_open.get(tid) if self._find_open else None
        if entry is not None and entry[1] is None:
            self._waiting.setdefault(tid, []).append((kind, ms, n, self.clock_ms, name))
            return
        self.catalog.record_startup(self._last_row.get(tid), kind, ms, n, self.clock_ms, name)

    def _startup_find_opened(self, tid: str) -> None:
        self._find_clock[tid] = [self.clock_ms, False]

    def _startup_find_named(self, tid: str, row) -> None:
        """The waiting Find's layer is named: what waited is that layer's."""
        for kind, ms, n, clock, name in self._waiting.pop(tid, ()):
            self.catalog.record_startup(row, kind, ms, n, clock, name)

    def _startup_find_closed(self, tid: str, row) -> None:
        """A Find ended (``row`` None: its layer was never named)."""
        for kind, ms, n, clock, name in self._waiting.pop(tid, ()):
            self.catalog.record_startup(row, kind, ms, n, clock, name)
        find = self._find_clock.pop(tid, None)
        if find is not None and not find[1] and self._find_db_logged and row is not None:
            self.catalog.record_startup(row, FIND_DB_HIT, None, self.line_no, self.clock_ms)

    def _startup_finish(self) -> None:
        """End of input (before the open Finds are closed): searches still running stay in
        the ledger as in progress (a log cut mid-search), compiles never saved are not
        counted, and a Find cut short is no Find-Db hit."""
        self._compiling.clear()
        self._find_clock.clear()

"""What the first iteration spent, per layer: Finds, Find-Db hits and misses, tuning
searches, kernels compiled or loaded from the binary cache, and how long each took.

MIOpen does its expensive work the first time it meets a problem: a Find measures the
solvers (unless the Find-Db already has the answer), a tuning search tries hundreds of
kernel configs, and every kernel not in the binary cache is compiled.  Its level lines
say so (``miopen_formats_2026.md`` §1.5); ``miotui.logs.startup_lines`` reads them and the
scanner attributes each fact to the layer the surrounding lines name.  This module keeps
the counts: per layer (``LayerStartup``), for the whole log (``StartupTotals``, with what
could not be attributed), the searches in progress (for a live view while following) and
a bounded timeline of what happened when.

A duration is known only where the log has MIOpen's elapsed-time or date-time field (or a
developer build's ``Compile Time, ms``); without one it is None, never zero.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional

#: timeline entries kept (the oldest are dropped; the counts keep everything)
TIMELINE_KEPT = 5_000

#: fact kinds (``StartupLedger.record``)
KERNEL_FROM_CACHE, KERNEL_COMPILED, COMPILE_TIME, SEARCH_STARTED, SEARCH_DONE, FIND_DB_HIT, FIND_DB_MISS, \
    SOLVER_MEASURED, FIND_DONE = ("kernel_from_cache", "kernel_compiled", "compile_time", "search_started",
                                  "search_done", "find_db_hit", "find_db_miss", "solver_measured", "find_done")


@dataclass(frozen=True)
class LayerStartup:
    """One layer's first-iteration work.  ``find_db``: ``hit`` (a Find answered from the
    Find-Db), ``miss`` (a Find regenerated its record: it measured the solvers) or
    ``unknown`` (the log's level does not say).  Durations in ms, None when not logged."""

    find_db: str = "unknown"
    searched: bool = False
    solvers_measured: int = 0
    kernels_compiled: int = 0
    kernels_from_cache: int = 0
    compile_ms: Optional[float] = None
    tuning_ms: Optional[float] = None
    find_ms: Optional[float] = None

    def to_dict(self, finds: int) -> dict:
        """The documented JSON shape (``finds`` is the layer's Find count)."""
        return {"finds": finds, "find_db": self.find_db, "searched": self.searched,
                "solvers_measured": self.solvers_measured, "kernels_compiled": self.kernels_compiled,
                "kernels_from_cache": self.kernels_from_cache, "compile_ms": _ms(self.compile_ms),
                "tuning_ms": _ms(self.tuning_ms), "find_ms": _ms(self.find_ms)}


NO_STARTUP = LayerStartup()


@dataclass(frozen=True)
class SearchProgress:
    """A tuning search in progress (``Searching the best solution among N``, then MIOpen's
    heartbeat every 3 s): how far it is and MIOpen's own ETA."""

    thread: str
    solver: str
    total: int
    done: int = 0
    failed: int = 0
    best_ms: Optional[float] = None
    eta_s: Optional[float] = None
    started_ms: Optional[float] = None
    layer_id: Optional[int] = None


@dataclass(frozen=True)
class TimelineEntry:
    """One fact at one moment: ``clock_ms`` on the log's clock (None in an untimed log),
    the layer's id (None: unattributed), what happened and how long it took."""

    line: int
    clock_ms: Optional[float]
    layer_id: Optional[int]
    kind: str
    ms: Optional[float] = None
    name: str = ""


@dataclass(frozen=True)
class StartupTotals:
    """The whole log's first-iteration work; ``unattributed_*`` is what no layer could be
    named for (a compile on a worker thread with no call of its own, say)."""

    kernels_compiled: int = 0
    kernels_from_cache: int = 0
    compile_ms: Optional[float] = None
    tuning_ms: Optional[float] = None
    searches: int = 0
    find_db_misses: int = 0
    find_db_hits: int = 0
    unattributed: int = 0
    unattributed_ms: Optional[float] = None
    timed: bool = False
    settings: tuple[tuple[str, str], ...] = ()
    searching: tuple[SearchProgress, ...] = ()

    def to_dict(self) -> dict:
        return {"kernels_compiled": self.kernels_compiled, "kernels_from_cache": self.kernels_from_cache,
                "compile_ms": _ms(self.compile_ms), "tuning_ms": _ms(self.tuning_ms), "searches": self.searches,
                "find_db_misses": self.find_db_misses, "find_db_hits": self.find_db_hits,
                "unattributed": self.unattributed, "unattributed_ms": _ms(self.unattributed_ms),
                "timed": self.timed, "settings": dict(self.settings)}

    def summary(self, layers_searched: int, layers: int) -> str:
        """One line: ``first iteration: 42 layers, 31 searched, 118 kernels compiled, 212 s
        in compiles, 95 s in tuning``."""
        parts = [f"first iteration: {_count(layers, 'layer')}", f"{layers_searched} searched",
                 f"{_count(self.kernels_compiled, 'kernel')} compiled", f"{self.kernels_from_cache} from cache"]
        if self.compile_ms is not None:
            parts.append(f"{seconds(self.compile_ms)} in compiles")
        if self.tuning_ms is not None:
            parts.append(f"{seconds(self.tuning_ms)} in tuning")
        if self.unattributed:
            parts.append(f"{_count(self.unattributed, 'event')} unattributed")
        return ", ".join(parts)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def seconds(ms: float) -> str:
    return f"{ms / 1000:.3g} s" if ms >= 1000 else f"{ms:.3g} ms"


def _ms(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 6)


def _add(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if b is None:
        return a
    return b if a is None else a + b


class LayerStartupCounts:
    """The mutable counts behind one ``LayerStartup`` (kept on the catalog's row)."""

    __slots__ = ("find_db", "searched", "solvers_measured", "kernels_compiled", "kernels_from_cache",
                 "compile_ms", "tuning_ms", "find_ms")

    def __init__(self) -> None:
        self.find_db = "unknown"
        self.searched = False
        self.solvers_measured = 0
        self.kernels_compiled = 0
        self.kernels_from_cache = 0
        self.compile_ms: Optional[float] = None
        self.tuning_ms: Optional[float] = None
        self.find_ms: Optional[float] = None

    def freeze(self) -> LayerStartup:
        return LayerStartup(self.find_db, self.searched, self.solvers_measured, self.kernels_compiled,
                            self.kernels_from_cache, self.compile_ms, self.tuning_ms, self.find_ms)

    def apply(self, kind: str, ms: Optional[float]) -> None:
        if kind == KERNEL_COMPILED:
            self.kernels_compiled += 1
            self.compile_ms = _add(self.compile_ms, ms)
        elif kind == KERNEL_FROM_CACHE:
            self.kernels_from_cache += 1
        elif kind == COMPILE_TIME:
            self.compile_ms = _add(self.compile_ms, ms)
        elif kind == SEARCH_STARTED:
            self.searched = True
        elif kind == SEARCH_DONE:
            self.searched = True
            self.tuning_ms = _add(self.tuning_ms, ms)
        elif kind == FIND_DB_MISS:
            self.find_db = "miss"
            self.searched = True
        elif kind == FIND_DB_HIT:
            if self.find_db != "miss":
                self.find_db = "hit"
        elif kind == SOLVER_MEASURED:
            self.solvers_measured += 1
        elif kind == FIND_DONE:
            self.find_ms = _add(self.find_ms, ms)


class StartupLedger:
    """The log's startup totals, settings, searches in progress and timeline (the per-layer
    counts live on the catalog's rows).  Written by the scanner thread under the catalog's
    lock; read through ``totals()``/``timeline()`` copies."""

    def __init__(self) -> None:
        self._totals = LayerStartupCounts()
        self.searches = 0
        self.find_db_hits = 0
        self.find_db_misses = 0
        self.unattributed = 0
        self.unattributed_ms: Optional[float] = None
        self.timed = False
        self.settings: dict[str, str] = {}
        self.searching: dict[str, SearchProgress] = {}
        self._timeline: deque[TimelineEntry] = deque(maxlen=TIMELINE_KEPT)
        self.version = 0

    def record(self, counts: Optional[LayerStartupCounts], layer_id: Optional[int], kind: str,
               ms: Optional[float], line: int, clock_ms: Optional[float], name: str = "") -> None:
        """One fact, for a layer's counts (None: unattributed)."""
        self.version += 1
        if counts is not None:
            counts.apply(kind, ms)
        else:
            self.unattributed += 1
            if kind != FIND_DONE:   # a Find's span holds its compiles and searches: not added twice
                self.unattributed_ms = _add(self.unattributed_ms, ms)
        self._totals.apply(kind, ms)
        if kind == SEARCH_STARTED:
            self.searches += 1
        elif kind == FIND_DB_HIT:
            self.find_db_hits += 1
        elif kind == FIND_DB_MISS:
            self.find_db_misses += 1
        if ms is not None:
            self.timed = True
        if kind != SOLVER_MEASURED:
            self._timeline.append(TimelineEntry(line, clock_ms, layer_id, kind, ms, name))

    def set(self, name: str, value: str) -> None:
        """A setting in force (``MIOPEN_FIND_MODE``, a tuning policy): the latest value wins."""
        if self.settings.get(name) != value:
            self.settings[name] = value
            self.version += 1

    def progress(self, p: Optional[SearchProgress], thread: str) -> None:
        """The search on ``thread`` moved on (``p``) or ended (None)."""
        if p is None:
            self.searching.pop(thread, None)
        else:
            self.searching[thread] = p
        self.version += 1

    def totals(self) -> StartupTotals:
        t = self._totals
        return StartupTotals(t.kernels_compiled, t.kernels_from_cache, t.compile_ms, t.tuning_ms, self.searches,
                             self.find_db_misses, self.find_db_hits, self.unattributed, self.unattributed_ms,
                             self.timed, tuple(self.settings.items()), tuple(self.searching.values()))

    def timeline(self) -> list[TimelineEntry]:
        return list(self._timeline)

"""What the first iteration spent, per layer: Finds, Find-Db hits and misses, tuning
searches, kernels compiled or loaded from the binary cache, and how long each took.

MIOpen does its expensive work the first time it meets a problem: a Find measures the
solvers (unless the Find-Db already has the answer), a tuning search tries hundreds of
kernel configs, and every kernel not in the binary cache is compiled.  Its level lines
say so (``docs/formats.md`` §10); ``miotui.formats.miopen.startup_lines`` reads them and the
scanner attributes each fact to the layer the surrounding lines name.  This module keeps
the counts: per layer (``LayerStartup``), for the whole log (``StartupTotals``, with what
could not be attributed), the searches in progress (for a live view while following) and
a bounded timeline of what happened when.

A duration is known only where the log has MIOpen's elapsed-time or date-time field (or a
developer build's ``Compile Time, ms``); without one it is None, never zero.  Durations are
summed exactly (as fractions, rounded once when read): a sum then does not depend on the
order its parts were added in, so the counts of several files decoded apart and merged
(``merge``) equal those of the files decoded one after the other.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping, Optional, Union

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
        parts = [f"first iteration: {counted(layers, 'layer')}", f"{layers_searched} searched"]
        if self.kernels_compiled or self.kernels_from_cache:
            parts += [f"{counted(self.kernels_compiled, 'kernel')} compiled", f"{self.kernels_from_cache} from cache"]
        else:   # no level-6 line: "0 kernels compiled" would be a claim the log does not make
            parts.append("kernels not logged")
        if self.compile_ms is not None:
            parts.append(f"{seconds(self.compile_ms)} in compiles")
        if self.tuning_ms is not None:
            parts.append(f"{seconds(self.tuning_ms)} in tuning")
        if self.unattributed:
            parts.append(f"{counted(self.unattributed, 'event')} unattributed")
        return ", ".join(parts)


def counted(n: int, word: str) -> str:
    """``1 layer``, ``2 layers``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def seconds(ms: float) -> str:
    return f"{ms / 1000:.3g} s" if ms >= 1000 else f"{ms:.3g} ms"


def _ms(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 6)


#: an exact sum of durations: a Fraction, or a float once a part was not finite (inf, nan)
Sum = Union[Fraction, float]


def _add(a: Optional[Sum], b: Optional[Union[Sum, int]]) -> Optional[Sum]:
    """``a + b`` exactly (None: nothing added yet).  Why exact: float addition depends on the
    order of the parts, and a merged catalog must equal the serial one to the last bit."""
    if b is None:
        return a
    if type(b) is not Fraction and math.isfinite(b):
        b = Fraction(b)
    return b if a is None else a + b


def _float(value: Optional[Sum]) -> Optional[float]:
    return None if value is None else float(value)


#: how far a layer's Find-Db state has got: a miss is final, a hit beats not knowing
_FIND_DB_RANK = {"unknown": 0, "hit": 1, "miss": 2}


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
        self.compile_ms: Optional[Sum] = None
        self.tuning_ms: Optional[Sum] = None
        self.find_ms: Optional[Sum] = None

    def freeze(self) -> LayerStartup:
        return LayerStartup(self.find_db, self.searched, self.solvers_measured, self.kernels_compiled,
                            self.kernels_from_cache, _float(self.compile_ms), _float(self.tuning_ms),
                            _float(self.find_ms))

    def merge(self, later: "LayerStartupCounts") -> None:
        """Add the counts of facts that came after ours (the same layer in a later file).
        Exact: counts and exact sums add in any order, ``searched`` is an or, and the Find-Db
        state only moves up (unknown, hit, miss), so the later state or ours, whichever is
        further, is what applying the later facts one by one gives."""
        if _FIND_DB_RANK[later.find_db] > _FIND_DB_RANK[self.find_db]:
            self.find_db = later.find_db
        self.searched = self.searched or later.searched
        self.solvers_measured += later.solvers_measured
        self.kernels_compiled += later.kernels_compiled
        self.kernels_from_cache += later.kernels_from_cache
        self.compile_ms = _add(self.compile_ms, later.compile_ms)
        self.tuning_ms = _add(self.tuning_ms, later.tuning_ms)
        self.find_ms = _add(self.find_ms, later.find_ms)

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
        self.unattributed_ms: Optional[Sum] = None
        self.timed = False
        self.settings: dict[str, str] = {}
        self.searching: dict[str, SearchProgress] = {}
        #: threads whose search was ever reported ended (``merge`` needs them: a later
        #: file's end of a search removes an earlier file's search still in progress)
        self.ended: set[str] = set()
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
            self.ended.add(thread)
        else:
            self.searching[thread] = p
        self.version += 1

    def totals(self) -> StartupTotals:
        t = self._totals
        return StartupTotals(t.kernels_compiled, t.kernels_from_cache, _float(t.compile_ms), _float(t.tuning_ms),
                             self.searches, self.find_db_misses, self.find_db_hits, self.unattributed,
                             _float(self.unattributed_ms), self.timed, tuple(self.settings.items()),
                             tuple(self.searching.values()))

    def timeline(self) -> list[TimelineEntry]:
        return list(self._timeline)

    def merge(self, later: "StartupLedger", layer_ids: Mapping[int, int]) -> None:
        """Add the ledger of a later part of the log (the next file, decoded on its own into a
        catalog of its own), as if its facts had been recorded here one by one after ours.
        ``layer_ids`` maps the later catalog's layer ids to this catalog's.

        Exact, piece by piece: counts and exact sums add; ``timed`` is an or; a setting's
        latest value wins and a name keeps the place it was first set at (a dict assignment
        does both); the timeline is ours then the later one's, the oldest dropped past the
        cap (the deque's ``maxlen`` drops exactly what appending one by one drops).  A search
        in progress here that the later part ended (``later.ended``) is gone, and the later
        part's searches in progress are then set in its order: one of ours that it updated
        without ending keeps its place, one it ended and began again goes to the end, as the
        dict operations one by one would have it."""
        self._totals.merge(later._totals)
        self.searches += later.searches
        self.find_db_hits += later.find_db_hits
        self.find_db_misses += later.find_db_misses
        self.unattributed += later.unattributed
        self.unattributed_ms = _add(self.unattributed_ms, later.unattributed_ms)
        self.timed = self.timed or later.timed
        for name, value in later.settings.items():
            self.settings[name] = value
        for thread in later.ended:
            self.searching.pop(thread, None)
        self.ended |= later.ended
        for thread, p in later.searching.items():
            self.searching[thread] = dataclasses.replace(p, layer_id=_mapped(p.layer_id, layer_ids))
        self._timeline.extend(dataclasses.replace(e, layer_id=_mapped(e.layer_id, layer_ids))
                              for e in later._timeline)
        self.version += later.version + 1


def _mapped(layer_id: Optional[int], layer_ids: Mapping[int, int]) -> Optional[int]:
    return None if layer_id is None else layer_ids[layer_id]

"""The startup view's data: what the first iteration spent, per layer, on the log's clock
(no Textual here).

Why a model built off the UI thread: the ledger's timeline holds up to 5 000 facts
(``miotui.startup.TIMELINE_KEPT``); grouping them by layer while MIOpen is compiling
(the ledger changes every poll) would be the UI thread's work ten times a second.  The
poller builds a frozen :class:`StartupView` when the ledger's version moves, and the
screen only lays it out.

A layer's *span* is where its facts lie on the log's clock: each fact's clock is the
moment of its last line (a compile's ``Saving binary``, a search's ``Done``, a Find's
``Chosen Algorithm``), and its duration reaches back from there.  Untimed logs (no
elapsed-time or date-time field) have counts and no spans of their own.

Why a profiler trace can stand in for the clock: joined to the log (``miotui train.log
trace.json``), each layer carries its first call in the trace (``trace_first``): when it
began on the trace's clock, how long the op ran on the CPU (a first call's autotuning and
plan building are in there) and its kernels' GPU time.  Where the log has no clock, the view
places the layers by those calls, on the trace's clock, and says so
(``StartupView.clock_source``); where the log has a clock, the log's is used.  A trace need
not hold the run's first iteration (a profiler schedule's warm-up skips it): the view says
"the first call in the trace", never "the first iteration".
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence

from miotui.startup import (
    COMPILE_TIME,
    FIND_DONE,
    KERNEL_COMPILED,
    NO_STARTUP,
    SEARCH_DONE,
    SEARCH_STARTED,
    LayerStartup,
    SearchProgress,
    StartupTotals,
    TimelineEntry,
)
from miotui.views import units

#: span kinds, drawn over each other in this order (a compile inside a Find shows as a compile)
FIND, TUNE, COMPILE = "find", "tune", "compile"
_SPAN_OF = {FIND_DONE: FIND, SEARCH_DONE: TUNE, KERNEL_COMPILED: COMPILE, COMPILE_TIME: COMPILE}
#: the characters a span is drawn with, and what they mean (the screen's legend)
SPAN_CHARS = {FIND: "─", TUNE: "▒", COMPILE: "█"}
#: a layer's first call in a profiler trace (drawn under the log's spans; only on the trace's clock)
CALL, CALL_CHAR = "call", "▓"
#: the annotations a trace's layer carries (``miotui.formats.torch_profiler``'s scanner and join)
FIRST_CALL, TRACE_FILE = "profiler_first_call", "profiler_trace"
_FIRST_CALL = re.compile(r"at (\S+) ms into the trace; (\S+) ms CPU; (\S+) ms GPU \((\d+) kernels in the call\)"
                         r"( as a backward data\+weights pair)?$")
#: layers the timeline lists (the rest are counted)
ROWS_SHOWN = 400
#: the settings worth showing from the job's environment (with the log's own settings)
SETTING_NAMES = ("MIOPEN_FIND_MODE", "MIOPEN_FIND_ENFORCE", "MIOPEN_LOG_LEVEL", "MIOPEN_ENABLE_LOGGING_ELAPSED_TIME",
                 "MIOPEN_ENABLE_LOGGING_DATE_TIME", "MIOPEN_ENABLE_LOGGING_CMD", "MIOPEN_WARN_SEARCH",
                 "MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR", "MIOPEN_DISABLE_CACHE",
                 "MIOPEN_COMPILE_PARALLEL_LEVEL", "MIOPEN_SEARCH_CUTOFF", "MIOPEN_DEBUG_FIND_ONLY_SOLVER")


@dataclass(frozen=True)
class TraceFirst:
    """A layer's first call in a profiler trace: when it began (ms from the trace's first
    event), the op's CPU time, its kernels' GPU time (``paired``: a backward op's data and
    weights gradients together, the kernels' names not saying which is which), and the
    trace it came from ("" for the one trace opened on its own)."""

    at_ms: float
    cpu_ms: float
    gpu_ms: float
    kernels: int
    paired: bool = False
    trace: str = ""


def trace_first(snapshot: Any) -> Optional[TraceFirst]:
    """The layer's first call in a profiler trace, from its annotations (None: no trace
    timed it, or the annotation does not read)."""
    m = _FIRST_CALL.match(snapshot.annotation(FIRST_CALL))
    if m is None:
        return None
    try:
        at, cpu, gpu = (float(v) for v in m.group(1, 2, 3))
    except ValueError:
        return None
    return TraceFirst(at, cpu, gpu, int(m.group(4)), m.group(5) is not None, snapshot.annotation(TRACE_FILE))


@dataclass(frozen=True)
class StartupRow:
    """One layer as MIOpen met it: its first-iteration counts and its spans on the clock
    (``gpu_ms``: its first call's GPU time, where the view is on a trace's clock)."""

    layer_id: int
    label: str
    startup: LayerStartup
    start_ms: Optional[float] = None
    end_ms: Optional[float] = None
    spans: tuple[tuple[float, float, str], ...] = ()
    gpu_ms: Optional[float] = None
    gpu_paired: bool = False


@dataclass(frozen=True)
class StartupView:
    """Everything the startup screen shows, built by the poller."""

    totals: StartupTotals = field(default_factory=StartupTotals)
    summary: str = ""
    rows: tuple[StartupRow, ...] = ()
    #: layers with first-iteration facts that the list leaves out (beyond ``ROWS_SHOWN``)
    more: int = 0
    #: the clock from the first fact to the last (None: an untimed log and no trace)
    clock: Optional[tuple[float, float]] = None
    layers: int = 0
    #: whose clock ``clock`` is: the log's, or a joined profiler trace's (the log has none)
    clock_source: Optional[Literal["log", "trace"]] = None
    #: what the trace's clock covers and what it leaves out (empty on the log's clock)
    note: str = ""

    @property
    def anything(self) -> bool:
        """Whether the log says anything about its first iteration."""
        t = self.totals
        return bool(t.kernels_compiled or t.kernels_from_cache or t.searches or t.find_db_misses or t.find_db_hits
                    or t.searching or self.rows)


def layer_label(snapshot: Any) -> str:
    """A layer in a few words, the telling part first: ``conv fwd 3x3 k64 56x56``,
    ``bnorm fwd_train 64x112x112``."""
    p = snapshot.problem
    shape = tuple(getattr(p, "input_shape", ()))
    if p.op == "conv" and hasattr(p, "filter"):
        dims = "x".join(str(v) for v in shape[2:])
        return f"{p.op} {p.direction} {'x'.join(str(v) for v in p.filter)} k{p.k} {dims}"
    return f"{p.op} {p.direction} {'x'.join(str(v) for v in shape[1:])}".rstrip()


def build_view(totals: StartupTotals, timeline: Sequence[TimelineEntry], startups: Mapping[int, LayerStartup],
               labels: Mapping[int, str], firsts: Optional[Mapping[int, TraceFirst]] = None) -> StartupView:
    """The view of a ledger's totals and timeline, with each layer's counts (``startups``,
    from the catalog's snapshots: the timeline is bounded, the counts are not) and a short
    label per layer; ``firsts``, the layers' first calls in a joined profiler trace, place
    the layers when the log has no clock (see the module)."""
    order: list[int] = []
    spans: dict[int, list[tuple[float, float, str]]] = {}
    bounds: dict[int, list[float]] = {}
    lo = hi = None
    for e in timeline:
        if e.layer_id is None:
            continue
        if e.layer_id not in spans:
            order.append(e.layer_id)
            spans[e.layer_id] = []
        if e.clock_ms is None:
            continue
        start = e.clock_ms - (e.ms or 0.0) if e.kind in _SPAN_OF or e.kind == SEARCH_STARTED else e.clock_ms
        b = bounds.setdefault(e.layer_id, [start, e.clock_ms])
        b[0], b[1] = min(b[0], start), max(b[1], e.clock_ms)
        lo = start if lo is None else min(lo, start)
        hi = e.clock_ms if hi is None else max(hi, e.clock_ms)
        kind = _SPAN_OF.get(e.kind)
        if kind is not None and e.ms:
            spans[e.layer_id].append((start, e.clock_ms, kind))
    seen = set(order)
    order += sorted(i for i, s in startups.items() if i not in seen and s != NO_STARTUP)
    clock = (lo, hi) if lo is not None and hi is not None and hi > lo else None
    searched = sum(1 for s in startups.values() if s.searched)
    summary = totals.summary(searched, len(startups))
    if clock is None and lo is None and firsts:
        return _on_trace_clock(totals, summary, order, startups, labels, firsts)
    rows = []
    for layer_id in order[:ROWS_SHOWN]:
        b = bounds.get(layer_id)
        rows.append(StartupRow(layer_id, labels.get(layer_id, f"layer {layer_id}"),
                               startups.get(layer_id, NO_STARTUP), b[0] if b else None, b[1] if b else None,
                               tuple(spans.get(layer_id, ()))))
    return StartupView(totals, summary, tuple(rows), max(0, len(order) - ROWS_SHOWN), clock, len(startups),
                       "log" if clock is not None else None)


def _on_trace_clock(totals: StartupTotals, summary: str, met: list[int], startups: Mapping[int, LayerStartup],
                    labels: Mapping[int, str], firsts: Mapping[int, TraceFirst]) -> StartupView:
    """The view of a log with no clock, its layers placed by their first calls in a trace:
    the trace that timed the most layers (each trace has its own clock: two are never mixed),
    its layers in the order of their first calls, then the layers it does not have that the
    log has facts for (``met``, in the order MIOpen met them), unplaced."""
    traces = Counter(f.trace for f in firsts.values())
    trace, _ = traces.most_common(1)[0]
    placed = sorted((i for i, f in firsts.items() if f.trace == trace), key=lambda i: (firsts[i].at_ms, i))
    in_trace = set(placed)
    unplaced = [i for i in met if i not in in_trace]
    rows = []
    for layer_id in (placed + unplaced)[:ROWS_SHOWN]:
        label, startup = labels.get(layer_id, f"layer {layer_id}"), startups.get(layer_id, NO_STARTUP)
        f = firsts.get(layer_id) if layer_id in in_trace else None
        if f is None:
            rows.append(StartupRow(layer_id, label, startup))
            continue
        end = f.at_ms + f.cpu_ms
        rows.append(StartupRow(layer_id, label, startup, f.at_ms, end, ((f.at_ms, end, CALL),), f.gpu_ms, f.paired))
    lo = min(firsts[i].at_ms for i in placed)
    hi = max(firsts[i].at_ms + firsts[i].cpu_ms for i in placed)
    named = f"the profiler trace {trace}" if trace else "the profiler trace"
    note = ("The log has no clock: " if trace else "") + (
        f"{len(placed)} layers are placed by their first call in {named}, on its clock (from its first event): the "
        "op's CPU time and its kernels' GPU time. The trace may have begun after the run's first iteration.")
    note = note[:1].upper() + note[1:]
    if unplaced:
        note += f" {len(unplaced)} layers with first-iteration facts are not in the trace: listed after, unplaced."
    others = sum(n for name, n in traces.items() if name != trace)
    if others:
        note += f" {others} layers timed by another trace are not placed (each trace has its own clock)."
    return StartupView(totals, f"{summary}, first calls on the trace's clock", tuple(rows),
                       max(0, len(placed) + len(unplaced) - ROWS_SHOWN), (lo, hi) if hi > lo else None,
                       len(startups), "trace", note)


def timeline_caption(view: StartupView) -> str:
    """The line under the timeline: what its bar shows and on whose clock."""
    legend = "  ".join(f"{c} {k}" for k, c in SPAN_CHARS.items())
    if view.clock_source == "trace":
        caption = (f"when: {CALL_CHAR} the layer's first call in the trace, on the trace's clock; GPU 1st: its "
                   "kernels' GPU time")
        if any(r.gpu_paired for r in view.rows):
            caption += " (* a backward op's data and weights gradients together)"
        caption += "; kernels: compiled+from the cache; — not logged"
    elif view.clock:
        caption = f"when: {legend} on the log's clock; kernels: compiled+from the cache; — not logged"
    else:
        caption = "no spans: the log has no clock; kernels: compiled+from the cache"
    if view.more:
        caption += f"; {view.more} more layers not listed"
    return caption


def gpu_cell(row: StartupRow) -> str:
    """A row's first-call GPU time (``*``: shared by a backward op's two gradients), or
    nothing where the trace has no call of it."""
    if row.gpu_ms is None:
        return ""
    return units.time_ms(row.gpu_ms) + ("*" if row.gpu_paired else "")


def span_bar(row: StartupRow, clock: Optional[tuple[float, float]], width: int) -> str:
    """The layer's spans on the log's clock in ``width`` cells: ``─`` a Find, ``▒`` tuning,
    ``█`` a compile; ``·`` marks where its facts are when they have no duration."""
    if clock is None or width <= 0 or row.start_ms is None:
        return ""
    lo, hi = clock
    scale = width / (hi - lo)
    cells = [" "] * width

    def cell(t: float) -> int:
        return max(0, min(width - 1, int((t - lo) * scale)))

    cells[cell(row.start_ms)] = "·"
    if row.end_ms is not None:
        cells[cell(row.end_ms)] = "·"
    for kind in (CALL, FIND, TUNE, COMPILE):
        for start, end, k in row.spans:
            if k == kind:
                for i in range(cell(start), cell(end) + 1):
                    cells[i] = CALL_CHAR if kind == CALL else SPAN_CHARS[kind]
    return "".join(cells)


def compile_series(rows: Iterable[StartupRow], timed: bool) -> list[float]:
    """Compile time per layer in the order MIOpen met them (ms), or, in an untimed log, the
    number of kernels each compiled."""
    if timed:
        return [r.startup.compile_ms or 0.0 for r in rows]
    return [float(r.startup.kernels_compiled) for r in rows]


def settings_rows(log_settings: Sequence[tuple[str, str]], job_env: Optional[Mapping[str, str]],
                  pid: Optional[int]) -> list[tuple[str, str, str]]:
    """(setting, value, where it came from): the log's own settings first, then the job's
    environment (the variables of ``SETTING_NAMES`` and any other ``MIOPEN_FIND*``)."""
    rows = [(name, value, "the log") for name, value in log_settings]
    if job_env:
        where = f"the job's environment (pid {pid})" if pid is not None else "the job's environment"
        for name in sorted(job_env, key=lambda n: (n not in SETTING_NAMES, SETTING_NAMES.index(n)
                                                   if n in SETTING_NAMES else 0, n)):
            if name in SETTING_NAMES or name.startswith("MIOPEN_FIND"):
                rows.append((name, job_env[name], where))
    return rows


def progress_bar(done: int, total: int, width: int = 12) -> str:
    """``▕██████░░░░░░▏``: how far a tuning search is, in ``width`` cells."""
    frac = max(0.0, min(1.0, done / total)) if total else 0.0
    full = round(frac * width)
    return "▕" + "█" * full + "░" * (width - full) + "▏"


def search_progress_text(p: SearchProgress) -> str:
    """``1,536/4,096 ▕████░░░░░░░░▏ 38%  2 failed  best 412 µs  ETA 1.02 min``: a search in
    progress as MIOpen's last heartbeat told it (the solver name is the caller's, as it is
    text from the log)."""
    pct = 100 * p.done / p.total if p.total else 0
    out = f"{p.done:,}/{p.total:,} {progress_bar(p.done, p.total)} {pct:.0f}%"
    if p.failed:
        out += f"  {p.failed} failed"
    if p.best_ms is not None:
        out += f"  best {units.time_ms(p.best_ms)}"
    out += f"  ETA {units.time_ms(p.eta_s * 1000)}" if p.eta_s is not None else "  ETA not yet"
    return out


def searches_of(view: StartupView, layer_id: int) -> list[SearchProgress]:
    """The tuning searches in progress for one layer."""
    return [p for p in view.totals.searching if p.layer_id == layer_id]


def what_logged(totals: StartupTotals) -> tuple[bool, bool, bool]:
    """(timed, kernels logged, Finds or searches logged): what the whole log can say about a
    layer's first iteration (a layer's ``none`` means none only where the log would tell)."""
    return (totals.timed, bool(totals.kernels_compiled or totals.kernels_from_cache),
            bool(totals.searches or totals.find_db_misses or totals.find_db_hits))

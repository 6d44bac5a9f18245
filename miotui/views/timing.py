"""Where the time goes: each layer's time per call, its total over the log, and its share.

A log holds a layer's GPU time only where MIOpen (or MIOpenDriver) printed one; each source
is named so a reader knows what the number is:

* ``perf_log``: ``MIOPEN_PERFORMANCE_LOGS`` records, MIOpen's mean kernel time over the job's
  own executions (after warm-up runs and outliers are dropped), the best estimate there is;
* ``execution_log``: ``LogConvolutionExecution``'s ``Time(from_find_db)``, the Find-Db time
  of the solution each execution used;
* ``find``: the chosen solution's time when it was found (``Chosen Algorithm``,
  ``EvaluateInvokers ... Selected``, the fastest entry of a Find-Db record);
* ``driver``: the kernel time MIOpenDriver printed for the layer in the log;
* ``profiler``: the GPU's own kernel times from a PyTorch profiler trace (``miotui.formats.
  torch_profiler``), summed over the kernels each of the layer's calls launched: measured,
  not estimated, so it comes first;
* ``rocprof``: rocprofv3's kernel times, given to the log's calls by their order
  (``miotui.formats.rocprof``): measured, but the join is by order, not by a link.

The first source present wins, in that order.  Total = time per call x executions;
a layer that was never executed (only found or mentioned) has no total.  Share = total over
the sum of totals of the timed layers.  A time miotui measured itself (``miotui run``, a
CPU reference or torch) is a different figure and is never mixed into these totals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence

#: (source name, the annotation holding it), best first
TIME_SOURCES = (("profiler", "profiler_time_ms"), ("rocprof", "rocprof_time_ms"), ("perf_log", "perf_time_ms"),
                ("execution_log", "find_db_time_ms"), ("find", "solver_time_ms"), ("driver", "driver_kernel_ms"))

#: how to make MIOpen log times, for a layer that has none
HOW_TO_TIME = ("no time in the log: MIOPEN_LOG_LEVEL=5 logs each Find's chosen time and, since 2026, "
               "each execution's (LogConvolutionExecution); MIOPEN_PERFORMANCE_LOGS=1 logs measured kernel times")
#: how to time a cuDNN layer: its log has no GPU time (a record's ``Time:`` is when the call was made)
CUDNN_HOW_TO_TIME = ("a cuDNN log holds no GPU time (a record's Time: is when the call was made): a PyTorch "
                     "profiler trace of the run times every layer (miotui decode LOG TRACE); r runs one here; "
                     "`miotui run --log LOG --layer K --script` writes a PyTorch script that times it on a GPU")


def cudnn_only(formats: Iterable[str]) -> bool:
    """Whether a log's formats (``Catalog.formats``) are cuDNN's alone: MIOpen's switches
    time nothing there."""
    formats = tuple(formats)
    return "cuDNN" in formats and "MIOpen" not in formats


def how_to_time(formats: Iterable[str] = ()) -> str:
    """How to get times for the formats a log is in: cuDNN's way for a log that is cuDNN's
    alone, MIOpen's otherwise."""
    return CUDNN_HOW_TO_TIME if cudnn_only(formats) else HOW_TO_TIME


@dataclass(frozen=True)
class LayerTime:
    """One layer's logged GPU time (None where the log has none)."""

    per_call_ms: Optional[float] = None
    source: Optional[str] = None
    total_ms: Optional[float] = None
    share: Optional[float] = None
    #: the per-call times of the other sources the layer has (a log's Find time beside a trace's)
    also: tuple[tuple[str, float], ...] = ()

    def to_dict(self) -> dict:
        out = {"per_call_ms": self.per_call_ms, "source": self.source, "total_ms": self.total_ms,
               "share": None if self.share is None else round(self.share, 6)}
        if self.also:
            out["also"] = dict(self.also)
        return out


NO_TIME = LayerTime()


@dataclass(frozen=True)
class KernelTime:
    """A trace's GPU kernel time in all and the part its layers claim (``Catalog.kernel_time``)."""

    total_ms: float
    attributed_ms: float
    kernels: int

    def __add__(self, other: KernelTime) -> KernelTime:
        return KernelTime(self.total_ms + other.total_ms, self.attributed_ms + other.attributed_ms,
                          self.kernels + other.kernels)

    @property
    def share(self) -> float:
        return self.attributed_ms / self.total_ms if self.total_ms > 0 else 0.0

    def to_dict(self) -> dict:
        return {"total_ms": round(self.total_ms, 6), "attributed_ms": round(self.attributed_ms, 6),
                "kernels": self.kernels, "share": round(self.share, 6)}


@dataclass(frozen=True)
class TimeSummary:
    layers: int
    timed: int
    total_ms: Optional[float]
    top5_share: Optional[float]

    def line(self, formats: Iterable[str] = ()) -> str:
        """``12 of 40 layers timed; the top 5 take 81% of the logged GPU time``; with none
        timed, how to time them in the log's format (``formats``)."""
        if not self.timed:
            return f"0 of {self.layers} layers timed ({how_to_time(formats)})"
        top = min(5, self.timed)
        what = "the top 5 take" if top == 5 else ("it takes" if top == 1 else f"the {top} take")
        share = 100.0 * (self.top5_share or 0.0)
        return f"{self.timed} of {self.layers} layers timed; {what} {share:.0f}% of the logged GPU time"


def all_times(annotations: Iterable[tuple[str, str]]) -> list[tuple[str, float]]:
    """(source, ms per call) of every time source a layer's annotations hold, best first."""
    ann = dict(annotations)
    found = []
    for source, name in TIME_SOURCES:
        text = ann.get(name)
        if text:
            try:
                value = float(text)
            except ValueError:
                continue
            if math.isfinite(value) and value >= 0:
                found.append((source, value))
    return found


def per_call_time(annotations: Iterable[tuple[str, str]]) -> tuple[Optional[float], Optional[str]]:
    """(ms per call, source) from a layer's annotations (latest value per name): the best source."""
    found = all_times(annotations)
    return (found[0][1], found[0][0]) if found else (None, None)


def layer_times(layers: Sequence) -> dict[int, LayerTime]:
    """Layer id -> its time, for layer snapshots (``catalog.LayerSnapshot``)."""
    out: dict[int, LayerTime] = {}
    partial: list[tuple[int, float, str, Optional[float], tuple]] = []
    for layer in layers:
        found = all_times(layer.annotations)
        if not found:
            out[layer.id] = NO_TIME
            continue
        source, ms = found[0]
        total = ms * layer.executions if layer.executions else None
        partial.append((layer.id, ms, source, total, tuple(found[1:])))
    grand = sum(t for _, _, _, t, _ in partial if t is not None)
    for layer_id, ms, source, total, also in partial:
        share = total / grand if total is not None and grand > 0 else None
        out[layer_id] = LayerTime(ms, source, total, share, also)
    return out


def time_summary(times: dict[int, LayerTime]) -> TimeSummary:
    totals = sorted((t.total_ms for t in times.values() if t.total_ms is not None), reverse=True)
    if not totals:
        return TimeSummary(len(times), 0, None, None)
    grand = sum(totals)
    top5 = sum(totals[:5]) / grand if grand > 0 else None
    return TimeSummary(len(times), len(totals), grand, top5)


def measured_line(layers: Sequence, kernel_time: Mapping[str, KernelTime]) -> str:
    """Where a trace's times went (``profiler: 20 of 20 conv layers timed, 95% of the trace's
    GPU kernel time attributed to layers``); "" without a trace."""
    convs = [layer for layer in layers if layer.problem.op == "conv"]
    parts = []
    for source, measured in kernel_time.items():
        timed = sum(1 for layer in convs if per_call_time(layer.annotations)[1] == source)
        paired = sum(1 for layer in convs if layer.annotation(f"{source}_pair_ms")
                     and per_call_time(layer.annotations)[1] != source)
        pairs = f" ({paired} more timed only as backward data+weights pairs)" if paired else ""
        parts.append(f"{source}: {timed} of {len(convs)} conv layers timed{pairs}, {100 * measured.share:.0f}% of "
                     f"the trace's GPU kernel time ({measured.total_ms:.3g} ms in {measured.kernels} kernels) "
                     "attributed to layers")
    return "; ".join(parts)

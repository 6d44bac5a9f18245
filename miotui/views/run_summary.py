"""What a run result says, in words: verdicts, timing with its noise, the rate that fits
the layer, and how MIOpen's own logged verdict compares with ours.

Shared by the app (table cells, notifications, the detail screen) and ``miotui run``,
so both say the same thing about the same :class:`~miotui.execute.backends.RunResult`.
No Rich, no Textual: plain strings and frozen values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence, TypeVar

from miotui.views import units

T = TypeVar("T")

#: verdicts a row can show, and how serious each is (for colours and notification levels)
GOOD, BAD, NEUTRAL = "good", "bad", "neutral"
_SEVERITY = {"ok": GOOD, "FAILED": BAD, "error": BAD, "refused": NEUTRAL, "cancelled": NEUTRAL,
             "n/a": NEUTRAL, "running": NEUTRAL, "queued": NEUTRAL}


def verdict_of(result: Any) -> str:
    """``ok``, ``FAILED`` (ran, the check failed), ``error``, ``refused``, ``n/a``, ``cancelled``."""
    status = getattr(result, "status", "") or "?"
    return "FAILED" if status == "failed" else status


def severity(verdict: str) -> str:
    return _SEVERITY.get(verdict, NEUTRAL)


@dataclass(frozen=True)
class RunSummary:
    """What a table row shows about a layer's latest run (or its run in progress)."""

    ms: Optional[float]
    rate: Optional[float]          # in ``rate_unit``: GB/s for memory-bound layers, else GFLOP/s
    verdict: str                   # ok FAILED error refused n/a cancelled running queued
    backend: str = ""
    rate_text: str = ""
    noisy: bool = False
    cached: bool = False
    #: other backends with a latest result of their own (the row names one: ``ok torch +2``)
    others: int = 0

    @property
    def verdict_text(self) -> str:
        marks = [m for m, on in (("noisy", self.noisy), ("cached", self.cached)) if on]
        text = self.verdict
        if self.backend and self.verdict not in ("queued", "running"):
            text += f" {self.backend}"
        if self.others:
            text += f" +{self.others}"
        return text + (" (" + ", ".join(marks) + ")" if marks else "")


#: which of a layer's results its row shows, best first: a failure always wins over a pass
#: (the row must never read ``ok`` while a backend disagrees), a pass over a crash, and
#: ``n/a``, ``refused`` and ``cancelled`` (nothing was measured) never hide a result
_SHOWN_FIRST = ("failed", "FAILED", "ok", "error", "refused", "n/a", "cancelled")


def shown_index(statuses: Sequence[str]) -> int:
    """The index of the result a row shows among each backend's latest (``statuses``,
    oldest first, as ``RunResult.status`` or a verdict): the most telling by
    :data:`_SHOWN_FIRST`, the newest of equals; -1 for none."""
    best, best_rank = -1, len(_SHOWN_FIRST) + 1
    for i, status in enumerate(statuses):
        rank = _SHOWN_FIRST.index(status) if status in _SHOWN_FIRST else len(_SHOWN_FIRST)
        if rank <= best_rank:
            best, best_rank = i, rank
    return best


#: result statuses that measured nothing: they never hide a result (:func:`latest_per_backend`)
NOTHING_MEASURED = frozenset({"n/a", "cancelled"})


def latest_per_backend(results: Iterable[T], backend: Callable[[T], str], status: Callable[[T], str]) -> list[T]:
    """Each backend's latest *result* among ``results`` (oldest first), in the order the
    backends last ran: a later ``n/a`` or ``cancelled`` (nothing was measured) does not
    replace an earlier result of the same backend; it stands only where there is nothing
    else.  What a row's verdict is picked from and what the exports keep per backend;
    ``backend``/``status`` read a ``RunResult`` or its ``to_dict()``."""
    latest: dict[str, T] = {}
    for r in results:
        name, before = backend(r), latest.get(backend(r))
        if status(r) in NOTHING_MEASURED and before is not None and status(before) not in NOTHING_MEASURED:
            continue
        latest.pop(name, None)
        latest[name] = r
    return list(latest.values())


def row_summary(latest: Sequence[Any]) -> Optional[RunSummary]:
    """What a table row shows of a layer's runs: of each backend's latest result
    (``RunBook.latest_by_backend``), the one :func:`shown_index` picks, naming its
    backend and counting the others (None: never run)."""
    i = shown_index([r.status for r in latest])
    if i < 0:
        return None
    s = summary_of(latest[i])
    return RunSummary(s.ms, s.rate, s.verdict, s.backend, s.rate_text, s.noisy, s.cached, len(latest) - 1)


def summary_of(result: Any) -> RunSummary:
    p = result.problem
    return RunSummary(result.median_ms, units.rate_value(p, result.gflops, result.gbps), verdict_of(result),
                      result.backend, units.throughput(p, result.gflops, result.gbps) if result.median_ms else "",
                      bool(getattr(result, "noisy", False)), bool(getattr(result, "cached", False)))


def pending_summary(state: str, label: str) -> RunSummary:
    """A row's summary while its run is queued or running."""
    return RunSummary(None, None, state, label)


def timing_text(result: Any) -> str:
    """``1.23 ms median (min 1.20 ms, max 1.50 ms, spread ×1.03, 10 iterations)``."""
    if result.median_ms is None:
        return ""
    parts = [f"{units.time_ms(result.min_ms)} min" if result.min_ms is not None else "",
             f"{units.time_ms(result.max_ms)} max" if getattr(result, "max_ms", None) is not None else "",
             f"spread {units.ratio(result.spread)}" if getattr(result, "spread", None) is not None else "",
             f"{result.iterations} iterations" if result.iterations else ""]
    inner = ", ".join(p for p in parts if p)
    return f"{units.time_ms(result.median_ms)} median" + (f" ({inner})" if inner else "")


def rate_arithmetic(result: Any) -> str:
    """``speed 988 MB/s = 206 MB moved / 208 ms median``: the rate with what it divides, in
    the same unit family, so a reader's own division comes out as printed (empty without
    a time)."""
    p = result.problem
    if not result.median_ms:
        return ""
    rate = units.throughput(p, result.gflops, result.gbps)
    work = f"{units.size(p.bytes_moved)} moved" if units.memory_bound(p) else units.flops(p.flops)
    return f"speed {rate} = {work} / {units.time_ms(result.median_ms)} median"


def noise_warning(result: Any) -> str:
    """A warning when the spread is too large for the median to be trusted (as hyperfine
    warns about outliers); empty otherwise."""
    if not getattr(result, "noisy", False):
        return ""
    return (f"noisy: the median is {units.ratio(result.spread)} the fastest iteration; other work on this "
            "machine slowed some iterations. Rerun with more iterations on a quieter machine before "
            "trusting this time.")


def status_text(result: Any) -> str:
    """``ok``, or ``n/a: why``, ``error: why`` (what a side-by-side row says in one cell)."""
    verdict = verdict_of(result)
    if verdict in ("n/a", "error", "refused", "cancelled") and result.message:
        return f"{verdict}: {result.message}"
    return verdict


def result_line(layer_id: int, result: Any) -> str:
    """One line about a finished run, for a notification or a log."""
    verdict = verdict_of(result)
    parts = [f"layer {layer_id} on {result.backend}: {verdict}"]
    if getattr(result, "cached", False):
        parts.append("cached result (not re-measured)")
    if result.median_ms is not None:
        parts.append(timing_text(result))
        rate = units.throughput(result.problem, result.gflops, result.gbps)
        if rate != units.MISSING:
            parts.append(rate)
    if result.message and verdict != "ok":
        parts.append(result.message)
    warning = noise_warning(result)
    if warning:
        parts.append(warning.split(";")[0])
    return " · ".join(parts)


def settings_text(settings: Any, short: bool = False) -> str:
    """``10 iterations, 1 warm-up, batch 32`` (the log's batch when not overridden);
    ``short``: ``10 it, N=32``."""
    if short:
        return f"{settings.iters} it" + (f", N={settings.batch}" if settings.batch is not None else "")
    parts = [f"{settings.iters} iterations", f"{settings.warmup} warm-up"]
    if settings.batch is not None:
        parts.append(f"batch {settings.batch}")
    if not settings.verify:
        parts.append("not verified")
    return ", ".join(parts)


# ---------------------------------------------------------------------- MIOpen's verdict vs ours

#: annotations MIOpenDriver's output leaves on a layer (``miotui.formats.miopen.driver_output``)
DRIVER_ANNOTATIONS = ("driver_verdict", "driver_tolerance", "driver_verify_error", "driver_reference",
                      "driver_error", "driver_kernel_ms")


def driver_comparison(annotations: Iterable[tuple[str, str]], results: Sequence[Any]) -> list[str]:
    """Sentences that put MIOpen's logged verdict (from MIOpenDriver output in the log)
    next to miotui's, and say why they can differ.  Empty when the log holds no verdict
    and no driver error for this layer."""
    ann = dict(annotations)
    verdict = ann.get("driver_verdict", "")
    error = ann.get("driver_error", "")
    if not verdict and not error:
        return []
    out: list[str] = []
    if error:
        out.append(f"MIOpenDriver (in the log) reported an error: {error}")
    if verdict:
        logged = f"MIOpenDriver (in the log): {'FAILED' if verdict.upper().startswith('FAIL') else 'ok'}"
        details = []
        if ann.get("driver_verify_error"):
            details.append(f"error {_num(ann['driver_verify_error'])}")
        if ann.get("driver_tolerance"):
            details.append(f"tolerance {_num(ann['driver_tolerance'])}")
        if ann.get("driver_reference"):
            details.append(f"against its {ann['driver_reference']} reference")
        out.append(logged + (" (" + ", ".join(details) + ")" if details else ""))
    ours = [r for r in results if getattr(r, "verification", None) is not None]
    if not ours:
        out.append("miotui: not run yet (r runs it; its verdict will be shown next to this one)")
        return out
    mine = ours[-1]
    v = mine.verification
    out.append(f"miotui ({mine.backend}): {verdict_of(mine)} ({getattr(v, 'metric', 'rms_range')} "
               f"{units.sci(getattr(v, 'error', v.rms_range))}, tolerance {units.sci(v.tolerance)} against a "
               "float64 reference; the runs below say how)")
    reasons: list[str] = []
    driver_tol = _float(ann.get("driver_tolerance"))
    if driver_tol is not None and v.tolerance is not None and abs(driver_tol - v.tolerance) > 1e-12 * max(
            abs(driver_tol), abs(v.tolerance), 1e-30):
        reasons.append(f"the tolerances differ: the driver used {units.sci(driver_tol)}, miotui "
                       f"{units.sci(v.tolerance)} (MIOpenDriver's default for this data type and direction; "
                       "a driver run with another -V/tolerance setting, or another MIOpen version, uses another)")
    driver_failed = verdict.upper().startswith("FAIL") if verdict else None
    if driver_failed is not None and driver_failed != (not v.ok):
        reasons.append("the verdicts differ: the driver checked the GPU kernel MIOpen chose on its own random "
                       "inputs; miotui checked a reference implementation on seeded inputs against float64. "
                       "A FAILED driver with an ok miotui points at the GPU kernel (or its tolerance), not at "
                       "the layer's maths")
    if reasons:
        out.append("Why they differ: " + "; ".join(reasons) + ".")
    return out


def _float(text: Optional[str]) -> Optional[float]:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _num(text: str) -> str:
    value = _float(text)
    return units.sci(value) if value is not None else text

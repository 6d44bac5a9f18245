"""A rocprofv3 kernel trace joined to a MIOpen log of the same run, by the order of calls.

A kernel trace has no layer in it: only kernel names and times.  The log has the layers, one
call after another.  MIOpen's kernel names say the family of the layer that launched them
(``kernel_trace.kernel_family``), so the two sequences are cut into runs of one family (three
convolution calls in a row; the kernels of a batch norm) and laid side by side, in order:

* where a run of n calls meets a run of m kernels of the same family and m is a multiple of
  n, each call is given m/n kernels in order (a layer launching the same number of kernels
  each call, as a steady training step does);
* where m is not a multiple of n, nobody can tell which kernel is whose: the run's kernels
  are counted as not attributed, and the run is named;
* where the families part (the log's next run is a convolution, the trace's a batch norm:
  a call the log did not show, a trace that started late), the join stops there and says
  where; nothing after it is attributed.

Nothing is guessed silently: the line the join writes gives the share of the trace's kernel
time attributed to layers and each reason the rest was not.  The log's elapsed-time field and
roctx ranges are not used yet (the order alone); kernels whose names name no MIOpen family
(rocBLAS GEMMs, a framework's own kernels) are never attributed.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import Sequence

from miotui.catalog import Catalog
from miotui.formats.rocprof.kernel_trace import FAMILIES, Dispatch
from miotui.views.timing import KernelTime

SOURCE = "rocprofv3"
#: calls of the log remembered in order (a join keeps one reference per call up to this)
CALLS_KEPT = 5_000_000
_FAMILY_NAMES = {family for _, family in FAMILIES}


class CallOrder(Catalog):
    """A catalog that also keeps the order of the log's calls (each execution's problem),
    which a kernel-trace join needs and an ordinary decode does not (it would grow with the
    log)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list = []
        self.calls_dropped = 0

    def _called(self, problem, times: int) -> None:
        if len(self.calls) + times > CALLS_KEPT:
            self.calls_dropped += times
            return
        self.calls.extend([problem] * times)

    def add_sighting(self, problem, role, source, line, file="", warnings=(), annotations=(), raw=None,
                     count=True, only_if_new=False):
        new = not self.has_row(problem)
        row = super().add_sighting(problem, role, source, line, file, warnings, annotations, raw, count, only_if_new)
        if role == "execution" and count and (new or not only_if_new):
            self._called(row.problem, 1)
        return row

    def count_again(self, row, role, line, times=1, file=""):
        super().count_again(row, role, line, times, file)
        if role == "execution":
            self._called(row.problem, times)


@dataclass(frozen=True)
class KernelJoin:
    calls: int
    kernels: int
    total_ms: float
    attributed_ms: float
    not_miopen_ms: float
    ambiguous: tuple[str, ...]
    parted: str

    def line(self) -> str:
        share = 100 * self.attributed_ms / self.total_ms if self.total_ms > 0 else 0.0
        text = (f"rocprofv3: {share:.0f}% of {self.total_ms:.3g} ms in {self.kernels} kernels attributed to "
                f"{self.calls} logged calls by their order; {self.not_miopen_ms:.3g} ms in kernels no MIOpen "
                f"family names")
        if self.ambiguous:
            text += f"; not attributed (kernel counts that do not divide): {'; '.join(self.ambiguous[:3])}"
            text += f" (+{len(self.ambiguous) - 3} more)" if len(self.ambiguous) > 3 else ""
        if self.parted:
            text += f"; {self.parted}"
        return text


def join_kernel_trace(catalog: CallOrder, dispatches: Sequence[Dispatch], file: str = "") -> KernelJoin:
    """Give ``catalog``'s layers the kernel times of their calls (see the module)."""
    kernels = sorted(dispatches, key=lambda d: d.start_ns)
    total_ms = sum(d.ms for d in kernels)
    mine = [d for d in kernels if d.family is not None]
    calls = [p for p in catalog.calls if p.op in _FAMILY_NAMES]
    call_runs = [(family, list(run)) for family, run in groupby(calls, key=lambda p: p.op)]
    kernel_runs = [(family, list(run)) for family, run in groupby(mine, key=lambda d: d.family)]
    per_problem: dict = {}
    ambiguous: list[str] = []
    parted = ""
    attributed = 0.0
    for i, ((family, run_calls), (kernel_family, run_kernels)) in enumerate(zip(call_runs, kernel_runs,
                                                                                   strict=False)):
        if family != kernel_family:
            parted = (f"the log and the trace part at run {i + 1}: the log's next calls are {len(run_calls)} x "
                      f"{family}, the trace's next kernels {len(run_kernels)} x {kernel_family}; nothing after is "
                      "attributed")
            break
        n, m = len(run_calls), len(run_kernels)
        if m % n:
            ambiguous.append(f"run {i + 1}: {n} {family} calls, {m} kernels")
            continue
        k = m // n
        for j, problem in enumerate(run_calls):
            ms = sum(d.ms for d in run_kernels[j * k:(j + 1) * k])
            entry = per_problem.setdefault(problem, [0.0, 0, 0])
            entry[0] += ms
            entry[1] += 1
            entry[2] += k
            attributed += ms
    else:
        if len(call_runs) != len(kernel_runs):
            parted = (f"the log has {len(call_runs)} runs of calls, the trace {len(kernel_runs)} runs of kernels: "
                      "the ones past the shorter are not attributed")
    give_times(catalog, per_problem, "by the order of calls", file, KernelTime(total_ms, attributed, len(kernels)))
    not_miopen = total_ms - sum(d.ms for d in mine)
    return KernelJoin(len(calls), len(kernels), total_ms, attributed, not_miopen, tuple(ambiguous), parted)


def give_times(catalog: Catalog, per_problem: dict, how: str, file: str, kernel_time: KernelTime) -> None:
    """Each problem's kernel time (``per_problem``: problem -> [ms, calls, kernels]) as its
    ``rocprof`` annotations, saying ``how`` the kernels were joined, and the trace's totals."""
    with catalog.writing():
        for problem, (ms, n, k) in per_problem.items():
            catalog.add_sighting(problem, "mention", SOURCE, 0, file, count=False, annotations=(
                ("rocprof_time_ms", f"{ms / n:.6g}"), ("rocprof_total_ms", f"{ms:.6g}"),
                ("rocprof_kernels", f"{k} kernels in {n} calls (joined {how})")))
        catalog.kernel_time["rocprof"] = kernel_time

"""A rocprofv3 trace joined to a MIOpen log by roctx ranges, where the run recorded them.

MIOpen built with roctracer pushes a roctx range around each API call it logs when
``MIOPEN_ENABLE_LOGGING_ROCTX=1`` (its ``logger.hpp``): the range's text is ``s_api =
miopenConvolutionForward | xDesc = ... | ...``, the function's name first.  rocprofv3 records the
ranges with ``--marker-trace`` and, with ``--hip-trace``, the runtime call that launched each
kernel, which carries the kernel's correlation id.  A kernel is then the range's whose span on
the launch's thread holds the launch (the innermost: the mechanism the PyTorch profiler join uses,
``miotui.kernel_attribution``): no guess about which kernel is whose.

The ranges of executions (``miopenConvolutionForward``, ``miopenBatchNormalizationForwardTraining``,
...: ``EXECUTIONS``) are then laid beside the log's calls, one for one, in order; each must name
the same layer family and direction as its call, and where one does not, the join stops there and
says where (a call the log did not show, a trace started late).  Kernels under MIOpen's other
ranges (a Find benchmarking its solvers, a descriptor call), under no MIOpen range (a framework's
own kernels) or without a launch record are counted and said, never given to a layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from miotui.formats.rocprof.join import CallOrder, give_times
from miotui.formats.rocprof.rocpd import Region
from miotui.kernel_attribution import Attribution, OpCall
from miotui.views.timing import KernelTime

#: MIOpen API calls that execute a layer -> the (op, direction) of the log's call for it
EXECUTIONS = {
    "miopenConvolutionForward": ("conv", "fwd"), "miopenConvolutionForwardImmediate": ("conv", "fwd"),
    "miopenConvolutionBackwardData": ("conv", "bwd"), "miopenConvolutionBackwardDataImmediate": ("conv", "bwd"),
    "miopenConvolutionBackwardWeights": ("conv", "wrw"),
    "miopenConvolutionBackwardWeightsImmediate": ("conv", "wrw"),
    "miopenBatchNormalizationForwardTraining": ("bnorm", "fwd_train"),
    "miopenBatchNormalizationForwardTraining_V2": ("bnorm", "fwd_train"),
    "miopenBatchNormalizationForwardInference": ("bnorm", "fwd_infer"),
    "miopenBatchNormalizationForwardInference_V2": ("bnorm", "fwd_infer"),
    "miopenBatchNormalizationBackward": ("bnorm", "bwd"), "miopenBatchNormalizationBackward_V2": ("bnorm", "bwd"),
    "miopenPoolingForward": ("pool", "fwd"), "miopenPoolingBackward": ("pool", "bwd"),
    "miopenActivationForward": ("activ", "fwd"), "miopenActivationBackward": ("activ", "bwd"),
    "miopenSoftmaxForward": ("softmax", "fwd"), "miopenSoftmaxForward_V2": ("softmax", "fwd"),
    "miopenSoftmaxBackward": ("softmax", "bwd"), "miopenSoftmaxBackward_V2": ("softmax", "bwd"),
}
_KEYS = set(EXECUTIONS.values())
_API = re.compile(r"\s*s_api\s*=\s*(miopen\w+)")


def api_of(text: str) -> Optional[str]:
    """The MIOpen API function a roctx range's text names (None: not one of MIOpen's ranges)."""
    m = _API.match(text)
    return m.group(1) if m else None


def miopen_ranges(regions: Sequence[Region]) -> list[Region]:
    """The roctx ranges MIOpen pushed, in the order they began."""
    return sorted((r for r in regions if r.marker and api_of(r.name)), key=lambda r: (r.start_ns, -r.end_ns))


@dataclass(frozen=True)
class RangeJoin:
    calls: int
    kernels: int
    total_ms: float
    attributed_ms: float
    other_calls_ms: float      # under MIOpen ranges that execute no layer (Finds, descriptor calls)
    no_range_ms: float         # launched under no MIOpen range
    no_launch_ms: float        # no launch record to tie to a range
    unmatched_ms: float        # under execution ranges the log's calls did not meet
    parted: str

    def line(self) -> str:
        share = 100 * self.attributed_ms / self.total_ms if self.total_ms > 0 else 0.0
        text = (f"rocprofv3: {share:.0f}% of {self.total_ms:.3g} ms in {self.kernels} kernels attributed to "
                f"{self.calls} logged calls by MIOpen's roctx ranges; not attributed: "
                f"{self.other_calls_ms:.3g} ms under MIOpen calls that run no layer (Finds), "
                f"{self.no_range_ms:.3g} ms under no MIOpen range, {self.no_launch_ms:.3g} ms without a launch record")
        if self.unmatched_ms:
            text += f", {self.unmatched_ms:.3g} ms under ranges the log's calls did not meet"
        if self.parted:
            text += f"; {self.parted}"
        return text


def join_by_ranges(catalog: CallOrder, dispatches: Sequence, regions: Sequence[Region], file: str = "") -> RangeJoin:
    """Give ``catalog``'s layers the kernel times of their calls through MIOpen's roctx ranges
    (see the module)."""
    ranges = miopen_ranges(regions)
    attribution = Attribution()
    for i, r in enumerate(ranges):
        attribution.calls.append(OpCall(r.thread, r.start_ns, r.end_ns, [i]))
    for region in regions:
        if not region.marker and region.correlation is not None:
            attribution.launch(region.correlation, region.thread, region.start_ns)
    for d in dispatches:
        attribution.kernel(d.correlation, d.ms, d.name)
    no_range_ms, _, no_launch_ms, _ = attribution.attribute()
    executions = [(call, EXECUTIONS[api]) for call, r in zip(attribution.calls, ranges, strict=True)
                  if (api := api_of(r.name)) in EXECUTIONS]
    other_ms = sum(ms for call, r in zip(attribution.calls, ranges, strict=True)
                   if api_of(r.name) not in EXECUTIONS for _, ms, _ in call.kernels)
    calls = [p for p in catalog.calls if (p.op, p.direction) in _KEYS]
    per_problem: dict = {}
    parted = ""
    met = 0
    for k, ((call, key), problem) in enumerate(zip(executions, calls, strict=False)):
        if key != (problem.op, problem.direction):
            parted = (f"the log and the ranges part at call {k + 1}: the log's is {problem.op} {problem.direction}, "
                      f"the range's {' '.join(key)}; nothing after is attributed")
            break
        met += 1
        entry = per_problem.setdefault(problem, [0.0, 0, 0])
        entry[0] += sum(ms for _, ms, _ in call.kernels)
        entry[1] += 1
        entry[2] += len(call.kernels)
    else:
        if len(executions) != len(calls):
            parted = (f"the log has {len(calls)} calls, the trace {len(executions)} MIOpen execution ranges: the "
                      "ones past the shorter are not attributed")
    attributed = sum(entry[0] for entry in per_problem.values())
    unmatched = sum(ms for call, _ in executions[met:] for _, ms, _ in call.kernels)
    total_ms = sum(d.ms for d in dispatches)
    kernel_time = KernelTime(total_ms, attributed, len(dispatches))
    give_times(catalog, per_problem, "by MIOpen's roctx ranges", file, kernel_time)
    return RangeJoin(met, len(dispatches), total_ms, attributed, other_ms, no_range_ms, no_launch_ms, unmatched,
                     parted)

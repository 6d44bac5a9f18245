"""The GPU's own time per call: the durations of the kernels each call launched, read from
a profiler trace (torch.profiler's Chrome JSON, the CUPTI/roctracer records of CUDA and ROCm).

Why not events alone: CUDA events around a call measure from its first kernel to its last,
gaps included.  On an H100 a 0.005-0.03 ms fp16 convolution launches 1-4 kernels with
about 1 us between them, so the events said 1.1-1.7x the kernels' time even with the host
well ahead of the GPU.  MIOpenDriver's kernel time is the sum of its kernels' times; this
is the same quantity, so the two can be compared.

Attribution (:mod:`miotui.kernel_attribution`, the mechanism the profiler-trace format
uses too): each timed call runs inside a ``record_function`` range named ``CALL_PREFIX +
index``; a kernel belongs to the call whose range holds the host launch with the kernel's
correlation id (same thread).  A kernel launched outside every range
(the spin kernel that holds the GPU, the warm-up) belongs to none.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from miotui.kernel_attribution import Attribution, OpCall

#: the name of each timed call's profiler range, followed by its index
CALL_PREFIX = "miotui call "
#: trace categories that are GPU work of a call (kernels and the memsets a call asks for)
GPU_WORK = ("kernel", "gpu_memset")


def kernel_ms_per_call(trace_events: Iterable[dict[str, Any]], calls: int) -> Optional[list[float]]:
    """Per call (index order), the summed duration in ms of the GPU work it launched; None
    when the trace does not let every call be attributed (no ranges, no correlation ids, a
    call with no kernel): the caller then keeps its event times and says why."""
    join = Attribution()
    ranges: list[Optional[OpCall]] = [None] * calls
    for e in trace_events:
        if e.get("ph") != "X":
            continue
        cat, name = e.get("cat"), str(e.get("name", ""))
        if cat == "user_annotation" and name.startswith(CALL_PREFIX):
            index = name[len(CALL_PREFIX):]
            if index.isdigit() and int(index) < calls:
                ts = float(e["ts"])
                ranges[int(index)] = span = OpCall((e.get("tid"),), ts, ts + float(e.get("dur", 0)), [])
                join.calls.append(span)
        elif cat in ("cuda_runtime", "cuda_driver"):
            correlation = e.get("args", {}).get("correlation")
            if correlation is not None:
                join.launch(correlation, (e.get("tid"),), float(e["ts"]))
        elif cat in GPU_WORK:
            correlation = e.get("args", {}).get("correlation")
            if correlation is not None:
                join.kernel(correlation, float(e.get("dur", 0)), name)
    join.attribute()
    if any(span is None or not span.kernels for span in ranges):
        return None
    return [sum(us for _, us, _ in span.kernels) / 1e3 for span in ranges]   # type: ignore[union-attr]

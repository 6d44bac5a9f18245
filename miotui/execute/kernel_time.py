"""The GPU's own time per call: the durations of the kernels each call launched, read from
a profiler trace (torch.profiler's Chrome JSON, the CUPTI/roctracer records of CUDA and ROCm).

Why not events alone: CUDA events around a call measure from its first kernel to its last,
gaps included.  On an H100 a 0.005-0.03 ms fp16 convolution launches 1-4 kernels with
about 1 us between them, so the events said 1.1-1.7x the kernels' time even with the host
well ahead of the GPU.  MIOpenDriver's kernel time is the sum of its kernels' times; this
is the same quantity, so the two can be compared.

Attribution: each timed call runs inside a ``record_function`` range named
``CALL_PREFIX + index``; a kernel belongs to the call whose range holds the host launch
with the kernel's correlation id (same thread).  A kernel launched outside every range
(the spin kernel that holds the GPU, the warm-up) belongs to none.
"""

from __future__ import annotations

import bisect
from typing import Any, Iterable, Optional

#: the name of each timed call's profiler range, followed by its index
CALL_PREFIX = "miotui call "
#: trace categories that are GPU work of a call (kernels and the memsets a call asks for)
GPU_WORK = ("kernel", "gpu_memset")


def kernel_ms_per_call(trace_events: Iterable[dict[str, Any]], calls: int) -> Optional[list[float]]:
    """Per call (index order), the summed duration in ms of the GPU work it launched; None
    when the trace does not let every call be attributed (no ranges, no correlation ids, a
    call with no kernel): the caller then keeps its event times and says why."""
    ranges: dict[Any, list[tuple[float, float, int]]] = {}
    launches: list[dict[str, Any]] = []
    work: dict[Any, float] = {}
    for e in trace_events:
        if e.get("ph") != "X":
            continue
        cat, name = e.get("cat"), str(e.get("name", ""))
        if cat == "user_annotation" and name.startswith(CALL_PREFIX):
            index = name[len(CALL_PREFIX):]
            if index.isdigit() and int(index) < calls:
                ts = float(e["ts"])
                ranges.setdefault(e.get("tid"), []).append((ts, ts + float(e.get("dur", 0)), int(index)))
        elif cat in ("cuda_runtime", "cuda_driver"):
            if "correlation" in e.get("args", {}):
                launches.append(e)
        elif cat in GPU_WORK:
            corr = e.get("args", {}).get("correlation")
            if corr is not None:
                work[corr] = work.get(corr, 0.0) + float(e.get("dur", 0))
    if not ranges or not work:
        return None
    starts = {tid: ([r[0] for r in sorted(rs)], sorted(rs)) for tid, rs in ranges.items()}
    per_call_us = [0.0] * calls
    seen = [False] * calls
    for launch in launches:
        corr = launch["args"]["correlation"]
        if corr not in work or launch.get("tid") not in starts:
            continue
        keys, rs = starts[launch["tid"]]
        ts = float(launch["ts"])
        i = bisect.bisect_right(keys, ts) - 1
        if i >= 0 and rs[i][0] <= ts <= rs[i][1]:
            index = rs[i][2]
            per_call_us[index] += work[corr]
            seen[index] = True
    if not all(seen):
        return None
    return [us / 1e3 for us in per_call_us]

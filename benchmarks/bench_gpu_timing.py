#!/usr/bin/env python3
"""GPU timing benchmark (needs a CUDA or ROCm GPU; run by hand): is the torch backend's
time the kernels' own time?

For each layer (ResNet-50 convolutions at batch 16, fp32 / fp16 / bf16, each direction):

``kernels``  the baseline: the same calls run under ``torch.profiler``; the durations of the
             GPU kernels (and memsets) they launched, summed per call (what the GPU itself
             recorded, no host time at all).
``miotui``   the torch backend's median through :func:`miotui.execute.runner.run_layer`,
             as ``r`` in the app and ``miotui run`` measure it (the kernels of each call
             from the profiler's trace, calls queued behind a spin kernel).
``span``     the median span of a call between its events, in the same run (first kernel
             to last, the gaps between a call's kernels included).
``before``   how it was measured before this change: events around each call while the
             host queues them as fast as Python can (no spin kernel, no profiler).

The ratio to ``kernels`` is the error of each way; the README lists a run of it.

    python benchmarks/bench_gpu_timing.py [--iters 50] [--dtypes fp16,bf16,fp32]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from miotui.execute import torch_backend  # noqa: E402
from miotui.execute.backends import RunSettings, get_backend  # noqa: E402
from miotui.execute.reference import make_inputs  # noqa: E402
from miotui.execute.runner import clear_cache, run_layer  # noqa: E402
from miotui.problems import ConvProblem  # noqa: E402

#: (name, c, k, hw, filter, pad, stride): ResNet-50's small and mid layers
LAYERS = [
    ("1x1 64->64 56", 64, 64, 56, 1, 0, 1),
    ("3x3 64->64 56", 64, 64, 56, 3, 1, 1),
    ("1x1 256->64 56", 256, 64, 56, 1, 0, 1),
    ("3x3 128->128 28", 128, 128, 28, 3, 1, 1),
    ("1x1 1024->256 14", 1024, 256, 14, 1, 0, 1),
    ("3x3 256->256 14", 256, 256, 14, 3, 1, 1),
    ("3x3 512->512 7", 512, 512, 7, 3, 1, 1),
    ("1x1 2048->512 7", 2048, 512, 7, 1, 0, 1),
]


def problem(direction: str, dtype: str, c: int, k: int, hw: int, f: int, pad: int, stride: int,
            n: int = 16) -> ConvProblem:
    return ConvProblem(direction, dtype, n, c, k, (hw, hw), (f, f), (pad, pad), (stride, stride), (1, 1))


def kernel_ms_per_call(p: ConvProblem, calls: int) -> float:
    """The GPU's own time per call: kernel and memset durations from a profiler trace."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    tb = get_backend("torch")
    prepared = tb.prepare(p, make_inputs(p))
    for _ in range(3):
        tb.run(p, prepared, None)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            tb.run(p, prepared, None)
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    us = sum(e.get("dur", 0) for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset"))
    return us / 1e3 / calls


def miotui_ms(p: ConvProblem, iters: int, before: bool) -> tuple[float, str]:
    make, start = torch_backend.GpuHold.make, torch_backend.start_profiler
    if before:
        torch_backend.GpuHold.make = classmethod(lambda cls, torch: None)   # type: ignore[assignment]
        torch_backend.start_profiler = lambda torch: "profiler off for the baseline"
    clear_cache()   # the same layer and settings would be answered from the cache
    try:
        res = run_layer(p, RunSettings(backend="torch", iters=iters, warmup=3, verify=False))
    finally:
        torch_backend.GpuHold.make, torch_backend.start_profiler = make, start   # type: ignore[method-assign]
    assert res.status == "ok", res.message
    return res.median_ms, res.message


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--dtypes", default="fp16,bf16,fp32")
    ap.add_argument("--directions", default="fwd,bwd,wrw")
    args = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("no GPU: this benchmark needs torch.cuda")
        return 1
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, TF32 off, batch 16, "
          f"{args.iters} calls, medians in ms")
    print(f"{'layer':18} {'dir':4} {'dtype':5} {'kernels':>8} {'miotui':>8} {'ratio':>6} {'span':>8} {'ratio':>6} "
          f"{'before':>8} {'ratio':>6}")
    worst_new, worst_span, worst_old = [], [], []
    for dtype in args.dtypes.split(","):
        for direction in args.directions.split(","):
            for name, *shape in LAYERS:
                p = problem(direction, dtype, *shape)
                kern = kernel_ms_per_call(p, args.iters)
                new, message = miotui_ms(p, args.iters, before=False)
                old, _ = miotui_ms(p, args.iters, before=True)
                if "GPU kernel time" in message:
                    span = float(message.split(" ms from a call's first kernel")[0].rsplit(" ", 1)[1])
                    flag = ""
                else:
                    span, flag = float("nan"), "  [" + message + "]"
                worst_new.append(new / kern)
                worst_span.append(span / kern)
                worst_old.append(old / kern)
                print(f"{name:18} {direction:4} {dtype:5} {kern:8.4f} {new:8.4f} {new / kern:6.2f} {span:8.4f} "
                      f"{span / kern:6.2f} {old:8.4f} {old / kern:6.2f}{flag}", flush=True)
    for what, ratios in (("miotui", worst_new), ("span", worst_span), ("before", worst_old)):
        print(f"ratio to the kernels' time, {what}: median {statistics.median(ratios):.2f}, "
              f"min {min(ratios):.2f}, max {max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Reference-convolution benchmark: numpy (and numba) against torch CPU.

Run by hand (takes a few minutes)::

    python benchmarks/bench_reference.py                 # everything, batch 8
    python benchmarks/bench_reference.py --sections resnet --repeats 3
    OPENBLAS_CORETYPE=SkylakeX python benchmarks/bench_reference.py   # other BLAS kernels

Sections:

* ``resnet``: the 23 distinct convolutions of ResNet-50 (torchvision v1.5, 224x224),
  every direction, numpy fp32 vs torch: time, GFLOP/s, ratio, geomean ratio per
  direction.  Targets: geomean numpy/torch <= 1.0 per direction, dense >= 100 GFLOP/s.
* ``depthwise``: MobileNet-V2's depthwise 3x3 layers, numba (JIT time reported apart)
  vs torch (and numpy for scale).  Target: numba <= 1.2x torch.
* ``fp64``: the verification reference (:mod:`miotui.execute.oracle`: a direct float64
  tap sum sharing no code with the backends) vs the numpy backend's fp32 run on the
  ResNet-50 layers, and the numpy backend's own code in float64 (the verdict's reference
  before it was made independent) for scale.  Target: <= 3x.

Times are the minimum over ``--repeats`` runs after a warm-up, each implementation in
its own block after a pause (two rounds), with ``OMP_WAIT_POLICY=PASSIVE`` unless set:
otherwise the libraries' idle-spinning threads slow each other (see ``timed``).  FLOPs = 2*N*K*Ho*Wo*C/G*R*S for
every direction.  Each numpy result is checked against torch's (rms_range) as it runs.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional

# torch's OpenMP threads spin after each call and OpenBLAS's workers after each GEMM; on
# two cores the spinning threads of one library slowed the other up to 17x (measured).
# PASSIVE makes torch's threads sleep when idle; blocks of runs with a pause between them
# (``timed``) let OpenBLAS's workers go to sleep.  Read by libgomp at load: set it first.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
# then miotui.execute, before numpy: it may set OPENBLAS_CORETYPE, which OpenBLAS reads when it loads
importlib.import_module("miotui.execute")
import numpy as np  # noqa: E402

from miotui.execute import numba_kernels, oracle  # noqa: E402
from miotui.execute import reference as R  # noqa: E402
from miotui.execute.verify import rms_range  # noqa: E402
from miotui.problems import ConvProblem  # noqa: E402

# (name, C, H, K, filter, stride, pad): ResNet-50's distinct convolutions at 224x224
RESNET50 = [
    ("conv1", 3, 224, 64, 7, 2, 3),
    ("l1.1x1a", 64, 56, 64, 1, 1, 0),
    ("l1.3x3", 64, 56, 64, 3, 1, 1),
    ("l1.1x1b", 64, 56, 256, 1, 1, 0),
    ("l1.1x1c", 256, 56, 64, 1, 1, 0),
    ("l2.1x1a", 256, 56, 128, 1, 1, 0),
    ("l2.3x3s2", 128, 56, 128, 3, 2, 1),
    ("l2.1x1b", 128, 28, 512, 1, 1, 0),
    ("l2.down", 256, 56, 512, 1, 2, 0),
    ("l2.1x1c", 512, 28, 128, 1, 1, 0),
    ("l2.3x3", 128, 28, 128, 3, 1, 1),
    ("l3.1x1a", 512, 28, 256, 1, 1, 0),
    ("l3.3x3s2", 256, 28, 256, 3, 2, 1),
    ("l3.1x1b", 256, 14, 1024, 1, 1, 0),
    ("l3.down", 512, 28, 1024, 1, 2, 0),
    ("l3.1x1c", 1024, 14, 256, 1, 1, 0),
    ("l3.3x3", 256, 14, 256, 3, 1, 1),
    ("l4.1x1a", 1024, 14, 512, 1, 1, 0),
    ("l4.3x3s2", 512, 14, 512, 3, 2, 1),
    ("l4.1x1b", 512, 7, 2048, 1, 1, 0),
    ("l4.down", 1024, 14, 2048, 1, 2, 0),
    ("l4.1x1c", 2048, 7, 512, 1, 1, 0),
    ("l4.3x3", 512, 7, 512, 3, 1, 1),
]

# (name, C, H, stride): MobileNet-V2's depthwise 3x3 convolutions (pad 1)
MOBILENET_DW = [
    ("dw32x112", 32, 112, 1), ("dw96x112s2", 96, 112, 2), ("dw144x56", 144, 56, 1),
    ("dw144x56s2", 144, 56, 2), ("dw192x28", 192, 28, 1), ("dw192x28s2", 192, 28, 2),
    ("dw384x14", 384, 14, 1), ("dw576x14", 576, 14, 1), ("dw576x14s2", 576, 14, 2),
    ("dw960x7", 960, 7, 1),
]

DIRECTIONS = ("fwd", "bwd", "wrw")


@dataclass
class Row:
    section: str
    layer: str
    direction: str
    gflop: float
    ours_ms: float
    torch_ms: float
    extra_ms: Optional[float] = None
    check: Optional[float] = None

    @property
    def ratio(self) -> float:
        return self.ours_ms / self.torch_ms


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


PAUSE_S = 0.15


def timed(fns: list[Callable[[], object]], repeats: int) -> list[float]:
    """Minimum seconds of each function over ``repeats`` runs after a warm-up.

    Each function runs in its own block, after a pause: back-to-back calls into two
    libraries make each one's idle-spinning threads steal the other's cores.  Two rounds
    of blocks, so a slow spell of the shared host does not land on one side only.
    """
    best = [math.inf] * len(fns)
    for _ in range(2):
        for i, fn in enumerate(fns):
            time.sleep(PAUSE_S)
            fn()
            for _ in range(max(1, (repeats + 1) // 2)):
                t0 = time.perf_counter()
                fn()
                best[i] = min(best[i], time.perf_counter() - t0)
    return best


def torch_direction(problem: ConvProblem, inputs: dict[str, np.ndarray]) -> Callable[[], object]:
    import torch
    F = torch.nn.functional
    t = {k: torch.from_numpy(v) for k, v in inputs.items()}
    kw = dict(stride=problem.strides, padding=problem.pads, dilation=problem.dilations, groups=problem.groups)
    if problem.direction == "fwd":
        return lambda: F.conv2d(t["x"], t["w"], **kw)
    if problem.direction == "bwd":
        return lambda: torch.nn.grad.conv2d_input(problem.input_shape, t["w"], t["dy"], **kw)
    return lambda: torch.nn.grad.conv2d_weight(t["x"], problem.weight_shape, t["dy"], **kw)


def to_numpy(result: object) -> np.ndarray:
    return result.numpy() if hasattr(result, "numpy") else np.asarray(result)  # type: ignore[union-attr]


def problem_for(direction: str, n: int, c: int, h: int, k: int, f: int, s: int, p: int, groups: int = 1,
                dtype: str = "fp32") -> ConvProblem:
    return ConvProblem(direction, dtype, n, c, k, (h, h), (f, f), (p, p), (s, s), (1, 1), groups=groups)


def run_resnet(batch: int, repeats: int, layers: list[tuple], check: bool) -> list[Row]:
    rows = []
    for name, c, h, k, f, s, p in layers:
        for d in DIRECTIONS:
            prob = problem_for(d, batch, c, h, k, f, s, p)
            inputs = R.make_inputs(prob)
            ours = functools.partial(R.run_reference, prob, inputs)
            theirs = torch_direction(prob, inputs)
            t_ours, t_torch = timed([ours, theirs], repeats)
            err = rms_range(to_numpy(theirs()), next(iter(ours().values()))) if check else None
            rows.append(Row("resnet", name, d, prob.flops / 1e9, t_ours * 1e3, t_torch * 1e3, check=err))
            print_row(rows[-1], "numpy")
    return rows


def run_depthwise(batch: int, repeats: int, check: bool) -> tuple[list[Row], float]:
    jit = numba_kernels.warmup(problem_for("fwd", 1, 8, 8, 8, 3, 1, 1, groups=8))
    rows = []
    for name, c, h, s in MOBILENET_DW:
        for d in DIRECTIONS:
            prob = problem_for(d, batch, c, h, c, 3, s, 1, groups=c)
            inputs = R.make_inputs(prob)
            ours = functools.partial(R.run_reference, prob, inputs, engine="numba")
            plain = functools.partial(R.run_reference, prob, inputs)
            theirs = torch_direction(prob, inputs)
            t_ours, t_torch, t_np = timed([ours, theirs, plain], repeats)
            err = rms_range(to_numpy(theirs()), next(iter(ours().values()))) if check else None
            rows.append(Row("depthwise", name, d, prob.flops / 1e9, t_ours * 1e3, t_torch * 1e3, t_np * 1e3, err))
            print_row(rows[-1], "numba")
    return rows, jit


def run_fp64(batch: int, repeats: int, layers: list[tuple]) -> list[Row]:
    """The verdict's reference vs the numpy backend's fp32 run (and its own float64 run)."""
    rows = []
    for name, c, h, k, f, s, p in layers:
        for d in DIRECTIONS:
            prob = problem_for(d, batch, c, h, k, f, s, p)
            inputs = R.make_inputs(prob)
            t_ref, t32, t64 = timed([functools.partial(oracle.reference_outputs, prob, inputs),
                                     functools.partial(R.run_reference, prob, inputs),
                                     functools.partial(R.run_reference, prob, inputs, precision="fp64")], repeats)
            rows.append(Row("fp64", name, d, prob.flops / 1e9, t_ref * 1e3, t32 * 1e3, t64 * 1e3))
            print_fp64(rows[-1])
    return rows


def print_fp64(r: Row) -> None:
    print(f"  {r.layer:<11} {r.direction:<3}  reference {r.ours_ms:8.2f} ms  numpy fp32 {r.torch_ms:8.2f} ms  "
          f"ratio {r.ratio:5.2f}  (numpy fp64 {r.extra_ms:8.2f} ms)", flush=True)


def best_of(runs: int, measure: Callable[[], list[Row]]) -> list[Row]:
    """Run a section ``runs`` times; keep each row's minimum time per implementation."""
    best = measure()
    for i in range(1, runs):
        print(f"  -- run {i + 1} of {runs}", flush=True)
        for b, r in zip(best, measure(), strict=True):
            b.ours_ms = min(b.ours_ms, r.ours_ms)
            b.torch_ms = min(b.torch_ms, r.torch_ms)
            if b.extra_ms is not None and r.extra_ms is not None:
                b.extra_ms = min(b.extra_ms, r.extra_ms)
    if runs > 1:
        print(f"  best of {runs} runs:")
        for b in best:
            if b.section == "fp64":
                print_fp64(b)
            else:
                print_row(b, "numba" if b.section == "depthwise" else "numpy")
    return best


def print_row(r: Row, ours: str) -> None:
    extra = f"  numpy {r.extra_ms:8.2f} ms" if r.extra_ms is not None else ""
    check = f"  rms_range vs torch {r.check:.1e}" if r.check is not None else ""
    print(f"  {r.layer:<11} {r.direction:<3}  {ours} {r.ours_ms:8.2f} ms {r.gflop / r.ours_ms * 1e3:6.1f} GF/s"
          f"  torch {r.torch_ms:8.2f} ms {r.gflop / r.torch_ms * 1e3:6.1f} GF/s  ratio {r.ratio:5.2f}"
          f"{extra}{check}", flush=True)


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def environment() -> dict[str, object]:
    info: dict[str, object] = {"python": platform.python_version(), "numpy": np.__version__,
                               "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
                               "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                               else os.cpu_count(), "reference_threads": R.THREADS}
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith(("model name", "cpu family")):
                    key, _, value = line.partition(":")
                    info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    info.update(R.blas_info())
    try:
        import torch
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    except ImportError:
        info["torch"] = None
    info["numba"] = numba_kernels.available() or "available"
    return info


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sections", default="resnet,depthwise,fp64")
    ap.add_argument("--quick", action="store_true", help="a third of the ResNet layers")
    ap.add_argument("--no-check", action="store_true", help="skip comparing each result with torch's")
    ap.add_argument("--runs", type=int, default=1,
                    help="repeat everything and keep each row's best times (shared hosts have slow spells)")
    ap.add_argument("--json", help="also write every measurement to this file")
    args = ap.parse_args(argv)
    sections = set(args.sections.split(","))
    layers = RESNET50[::3] if args.quick else RESNET50
    env = environment()
    print("environment: " + ", ".join(f"{k}={v}" for k, v in env.items()), flush=True)
    rows: list[Row] = []
    summary: list[str] = []
    if importlib.util.find_spec("torch") is None:
        print("torch is not installed: nothing to compare with")
        return 1
    if "resnet" in sections:
        print(f"\nResNet-50 convolutions, batch {args.batch}, numpy fp32 vs torch CPU fp32")
        res = best_of(args.runs, lambda: run_resnet(args.batch, args.repeats, layers, not args.no_check))
        rows += res
        for d in DIRECTIONS:
            sub = [r for r in res if r.direction == d]
            g = geomean([r.ratio for r in sub])
            gf = geomean([r.gflop / r.ours_ms * 1e3 for r in sub])
            gft = geomean([r.gflop / r.torch_ms * 1e3 for r in sub])
            summary.append(f"resnet {d}: geomean numpy/torch {g:.2f} (target <= 1.0: {verdict(g <= 1.0)}); "
                           f"numpy geomean {gf:.0f} GFLOP/s (target >= 100: {verdict(gf >= 100)}), "
                           f"torch {gft:.0f} GFLOP/s")
    if "depthwise" in sections:
        print(f"\nMobileNet-V2 depthwise 3x3, batch {args.batch}, numba fp32 vs torch CPU fp32 (numpy for scale)")
        if numba_kernels.available() is not None:
            print(f"  skipped: {numba_kernels.available()}")
        else:
            jits: list[float] = []

            def depthwise_once() -> list[Row]:
                found, jit_s = run_depthwise(args.batch, args.repeats, not args.no_check)
                jits.append(jit_s)
                return found

            dw = best_of(args.runs, depthwise_once)
            jit = jits[0]
            rows += dw
            print(f"  numba JIT/cache-load time (warmup, fp32+fp64 kernels): {jit:.2f} s")
            for d in DIRECTIONS:
                sub = [r for r in dw if r.direction == d]
                g = geomean([r.ratio for r in sub])
                gn = geomean([r.extra_ms / r.torch_ms for r in sub if r.extra_ms])
                summary.append(f"depthwise {d}: geomean numba/torch {g:.2f} (target <= 1.2: {verdict(g <= 1.2)}); "
                               f"numpy/torch {gn:.2f}; worst {max(r.ratio for r in sub):.2f}, "
                               f"best {min(r.ratio for r in sub):.2f}")
            summary.append(f"depthwise: numba JIT {jit:.2f} s (reported apart from run time)")
    if "fp64" in sections:
        print(f"\nverification reference (direct float64 tap sum) vs numpy fp32, ResNet-50 convolutions, "
              f"batch {args.batch}")
        f64 = best_of(args.runs, lambda: run_fp64(args.batch, max(2, args.repeats // 2), layers))
        rows += f64
        for d in DIRECTIONS:
            g = geomean([r.ratio for r in f64 if r.direction == d])
            old = geomean([r.extra_ms / r.torch_ms for r in f64 if r.direction == d and r.extra_ms])
            summary.append(f"reference/numpy fp32 {d}: geomean {g:.2f} (target <= 3: {verdict(g <= 3.0)}); "
                           f"worst {max(r.ratio for r in f64 if r.direction == d):.2f}; "
                           f"numpy's own fp64/fp32 {old:.2f}")
    print("\nsummary")
    for line in summary:
        print("  " + line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"environment": env, "summary": summary,
                       "rows": [r.__dict__ | {"ratio": r.ratio} for r in rows]}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())

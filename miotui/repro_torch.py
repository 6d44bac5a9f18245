"""A standalone PyTorch script of one convolution layer: its shapes, data type, layout
(``channels_last`` for NHWC), TF32 flag as logged and direction, timed with CUDA events.

Why one module: ``miotui diff --pack`` writes it for a changed layer and ``miotui run
--script`` prints it for any layer, a cuDNN one included, so the same problem can be run on
any CUDA or ROCm GPU (ROCm's torch names its GPUs ``cuda`` too and runs convolutions with
MIOpen) and on a CPU.  ``--save FILE.npz`` keeps the seeded inputs and the output, so its
numbers can be checked against miotui's numpy reference (tests/unit/test_repro_torch.py).

Every value written into the script is a number, a bool or a whitelisted name: log text
never reaches it.
"""

from __future__ import annotations

import shlex
from typing import Any, Optional

from miotui.decode_output import shape_text
from miotui.driver import DriverCommandError, to_driver_argv
from miotui.problems import ConvProblem

TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}
#: what the output of each direction is called (MIOpen's names, as ``miotui run`` uses them)
OUTPUT_NAME = {"fwd": "y", "bwd": "dx", "wrw": "dw"}
_CALLS = {"fwd": "conv(x, w, None, stride, pad, dilation, transposed, out_pad, groups)",
          "bwd": "conv_bwd(dy, x, w, None, stride, pad, dilation, transposed, out_pad, groups, "
                 "[True, False, False])[0]",
          "wrw": "conv_bwd(dy, x, w, None, stride, pad, dilation, transposed, out_pad, groups, "
                 "[False, True, False])[1]"}
#: the inputs each direction reads (the others are made for their shapes only)
_INPUTS = {"fwd": ("x", "w"), "bwd": ("dy", "w"), "wrw": ("x", "dy")}


def logged_tf32(layer: Any) -> Optional[bool]:
    """The TF32 flag the log gave the layer (cuDNN's ``enable_tf32``), None when it gave none."""
    value = dict(getattr(layer, "annotations", ()) or ()).get("tf32")
    return {"on": True, "off": False}.get(value) if isinstance(value, str) else None


def has_torch_script(problem: object) -> bool:
    return (isinstance(problem, ConvProblem) and problem.dtype in TORCH_DTYPES
            and problem.pad_mode == "default")


def torch_script(layer: Any, written_by: str, note: str = "") -> str:
    """The script of ``layer`` (a ``LayerSnapshot``); for a layer it cannot express, a
    script that says so and how to run the layer with miotui instead."""
    p = layer.problem
    if not has_torch_script(p):
        why = (f"{p.op} {p.dtype}" if isinstance(p, ConvProblem) else p.op) + " has no standalone script here"
        try:
            argv: Optional[list[str]] = to_driver_argv(p)
        except DriverCommandError:
            argv = None
        run = f"miotui run {shlex.quote(' '.join(argv))} --backend torch" if argv else "(no driver command)"
        return (f'"""{why}: run it with miotui\'s torch backend instead:\n\n    {run}\n"""\n'
                "raise SystemExit(__doc__)\n")
    layout = "torch.channels_last" if p.layout in ("NHWC", "NDHWC") else "torch.contiguous_format"
    if p.ndim == 3 and layout == "torch.channels_last":
        layout = "torch.channels_last_3d"
    tf32 = logged_tf32(layer)
    tf32_line = (f"torch.backends.cudnn.allow_tf32 = {tf32}   # as logged (enable_tf32)" if tf32 is not None else
                 "# the log gives no TF32 flag: torch's default (cuDNN may use TF32 for fp32)")
    what = f"{p.op} {p.direction} {p.dtype} {p.layout} {shape_text(layer)}"
    return f'''"""Layer {layer.id} ({what}), timed with PyTorch.

Written by {written_by}.{note}
Runs on any CUDA or ROCm GPU (CUDA events time it) and on a CPU. On NVIDIA,
CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=stderr python this.py logs the engine cuDNN picks; on ROCm,
MIOPEN_LOG_LEVEL=5 python this.py the solver MIOpen picks.

    python this.py [ITERATIONS] [--save out.npz]   (--save: the inputs and the output, as numpy)
"""
import argparse
import time

import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"
{tf32_line}
dtype = torch.{TORCH_DTYPES[p.dtype]}
fmt = {layout}
direction = {p.direction!r}
gen = torch.Generator().manual_seed(0)


def rand(*shape):
    return (torch.rand(shape, generator=gen) * 2 - 1).to(dtype).to(dev).to(memory_format=fmt)


x = rand(*{tuple(p.input_shape)})
w = rand(*{tuple(p.weight_shape)})
dy = rand(*{tuple(p.output_shape)})
stride, pad, dilation = {list(p.strides)}, {list(p.pads)}, {list(p.dilations)}
transposed, out_pad, groups = {p.mode == "trans"}, {list(p.trans_output_pads)}, {p.groups}
conv, conv_bwd = torch.ops.aten.convolution, torch.ops.aten.convolution_backward


def call():
    return {_CALLS[p.direction]}


parser = argparse.ArgumentParser()
parser.add_argument("iterations", nargs="?", type=int, default=100)
parser.add_argument("--save", help="write the inputs and the output to this .npz file")
args = parser.parse_args()
iters = max(1, args.iterations)
with torch.no_grad():
    out = call()
    if args.save:
        import numpy as np
        arrays = {{"x": x, "w": w, "dy": dy, {OUTPUT_NAME[p.direction]!r}: out}}
        np.savez(args.save, **{{k: v.float().cpu().contiguous().numpy() for k, v in arrays.items()
                               if k in {_INPUTS[p.direction] + (OUTPUT_NAME[p.direction],)!r}}})
    for _ in range(5):
        call()
    if dev == "cuda":
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            call()
        end.record()
        torch.cuda.synchronize()
        per_call = start.elapsed_time(end) / iters
    else:
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        per_call = (time.perf_counter() - t0) * 1000 / iters
print(f"{{dev}} {{torch.__version__}}: {{per_call:.4g}} ms per call over {{iters}} calls")
'''

"""Direct numba kernels for the layers im2col + BLAS handles badly.

Depthwise and small-group convolutions (C/G <= 8, G > 1) and pooling are memory- and
overhead-bound: numpy's im2col runs them at 3-5x torch's time, because every tiny
per-group GEMM pays call overhead and the column copy moves filter-size times the data.

Depthwise layers (one input and one output channel per group) whose output is the
input's stride-phase grid (out == ceil(in / stride) per axis: "same" padding, all of
MobileNet's) run the plane-stacked kernels (see :mod:`miotui.execute.numba_depthwise_jit`): a
block of channels' planes lies back to back in NCHW memory, so every filter tap is one
long unit-stride loop over the whole block at a constant offset, with a per-block
weight tile that zeroes the reads falling in the padding.  Measured on the project's
2-core Zen 5 machine at batch 8 (benchmarks/bench_reference.py --sections depthwise),
geomean time vs torch 2.13 CPU: forward 0.8-0.9, backward data 0.5, backward weights
0.8-0.9 (the old kernels: 3.3, 1.6, 2.9); stride-2 layers on 7x7-28x28 outputs remain
the slowest (1.2-1.8x), their stride-phase split being a scalar gather.

Other grouped convolutions work one (image, group) at a time on "phase planes" (see
:mod:`miotui.execute.numba_conv_jit`): the group's padded input planes are built in a
small per-thread scratch, split into stride phases so every filter tap is a
unit-stride read, and each tap runs as one contiguous loop over the flattened output
plane (at par with torch on 56x56-112x112 planes, 3-10x slower on small ones, where
per-plane overhead dominates).

* numba is optional: this module imports without it, :func:`available` says why it
  cannot be used, and :mod:`miotui.execute.reference` falls back to numpy.
* The kernels live in modules of their own, listed in :data:`REGISTRY` and imported
  on first use (:func:`kernels`): ``import numba`` (0.2-0.3 s) and compilation
  (several seconds for all kernels and both dtypes) happen then; :func:`warmup` does both ahead of a timed run and
  returns the seconds it took, so a backend reports JIT time apart from run time.
  ``cache=True`` keeps the machine code on disk (``__pycache__`` next to this file, or
  numba's user cache dir when that is read-only), so a later process loads it in <1 s.
* Every kernel is ``nogil=True``: work is split over threads by group, channel range
  or (channel block, image) items (no two threads write the same element), and a
  worker thread never freezes the UI.

Arrays are 3-D (N, C, D, H, W) inside the kernels; 2-D problems get a depth axis of 1
(filter 1, stride 1, pad 0), which halves the number of kernels to compile.
"""

from __future__ import annotations

import functools
import importlib
import threading
import time
from typing import Any, Callable, Optional

import numpy as np

from miotui.execute import threads
from miotui.execute.conv_geometry import ConvGeometry, conv_geometry
from miotui.execute.numba_plans import (
    DwPlan,
    PhaseLayout,
    dw_plan,
    dw_shape_ok,
    geometry_args,
    scratch_bytes,
    taps_weights,
    to5d,
)
from miotui.execute.tensors import compute_dtype
from miotui.execute.threads import CancelFlag, check_cancel, in_worker, kernel_pool, run_parallel
from miotui.families import family_of
from miotui.problems import ConvProblem, PoolProblem

__all__ = ["available", "conv_applies", "conv_forward", "conv_backward_data", "conv_backward_weights",
           "pool_forward", "pool_backward", "warmup", "kernel_of", "scratch_bytes", "MAX_GROUP_CHANNELS"]

#: numba runs a grouped convolution when C/G is at most this (and G > 1).
MAX_GROUP_CHANNELS = 8

_lock = threading.Lock()
_kernels: Optional[dict[str, Callable[..., Any]]] = None
_unavailable: Optional[str] = None
_checked = False


def available() -> Optional[str]:
    """None when numba can be used, else why not (checked once, without compiling)."""
    global _checked, _unavailable
    if not _checked:
        import importlib.util
        if importlib.util.find_spec("numba") is None:
            _unavailable = "numba is not installed (pip install numba)"
        _checked = True
    return _unavailable



#: The lazy-JIT registry: kernel name -> (module, function).  A module is imported (and
#: with it numba, which wraps its functions) the first time :func:`kernels` is called;
#: each kernel compiles on its first call.
REGISTRY: dict[str, tuple[str, str]] = {
    "conv_fwd": ("miotui.execute.numba_conv_jit", "conv_fwd"),
    "conv_bwd": ("miotui.execute.numba_conv_jit", "conv_bwd"),
    "conv_wrw": ("miotui.execute.numba_conv_jit", "conv_wrw"),
    "dw_fwd": ("miotui.execute.numba_depthwise_jit", "dw_fwd"),
    "dw_bwd": ("miotui.execute.numba_depthwise_jit", "dw_bwd"),
    "dw_wrw": ("miotui.execute.numba_depthwise_jit", "dw_wrw"),
    "pool_fwd": ("miotui.execute.numba_pool_jit", "pool_fwd"),
    "pool_bwd": ("miotui.execute.numba_pool_jit", "pool_bwd"),
}


def kernels() -> dict[str, Callable[..., Any]]:
    """Every kernel of :data:`REGISTRY`, importing numba and the kernel modules on first use.

    RuntimeError (with the reason, remembered by :func:`available`) when numba is not
    installed or fails to import."""
    global _kernels, _unavailable
    with _lock:
        if _kernels is not None:
            return _kernels
        why = available()
        if why is not None:
            raise RuntimeError(why)
        try:
            modules = {name: importlib.import_module(name) for name in sorted({m for m, _ in REGISTRY.values()})}
        except Exception as exc:  # broken install: remember and fall back
            _unavailable = f"numba failed to import: {exc}"
            raise RuntimeError(_unavailable) from exc
        _kernels = {name: getattr(modules[module], fn) for name, (module, fn) in REGISTRY.items()}
        return _kernels


# ----------------------------------------------------------------------------- conv wrappers

def conv_applies(g: Any, kernel: Optional[str] = None) -> bool:
    """Whether the direct kernels beat im2col for this geometry (depthwise/small groups).

    ``kernel`` ("fwd", "bwd" data, "wrw") of the underlying convolution.  Depthwise
    layers whose output is the input's stride-phase grid (out == ceil(in / stride):
    MobileNet's) run the plane-stacked kernels, faster than numpy in every direction
    (stride 2: 576 channels 14x14 fwd 1.7 vs 2.3 ms, 192 channels 28x28 wrw 2.0 vs
    4.7 ms).  Otherwise, with a stride above 1 and an output plane under 56x56, the
    phase-plane forward and weight kernels measured slower than numpy (576 channels
    14x14 stride 2: 5.2 ms vs 2.1 ms), so numpy keeps those; backward data stays in numba.
    """
    if not (g.groups > 1 and g.cg <= MAX_GROUP_CHANNELS):
        return False
    if dw_shape_ok(g):
        return True
    if kernel in ("fwd", "wrw") and any(s > 1 for s in g.strides) and g.out_elems < 56 * 56:
        return False
    return True



def not_applicable(problem: Any) -> Optional[str]:
    """None when the direct kernels run ``problem`` (given numba is installed), else why
    not, in words for a result: the numba backend does not run such a layer at all
    (numpy's path would run under numba's name).  The family's ``numba_kernels`` entry
    (:func:`conv_not_applicable`, :func:`pool_not_applicable`); the others have none."""
    entry = family_of(problem).numba_kernels
    if not entry.applies:
        return (f"numba's direct kernels cover depthwise/small-group convolutions and pooling, "
                f"not {problem.op}")
    return entry(problem)


def pool_not_applicable(problem: PoolProblem) -> Optional[str]:
    return None


def conv_not_applicable(problem: ConvProblem) -> Optional[str]:
    """Why numba's direct kernels do not run this convolution (dense, too many channels per
    group, or strided on a small plane), or None."""
    g = conv_geometry(problem)
    if g.groups == 1:
        return ("a dense convolution: numba's direct kernels are for depthwise and small-group "
                "convolutions (numpy's im2col+GEMM is the reference for this layer)")
    if g.cg > MAX_GROUP_CHANNELS:
        return (f"{g.cg} input channels per group: numba's direct kernels take at most "
                f"{MAX_GROUP_CHANNELS} (numpy's im2col+GEMM is the reference for this layer)")
    if not conv_applies(g, kernel_of(problem)):
        return ("a strided grouped convolution on a small plane: numpy's im2col+GEMM is faster "
                "there, so numba's direct kernels do not run it")
    return None


def kernel_of(problem: Any) -> str:
    """Which kernel (of the underlying convolution) a conv problem's direction runs."""
    if problem.direction == "wrw":
        return "wrw"
    return "bwd" if (problem.direction == "fwd") == (problem.mode == "trans") else "fwd"


def batch_chunks(n: int, per_image_bytes: int) -> list[tuple[int, int]]:
    """Batch chunks of ~64 MB of input, so ``cancel`` is checked every so often."""
    step = max(1, min(n, (64 << 20) // max(per_image_bytes, 1)))
    return [(a, min(a + step, n)) for a in range(0, n, step)]


def _parallel(fn: Callable[[int, int], None], length: int) -> None:
    run_parallel(fn, length, 1 << 30)


def _dw_parallel(fn: Callable[[int, int], None], items: int, elems: int) -> None:
    """Run ``fn(i0, i1)`` over [0, items) split over the threads; the caller runs the
    first part.  Work under ``DW_SERIAL_ELEMS`` values runs in the caller alone.

    The depthwise kernels take 0.2-1 ms on MobileNet's small layers, so starting a
    thread per call (~0.1 ms) costs a large share: the other parts go to persistent
    workers (a hand-off is ~0.05 ms)."""
    workers = 1 if in_worker() else threads.THREADS   # one thread inside a reference worker
    parts = min(workers, items)
    if parts <= 1 or elems < DW_SERIAL_ELEMS:
        fn(0, items)
        return
    bounds = [items * i // parts for i in range(parts + 1)]
    pool = kernel_pool(workers - 1)
    futures = [pool.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, parts)]
    try:
        fn(bounds[0], bounds[1])
    finally:
        errors = [f.exception() for f in futures]   # waits for every part
    for exc in errors:
        if exc is not None:
            raise exc


#: Below this many input+output values one thread beats two (a hand-off costs ~0.05 ms).
DW_SERIAL_ELEMS = 1 << 16


def _phase_plane_pass(name: str, src: np.ndarray, w: np.ndarray, dst: np.ndarray, g: Any,
                      cancel: Optional[CancelFlag]) -> np.ndarray:
    """Forward (x -> y) or backward data (dy -> dx) on the phase-plane kernels, batch chunk
    by chunk, groups split over the threads; returns ``dst``."""
    kern = kernels()[name]
    lay = PhaseLayout(g)
    args = geometry_args(g, lay)
    wt = taps_weights(w, g)
    for a, b in batch_chunks(g.n, src[0].nbytes):
        check_cancel(cancel)
        s5, d5 = to5d(src[a:b]), to5d(dst[a:b])
        _parallel(lambda g0, g1, s5=s5, d5=d5: kern(s5, wt, lay.ph, lay.off, d5, *args, g.kg, g.cg, g0, g1), g.groups)
    return dst


def conv_forward(x: np.ndarray, w: np.ndarray, g: Any, cancel: Optional[CancelFlag] = None) -> np.ndarray:
    """y of the underlying convolution ``g`` (a :class:`~miotui.execute.conv_geometry.ConvGeometry`)."""
    x = np.ascontiguousarray(x)
    y = np.empty((g.n, g.ku) + g.out_sp, dtype=x.dtype)
    plan = dw_plan(g)
    if plan is not None:
        kern = kernels()["dw_fwd"]
        w2 = np.ascontiguousarray(w.reshape(g.cu, g.taps))
        mask = plan.masks(x.dtype)[0]
        finite: list[bool] = []
        for a, b in batch_chunks(g.n, x[0].nbytes):
            check_cancel(cancel)
            x5, y5 = to5d(x[a:b]), to5d(y[a:b])
            _dw_parallel(lambda i0, i1, x5=x5, y5=y5: finite.append(kern(x5, w2, mask, plan.fwd_off, plan.gidx, y5,
                                                                         plan.cb, plan.nph, plan.margin, i0, i1)),
                         plan.blocks * (b - a), x5.size + y5.size)
        if all(finite):
            return y
    return _phase_plane_pass("conv_fwd", x, w, y, g, cancel)


def conv_backward_data(dy: np.ndarray, w: np.ndarray, g: Any,
                       cancel: Optional[CancelFlag] = None) -> np.ndarray:
    """dx of the underlying convolution ``g``."""
    dy = np.ascontiguousarray(dy)
    dx = np.empty((g.n, g.cu) + g.in_sp, dtype=dy.dtype)
    plan = dw_plan(g)
    if plan is not None:
        kern = kernels()["dw_bwd"]
        w2 = np.ascontiguousarray(w.reshape(g.cu, g.taps)[:, plan.order])
        mask = plan.masks(dy.dtype)[1]
        finite: list[bool] = []
        for a, b in batch_chunks(g.n, dy[0].nbytes):
            check_cancel(cancel)
            dy5, dx5 = to5d(dy[a:b]), to5d(dx[a:b])
            _dw_parallel(lambda i0, i1, dy5=dy5, dx5=dx5: finite.append(kern(dy5, w2, mask, plan.bwd_off, plan.tstart,
                                                                             plan.ridx, dx5, plan.cb, plan.nph,
                                                                             i0, i1)),
                         plan.blocks * (b - a), dy5.size + dx5.size)
        if all(finite):
            return dx
    return _phase_plane_pass("conv_bwd", dy, w, dx, g, cancel)


def conv_backward_weights(x: np.ndarray, dy: np.ndarray, g: Any,
                          cancel: Optional[CancelFlag] = None) -> np.ndarray:
    """dw of the underlying convolution ``g``; per-image sums in the input type, images in float64."""
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy)
    plan = dw_plan(g)
    if plan is not None:
        dw = _dw_wrw(x, dy, g, plan, cancel)
        if np.isfinite(dw).all():   # else an inf/NaN input may have spread: see numba_depthwise_jit.dw_finite
            return dw
    kern = kernels()["conv_wrw"]
    lay = PhaseLayout(g)
    args = geometry_args(g, lay)
    total = np.zeros((g.ku, g.cg, g.taps), dtype=np.float64)
    part = np.empty_like(total)
    for a, b in batch_chunks(g.n, x[0].nbytes):
        check_cancel(cancel)
        x5, dy5 = to5d(x[a:b]), to5d(dy[a:b])
        _parallel(lambda g0, g1, x5=x5, dy5=dy5: kern(x5, dy5, lay.ph, lay.off, part, *args, g.kg, g.cg, g0, g1),
                  g.groups)
        total += part
    return total.reshape((g.ku, g.cg) + g.filt).astype(x.dtype)


def _dw_wrw(x: np.ndarray, dy: np.ndarray, g: Any, plan: DwPlan,
            cancel: Optional[CancelFlag]) -> np.ndarray:
    """Depthwise weight gradient: every thread sums its items into its own float64
    (C, taps) array (no two threads write one element); the parts are added."""
    kern = kernels()["dw_wrw"]
    mask = plan.masks(x.dtype)[0]
    total = np.zeros((g.cu, g.taps), dtype=np.float64)
    parts: list[np.ndarray] = []

    def run(x5: np.ndarray, dy5: np.ndarray, i0: int, i1: int) -> None:
        acc = np.zeros((g.cu, g.taps), dtype=np.float64)
        kern(x5, dy5, mask, plan.fwd_off, plan.gidx, acc, plan.cb, plan.nph, plan.margin, i0, i1)
        parts.append(acc)   # list.append is atomic

    for a, b in batch_chunks(g.n, x[0].nbytes):
        check_cancel(cancel)
        x5, dy5 = to5d(x[a:b]), to5d(dy[a:b])
        _dw_parallel(functools.partial(run, x5, dy5), plan.blocks * (b - a), x5.size + dy5.size)
        for p in parts:
            total += p
        parts.clear()
    return total.reshape((g.ku, g.cg) + g.filt).astype(x.dtype)


# ----------------------------------------------------------------------------- pooling wrappers

_POOL_MODES = {"max": 0, "avg": 1, "avg_in": 2}


def _pool_args(window: tuple[int, ...], strides: tuple[int, ...], pads: tuple[int, ...]) -> tuple[int, ...]:
    if len(window) == 2:
        window, strides, pads = (1,) + window, (1,) + strides, (0,) + pads
    return tuple(window) + tuple(strides) + tuple(pads)


def pool_forward(x: np.ndarray, mode: str, window: tuple[int, ...], strides: tuple[int, ...],
                 pads: tuple[int, ...], out_sp: tuple[int, ...],
                 cancel: Optional[CancelFlag] = None) -> tuple[np.ndarray, np.ndarray]:
    """Pooling forward: (y, argmax) where argmax is the flat spatial index of each
    window's first maximum (-1 for a window wholly in the padding; max mode only)."""
    kern = kernels()["pool_fwd"]
    args = _pool_args(window, strides, pads)
    n, c = x.shape[:2]
    y = np.empty((n, c) + tuple(out_sp), dtype=x.dtype)
    idx = np.full((n, c) + tuple(out_sp), -1, dtype=np.int64)
    xc = np.ascontiguousarray(x)
    for a, b in batch_chunks(n, xc[0].nbytes):
        check_cancel(cancel)
        x5, y5, i5 = to5d(xc[a:b]), to5d(y[a:b]), to5d(idx[a:b])
        _parallel(lambda c0, c1, x5=x5, y5=y5, i5=i5: kern(x5, y5, i5, _POOL_MODES[mode], *args, c0, c1), c)
    return y, idx


def pool_backward(dy: np.ndarray, idx: Optional[np.ndarray], in_shape: tuple[int, ...], mode: str,
                  window: tuple[int, ...], strides: tuple[int, ...], pads: tuple[int, ...],
                  cancel: Optional[CancelFlag] = None) -> np.ndarray:
    """Pooling backward: dx from dy (and the forward argmax for max pooling; None for average)."""
    kern = kernels()["pool_bwd"]
    args = _pool_args(window, strides, pads)
    dx = np.zeros(tuple(in_shape), dtype=dy.dtype)
    dyc = np.ascontiguousarray(dy)
    if idx is None:   # average pooling reads no argmax; any int64 array of dy's shape types it
        idx = np.empty((dy.shape[0], 1) + (1,) * (dy.ndim - 2), dtype=np.int64)
    n, c = dx.shape[:2]
    for a, b in batch_chunks(n, dx[0].nbytes):
        check_cancel(cancel)
        d5, i5, x5 = to5d(dyc[a:b]), to5d(idx[a:b]), to5d(dx[a:b])
        _parallel(lambda c0, c1, d5=d5, i5=i5, x5=x5: kern(d5, i5, x5, _POOL_MODES[mode], *args, c0, c1), c)
    return dx


# ----------------------------------------------------------------------------- warm-up

_compiled: set[tuple[str, str]] = set()


def _tiny_conv(dtype: np.dtype, kernel: str, depthwise: bool) -> dict[str, Callable[[], Any]]:
    """A tiny run of the one conv kernel a problem uses: the plane-stacked depthwise
    kernels or the phase-plane ones (each compiles once per dtype: 1.5-2.5 s)."""
    c = 2 if depthwise else 4
    g = ConvGeometry(1, c, c, 2, (3, 3), (3, 3), (3, 3), (1, 1), (1, 1), (1, 1))
    x = np.zeros((1, c, 3, 3), dtype)
    w = np.zeros((c, c // 2, 3, 3), dtype)
    run = {"fwd": lambda: conv_forward(x, w, g), "bwd": lambda: conv_backward_data(x, w, g),
           "wrw": lambda: conv_backward_weights(x, x, g)}[kernel]
    return {("dw_" if depthwise else "conv_") + kernel: run}


def _tiny_pool(dtype: np.dtype) -> dict[str, Callable[[], Any]]:
    x = np.zeros((1, 1, 3, 3), dtype)

    def both() -> None:
        y, idx = pool_forward(x, "max", (2, 2), (1, 1), (0, 0), (2, 2))
        pool_backward(y, idx, x.shape, "max", (2, 2), (1, 1), (0, 0))

    return {"pool_fwd+bwd": both}


def conv_warmup_kernels(problem: ConvProblem) -> Optional[Callable[[np.dtype], dict[str, Callable[[], Any]]]]:
    g, kernel = conv_geometry(problem), kernel_of(problem)
    if not conv_applies(g, kernel):
        return None
    return functools.partial(_tiny_conv, kernel=kernel, depthwise=dw_shape_ok(g))


def pool_warmup_kernels(problem: PoolProblem) -> Optional[Callable[[np.dtype], dict[str, Callable[[], Any]]]]:
    return _tiny_pool


def warmup(problem: Any, precisions: tuple[str, ...] = ("fp32", "fp64")) -> float:
    """Import numba and compile (or load from cache) the kernels ``problem`` would use,
    for each compute precision; returns the seconds spent (0.0 when nothing was left to
    compile or numba does not apply).  Call it before timing a run."""
    if available() is not None:
        return 0.0
    entry = family_of(problem).numba_warmup
    maker = entry(problem) if entry.applies else None
    if maker is None:
        return 0.0
    start = time.perf_counter()
    try:
        kernels()
    except RuntimeError:
        return 0.0
    for precision in precisions:
        dt = compute_dtype(problem, precision)
        for name, run in maker(dt).items():
            if (name, dt.name) not in _compiled:
                run()
                _compiled.add((name, dt.name))
    return time.perf_counter() - start


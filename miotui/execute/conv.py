"""Convolution reference entry: inputs, direction dispatch, the batch split, numba, memory.

Directions run on the underlying geometry (:mod:`miotui.execute.conv_geometry`):
forward (:mod:`conv_forward`), backward data (:mod:`conv_backward_data`), backward
weights (:mod:`conv_backward_weights`), or the numba direct kernels where they apply
(:mod:`miotui.execute.numba_kernels`).  The batch is processed in chunks whose column
buffer fits ``chunk_bytes``; ``cancel`` is checked between chunks.  Where an im2col
gather or col2im add can overlap another thread's GEMM, the batch is split over
persistent worker threads with BLAS pinned to one thread (:func:`split_parts`).
:func:`conv_peak_bytes` replays the same plan to say what a run needs.
"""

from __future__ import annotations

import math
from concurrent.futures import CancelledError, Future, wait
from typing import Optional, Sequence

import numpy as np

from miotui.execute import numba_kernels, threads
from miotui.execute.blas import blas_threads
from miotui.execute.conv_backward_data import conv_backward_data
from miotui.execute.conv_backward_weights import conv_backward_weights
from miotui.execute.conv_forward import conv_forward
from miotui.execute.conv_geometry import (
    CHUNK_BYTES,
    ConvGeometry,
    conv_geometry,
    conv_plan,
    flipped_geometry,
    uses_phases,
)
from miotui.execute.tensors import check_shape, compute_dtype, storage_dtype, uniform
from miotui.execute.threads import CancelFlag, Cancelled, check_cancel, in_worker, pool_shut_down, split_pool
from miotui.problems import ConvProblem


def conv_tensor_names(problem: ConvProblem) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(input names, output names) in MIOpen's naming: fwd x,w -> y; bwd dy,w -> dx; wrw x,dy -> dw."""
    return {"fwd": (("x", "w"), ("y",)), "bwd": (("dy", "w"), ("dx",)),
            "wrw": (("x", "dy"), ("dw",))}[problem.direction]


def conv_make_inputs(problem: ConvProblem, seed: int = 0) -> dict[str, np.ndarray]:
    """Random inputs (see :func:`miotui.execute.reference.make_inputs`): uniform in [-1, 1)
    (int8: integers in [-32, 32])."""
    shapes = {"x": problem.input_shape, "dy": problem.output_shape, "w": problem.weight_shape}
    lo, hi = (-32, 32) if problem.dtype == "int8" else (-1.0, 1.0)
    dtype = "fp32" if problem.dtype == "unknown" else problem.dtype
    return {name: uniform(seed, name, shapes[name], lo, hi, dtype) for name in conv_tensor_names(problem)[0]}


def _conv_inputs_compute(problem: ConvProblem, inputs: dict[str, np.ndarray], names: Sequence[str],
                         precision: str) -> tuple[list[np.ndarray], np.dtype, bool]:
    """Arrays in the compute type; int8 picks float32 when that is exact, else float64."""
    arrays = []
    for name in names:
        if name not in inputs:
            raise KeyError(f"conv {problem.direction} needs input {name!r} (got {sorted(inputs)})")
        arrays.append(np.asarray(inputs[name]))
    is_int = problem.dtype == "int8"
    if is_int and precision == "fp32":
        g = conv_geometry(problem)
        bound = 1.0
        for a in arrays:
            bound *= float(np.max(np.abs(a.astype(np.int32)))) if a.size else 0.0
        # longest reduction: forward Q, backward data Kg*taps, weights N*Ho*Wo
        length = max(g.q, g.kg * g.taps, g.n * g.out_elems)
        dt = np.dtype(np.float32) if bound * length < 2.0 ** 24 else np.dtype(np.float64)
    else:
        dt = compute_dtype(problem, precision)
    return [np.ascontiguousarray(a, dtype=dt) for a in arrays], dt, is_int


def split_parts(g: ConvGeometry, use_numba: bool) -> int:
    """How many batch parts to run in parallel threads (1 = no split).

    Splitting pays where an im2col gather or col2im add (single-threaded copies) can
    overlap another thread's GEMM: 10-30% faster on 3x3 and strided layers (measured
    on 2 cores), but slower on 1x1 stride-1 layers, which have no gather.
    """
    if use_numba or threads.THREADS < 2 or g.n < 2 or g.is_pointwise or in_worker():
        return 1
    if not blas_threads().usable:
        return 1
    return min(threads.THREADS, g.n)


def conv_direction(direction: str, trans: bool, arrays: list[np.ndarray], g: ConvGeometry,
                    budget: int, cancel: Optional[CancelFlag], use_numba: bool,
                    out: Optional[np.ndarray] = None) -> np.ndarray:
    """One direction on the underlying geometry (arrays already in the compute type);
    ``out`` (numpy path, fwd/bwd) receives the result in place."""
    plan = conv_plan(g, arrays[0].dtype.itemsize, budget)
    if direction == "fwd":
        x, w = arrays
        if trans:   # y = backward data of the conv whose input is y and output is x
            return _nb_bwd(x, w, g, cancel) if use_numba else conv_backward_data(x, w, g, plan, cancel, out)
        return _nb_fwd(x, w, g, cancel) if use_numba else conv_forward(x, w, g, plan, cancel, out)
    if direction == "bwd":
        dy, w = arrays
        if trans:
            return _nb_fwd(dy, w, g, cancel) if use_numba else conv_forward(dy, w, g, plan, cancel, out)
        return _nb_bwd(dy, w, g, cancel) if use_numba else conv_backward_data(dy, w, g, plan, cancel, out)
    x, dy = arrays
    xu, dyu = (dy, x) if trans else (x, dy)
    return _nb_wrw(xu, dyu, g, cancel) if use_numba else conv_backward_weights(xu, dyu, g, plan, cancel)


def _conv_split(direction: str, trans: bool, arrays: list[np.ndarray], g: ConvGeometry, budget: int,
                cancel: Optional[CancelFlag], parts: int) -> Optional[np.ndarray]:
    """Run batch parts in worker threads with BLAS pinned to one thread; None if BLAS is busy."""
    blas = blas_threads()
    old = blas.pin_one()
    if old is None:
        return None
    try:
        bounds = [g.n * i // parts for i in range(parts + 1)]
        batch_args = {"fwd": (0,), "bwd": (0,), "wrw": (0, 1)}[direction]
        result: Optional[np.ndarray] = None
        if direction != "wrw":   # the parts write their slices of the one result array
            shape = (g.ku,) + g.out_sp if (direction == "fwd") != trans else (g.cu,) + g.in_sp
            result = np.empty((g.n,) + shape, dtype=arrays[0].dtype)
        pool = split_pool()
        futures: list[Future] = []
        try:
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                sub = [arr[a:b] if i in batch_args else arr for i, arr in enumerate(arrays)]
                sub_g = ConvGeometry(b - a, g.cu, g.ku, g.groups, g.in_sp, g.out_sp, g.filt, g.strides,
                                     g.dils, g.pad_before)
                futures.append(pool.submit(conv_direction, direction, trans, sub, sub_g,
                                           max(budget // parts, 1), cancel, False,
                                           None if result is None else result[a:b]))
            results = [f.result() for f in futures]
        except (RuntimeError, CancelledError):
            # shutdown_threads() ran meanwhile (the app is quitting): submit refuses new
            # parts, queued ones are cancelled.  Anything else a part raises is its own.
            if not pool_shut_down(pool):
                raise
            for f in futures:
                f.cancel()
            # a part that was running finishes first (it writes into ``result``); a
            # cancelled one never reaches "done" for wait(): a dropped queue item is not notified
            wait([f for f in futures if not f.cancelled()])
            raise Cancelled("reference run cancelled: its worker threads were shut down") from None
    finally:
        blas.restore(old)
    if result is not None:
        return result
    total = results[0]
    for r in results[1:]:
        total += r
    return total


def run_conv(problem: ConvProblem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
             cancel: Optional[CancelFlag] = None, engine: str = "numpy",
             chunk_bytes: Optional[int] = None) -> dict[str, np.ndarray]:
    """Run one convolution direction; see :func:`run_reference`."""
    g = conv_geometry(problem)
    direction = problem.direction
    trans = problem.mode == "trans"
    names = conv_tensor_names(problem)[0]
    shapes = {"x": problem.input_shape, "dy": problem.output_shape, "w": problem.weight_shape}
    for name in names:
        if name in inputs:
            check_shape(name, np.asarray(inputs[name]), shapes[name])
    arrays, dt, is_int = _conv_inputs_compute(problem, inputs, names, precision)
    budget = chunk_bytes or CHUNK_BYTES
    use_numba = engine == "numba" and _numba_applies(g, problem)
    check_cancel(cancel)
    out: Optional[np.ndarray] = None
    parts = split_parts(g, use_numba)
    if parts > 1:
        out = _conv_split(direction, trans, arrays, g, budget, cancel, parts)
    if out is None:
        out = conv_direction(direction, trans, arrays, g, budget, cancel, use_numba)
    if is_int and precision == "fp32":
        out = np.rint(out).astype(np.int32)
    return {{"fwd": "y", "bwd": "dx", "wrw": "dw"}[direction]: out}


def conv_reference(problem: ConvProblem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
                   cancel: Optional[CancelFlag] = None, engine: str = "numpy", chunk_bytes: Optional[int] = None,
                   saved: object = None) -> dict[str, np.ndarray]:
    """:func:`run_conv` as the conv family's reference entry (nothing is kept between runs)."""
    return run_conv(problem, inputs, precision=precision, cancel=cancel, engine=engine, chunk_bytes=chunk_bytes)


def conv_engine(problem: ConvProblem, engine: str = "numpy") -> str:
    """The code path :func:`run_conv` takes, in words (for reports)."""
    g = conv_geometry(problem)
    if engine == "numba":
        why = numba_kernels.available()
        if why is None and numba_kernels.conv_applies(g, numba_kernels.kernel_of(problem)):
            return "numba direct convolution (depthwise/small-group)"
        if why is not None:
            return f"numpy im2col+GEMM (numba unavailable: {why})"
    if g.is_pointwise:
        return "numpy 1x1 GEMM (no im2col)"
    return "numpy im2col+GEMM"


def _numba_applies(g: ConvGeometry, problem: ConvProblem) -> bool:
    return (numba_kernels.available() is None
            and numba_kernels.conv_applies(g, numba_kernels.kernel_of(problem)))


def _nb_fwd(x: np.ndarray, w: np.ndarray, g: ConvGeometry, cancel: Optional[CancelFlag]) -> np.ndarray:
    return numba_kernels.conv_forward(x, w, g, cancel)


def _nb_bwd(dy: np.ndarray, w: np.ndarray, g: ConvGeometry, cancel: Optional[CancelFlag]) -> np.ndarray:
    return numba_kernels.conv_backward_data(dy, w, g, cancel)


def _nb_wrw(x: np.ndarray, dy: np.ndarray, g: ConvGeometry, cancel: Optional[CancelFlag]) -> np.ndarray:
    return numba_kernels.conv_backward_weights(x, dy, g, cancel)


#: operands of col2im's strided ``view += src``; numpy's ufunc iterator may buffer each
#: one (``np.getbufsize()`` elements): measured 193 KB per worker at fp64, i.e. 3 x 8192 x 8.
_COL2IM_UFUNC_OPERANDS = 3


def conv_temp_bytes(direction: str, g: ConvGeometry, it: int, budget: int, weight_elems: int,
                     workers: int = 1) -> int:
    """Scratch one worker allocates at its peak (padded chunk, columns, GEMM result...).

    ``workers``: threads that may run col2im's adds at once inside this call (the batch
    split gives each part one; an unsplit run fans col2im out over threads.THREADS).  Without
    their ufunc buffers the estimate fell 15% short on a 16-core machine (bwd, stride 2).
    """
    plan = conv_plan(g, it, budget)
    n = plan.images
    rows_elems = plan.rows * (g.out_elems // g.out_sp[0])
    in_chunk = n * g.cu * math.prod(g.padded) * it if g.needs_pad else 0
    if direction != "bwd" and uses_phases(g):   # the phase planes of the padded chunk
        sw = g.strides[-1]
        in_chunk += n * g.cu * math.prod(g.padded[:-1]) * sw * (-(-g.padded[-1] // sw)) * it
    out_chunk = n * g.ku * rows_elems * it
    if direction == "fwd":
        return in_chunk + plan.col_bytes + out_chunk
    if direction == "bwd":
        flipped = flipped_geometry(g)
        if flipped is not None:
            return conv_temp_bytes("fwd", flipped, it, budget, weight_elems) + weight_elems * it
        dxp = n * g.cu * math.prod(g.padded) * it
        ufunc_buffers = workers * _COL2IM_UFUNC_OPERANDS * np.getbufsize() * it
        return dxp + plan.col_bytes + out_chunk + ufunc_buffers
    return in_chunk + plan.col_bytes + out_chunk + 2 * g.ku * g.q * it


def conv_peak_bytes(problem: ConvProblem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """Bytes a conv reference run allocates at its peak: the inputs, their compute-type
    copies, the output, and every worker's scratch for one chunk (see the run's plan)."""
    g = conv_geometry(problem)
    dt = compute_dtype(problem, precision)
    if problem.dtype == "int8" and precision == "fp32":
        dt = np.dtype(np.float64)  # worst case of the exactness choice
    it = dt.itemsize
    sizes = {"x": math.prod(problem.input_shape), "y": math.prod(problem.output_shape),
             "w": math.prod(problem.weight_shape)}
    sizes["dy"] = sizes["y"]
    ins, outs = conv_tensor_names(problem)
    stored = storage_dtype(problem.dtype).itemsize
    total = sum(sizes[n] for n in ins) * stored
    if stored != it or problem.dtype in ("bf16", "fp8", "bf8"):
        total += sum(sizes[n] for n in ins) * it  # compute-type copies
    out_name = {"y": "y", "dx": "x", "dw": "w"}[outs[0]]
    total += sizes[out_name] * it
    direction = problem.direction
    if problem.mode == "trans":
        direction = {"fwd": "bwd", "bwd": "fwd", "wrw": "wrw"}[direction]
    budget = chunk_bytes or CHUNK_BYTES
    parts = split_parts(g, False)
    if parts > 1:
        for i in range(parts):
            nb = g.n * (i + 1) // parts - g.n * i // parts
            sub = ConvGeometry(nb, g.cu, g.ku, g.groups, g.in_sp, g.out_sp, g.filt, g.strides,
                               g.dils, g.pad_before)
            total += conv_temp_bytes(direction, sub, it, max(budget // parts, 1), sizes["w"])
        if direction == "wrw":
            total += (parts - 1) * sizes["w"] * it  # the parts' weight gradients before the sum
    else:
        total += conv_temp_bytes(direction, g, it, budget, sizes["w"], workers=threads.THREADS)
    # the numba engine's depthwise kernels, where they apply (peak_bytes does not know the engine)
    total += numba_kernels.scratch_bytes(g, it, threads.THREADS)
    return int(total)

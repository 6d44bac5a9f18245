"""``miopenReduceTensor``: the reference, as MIOpenDriver's host reduction defines it
(``driver/miopen_Reduction.hpp``, ``test/cpu_reduce_util.hpp``).

* ops (miopenReduceTensorOp_t): add, mul, min, max, amax (max of |x|), avg (the sum over
  the number of reduced elements), norm1 (sum of |x|), norm2 (sqrt of the sum of x^2).
* the output keeps every dimension, 1 where reduced; ``y = alpha * reduced + beta * y``
  (the prior output, an input then); with indices MIOpenDriver runs alpha 1, beta 0.
* indices (min, max, amax): the flattened (row-major) position of the extreme value
  over the reduced dimensions in ascending order, the first one on ties.  The library
  sees only the two tensors' lengths, so ascending is its order; MIOpenDriver's host
  code follows its ``-R`` list, which agrees whenever that list is ascending.
* the start value: min, max and amax start from (start value, index 0) and replace
  both only on a strict improvement (``a > b`` / ``a < b``), in MIOpen's kernels
  (``reduction_operator.hpp``: ``Min``/``Max``/``AMax`` with ``changed``, the
  accumulator's index set to 0) as in the driver's host code (``ReduceOpFn2``).  The
  start is the compute type's largest for min, its lowest for max, 0 for amax
  (:func:`extreme_start`), so an extreme *equal* to it (amax of ``[nan, 0.0]``, or of
  zeros after NaNs) keeps index 0, and one beyond it (min of ``[inf]``) never replaces
  it: the result is then the start value at index 0.
* NaN (``nan_propagation``): only min, max and amax can ignore one; without
  propagation a NaN never wins a comparison (a slice of NaNs gives the start value
  and index 0); with it the result is NaN and its index the *last* NaN's, as the
  scan leaves it (a NaN always replaces the accumulator, and nothing replaces a NaN).
  The other ops carry a NaN through their arithmetic either way.

Accumulation in float32 (the driver's default compute type), float64 for fp64 data or
compute type or ``precision="fp64"``.  Inputs: x in [0, 1), as the driver
draws it (``prng::gen_canonical``); the prior output likewise.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from miotui.execute.layer_shapes import reduce_shapes, reduce_uses_beta
from miotui.execute.reference_tables import check_dtype, table_bytes
from miotui.execute.tensors import compute_dtype, uniform
from miotui.execute.threads import CancelFlag, check_cancel
from miotui.problems import REDUCE_OPS, ReduceProblem

__all__ = ["reduce_make_inputs", "run_reduce", "reduce_dtype", "extreme_start"]


def reduce_dtype(p: ReduceProblem, precision: str = "fp32") -> np.dtype:
    """The accumulation type: float64 for the reference or fp64 data / compute type."""
    if "fp64" in (p.comp_dtype, p.dtype):
        return np.dtype(np.float64)
    return compute_dtype(p, precision)


def extreme_start(p: ReduceProblem) -> float:
    """The value min / max / amax start from (what a slice of NaNs gives without
    propagation): the compute type's largest, its lowest, or 0.  fp64 data computes
    in fp64 whatever ``-C`` says (MIOpenDriver's ``reducefp64`` sets the compute type
    to double, and this reference accumulates fp64 data in float64)."""
    op = REDUCE_OPS[p.reduce_op]
    if op == "amax":
        return 0.0
    if "fp64" in (p.dtype, p.comp_dtype):
        kind = np.float64
    else:
        kind = np.float16 if p.comp_dtype == "fp16" else np.float32
    big = float(np.finfo(kind).max)
    return big if op == "min" else -big


def reduce_make_inputs(p: ReduceProblem, seed: int) -> dict[str, np.ndarray]:
    dtype = "fp32" if p.dtype == "unknown" else p.dtype
    return {name: uniform(seed, name, shape, 0.0, 1.0, dtype) for name, shape in reduce_shapes(p)[0].items()}


def _slices(p: ReduceProblem, x: np.ndarray) -> np.ndarray:
    """x with the kept dimensions first and the reduced ones flattened last, both in
    ascending order."""
    red = sorted(p.reduce_dims)
    keep = [d for d in range(x.ndim) if d not in red]
    k = math.prod(x.shape[d] for d in red)
    return x.transpose(keep + red).reshape(tuple(x.shape[d] for d in keep) + (k,))


def run_reduce(p: ReduceProblem, inputs: dict[str, np.ndarray], precision: str = "fp32") -> dict[str, np.ndarray]:
    """One reduction (names: x [, y] -> y [, indices])."""
    dt = reduce_dtype(p, precision)
    ins, outs = reduce_shapes(p)
    for name, shape in ins.items():
        if name not in inputs:
            raise KeyError(f"reduce needs inputs {sorted(ins)} (got {sorted(inputs)})")
        if tuple(inputs[name].shape) != shape:
            raise ValueError(f"input {name!r} has shape {tuple(inputs[name].shape)}, the problem needs {shape}")
    v = _slices(p, np.asarray(inputs["x"], dtype=dt))
    op = REDUCE_OPS[p.reduce_op]
    idx = None
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        if op in ("add", "avg"):
            acc = v.sum(axis=-1, dtype=dt)
            if op == "avg":
                acc = acc / dt.type(v.shape[-1])
        elif op == "mul":
            acc = v.prod(axis=-1, dtype=dt)
        elif op == "norm1":
            acc = np.abs(v).sum(axis=-1, dtype=dt)
        elif op == "norm2":
            acc = np.sqrt((v * v).sum(axis=-1, dtype=dt))
        else:
            acc, idx = _extreme(p, op, v)
    if not p.indices:
        idx = None
        with np.errstate(over="ignore", invalid="ignore"):   # a start value (the type's largest) times alpha
            if p.alpha != 1:
                acc = acc * dt.type(p.alpha)
            if reduce_uses_beta(p):
                acc = acc + dt.type(p.beta) * np.asarray(inputs["y"], dtype=dt).reshape(acc.shape)
    res = {"y": np.ascontiguousarray(np.asarray(acc, dtype=dt).reshape(outs["y"]))}
    if idx is not None:
        res["indices"] = np.ascontiguousarray(idx.astype(np.int32).reshape(outs["indices"]))
    return res


def _extreme(p: ReduceProblem, op: str, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """min / max / amax over the last axis: (values, indices), with MIOpen's NaN rules."""
    if op == "amax":
        v = np.abs(v)
    nan = np.isnan(v)
    fill = np.inf if op == "min" else -np.inf
    clean = np.where(nan, fill, v)
    if op == "min":
        idx = np.argmin(clean, axis=-1)
    else:
        idx = np.argmax(clean, axis=-1)
    val = np.take_along_axis(clean, idx[..., None], axis=-1)[..., 0]
    start = extreme_start(p)
    # only a strict improvement on the start replaces it (a slice of NaNs never does)
    better = val < start if op == "min" else val > start
    val = np.where(better, val, start)
    idx = np.where(better, idx, 0)
    if p.nan_propagation:
        has = np.any(nan, axis=-1)
        last = v.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
        val = np.where(has, np.nan, val)
        idx = np.where(has, last, idx)
    return val.astype(v.dtype), idx


# ----------------------------------------------------------------------------- the family's entries

def reduce_inputs(p: ReduceProblem, seed: int = 0) -> dict[str, np.ndarray]:
    check_dtype(p)
    return reduce_make_inputs(p, seed)


def reduce_reference(p: ReduceProblem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
                     cancel: Optional[CancelFlag] = None, engine: str = "numpy", chunk_bytes: Optional[int] = None,
                     saved: object = None) -> dict[str, np.ndarray]:
    check_cancel(cancel)
    check_dtype(p)
    out = run_reduce(p, inputs, precision)
    check_cancel(cancel)
    return out


def reduce_peak_bytes(p: ReduceProblem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """:func:`table_bytes` in the reduction's accumulation type (:func:`reduce_dtype`)."""
    return table_bytes(p, reduce_dtype(p, precision).itemsize)

"""Tensor values for the reference: compute and storage types, rounding to MIOpen's
dtypes, and the seeded random inputs every backend runs on.

* fp32, fp16 and bf16 inputs are computed in float32 (fp16 is upcast first: numpy's
  fp16 matmul is ~400x slower than its fp32 one), int8 in exact integer arithmetic,
  and ``precision="fp64"`` computes everything in float64.
* bf16/fp8/bf8 tensors are held as float32 arrays whose values are rounded to that type.
* Each tensor draws from its own stream keyed by (seed, name), so x is identical for
  the fwd and wrw problems of one layer.
"""

from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np

from miotui.problems import Problem


class ReferenceUnsupported(NotImplementedError):
    """A layer the reference cannot compute; the message says why (the runner reports
    the backend as not applying to the layer rather than crashing)."""


def compute_dtype(problem: Problem, precision: str = "fp32") -> np.dtype:
    """The float type the reference computes in for this problem and precision."""
    if precision not in ("fp32", "fp64"):
        raise ValueError(f"precision must be fp32 or fp64, got {precision!r}")
    if precision == "fp64" or problem.dtype == "fp64":
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def storage_dtype(dtype: str) -> np.dtype:
    """numpy type that holds a tensor of this MIOpen dtype (bf16/fp8/bf8: rounded float32)."""
    return np.dtype({"fp16": np.float16, "int8": np.int8, "fp64": np.float64}.get(dtype, np.float32))


def _round_bf16(a: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), kept as float32."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(a), out, a)


def _round_minifloat(a: np.ndarray, mantissa_bits: int, min_exp: int, max_value: float) -> np.ndarray:
    """Round to a small float format (fp8 e4m3 / bf8 e5m2, FNUZ ranges), subnormals included."""
    a = np.asarray(a, dtype=np.float64)
    mag = np.abs(a)
    exp = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    exp = np.maximum(exp, min_exp)
    ulp = np.exp2(exp - mantissa_bits)
    out = np.clip(np.rint(a / ulp) * ulp, -max_value, max_value)
    return out.astype(np.float32)


def round_to_dtype(a: np.ndarray, dtype: str) -> np.ndarray:
    """Values of ``a`` as a tensor of MIOpen ``dtype`` would hold them, in :func:`storage_dtype`."""
    if dtype == "fp16":
        return np.asarray(a).astype(np.float16)
    if dtype == "bf16":
        return _round_bf16(np.asarray(a, dtype=np.float32))
    if dtype == "fp8":   # e4m3 FNUZ (MIOpen's fp8 on gfx94x): 3 mantissa bits, max 240
        return _round_minifloat(a, 3, -7, 240.0)
    if dtype == "bf8":   # e5m2 FNUZ: 2 mantissa bits, max 57344
        return _round_minifloat(a, 2, -15, 57344.0)
    if dtype == "int8":
        return np.clip(np.rint(a), -128, 127).astype(np.int8)
    return np.asarray(a).astype(storage_dtype(dtype))


def _rng(seed: int, name: str) -> np.random.Generator:
    """One independent stream per (seed, tensor name): x is the same in fwd and wrw."""
    return np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(name.encode())])


def uniform(seed: int, name: str, shape: Sequence[int], low: float, high: float, dtype: str) -> np.ndarray:
    """Uniform values in [low, high) rounded to ``dtype`` (int8: integers in [low, high])."""
    rng = _rng(seed, name)
    if dtype == "int8":
        return rng.integers(int(low), int(high) + 1, size=tuple(shape), dtype=np.int64).astype(np.int8)
    vals = rng.random(size=tuple(shape), dtype=np.float64) * (high - low) + low
    return round_to_dtype(vals, dtype)


def check_shape(name: str, a: np.ndarray, shape: Sequence[int]) -> None:
    """ValueError when input ``name`` does not have the shape the problem needs."""
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"input {name!r} has shape {tuple(a.shape)}, the problem needs {tuple(shape)}")

"""Pooling reference (``driver/mloPoolingHost.hpp``): max with the first maximum's index,
average over in-bounds elements (``avg``) or the whole window (``avg_in``); numba's
direct kernels when the engine asks for them and numba is installed.  Arrays are
logical N,C,(D,)H,W.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from miotui.execute import numba_kernels
from miotui.execute.threads import CancelFlag
from miotui.problems import PoolProblem


def _pool_taps(p: PoolProblem) -> list[tuple[int, ...]]:
    return list(np.ndindex(*p.window))


def _pool_tap_slices(p: PoolProblem, tap: tuple[int, ...]) -> tuple[slice, ...]:
    out = p.out_spatial
    return tuple(slice(t, t + (o - 1) * s + 1, s) for t, o, s in zip(tap, out, p.strides, strict=True))


def _pool_counts(p: PoolProblem) -> np.ndarray:
    """In-bounds window size per output position (MIOpen's AVE pool size), broadcastable."""
    counts = None
    axes = zip(p.in_spatial, p.window, p.pads, p.strides, p.out_spatial, strict=True)
    for axis, (i, w, pad, s, o) in enumerate(axes):
        start = np.arange(o) * s - pad
        n = np.minimum(start + w, i) - np.maximum(start, 0)
        shape = [1] * p.ndim
        shape[axis] = o
        n = np.maximum(n, 0).reshape(shape)
        counts = n if counts is None else counts * n
    assert counts is not None
    return counts


def _pool_padded(p: PoolProblem, x: np.ndarray, fill: float) -> np.ndarray:
    padded = tuple(i + 2 * pad for i, pad in zip(p.in_spatial, p.pads, strict=True))
    buf = np.full(x.shape[:2] + padded, fill, dtype=x.dtype)
    inner = tuple(slice(pad, pad + i) for pad, i in zip(p.pads, p.in_spatial, strict=True))
    buf[(slice(None), slice(None)) + inner] = x
    return buf


def _pool_max_numpy(p: PoolProblem, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(y, tap index of each window's first maximum; -1 where the window is all padding)."""
    xp = _pool_padded(p, x, -np.inf)
    y = np.full(x.shape[:2] + p.out_spatial, -np.inf, dtype=x.dtype)
    arg = np.full(y.shape, -1, dtype=np.int32)
    for t, tap in enumerate(_pool_taps(p)):
        cand = xp[(slice(None), slice(None)) + _pool_tap_slices(p, tap)]
        better = cand > y          # strict: the first maximum in scan order wins, as MIOpen
        np.copyto(y, cand, where=better)
        arg[better] = t
    y[arg < 0] = 0                 # MIOpen writes 0 for a window with no input element
    return y, arg


def pool_forward(p: PoolProblem, x: np.ndarray, engine: str = "numpy",
                 cancel: Optional[CancelFlag] = None) -> np.ndarray:
    if engine == "numba" and _numba_ok():
        return numba_kernels.pool_forward(x, p.mode, p.window, p.strides, p.pads, p.out_spatial, cancel)[0]
    if p.mode == "max":
        return _pool_max_numpy(p, x)[0]
    xp = _pool_padded(p, x, 0.0)
    acc = np.zeros(x.shape[:2] + p.out_spatial, dtype=x.dtype)
    for tap in _pool_taps(p):
        acc += xp[(slice(None), slice(None)) + _pool_tap_slices(p, tap)]
    if p.mode == "avg":        # miopenPoolingAverage: in-bounds elements only
        counts = np.maximum(_pool_counts(p), 1)
    else:                       # miopenPoolingAverageInclusive: the whole window
        counts = np.array(math.prod(p.window))
    return acc / counts.astype(x.dtype)


def pool_backward(p: PoolProblem, x: np.ndarray, dy: np.ndarray, engine: str = "numpy",
                  cancel: Optional[CancelFlag] = None) -> np.ndarray:
    if engine == "numba" and _numba_ok():
        idx = None
        if p.mode == "max":
            idx = numba_kernels.pool_forward(x, p.mode, p.window, p.strides, p.pads, p.out_spatial, cancel)[1]
        return numba_kernels.pool_backward(dy, idx, x.shape, p.mode, p.window, p.strides, p.pads, cancel)
    padded = tuple(i + 2 * pad for i, pad in zip(p.in_spatial, p.pads, strict=True))
    dxp = np.zeros(x.shape[:2] + padded, dtype=dy.dtype)
    if p.mode == "max":
        arg = _pool_max_numpy(p, x)[1]
        for t, tap in enumerate(_pool_taps(p)):
            view = dxp[(slice(None), slice(None)) + _pool_tap_slices(p, tap)]
            view += np.where(arg == t, dy, 0)
    else:
        counts = np.maximum(_pool_counts(p), 1) if p.mode == "avg" else np.array(math.prod(p.window))
        g = dy / counts.astype(dy.dtype)
        for tap in _pool_taps(p):
            view = dxp[(slice(None), slice(None)) + _pool_tap_slices(p, tap)]
            view += g
    crop = (slice(None), slice(None)) + tuple(slice(pad, pad + i) for pad, i in zip(p.pads, p.in_spatial, strict=True))
    return np.ascontiguousarray(dxp[crop])


def _numba_ok() -> bool:
    return numba_kernels.available() is None

"""The verdict's reference for pooling, batch norm, activation, LRN, softmax and fusion.

Each is written in float64 in a formulation of its own, sharing no code with the
numpy / numba / torch backends it checks (:mod:`reference_basic`, :mod:`reference_pool`,
:mod:`numba_kernels`, :mod:`torch_ops`); even MIOpen's constants (epsilons, the
running-average factor) are spelled out here from the drivers, so a wrong constant in a
backend fails its verdict.

* pooling: a window view of the padded input reduced per window (max with the first
  maximum's position, or a sum over the in-bounds count); backward scatters dy through
  the window positions with ``np.bincount``.
* batch norm: per-feature statistics from sums (``E[x^2] - E[x]^2``), the backward
  pass by the chain rule through mean and variance.
* activation: each mode from its definition in other terms (logistic from tanh,
  softrelu as ``logaddexp``, power through ``exp(g*log(base))``, derivatives from x).
* LRN: window sums of the zero-padded squares as differences of running sums; backward
  the gradient of that expression.
* softmax: per row through the log-sum-exp.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from miotui.execute.oracle_conv import conv_oracle
from miotui.execute.tensors import ReferenceUnsupported
from miotui.problems import (
    FUSION_ACTIV_MODES,
    ActivationProblem,
    BatchNormProblem,
    FusionProblem,
    LRNProblem,
    PoolProblem,
    Problem,
    SoftmaxProblem,
)

__all__ = ["OPS_REFERENCE", "basic_reference_name", "pool_outputs", "bnorm_outputs", "activ_outputs",
           "lrn_outputs", "softmax_outputs", "fusion_outputs"]

#: ``driver/bn_driver.hpp``: ``#define EPSILON 1e-3``.
BATCHNORM_EPS = 1e-3
#: the running-average factor every backend uses (see reference_basic.BN_EXP_AVG_FACTOR's reasons).
RUNNING_FACTOR = 0.1
#: ``driver/CBAInferFusion_driver.hpp`` redefines EPSILON as 1e-6.
FUSION_EPS = 1e-6
#: MIOpen's activation kernels compare the power base and tanh's beta with float's epsilon.
FLOAT_EPS = 2.0 ** -23

#: A short name of each family's verdict reference (``verification.reference``).
OPS_REFERENCE = {
    "pool": "float64 window-view pooling",
    "bnorm": "float64 batch norm from sums (chain-rule backward)",
    "activ": "float64 activation from its definition",
    "lrn": "float64 running-sum LRN",
    "softmax": "float64 log-sum-exp softmax",
    "fusion": "direct float64 tap sum, then float64 bias / batch norm / activation",
}


def _f64(t: dict[str, Any], name: str) -> np.ndarray:
    return np.asarray(t[name], dtype=np.float64)


# ----------------------------------------------------------------------------- pooling

def _windows(p: PoolProblem, a: np.ndarray, fill: float, offset: tuple[int, ...]) -> np.ndarray:
    """(n, c, *out, prod(window)): every pooling window over ``a`` placed at ``offset`` in
    a ``fill``-ed array large enough for every window; taps in row-major order."""
    nd = len(p.window)
    need = tuple(max(off + i, (o - 1) * s + w)
                 for off, i, o, s, w in zip(offset, a.shape[2:], p.out_spatial, p.strides, p.window, strict=True))
    big = np.full(a.shape[:2] + need, fill)
    big[(slice(None), slice(None)) + tuple(slice(off, off + i) for off, i in zip(offset, a.shape[2:], strict=True))] = a
    win = sliding_window_view(big, p.window, axis=tuple(range(2, 2 + nd)))
    win = win[(slice(None), slice(None)) + tuple(slice(0, (o - 1) * s + 1, s)
                                                 for o, s in zip(p.out_spatial, p.strides, strict=True))]
    return win.reshape(win.shape[:2 + nd] + (-1,))


def _padded(p: PoolProblem) -> tuple[int, ...]:
    return tuple(i + 2 * pd for i, pd in zip(p.in_spatial, p.pads, strict=True))


def _pool_count(p: PoolProblem) -> np.ndarray:
    """Elements each window averages: the in-bounds ones (avg) or the whole window (avg_in)."""
    if p.mode != "avg":
        return np.full((1, 1) + p.out_spatial, float(math.prod(p.window)))
    inside = _windows(p, np.ones((1, 1) + tuple(p.in_spatial)), 0.0, tuple(p.pads))
    return np.maximum(inside.sum(axis=-1), 1.0)


def _pool_positions(p: PoolProblem) -> np.ndarray:
    """(*out, taps): the flat position in the padded input each window tap reads (-1: past it)."""
    grid = np.arange(float(math.prod(_padded(p)))).reshape((1, 1) + _padded(p))
    return _windows(p, grid, -1.0, (0,) * len(p.window))[0, 0].astype(np.int64)


#: scatter entries per ``np.bincount`` call in pooling's backward pass
_SCATTER_CHUNK = 1 << 22


def _scatter(spots: np.ndarray, grads: np.ndarray, size: int) -> np.ndarray:
    """Per row r: out[r, spots[r, j]] += grads[r, j] (spots < 0 are dropped)."""
    rows = spots.shape[0]
    out = np.empty((rows, size))
    step = max(1, _SCATTER_CHUNK // max(spots.shape[1], 1))
    for r0 in range(0, rows, step):
        s, g = spots[r0:r0 + step], grads[r0:r0 + step]
        keep = s >= 0
        flat = (s + size * np.arange(s.shape[0])[:, None])[keep]
        out[r0:r0 + step] = np.bincount(flat, weights=g[keep], minlength=s.shape[0] * size).reshape(-1, size)
    return out


#: Scratch of one chunk of images in pooling (its windows, positions and gradients).
POOL_CHUNK_BYTES = 32 << 20


def _pool_images(p: PoolProblem, x: np.ndarray, dy: Optional[np.ndarray]) -> np.ndarray:
    """y (``dy`` None) or dx of a few images."""
    n, c = x.shape[:2]
    if p.mode == "max":
        win = _windows(p, x, -np.inf, tuple(p.pads))
        first = np.argmax(win, axis=-1)              # the first maximum in scan order
        y = np.take_along_axis(win, first[..., None], axis=-1)[..., 0]
        y = np.where(np.isneginf(y), 0.0, y)         # a window of padding only gives 0
    else:
        y = _windows(p, x, 0.0, tuple(p.pads)).sum(axis=-1) / _pool_count(p)
    if dy is None:
        return y
    pos = _pool_positions(p)
    if p.mode == "max":
        spots = np.take_along_axis(np.broadcast_to(pos, first.shape + pos.shape[-1:]), first[..., None], -1)
        spots, grads = spots.reshape(n * c, -1), dy.reshape(n * c, -1)
    else:
        share = (dy / _pool_count(p)).reshape(n * c, -1)
        spots = np.broadcast_to(pos.reshape(1, -1), (n * c, pos.size))
        grads = np.repeat(share, pos.shape[-1], axis=1)
    dx = _scatter(spots, grads, math.prod(_padded(p))).reshape((n, c) + _padded(p))
    inner = tuple(slice(pd, pd + i) for pd, i in zip(p.pads, p.in_spatial, strict=True))
    return dx[(slice(None), slice(None)) + inner]


def _pool(p: PoolProblem, t: dict[str, Any]) -> dict[str, np.ndarray]:
    x = _f64(t, "x")
    dy = _f64(t, "dy") if p.direction != "fwd" else None
    per_image = 8 * x.shape[1] * (3 * math.prod(p.out_spatial) * math.prod(p.window) + 2 * math.prod(_padded(p)))
    step = max(1, POOL_CHUNK_BYTES // max(per_image, 1))
    out = np.empty(x.shape if dy is not None else x.shape[:2] + tuple(p.out_spatial))
    for n0 in range(0, x.shape[0], step):
        out[n0:n0 + step] = _pool_images(p, x[n0:n0 + step], None if dy is None else dy[n0:n0 + step])
    return {"y" if dy is None else "dx": out}


# ----------------------------------------------------------------------------- batch norm

def _features(p: BatchNormProblem, a: np.ndarray) -> np.ndarray:
    """(features, samples): spatial mode's features are channels (samples N*spatial),
    per-activation's are channel-pixels (samples N)."""
    if p.mode == "spatial":
        return np.moveaxis(a, 1, 0).reshape(a.shape[1], -1)
    return a.reshape(a.shape[0], -1).T


def _unfeatures(p: BatchNormProblem, f: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if p.mode == "spatial":
        moved = (shape[1], shape[0]) + tuple(shape[2:])
        return np.moveaxis(f.reshape(moved), 0, 1)
    return f.T.reshape(shape)


def _param(p: BatchNormProblem, t: dict[str, Any], name: str) -> np.ndarray:
    """A parameter tensor as a (features, 1) column."""
    return _f64(t, name).reshape(-1, 1)


def _batchnorm(p: BatchNormProblem, t: dict[str, Any]) -> dict[str, np.ndarray]:
    x = _f64(t, "x")
    xf = _features(p, x)
    m = xf.shape[1]
    pshape = np.asarray(t["scale"]).shape
    scale = _param(p, t, "scale")

    def out(f: np.ndarray) -> np.ndarray:
        return _unfeatures(p, f, x.shape)

    if p.direction == "fwd_infer":
        inv = (_param(p, t, "est_var") + BATCHNORM_EPS) ** -0.5
        return {"y": out((xf - _param(p, t, "est_mean")) * (inv * scale) + _param(p, t, "bias"))}
    if p.direction == "fwd_train":
        mean = xf.sum(axis=1, keepdims=True) / m
        var = np.maximum(np.einsum("ij,ij->i", xf, xf)[:, None] / m - mean * mean, 0.0)
        inv = (var + BATCHNORM_EPS) ** -0.5
        res = {"y": out((xf - mean) * (inv * scale) + _param(p, t, "bias"))}
        if p.running:
            unbiased = var * (m / (m - 1)) if m > 1 else var
            res["running_mean"] = (RUNNING_FACTOR * mean + (1 - RUNNING_FACTOR) * _param(p, t, "running_mean")
                                   ).reshape(pshape)
            res["running_var"] = (RUNNING_FACTOR * unbiased + (1 - RUNNING_FACTOR) * _param(p, t, "running_var")
                                  ).reshape(pshape)
        if p.save:
            res["saved_mean"] = mean.reshape(pshape)
            res["saved_inv_var"] = inv.reshape(pshape)
        return res
    dyf = _features(p, _f64(t, "dy"))
    if p.save:
        mean, inv = _param(p, t, "saved_mean"), _param(p, t, "saved_inv_var")
    else:   # recomputed with eps, as the GPU kernels do
        mean = xf.sum(axis=1, keepdims=True) / m
        var = np.maximum(np.einsum("ij,ij->i", xf, xf)[:, None] / m - mean * mean, 0.0)
        inv = (var + BATCHNORM_EPS) ** -0.5
    centred = xf - mean
    dxhat = dyf * scale
    # chain rule through var = mean(centred^2) and mean (whose own term vanishes: sum(centred) = 0)
    dvar = -0.5 * inv ** 3 * np.einsum("ij,ij->i", dxhat, centred)[:, None]
    dmean = -inv * dxhat.sum(axis=1, keepdims=True)
    dx = dxhat * inv + dvar * (2.0 / m) * centred + dmean / m
    return {"dx": out(dx), "dscale": np.einsum("ij,ij->i", dyf, centred * inv).reshape(pshape),
            "dbias": dyf.sum(axis=1).reshape(pshape)}


# ----------------------------------------------------------------------------- activation

def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def activation_oracle(mode: int, x: np.ndarray, dy: Optional[np.ndarray], a: float, b: float,
                      g: float) -> np.ndarray:
    """y (``dy`` None) or dx of MIOpen's activation ``mode``, in float64.

    MIOpen's own definitions are kept where they differ from the textbook: POWER's
    backward is ``g*b*y/base`` *without* dy, CLIPPEDRELU passes the gradient for
    0 < x <= alpha, TANH's is 0 when |beta| is below float's epsilon, ABS's is -dy at 0.
    """
    base = a + b * x
    alive = base > FLOAT_EPS
    if dy is None:
        fwd = {
            0: lambda: x.copy(),
            1: lambda: _sigmoid(x),
            2: lambda: b * np.tanh(a * x),
            3: lambda: np.maximum(x, 0.0),
            4: lambda: np.logaddexp(0.0, x),
            5: lambda: np.sqrt(x * x),
            6: lambda: np.where(alive, np.exp(g * np.log(np.where(alive, base, 1.0))), 0.0),
            7: lambda: np.clip(x, 0.0, a),
            8: lambda: np.maximum(x, 0.0) + a * np.minimum(x, 0.0),
            9: lambda: np.maximum(x, 0.0) + a * np.expm1(np.minimum(x, 0.0)),
        }
        if mode not in fwd:
            raise ReferenceUnsupported(f"activation mode {mode}")
        return fwd[mode]()
    pos = x > 0
    bwd = {
        0: lambda: dy.copy(),
        1: lambda: dy * _sigmoid(x) * _sigmoid(-x),
        2: lambda: dy * (a * b) * (1.0 - np.tanh(a * x) ** 2) if abs(b) > FLOAT_EPS else np.zeros_like(x),
        3: lambda: dy * pos,
        4: lambda: dy * _sigmoid(x),
        5: lambda: dy * (2.0 * pos - 1.0),
        6: lambda: np.where(alive, g * b * np.exp((g - 1) * np.log(np.where(alive, base, 1.0))), 0.0),
        7: lambda: dy * (pos & (x <= a)),
        8: lambda: dy * np.where(pos, 1.0, a),
        9: lambda: dy * np.where(pos, 1.0, a * np.exp(np.minimum(x, 0.0))),
    }
    if mode not in bwd:
        raise ReferenceUnsupported(f"activation mode {mode}")
    return bwd[mode]()


# ----------------------------------------------------------------------------- LRN

def _window_total(a: np.ndarray, axes: tuple[int, ...], size: int, before: int) -> np.ndarray:
    """Sum of ``a`` over [i - before, i - before + size) along each of ``axes`` (zeros outside),
    as differences of running sums (float64: the cancellation is ~1e-16 of the row's sum);
    a square window is the product of one window per axis, so they are summed in turn."""
    for ax in axes:
        pad = [(0, 0)] * a.ndim
        pad[ax] = (before + 1, size - 1 - before)     # one more zero before: run[i] = sum a[:i]
        run = np.cumsum(np.pad(a, pad), axis=ax)
        n = a.shape[ax]
        cut = [slice(None)] * a.ndim
        cut[ax] = slice(size, size + n)
        hi = run[tuple(cut)]
        cut[ax] = slice(0, n)
        a = hi - run[tuple(cut)]
    return a


def _lrn(p: LRNProblem, t: dict[str, Any]) -> dict[str, np.ndarray]:
    x = _f64(t, "x")
    size = p.lrn_n
    pre = (size - 1) // 2
    axes = (1,) if p.mode == "cross" else (2, 3)
    area = size ** len(axes)
    s = p.k + (p.alpha / area) * _window_total(x * x, axes, size, pre)
    y = x * np.exp(-p.beta * np.log(s))
    if p.direction == "fwd":
        return {"y": y}
    dy = _f64(t, "dy")
    # d y_j / d x_i = [i == j] s_j^-beta - beta * x_j * s_j^(-beta-1) * (2 alpha / area) x_i,
    # for every window j containing i: j in [i - (size-1-pre), i + pre]
    back = _window_total(dy * y / s, axes, size, size - 1 - pre)
    return {"dx": dy * np.exp(-p.beta * np.log(s)) - (2.0 * p.alpha * p.beta / area) * x * back}


# ----------------------------------------------------------------------------- softmax

def _softmax(p: SoftmaxProblem, t: dict[str, Any]) -> dict[str, np.ndarray]:
    """Rows: each instance's C*H*W values (mode 0) or each pixel's C values (mode 1)."""
    x = _f64(t, "x")
    n, c = x.shape[:2]

    def rows(a: np.ndarray) -> np.ndarray:
        return a.reshape(n, -1) if p.mode == 0 else np.moveaxis(a, 1, -1).reshape(-1, c)

    def back(r: np.ndarray) -> np.ndarray:
        if p.mode == 0:
            return r.reshape(x.shape)
        return np.moveaxis(r.reshape((n,) + x.shape[2:] + (c,)), -1, 1)

    xr = rows(x)
    top = xr.max(axis=1, keepdims=True)
    lse = top + np.log(np.exp(xr - top).sum(axis=1, keepdims=True))
    logs = xr - lse
    y = logs if p.algorithm == 2 else np.exp(logs)
    if p.direction == "fwd":
        return {"y": p.alpha * back(y)}
    dyr = rows(_f64(t, "dy"))
    if p.algorithm == 2:    # d logsoftmax: dy - softmax * sum(dy)
        dx = dyr - np.exp(logs) * dyr.sum(axis=1, keepdims=True)
    else:                   # d softmax: s * (dy - <dy, s>)
        dx = y * (dyr - np.einsum("ij,ij->i", dyr, y)[:, None])
    return {"dx": p.alpha * back(dx)}


# ----------------------------------------------------------------------------- fusion

def _fusion(p: FusionProblem, t: dict[str, Any], cancel: Any) -> dict[str, np.ndarray]:
    """CBAInfer as its stages: convolution, bias, batch norm (inference), activation."""
    if p.dtype == "int8":
        raise ReferenceUnsupported("int8 fusion plans are not modelled by the reference")
    h = conv_oracle(p.conv, {"x": t["x"], "w": t["w"]}, cancel)["y"] if p.has_conv else _f64(t, "x")
    if "bias" in t:
        h = h + _f64(t, "bias")
    if p.bn_mode != "none":
        inv = (_f64(t, "est_var") + FUSION_EPS) ** -0.5
        h = (h - _f64(t, "est_mean")) * (inv * _f64(t, "scale")) + _f64(t, "bn_bias")
    if p.fusion_mode in FUSION_ACTIV_MODES:
        h = activation_oracle(p.activ_mode, h, None, p.activ_alpha, p.activ_beta, p.activ_gamma)
    return {"y": h}


# ----------------------------------------------------------------------------- dispatch

def _float_only(problem: Problem) -> None:
    if problem.dtype == "int8":
        raise ReferenceUnsupported(f"{problem.op} has no int8 reference in MIOpenDriver")


def basic_reference_name(problem: Problem, backend: str = "numpy") -> str:
    """What a basic layer's (or fusion plan's) verdict compares against."""
    return OPS_REFERENCE.get(problem.op, f"float64 {problem.op}")


Outputs = Callable[..., tuple[dict[str, np.ndarray], str]]


def _outputs_of(compute: Callable[[Any, dict[str, Any], Optional[Any]], dict[str, np.ndarray]]) -> Outputs:
    """A basic family's ``oracle`` entry: ``compute``'s float64 outputs (int8 has no
    reference), with the reference's name."""
    def outputs(problem: Problem, inputs: dict[str, Any], backend: str = "numpy",
                cancel: Optional[Any] = None) -> tuple[dict[str, np.ndarray], str]:
        _float_only(problem)
        return compute(problem, inputs, cancel), basic_reference_name(problem)
    return outputs


def _activation(p: ActivationProblem, t: dict[str, Any], cancel: Optional[Any] = None) -> dict[str, np.ndarray]:
    dy = _f64(t, "dy") if p.direction != "fwd" else None
    out = activation_oracle(p.mode, _f64(t, "x"), dy, p.alpha, p.beta, p.gamma)
    return {"y" if dy is None else "dx": out}


pool_outputs = _outputs_of(lambda p, t, cancel: _pool(p, t))
bnorm_outputs = _outputs_of(lambda p, t, cancel: _batchnorm(p, t))
activ_outputs = _outputs_of(_activation)
lrn_outputs = _outputs_of(lambda p, t, cancel: _lrn(p, t))
softmax_outputs = _outputs_of(lambda p, t, cancel: _softmax(p, t))
fusion_outputs = _outputs_of(_fusion)

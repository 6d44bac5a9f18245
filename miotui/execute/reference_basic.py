"""Reference math for pooling, batch norm, activation, LRN, softmax and fusion plans.

Definitions follow MIOpenDriver's host references (``driver/mloPoolingHost.hpp``,
``mloNeuronHost.hpp``, ``mloNormHost.hpp``, ``mloSoftmaxHost.hpp``,
``test/fusionHost.hpp``) and the library's GPU kernels where the two disagree; every
such choice is stated where it is made.  Arrays are logical N,C,(D,)H,W.

Tensor names (inputs -> outputs):

==============  ===========================================================  ==========================
pool fwd        x                                                            y
pool bwd        x, dy (y and the argmax are recomputed from x)               dx
bnorm fwd_train x, scale, bias [, running_mean, running_var]                 y [, running_mean,
                                                                             running_var] [, saved_mean,
                                                                             saved_inv_var]
bnorm fwd_infer x, scale, bias, est_mean, est_var                            y
bnorm bwd       x, dy, scale [, saved_mean, saved_inv_var]                   dx, dscale, dbias
activ fwd/bwd   x / x, dy                                                    y / dx
lrn fwd/bwd     x / x, dy                                                    y / dx
softmax fwd/bwd x / x, dy  (bwd uses y = softmax(x), as the driver's         y / dx
                forward-then-backward run does)
fusion          x [, w] [, bias] [, scale, bn_bias, est_mean, est_var]       y
==============  ===========================================================  ==========================

Batch-norm parameter tensors have MIOpen's derived shape: (1, C, 1, 1[, 1]) for
spatial mode, (1, C, *spatial) per activation, in the problem's ``param_dtype``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from miotui.execute import numba_kernels
from miotui.execute.conv import conv_peak_bytes, run_conv
from miotui.execute.reference_pool import pool_backward, pool_forward
from miotui.execute.tensors import ReferenceUnsupported, compute_dtype, round_to_dtype, storage_dtype, uniform
from miotui.execute.threads import CancelFlag, check_cancel
from miotui.families import family_of
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

__all__ = ["plain_tensor_names", "bnorm_tensor_names", "fusion_tensor_names", "BN_EPSILON", "BN_EXP_AVG_FACTOR",
           "FUSION_BN_EPSILON"]

#: MIOpenDriver's batch-norm epsilon (``driver/bn_driver.hpp`` ``#define EPSILON 1e-3``).
BN_EPSILON = 1e-3
#: Running-average factor.  The driver uses 1/(i+1) at iteration i (1.0 on the first),
#: which would make running-mean inputs irrelevant; 0.1 (PyTorch's momentum) keeps them
#: part of the result so a backend that ignores them is caught.  Backends must use it too.
BN_EXP_AVG_FACTOR = 0.1
#: CBAInfer's batch-norm epsilon (``driver/CBAInferFusion_driver.hpp`` redefines EPSILON 1e-6).
FUSION_BN_EPSILON = 1e-6


# ----------------------------------------------------------------------------- names / inputs

def _bn_param_shape(p: BatchNormProblem) -> tuple[int, ...]:
    if p.mode == "spatial":
        return (1, p.c) + (1,) * p.ndim
    return (1, p.c) + p.in_spatial


def plain_tensor_names(problem: Problem) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(inputs, outputs) of pooling, activation, LRN and softmax: x -> y, or x, dy -> dx."""
    return (("x",), ("y",)) if problem.direction == "fwd" else (("x", "dy"), ("dx",))


def bnorm_tensor_names(problem: BatchNormProblem) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(inputs, outputs) of a batch norm, by direction and its running / saved flags."""
    if problem.direction == "fwd_infer":
        return ("x", "scale", "bias", "est_mean", "est_var"), ("y",)
    if problem.direction == "fwd_train":
        ins: tuple[str, ...] = ("x", "scale", "bias")
        outs: tuple[str, ...] = ("y",)
        if problem.running:
            ins += ("running_mean", "running_var")
            outs += ("running_mean", "running_var")
        if problem.save:
            outs += ("saved_mean", "saved_inv_var")
        return ins, outs
    ins = ("x", "dy", "scale") + (("saved_mean", "saved_inv_var") if problem.save else ())
    return ins, ("dx", "dscale", "dbias")


def fusion_tensor_names(problem: FusionProblem) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(inputs, outputs) of a fusion plan: x and the tensors of the stages it has -> y."""
    ins: tuple[str, ...] = ("x",)
    if problem.has_conv:
        ins += ("w",)
    if problem.fusion_mode in (0, 4, 6):
        ins += ("bias",)
    if problem.bn_mode != "none":
        ins += ("scale", "bn_bias", "est_mean", "est_var")
    return ins, ("y",)


def _activation_input(p: ActivationProblem, seed: int) -> np.ndarray:
    """x drawn the way MIOpenDriver's activ driver does: per mode, away from the kinks
    (so fp16 and fp64 agree on which side of a kink every value lies)."""
    shape = p.input_shape
    rng = np.random.default_rng([seed & 0xFFFFFFFF, 7771, p.mode])
    u = rng.random(size=shape)
    flat_i = np.arange(math.prod(shape)).reshape(shape)
    a, b = p.alpha, p.beta
    mode = p.mode_name
    if mode == "POWER":
        v = -a / b if b else 0.0
        bb = b if b else 1.0
        hi = ((v + 0.005) / bb) + u * ((v + 2.0) / bb - (v + 0.005) / bb)
        lo = ((v - 2.0) / bb) + u * ((v - 0.005) / bb - (v - 2.0) / bb)
        x = np.where(flat_i % 2 == 1, hi, lo)
    elif mode == "CLIPPEDRELU":
        r = flat_i % 3
        x = np.where(r == 0, -a + u * (a - 0.005 * a),
                     np.where(r == 1, 0.005 * a + u * (0.99 * a), 1.005 * a + u * (0.995 * a)))
    elif mode == "LEAKYRELU":
        x = np.where(flat_i % 2 == 1, -1.0 + u * 0.995, -0.005 + u * 1.005)
    elif mode == "ELU":
        x = np.where(flat_i % 2 == 1, 0.005 + u * 1.995, -2.0 + u * 1.995)
    elif mode in ("RELU", "ABS"):
        # the driver draws [-2, 2); keep the same range but never within 0.005 of the kink
        mag = 0.005 + u * 1.995
        x = np.where(flat_i % 2 == 1, mag, -mag)
    else:
        x = -2.0 + 4.0 * u
    return round_to_dtype(x, p.dtype)


def _data_dtype(problem: Problem) -> str:
    return "fp32" if problem.dtype == "unknown" else problem.dtype


def _with_dy(problem: Problem, out: dict[str, np.ndarray], seed: int, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """``out`` with the backward pass's dy in [-0.5, 0.5) when the problem reads one."""
    if "dy" in plain_tensor_names(problem)[0]:
        out["dy"] = uniform(seed, "dy", shape, -0.5, 0.5, _data_dtype(problem))
    return out


def pool_inputs(problem: PoolProblem, seed: int = 0) -> dict[str, np.ndarray]:
    """Pooling's x in [0, 1), as the driver draws it (ties are as unlikely as in the driver)."""
    x = uniform(seed, "x", problem.input_shape, 0.0, 1.0, _data_dtype(problem))
    return _with_dy(problem, {"x": x}, seed, problem.output_shape)


def activ_inputs(problem: ActivationProblem, seed: int = 0) -> dict[str, np.ndarray]:
    return _with_dy(problem, {"x": _activation_input(problem, seed)}, seed, problem.input_shape)


def lrn_inputs(problem: LRNProblem, seed: int = 0) -> dict[str, np.ndarray]:
    x = uniform(seed, "x", problem.input_shape, -1.0, 1.0, _data_dtype(problem))
    return _with_dy(problem, {"x": x}, seed, problem.input_shape)


def softmax_inputs(problem: SoftmaxProblem, seed: int = 0) -> dict[str, np.ndarray]:
    x = uniform(seed, "x", problem.input_shape, 0.0, 1.0, _data_dtype(problem))
    return _with_dy(problem, {"x": x}, seed, problem.input_shape)


def bnorm_inputs(problem: BatchNormProblem, seed: int = 0) -> dict[str, np.ndarray]:
    """x with a per-channel offset and spread (so mean and variance are not trivially 0 and
    1), the parameters in ``param_dtype``, saved statistics consistent with x."""
    dtype = _data_dtype(problem)
    names = bnorm_tensor_names(problem)[0]
    out: dict[str, np.ndarray] = {}
    pdt = "fp32" if problem.param_dtype == "unknown" else problem.param_dtype
    ps = _bn_param_shape(problem)
    base = uniform(seed, "x", problem.input_shape, -1.0, 1.0, "fp64").astype(np.float64)
    chan = uniform(seed, "x_offset", (1, problem.c) + (1,) * problem.ndim, -0.5, 0.5, "fp64")
    spread = uniform(seed, "x_spread", (1, problem.c) + (1,) * problem.ndim, 0.5, 2.0, "fp64")
    x = round_to_dtype(base * spread + chan, dtype)
    out["x"] = x
    out["scale"] = uniform(seed, "scale", ps, 0.5, 1.5, pdt)
    if "bias" in names:
        out["bias"] = uniform(seed, "bias", ps, -0.5, 0.5, pdt)
    if "est_mean" in names:
        out["est_mean"] = uniform(seed, "est_mean", ps, -0.5, 0.5, pdt)
        out["est_var"] = uniform(seed, "est_var", ps, 0.5, 1.5, pdt)
    if "running_mean" in names:
        out["running_mean"] = uniform(seed, "running_mean", ps, -0.5, 0.5, pdt)
        out["running_var"] = uniform(seed, "running_var", ps, 0.5, 1.5, pdt)
    if "dy" in names:
        out["dy"] = uniform(seed, "dy", problem.input_shape, -0.5, 0.5, dtype)
    if "saved_mean" in names:
        # consistent with x, as a preceding forward-training run would have saved them
        axes = _bn_axes(problem)
        xf = np.asarray(x, dtype=np.float64)
        mean = xf.mean(axis=axes, keepdims=True)
        var = ((xf - mean) ** 2).mean(axis=axes, keepdims=True)
        out["saved_mean"] = round_to_dtype(mean, pdt)
        out["saved_inv_var"] = round_to_dtype(1.0 / np.sqrt(var + BN_EPSILON), pdt)
    return out


def fusion_inputs(problem: FusionProblem, seed: int = 0) -> dict[str, np.ndarray]:
    dtype = _data_dtype(problem)
    names = fusion_tensor_names(problem)[0]
    out = {"x": uniform(seed, "x", problem.input_shape, -1.0, 1.0, dtype)}
    ch = problem.k if problem.has_conv else problem.c
    if problem.has_conv:
        out["w"] = uniform(seed, "w", problem.conv.weight_shape, -1.0, 1.0, dtype)
    if "bias" in names:
        out["bias"] = uniform(seed, "bias", (1, ch, 1, 1), -0.5, 0.5, dtype)
    if "scale" in names:
        sp = problem.conv.out_spatial if problem.has_conv else problem.in_spatial
        ps = (1, ch, 1, 1) if problem.bn_mode == "spatial" else (1, ch) + tuple(sp)
        out["scale"] = uniform(seed, "scale", ps, 0.5, 1.5, dtype)
        out["bn_bias"] = uniform(seed, "bn_bias", ps, -0.5, 0.5, dtype)
        out["est_mean"] = uniform(seed, "est_mean", ps, -0.5, 0.5, dtype)
        out["est_var"] = uniform(seed, "est_var", ps, 0.5, 1.5, dtype)
    return out


def _f(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=dt)


# ----------------------------------------------------------------------------- batch norm

def _bn_axes(p: BatchNormProblem) -> tuple[int, ...]:
    """Axes reduced for the statistics: N and spatial (spatial mode) or N only."""
    return (0,) + tuple(range(2, 2 + p.ndim)) if p.mode == "spatial" else (0,)


def batchnorm(p: BatchNormProblem, t: dict[str, np.ndarray], dt: np.dtype) -> dict[str, np.ndarray]:
    """MIOpen batch norm (``test/fusionHost.hpp``), biased batch variance, eps = BN_EPSILON.

    Backward without saved statistics recomputes them with eps (the GPU kernels do;
    the driver's host code omits eps there).  Running variance is updated with the
    unbiased variance, as MIOpen does.
    """
    x = t["x"]
    axes = _bn_axes(p)
    m = x.size // (x.shape[1] * (1 if p.mode == "spatial" else math.prod(p.in_spatial)))
    if p.direction == "fwd_infer":
        inv = 1.0 / np.sqrt(t["est_var"] + dt.type(BN_EPSILON))
        return {"y": t["scale"] * ((x - t["est_mean"]) * inv) + t["bias"]}
    if p.direction == "fwd_train":
        mean = x.mean(axis=axes, keepdims=True, dtype=dt)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True, dtype=dt)
        inv = 1.0 / np.sqrt(var + dt.type(BN_EPSILON))
        out = {"y": t["scale"] * ((x - mean) * inv) + t["bias"]}
        if p.running:
            f = dt.type(BN_EXP_AVG_FACTOR)
            unbiased = var * dt.type(m / (m - 1)) if m > 1 else var
            out["running_mean"] = (1 - f) * t["running_mean"] + f * mean
            out["running_var"] = (1 - f) * t["running_var"] + f * unbiased
        if p.save:
            out["saved_mean"] = mean
            out["saved_inv_var"] = inv
        return out
    dy = t["dy"]
    if p.save:
        mean, inv = t["saved_mean"], t["saved_inv_var"]
    else:
        mean = x.mean(axis=axes, keepdims=True, dtype=dt)
        inv = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True, dtype=dt) + dt.type(BN_EPSILON))
    xhat = (x - mean) * inv
    dbias = dy.sum(axis=axes, keepdims=True, dtype=dt)
    dscale = (xhat * dy).sum(axis=axes, keepdims=True, dtype=dt)
    dx = (t["scale"] * inv / dt.type(m)) * (dt.type(m) * dy - dbias - xhat * dscale)
    return {"dx": dx, "dscale": dscale, "dbias": dbias}


# ----------------------------------------------------------------------------- activation

#: MIOpen's activation kernels compare the POWER base and TANH beta with float epsilon.
_EPS = float(np.finfo(np.float32).eps)


def activation_forward(mode: int, x: np.ndarray, alpha: float, beta: float, gamma: float) -> np.ndarray:
    """MIOpen's 10 activation modes (``driver/mloNeuronHost.hpp``)."""
    dt = x.dtype.type
    a, b, g = dt(alpha), dt(beta), dt(gamma)
    if mode == 0:   # PASTHRU
        return x.copy()
    if mode == 1:   # LOGISTIC
        return 1 / (1 + np.exp(-x))
    if mode == 2:   # TANH: beta * tanh(alpha * x)
        return b * np.tanh(a * x)
    if mode == 3:   # RELU
        return np.where(x > 0, x, dt(0))
    if mode == 4:   # SOFTRELU: log(1 + e^x), written stably
        return np.where(x > 0, x + np.log1p(np.exp(-np.abs(x))), np.log1p(np.exp(np.minimum(x, 0))))
    if mode == 5:   # ABS
        return np.abs(x)
    if mode == 6:   # POWER: (alpha + beta*x)^gamma, 0 where the base <= eps
        v = a + b * x
        ok = v > _EPS
        return np.where(ok, np.power(np.where(ok, v, 1), g), dt(0))
    if mode == 7:   # CLIPPEDRELU: min(alpha, max(0, x))
        return np.minimum(a, np.maximum(dt(0), x))
    if mode == 8:   # LEAKYRELU
        return np.where(x > 0, x, a * x)
    if mode == 9:   # ELU
        return np.where(x > 0, x, a * np.expm1(np.minimum(x, 0)))
    raise ReferenceUnsupported(f"activation mode {mode}")


def activation_backward(mode: int, x: np.ndarray, y: np.ndarray, dy: np.ndarray,
                        alpha: float, beta: float, gamma: float) -> np.ndarray:
    """dx as MIOpen's GPU kernels compute it (``src/kernels/activation_functions.h``).

    Two MIOpen definitions differ from the textbook derivative: POWER returns
    ``gamma*beta*y/(alpha+beta*x)`` *without* multiplying by dy (CPU reference and GPU
    kernel both), and CLIPPEDRELU passes the gradient for 0 < x <= alpha (the GPU
    kernel; the host reference uses x < alpha, the driver's inputs never hit alpha).
    """
    dt = x.dtype.type
    a, b, g = dt(alpha), dt(beta), dt(gamma)
    if mode == 0:
        return dy.copy()
    if mode == 1:
        return dy * y * (1 - y)
    if mode == 2:
        if abs(beta) <= _EPS:
            return np.zeros_like(x)
        return dy * a * (b - y * y / b)
    if mode == 3:
        return np.where(x > 0, dy, dt(0))
    if mode == 4:
        e = np.exp(np.minimum(x, dt(50)))
        return dy * e / (e + 1)
    if mode == 5:
        return dy * np.where(x > 0, dt(1), dt(-1))
    if mode == 6:
        v = a + b * x
        ok = v > _EPS
        return np.where(ok, g * b * y / np.where(ok, v, 1), dt(0))
    if mode == 7:
        return np.where((x > 0) & (x <= a), dy, dt(0))
    if mode == 8:
        return dy * np.where(x > 0, dt(1), a)
    if mode == 9:
        return dy * np.where(x > 0, dt(1), y + a)
    raise ReferenceUnsupported(f"activation mode {mode}")


# ----------------------------------------------------------------------------- LRN

def _window_sum(a: np.ndarray, axes: tuple[int, ...], before: int, after: int) -> np.ndarray:
    """Sum over the window [i - before, i + after] along each axis, zero outside.

    Shifted adds rather than a cumulative-sum difference: no cancellation error, and
    LRN windows are small."""
    out = a
    for axis in axes:
        n = out.shape[axis]
        acc = np.zeros_like(out)
        for shift in range(-before, after + 1):
            src = [slice(None)] * out.ndim
            dst = [slice(None)] * out.ndim
            lo, hi = max(0, -shift), min(n, n - shift)
            if lo >= hi:
                continue
            dst[axis] = slice(lo, hi)
            src[axis] = slice(lo + shift, hi + shift)
            acc[tuple(dst)] += out[tuple(src)]
        out = acc
    return out


def lrn(p: LRNProblem, x: np.ndarray, dy: Optional[np.ndarray]) -> np.ndarray:
    """MIOpen LRN (``driver/mloNormHost.hpp``).

    cross-channel: scale = K + alpha/N * sum of x^2 over channels [c - pre, c + post];
    within-channel: the same over an N x N spatial window with alpha/N^2, zero padded;
    pre = (N-1)//2, post = N-1-pre; y = x * scale^-beta.  Backward is the exact gradient
    (MIOpen's host code: dy*scale^-beta - 2*alpha*beta/area * x * sum(dy*y/scale) over
    the windows that contain the element).
    """
    pre = (p.lrn_n - 1) // 2
    post = p.lrn_n - 1 - pre
    axes = (1,) if p.mode == "cross" else (2, 3)
    area = p.lrn_n if p.mode == "cross" else p.lrn_n * p.lrn_n
    dt = x.dtype.type
    scale = dt(p.k) + dt(p.alpha / area) * _window_sum(x * x, axes, pre, post)
    y = x * scale ** dt(-p.beta)
    if dy is None:
        return y
    ratio = _window_sum(dy * y / scale, axes, post, pre)
    return dy * scale ** dt(-p.beta) - dt(2.0 * p.alpha * p.beta / area) * x * ratio


# ----------------------------------------------------------------------------- softmax

def softmax(p: SoftmaxProblem, x: np.ndarray, dy: Optional[np.ndarray]) -> np.ndarray:
    """MIOpen softmax (``driver/mloSoftmaxHost.hpp``): algorithm 0 fast (no max
    subtraction), 1 accurate, 2 log; mode 0 per instance (C*H*W), 1 per channel column
    (over C at each pixel).  y = alpha*softmax + beta*y_prior with y_prior = 0 (the
    driver's zero-initialised output); backward likewise scales by alpha."""
    axes = (1, 2, 3) if p.mode == 0 else (1,)
    dt = x.dtype.type
    if p.algorithm == 0:
        e = np.exp(x)
        s = e / e.sum(axis=axes, keepdims=True)
        logs = None
    else:
        z = x - x.max(axis=axes, keepdims=True)
        e = np.exp(z)
        tot = e.sum(axis=axes, keepdims=True)
        s = e / tot
        logs = z - np.log(tot) if p.algorithm == 2 else None
    y = logs if logs is not None else s
    if dy is None:
        return dt(p.alpha) * y
    if p.algorithm == 2:
        dx = dy - np.exp(y) * dy.sum(axis=axes, keepdims=True)
    else:
        dx = y * (dy - (dy * y).sum(axis=axes, keepdims=True))
    return dt(p.alpha) * dx


# ----------------------------------------------------------------------------- fusion

def fusion(p: FusionProblem, t: dict[str, np.ndarray], precision: str, engine: str,
           cancel: Optional[CancelFlag]) -> np.ndarray:
    """A CBAInfer plan as its parts: conv -> bias -> batch norm (inference) -> activation."""
    dt = compute_dtype(p, precision)
    if p.has_conv:
        conv = p.conv
        if p.dtype == "int8":
            raise ReferenceUnsupported("int8 fusion plans are not modelled by the reference")
        h = run_conv(conv, {"x": t["x"], "w": t["w"]}, precision=precision, cancel=cancel,
                     engine=engine)["y"].astype(dt, copy=False)
    else:
        h = _f(t["x"], dt)
    if "bias" in t:
        h = h + _f(t["bias"], dt)
    if p.bn_mode != "none":
        inv = 1.0 / np.sqrt(_f(t["est_var"], dt) + dt.type(FUSION_BN_EPSILON))
        h = _f(t["scale"], dt) * ((h - _f(t["est_mean"], dt)) * inv) + _f(t["bn_bias"], dt)
    if p.fusion_mode in FUSION_ACTIV_MODES:
        h = activation_forward(p.activ_mode, h, p.activ_alpha, p.activ_beta, p.activ_gamma)
    return h


# ----------------------------------------------------------------------------- dispatch

def _checked(problem: Problem, inputs: dict[str, np.ndarray], precision: str, names: tuple[str, ...],
             cancel: Optional[CancelFlag]) -> tuple[dict[str, np.ndarray], np.dtype]:
    """The inputs a basic layer reads, as ``precision``'s compute type, checked: every named
    input given, x and dy of the problem's shapes (int8 has no reference here)."""
    check_cancel(cancel)
    if problem.dtype == "int8":
        raise ReferenceUnsupported(f"{problem.op} has no int8 reference in MIOpenDriver")
    dt = compute_dtype(problem, precision)
    missing = [n for n in names if n not in inputs]
    if missing:
        raise KeyError(f"{problem.op} {problem.direction} needs inputs {missing} (got {sorted(inputs)})")
    t = {n: _f(inputs[n], dt) for n in names}
    for name in ("x", "dy"):
        if name in t and t[name].shape != tuple(problem.input_shape if name == "x" else problem.output_shape):
            raise ValueError(f"input {name!r} has shape {t[name].shape}, the problem needs "
                             f"{problem.input_shape if name == 'x' else problem.output_shape}")
    return t, dt


def _outputs(out: dict[str, np.ndarray], dt: np.dtype, cancel: Optional[CancelFlag]) -> dict[str, np.ndarray]:
    check_cancel(cancel)
    return {k: np.ascontiguousarray(v, dtype=dt) for k, v in out.items()}


Reference = Callable[..., dict[str, np.ndarray]]


def _reference_of(compute: Callable[[Any, dict[str, np.ndarray], np.dtype, str, Optional[CancelFlag]],
                                    dict[str, np.ndarray]]) -> Reference:
    """A basic family's ``reference`` entry: its inputs checked and converted
    (:func:`_checked`), ``compute``'s outputs in the compute type."""
    def reference(problem: Problem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
                  cancel: Optional[CancelFlag] = None, engine: str = "numpy", chunk_bytes: Optional[int] = None,
                  saved: object = None) -> dict[str, np.ndarray]:
        names = family_of(problem).tensor_names(problem)[0]
        t, dt = _checked(problem, inputs, precision, names, cancel)
        return _outputs(compute(problem, t, dt, engine, cancel), dt, cancel)
    return reference


def _pool(p: PoolProblem, t: dict[str, np.ndarray], dt: np.dtype, engine: str,
          cancel: Optional[CancelFlag]) -> dict[str, np.ndarray]:
    if p.direction == "fwd":
        return {"y": pool_forward(p, t["x"], engine, cancel)}
    return {"dx": pool_backward(p, t["x"], t["dy"], engine, cancel)}


def _activation(p: ActivationProblem, t: dict[str, np.ndarray], dt: np.dtype, engine: str,
                cancel: Optional[CancelFlag]) -> dict[str, np.ndarray]:
    args = (p.alpha, p.beta, p.gamma)
    y = activation_forward(p.mode, t["x"], *args)
    return {"y": y} if p.direction == "fwd" else {"dx": activation_backward(p.mode, t["x"], y, t["dy"], *args)}


def _dy(t: dict[str, np.ndarray]) -> Optional[np.ndarray]:
    return t.get("dy")


pool_reference = _reference_of(_pool)
bnorm_reference = _reference_of(lambda p, t, dt, engine, cancel: batchnorm(p, t, dt))
activ_reference = _reference_of(_activation)
lrn_reference = _reference_of(lambda p, t, dt, engine, cancel:
                              {"y" if _dy(t) is None else "dx": lrn(p, t["x"], _dy(t))})
softmax_reference = _reference_of(lambda p, t, dt, engine, cancel:
                                  {"y" if _dy(t) is None else "dx": softmax(p, t["x"], _dy(t))})


def fusion_reference(problem: FusionProblem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
                     cancel: Optional[CancelFlag] = None, engine: str = "numpy", chunk_bytes: Optional[int] = None,
                     saved: object = None) -> dict[str, np.ndarray]:
    """A fusion plan run as its parts (:func:`fusion`); its inputs are not converted first
    (the convolution takes them as stored, as MIOpen's does)."""
    check_cancel(cancel)
    if problem.dtype == "int8":
        raise ReferenceUnsupported(f"{problem.op} has no int8 reference in MIOpenDriver")
    compute_dtype(problem, precision)  # validates precision
    missing = [n for n in fusion_tensor_names(problem)[0] if n not in inputs]
    if missing:
        raise KeyError(f"fusion needs inputs {missing}")
    return {"y": fusion(problem, dict(inputs), precision, engine, cancel)}


def _peak_bytes(problem: Problem, precision: str, big: int, temps: int) -> int:
    """Stored inputs, compute copies and outputs of x / dy / y / dx (each at most ``big``
    elements), and ``temps`` temporaries of ``big`` elements."""
    it = compute_dtype(problem, precision).itemsize
    ins, outs = family_of(problem).tensor_names(problem)
    stored = storage_dtype(problem.dtype).itemsize
    n_in = sum(1 for n in ins if n in ("x", "dy"))
    n_out = sum(1 for n in outs if n in ("y", "dx"))
    return int(n_in * big * (stored + it) + n_out * big * it + temps * big * it + (1 << 16))


def _largest(problem: Problem) -> int:
    return max(math.prod(problem.input_shape), math.prod(problem.output_shape))


def basic_peak_bytes(problem: Problem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """Memory for a batch-norm, activation or softmax run: stored inputs, compute copies,
    outputs and four temporaries the size of the largest tensor."""
    return _peak_bytes(problem, precision, _largest(problem), 4)


def lrn_peak_bytes(problem: LRNProblem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """As :func:`basic_peak_bytes`, with six temporaries (LRN's window sums)."""
    return _peak_bytes(problem, precision, _largest(problem), 6)


def pool_peak_bytes(problem: PoolProblem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """As :func:`basic_peak_bytes`, each temporary the size of the padded input at least
    (pooling's padded copy and per-tap masks)."""
    spatial = zip(problem.in_spatial, problem.pads, strict=True)
    padded = problem.n * problem.c * math.prod(i + 2 * p for i, p in spatial)
    return _peak_bytes(problem, precision, max(_largest(problem), padded), 4)


def fusion_peak_bytes(problem: FusionProblem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """A fusion plan's parts at their peak: the convolution's plan, or a few copies of x."""
    dt = compute_dtype(problem, precision)
    base = 6 * math.prod(problem.output_shape) * dt.itemsize
    return int(base + (conv_peak_bytes(problem.conv, precision, chunk_bytes) if problem.has_conv
                       else 3 * math.prod(problem.input_shape) * dt.itemsize))


def basic_engine(problem: Problem, engine: str = "numpy") -> str:
    return f"numpy {problem.op}"


def pool_engine(problem: PoolProblem, engine: str = "numpy") -> str:
    if engine == "numba":
        why = numba_kernels.available()
        return "numba direct pooling" if why is None else f"numpy pooling (numba unavailable: {why})"
    return f"numpy {problem.op}"


def fusion_engine(problem: FusionProblem, engine: str = "numpy") -> str:
    return "numpy, fusion run as its parts"

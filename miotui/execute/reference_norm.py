"""Layer norm (plain, add, T5/RMS) and group norm: the reference, as MIOpenDriver's host
code defines them (``driver/layernorm_driver.hpp``, ``addlayernorm_driver.hpp``,
``t5layernorm_driver.hpp``, ``mloGroupNormHost.hpp``).

* layer norm over ``shape[normalized_dim:]``: ``y = (x - mean) * rstd * weight + bias``,
  ``rstd = 1 / sqrt(var + eps)`` with the biased variance; ``mean`` and ``rstd`` are
  outputs too (shaped as the outer dimensions).  add layer norm normalises ``x + x2``.
* T5 layer norm (RMS norm) over the *last* dimension whatever ``normalized_dim`` says
  (MIOpen's T5 kernels and driver have no such parameter): ``y = x * rstd * weight``,
  ``rstd = 1 / sqrt(mean(x^2) + eps)``.
* group norm over each of ``num_groups`` channel groups (with the spatial dimensions),
  per-channel ``weight`` and ``bias``; ``mean``/``rstd`` are (N, num_groups).
* the modes without learnable parameters (miopenNormMode_t 0, 2, 4; group norm 0) use
  weight 1 and bias 0 whatever the tensors hold, as MIOpen does.
* backward (layer norm, T5): the exact gradients given ``mean``/``rstd`` as inputs, as
  MIOpen's ``miopenLayerNormBackward``/``miopenT5LayerNormBackward`` take them (the
  driver's ``mloLayerNormBackwardRunHost``, ``mloT5LayerNormBackwardRunHost``):
  dx, and the weight (and bias) gradients summed over the outer dimensions.  The inputs
  hold the statistics of ``x``, as a preceding forward would have saved them.

The host code computes the variance as ``E[x^2] - mean^2``; this reference uses the
two-pass form (the same value, without the cancellation).  Inputs are drawn as the
drivers draw them: x in [0, 1) (T5: [-1, 1)), dy in [-1, 1), parameters in [0, 1)
(T5 weight: [-1, 1)).
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from miotui.execute.layer_shapes import layer_shapes, norm_param_shape, norm_stat_shape
from miotui.execute.reference_tables import check_dtype
from miotui.execute.tensors import ReferenceUnsupported, compute_dtype, round_to_dtype, uniform
from miotui.execute.threads import CancelFlag, check_cancel
from miotui.problems import GroupNormProblem, LayerNormProblem

__all__ = ["norm_make_inputs", "run_norm", "affine", "NON_AFFINE_MODES"]

#: miopenNormMode_t values whose weight and bias are fixed at 1 and 0
NON_AFFINE_MODES = (0, 2, 4)


def affine(p: LayerNormProblem | GroupNormProblem) -> bool:
    """Whether the layer's weight (and bias) take part."""
    if isinstance(p, GroupNormProblem):
        return p.mode != 0
    return p.mode not in NON_AFFINE_MODES


def _inner_axes(p: LayerNormProblem) -> tuple[int, int]:
    """(outer, inner) element counts of the normalisation."""
    inner = math.prod(norm_param_shape(p))
    return math.prod(p.shape) // inner, inner


def _stats(p: LayerNormProblem, x: np.ndarray, dt: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(mean, rstd) of x as (outer, 1) columns; T5: mean is zeros (RMS norm)."""
    outer, inner = _inner_axes(p)
    xv = np.asarray(x, dtype=dt).reshape(outer, inner)
    if p.variant == "t5layernorm":
        ms = np.mean(xv * xv, axis=1, keepdims=True, dtype=dt)
        return np.zeros_like(ms), 1.0 / np.sqrt(ms + dt.type(p.eps))
    mean = np.mean(xv, axis=1, keepdims=True, dtype=dt)
    var = np.mean((xv - mean) ** 2, axis=1, keepdims=True, dtype=dt)
    return mean, 1.0 / np.sqrt(var + dt.type(p.eps))


def norm_make_inputs(p: LayerNormProblem | GroupNormProblem, seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs as the drivers draw them (module docstring); fixed parameters (1 and 0)
    in the modes without learnable ones; backward statistics computed from x in float64."""
    dtype = "fp32" if p.dtype == "unknown" else p.dtype
    ins = layer_shapes(p)[0]
    t5 = getattr(p, "variant", "") == "t5layernorm"
    lo = -1.0 if t5 else 0.0
    out: dict[str, np.ndarray] = {}
    for name, shape in ins.items():
        if name in ("x", "x2"):
            out[name] = uniform(seed, name, shape, lo, 1.0, dtype)
        elif name == "dy":
            out[name] = uniform(seed, name, shape, -1.0, 1.0, dtype)
        elif name == "weight":
            out[name] = (uniform(seed, name, shape, lo, 1.0, dtype) if affine(p)
                         else round_to_dtype(np.ones(shape), dtype))
        elif name == "bias":
            out[name] = (uniform(seed, name, shape, 0.0, 1.0, dtype) if affine(p)
                         else round_to_dtype(np.zeros(shape), dtype))
    if "rstd" in ins:   # backward: the statistics a forward pass of x saved
        assert isinstance(p, LayerNormProblem)
        mean, rstd = _stats(p, out["x"], np.dtype(np.float64))
        out["rstd"] = round_to_dtype(rstd.reshape(ins["rstd"]), dtype)
        if "mean" in ins:
            out["mean"] = round_to_dtype(mean.reshape(ins["mean"]), dtype)
    return {name: out[name] for name in ins}


def _param(p: LayerNormProblem | GroupNormProblem, t: dict[str, np.ndarray], name: str,
           dt: np.dtype) -> Optional[np.ndarray]:
    if not affine(p) or name not in t:
        return None
    return np.asarray(t[name], dtype=dt).reshape(-1)


def _layernorm(p: LayerNormProblem, t: dict[str, np.ndarray], dt: np.dtype) -> dict[str, np.ndarray]:
    outer, inner = _inner_axes(p)
    w = _param(p, t, "weight", dt)
    if p.direction == "fwd":
        x = np.asarray(t["x"], dtype=dt)
        if p.variant == "addlayernorm":
            x = x + np.asarray(t["x2"], dtype=dt)
        mean, rstd = _stats(p, x, dt)
        xv = x.reshape(outer, inner)
        y = xv * rstd if p.variant == "t5layernorm" else (xv - mean) * rstd
        if w is not None:
            y = y * w
        b = _param(p, t, "bias", dt)
        if b is not None:
            y = y + b
        stat = norm_stat_shape(p)
        out = {"y": y.reshape(p.shape)}
        if p.variant != "t5layernorm":
            out["mean"] = mean.reshape(stat)
        out["rstd"] = rstd.reshape(stat)
        return out
    if p.variant == "addlayernorm":
        raise ReferenceUnsupported("MIOpen has no add-layer-norm backward")
    x = np.asarray(t["x"], dtype=dt).reshape(outer, inner)
    dy = np.asarray(t["dy"], dtype=dt).reshape(outer, inner)
    rstd = np.asarray(t["rstd"], dtype=dt).reshape(outer, 1)
    wv = w if w is not None else dt.type(1)
    dyw = dy * wv
    if p.variant == "t5layernorm":
        dx = rstd * dyw - x * (rstd ** 3) * np.mean(dyw * x, axis=1, keepdims=True, dtype=dt)
        dw = np.sum(dy * x * rstd, axis=0, dtype=dt)
        return {"dx": dx.reshape(p.shape), "dw": dw.reshape(norm_param_shape(p))}
    mean = np.asarray(t["mean"], dtype=dt).reshape(outer, 1)
    xhat = (x - mean) * rstd
    dx = rstd * (dyw - np.mean(dyw, axis=1, keepdims=True, dtype=dt)
                 - xhat * np.mean(dyw * xhat, axis=1, keepdims=True, dtype=dt))
    ps = norm_param_shape(p)
    return {"dx": dx.reshape(p.shape), "dw": np.sum(dy * xhat, axis=0, dtype=dt).reshape(ps),
            "db": np.sum(dy, axis=0, dtype=dt).reshape(ps)}


def _groupnorm(p: GroupNormProblem, t: dict[str, np.ndarray], dt: np.dtype) -> dict[str, np.ndarray]:
    if p.direction != "fwd":
        raise ReferenceUnsupported("MIOpen has no group-norm backward")
    n, c = p.shape[0], p.shape[1]
    x = np.asarray(t["x"], dtype=dt).reshape(n * p.num_groups, -1)
    mean = np.mean(x, axis=1, keepdims=True, dtype=dt)
    var = np.mean((x - mean) ** 2, axis=1, keepdims=True, dtype=dt)
    rstd = 1.0 / np.sqrt(var + dt.type(p.eps))
    y = ((x - mean) * rstd).reshape(n, c, -1)
    w, b = _param(p, t, "weight", dt), _param(p, t, "bias", dt)
    if w is not None and b is not None:
        y = y * w[:, None] + b[:, None]
    stat = (n, p.num_groups)
    return {"y": y.reshape(p.shape), "mean": mean.reshape(stat), "rstd": rstd.reshape(stat)}


def run_norm(p: LayerNormProblem | GroupNormProblem, inputs: dict[str, np.ndarray], precision: str,
             compute: Callable[..., dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One pass (see :mod:`layer_shapes` for the tensor names) by ``compute`` (the family's
    own: :func:`_layernorm` or :func:`_groupnorm`), the inputs checked against the table."""
    dt = compute_dtype(p, precision)
    ins = layer_shapes(p)[0]
    for name, shape in ins.items():
        if name not in inputs:
            raise KeyError(f"{p.op} {p.direction} needs inputs {sorted(ins)} (got {sorted(inputs)})")
        if tuple(inputs[name].shape) != shape:
            raise ValueError(f"input {name!r} has shape {tuple(inputs[name].shape)}, the problem needs {shape}")
    out = compute(p, inputs, dt)
    return {k: np.ascontiguousarray(v, dtype=dt) for k, v in out.items()}


# ----------------------------------------------------------------------------- the families' entries

def layernorm_inputs(p: LayerNormProblem, seed: int = 0) -> dict[str, np.ndarray]:
    check_dtype(p)
    return norm_make_inputs(p, seed)


def groupnorm_inputs(p: GroupNormProblem, seed: int = 0) -> dict[str, np.ndarray]:
    check_dtype(p)
    return norm_make_inputs(p, seed)


def _norm_reference(p: LayerNormProblem | GroupNormProblem, inputs: dict[str, np.ndarray], precision: str,
                    cancel: Optional[CancelFlag], compute: Callable[..., dict[str, np.ndarray]]
                    ) -> dict[str, np.ndarray]:
    check_cancel(cancel)
    check_dtype(p)
    out = run_norm(p, inputs, precision, compute)
    check_cancel(cancel)
    return out


def layernorm_reference(p: LayerNormProblem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
                        cancel: Optional[CancelFlag] = None, engine: str = "numpy",
                        chunk_bytes: Optional[int] = None, saved: object = None) -> dict[str, np.ndarray]:
    return _norm_reference(p, inputs, precision, cancel, _layernorm)


def groupnorm_reference(p: GroupNormProblem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
                        cancel: Optional[CancelFlag] = None, engine: str = "numpy",
                        chunk_bytes: Optional[int] = None, saved: object = None) -> dict[str, np.ndarray]:
    return _norm_reference(p, inputs, precision, cancel, _groupnorm)

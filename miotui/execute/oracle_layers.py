"""The verdict's reference for reductions and the norms (layer, add, T5, group), in float64.

Written apart from the numpy backend (:mod:`reference_reduce`, :mod:`reference_norm`)
and from torch's, in other terms:

* reduce: sums, norms and averages as products with a vector of ones (BLAS dot
  products rather than ``np.sum``), a product as ``sign * exp(sum(log|x|))``, the
  extremes with NaN-ignoring ``fmax``/``fmin`` and the index as the first position
  holding that value; MIOpen's NaN rules (module :mod:`reference_reduce`) restated.
* norms: statistics from sums (``E[x^2] - E[x]^2``); backward by the chain rule through
  the variance (and, for T5, the mean square).

Tensor names and shapes come from :mod:`layer_shapes` (the problem's table, no math).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from miotui.execute.layer_shapes import (
    groupnorm_shapes,
    layer_shapes,
    layernorm_shapes,
    reduce_shapes,
    reduce_uses_beta,
)
from miotui.execute.tensors import ReferenceUnsupported
from miotui.problems import REDUCE_OPS, GroupNormProblem, LayerNormProblem, ReduceProblem

__all__ = ["reduce_oracle", "layernorm_oracle", "groupnorm_oracle"]

#: the largest value of each compute type: what min / max start from
_TYPE_MAX = {"fp16": 65504.0, "fp64": float(np.finfo(np.float64).max)}
_FLOAT_MAX = float(np.finfo(np.float32).max)


def _rows(p: ReduceProblem, x: np.ndarray) -> np.ndarray:
    """(kept..., reduced) with the reduced axes last, both in ascending order."""
    red = sorted(p.reduce_dims)
    moved = np.moveaxis(x, red, list(range(x.ndim - len(red), x.ndim)))
    return moved.reshape(moved.shape[:x.ndim - len(red)] + (-1,))


def _extreme(p: ReduceProblem, op: str, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if op == "amax":
        v = np.abs(v)
    nan = np.isnan(v)
    pick = np.fmin if op == "min" else np.fmax     # both ignore a NaN
    best = pick.reduce(v, axis=-1)
    # the first position holding the value (argmax of a boolean finds the first True)
    hit = (v == best[..., None]) & ~nan
    kind = "fp64" if p.dtype == "fp64" else p.comp_dtype   # MIOpenDriver computes fp64 data in fp64
    start = 0.0 if op == "amax" else _TYPE_MAX.get(kind, _FLOAT_MAX) * (1 if op == "min" else -1)
    # MIOpen keeps (start, index 0) unless a value beats the start strictly (NaN: never)
    beats = best < start if op == "min" else best > start
    val = np.where(beats, best, start)
    idx = np.where(beats, np.argmax(hit, axis=-1), 0)
    if p.nan_propagation:
        anyn = nan.any(axis=-1)
        last = v.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
        val = np.where(anyn, np.nan, val)
        idx = np.where(anyn, last, idx)
    return val, idx


def reduce_oracle(p: ReduceProblem, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    """y [, indices] of ``miopenReduceTensor`` in float64."""
    ins, outs = reduce_shapes(p)
    v = _rows(p, np.asarray(inputs["x"], dtype=np.float64))
    ones = np.ones(v.shape[-1])
    op = REDUCE_OPS[p.reduce_op]
    idx = None
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        if op == "add":
            acc = v @ ones
        elif op == "avg":
            acc = (v @ ones) / v.shape[-1]
        elif op == "norm1":
            acc = np.abs(v) @ ones
        elif op == "norm2":
            acc = np.sqrt(np.einsum("...k,...k->...", v, v))
        elif op == "mul":
            negatives = (v < 0) @ ones
            acc = np.where(negatives % 2 == 1, -1.0, 1.0) * np.exp(np.log(np.abs(v)) @ ones)
            acc = np.where(np.isnan(v).any(axis=-1), np.nan, acc)
        else:
            acc, idx = _extreme(p, op, v)
        if not p.indices:
            idx = None
            acc = acc * p.alpha if p.alpha != 1 else acc
            if reduce_uses_beta(p):
                acc = acc + p.beta * np.asarray(inputs["y"], dtype=np.float64).reshape(acc.shape)
    out = {"y": np.asarray(acc, dtype=np.float64).reshape(outs["y"])}
    if idx is not None:
        out["indices"] = idx.astype(np.int64).reshape(outs["indices"])
    return out


# ----------------------------------------------------------------------------- norms

def _affine(p: LayerNormProblem | GroupNormProblem) -> bool:
    """miopenNormMode_t 0, 2 and 4 (group norm: 0) fix weight 1 and bias 0."""
    return p.mode != 0 if isinstance(p, GroupNormProblem) else p.mode not in (0, 2, 4)


def _moments(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, biased variance) per row, from the sums of x and x^2."""
    k = rows.shape[1]
    s1 = rows @ np.ones(k)
    s2 = np.einsum("ij,ij->i", rows, rows)
    mean = s1 / k
    return mean[:, None], np.maximum(s2 / k - mean * mean, 0.0)[:, None]


def _layernorm(p: LayerNormProblem, t: dict[str, Any]) -> dict[str, np.ndarray]:
    ins, outs = layernorm_shapes(p)
    inner = math.prod(p.shape[-1:] if p.variant == "t5layernorm" else p.shape[p.normalized_dim:])
    x = np.asarray(t["x"], dtype=np.float64).reshape(-1, inner)
    w = np.asarray(t["weight"], dtype=np.float64).reshape(1, inner) if _affine(p) else np.ones((1, inner))
    t5 = p.variant == "t5layernorm"
    if p.direction == "fwd":
        if p.variant == "addlayernorm":
            x = x + np.asarray(t["x2"], dtype=np.float64).reshape(-1, inner)
        if t5:
            rstd = (np.einsum("ij,ij->i", x, x)[:, None] / inner + p.eps) ** -0.5
            return {"y": (x * rstd * w).reshape(outs["y"]), "rstd": rstd.reshape(outs["rstd"])}
        mean, var = _moments(x)
        rstd = (var + p.eps) ** -0.5
        b = np.asarray(t["bias"], dtype=np.float64).reshape(1, inner) if _affine(p) else 0.0
        return {"y": ((x - mean) * rstd * w + b).reshape(outs["y"]), "mean": mean.reshape(outs["mean"]),
                "rstd": rstd.reshape(outs["rstd"])}
    if p.variant == "addlayernorm":
        raise ReferenceUnsupported("MIOpen has no add-layer-norm backward")
    dy = np.asarray(t["dy"], dtype=np.float64).reshape(-1, inner)
    rstd = np.asarray(t["rstd"], dtype=np.float64).reshape(-1, 1)
    g = dy * w
    if t5:
        # y = x r w with r = (mean(x^2) + eps)^-1/2: dr/dx_j = -r^3 x_j / inner
        dx = g * rstd - x * rstd ** 3 * (np.einsum("ij,ij->i", g, x)[:, None] / inner)
        return {"dx": dx.reshape(outs["dx"]), "dw": np.einsum("ij,ij->j", dy, x * rstd).reshape(outs["dw"])}
    centred = x - np.asarray(t["mean"], dtype=np.float64).reshape(-1, 1)
    # chain rule through var (d var / d x_j = 2 centred_j / inner) and mean (d mean / d x_j = 1 / inner)
    dvar = -0.5 * rstd ** 3 * np.einsum("ij,ij->i", g, centred)[:, None]
    dmean = -rstd * (g @ np.ones(inner))[:, None]
    dx = g * rstd + dvar * 2.0 * centred / inner + dmean / inner
    xhat = centred * rstd
    return {"dx": dx.reshape(outs["dx"]), "dw": np.einsum("ij,ij->j", dy, xhat).reshape(outs["dw"]),
            "db": (np.ones(dy.shape[0]) @ dy).reshape(outs["db"])}


def _groupnorm(p: GroupNormProblem, t: dict[str, Any]) -> dict[str, np.ndarray]:
    if p.direction != "fwd":
        raise ReferenceUnsupported("MIOpen has no group-norm backward")
    _, outs = groupnorm_shapes(p)
    n, c = p.shape[0], p.shape[1]
    x = np.asarray(t["x"], dtype=np.float64)
    rows = x.reshape(n * p.num_groups, -1)
    mean, var = _moments(rows)
    rstd = (var + p.eps) ** -0.5
    y = ((rows - mean) * rstd).reshape(n, c, -1)
    if _affine(p):
        y = y * np.asarray(t["weight"], dtype=np.float64).reshape(1, c, 1) \
            + np.asarray(t["bias"], dtype=np.float64).reshape(1, c, 1)
    return {"y": y.reshape(outs["y"]), "mean": mean.reshape(outs["mean"]), "rstd": rstd.reshape(outs["rstd"])}


def _norm(p: LayerNormProblem | GroupNormProblem, inputs: dict[str, Any],
          compute: Callable[..., dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    missing = [name for name in layer_shapes(p)[0] if name not in inputs]
    if missing:
        raise KeyError(f"{p.op} {p.direction} needs inputs {sorted(layer_shapes(p)[0])} (got {sorted(inputs)})")
    return compute(p, inputs)


def layernorm_oracle(p: LayerNormProblem, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    """The outputs of a layer / add / T5 layer norm pass in float64."""
    return _norm(p, inputs, _layernorm)


def groupnorm_oracle(p: GroupNormProblem, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    """The outputs of a group norm pass in float64."""
    return _norm(p, inputs, _groupnorm)

"""Layer norm, group norm and reductions on torch's own kernels, fed MIOpen's tensors.

* layer norm / add layer norm: ``aten.native_layer_norm`` (of ``x + x2`` for the add
  form), whose mean and rstd are MIOpen's outputs; backward
  ``aten.native_layer_norm_backward``, which takes mean and rstd as MIOpen's backward does.
* T5 layer norm: ``aten._fused_rms_norm`` and ``aten._fused_rms_norm_backward`` (rstd in,
  as MIOpen's), over the last dimension; where torch has no kernel for that backward
  (its CPU, in 2.13), autograd of ``F.rms_norm``, which recomputes rstd from x.
* group norm: ``aten.native_group_norm``.
* the modes without learnable parameters pass no weight and bias (backward: a weight
  of ones, so the weight and bias gradients are still computed, as MIOpen computes them).
* reductions: torch's sum / prod / mean / vector_norm / amin / amax / argmin / argmax
  over the reduced dimensions (moved last, in ascending order, so the indices are
  flattened as MIOpen's), with MIOpen's NaN and starting-value rules
  (:mod:`miotui.execute.reference_reduce`) written out in torch ops.
"""

from __future__ import annotations

import math
from typing import Any

from miotui.execute.layer_shapes import norm_param_shape, norm_stat_shape, reduce_uses_beta
from miotui.problems import REDUCE_OPS, GroupNormProblem, LayerNormProblem, ReduceProblem

_NON_AFFINE = (0, 2, 4)


def torch_layernorm(p: LayerNormProblem, t: dict[str, Any]) -> dict[str, Any]:
    import torch
    aten = torch.ops.aten
    ps = list(norm_param_shape(p))
    stat = norm_stat_shape(p)
    affine = p.mode not in _NON_AFFINE
    t5 = p.variant == "t5layernorm"
    x = t["x"]
    if p.direction == "fwd":
        if p.variant == "addlayernorm":
            x = x + t["x2"]
        w = t["weight"] if affine else None
        if t5:
            y, rstd = aten._fused_rms_norm(x, ps, w, p.eps)
            return {"y": y, "rstd": rstd.reshape(stat)}
        b = t["bias"] if affine else None
        y, mean, rstd = aten.native_layer_norm(x, ps, w, b, p.eps)
        return {"y": y, "mean": mean.reshape(stat), "rstd": rstd.reshape(stat)}
    if p.variant == "addlayernorm":
        raise NotImplementedError("MIOpen has no add-layer-norm backward")
    w = t["weight"] if affine else torch.ones_like(t["weight"])
    tshape = x.shape[:x.dim() - len(ps)] + (1,) * len(ps)
    rstd = t["rstd"].reshape(tshape)
    if t5:
        try:
            dx, dw = aten._fused_rms_norm_backward(t["dy"], x, ps, rstd, w, [True, True])
        except NotImplementedError:   # no kernel on this device (torch 2.13's CPU): autograd of rms_norm
            with torch.enable_grad():
                xg, wg = x.detach().requires_grad_(True), w.detach().requires_grad_(True)
                y = torch.nn.functional.rms_norm(xg, ps, wg, p.eps)
                dx, dw = torch.autograd.grad(y, (xg, wg), t["dy"])
        return {"dx": dx, "dw": dw}
    dx, dw, db = aten.native_layer_norm_backward(t["dy"], x, ps, t["mean"].reshape(tshape), rstd, w,
                                                 torch.zeros_like(w), [True, True, True])
    return {"dx": dx, "dw": dw, "db": db}


def torch_groupnorm(p: GroupNormProblem, t: dict[str, Any]) -> dict[str, Any]:
    import torch
    if p.direction != "fwd":
        raise NotImplementedError("MIOpen has no group-norm backward")
    n, c = p.shape[0], p.shape[1]
    w, b = (t["weight"], t["bias"]) if p.mode != 0 else (None, None)
    y, mean, rstd = torch.ops.aten.native_group_norm(t["x"].contiguous(), w, b, n, c,
                                                     math.prod(p.shape[2:]), p.num_groups, p.eps)
    return {"y": y, "mean": mean, "rstd": rstd}


def torch_reduce(p: ReduceProblem, t: dict[str, Any]) -> dict[str, Any]:
    """One reduction; accumulated in float32 for 16-bit data (MIOpen's default compute
    type; torch's own low-precision sum would round each partial), float64 for fp64."""
    import torch
    x = t["x"]
    out_dtype = x.dtype
    if "fp64" in (p.dtype, p.comp_dtype):
        x = x.double()
    elif x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    red = sorted(p.reduce_dims)
    keep = [d for d in range(x.dim()) if d not in red]
    v = x.permute(keep + red).reshape([x.shape[d] for d in keep] + [math.prod(x.shape[d] for d in red)])
    op = REDUCE_OPS[p.reduce_op]
    idx = None
    if op == "add":
        acc = v.sum(-1)
    elif op == "avg":
        acc = v.mean(-1)
    elif op == "mul":
        acc = v.prod(-1)
    elif op == "norm1":
        acc = torch.linalg.vector_norm(v, 1, dim=-1)
    elif op == "norm2":
        acc = torch.linalg.vector_norm(v, 2, dim=-1)
    else:
        acc, idx = _extreme(p, op, v)
    if not p.indices:
        idx = None
        if p.alpha != 1:
            acc = acc * p.alpha
        if reduce_uses_beta(p):
            acc = acc + p.beta * t["y"].to(acc.dtype).reshape(acc.shape)
    res = {"y": acc.to(out_dtype).reshape(p.output_shape)}
    if idx is not None:
        res["indices"] = idx.to(torch.int32).reshape(p.output_shape)
    return res


def _extreme(p: ReduceProblem, op: str, v: Any) -> tuple[Any, Any]:
    import torch
    if op == "amax":
        v = v.abs()
    nan = torch.isnan(v)
    clean = torch.where(nan, torch.full_like(v, math.inf if op == "min" else -math.inf), v)
    idx = clean.argmin(-1) if op == "min" else clean.argmax(-1)
    val = clean.gather(-1, idx.unsqueeze(-1)).squeeze(-1)
    from miotui.execute.reference_reduce import extreme_start
    start = extreme_start(p)
    better = val < start if op == "min" else val > start   # only a strict improvement replaces the start
    val = torch.where(better, val, torch.full_like(val, start))
    idx = torch.where(better, idx, torch.zeros_like(idx))
    if p.nan_propagation:
        has = nan.any(-1)
        last = v.shape[-1] - 1 - nan.flip(-1).to(torch.uint8).argmax(-1)
        val = torch.where(has, torch.full_like(val, math.nan), val)
        idx = torch.where(has, last, idx)
    return val, idx

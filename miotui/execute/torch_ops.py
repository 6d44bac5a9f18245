"""MIOpen's layer kinds as PyTorch ops: the torch backend's math.

Each function takes a problem and torch tensors named as MIOpen names them (``x``,
``w``, ``dy``, ``scale``, ...) and returns the outputs by name.  torch (and the
reference's constants, which bring numpy) are imported inside the functions: the app
imports this module at start-up.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from miotui.families import Family, UnknownFamily, family_of
from miotui.problems import (
    FUSION_ACTIV_MODES,
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    FusionProblem,
    LRNProblem,
    PoolProblem,
    Problem,
    RNNProblem,
    SoftmaxProblem,
)


def _conv_pads(problem: ConvProblem) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(before, after) padding per spatial axis, MIOpen's meaning for each pad mode.

    ``same``: total padding so that out = ceil(in / stride), the odd pixel after (as
    MIOpenDriver's ``-z same`` does); ``valid``: none; default: the given pads both sides.
    """
    nd = problem.ndim
    if problem.pad_mode == "valid":
        return (0,) * nd, (0,) * nd
    if problem.pad_mode == "same" and problem.mode != "trans":
        before, after = [], []
        for i in range(nd):
            eff = problem.dilations[i] * (problem.filter[i] - 1) + 1
            o = problem.out_spatial[i]
            total = max((o - 1) * problem.strides[i] + eff - problem.in_spatial[i], 0)
            before.append(total // 2)
            after.append(total - total // 2)
        return tuple(before), tuple(after)
    return tuple(problem.pads), tuple(problem.pads)


def _torch_pad_arg(before: tuple[int, ...], after: tuple[int, ...]) -> list[int]:
    """F.pad wants the last axis first: [w_lo, w_hi, h_lo, h_hi, ...]."""
    out: list[int] = []
    for b, a in zip(reversed(before), reversed(after), strict=True):
        out += [b, a]
    return out


def torch_conv(problem: ConvProblem, t: dict[str, Any]) -> dict[str, Any]:
    """One convolution direction with PyTorch's kernels, any pad mode, 2-D or 3-D,
    grouped, dilated, transposed.  MIOpen's weight layout ([K, C/G, ...], transposed
    [C, K/G, ...]) is torch's for conv and conv_transpose alike."""
    import torch
    import torch.nn.functional as F

    stride, dil, groups = list(problem.strides), list(problem.dilations), problem.groups
    nd = problem.ndim
    conv_fn = F.conv2d if nd == 2 else F.conv3d
    bwd = torch.ops.aten.convolution_backward
    d = problem.direction
    if problem.mode == "trans":
        pads, opad = list(problem.pads), list(problem.trans_output_pads)
        if d == "fwd":
            tfn = F.conv_transpose2d if nd == 2 else F.conv_transpose3d
            return {"y": tfn(t["x"], t["w"], None, stride, pads, opad, groups, dil)}
        if d == "bwd":
            dummy_x = t["dy"].new_empty(1).expand(problem.input_shape)
            return {"dx": bwd(t["dy"], dummy_x, t["w"], None, stride, pads, dil, True, opad, groups,
                              (True, False, False))[0]}
        dummy_w = t["dy"].new_empty(1).expand(problem.weight_shape)
        return {"dw": bwd(t["dy"], t["x"], dummy_w, None, stride, pads, dil, True, opad, groups,
                          (False, True, False))[1]}
    before, after = _conv_pads(problem)
    symmetric = before == after
    zero = [0] * nd
    pad_arg = list(before) if symmetric else zero
    out_sp = problem.out_spatial

    def padded(x: Any) -> Any:
        return x if symmetric else F.pad(x, _torch_pad_arg(before, after))

    def crop_out(y: Any) -> Any:   # a valid/same input may leave a surplus row at the end
        return y[(slice(None), slice(None)) + tuple(slice(0, o) for o in out_sp)]

    if d == "fwd":
        return {"y": crop_out(conv_fn(padded(t["x"]), t["w"], None, stride, pad_arg, dil, groups))}
    if d == "bwd":
        shape = problem.input_shape
        if not symmetric:
            shape = shape[:2] + tuple(i + b + a for i, b, a in zip(problem.in_spatial, before, after, strict=True))
        # For "same", padded = (out-1)*stride + eff exactly (or the input itself when no
        # padding is needed), so the forward of this shape gives dy's size.
        dummy_x = t["dy"].new_empty(1).expand(shape)
        dxp = bwd(t["dy"], dummy_x, t["w"], None, stride, pad_arg, dil, False, zero, groups,
                  (True, False, False))[0]
        if not symmetric:
            inner = tuple(slice(b, b + i) for b, i in zip(before, problem.in_spatial, strict=True))
            dxp = dxp[(slice(None), slice(None)) + inner]
        return {"dx": dxp.contiguous()}
    dummy_w = t["dy"].new_empty(1).expand(problem.weight_shape)
    return {"dw": bwd(t["dy"], padded(t["x"]), dummy_w, None, stride, pad_arg, dil, False, zero, groups,
                      (False, True, False))[1]}


def _pool_pad(p: PoolProblem) -> list[int]:
    return _torch_pad_arg(tuple(p.pads), tuple(p.pads))


def torch_pool(p: PoolProblem, t: dict[str, Any]) -> dict[str, Any]:
    """MIOpen pooling with torch's pooling kernels.

    Padding is applied explicitly (MIOpen allows pads torch's pooling refuses: more than
    half the window): -inf for max (a window of padding only gives 0, as MIOpen writes),
    zeros for average.  ``avg`` (miopenPoolingAverage) divides by the in-bounds count,
    ``avg_in`` (AverageInclusive) by the window size.  Backward is autograd of that
    forward (max: the gradient goes to the first maximum, as MIOpen's index does).

    An average is one torch kernel wherever torch can take the padding itself (at most
    half the window), so an fp16/bf16 output is rounded once, as MIOpen's kernel (float
    accumulator) rounds it; the sum-times-area-over-count form, kept for wider pads,
    rounds three times in the data type (bf16 averages 2.3x the once-rounded error).
    """
    import torch
    import torch.nn.functional as F
    nd = p.ndim
    maxpool = F.max_pool2d if nd == 2 else F.max_pool3d
    avgpool = F.avg_pool2d if nd == 2 else F.avg_pool3d
    window, stride = list(p.window), list(p.strides)
    area = math.prod(p.window)

    def forward(x: Any) -> Any:
        if p.mode == "max":
            xp = F.pad(x, _pool_pad(p), value=float("-inf"))
            y = maxpool(xp, window, stride)
            return torch.where(torch.isneginf(y), torch.zeros_like(y), y)
        if p.mode == "avg_in":
            return avgpool(F.pad(x, _pool_pad(p)), window, stride)
        if all(2 * pad <= w for pad, w in zip(p.pads, p.window, strict=True)):
            return avgpool(x, window, stride, padding=list(p.pads), count_include_pad=False)
        total = avgpool(F.pad(x, _pool_pad(p)), window, stride) * area
        ones = torch.ones((1, 1) + tuple(p.in_spatial), dtype=x.dtype, device=x.device)
        count = avgpool(F.pad(ones, _pool_pad(p)), window, stride) * area
        return total / torch.clamp(torch.round(count), min=1)

    if p.direction == "fwd":
        return {"y": forward(t["x"])}
    with torch.enable_grad():
        x = t["x"].detach().requires_grad_(True)
        y = forward(x)
        (dx,) = torch.autograd.grad(y, x, t["dy"])
    return {"dx": dx}


def _bn_flat(p: BatchNormProblem, a: Any) -> Any:
    """per_activation statistics are per (c, spatial) over N only: view x as (N, C*HW)."""
    return a.reshape(a.shape[0], -1) if p.mode == "per_activation" else a


def _bn_param(p: BatchNormProblem, a: Any) -> Any:
    return None if a is None else a.reshape(-1)


def torch_batchnorm(p: BatchNormProblem, t: dict[str, Any]) -> dict[str, Any]:
    """Batch norm with ATen's kernels (``native_batch_norm`` and its backward), eps and
    running-average factor as the reference's (MIOpenDriver's eps 1e-3)."""
    import torch

    from miotui.execute.reference_basic import BN_EPSILON, BN_EXP_AVG_FACTOR
    aten = torch.ops.aten
    x = _bn_flat(p, t["x"])
    pshape = tuple(t["scale"].shape)
    scale = _bn_param(p, t["scale"])
    if p.direction == "fwd_infer":
        y, _, _ = aten.native_batch_norm(x, scale, _bn_param(p, t["bias"]), _bn_param(p, t["est_mean"]),
                                         _bn_param(p, t["est_var"]), False, 0.0, BN_EPSILON)
        return {"y": y.reshape(t["x"].shape)}
    if p.direction == "fwd_train":
        rm = _bn_param(p, t["running_mean"]).clone() if p.running else None
        rv = _bn_param(p, t["running_var"]).clone() if p.running else None
        y, mean, invstd = aten.native_batch_norm(x, scale, _bn_param(p, t["bias"]), rm, rv, True,
                                                 BN_EXP_AVG_FACTOR, BN_EPSILON)
        out = {"y": y.reshape(t["x"].shape)}
        if p.running:
            out["running_mean"] = rm.reshape(pshape)
            out["running_var"] = rv.reshape(pshape)
        if p.save:
            out["saved_mean"] = mean.reshape(pshape)
            out["saved_inv_var"] = invstd.reshape(pshape)
        return out
    if p.save:
        mean, invstd = _bn_param(p, t["saved_mean"]), _bn_param(p, t["saved_inv_var"])
    else:   # statistics of this batch, computed by torch's forward kernel
        _, mean, invstd = aten.native_batch_norm(x, scale, None, None, None, True, 0.0, BN_EPSILON)
    dx, dscale, dbias = aten.native_batch_norm_backward(_bn_flat(p, t["dy"]), x, scale, None, None, mean,
                                                        invstd, True, BN_EPSILON, [True, True, True])
    return {"dx": dx.reshape(t["x"].shape), "dscale": dscale.reshape(pshape), "dbias": dbias.reshape(pshape)}


_F32_EPS = 1.1920928955078125e-07


def torch_activation(p: ActivationProblem, t: dict[str, Any]) -> dict[str, Any]:
    """MIOpen's ten activation modes with torch ops; backward by autograd, except POWER,
    whose MIOpen gradient is ``gamma*beta*y/(alpha+beta*x)`` without dy (MIOpen's own
    definition, kept so the comparison is with what MIOpen computes)."""
    import torch
    import torch.nn.functional as F
    a, b, g = p.alpha, p.beta, p.gamma
    mode = p.mode

    def forward(x: Any) -> Any:
        if mode == 0:
            return x * 1
        if mode == 1:
            return torch.sigmoid(x)
        if mode == 2:
            return b * torch.tanh(a * x)
        if mode == 3:
            return F.relu(x)
        if mode == 4:
            return F.softplus(x)
        if mode == 5:
            return torch.abs(x)
        if mode == 6:
            v = a + b * x
            ok = v > _F32_EPS
            return torch.where(ok, torch.where(ok, v, torch.ones_like(v)) ** g, torch.zeros_like(v))
        if mode == 7:
            return torch.clamp(torch.clamp(x, min=0), max=a)
        if mode == 8:
            return F.leaky_relu(x, a)
        if mode == 9:
            return F.elu(x, a)
        raise NotImplementedError(f"activation mode {mode}")

    if p.direction == "fwd":
        return {"y": forward(t["x"])}
    if mode == 6:
        x = t["x"]
        v = a + b * x
        ok = v > _F32_EPS
        return {"dx": torch.where(ok, g * b * forward(x) / torch.where(ok, v, torch.ones_like(v)),
                                  torch.zeros_like(v))}
    if mode == 2 and abs(b) <= _F32_EPS:
        return {"dx": torch.zeros_like(t["x"])}
    with torch.enable_grad():
        x = t["x"].detach().requires_grad_(True)
        (dx,) = torch.autograd.grad(forward(x), x, t["dy"])
    return {"dx": dx}


def torch_lrn(p: LRNProblem, t: dict[str, Any]) -> dict[str, Any]:
    """MIOpen LRN from torch pooling: the window sum of x^2 over [c-pre, c+post] channels
    (cross) or an N x N zero-padded spatial window (within), pre = (N-1)//2; scale =
    K + alpha/area * sum; y = x * scale^-beta.  torch's own ``local_response_norm``
    centres even windows the other way, so it is not used.  Backward: autograd."""
    import torch
    import torch.nn.functional as F
    n = p.lrn_n
    pre = (n - 1) // 2
    post = n - 1 - pre

    def forward(x: Any) -> Any:
        sq = x * x
        if p.mode == "cross":
            padded = F.pad(sq.unsqueeze(1), [0, 0, 0, 0, pre, post])
            total = F.avg_pool3d(padded, (n, 1, 1), stride=1).squeeze(1) * n
            area = n
        else:
            padded = F.pad(sq, [pre, post, pre, post])
            total = F.avg_pool2d(padded, (n, n), stride=1) * (n * n)
            area = n * n
        scale = p.k + (p.alpha / area) * total
        return x * scale ** (-p.beta)

    if p.direction == "fwd":
        return {"y": forward(t["x"])}
    with torch.enable_grad():
        x = t["x"].detach().requires_grad_(True)
        (dx,) = torch.autograd.grad(forward(x), x, t["dy"])
    return {"dx": dx}


def torch_softmax(p: SoftmaxProblem, t: dict[str, Any]) -> dict[str, Any]:
    """Softmax with torch's kernels: mode 0 over C*H*W per image, mode 1 over C per
    pixel; algorithm 2 is log-softmax; 0 (fast) and 1 (accurate) are the same function.
    Backward from y = softmax(x) with ATen's softmax backward; both scaled by alpha."""
    import torch
    aten = torch.ops.aten
    x = t["x"]
    shape = x.shape
    xv = x.reshape(shape[0], -1) if p.mode == 0 else x
    log = p.algorithm == 2
    y = torch.log_softmax(xv, dim=1) if log else torch.softmax(xv, dim=1)
    if p.direction == "fwd":
        return {"y": (p.alpha * y).reshape(shape)}
    dy = t["dy"].reshape(xv.shape)
    if log:
        dx = aten._log_softmax_backward_data(dy, y, 1, y.dtype)
    else:
        dx = aten._softmax_backward_data(dy, y, 1, y.dtype)
    return {"dx": (p.alpha * dx).reshape(shape)}


def torch_run(problem: Problem, t: dict[str, Any], state: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """Run one problem with its family's torch op (inputs/outputs by MIOpen name).

    ``state`` is what :func:`torch_prepare` set up for the layer (an RNN's module and,
    backward, its forward graph): passed to the families that prepare one; without it an
    RNN sets itself up on this call.  The op is looked up when called (tests replace one to
    check that the comparison can fail)."""
    family = _family(problem)
    if not family.torch_op.applies:
        raise NotImplementedError(f"torch backend: no implementation for {type(problem).__name__}")
    if family.torch_prepare.applies:
        return family.torch_op(problem, t, state)
    return family.torch_op(problem, t)


def _family(problem: Problem) -> Family:
    try:
        return family_of(problem)
    except UnknownFamily:
        raise NotImplementedError(f"torch backend: no implementation for {type(problem).__name__}") from None


def torch_describe(problem: Problem) -> str:
    """What a result's engine should add about how torch ran the layer ("" for most)."""
    entry = _family(problem).torch_describe
    return entry(problem) if entry.applies else ""


def torch_rnn_describe(problem: RNNProblem) -> str:
    """The rnn family's torch_describe: the module, and how skip input and backward run."""
    parts = [f"nn.{ {'lstm': 'LSTM', 'gru': 'GRU'}.get(problem.mode, 'RNN') }"]
    if problem.input_mode == "skip":
        parts.append("skip input as identity input matrices")
    if problem.direction != "fwd":
        parts.append("backward timed over a forward graph built before timing")
    return " (" + "; ".join(parts) + ")"


def torch_prepare(problem: Problem, t: dict[str, Any], state: dict[str, Any]) -> None:
    """Untimed set-up before the timed calls, where the family has one: an RNN's module with
    MIOpen's parameters loaded and, for a backward pass, its forward graph (MIOpen's backward
    likewise starts from the reserve space of a forward call it does not time)."""
    entry = _family(problem).torch_prepare
    if entry.applies:
        entry(problem, t, state)


def torch_fusion(p: FusionProblem, t: dict[str, Any]) -> dict[str, Any]:
    """A CBAInfer plan as torch's own ops, unfused: convolution, bias, batch norm
    (inference, CBAInfer's epsilon) and the plan's activation, the parts MIOpen fuses
    into one kernel."""
    import torch
    import torch.nn.functional as F

    from miotui.execute.reference_basic import FUSION_BN_EPSILON
    h = torch_conv(p.conv, {"x": t["x"], "w": t["w"]})["y"] if p.has_conv else t["x"]
    if "bias" in t:
        h = h + t["bias"]
    if p.bn_mode == "spatial":
        flat = [t[name].reshape(-1) for name in ("est_mean", "est_var", "scale", "bn_bias")]
        h = F.batch_norm(h, flat[0], flat[1], flat[2], flat[3], training=False, eps=FUSION_BN_EPSILON)
    elif p.bn_mode == "per_activation":
        h = t["scale"] * (h - t["est_mean"]) / torch.sqrt(t["est_var"] + FUSION_BN_EPSILON) + t["bn_bias"]
    if p.fusion_mode in FUSION_ACTIV_MODES:
        activ = ActivationProblem("fwd", p.dtype, h.shape[0], h.shape[1], tuple(h.shape[2:]), p.activ_mode,
                                  p.activ_alpha, p.activ_beta, p.activ_gamma)
        h = torch_activation(activ, {"x": h})["y"]
    return {"y": h}


"""Layer norm (plain, add, T5), group norm: the reference against MIOpenDriver's host
formulas written out independently and against torch in float64; runs end to end; n/a
for the backward passes MIOpen does not have."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miotui.execute import guard
from miotui.execute import reference as R
from miotui.execute.backends import RunSettings, get_backend, run_layer
from miotui.execute.layer_shapes import layernorm_shapes
from miotui.problems import GroupNormProblem, LayerNormProblem

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _close(a, b, tol: float = 1e-10) -> None:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = max(float(np.max(np.abs(b))), 1e-3)     # inputs are O(1): a gradient that is 0 stays near it
    assert float(np.max(np.abs(a - b))) / scale <= tol


def _inputs(p, seed: int) -> dict[str, np.ndarray]:
    """Random values of both signs (not the driver's [0, 1)), statistics consistent with x."""
    rng = np.random.default_rng(seed)
    t = {k: rng.uniform(-1.5, 1.5, size=s) for k, s in layernorm_shapes(p)[0].items()}
    if "rstd" in t:
        x = t["x"].reshape(t["rstd"].size, -1)
        if p.variant == "t5layernorm":
            t["rstd"] = (1 / np.sqrt((x * x).mean(1) + p.eps)).reshape(t["rstd"].shape)
        else:
            t["mean"] = x.mean(1).reshape(t["mean"].shape)
            t["rstd"] = (1 / np.sqrt(x.var(1) + p.eps)).reshape(t["rstd"].shape)
    return t


# MIOpenDriver's host formulas, as its driver headers write them (single pass E[x^2] - mean^2,
# the backward through the a, b coefficients): an independent statement of the same math.

def host_layernorm_fwd(x, w, b, inner, eps, affine):
    xv = x.reshape(-1, inner)
    mean = xv.sum(1) / inner
    var = (xv * xv).sum(1) / inner - mean * mean
    rstd = 1 / np.sqrt(var + eps)
    wv = w.reshape(-1) if affine else 1.0
    bv = b.reshape(-1) if affine else 0.0
    return ((xv - mean[:, None]) * rstd[:, None] * wv + bv).reshape(x.shape), mean, rstd


def host_layernorm_bwd(dy, x, w, mean, rstd, inner, affine):
    dyv, xv = dy.reshape(-1, inner), x.reshape(-1, inner)
    wv = w.reshape(-1) if affine else np.ones(inner)
    m, r = mean.reshape(-1, 1), rstd.reshape(-1, 1)
    s1 = (dyv * wv).sum(1, keepdims=True)
    s2 = (dyv * xv * wv).sum(1, keepdims=True)
    a = r ** 3 / inner * (s2 - s1 * m)
    b = r * s1 / inner - a * m
    dx = r * dyv * wv - a * xv - b
    return dx.reshape(x.shape), (dyv * (xv - m) * r).sum(0), dyv.sum(0)


def host_t5_bwd(dy, x, w, rstd, inner, affine):
    dyv, xv = dy.reshape(-1, inner), x.reshape(-1, inner)
    wv = w.reshape(-1) if affine else np.ones(inner)
    r = rstd.reshape(-1, 1)
    a = (dyv * xv * wv).sum(1, keepdims=True) * r ** 3 / inner
    return (r * dyv * wv - a * xv).reshape(x.shape), (dyv * xv * r).sum(0)


@st.composite
def layernorm_problems(draw):
    variant = draw(st.sampled_from(("layernorm", "addlayernorm", "t5layernorm")))
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    nd = draw(st.integers(0, rank - 1))
    base = {"layernorm": 0, "addlayernorm": 2, "t5layernorm": 4}[variant]
    mode = base + draw(st.integers(0, 1))
    direction = "fwd" if variant == "addlayernorm" else draw(st.sampled_from(("fwd", "bwd")))
    return LayerNormProblem(direction, "fp64", shape, normalized_dim=nd, eps=draw(st.sampled_from((1e-5, 1e-3))),
                            mode=mode, variant=variant)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=layernorm_problems(), seed=st.integers(0, 1000))
def test_layernorm_matches_the_host_formulas_and_torch(p, seed):
    t = _inputs(p, seed)
    ref = R.run_reference(p, t, precision="fp64")
    affine = p.mode % 2 == 1
    t5 = p.variant == "t5layernorm"
    inner = p.shape[-1] if t5 else int(np.prod(p.shape[p.normalized_dim:]))
    ns = list(p.shape[-1:] if t5 else p.shape[p.normalized_dim:])
    tx = torch.from_numpy(t["x"])
    w = torch.from_numpy(t["weight"]) if affine else None
    if p.direction == "fwd":
        x = t["x"] + t["x2"] if p.variant == "addlayernorm" else t["x"]
        if t5:
            rstd = 1 / np.sqrt((x.reshape(-1, inner) ** 2).mean(1) + p.eps)
            want = (x.reshape(-1, inner) * rstd[:, None] * (t["weight"] if affine else 1)).reshape(x.shape)
            _close(ref["y"], want)
            _close(ref["rstd"].reshape(-1), rstd)
            _close(ref["y"], F.rms_norm(tx, ns, w, p.eps).numpy())
            return
        y, mean, rstd = host_layernorm_fwd(x, t["weight"], t["bias"], inner, p.eps, affine)
        _close(ref["y"], y, 1e-8)
        _close(ref["mean"].reshape(-1), mean, 1e-8)
        _close(ref["rstd"].reshape(-1), rstd, 1e-8)
        b = torch.from_numpy(t["bias"]) if affine else None
        _close(ref["y"], F.layer_norm(torch.from_numpy(x), ns, w, b, p.eps).numpy())
        return
    with torch.enable_grad():
        xg = tx.clone().requires_grad_(True)
        wg = (torch.from_numpy(t["weight"]) if affine else torch.ones(ns, dtype=torch.float64)).requires_grad_(True)
        if t5:
            dx, dw = host_t5_bwd(t["dy"], t["x"], t["weight"], t["rstd"], inner, affine)
            _close(ref["dx"], dx)
            _close(ref["dw"].reshape(-1), dw)
            y = F.rms_norm(xg, ns, wg, p.eps)
            tdx, tdw = torch.autograd.grad(y, (xg, wg), torch.from_numpy(t["dy"]))
            _close(ref["dx"], tdx.numpy())
            _close(ref["dw"], tdw.numpy())
            return
        dx, dw, db = host_layernorm_bwd(t["dy"], t["x"], t["weight"], t["mean"], t["rstd"], inner, affine)
        _close(ref["dx"], dx, 1e-8)
        _close(ref["dw"].reshape(-1), dw, 1e-8)
        _close(ref["db"].reshape(-1), db)
        bg = torch.zeros(ns, dtype=torch.float64, requires_grad=True)
        y = F.layer_norm(xg, ns, wg, bg, p.eps)
        tdx, tdw, tdb = torch.autograd.grad(y, (xg, wg, bg), torch.from_numpy(t["dy"]))
        _close(ref["dx"], tdx.numpy())
        _close(ref["dw"], tdw.numpy())
        _close(ref["db"], tdb.numpy())


def test_modes_without_parameters_ignore_the_weight_and_bias():
    p0 = LayerNormProblem("fwd", "fp64", (3, 4, 5), normalized_dim=1, mode=0)
    t = _inputs(p0, 1)
    ones = dict(t, weight=np.ones_like(t["weight"]), bias=np.zeros_like(t["bias"]))
    _close(R.run_reference(p0, t, precision="fp64")["y"], R.run_reference(p0, ones, precision="fp64")["y"], 0)
    p1 = LayerNormProblem("fwd", "fp64", (3, 4, 5), normalized_dim=1, mode=1)
    assert not np.allclose(R.run_reference(p1, t, precision="fp64")["y"],
                           R.run_reference(p1, ones, precision="fp64")["y"])


def test_t5_normalises_the_last_dimension_whatever_normalized_dim_says():
    p = LayerNormProblem("fwd", "fp64", (2, 3, 4), normalized_dim=1, mode=4, variant="t5layernorm")
    t = _inputs(p, 2)
    assert t["weight"].shape == (4,)
    out = R.run_reference(p, t, precision="fp64")
    assert out["rstd"].shape == (2, 3)
    x = t["x"]
    _close(out["y"], x / np.sqrt((x * x).mean(-1, keepdims=True) + p.eps))


@pytest.mark.parametrize("mode", [0, 1])
def test_groupnorm_matches_torch(mode):
    for shape, groups in (((2, 6, 4, 3), 3), ((3, 4, 2, 2, 2), 2), ((2, 5, 7), 5), ((1, 4), 1)):
        p = GroupNormProblem("fwd", "fp64", shape, num_groups=groups, eps=1e-4, mode=mode)
        rng = np.random.default_rng(3)
        t = {"x": rng.uniform(-2, 2, size=shape), "weight": rng.uniform(0, 1, size=shape[1]),
             "bias": rng.uniform(0, 1, size=shape[1])}
        out = R.run_reference(p, t, precision="fp64")
        w = torch.from_numpy(t["weight"]) if mode else None
        b = torch.from_numpy(t["bias"]) if mode else None
        _close(out["y"], F.group_norm(torch.from_numpy(t["x"]), groups, w, b, 1e-4).numpy())
        xg = t["x"].reshape(shape[0] * groups, -1)
        _close(out["mean"].reshape(-1), xg.mean(1))
        _close(out["rstd"].reshape(-1), 1 / np.sqrt(xg.var(1) + 1e-4))
        assert out["mean"].shape == (shape[0], groups)


# ----------------------------------------------------------------------------- end to end

NORM_LAYERS = [
    LayerNormProblem("fwd", "fp32", (4, 16, 24), normalized_dim=1, mode=1),
    LayerNormProblem("fwd", "fp32", (4, 16, 24), normalized_dim=2, mode=0),
    LayerNormProblem("bwd", "fp32", (4, 16, 24), normalized_dim=2, mode=1),
    LayerNormProblem("fwd", "fp16", (8, 64), normalized_dim=1, mode=3, variant="addlayernorm"),
    LayerNormProblem("fwd", "bf16", (8, 64), normalized_dim=1, mode=5, variant="t5layernorm"),
    LayerNormProblem("bwd", "fp32", (8, 4, 64), mode=5, variant="t5layernorm"),
    GroupNormProblem("fwd", "fp32", (4, 8, 6, 6), num_groups=4, mode=1),
    GroupNormProblem("fwd", "fp16", (2, 6, 5), num_groups=3, mode=0),
]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("p", NORM_LAYERS, ids=lambda p: f"{p.op}-{p.direction}-{p.dtype}")
def test_run_layer_verifies(backend, p):
    res = run_layer(p, RunSettings(backend=backend, iters=2), use_cache=False)
    assert res.status == "ok", res.message
    v = res.verification
    assert v.ok and v.error <= v.tolerance
    assert v.tolerance == {"fp32": 1.5e-6, "fp16": 8.2e-3, "bf16": 8.2e-3 * 8}[p.dtype]
    assert "_driver GetTolerance" in v.how
    outs = ("y", "mean", "rstd") if p.direction == "fwd" else ("dx", "dw")
    for name in outs:
        if not (name == "mean" and getattr(p, "variant", "") == "t5layernorm"):
            assert f"{name} " in v.how


@pytest.mark.parametrize("p", [GroupNormProblem("bwd", "fp32", (2, 4, 3), num_groups=2),
                               LayerNormProblem("bwd", "fp32", (2, 8), variant="addlayernorm", mode=2)])
def test_backward_passes_miopen_lacks_are_not_applicable(p):
    for backend in ("numpy", "torch", "auto"):
        res = run_layer(p, RunSettings(backend=backend, iters=1), use_cache=False)
        assert res.status == "n/a" and "MIOpen has no" in res.message


def test_inputs_are_named_like_miopen():
    fwd = LayerNormProblem("fwd", "fp32", (2, 3, 4), normalized_dim=1, mode=3, variant="addlayernorm")
    assert R.tensor_names(fwd) == (("x", "x2", "weight", "bias"), ("y", "mean", "rstd"))
    bwd = LayerNormProblem("bwd", "fp16", (2, 3, 4), normalized_dim=1, mode=1)
    inputs = R.make_inputs(bwd, 0)
    assert list(inputs) == ["dy", "x", "weight", "mean", "rstd"]
    assert inputs["mean"].shape == (2,) and inputs["weight"].shape == (3, 4) and inputs["x"].dtype == np.float16
    x = inputs["x"].astype(np.float64).reshape(2, -1)
    assert np.allclose(inputs["mean"].astype(np.float64), x.mean(1), rtol=1e-3)   # what a forward saved
    gn = GroupNormProblem("fwd", "fp32", (2, 4, 3), num_groups=2)
    assert R.tensor_names(gn) == (("x", "weight", "bias"), ("y", "mean", "rstd"))
    assert np.all(R.make_inputs(gn, 0)["weight"] == 1)       # mode 0: fixed parameters


def test_with_batch_resizes_the_first_dimension():
    p = LayerNormProblem("fwd", "fp32", (32, 128, 768), normalized_dim=2)
    assert guard.with_batch(p, 4).shape == (4, 128, 768)
    g = GroupNormProblem("fwd", "fp32", (16, 32, 8, 8), num_groups=8)
    assert guard.with_batch(g, 2).shape == (2, 32, 8, 8)
    res = run_layer(p, RunSettings(backend="numpy", iters=1, batch=2), use_cache=False)
    assert res.status == "ok" and res.problem.shape == (2, 128, 768) and "N=2" in res.note
    check = guard.check_memory(LayerNormProblem("fwd", "fp32", (65536, 4096, 64)), get_backend("numpy"), available=4 << 30)
    assert not check.ok and 1 <= (check.suggested_batch or 0) < 65536
    assert "along the first dimension" in check.message

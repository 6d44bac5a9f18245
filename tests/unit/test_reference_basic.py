"""Pooling, batch norm, activation, LRN, softmax and fusion references against torch (float64)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from miotui.execute import numba_kernels
from miotui.execute import reference as R
from miotui.execute import reference_basic as O
from miotui.problems import (
    ActivationProblem,
    BatchNormProblem,
    FusionProblem,
    LRNProblem,
    PoolProblem,
    ProblemError,
    SoftmaxProblem,
)

torch = pytest.importorskip("torch")
F = torch.nn.functional

ENGINES = ["numpy"] + (["numba"] if numba_kernels.available() is None else [])


def _t(a: np.ndarray, grad: bool = False) -> "torch.Tensor":
    t = torch.from_numpy(np.array(a, dtype=np.float64))
    return t.requires_grad_(True) if grad else t


def _close(a: np.ndarray, b: np.ndarray, tol: float = 1e-10) -> None:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    scale = max(float(np.max(np.abs(b))), 1e-30)
    assert float(np.max(np.abs(a - b))) / scale < tol


def _run(p, inputs, **kw) -> np.ndarray:
    out = R.run_reference(p, inputs, precision="fp64", **kw)
    assert len(out) == 1
    return next(iter(out.values()))


# ----------------------------------------------------------------------------- pooling

@st.composite
def pool_problems(draw):
    nd = draw(st.sampled_from((2, 2, 3)))
    window = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    pads = tuple(draw(st.integers(0, w // 2)) for w in window)   # torch: pad <= window/2
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    in_sp = tuple(draw(st.integers(w, 7 if nd == 2 else 5)) for w in window)   # torch: input >= window
    try:
        p = PoolProblem(draw(st.sampled_from(("fwd", "bwd"))), "fp32", draw(st.integers(1, 2)),
                        draw(st.integers(1, 3)), in_sp, window, pads, strides,
                        mode=draw(st.sampled_from(("max", "avg", "avg_in"))))
    except ProblemError:
        assume(False)
        raise
    return p


def torch_pool(p: PoolProblem, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = _t(inputs["x"], grad=True)
    nd = len(p.in_spatial)
    if p.mode == "max":
        y = (F.max_pool2d if nd == 2 else F.max_pool3d)(x, p.window, p.strides, p.pads)
    else:
        y = (F.avg_pool2d if nd == 2 else F.avg_pool3d)(x, p.window, p.strides, p.pads,
                                                         count_include_pad=p.mode == "avg_in")
    if p.direction == "fwd":
        return y.detach().numpy()
    y.backward(_t(inputs["dy"]))
    return x.grad.numpy()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=pool_problems(), seed=st.integers(0, 3))
def test_pooling_matches_torch(p: PoolProblem, seed: int) -> None:
    inputs = R.make_inputs(p, seed)
    expect = torch_pool(p, inputs)
    for engine in ENGINES:
        _close(_run(p, inputs, engine=engine), expect)
        (out32,) = R.run_reference(p, inputs, engine=engine).values()
        assert out32.dtype == np.float32
        _close(out32, expect, 1e-6)


def test_max_pool_ties_go_to_the_first_maximum() -> None:
    p = PoolProblem("bwd", "fp32", 1, 1, (2, 4), (2, 2), (0, 0), (2, 2))
    x = np.zeros(p.input_shape, np.float32)
    dy = np.ones(p.output_shape, np.float32)
    for engine in ENGINES:
        dx = R.run_reference(p, {"x": x, "dy": dy}, engine=engine)["dx"]
        assert dx[0, 0].tolist() == [[1, 0, 1, 0], [0, 0, 0, 0]]


# ----------------------------------------------------------------------------- activation

def _torch_activation(mode: int, x: "torch.Tensor", a: float, b: float, g: float) -> "torch.Tensor":
    return [
        lambda: x * 1,
        lambda: torch.sigmoid(x),
        lambda: b * torch.tanh(a * x),
        lambda: F.relu(x),
        lambda: F.softplus(x),
        lambda: torch.abs(x),
        lambda: torch.where(a + b * x > 0, (a + b * x).clamp(min=1e-300) ** g, torch.zeros_like(x)),
        lambda: torch.clamp(x, 0, a),
        lambda: F.leaky_relu(x, a),
        lambda: F.elu(x, a),
    ][mode]()


@pytest.mark.parametrize("mode", range(10))
@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def test_activation_matches_torch(mode: int, direction: str) -> None:
    a, b, g = 0.7, 1.3, 2.5
    p = ActivationProblem(direction, "fp32", 2, 3, (5, 6), mode=mode, alpha=a, beta=b, gamma=g)
    inputs = R.make_inputs(p, mode)
    assert set(inputs) == set(R.tensor_names(p)[0])
    x = _t(inputs["x"], grad=True)
    y = _torch_activation(mode, x, a, b, g)
    if direction == "fwd":
        expect = y.detach().numpy()
    else:
        # MIOpen's POWER backward is gamma*beta*y/(alpha+beta*x): the derivative, not times dy
        y.backward(torch.ones_like(y) if mode == 6 else _t(inputs["dy"]))
        expect = x.grad.numpy()
    _close(_run(p, inputs), expect)


def test_activation_inputs_stay_off_the_kinks() -> None:
    p = ActivationProblem("fwd", "fp16", 4, 4, (8, 8), mode=7, alpha=1.5)   # CLIPPEDRELU
    x = R.make_inputs(p)["x"].astype(np.float64)
    assert x.dtype == np.float64 and np.all((np.abs(x) > 1e-3) & (np.abs(x - 1.5) > 1e-3))


# ----------------------------------------------------------------------------- batch norm

@pytest.mark.parametrize("mode", ["spatial", "per_activation"])
@pytest.mark.parametrize("spatial", [(4, 5), (2, 3, 4)])
def test_batchnorm_forward_training_and_inference(mode: str, spatial: tuple[int, ...]) -> None:
    train = BatchNormProblem("fwd_train", "fp32", 3, 4, spatial, mode=mode, save=True, running=True)
    inputs = R.make_inputs(train, 1)
    out = R.run_reference(train, inputs, precision="fp64")
    assert set(out) == set(R.tensor_names(train)[1])
    x = _t(inputs["x"])
    axes = [0] + list(range(2, 2 + len(spatial))) if mode == "spatial" else [0]
    mean = x.mean(axes, keepdim=True)
    var = x.var(axes, unbiased=False, keepdim=True)
    if mode == "spatial":   # torch's own batch norm agrees, including the running update
        rm, rv = _t(inputs["running_mean"]).reshape(-1).clone(), _t(inputs["running_var"]).reshape(-1).clone()
        y = F.batch_norm(x, rm, rv, _t(inputs["scale"]).reshape(-1), _t(inputs["bias"]).reshape(-1),
                         training=True, momentum=O.BN_EXP_AVG_FACTOR, eps=O.BN_EPSILON)
        _close(out["running_mean"].reshape(-1), rm.numpy())
        _close(out["running_var"].reshape(-1), rv.numpy())
    else:
        y = _t(inputs["scale"]) * (x - mean) / torch.sqrt(var + O.BN_EPSILON) + _t(inputs["bias"])
        m = x.shape[0]
        _close(out["running_var"], (0.9 * _t(inputs["running_var"]) + 0.1 * var * m / (m - 1)).numpy())
    _close(out["y"], y.numpy())
    _close(out["saved_mean"], mean.numpy())
    _close(out["saved_inv_var"], (1 / torch.sqrt(var + O.BN_EPSILON)).numpy())
    infer = BatchNormProblem("fwd_infer", "fp32", 3, 4, spatial, mode=mode)
    inputs = R.make_inputs(infer, 2)
    y = _t(inputs["scale"]) * (_t(inputs["x"]) - _t(inputs["est_mean"])) / \
        torch.sqrt(_t(inputs["est_var"]) + O.BN_EPSILON) + _t(inputs["bias"])
    _close(_run(infer, inputs), y.numpy())


@pytest.mark.parametrize("mode", ["spatial", "per_activation"])
@pytest.mark.parametrize("save", [False, True])
def test_batchnorm_backward_matches_autograd(mode: str, save: bool) -> None:
    p = BatchNormProblem("bwd", "fp32", 3, 4, (4, 5), mode=mode, save=save)
    inputs = R.make_inputs(p, 3)
    assert set(inputs) == set(R.tensor_names(p)[0])
    out = R.run_reference(p, inputs, precision="fp64")
    x = _t(inputs["x"], grad=True)
    scale = _t(inputs["scale"], grad=True)
    bias = torch.zeros_like(scale, requires_grad=True)
    axes = [0, 2, 3] if mode == "spatial" else [0]
    mean = x.mean(axes, keepdim=True)
    var = x.var(axes, unbiased=False, keepdim=True)
    y = scale * (x - mean) / torch.sqrt(var + O.BN_EPSILON) + bias
    y.backward(_t(inputs["dy"]))
    tol = 1e-6 if save else 1e-10   # saved statistics are stored rounded to fp32
    _close(out["dx"], x.grad.numpy(), tol)
    _close(out["dscale"], scale.grad.numpy(), tol)
    _close(out["dbias"], bias.grad.numpy(), tol)


# ----------------------------------------------------------------------------- LRN

def _lrn_loop(x: np.ndarray, p: LRNProblem) -> np.ndarray:
    """Direct loops over MIOpen's windows (pre = (N-1)//2 before, N-1-pre after)."""
    n_, c_, h_, w_ = x.shape
    pre = (p.lrn_n - 1) // 2
    post = p.lrn_n - 1 - pre
    y = np.empty_like(x)
    for n in range(n_):
        for c in range(c_):
            for i in range(h_):
                for j in range(w_):
                    if p.mode == "cross":
                        lo, hi = max(0, c - pre), min(c_, c + post + 1)
                        s = np.sum(x[n, lo:hi, i, j] ** 2)
                        area = p.lrn_n
                    else:
                        s = np.sum(x[n, c, max(0, i - pre):i + post + 1, max(0, j - pre):j + post + 1] ** 2)
                        area = p.lrn_n ** 2
                    y[n, c, i, j] = x[n, c, i, j] * (p.k + p.alpha / area * s) ** -p.beta
    return y


def _torch_lrn_within(x: "torch.Tensor", p: LRNProblem) -> "torch.Tensor":
    pre = (p.lrn_n - 1) // 2
    post = p.lrn_n - 1 - pre
    sq = F.pad(x * x, (pre, post, pre, post)).reshape(-1, 1, x.shape[2] + p.lrn_n - 1, x.shape[3] + p.lrn_n - 1)
    s = F.conv2d(sq, torch.ones(1, 1, p.lrn_n, p.lrn_n, dtype=x.dtype)).reshape(x.shape)
    return x * (p.k + p.alpha / p.lrn_n ** 2 * s) ** -p.beta


@pytest.mark.parametrize("lrn_n", [1, 3, 4, 5])
@pytest.mark.parametrize("mode", ["cross", "within"])
def test_lrn_forward_and_backward(lrn_n: int, mode: str) -> None:
    fwd = LRNProblem("fwd", "fp32", 2, 6, (4, 5), mode=mode, lrn_n=lrn_n, alpha=0.4, beta=0.75, k=1.5)
    inputs = R.make_inputs(fwd, lrn_n)
    _close(_run(fwd, inputs), _lrn_loop(inputs["x"].astype(np.float64), fwd))
    bwd = LRNProblem("bwd", "fp32", 2, 6, (4, 5), mode=mode, lrn_n=lrn_n, alpha=0.4, beta=0.75, k=1.5)
    inputs = R.make_inputs(bwd, lrn_n)
    x = _t(inputs["x"], grad=True)
    if mode == "cross" and lrn_n % 2 == 1:   # torch's window matches MIOpen's for odd N
        y = F.local_response_norm(x, lrn_n, alpha=0.4, beta=0.75, k=1.5)
        _close(y.detach().numpy(), _lrn_loop(inputs["x"].astype(np.float64), fwd))
    elif mode == "within":
        y = _torch_lrn_within(x, bwd)
    else:
        pytest.skip("torch has no even-N cross-channel LRN with MIOpen's window")
    y.backward(_t(inputs["dy"]))
    _close(_run(bwd, inputs), x.grad.numpy())


# ----------------------------------------------------------------------------- softmax

@pytest.mark.parametrize("algorithm", [0, 1, 2])
@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def test_softmax_matches_torch(algorithm: int, mode: int, direction: str) -> None:
    p = SoftmaxProblem(direction, "fp32", 2, 5, (3, 4), algorithm=algorithm, mode=mode, alpha=1.5)
    inputs = R.make_inputs(p, algorithm)
    x = _t(inputs["x"], grad=True)
    flat = x.reshape(2, -1) if mode == 0 else x
    y = 1.5 * (F.log_softmax if algorithm == 2 else F.softmax)(flat, dim=1).reshape(x.shape)
    if direction == "fwd":
        expect = y.detach().numpy()
    else:
        y.backward(_t(inputs["dy"]))
        expect = x.grad.numpy()
    _close(_run(p, inputs), expect)


# ----------------------------------------------------------------------------- fusion

@pytest.mark.parametrize("fusion_mode", range(7))
def test_fusion_runs_as_its_parts(fusion_mode: int) -> None:
    p = FusionProblem(fusion_mode, "fp32", 2, 4, (6, 6), k=6, filter=(3, 3), pads=(1, 1), strides=(2, 1),
                      dilations=(1, 1), groups=2, bn_mode="per_activation")
    inputs = R.make_inputs(p, fusion_mode)
    assert set(inputs) == set(R.tensor_names(p)[0])
    h = _t(inputs["x"])
    if p.has_conv:
        h = F.conv2d(h, _t(inputs["w"]), stride=(2, 1), padding=1, groups=2)
    if "bias" in inputs:
        h = h + _t(inputs["bias"])
    if "scale" in inputs:
        h = _t(inputs["scale"]) * (h - _t(inputs["est_mean"])) / \
            torch.sqrt(_t(inputs["est_var"]) + O.FUSION_BN_EPSILON) + _t(inputs["bn_bias"])
    if fusion_mode in (0, 1, 2, 4, 5):
        h = F.relu(h)   # CBAInfer's default activation
    _close(_run(p, inputs), h.numpy())


def test_fusion_applies_the_plans_own_activation() -> None:
    p = FusionProblem(1, "fp32", 2, 4, (6, 6), k=6, filter=(3, 3), pads=(1, 1), strides=(1, 1),
                      dilations=(1, 1), bn_mode="spatial", activ_mode=8, activ_alpha=0.25)
    inputs = R.make_inputs(p, 1)
    h = F.conv2d(_t(inputs["x"]), _t(inputs["w"]), padding=1)
    h = _t(inputs["scale"]) * (h - _t(inputs["est_mean"])) / \
        torch.sqrt(_t(inputs["est_var"]) + O.FUSION_BN_EPSILON) + _t(inputs["bn_bias"])
    _close(_run(p, inputs), F.leaky_relu(h, 0.25).numpy())


# ----------------------------------------------------------------------------- common

ALL_KINDS = [
    PoolProblem("bwd", "fp16", 2, 3, (6, 6), (2, 2), (0, 0), (2, 2)),
    BatchNormProblem("fwd_train", "bf16", 2, 3, (4, 4), save=True, running=True, param_dtype="fp32"),
    ActivationProblem("bwd", "fp16", 2, 3, (4, 4), mode=9),
    LRNProblem("bwd", "fp16", 2, 3, (4, 4)),
    SoftmaxProblem("bwd", "fp32", 2, 3, (4, 4)),
    FusionProblem(0, "fp16", 2, 3, (6, 6), k=4, filter=(3, 3), pads=(1, 1), strides=(1, 1), dilations=(1, 1)),
]


@pytest.mark.parametrize("p", ALL_KINDS, ids=lambda p: p.op)
def test_every_kind_runs_in_both_precisions_with_its_declared_tensors(p) -> None:
    ins, outs = R.tensor_names(p)
    inputs = R.make_inputs(p, 0)
    assert set(inputs) == set(ins)
    if p.dtype == "fp16":
        assert inputs["x"].dtype == np.float16
    a32 = R.run_reference(p, inputs)
    a64 = R.run_reference(p, inputs, precision="fp64")
    assert set(a32) == set(a64) == set(outs)
    for name in outs:
        assert a32[name].dtype == np.float32 and a64[name].dtype == np.float64
        _close(a32[name], a64[name], 1e-4)
    assert R.peak_bytes(p) > sum(a.nbytes for a in inputs.values())
    ev = threading.Event()
    ev.set()
    with pytest.raises(R.Cancelled):
        R.run_reference(p, inputs, cancel=ev)


def test_int8_pooling_is_refused_with_a_reason() -> None:
    p = PoolProblem("fwd", "int8", 1, 1, (4, 4), (2, 2), (0, 0), (2, 2))
    with pytest.raises(R.ReferenceUnsupported, match="int8"):
        R.run_reference(p, {"x": np.zeros(p.input_shape, np.int8)})

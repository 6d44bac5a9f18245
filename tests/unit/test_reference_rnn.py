"""The RNN reference (vanilla, LSTM, GRU) against torch in float64, against hand-written
cells read straight from MIOpen's parameter layout, and against finite differences; the
runs end to end on numpy and torch; n/a and the memory guard."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miotui.execute import guard
from miotui.execute import reference as R
from miotui.execute.backends import RunSettings, get_backend, run_layer
from miotui.execute.layer_shapes import rnn_sample_lengths, rnn_shapes, rnn_step_batches
from miotui.execute.rnn_layout import seq_packing, weight_views
from miotui.execute.runner import clear_cache
from miotui.problems import ProblemError, RNNProblem

torch = pytest.importorskip("torch")
from miotui.execute.torch_rnn import torch_rnn  # noqa: E402  (needs torch)

MODES = ("relu", "tanh", "lstm", "gru")


def _inputs(p: RNNProblem, seed: int = 0, scale: float = 1.0) -> dict[str, np.ndarray]:
    """Unit-scale values (the driver's 0.01 scale would make every cell nearly linear),
    padding positions included: the computation must ignore them."""
    rng = np.random.default_rng(seed)
    return {k: rng.uniform(-scale, scale, size=s) for k, s in rnn_shapes(p)[0].items()}


def _torch(p: RNNProblem, t: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    got = torch_rnn(p, {k: torch.from_numpy(v.copy()) for k, v in t.items()})
    return {k: v.detach().numpy() for k, v in got.items()}


def _close(a: np.ndarray, b: np.ndarray, tol: float = 1e-10) -> None:
    assert a.shape == b.shape
    scale = max(float(np.max(np.abs(b))), 1e-30)
    assert float(np.max(np.abs(a - b))) / scale < tol


@st.composite
def rnn_problems(draw, directions=("fwd", "bwd", "wrw")):
    mode = draw(st.sampled_from(MODES))
    hidden = draw(st.integers(1, 5))
    skip = draw(st.booleans())
    in_size = hidden if skip else draw(st.integers(1, 5))
    steps = draw(st.integers(1, 4))
    if draw(st.booleans()):
        batch = (draw(st.integers(1, 4)),)
    else:
        batch = tuple(sorted((draw(st.integers(1, 4)) for _ in range(steps)), reverse=True))
    return RNNProblem(draw(st.sampled_from(directions)), "fp64", mode, batch, steps, in_size, hidden,
                      layers=draw(st.integers(1, 3)), bias=draw(st.booleans()),
                      input_mode="skip" if skip else "linear", bidirectional=draw(st.booleans()))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=rnn_problems(), seed=st.integers(0, 1000))
def test_reference_matches_torch_in_float64(p, seed):
    """Every mode, direction, stacking, bidirectional, skip/linear, bias on/off and
    per-step batch sizes: the numpy reference against torch's RNN modules."""
    t = _inputs(p, seed)
    ref = R.run_reference(p, t, precision="fp64")
    got = _torch(p, t)
    assert set(ref) == set(rnn_shapes(p)[1]) == set(got)
    for name in ref:
        _close(ref[name], got[name])


@pytest.mark.parametrize("layout,lens", [(2, (3, 5, 1, 5)), (3, (3, 5, 1, 5)), (1, (5, 4, 4, 2)), (2, (2, 2, 2, 2))])
@pytest.mark.parametrize("direction", ["fwd", "bwd", "wrw"])
@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_sequence_api_layouts_match_torch(layout, lens, direction, mode):
    """rnn_seq: per-sample lengths in any order (padded, time- or batch-major) or sorted
    (packed); hx and hy in the samples' own order."""
    p = RNNProblem(direction, "fp64", mode, (4,), 5, 3, 4, layers=2, bidirectional=True, api="rnn_seq",
                   seq_lens=lens, io_layout=layout)
    t = _inputs(p, 3)
    ref = R.run_reference(p, t, precision="fp64")
    got = _torch(p, t)
    for name in ref:
        _close(ref[name], got[name])


def test_padding_is_ignored_and_written_as_zero():
    p = RNNProblem("bwd", "fp64", "gru", (3, 2, 1), 3, 2, 3, padded=True, bidirectional=True)
    t = _inputs(p, 1)
    ref = R.run_reference(p, t, precision="fp64")
    noisy = dict(t)
    noisy["x"] = t["x"].copy()
    noisy["x"][1, 2:] = 99.0        # step 1 runs 2 samples: row 2 is padding
    noisy["dy"] = t["dy"].copy()
    noisy["dy"][2, 1:] = -99.0
    again = R.run_reference(p, noisy, precision="fp64")
    for name in ref:
        _close(again[name], ref[name])
    assert np.all(ref["dx"][1, 2:] == 0) and np.all(ref["dx"][2, 1:] == 0)


# ----------------------------------------------------------------------------- MIOpen's layout, by hand

def _sig(a):
    return 1 / (1 + np.exp(-a))


def test_weight_views_tile_the_buffer_in_miopens_order():
    """Matrices first (layer by layer: input then hidden, direction-major rows), then
    per layer the input bias and the hidden bias; every value in exactly one view."""
    p = RNNProblem("fwd", "fp64", "lstm", (2,), 1, 3, 4, layers=2, bidirectional=True)
    w = np.arange(p.weight_count, dtype=np.float64)
    lw = weight_views(p, w)
    seen = np.concatenate([a.reshape(-1) for layer in lw for a in (layer.w_in, layer.r, layer.b_w, layer.b_r)])
    assert sorted(seen.tolist()) == list(range(p.weight_count))
    ws = 2 * 4 * 4                                       # D * G * H rows
    assert lw[0].w_in[0, 0, 0] == 0 and lw[0].w_in[1, 0, 0] == 16 * 3     # reverse rows after forward's
    assert lw[0].r[0, 0, 0] == 3 * ws                    # layer 0 hidden after its input matrix
    assert lw[1].w_in[0, 0, 0] == (3 + 4) * ws           # layer 1 input: D*H columns
    assert lw[1].r[0, 0, 0] == (3 + 4 + 8) * ws
    total = (3 + 4 + 8 + 4) * ws
    assert lw[0].b_w[0, 0] == total and lw[0].b_r[0, 0] == total + ws and lw[1].b_w[0, 0] == total + 2 * ws
    skip = RNNProblem("fwd", "fp64", "gru", (2,), 1, 4, 4, input_mode="skip")
    assert weight_views(skip, np.zeros(skip.weight_count))[0].w_in is None


def test_one_lstm_and_gru_step_by_hand():
    """One step computed from the driver's definitions, reading gates by MIOpen offsets:
    LSTM i f o g (c' = f c + i g, h' = o tanh c'), GRU z r c (c = tanh(W_c x + b + r (R_c h
    + b)), h' = (1 - z) c + z h).  torch orders them i f g o and r z n."""
    h = 3
    for mode in ("lstm", "gru"):
        p = RNNProblem("fwd", "fp64", mode, (2,), 1, 2, h)
        t = _inputs(p, 5)
        lw = weight_views(p, t["w"])[0]
        x, hx = t["x"], t["hx"][0]
        ax = x @ lw.w_in[0].T + lw.b_w[0]
        ah = hx @ lw.r[0].T + lw.b_r[0]
        g = [slice(k * h, (k + 1) * h) for k in range(4)]
        if mode == "lstm":
            i, f, o, gg = _sig(ax[:, g[0]] + ah[:, g[0]]), _sig(ax[:, g[1]] + ah[:, g[1]]), \
                _sig(ax[:, g[2]] + ah[:, g[2]]), np.tanh(ax[:, g[3]] + ah[:, g[3]])
            c = f * t["cx"][0] + i * gg
            want = o * np.tanh(c)
        else:
            z, r = _sig(ax[:, g[0]] + ah[:, g[0]]), _sig(ax[:, g[1]] + ah[:, g[1]])
            c = np.tanh(ax[:, g[2]] + r * ah[:, g[2]])
            want = (1 - z) * c + z * hx
        ref = R.run_reference(p, t, precision="fp64")
        _close(ref["y"], want)
        _close(_torch(p, t)["y"], want)


def test_torch_needs_the_gate_reordering():
    """Loaded without reordering, torch's GRU/LSTM compute something else: the
    translation is what makes the two agree (so the agreement tests something)."""
    from miotui.execute import rnn_layout
    for mode in ("lstm", "gru"):
        p = RNNProblem("fwd", "fp64", mode, (2,), 3, 2, 3)
        t = _inputs(p, 2)
        right = _torch(p, t)["y"]
        saved = rnn_layout.TORCH_FROM_MIOPEN[mode]
        try:
            rnn_layout.TORCH_FROM_MIOPEN[mode] = tuple(range(len(saved)))
            wrong = _torch(p, t)["y"]
        finally:
            rnn_layout.TORCH_FROM_MIOPEN[mode] = saved
        assert np.max(np.abs(right - wrong)) > 1e-3


# ----------------------------------------------------------------------------- gradients without torch

@pytest.mark.parametrize("mode", MODES)
def test_backward_is_the_gradient_of_the_forward(mode):
    """Central differences of the numpy forward against the numpy backward (data and
    weights), on a bidirectional, stacked, variable-length RNN."""
    kw = dict(layers=2, bidirectional=True, bias=True)
    fwd = RNNProblem("fwd", "fp64", mode, (3, 2, 2, 1), 4, 2, 3, **kw)
    t = _inputs(fwd, 7, scale=0.8)
    cot = _inputs(RNNProblem("bwd", "fp64", mode, (3, 2, 2, 1), 4, 2, 3, **kw), 8, scale=0.8)
    outs = rnn_shapes(fwd)[1]

    def loss(tt):
        y = R.run_reference(fwd, tt, precision="fp64")
        return sum(float(np.sum(y[k] * cot["d" + k])) for k in outs)

    grads = {}
    for d in ("bwd", "wrw"):
        p = RNNProblem(d, "fp64", mode, (3, 2, 2, 1), 4, 2, 3, **kw)
        ins = {k: (t[k] if k in t else cot[k]) for k in rnn_shapes(p)[0]}
        grads.update(R.run_reference(p, ins, precision="fp64"))
    rng = np.random.default_rng(0)
    for name, gname in (("x", "dx"), ("hx", "dhx"), ("w", "dw")) + ((("cx", "dcx"),) if mode == "lstm" else ()):
        flat = t[name].reshape(-1)
        for i in rng.choice(flat.size, size=min(12, flat.size), replace=False):
            eps = 1e-6
            plus, minus = dict(t), dict(t)
            plus[name], minus[name] = t[name].copy(), t[name].copy()
            plus[name].reshape(-1)[i] += eps
            minus[name].reshape(-1)[i] -= eps
            num = (loss(plus) - loss(minus)) / (2 * eps)
            assert num == pytest.approx(grads[gname].reshape(-1)[i], abs=1e-6, rel=1e-5), (name, i)


# ----------------------------------------------------------------------------- shapes, lengths, batch

def test_lengths_and_step_batches():
    p = RNNProblem("fwd", "fp32", "tanh", (4, 3, 3, 1), 4, 2, 2)
    assert rnn_sample_lengths(p) == (4, 3, 3, 1)
    assert rnn_step_batches(p) == (4, 3, 3, 1)
    s = RNNProblem("fwd", "fp32", "tanh", (4,), 6, 2, 2, api="rnn_seq", seq_lens=(2, 6), io_layout=2)
    assert rnn_sample_lengths(s) == (2, 6, 6, 6)      # the driver pads -K with its last value
    assert rnn_step_batches(s) == (4, 4, 3, 3, 3, 3)
    assert seq_packing(s).order.tolist() == [1, 2, 3, 0]


def test_packed_layout_with_increasing_lengths_is_not_run():
    p = RNNProblem("fwd", "fp32", "tanh", (2,), 3, 2, 2, api="rnn_seq", seq_lens=(1, 3), io_layout=1)
    res = run_layer(p, RunSettings(backend="numpy", iters=1), use_cache=False)
    assert res.status == "n/a" and "non-increasing" in res.message


def test_with_batch_scales_the_per_step_batches():
    p = RNNProblem("fwd", "fp32", "lstm", (8, 6, 6, 2), 4, 3, 3)
    q = guard.with_batch(p, 4)
    assert q.batch == (4, 3, 3, 1) and q.n == 4
    assert guard.with_batch(p, 1).batch == (1, 1, 1, 1)
    assert guard.with_batch(RNNProblem("fwd", "fp32", "gru", (5,), 4, 3, 3), 2).batch == (2,)
    s = RNNProblem("fwd", "fp32", "gru", (4,), 6, 2, 2, api="rnn_seq", seq_lens=(6, 5, 3, 1), io_layout=1)
    assert guard.with_batch(s, 2).seq_lens == (6, 3)
    with pytest.raises(ProblemError):
        guard.with_batch(p, 0)


# ----------------------------------------------------------------------------- end to end

@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("direction", ["fwd", "bwd", "wrw"])
@pytest.mark.parametrize("mode", MODES)
def test_run_layer_verifies(backend, direction, mode):
    p = RNNProblem(direction, "fp32", mode, (5, 4, 4, 2, 1), 5, 6, 6, layers=2, bidirectional=True,
                   input_mode="skip" if mode == "tanh" else "linear")
    res = run_layer(p, RunSettings(backend=backend, iters=2), use_cache=False)
    assert res.status == "ok", res.message
    v = res.verification
    assert v is not None and v.ok and v.tolerance == 1e-6 and "rnn_driver" in v.how
    assert v.error < 1e-6
    want = {"fwd": ("y", "hy"), "bwd": ("dx", "dhx"), "wrw": ("dw",)}[direction]
    assert all(f"{name} " in v.how for name in want)
    if mode == "lstm" and direction != "wrw":
        assert ("cy " if direction == "fwd" else "dcx ") in v.how


def test_fp16_uses_the_drivers_half_tolerance():
    p = RNNProblem("bwd", "fp16", "gru", (4,), 6, 8, 8)
    res = run_layer(p, RunSettings(backend="torch", iters=1), use_cache=False)
    assert res.status == "ok", res.message
    assert res.verification.tolerance == 5e-2


def test_inference_forward_gives_the_training_numbers():
    train = RNNProblem("fwd", "fp32", "lstm", (3,), 4, 4, 4)
    infer = RNNProblem("fwd", "fp32", "lstm", (3,), 4, 4, 4, inference=True)
    a, b = (R.run_reference(p, R.make_inputs(p, 1)) for p in (train, infer))
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    assert run_layer(infer, RunSettings(backend="torch", iters=1), use_cache=False).status == "ok"


def test_dropout_between_stacked_layers_is_not_applicable():
    p = RNNProblem("fwd", "fp32", "lstm", (3,), 4, 4, 4, layers=2, dropout=0.3)
    for backend in ("numpy", "torch", "auto"):
        res = run_layer(p, RunSettings(backend=backend, iters=1), use_cache=False)
        assert res.status == "n/a" and "random" in res.message and "MIOpenDriver" in res.message
    one = RNNProblem("fwd", "fp32", "lstm", (3,), 4, 4, 4, layers=1, dropout=0.3)   # nothing to drop
    assert run_layer(one, RunSettings(backend="numpy", iters=1), use_cache=False).status == "ok"


def test_inputs_are_named_like_miopen_and_dumped(tmp_path):
    p = RNNProblem("bwd", "fp32", "lstm", (3, 2), 2, 4, 5, bidirectional=True)
    inputs = R.make_inputs(p, 0)
    assert list(inputs) == ["x", "hx", "cx", "w", "dy", "dhy", "dcy"]
    assert inputs["x"].shape == (5, 4) and inputs["hx"].shape == (2, 3, 5) and inputs["w"].shape == (p.weight_count,)
    assert 0 <= inputs["x"].min() and inputs["x"].max() < 0.01          # MIOpenDriver's scale
    assert R.tensor_names(p) == (("x", "hx", "cx", "w", "dy", "dhy", "dcy"), ("dx", "dhx", "dcx"))
    res = run_layer(p, RunSettings(backend="numpy", iters=1, dump_dir=str(tmp_path)), use_cache=False)
    assert res.status == "ok"
    names = sorted(f.name for f in tmp_path.iterdir())
    assert names == sorted(f"{n}.npy" for n in ("x", "hx", "cx", "w", "dy", "dhy", "dcy", "dx", "dhx", "dcx"))
    np.testing.assert_array_equal(np.load(tmp_path / "w.npy"), inputs["w"])


def test_guard_refuses_a_huge_rnn_before_allocating(monkeypatch):
    huge = RNNProblem("wrw", "fp32", "lstm", (4096,), 1000, 512, 512, layers=2, bidirectional=True)
    for backend in ("numpy", "torch"):
        check = guard.check_memory(huge, get_backend(backend), available=8 << 30)
        assert not check.ok and check.suggested_batch is not None and 1 <= check.suggested_batch < 4096
        fits = guard.with_batch(huge, check.suggested_batch)
        assert guard.estimate_bytes(fits, get_backend(backend)) <= guard.budget_for(8 << 30)
        assert guard.estimate_bytes(guard.with_batch(huge, check.suggested_batch + 1), get_backend(backend)) > \
            guard.budget_for(8 << 30)
        assert f"largest batch that fits is {check.suggested_batch} samples" in check.message
    whole = RNNProblem("wrw", "fp32", "lstm", (4,), 100000, 4096, 4096, layers=8, bidirectional=True)
    assert "even one sample does not fit" in guard.check_memory(whole, get_backend("numpy"), available=8 << 30).message
    clear_cache()
    monkeypatch.setattr(guard, "available_memory", lambda: 8 << 30)
    tracemalloc.start()
    try:
        res = run_layer(huge, RunSettings(backend="torch"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.status == "refused" and "--batch" in res.message
    assert peak < 50 << 20


def test_estimate_covers_what_the_reference_allocates():
    for d in ("fwd", "bwd", "wrw"):
        p = RNNProblem(d, "fp32", "lstm", (16, 12, 8), 3, 64, 64, layers=2, bidirectional=True)
        inputs = R.make_inputs(p, 0)
        tracemalloc.start()
        try:
            R.run_reference(p, inputs, precision="fp64")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        held = sum(a.nbytes for a in inputs.values())
        assert peak + held <= R.peak_bytes(p, "fp64"), d
        assert math.isfinite(guard.estimate_bytes(p, get_backend("torch")))


def test_timed_backward_calls_start_from_one_kept_forward(monkeypatch):
    """numpy, like MIOpen and torch, times backward from a forward pass run before timing:
    one forward for the timed calls (fp32), and one for the float64 reference where that
    reference is numpy's own code (without torch: miotui.execute.oracle)."""
    from miotui.execute import oracle, reference_rnn
    calls = []
    real = reference_rnn.rnn_forward

    def counting(p, inputs, precision="fp32", cancel=None):
        calls.append(precision)
        return real(p, inputs, precision, cancel)

    monkeypatch.setattr(reference_rnn, "rnn_forward", counting)
    p = RNNProblem("wrw", "fp32", "gru", (4, 3), 2, 3, 3)
    res = run_layer(p, RunSettings(backend="numpy", iters=5, warmup=2), use_cache=False)
    assert res.status == "ok" and "kept before timing" in res.engine
    own = oracle.reference_name(p, "numpy") == oracle.RNN_SELF
    assert sorted(calls) == (["fp32", "fp64"] if own else ["fp32"])
    inputs = R.make_inputs(p, 1)
    kept = R.prepare(p, inputs)
    assert kept is not None
    for _ in range(2):   # the kept forward is read, never written
        np.testing.assert_array_equal(R.run_reference(p, inputs, saved=kept)["dw"], R.run_reference(p, inputs)["dw"])

"""Reductions against MIOpenDriver's host algorithm written out as a scan (its start
values, strict comparisons, NaN rules, flattened indices), on numpy and torch; runs end
to end; the indices must match exactly; n/a for the ops miotui does not run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from miotui.execute import guard
from miotui.execute import reference as R
from miotui.execute import verify as V
from miotui.execute.backends import RunSettings, get_backend, run_layer
from miotui.execute.layer_shapes import reduce_shapes
from miotui.execute.oracle_layers import reduce_oracle
from miotui.problems import REDUCE_OPS, OpProblem, ProblemError, ReduceProblem

torch = pytest.importorskip("torch")
from miotui.execute.torch_norm import torch_reduce  # noqa: E402

F32_MAX = float(np.finfo(np.float32).max)


def host_reduce(p: ReduceProblem, x: np.ndarray, prior) -> tuple[np.ndarray, np.ndarray]:
    """The driver's host loop (MIOpen's ``driver/miopen_Reduction.hpp`` with
    ``test/cpu_reduce_util.hpp``; the kernels' ``reduction_operator.hpp`` and
    ``reduction_functions_binop.hpp`` do the same per thread): for every kept index, start
    from (the op's start value, index 0) and scan the reduced ones in row-major order,
    replacing the extreme and its index only on a strict improvement; with NaN
    propagation a NaN replaces the accumulator (and its index) whenever one is met.
    ``reducefp64`` computes in double whatever ``-C`` says."""
    op = REDUCE_OPS[p.reduce_op]
    red = sorted(p.reduce_dims)
    keep = [d for d in range(x.ndim) if d not in red]
    y = np.zeros(p.output_shape)
    idx = np.zeros(p.output_shape, dtype=np.int64)
    count = math.prod(x.shape[d] for d in red)
    for kept in np.ndindex(*[x.shape[d] for d in keep]):
        big = float(np.finfo(np.float64 if "fp64" in (p.dtype, p.comp_dtype) else np.float32).max)
        acc = {"add": 0.0, "avg": 0.0, "norm1": 0.0, "norm2": 0.0, "mul": 1.0, "min": big, "max": -big,
               "amax": 0.0}[op]
        at = 0
        for j, reduced in enumerate(np.ndindex(*[x.shape[d] for d in red])):
            full = [0] * x.ndim
            for d, v in zip(keep, kept, strict=True):
                full[d] = v
            for d, v in zip(red, reduced, strict=True):
                full[d] = v
            v = float(x[tuple(full)])
            v = abs(v) if op in ("norm1", "amax") else v * v if op == "norm2" else v
            if p.nan_propagation and math.isnan(v):
                acc, at = v, j
            elif op == "min":
                if acc > v:
                    acc, at = v, j
            elif op in ("max", "amax"):
                if acc < v:
                    acc, at = v, j
            elif op == "mul":
                acc *= v
            else:
                acc += v
        if op == "norm2":
            acc = math.sqrt(acc)
        if op == "avg":
            acc /= count
        out_at = tuple(0 if d in red else kept[keep.index(d)] for d in range(x.ndim))
        if not p.indices:
            acc = acc * p.alpha + (p.beta * float(prior[out_at]) if p.beta else 0.0)
        y[out_at], idx[out_at] = acc, at
    return y, idx


def _same(a, b, tol=1e-10):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    nan = np.isnan(b)
    assert np.array_equal(np.isnan(a), nan)
    same = nan | (a == b)                 # NaNs, and the infinities a start value times alpha can give
    scale = max(float(np.max(np.abs(np.where(same, 0, b)), initial=0)), 1e-300)
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0, a - b)
    assert float(np.max(np.abs(diff), initial=0)) / scale <= tol


@st.composite
def reduce_cases(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    dims = tuple(draw(st.permutations(range(rank)))[:draw(st.integers(1, rank))])   # any order
    op = draw(st.integers(0, 7))
    indices = op in (2, 3, 4) and draw(st.booleans())
    p = ReduceProblem("fwd", "fp64", shape, dims, reduce_op=op, comp_dtype=draw(st.sampled_from(("fp32", "fp64"))),
                      nan_propagation=draw(st.booleans()),
                      indices=indices, alpha=draw(st.sampled_from((1.0, 0.5, -2.0))),
                      beta=draw(st.sampled_from((0.0, 0.0, 1.5))))
    rng = np.random.default_rng(draw(st.integers(0, 10 ** 6)))
    x = rng.integers(-3, 4, size=shape).astype(np.float64) / 2     # ties, so "first index" matters
    if draw(st.booleans()):
        x[rng.random(size=shape) < 0.3] = np.nan
    prior = rng.uniform(-1, 1, size=p.output_shape)
    return p, x, prior


def _check_against_the_host_scan(p: ReduceProblem, x: np.ndarray, prior: np.ndarray) -> None:
    """The numpy reference, the torch op and the verdict's float64 oracle, each against
    :func:`host_reduce`: values, and indices exactly."""
    inputs = {"x": x}
    if "y" in reduce_shapes(p)[0]:
        inputs["y"] = prior
    want_y, want_i = host_reduce(p, x, prior)
    on_torch = torch_reduce(p, {k: torch.from_numpy(v) for k, v in inputs.items()})
    for name, got in (("reference", R.run_reference(p, inputs, precision="fp64")),
                      ("torch", {k: v.numpy() for k, v in on_torch.items()}),
                      ("oracle", reduce_oracle(p, inputs))):
        _same(got["y"], want_y)
        assert ("indices" in got) == p.indices, name
        if p.indices:
            np.testing.assert_array_equal(got["indices"], want_i, err_msg=name)
            if name != "oracle":
                assert got["indices"].dtype == np.int32


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=reduce_cases())
@example(case=(ReduceProblem("fwd", "fp64", (1, 1, 3, 2), (0, 1, 2), 4, "fp32", False, True),
               np.array([[[[np.nan, 0.5], [np.nan, np.nan], [0.0, 1.5]]]]), np.zeros((1, 1, 1, 2))))
def test_reduce_matches_the_host_scan(case):
    _check_against_the_host_scan(*case)


@pytest.mark.parametrize(("op", "nan_prop", "x", "want", "at"), [
    # amax of NaNs then a zero: 0 does not beat amax's start 0, so the index stays 0
    (4, False, [np.nan, np.nan, 0.0], 0.0, 0),
    (4, False, [np.nan, -0.0, 0.0, 0.5], 0.5, 3),
    (4, False, [0.0, 0.0], 0.0, 0),
    # beyond the compute type's largest: +inf never beats min's start, -inf never max's
    (2, False, [np.inf, np.nan, np.inf], F32_MAX, 0),
    (3, False, [np.nan, -np.inf], -F32_MAX, 0),
    (3, False, [np.nan, -np.inf, 1.0, 1.0], 1.0, 2),
    (2, False, [np.nan, F32_MAX], F32_MAX, 0),           # equal to the start: no improvement
    # with propagation: the last NaN, whatever came before or after
    (4, True, [0.0, np.nan, 3.0, np.nan, 0.0], np.nan, 3),
])
def test_ties_with_the_start_value(op, nan_prop, x, want, at):
    """MIOpen's kernels and host keep (start, index 0) unless a value beats the start
    strictly; the reference, torch and the oracle agree with the scan and these values."""
    p = ReduceProblem("fwd", "fp32", (len(x),), (0,), reduce_op=op, comp_dtype="fp32",
                      nan_propagation=nan_prop, indices=True)
    xs = np.array(x, dtype=np.float32)
    _check_against_the_host_scan(p, xs, np.zeros(1))
    out = R.run_reference(p, {"x": xs}, precision="fp64")
    assert (np.isnan(out["y"][0]) if np.isnan(want) else out["y"][0] == want) and out["indices"][0] == at


def test_nan_rules_in_one_slice():
    x = np.array([[2.0, np.nan, 1.0, np.nan, 1.0]])
    for prop, want, at in ((False, 1.0, 2), (True, np.nan, 3)):
        p = ReduceProblem("fwd", "fp64", (1, 5), (1,), reduce_op=2, nan_propagation=prop, indices=True)
        out = R.run_reference(p, {"x": x}, precision="fp64")
        assert (np.isnan(out["y"][0, 0]) if np.isnan(want) else out["y"][0, 0] == want)
        assert out["indices"][0, 0] == at                # first minimum; the last NaN when propagating
    allnan = ReduceProblem("fwd", "fp32", (2,), (0,), reduce_op=3, indices=True, comp_dtype="fp32")
    out = R.run_reference(allnan, {"x": np.array([np.nan, np.nan], dtype=np.float32)}, precision="fp64")
    assert out["y"][0] == -F32_MAX and out["indices"][0] == 0   # the start value survives
    # fp64 data computes in double whatever -C says (reducefp64 sets the compute type)
    allnan64 = ReduceProblem("fwd", "fp64", (2,), (0,), reduce_op=3, indices=True, comp_dtype="fp32")
    out = R.run_reference(allnan64, {"x": np.array([np.nan, np.nan])}, precision="fp64")
    assert out["y"][0] == -float(np.finfo(np.float64).max) and out["indices"][0] == 0
    add = ReduceProblem("fwd", "fp64", (3,), (0,), reduce_op=0)
    assert np.isnan(R.run_reference(add, {"x": np.array([1.0, np.nan, 2.0])}, precision="fp64")["y"][0])


# ----------------------------------------------------------------------------- end to end

@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("op", list(range(8)))
def test_run_layer_verifies(backend, dtype, op):
    p = ReduceProblem("fwd", dtype, (6, 40, 24), (0, 2), reduce_op=op, indices=op in (2, 3, 4),
                      alpha=1.0 if op in (2, 3, 4) else 0.5, beta=0.0 if op in (2, 3, 4) else 2.0)
    res = run_layer(p, RunSettings(backend=backend, iters=2), use_cache=False)
    assert res.status == "ok", res.message
    v = res.verification
    tol = 1.5e-4 * (4 if dtype == "fp16" else 1) * (12 if dtype == "fp32" and op == 7 else 1)
    assert v.ok and v.tolerance == pytest.approx(tol) and "reduce_driver" in v.how
    if p.indices:
        assert "indices: 0 elements differ" in v.how


def test_a_long_product_is_compared_above_the_smallest_normal_number():
    """256 factors in [0, 1) underflow float32 (~e^-256): compared as 0, as they must be."""
    p = ReduceProblem("fwd", "fp32", (8, 256), (1,), reduce_op=1)
    res = run_layer(p, RunSettings(backend="numpy", iters=1), use_cache=False)
    assert res.status == "ok" and "compared as 0" in res.verification.how
    ref = R.run_reference(p, R.make_inputs(p, 0), precision="fp64")["y"]
    assert V.rms_range(ref, np.zeros_like(ref)) > 0.1 > 1.5e-4     # without the rule it could not pass


def test_wrong_indices_fail_even_when_the_values_pass():
    p = ReduceProblem("fwd", "fp32", (4, 6), (1,), reduce_op=3, indices=True)
    inputs = R.make_inputs(p, 0)
    ref = R.run_reference(p, inputs, precision="fp64")
    out = {"y": ref["y"].astype(np.float32), "indices": ref["indices"].copy()}
    assert V.compare(p, ref, out).ok
    out["indices"][2, 0] += 1
    v = V.compare(p, ref, out)
    assert not v.ok and v.metric == "mismatches" and v.error == 1 and v.tolerance == 0


def test_beta_reads_the_prior_output_and_both_are_dumped(tmp_path):
    p = ReduceProblem("fwd", "fp32", (3, 4), (1,), reduce_op=0, beta=1.0)
    assert R.tensor_names(p) == (("x", "y"), ("y",))
    res = run_layer(p, RunSettings(backend="numpy", iters=1, dump_dir=str(tmp_path)), use_cache=False)
    assert res.status == "ok"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["x.npy", "y.npy", "y_in.npy"]
    x, prior, y = (np.load(tmp_path / f) for f in ("x.npy", "y_in.npy", "y.npy"))
    np.testing.assert_allclose(y, x.sum(axis=1, keepdims=True) + prior, rtol=1e-6)
    indexed = ReduceProblem("fwd", "fp32", (3, 4), (1,), reduce_op=3, indices=True, beta=1.0)
    assert R.tensor_names(indexed) == (("x",), ("y", "indices"))   # the driver runs alpha 1, beta 0


def test_with_batch_and_guard():
    p = ReduceProblem("fwd", "fp32", (64, 1024, 1024), (1, 2), reduce_op=0)
    assert guard.with_batch(p, 8).shape == (8, 1024, 1024)
    check = guard.check_memory(p, get_backend("numpy"), available=1 << 30)
    assert not check.ok and 1 <= (check.suggested_batch or 0) < 64


@pytest.mark.parametrize("op", [OpProblem("cat", "fwd", "fp32", (("x", (4, 8)), ("y", (8, 8)))),
                                OpProblem("kthvalue", "fwd", "fp16", (("x", (4, 8)),), missing=("k",)),
                                OpProblem("adam", "fwd", "fp32")])
def test_ops_miotui_does_not_model_are_not_applicable(op):
    for backend in ("numpy", "numba", "torch", "auto"):
        res = run_layer(op, RunSettings(backend=backend, iters=1), use_cache=False)
        assert res.status == "n/a", (backend, res.message)
        assert res.message.startswith(f"miotui does not run {op.name};")
        assert ("cannot be written" in res.message) == bool(op.missing)
    with pytest.raises(ProblemError):
        guard.with_batch(op, 2)

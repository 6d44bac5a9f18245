"""Backends: torch vs the numpy reference, batch override, cache, and the real
miopen-driver code path run against tests/fake_miopendriver.py (a FAKE driver)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import statistics
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from miotui.driver import process, to_driver_argv
from miotui.driver.process import process_group_alive
from miotui.execute import runner, torch_ops
from miotui.execute.backends import (
    RunSettings,
    available_backends,
    find_driver,
    get_backend,
    launch_driver,
    resolve_auto,
)
from miotui.execute.driver_backend import driver_argv
from miotui.execute.runner import clear_cache, run_layer
from miotui.problems import (
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    FusionProblem,
    LRNProblem,
    PoolProblem,
    ProblemError,
    SoftmaxProblem,
)

HAS_TORCH = available_backends()["torch"] is None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
HAS_NUMBA = available_backends()["numba"] is None
needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")

pytestmark = pytest.mark.usefixtures("fresh_run_cache")

SMALL = ConvProblem("fwd", "fp32", 2, 4, 6, (10, 9), (3, 3), (1, 1), (1, 1), (1, 1))
DEPTHWISE = ConvProblem("fwd", "fp32", 2, 8, 8, (10, 10), (3, 3), (1, 1), (1, 1), (1, 1), groups=8)


@pytest.fixture
def drv(fake_driver):
    """RunSettings for the FAKE driver: drv(iters=3, ...)."""
    def settings_for(**kw) -> RunSettings:
        base = dict(backend="miopen-driver", driver_path=fake_driver, iters=5, timeout_s=30)
        base.update(kw)
        return RunSettings(**base)
    return settings_for


# ----------------------------------------------------------------------------- in-process backends

def test_numpy_run_times_and_verifies():
    res = run_layer(SMALL, RunSettings(backend="numpy", iters=3))
    assert res.status == "ok", res.message
    assert res.iterations == 3
    assert 0 < res.min_ms <= res.median_ms
    assert res.gflops == pytest.approx(SMALL.flops / (res.median_ms / 1e3) / 1e9)
    assert res.gbps == pytest.approx(SMALL.bytes_moved / (res.median_ms / 1e3) / 1e9)
    v = res.verification
    assert v is not None and v.ok and v.max_abs < 1e-5 and v.rms_range <= v.tolerance
    assert "numpy" in res.engine


@needs_torch
@pytest.mark.parametrize("problem", [
    SMALL,
    ConvProblem("bwd", "fp32", 2, 4, 6, (9, 10), (3, 2), (1, 0), (2, 1), (1, 2), groups=2),
    ConvProblem("wrw", "fp32", 2, 4, 6, (9, 10), (3, 3), (0, 0), (2, 2), (1, 1), pad_mode="same"),
    ConvProblem("fwd", "fp32", 1, 4, 6, (5, 6, 7), (3, 3, 1), (1, 1, 0), (1, 2, 1), (1, 1, 1)),
    ConvProblem("fwd", "fp32", 2, 4, 6, (5, 6), (3, 3), (1, 1), (2, 2), (1, 1), mode="trans",
                trans_output_pads=(1, 0)),
    ConvProblem("bwd", "fp32", 2, 4, 6, (5, 6), (3, 3), (1, 0), (2, 1), (2, 1), groups=2, mode="trans"),
    ConvProblem("wrw", "fp16", 2, 4, 6, (9, 9), (3, 3), (1, 1), (1, 1), (1, 1)),
], ids=lambda p: f"{p.direction}-{p.mode}-{p.pad_mode}-g{p.groups}-{p.ndim}d-{p.dtype}")
def test_torch_conv_agrees_with_numpy(problem):
    """torch's kernels are independent of the reference: their outputs must match."""
    from miotui.execute.reference import make_inputs, run_reference
    tb = get_backend("torch")
    inputs = make_inputs(problem, 3)
    ours = run_reference(problem, inputs, precision="fp64")
    theirs = tb.outputs(problem, tb.run(problem, tb.prepare(problem, inputs), None))
    (name, ref), = ours.items()
    assert theirs[name].shape == ref.shape
    scale = np.abs(ref).max()
    tol = 2e-3 if problem.dtype == "fp16" else 1e-5
    assert np.abs(theirs[name].astype(np.float64) - ref).max() <= tol * scale
    res = run_layer(problem, RunSettings(backend="torch", iters=2, seed=3))
    assert res.status == "ok", res.message
    assert res.verification.ok and "torch" in res.engine


@st.composite
def small_convs(draw):
    """Any small convolution MIOpen can describe: 2-D/3-D, groups, stride, dilation,
    pad modes, transposed with output padding, every direction."""
    nd = draw(st.sampled_from([2, 2, 3]))
    g = draw(st.integers(1, 3))
    c, k = g * draw(st.integers(1, 3)), g * draw(st.integers(1, 3))
    mode = draw(st.sampled_from(["conv", "conv", "trans"]))
    pad_mode = "default" if mode == "trans" else draw(st.sampled_from(["default", "default", "same", "valid"]))
    dims = st.integers(1, 3)
    filt = tuple(draw(dims) for _ in range(nd))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dils = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(nd))
    size = tuple(draw(st.integers(4 if nd == 2 else 3, 9 if nd == 2 else 5)) for _ in range(nd))
    adj = (tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(strides, dils, strict=True))
           if mode == "trans" else ())
    direction = draw(st.sampled_from(["fwd", "bwd", "wrw"]))
    try:
        p = ConvProblem(direction, "fp32", draw(st.integers(1, 2)), c, k, size, filt, pads, strides, dils,
                        groups=g, mode=mode, trans_output_pads=adj, pad_mode=pad_mode)
    except ProblemError:
        assume(False)
    assume(not p.output_clamped)    # MIOpen's clamp to 1 pixel is n/a for the in-process backends
    return p


def test_a_layer_whose_output_miopen_clamps_is_na_in_process():
    from miotui.execute.runner import run_layer
    p = ConvProblem("fwd", "fp32", 1, 2, 2, (2, 2), (5, 5), (0, 0), (1, 1), (1, 1))
    assert p.output_clamped
    for backend in ("numpy", "torch"):
        r = run_layer(p, RunSettings(backend=backend, iters=1))
        assert r.status == "n/a" and "clamps" in r.message


@needs_torch
@settings(max_examples=40, deadline=None)
@given(problem=small_convs(), seed=st.integers(0, 1000))
def test_property_torch_conv_matches_the_reference(problem, seed):
    """Property: for any geometry, torch's numbers equal the float64 reference's."""
    from miotui.execute.reference import make_inputs, run_reference
    tb = get_backend("torch")
    inputs = make_inputs(problem, seed)
    (name, ref), = run_reference(problem, inputs, precision="fp64").items()
    out = tb.outputs(problem, tb.run(problem, tb.prepare(problem, inputs), None))[name]
    assert out.shape == ref.shape
    assert np.abs(out.astype(np.float64) - ref).max() <= 1e-5 * max(np.abs(ref).max(), 1.0)


@needs_torch
@pytest.mark.parametrize("problem", [
    PoolProblem("fwd", "fp32", 2, 3, (9, 8), (3, 2), (1, 0), (2, 2), mode="max"),
    PoolProblem("bwd", "fp32", 2, 3, (9, 8), (3, 3), (1, 1), (2, 2), mode="avg"),
    PoolProblem("fwd", "fp32", 2, 3, (9, 8), (3, 3), (1, 1), (2, 1), mode="avg_in"),
    PoolProblem("bwd", "fp32", 1, 2, (4, 6, 5), (2, 2, 2), (0, 0, 0), (2, 2, 2), mode="max"),
    BatchNormProblem("fwd_train", "fp32", 4, 3, (5, 6), mode="spatial"),
    BatchNormProblem("fwd_infer", "fp32", 4, 3, (5, 6), mode="per_activation"),
    BatchNormProblem("bwd", "fp32", 4, 3, (5, 6), mode="spatial", save=True),
    ActivationProblem("fwd", "fp32", 2, 3, (5, 6), mode=3),
    ActivationProblem("bwd", "fp32", 2, 3, (5, 6), mode=9, alpha=0.5),
    ActivationProblem("fwd", "fp32", 2, 3, (5, 6), mode=6, alpha=1.0, beta=0.5, gamma=2.0),
    SoftmaxProblem("fwd", "fp32", 2, 5, (3, 4), algorithm=1, mode=1),
    SoftmaxProblem("bwd", "fp32", 2, 5, (3, 4), algorithm=2, mode=0),
    LRNProblem("fwd", "fp32", 2, 6, (5, 5), mode="cross", lrn_n=5),
    LRNProblem("bwd", "fp32", 2, 3, (6, 5), mode="within", lrn_n=3),
], ids=lambda p: f"{p.op}-{p.direction}-{getattr(p, 'mode', '')}")
def test_torch_other_ops_verify(problem):
    res = run_layer(problem, RunSettings(backend="torch", iters=1))
    assert res.status == "ok", res.message
    assert res.verification is not None and res.verification.ok


@needs_torch
@pytest.mark.parametrize("fusion_mode", range(7))
@pytest.mark.parametrize("bn_mode", ["spatial", "per_activation"])
def test_torch_runs_fusion_plans_and_they_verify(fusion_mode, bn_mode):
    p = FusionProblem(fusion_mode, "fp32", 2, 4, (7, 6), k=6, filter=(3, 3), pads=(1, 1), strides=(2, 1),
                      dilations=(1, 1), groups=2, bn_mode=bn_mode)
    res = run_layer(p, RunSettings(backend="torch", iters=1))
    assert res.status == "ok", res.message
    assert res.verification is not None and res.verification.ok, res.verification


@needs_torch
@pytest.mark.parametrize("activ", [(8, 0.25, 0.0, 1.0), (2, 0.5, 2.0, 1.0), (1, 1.0, 0.0, 1.0)])
def test_torch_fusion_runs_the_plans_activation(activ):
    mode, a, b, g = activ
    p = FusionProblem(0, "fp32", 2, 4, (7, 6), k=6, filter=(3, 3), pads=(1, 1), strides=(1, 1), dilations=(1, 1),
                      activ_mode=mode, activ_alpha=a, activ_beta=b, activ_gamma=g)
    res = run_layer(p, RunSettings(backend="torch", iters=1))
    assert res.status == "ok" and res.verification is not None and res.verification.ok, res.message


@needs_torch
def test_torch_fusion_differs_from_the_reference_when_a_part_is_left_out(monkeypatch):
    """The comparison can fail: torch without the batch-norm step does not verify."""
    p = FusionProblem(1, "fp32", 2, 4, (7, 6), k=6, filter=(3, 3), pads=(1, 1), strides=(1, 1), dilations=(1, 1))
    monkeypatch.setattr(torch_ops, "torch_fusion", lambda prob, t: {"y": torch_ops.torch_activation(
        ActivationProblem("fwd", "fp32", 2, 6, (7, 6)), {"x": torch_ops.torch_conv(prob.conv, t)["y"]})["y"]})
    res = run_layer(p, RunSettings(backend="torch", iters=1))
    assert res.verification is not None and not res.verification.ok


def test_torch_on_int8_is_not_applicable_and_says_why():
    p = ConvProblem("fwd", "int8", 1, 4, 4, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1))
    res = run_layer(p, RunSettings(backend="torch"))
    assert res.status == "n/a" and "int8" in res.message and res.median_ms is None


@needs_numba
@pytest.mark.parametrize("problem", [
    SMALL,                                                                                   # dense
    ConvProblem("fwd", "fp32", 2, 32, 32, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1), groups=2),  # 16 channels/group
    BatchNormProblem("fwd_train", "fp32", 2, 3, (8, 8)),
    FusionProblem(1, "fp32", 2, 4, (7, 6), k=6, filter=(3, 3), pads=(1, 1), strides=(1, 1), dilations=(1, 1)),
], ids=lambda p: f"{p.op}-g{getattr(p, 'groups', 0)}")
def test_numba_does_not_run_a_layer_its_kernels_do_not_cover(problem):
    """Before: numba on a dense convolution ran numpy's im2col and was listed as numba."""
    res = run_layer(problem, RunSettings(backend="numba", iters=1))
    assert res.status == "n/a", (res.status, res.engine)
    assert "numba" in res.message and res.median_ms is None and res.verification is None
    assert res.engine == ""   # nothing ran


@needs_numba
def test_numba_runs_the_layers_its_kernels_cover():
    for problem in (DEPTHWISE, PoolProblem("fwd", "fp32", 2, 3, (9, 8), (3, 2), (1, 0), (2, 2), mode="max")):
        res = run_layer(problem, RunSettings(backend="numba", iters=1))
        assert res.status == "ok", res.message
        assert res.engine.startswith("numba")


@pytest.mark.parametrize("module,backend,problem", [("numba", "numba", DEPTHWISE), ("torch", "torch", SMALL)])
def test_a_backend_that_is_not_installed_is_not_applicable(module, backend, problem):
    """The import system says the package is absent (``sys.modules[name] = None``, what
    an uninstalled package looks like to find_spec), in a fresh interpreter."""
    code = ("import sys, json\n"
            f"sys.modules[{module!r}] = None\n"
            "from miotui.execute.backends import RunSettings, available_backends, run_layer\n"
            "from miotui.problems import ConvProblem\n"
            f"p = ConvProblem(*{problem_args(problem)!r}, groups={problem.groups})\n"
            f"r = run_layer(p, RunSettings(backend={backend!r}, iters=1))\n"
            f"print(json.dumps([r.status, r.message, available_backends()[{backend!r}]]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    status, message, why = json.loads(out.stdout.strip().splitlines()[-1])
    assert status == "n/a" and message == why and f"{module} is not installed" in message


def problem_args(p: ConvProblem) -> tuple:
    return (p.direction, p.dtype, p.n, p.c, p.k, p.in_spatial, p.filter, p.pads, p.strides, p.dilations)


def test_auto_says_what_it_chose():
    depthwise = ConvProblem("fwd", "fp32", 2, 8, 8, (10, 10), (3, 3), (1, 1), (1, 1), (1, 1), groups=8)
    name, why = resolve_auto(SMALL)
    assert name == "numpy" and "numpy" in why
    res = run_layer(SMALL, RunSettings(backend="auto", iters=1))
    assert res.backend == "numpy" and "auto chose numpy" in res.note
    if available_backends()["numba"] is None:
        name, why = resolve_auto(depthwise)
        assert name == "numba" and "numba" in why
        res = run_layer(depthwise, RunSettings(backend="auto", iters=1))
        assert res.status == "ok", res.message
        assert res.backend == "numba" and res.jit_ms is not None
        assert res.engine.startswith("numba")


def test_batch_override_runs_the_same_layer_with_n_images():
    res = run_layer(SMALL, RunSettings(backend="numpy", batch=5, iters=1))
    assert res.status == "ok", res.message
    assert res.problem.n == 5 and res.problem.k == SMALL.k and res.problem.in_spatial == SMALL.in_spatial
    assert "N=5" in res.note and "N=2" in res.note
    bad = run_layer(SMALL, RunSettings(backend="numpy", batch=0))
    assert bad.status == "error" and "batch" in bad.message


def test_cache_hit_returns_the_same_numbers():
    s = RunSettings(backend="numpy", iters=2)
    first = run_layer(SMALL, s)
    assert not first.cached
    second = run_layer(SMALL, s)
    assert second.cached
    assert second.median_ms == first.median_ms and second.verification == first.verification
    assert second.times_ms == first.times_ms
    other = run_layer(SMALL, RunSettings(backend="numpy", iters=3))
    assert not other.cached
    assert runner.cache_info() == 2


def test_use_cache_false_always_measures_again():
    s = RunSettings(backend="numpy", iters=3)
    first = run_layer(SMALL, s)
    again = run_layer(SMALL, s, use_cache=False)
    assert not again.cached and again.times_ms != first.times_ms
    assert run_layer(SMALL, s).times_ms == first.times_ms   # the cache still holds the first run
    assert runner.cache_info() == 1


def _backends_here() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [("numpy", SMALL)]
    if HAS_NUMBA:
        out.append(("numba", DEPTHWISE))
    if HAS_TORCH:
        out.append(("torch", SMALL))
    return out


@pytest.mark.parametrize("backend,problem", _backends_here(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_in_process_backend_reports_min_median_max_and_each_time(backend, problem):
    res = run_layer(problem, RunSettings(backend=backend, iters=5))
    assert res.status == "ok", res.message
    assert len(res.times_ms) == 5 == res.iterations
    assert res.min_ms == min(res.times_ms) and res.max_ms == max(res.times_ms)
    assert res.median_ms == statistics.median(res.times_ms)
    assert res.spread == pytest.approx(res.median_ms / res.min_ms) and res.noisy == (res.spread > 1.5)
    d = res.to_dict()
    assert d["max_ms"] == res.max_ms and d["spread"] == pytest.approx(res.spread)


def test_cancel_before_the_first_iteration():
    cancel = threading.Event()
    cancel.set()
    res = run_layer(SMALL, RunSettings(backend="numpy"), cancel)
    assert res.status == "cancelled"


def test_in_process_timeout_is_an_error_result():
    res = run_layer(SMALL, RunSettings(backend="numpy", timeout_s=1e-9))
    assert res.status == "error" and "timed out" in res.message


def test_a_layer_the_reference_cannot_run_is_not_applicable():
    p = PoolProblem("fwd", "int8", 1, 2, (6, 6), (2, 2), (0, 0), (2, 2))
    res = run_layer(p, RunSettings(backend="numpy"))
    assert res.status == "n/a" and "int8" in res.message


def test_unknown_backend_is_an_error_result_not_an_exception():
    res = run_layer(SMALL, RunSettings(backend="cudnn"))
    assert res.status == "error" and "cudnn" in res.message


def test_a_backend_exception_becomes_an_error_result(monkeypatch):
    import miotui.execute.reference as reference

    def boom(*a, **k):
        raise RuntimeError("simulated kernel failure")
    monkeypatch.setattr(reference, "run_reference", boom)
    res = run_layer(SMALL, RunSettings(backend="numpy"))
    assert res.status == "error" and "simulated kernel failure" in res.message


def test_dump_writes_miopen_tensor_names(tmp_path):
    bwd = ConvProblem("bwd", "fp32", 1, 2, 3, (5, 5), (3, 3), (1, 1), (1, 1), (1, 1))
    res = run_layer(bwd, RunSettings(backend="numpy", iters=1, dump_dir=str(tmp_path)))
    assert res.status == "ok"
    assert sorted(os.listdir(tmp_path)) == ["dx.npy", "dy.npy", "w.npy"]
    assert np.load(tmp_path / "dx.npy").shape == bwd.input_shape


# ----------------------------------------------------------------------------- MIOpenDriver (fake)

def test_find_driver_order(fake_env, tmp_path, fake_driver):
    assert find_driver(RunSettings(driver_path=fake_driver)) == (fake_driver, "--driver")
    fake_env.setenv("MIOPEN_DRIVER", fake_driver)
    assert find_driver(RunSettings()) == (fake_driver, "$MIOPEN_DRIVER")
    path, why = find_driver(RunSettings(driver_path=str(tmp_path / "nope")))
    assert path is None and "does not exist" in why
    path, why = find_driver(RunSettings(driver_path=str(tmp_path)))
    assert path is None and "directory" in why
    # with a launcher the path is on the other machine: not checked here
    assert find_driver(RunSettings(launcher=("ssh", "gpu")))[0] == fake_driver
    fake_env.delenv("MIOPEN_DRIVER")
    assert find_driver(RunSettings(launcher=("ssh", "gpu")))[0] == "/opt/rocm/bin/MIOpenDriver"


@pytest.mark.parametrize("style,reference,tol", [("rocm61", "GPU", 1.5e-06), ("rocm42", "GPU", None),
                                                 ("2019", "CPU", None)])
def test_driver_result_parsed_from_each_version(fake_env, style, reference, tol, drv, fake_driver):
    fake_env.setenv("FAKE_MIOPEN_STYLE", style)
    res = run_layer(SMALL, drv())
    assert res.status == "ok", res.message
    assert res.backend == "miopen-driver"
    assert res.median_ms is not None and res.median_ms > 0
    assert res.gflops == pytest.approx(SMALL.flops / (res.median_ms / 1e3) / 1e9)
    assert res.verification.ok and res.verification.rms_range == pytest.approx(3.1e-07)
    if tol is None:
        assert np.isnan(res.verification.tolerance)
    else:
        assert res.verification.tolerance == pytest.approx(tol)
    assert res.detail("driver reference") == reference
    assert res.detail("algorithm") == "1"
    if style != "2019":
        assert res.detail("solver") == "85/ConvDirectNaiveConvFwd"
    assert res.argv[:2] == (fake_driver, "conv") and res.argv[-6:] == ("-V", "1", "-t", "1", "-i", "5")
    assert "GPU Kernel Time Forward Conv." in res.driver_output


def test_driver_failure_verdict_comes_from_the_output(fake_env, drv):
    fake_env.setenv("FAKE_MIOPEN_STYLE", "fail")
    fake_env.setenv("FAKE_MIOPEN_EXIT", "0")      # the exit status says nothing is wrong
    res = run_layer(SMALL, drv())
    assert res.status == "failed"
    assert "0.0123" in res.message and "1.5e-06" in res.message
    assert res.verification is not None and not res.verification.ok


def test_driver_ok_output_with_nonzero_exit_is_ok_with_a_note(fake_env, drv):
    fake_env.setenv("FAKE_MIOPEN_EXIT", "3")
    res = run_layer(SMALL, drv())
    assert res.status == "ok" and "exit status 3" in res.note


def test_driver_run_error_and_crash(fake_env, drv):
    fake_env.setenv("FAKE_MIOPEN_STYLE", "runerror")
    res = run_layer(SMALL, drv())
    assert res.status == "error" and "RunForwardGPU() FAILED" in res.message
    fake_env.setenv("FAKE_MIOPEN_STYLE", "crash")
    res = run_layer(SMALL, drv())
    assert res.status == "error" and "SIGSEGV" in res.message


@pytest.mark.parametrize("problem", [
    PoolProblem("bwd", "fp32", 2, 3, (8, 8), (2, 2), (0, 0), (2, 2)),
    BatchNormProblem("fwd_train", "fp32", 2, 3, (8, 8)),
    BatchNormProblem("bwd", "fp32", 2, 3, (8, 8)),
    ActivationProblem("fwd", "fp32", 2, 3, (8, 8)),
    LRNProblem("bwd", "fp32", 2, 3, (8, 8)),
    SoftmaxProblem("fwd", "fp32", 2, 3, (8, 8)),
], ids=lambda p: f"{p.op}-{p.direction}")
def test_driver_other_ops(fake_env, problem, drv):
    res = run_layer(problem, drv())
    assert res.status == "ok", (res.message, res.driver_output)
    assert res.median_ms and res.median_ms > 0
    fake_env.setenv("FAKE_MIOPEN_STYLE", "fail")
    clear_cache()
    assert run_layer(problem, drv()).status == "failed"


def test_driver_times_come_from_its_own_output(fake_env, drv):
    """MIOpenDriver prints an average (conv) and, for batch norm and activation, a
    minimum too; never a maximum or per-iteration times."""
    conv = run_layer(SMALL, drv())
    assert conv.status == "ok" and conv.median_ms and conv.min_ms is None and conv.max_ms is None
    assert conv.times_ms == () and "no per-iteration times" in conv.detail("timing")
    bn = run_layer(BatchNormProblem("fwd_train", "fp32", 2, 3, (8, 8)), drv())
    assert bn.status == "ok", bn.message
    assert bn.min_ms == pytest.approx(bn.median_ms * 0.9, rel=1e-3) and bn.max_ms is None
    assert bn.spread == pytest.approx(1 / 0.9, rel=1e-3)


def test_a_layer_miopendriver_cannot_express_is_not_applicable(fake_env, drv):
    p = ConvProblem("fwd", "fp64", 1, 4, 4, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1))
    res = run_layer(p, drv())
    assert res.status == "n/a" and "fp64" in res.message and res.argv == ()


def test_launch_driver_applies_the_batch_override(fake_env, drv):
    res = launch_driver(SMALL, drv(batch=7), lambda _l: None, threading.Event())
    assert res.status == "ok" and res.problem.n == 7 and "N=7" in res.note
    assert res.argv[res.argv.index("-n") + 1] == "7"
    assert "-n 7" in res.driver_output.splitlines()[0]


def test_launch_driver_streams_lines_as_they_arrive(fake_env, drv):
    fake_env.setenv("FAKE_MIOPEN_LINE_DELAY", "0.05")
    seen: list[tuple[float, str]] = []
    t0 = time.monotonic()
    res = launch_driver(SMALL, drv(), lambda line: seen.append((time.monotonic() - t0, line)), threading.Event())
    assert res.status == "ok"
    texts = [s for _, s in seen]
    assert texts[0].startswith("MIOpenDriver conv")
    assert texts == res.driver_output.splitlines()
    # the first line was delivered well before the run ended
    assert seen[0][0] < seen[-1][0] - 0.1


def _hang_pgid(lines: list[str]) -> tuple[int, int]:
    for line in lines:
        m = re.match(r"fake-miopendriver: pid (\d+) pgid (\d+) child (\d+)", line)
        if m:
            return int(m.group(2)), int(m.group(3))
    raise AssertionError(f"no pid line in {lines}")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2:].split()[0] not in (b"Z", b"X")


@pytest.mark.parametrize("ignore_term", ["0", "1"])
def test_hang_is_killed_by_timeout_with_its_whole_group(fake_env, ignore_term, drv):
    fake_env.setenv("FAKE_MIOPEN_STYLE", "hang")
    fake_env.setenv("FAKE_MIOPEN_IGNORE_TERM", ignore_term)
    # The fake (a Python program) must have started and set its SIGTERM handler before the
    # timeout; on a loaded 2-core host that can take seconds, so a run whose fake never printed
    # its pid line proves nothing about escalation and is tried again with a longer timeout.
    for timeout_s in (3, 6, 12):
        lines: list[str] = []
        t0 = time.monotonic()
        res = launch_driver(SMALL, drv(timeout_s=float(timeout_s)), lines.append, threading.Event())
        took = time.monotonic() - t0
        if any(line.startswith("fake-miopendriver: pid") for line in lines):
            break
    assert res.status == "error" and f"timed out after {timeout_s} s" in res.message
    assert ("SIGKILL" if ignore_term == "1" else "SIGTERM") in res.message
    assert took < timeout_s + process.KILL_GRACE_S + 3
    pgid, child = _hang_pgid(lines)
    assert not process_group_alive(pgid)
    assert not _alive(child)


def test_hang_is_killed_by_cancel(fake_env, drv):
    fake_env.setenv("FAKE_MIOPEN_STYLE", "hang")
    cancel = threading.Event()
    lines: list[str] = []

    def on_line(line: str) -> None:
        lines.append(line)
        if line.startswith("fake-miopendriver: pid"):
            threading.Timer(0.2, cancel.set).start()

    res = launch_driver(SMALL, drv(timeout_s=60), on_line, cancel)
    assert res.status == "cancelled" and "process group" in res.message
    pgid, child = _hang_pgid(lines)
    assert not process_group_alive(pgid) and not _alive(child)
    assert lines[0].startswith("MIOpenDriver conv")


def test_missing_driver_is_reported_clearly(fake_env, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("miotui.execute.driver_backend.DEFAULT_DRIVER", str(tmp_path / "rocm" / "MIOpenDriver"))
    res = run_layer(SMALL, RunSettings(backend="miopen-driver"))
    assert res.status == "n/a"   # none named and none installed: the backend is not there
    assert "MIOpenDriver not found" in res.message and "--driver" in res.message
    assert available_backends()["miopen-driver"] == res.message
    res = run_layer(SMALL, RunSettings(backend="miopen-driver", driver_path=str(tmp_path / "MIOpenDriver")))
    assert res.status == "error" and "does not exist" in res.message
    # a launcher that does not exist
    res = run_layer(SMALL, RunSettings(backend="miopen-driver", launcher=(str(tmp_path / "no-such-ssh"),)))
    assert res.status == "error" and "not found" in res.message


def test_launcher_prefix_is_passed_as_argv(fake_env, tmp_path, drv, fake_driver):
    """launcher=("env", ...) proves the prefix runs as argv tokens: env sets a variable,
    then execs the driver with exactly our arguments."""
    argv_file = tmp_path / "argv.json"
    launcher = ("env", f"FAKE_MIOPEN_ARGV_FILE={argv_file}", "FAKE_MIOPEN_STYLE=rocm42")
    res = run_layer(SMALL, drv(launcher=launcher))
    assert res.status == "ok", res.message
    assert res.argv[:3] == launcher
    got = json.loads(argv_file.read_text())
    assert got[0] == fake_driver
    assert got[1:] == to_driver_argv(SMALL) + ["-V", "1", "-t", "1", "-i", "5"]
    assert res.verification.tolerance != res.verification.tolerance  # rocm42 prints no tolerance (NaN)
    # a python launcher with a non-executable script works the same way
    res = run_layer(SMALL, drv(launcher=(sys.executable,), iters=6))
    assert res.status == "ok" and res.argv[:2] == (sys.executable, fake_driver)


def test_ssh_launcher_quotes_remote_tokens(tmp_path):
    argv = driver_argv(SMALL, RunSettings(launcher=("ssh", "-p", "2222", "gpu-node")), "/opt/my rocm/MIOpenDriver")
    assert argv[:4] == ["ssh", "-p", "2222", "gpu-node"]
    assert argv[4] == "'/opt/my rocm/MIOpenDriver'"
    srun = driver_argv(SMALL, RunSettings(launcher=("srun", "-p", "gpu")), "/opt/my rocm/MIOpenDriver")
    assert srun[3] == "/opt/my rocm/MIOpenDriver"   # srun execs argv: no quoting


def test_log_derived_text_never_reaches_a_shell(fake_env, tmp_path, drv, fake_driver):
    """Shell syntax in a logged command or in the driver's path is never interpreted
    (a shell would create ./pwned in the working directory)."""
    fake_env.chdir(tmp_path)
    marker = tmp_path / "pwned"
    log = tmp_path / "hostile.log"
    log.write_text(
        "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 "
        "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n"
        "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 "
        "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m 'conv$(touch pwned)' -g 1 -F 2 -t 1\n"
        "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 2 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 "
        "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 4 -t 1 ; touch pwned `touch pwned`\n"
        "$ MIOpenDriver pool --input '2x3x8x8,NCHW;touch pwned' -y 2 -x 2 -F 1\n")
    from miotui.decoding.whole import decode_paths
    layers = decode_paths([str(log)]).layers()
    assert layers, "the clean line must decode"
    argv_file = tmp_path / "argv.json"
    fake_env.setenv("FAKE_MIOPEN_ARGV_FILE", str(argv_file))
    for layer in layers:
        res = run_layer(layer.problem, drv())
        assert res.status == "ok", res.message
        tokens = json.loads(argv_file.read_text())[1:]
        assert all(re.fullmatch(r"[A-Za-z0-9_.,\-]+", t) for t in tokens), tokens
    # a driver path full of shell syntax runs as a plain path
    weird = tmp_path / "dir with space;$(touch pwned)`touch pwned`"
    weird.mkdir()
    exe = weird / "MIOpenDriver"
    shutil.copy(fake_driver, exe)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    res = run_layer(SMALL, drv(driver_path=str(exe)))
    assert res.status == "ok", res.message
    res = run_layer(SMALL, drv(driver_path=str(exe), launcher=("env",), iters=7))
    assert res.status == "ok", res.message
    assert not marker.exists()


def test_driver_results_are_cached_but_errors_are_not(fake_env, drv):
    s = drv()
    first = run_layer(SMALL, s)
    assert run_layer(SMALL, s).cached
    fake_env.setenv("FAKE_MIOPEN_STYLE", "runerror")
    s2 = drv(iters=4)
    assert run_layer(SMALL, s2).status == "error"
    fake_env.setenv("FAKE_MIOPEN_STYLE", "rocm61")
    again = run_layer(SMALL, s2)
    assert again.status == "ok" and not again.cached
    assert first.status == "ok"

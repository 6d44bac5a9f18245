"""The numpy convolution reference against torch CPU (float64), every direction and geometry."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
import tracemalloc
from concurrent.futures import wait

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from miotui.execute import conv as C
from miotui.execute import conv_forward as CF
from miotui.execute import conv_geometry as CG
from miotui.execute import numba_kernels
from miotui.execute import reference as R
from miotui.execute import threads as T
from miotui.problems import ConvProblem, ProblemError

torch = pytest.importorskip("torch")
F = torch.nn.functional

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _t(a: np.ndarray) -> "torch.Tensor":
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


def torch_conv(p: ConvProblem, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The problem's output computed by torch in float64 (autograd for bwd/wrw)."""
    nd = p.ndim
    if p.mode == "trans":
        conv_t = F.conv_transpose2d if nd == 2 else F.conv_transpose3d

        def fwd(x, w):
            return conv_t(x, w, stride=p.strides, padding=p.pads, output_padding=p.trans_output_pads,
                          dilation=p.dilations, groups=p.groups)
    else:
        conv = F.conv2d if nd == 2 else F.conv3d
        if p.pad_mode == "same":
            # out = ceil(in/stride); total padding split floor/ceil (before/after)
            spec = []
            for i in reversed(range(nd)):
                eff = p.dilations[i] * (p.filter[i] - 1) + 1
                total = max((p.out_spatial[i] - 1) * p.strides[i] + eff - p.in_spatial[i], 0)
                spec += [total // 2, total - total // 2]
            pads = (0,) * nd
        else:
            spec = [0] * (2 * nd)
            pads = (0,) * nd if p.pad_mode == "valid" else p.pads

        def fwd(x, w):
            return conv(F.pad(x, spec), w, stride=p.strides, padding=pads, dilation=p.dilations,
                        groups=p.groups)
    if p.direction == "fwd":
        return fwd(_t(inputs["x"]), _t(inputs["w"])).numpy()
    if p.direction == "bwd":
        x = torch.zeros(p.input_shape, dtype=torch.float64, requires_grad=True)
        fwd(x, _t(inputs["w"])).backward(_t(inputs["dy"]))
        return x.grad.numpy()
    w = torch.zeros(p.weight_shape, dtype=torch.float64, requires_grad=True)
    fwd(_t(inputs["x"]), w).backward(_t(inputs["dy"]))
    return w.grad.numpy()


@st.composite
def conv_problems(draw, dtypes=("fp32",), allow_3d: bool = True, max_group_channels: int = 3):
    nd = draw(st.sampled_from((2, 2, 3) if allow_3d else (2,)))
    groups = draw(st.integers(1, 3))
    cg = draw(st.integers(1, max_group_channels))
    kg = draw(st.integers(1, 3))
    mode = draw(st.sampled_from(("conv", "conv", "trans")))
    filt = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dils = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(nd))
    size_max = 7 if nd == 2 else 5
    in_sp = tuple(draw(st.integers(1, size_max)) for _ in range(nd))
    adj: tuple[int, ...] = (0,) * nd
    pad_mode = "default"
    if mode == "trans":
        adj = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(strides, dils, strict=True))
        pads = tuple(min(p, d * (f - 1)) for p, d, f in zip(pads, dils, filt, strict=True))
    else:
        pad_mode = draw(st.sampled_from(("default", "default", "same", "valid")))
    try:
        p = ConvProblem(draw(st.sampled_from(("fwd", "bwd", "wrw"))), draw(st.sampled_from(dtypes)),
                        draw(st.integers(1, 3)), groups * cg, groups * kg, in_sp, filt, pads, strides, dils,
                        groups=groups, mode=mode, trans_output_pads=adj, pad_mode=pad_mode)
    except ProblemError:
        assume(False)
        raise
    assume(not p.output_clamped)   # MIOpen's clamp to a 1-pixel output: not what torch computes
    return p


@SETTINGS
@given(p=conv_problems(), seed=st.integers(0, 3))
def test_conv_matches_torch_fp64_and_fp32(p: ConvProblem, seed: int, rel_err) -> None:
    inputs = R.make_inputs(p, seed)
    expect = torch_conv(p, inputs)
    (out64,) = R.run_reference(p, inputs, precision="fp64").values()
    assert out64.dtype == np.float64 and out64.shape == expect.shape
    assert rel_err(out64, expect) < 1e-12
    (out32,) = R.run_reference(p, inputs).values()
    assert out32.dtype == np.float32
    assert rel_err(out32, expect) < 1e-5


@settings(max_examples=15, deadline=None)
@given(p=conv_problems(dtypes=("fp16", "bf16"), allow_3d=False), seed=st.integers(0, 3))
def test_fp16_bf16_inputs_computed_in_fp32(p: ConvProblem, seed: int, rel_err) -> None:
    inputs = R.make_inputs(p, seed)
    for a in inputs.values():
        if p.dtype == "fp16":
            assert a.dtype == np.float16
        else:  # bf16: float32 holding values with the low 16 bits clear
            assert a.dtype == np.float32
            assert not np.any(a.view(np.uint32) & 0xFFFF)
    expect = torch_conv(p, inputs)
    (out,) = R.run_reference(p, inputs).values()
    assert out.dtype == np.float32
    assert rel_err(out, expect) < 1e-5


def test_int8_is_exact_int32() -> None:
    for direction in ("fwd", "bwd", "wrw"):
        p = ConvProblem(direction, "int8", 2, 8, 6, (7, 6), (3, 3), (1, 1), (2, 1), (1, 1), groups=2)
        inputs = R.make_inputs(p, 5)
        assert all(a.dtype == np.int8 for a in inputs.values())
        (out,) = R.run_reference(p, inputs).values()
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out, np.rint(torch_conv(p, inputs)).astype(np.int32))


def test_int8_large_reduction_falls_back_to_float64_exactly() -> None:
    # |x|,|w| <= 127 and a reduction of 2304 exceed 2**24: float32 would round
    p = ConvProblem("fwd", "int8", 1, 256, 4, (3, 3), (3, 3), (1, 1), (1, 1), (1, 1))
    rng = np.random.default_rng(0)
    inputs = {"x": rng.integers(-127, 128, p.input_shape).astype(np.int8),
              "w": rng.integers(-127, 128, p.weight_shape).astype(np.int8)}
    (out,) = R.run_reference(p, inputs).values()
    exact = np.einsum("ncij,kcij->nk", inputs["x"].astype(np.int64)[:, :, :, :],
                      inputs["w"].astype(np.int64))  # centre pixel, full overlap
    assert out[:, :, 1, 1].astype(np.int64).tolist() == exact.tolist()


@pytest.mark.skipif(numba_kernels.available() is not None, reason="numba not installed")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=conv_problems(max_group_channels=3), seed=st.integers(0, 3))
def test_numba_engine_matches_numpy(p: ConvProblem, seed: int, rel_err) -> None:
    assume(p.groups > 1)
    inputs = R.make_inputs(p, seed)
    (ref,) = R.run_reference(p, inputs, precision="fp64").values()
    (out64,) = R.run_reference(p, inputs, precision="fp64", engine="numba").values()
    (out32,) = R.run_reference(p, inputs, engine="numba").values()
    uses = numba_kernels.conv_applies(R.conv_geometry(p), numba_kernels.kernel_of(p))
    assert ("numba" in R.engine_used(p, "numba")) == uses
    assert rel_err(out64, ref) < 1e-12
    # the kernels themselves, whether or not the engine picks them for this geometry
    g = R.conv_geometry(p)
    arrays = [inputs[n].astype(np.float64) for n in R.tensor_names(p)[0]]
    direct = C.conv_direction(p.direction, p.mode == "trans", arrays, g, R.CHUNK_BYTES, None, True)
    assert rel_err(direct, ref) < 1e-12
    assert rel_err(out32, ref) < 1e-5


def test_numba_kernel_choice() -> None:
    dw = ConvProblem("fwd", "fp32", 2, 32, 32, (14, 14), (3, 3), (1, 1), (2, 2), (1, 1), groups=32)
    g = R.conv_geometry(dw)
    assert numba_kernels.kernel_of(dw) == "fwd"
    assert numba_kernels.kernel_of(dataclasses.replace(dw, mode="trans")) == "bwd"
    assert numba_kernels.kernel_of(dataclasses.replace(dw, direction="bwd")) == "bwd"
    assert numba_kernels.conv_applies(g, "fwd")   # depthwise, out == ceil(in/stride): plane-stacked kernels
    assert numba_kernels.conv_applies(g, "wrw")
    assert numba_kernels.conv_applies(g, "bwd")
    grouped = R.conv_geometry(ConvProblem("fwd", "fp32", 2, 64, 64, (14, 14), (3, 3), (1, 1), (2, 2), (1, 1),
                                          groups=32))
    assert not numba_kernels.conv_applies(grouped, "fwd")   # C/G = 2, stride 2, small plane: numpy is faster
    assert not numba_kernels.conv_applies(grouped, "wrw")
    assert numba_kernels.conv_applies(grouped, "bwd")
    assert numba_kernels.conv_applies(R.conv_geometry(dataclasses.replace(dw, strides=(1, 1))), "fwd")


def test_numba_engine_falls_back_for_dense_layers() -> None:
    p = ConvProblem("fwd", "fp32", 2, 8, 8, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1))
    inputs = R.make_inputs(p)
    assert "numpy" in R.engine_used(p, "numba")
    np.testing.assert_array_equal(R.run_reference(p, inputs, engine="numba")["y"],
                                  R.run_reference(p, inputs)["y"])


@pytest.mark.parametrize("direction", ["fwd", "bwd", "wrw"])
@pytest.mark.parametrize("mode", ["conv", "trans"])
def test_chunking_and_row_splits_give_the_same_result(direction: str, mode: str, rel_err) -> None:
    p = ConvProblem(direction, "fp32", 5, 6, 4, (9, 8), (3, 3), (1, 1), (2, 2), (1, 1), mode=mode)
    inputs = R.make_inputs(p, 1)
    (whole,) = R.run_reference(p, inputs, precision="fp64").values()
    for budget in (1, 2000, 20000):   # 1 byte: one output row per chunk
        (part,) = R.run_reference(p, inputs, precision="fp64", chunk_bytes=budget).values()
        assert rel_err(part, whole) < 1e-13


def test_batch_split_over_threads_matches_single_thread(monkeypatch: pytest.MonkeyPatch, rel_err) -> None:
    p = ConvProblem("wrw", "fp32", 4, 8, 8, (10, 10), (3, 3), (1, 1), (1, 1), (1, 1))
    inputs = R.make_inputs(p, 2)
    monkeypatch.setattr(T, "THREADS", 2)
    assert C.split_parts(R.conv_geometry(p), False) in (1, 2)
    (a,) = R.run_reference(p, inputs, precision="fp64").values()
    monkeypatch.setattr(T, "THREADS", 1)
    (b,) = R.run_reference(p, inputs, precision="fp64").values()
    assert rel_err(a, b) < 1e-13


def test_nhwc_problem_computes_the_same_logical_result() -> None:
    nchw = ConvProblem("fwd", "fp32", 2, 4, 6, (5, 5), (3, 3), (1, 1), (1, 1), (1, 1))
    nhwc = dataclasses.replace(nchw, in_layout="NHWC", fil_layout="NHWC", out_layout="NHWC")
    inputs = R.make_inputs(nchw, 3)
    assert {k: v.shape for k, v in R.make_inputs(nhwc, 3).items()} == {k: v.shape for k, v in inputs.items()}
    # an NHWC-strided array (as a channels-last framework tensor would be) is accepted
    strided = {k: np.ascontiguousarray(v.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2) for k, v in inputs.items()}
    np.testing.assert_array_equal(R.run_reference(nhwc, strided)["y"], R.run_reference(nchw, inputs)["y"])


def test_make_inputs_names_shapes_and_determinism() -> None:
    fwd = ConvProblem("fwd", "fp32", 2, 4, 6, (5, 5), (3, 3), (1, 1), (1, 1), (1, 1), mode="trans")
    wrw = dataclasses.replace(fwd, direction="wrw")
    bwd = dataclasses.replace(fwd, direction="bwd")
    a, b, c = R.make_inputs(fwd, 7), R.make_inputs(wrw, 7), R.make_inputs(bwd, 7)
    assert set(a) == {"x", "w"} and set(b) == {"x", "dy"} and set(c) == {"dy", "w"}
    assert a["x"].shape == fwd.input_shape and a["w"].shape == fwd.weight_shape
    assert c["dy"].shape == fwd.output_shape
    np.testing.assert_array_equal(a["x"], b["x"])       # same tensor, same stream
    assert not np.array_equal(R.make_inputs(fwd, 8)["x"], a["x"])
    assert R.run_reference(fwd, a)["y"].shape == fwd.output_shape
    assert R.run_reference(wrw, b)["dw"].shape == fwd.weight_shape
    assert R.run_reference(bwd, c)["dx"].shape == fwd.input_shape


def test_wrong_shape_is_rejected() -> None:
    p = ConvProblem("fwd", "fp32", 2, 4, 6, (5, 5), (3, 3), (1, 1), (1, 1), (1, 1))
    inputs = R.make_inputs(p)
    inputs["w"] = inputs["w"][:, :2]
    with pytest.raises(ValueError, match="shape"):
        R.run_reference(p, inputs)
    with pytest.raises(KeyError):
        R.run_reference(p, {"x": inputs["x"]})


def test_cancel_raises_cancelled() -> None:
    p = ConvProblem("fwd", "fp32", 4, 4, 4, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1))
    ev = threading.Event()
    ev.set()
    with pytest.raises(R.Cancelled):
        R.run_reference(p, R.make_inputs(p), cancel=ev)


def test_cancel_between_chunks() -> None:
    p = ConvProblem("fwd", "fp32", 6, 8, 8, (12, 12), (3, 3), (1, 1), (1, 1), (1, 1))
    inputs = R.make_inputs(p)
    ev = threading.Event()
    calls = {"n": 0}
    real = CF.gather

    def gather_then_cancel(*args, **kw):
        calls["n"] += 1
        ev.set()
        return real(*args, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CF, "gather", gather_then_cancel)
        mp.setattr(T, "THREADS", 1)
        with pytest.raises(R.Cancelled):
            R.run_reference(p, inputs, cancel=ev, chunk_bytes=10_000)
    assert calls["n"] == 1   # stopped after the first chunk


@pytest.mark.parametrize("direction", ["fwd", "bwd", "wrw"])
@pytest.mark.parametrize("stride", [1, 2])
def test_peak_bytes_bounds_the_measured_peak(direction: str, stride: int) -> None:
    p = ConvProblem(direction, "fp16", 4, 32, 48, (28, 28), (3, 3), (1, 1), (stride, stride), (1, 1))
    inputs = R.make_inputs(p)
    slack = 256 << 10   # Python objects tracemalloc also counts (threads, futures, views)
    for precision in ("fp32", "fp64"):
        R.run_reference(p, inputs, precision=precision)   # one-time set-up (thread pool, ctypes) first
        R.release_workspace()
        predicted = R.peak_bytes(p, precision)
        inputs_bytes = sum(a.nbytes for a in inputs.values())
        tracemalloc.start()
        try:
            R.run_reference(p, inputs, precision=precision)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        R.release_workspace()
        # tracemalloc sees numpy's allocations from the run (inputs existed before)
        assert peak + inputs_bytes <= predicted * 1.05 + slack, (peak, inputs_bytes, predicted)
        assert predicted < 4 * (peak + inputs_bytes), (peak, inputs_bytes, predicted)


def test_chunk_budget_bounds_memory_of_a_huge_layer() -> None:
    # whole-batch im2col: 64 * 256 * 9 * 56*56 * 4 bytes = 1.85 GB
    p = ConvProblem("fwd", "fp32", 64, 256, 256, (56, 56), (3, 3), (1, 1), (1, 1), (1, 1))
    g = R.conv_geometry(p)
    im2col = p.n * p.c * 9 * math.prod(p.out_spatial) * 4
    tensors = (math.prod(p.input_shape) + math.prod(p.output_shape) + math.prod(p.weight_shape)) * 4
    small = R.peak_bytes(p, chunk_bytes=16 << 20)
    assert small < tensors + 4 * (16 << 20) + tensors // 2
    assert small < im2col / 3
    assert R.peak_bytes(p, chunk_bytes=1 << 40) > im2col
    # a single image larger than the budget splits its rows
    plan = CG.conv_plan(g, 4, 1 << 20)
    assert plan.images == 1 and plan.rows < p.out_spatial[0]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=conv_problems(), seed=st.integers(0, 3), batched_min=st.sampled_from((1, 1 << 30)),
       budget=st.sampled_from((None, 1, 3000)))
def test_layout_and_gather_variants_match_torch(p: ConvProblem, seed: int, batched_min: int,
                                                budget: int | None, rel_err) -> None:
    """Small problems with the size thresholds lowered, so every code path runs on them:
    per-image and long-GEMM layouts, the phase-split gather of strided layers, the
    per-image weight gradient of 1x1 filters, and row-split chunks."""
    inputs = R.make_inputs(p, seed)
    expect = torch_conv(p, inputs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CG, "PHASE_MIN_ROW", 1)
        mp.setattr(CG, "PHASE_MIN_TAPS_PER_STRIDE", 0)
        mp.setattr(CG, "BATCHED_MIN_SPATIAL", batched_min)
        mp.setattr(CG, "BATCHED_MIN_SPATIAL_1X1", batched_min)
        (out64,) = R.run_reference(p, inputs, precision="fp64", chunk_bytes=budget).values()
        (out32,) = R.run_reference(p, inputs, chunk_bytes=budget).values()
    assert rel_err(out64, expect) < 1e-12
    assert rel_err(out32, expect) < 1e-5


def test_phase_gather_is_used_for_strided_rows_and_matches_the_plain_gather(rel_err) -> None:
    # ResNet's stem geometry, small: 7x7 stride 2 pad 3; and a dilated 5x5 stride 2
    for p in (ConvProblem("fwd", "fp32", 2, 3, 4, (40, 38), (7, 7), (3, 3), (2, 2), (1, 1)),
              ConvProblem("wrw", "fp32", 2, 4, 3, (41, 44), (5, 5), (2, 1), (3, 2), (2, 2))):
        g = R.conv_geometry(p)
        assert CG.uses_phases(g)
        inputs = R.make_inputs(p, 4)
        (fast,) = R.run_reference(p, inputs, precision="fp64").values()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(CG, "PHASE_GATHER", False)
            assert not CG.uses_phases(g)
            (plain,) = R.run_reference(p, inputs, precision="fp64").values()
        assert rel_err(fast, plain) < 1e-13
        assert rel_err(fast, torch_conv(p, inputs)) < 1e-12
    # a 1x1 filter has a single tap, a 3x3 stride 2 too few: no phase split
    assert not CG.uses_phases(R.conv_geometry(
        ConvProblem("fwd", "fp32", 2, 8, 8, (40, 40), (1, 1), (0, 0), (2, 2), (1, 1))))
    assert not CG.uses_phases(R.conv_geometry(
        ConvProblem("fwd", "fp32", 2, 8, 8, (40, 40), (3, 3), (1, 1), (2, 2), (1, 1))))


@pytest.mark.parametrize("mode", ["conv", "trans"])
@pytest.mark.parametrize("pad,stride,groups", [(0, 2, 1), (1, 2, 2), (0, 1, 1), (1, 1, 2)])
def test_weight_gradient_of_1x1_filters_per_image(mode: str, pad: int, stride: int, groups: int, rel_err) -> None:
    # 12x12 = 144 output pixels: the per-image GEMM path (>= BATCHED_MIN_SPATIAL_1X1)
    size = 12 * stride - (stride - 1) - 2 * pad if mode == "conv" else 12
    p = ConvProblem("wrw", "fp32", 3, 6, 4, (size, size), (1, 1), (pad, pad), (stride, stride), (1, 1),
                    groups=groups, mode=mode)
    g = R.conv_geometry(p)
    assert g.out_elems >= CG.BATCHED_MIN_SPATIAL_1X1
    inputs = R.make_inputs(p, 6)
    expect = torch_conv(p, inputs)
    per_image = g.cu * g.out_elems * 8
    for budget in (None, per_image, 2 * per_image):   # one chunk; one and two images per chunk
        (out,) = R.run_reference(p, inputs, precision="fp64", chunk_bytes=budget).values()
        assert rel_err(out, expect) < 1e-12, budget


def test_worker_threads_end_on_shutdown_and_come_back_for_the_next_run(monkeypatch) -> None:
    monkeypatch.setattr(T, "THREADS", 2)
    p = ConvProblem("fwd", "fp32", 4, 8, 8, (32, 32), (3, 3), (1, 1), (1, 1), (1, 1))
    inputs = R.make_inputs(p)
    first = R.run_reference(p, inputs)
    assert C.split_parts(R.conv_geometry(p), False) == 2   # so the run used the pool
    R.shutdown_threads()
    deadline = time.monotonic() + 5
    while any(t.name.startswith("miotui-ref") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not [t for t in threading.enumerate() if t.name.startswith("miotui-ref")]
    np.testing.assert_array_equal(R.run_reference(p, inputs)["y"], first["y"])


def test_a_run_whose_parts_shutdown_drops_ends_cancelled_not_failed(monkeypatch) -> None:
    """The app quits (shutdown_threads) while a split run's parts wait in the queue:
    the run ends with Cancelled, which the runner reports as cancelled, not as an error."""
    monkeypatch.setattr(T, "THREADS", 2)
    R.shutdown_threads()
    p = ConvProblem("fwd", "fp32", 4, 8, 8, (32, 32), (3, 3), (1, 1), (1, 1), (1, 1))
    assert C.split_parts(R.conv_geometry(p), False) == 2
    inputs = R.make_inputs(p)
    pool = T.split_pool()
    release = threading.Event()
    busy = [pool.submit(release.wait) for _ in range(2)]   # both workers taken: the parts queue
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            R.run_reference(p, inputs)
        except BaseException as e:   # noqa: BLE001 - the test reads what came out
            outcome.append(e)

    runner = threading.Thread(target=run, daemon=True)
    try:
        runner.start()
        deadline = time.monotonic() + 10
        while pool._work_queue.qsize() < 2 and time.monotonic() < deadline and not outcome:
            time.sleep(0.005)   # until both parts wait in the queue
        queued = pool._work_queue.qsize()
        R.shutdown_threads()
    finally:
        release.set()
    runner.join(10)
    assert queued >= 2 and not runner.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], R.Cancelled), outcome
    wait(busy, timeout=10)   # the workers finish what they held once released
    assert all(f.done() for f in busy)
    assert not any(T.all_workspaces), "shutdown_threads frees the cached scratch buffers"

"""The plane-stacked depthwise numba kernels against the numpy reference (float64).

The kernels read every filter tap at a constant flat offset and zero the padding reads
with per-tap masks; these tests aim at what that can get wrong: plane, row and channel
edges, stride phases of odd sizes, dilation, padding on one side only, 3-D, partial
channel blocks, the thread split, batch chunks, cancellation and non-finite inputs.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from miotui.execute import conv as C
from miotui.execute import numba_kernels as NK
from miotui.execute import numba_plans as NP
from miotui.execute import reference as R
from miotui.problems import ConvProblem, ProblemError

pytestmark = pytest.mark.skipif(NK.available() is not None, reason="numba not installed")


@st.composite
def depthwise_problems(draw) -> ConvProblem:
    """Depthwise problems whose output is ceil(input / stride) on every axis (the
    plane-stacked kernels' domain), in either pad split, normal or transposed."""
    nd = draw(st.sampled_from((2, 2, 2, 3)))
    direction = draw(st.sampled_from(("fwd", "bwd", "wrw")))
    mode = draw(st.sampled_from(("conv", "conv", "trans")))
    c = draw(st.integers(1, 40))
    spatial, filt, strides, dils, pads = [], [], [], [], []
    for _ in range(nd):
        s = draw(st.integers(1, 3))
        f = draw(st.integers(1, 5 if nd == 2 else 3))
        d = draw(st.integers(1, 2))
        size = draw(st.integers(1, 13 if nd == 2 else 6))
        eff = d * (f - 1) + 1
        # symmetric pads giving out == ceil(in / s)
        fits = [q for q in range(eff + 1) if (size + 2 * q - eff) // s + 1 == -(-size // s) and size + 2 * q >= eff]
        assume(fits)
        spatial.append(size)
        filt.append(f)
        strides.append(s)
        dils.append(d)
        pads.append(draw(st.sampled_from(fits)))
    try:
        p = ConvProblem(direction, "fp32", draw(st.integers(1, 3)), c, c, tuple(spatial), tuple(filt),
                        tuple(pads), tuple(strides), tuple(dils), groups=c, mode=mode)
    except ProblemError:   # a transposed problem with these sizes can be empty
        assume(False)
    g = R.conv_geometry(p)
    assume(min(g.out_sp) >= 1 and NP.dw_shape_ok(g))   # a transposed problem's underlying conv too
    return p


def _direct(p: ConvProblem, inputs: dict[str, np.ndarray], dtype: type) -> np.ndarray:
    g = R.conv_geometry(p)
    arrays = [inputs[n].astype(dtype) for n in R.tensor_names(p)[0]]
    return C.conv_direction(p.direction, p.mode == "trans", arrays, g, R.CHUNK_BYTES, None, True)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=depthwise_problems(), seed=st.integers(0, 3))
def test_depthwise_kernels_match_numpy(p: ConvProblem, seed: int, rel_err) -> None:
    g = R.conv_geometry(p)
    assert NP.dw_plan(g) is not None, "the strategy must reach the plane-stacked kernels"
    assert NK.conv_applies(g, NK.kernel_of(p)) == (p.groups > 1)   # one channel: a dense conv
    inputs = R.make_inputs(p, seed)
    (ref,) = R.run_reference(p, inputs, precision="fp64").values()
    assert rel_err(_direct(p, inputs, np.float64), ref) < 1e-12
    assert rel_err(_direct(p, inputs, np.float32), ref) < 1e-5


@pytest.mark.parametrize("direction", ["fwd", "bwd", "wrw"])
@pytest.mark.parametrize("stride", [1, 2])
def test_threads_blocks_and_chunks_give_the_same_result(direction: str, stride: int,
                                                        monkeypatch: pytest.MonkeyPatch, rel_err) -> None:
    # 70 channels of 6x6 -> blocks of 8 channels (the last one partial) with a small block size
    p = ConvProblem(direction, "fp32", 5, 70, 70, (12, 12), (3, 3), (1, 1), (stride, stride), (1, 1), groups=70)
    inputs = R.make_inputs(p, 2)
    (ref,) = R.run_reference(p, inputs, precision="fp64").values()
    results = []
    for block, serial, chunk_images in ((4096, 1 << 40, None), (300, 0, None), (300, 0, 2)):
        monkeypatch.setattr(NP, "DW_BLOCK", block)
        monkeypatch.setattr(NK, "DW_SERIAL_ELEMS", serial)
        NP.dw_plan.cache_clear()
        if chunk_images:
            monkeypatch.setattr(NK, "batch_chunks",
                                lambda n, _b, k=chunk_images: [(a, min(a + k, n)) for a in range(0, n, k)])
        out = _direct(p, inputs, np.float64)
        assert rel_err(out, ref) < 1e-12
        results.append(out)
    NP.dw_plan.cache_clear()
    if direction != "wrw":   # every output value is one thread's sum in the same order
        np.testing.assert_array_equal(results[0], results[1])
        np.testing.assert_array_equal(results[1], results[2])


@pytest.mark.parametrize("direction", ["fwd", "bwd", "wrw"])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_inputs_do_not_spread(direction: str, stride: int, bad: float) -> None:
    """A masked read multiplies a 0 weight by an inf/NaN neighbour: the wrappers must
    notice and rerun on the zero-padding kernels, giving numpy's NaN pattern."""
    p = ConvProblem(direction, "fp32", 2, 8, 8, (6, 6), (3, 3), (1, 1), (stride, stride), (1, 1), groups=8)
    inputs = dict(R.make_inputs(p))
    name = "dy" if direction == "bwd" else "x"
    inputs[name] = inputs[name].copy()
    inputs[name][0, 3, 0, 2] = bad   # a left-edge value: the row above reads it through a mask
    (ours,) = R.run_reference(p, inputs, engine="numba").values()
    (ref,) = R.run_reference(p, inputs).values()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(ref))
    ok = np.isfinite(ref)
    np.testing.assert_allclose(ours[ok], ref[ok], rtol=1e-5, atol=1e-5)


def test_cancel_is_checked() -> None:
    p = ConvProblem("fwd", "fp32", 2, 16, 16, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1), groups=16)
    inputs = R.make_inputs(p)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(R.Cancelled):
        NK.conv_forward(inputs["x"], inputs["w"], R.conv_geometry(p), cancel)


def test_mobilenet_layers_use_the_plane_stacked_kernels() -> None:
    """Stride-2 depthwise layers now run in numba in every direction (they beat numpy)."""
    for c, h, s in ((576, 14, 2), (192, 28, 2), (960, 7, 1), (32, 112, 1)):
        for direction in ("fwd", "bwd", "wrw"):
            p = ConvProblem(direction, "fp32", 8, c, c, (h, h), (3, 3), (1, 1), (s, s), (1, 1), groups=c)
            g = R.conv_geometry(p)
            assert NP.dw_plan(g) is not None
            assert NK.conv_applies(g, NK.kernel_of(p))
            assert "numba" in R.engine_used(p, "numba")
    # a valid (unpadded) depthwise conv is outside the plane-stacked domain: phase-plane kernels
    valid = R.conv_geometry(ConvProblem("fwd", "fp32", 2, 8, 8, (9, 9), (3, 3), (0, 0), (1, 1), (1, 1), groups=8))
    assert NP.dw_plan(valid) is None and NK.conv_applies(valid, "fwd")
    # a depthwise 3-D layer whose weight tile would pass DW_MAX_TILE: phase-plane kernels
    big = R.conv_geometry(ConvProblem("fwd", "fp32", 1, 2, 2, (64, 64, 64), (3, 3, 3), (1, 1, 1), (1, 1, 1),
                                      (1, 1, 1), groups=2))
    assert NP.dw_plan(big) is None and NK.conv_applies(big, "fwd")

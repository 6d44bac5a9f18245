"""The memory guard: refuse before allocating, suggest a batch that fits."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui.execute import guard
from miotui.execute.backends import RunSettings
from miotui.execute.runner import clear_cache, run_layer
from miotui.problems import ConvProblem, PoolProblem, ProblemError

GiB = 1 << 30

# A 3-D segmentation layer at batch 256: about 64 GiB of fp32 input alone.
HUGE = ConvProblem("fwd", "fp32", 256, 64, 64, (128, 128, 128), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1))
SMALL = ConvProblem("fwd", "fp32", 2, 3, 4, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1))


def test_estimate_grows_with_batch_and_counts_the_fp64_reference():
    one = guard.estimate_bytes(guard.with_batch(HUGE, 1), "numpy")
    two = guard.estimate_bytes(guard.with_batch(HUGE, 2), "numpy")
    assert two > one
    # fp32 input of one image: 64 * 128**3 * 4 bytes = 512 MiB; the estimate holds it
    # (fp32 run) and its fp64 copy (reference) at least
    assert one >= 64 * 128 ** 3 * (4 + 8)
    assert guard.estimate_bytes(SMALL, "numpy", verify=False) < guard.estimate_bytes(SMALL, "numpy")
    assert guard.estimate_bytes(SMALL, "miopen-driver") == 0


def test_check_refuses_a_huge_layer_and_suggests_the_largest_batch():
    avail = 16 * GiB
    check = guard.check_memory(HUGE, "numpy", available=avail)
    assert not check.ok
    n = check.suggested_batch
    assert n is not None and 1 <= n < HUGE.n
    budget = guard.budget_for(avail)
    assert guard.estimate_bytes(guard.with_batch(HUGE, n), "numpy") <= budget
    assert guard.estimate_bytes(guard.with_batch(HUGE, n + 1), "numpy") > budget
    assert f"--batch {n}" in check.message and "N=256" in check.message
    assert "GiB" in check.message


def test_check_says_when_not_even_one_image_fits():
    check = guard.check_memory(HUGE, "numpy", available=1 * GiB)
    assert not check.ok and check.suggested_batch == 0
    assert "even one image" in check.message


def test_small_layer_fits():
    check = guard.check_memory(SMALL, "numpy", available=8 * GiB)
    assert check.ok and check.message == ""


def test_torch_gpu_estimate_checks_device_memory():
    check = guard.check_memory(guard.with_batch(HUGE, 4), "torch", available=1 << 50, device="cuda",
                               device_available=2 * GiB)
    assert not check.ok and check.where == "device" and "GPU memory" in check.message


def test_runner_refuses_without_allocating(monkeypatch):
    """The refusal comes before inputs are made: the run allocates next to nothing."""
    clear_cache()
    monkeypatch.setattr(guard, "available_memory", lambda: 16 * GiB)
    tracemalloc.start()
    try:
        res = run_layer(HUGE, RunSettings(backend="numpy"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.status == "refused"
    assert "--batch" in res.message
    assert peak < 50 << 20


def test_with_batch_validates():
    assert guard.with_batch(SMALL, 5).n == 5
    assert guard.with_batch(SMALL, 5).key != SMALL.key
    with pytest.raises(ProblemError):
        guard.with_batch(SMALL, 0)


def test_validate_rejects_non_problems():
    assert guard.validate(SMALL) is None
    assert "not a layer" in (guard.validate("conv -n 1") or "")


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 512), c=st.integers(1, 256), hw=st.integers(4, 256), budget_gib=st.integers(1, 64))
def test_suggested_batch_is_the_largest_that_fits(n, c, hw, budget_gib):
    """Property: the suggestion fits and one more image does not (estimates are monotone in N)."""
    p = PoolProblem("fwd", "fp32", n, c, (hw, hw), (2, 2), (0, 0), (2, 2))
    avail = budget_gib * GiB
    budget = guard.budget_for(avail)
    check = guard.check_memory(p, "numpy", available=avail)
    if check.ok:
        assert guard.estimate_bytes(p, "numpy") <= budget
        return
    k = check.suggested_batch
    assert k is not None and 0 <= k < n
    if k:
        assert guard.estimate_bytes(guard.with_batch(p, k), "numpy") <= budget
    assert guard.estimate_bytes(guard.with_batch(p, k + 1), "numpy") > budget

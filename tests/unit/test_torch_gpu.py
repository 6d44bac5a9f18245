"""The torch backend on a GPU (CUDA, or ROCm through torch.cuda): float32 without TF32,
device-side timing, the GPU memory guard.

The GPU tests run only where torch sees a GPU (they are skipped on CI's CPU machine and
were run on an H100 lent to a development session); the tests of the TF32 switch and of
the wall-clock timer run everywhere torch is installed.
"""

from __future__ import annotations

import time

import pytest

from miotui.execute import guard
from miotui.execute.backends import RunSettings, available_backends, get_backend
from miotui.execute.runner import run_layer
from miotui.execute.threads import Cancelled
from miotui.execute.torch_backend import GPU_QUEUE_AHEAD, TorchBackend, fp32_without_tf32, wait_for_event
from miotui.problems import BatchNormProblem, ConvProblem, PoolProblem

HAS_TORCH = available_backends()["torch"] is None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")


def _has_gpu() -> bool:
    if not HAS_TORCH:
        return False
    import torch
    return bool(torch.cuda.is_available())


needs_gpu = pytest.mark.skipif(not _has_gpu(), reason="torch sees no GPU here")

#: ResNet-50's 3x3 stage-2 layer at batch 4: cuDNN's TF32 kernels fail MIOpen's fp32 tolerance on it
LAYER = dict(n=4, c=64, k=64, in_spatial=(56, 56), filter=(3, 3), pads=(1, 1), strides=(1, 1), dilations=(1, 1))


pytestmark = pytest.mark.usefixtures("fresh_run_cache")


@needs_torch
def test_tf32_switch_uses_the_flags_other_torch_code_can_still_read():
    import torch
    before = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    try:
        fp32_without_tf32(torch)
        assert torch.backends.cudnn.allow_tf32 is False and torch.backends.cuda.matmul.allow_tf32 is False
        with torch.backends.cudnn.flags(enabled=True):   # raises on a "mix of legacy and new APIs"
            pass
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before


@needs_torch
def test_cpu_timing_is_the_wall_clock_and_says_nothing_more():
    tb = TorchBackend()
    tb._device = "cpu"
    p = ConvProblem("fwd", "fp32", 1, 4, 4, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1))
    from miotui.execute.reference import make_inputs
    prepared = tb.prepare(p, make_inputs(p))
    calls: list[int] = []
    t0 = time.perf_counter()
    raw, times = tb.time_calls(p, prepared, 3, None, calls.append)
    assert calls == [0, 1, 2] and len(times) == 3
    assert 0 < sum(times) <= (time.perf_counter() - t0) * 1e3
    assert raw["y"].shape == (1, 4, 8, 8)
    assert tb.timer() == ""


@needs_gpu
def test_the_backend_runs_on_the_gpu_and_says_tf32_is_off():
    tb = get_backend("torch")
    assert tb.device == "cuda"
    import torch
    assert torch.backends.cudnn.allow_tf32 is False
    assert "(TF32 off)" in tb.describe(ConvProblem("fwd", "fp32", **LAYER))
    assert "(TF32 off)" not in tb.describe(ConvProblem("fwd", "fp16", **LAYER))


@needs_gpu
@pytest.mark.parametrize("direction", ["fwd", "bwd", "wrw"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_gpu_convolutions_verify_within_miopens_tolerance(direction, dtype):
    res = run_layer(ConvProblem(direction, dtype, **LAYER), RunSettings(backend="torch", iters=3))
    assert res.status == "ok", res.message
    assert res.verification.ok and res.verification.error <= res.verification.tolerance
    assert "CUDA" in res.engine or "ROCm" in res.engine


@needs_gpu
def test_gpu_grouped_strided_3d_and_transposed_layers_verify():
    layers = [
        ConvProblem("fwd", "fp32", 2, 32, 32, (28, 28), (3, 3), (1, 1), (2, 2), (1, 1), groups=32),
        ConvProblem("wrw", "fp32", 2, 16, 8, (6, 10, 10), (3, 3, 3), (1, 1, 1), (1, 2, 2), (1, 1, 1)),
        ConvProblem("bwd", "fp32", 2, 8, 16, (9, 9), (3, 3), (0, 0), (2, 2), (2, 2), mode="trans",
                    trans_output_pads=(1, 1)),
        PoolProblem("bwd", "fp32", 2, 8, (12, 12), (3, 3), (1, 1), (2, 2), "max"),
        BatchNormProblem("fwd_train", "fp32", 4, 16, (14, 14), "spatial"),
    ]
    for p in layers:
        res = run_layer(p, RunSettings(backend="torch", iters=2))
        assert res.status == "ok", (p, res.message)


@needs_gpu
def test_gpu_times_are_device_time_from_events():
    p = ConvProblem("fwd", "fp32", **LAYER)
    res = run_layer(p, RunSettings(backend="torch", iters=20, warmup=3, verify=False))
    assert res.status == "ok", res.message
    assert "GPU kernel time" in res.message and "torch.cuda events" in res.message
    # the wall clock around call + synchronize, the way CPU runs are timed, is never shorter
    tb = get_backend("torch")
    from miotui.execute.reference import make_inputs
    prepared = tb.prepare(p, make_inputs(p))
    wall = []
    for _ in range(20):
        t0 = time.perf_counter()
        tb.run(p, prepared, None)
        tb.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
    assert 0 < res.min_ms <= sorted(wall)[len(wall) // 2]


@needs_gpu
def test_gpu_memory_guard_refuses_a_layer_larger_than_the_gpu():
    import torch
    free, total = torch.cuda.mem_get_info()
    huge = ConvProblem("fwd", "fp32", 4096, 256, 256, (256, 256), (3, 3), (1, 1), (1, 1), (1, 1))
    check = guard.check_memory(huge, get_backend("torch"), available=1 << 50, device="cuda")
    assert not check.ok and "GPU memory" in check.message and check.where == "device"
    assert check.suggested_batch is not None and 1 <= check.suggested_batch < 4096
    assert check.available_bytes <= total


@needs_gpu
def test_gpu_run_cancels_between_queued_calls():
    import threading
    cancel = threading.Event()

    def progress(text: str) -> None:
        if "iteration 3/" in text:
            cancel.set()

    p = ConvProblem("fwd", "fp32", **LAYER)
    res = run_layer(p, RunSettings(backend="torch", iters=50), cancel=cancel, on_progress=progress)
    assert res.status == "cancelled", res.message


class _FakeNeverDoneEvent:
    """Stands in for a torch.cuda.Event the GPU never reaches (a hung or very long call):
    the CPU machine that runs CI has no CUDA events to wait on."""

    def __init__(self) -> None:
        self.polls = 0

    def query(self) -> bool:
        self.polls += 1
        return False


def test_waiting_for_the_gpu_answers_a_cancel_from_another_thread():
    import threading
    cancel = threading.Event()
    event = _FakeNeverDoneEvent()
    threading.Timer(0.05, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        wait_for_event(event, cancel)
    assert event.polls > 1 and time.monotonic() - t0 < 5


@needs_gpu
def test_gpu_run_cancelled_after_the_last_call_is_queued_does_not_wait_for_the_gpu():
    """The cancel comes when every call is already queued: no synchronize holds the
    run until they finish."""
    import threading
    cancel = threading.Event()
    iters = 3 * GPU_QUEUE_AHEAD

    def progress(text: str) -> None:
        if f"iteration {iters}/" in text:
            cancel.set()

    p = ConvProblem("fwd", "fp32", **LAYER)
    res = run_layer(p, RunSettings(backend="torch", iters=iters, verify=False), cancel=cancel, on_progress=progress)
    assert res.status == "cancelled", res.message


@needs_gpu
def test_gpu_run_times_out_while_calls_are_queued():
    big = dict(LAYER, n=64)
    p = ConvProblem("fwd", "fp32", **big)
    res = run_layer(p, RunSettings(backend="torch", iters=2000, verify=False, timeout_s=0.5))
    assert res.status == "error" and "timed out" in res.message, res.message


@needs_gpu
def test_gpu_run_turns_tf32_off_again_if_other_code_turned_it_on():
    import torch
    p = ConvProblem("fwd", "fp32", **LAYER)
    tb = get_backend("torch")
    assert tb.device == "cuda"
    torch.backends.cudnn.allow_tf32 = True
    res = run_layer(p, RunSettings(backend="torch", iters=3))
    assert res.status == "ok", res.message
    assert torch.backends.cudnn.allow_tf32 is False


def _kernel_ms_per_call(p: ConvProblem, calls: int) -> float:
    """What the GPU itself recorded per call: the durations of the kernels (and memsets)
    the calls launched, from a profiler trace, independent of miotui's events."""
    import json
    import os
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile

    from miotui.execute.reference import make_inputs
    tb = get_backend("torch")
    prepared = tb.prepare(p, make_inputs(p))
    for _ in range(3):
        tb.run(p, prepared, None)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            tb.run(p, prepared, None)
        torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    us = sum(e.get("dur", 0) for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset"))
    assert us > 0, "the profiler recorded no kernels"
    return us / 1e3 / calls


#: ResNet-50 layers at batch 16 that take 0.02-0.1 ms in fp16/bf16 on an H100: there the
#: host's launch time is longer than the kernels', the case the spin kernel is for
SMALL_LAYERS = [
    dict(n=16, c=64, k=64, in_spatial=(56, 56), filter=(1, 1), pads=(0, 0), strides=(1, 1), dilations=(1, 1)),
    dict(n=16, c=256, k=256, in_spatial=(14, 14), filter=(3, 3), pads=(1, 1), strides=(1, 1), dilations=(1, 1)),
    dict(n=16, c=2048, k=512, in_spatial=(7, 7), filter=(1, 1), pads=(0, 0), strides=(1, 1), dilations=(1, 1)),
]


@needs_gpu
@pytest.mark.parametrize("direction", ["fwd", "bwd", "wrw"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_gpu_time_is_the_kernels_own_time_on_small_low_precision_layers(direction, dtype):
    """Issue 19: fp16/bf16 medians were 1.7-2.5x the kernels' time (the GPU waited for the
    host between the start event and the first kernel).  Within 15% of the kernels' time
    counted here from a profiler trace of other calls of the same layer."""
    for shape in SMALL_LAYERS:
        p = ConvProblem(direction, dtype, **shape)
        res = run_layer(p, RunSettings(backend="torch", iters=50, warmup=3, verify=False))
        assert res.status == "ok", res.message
        kernels = _kernel_ms_per_call(p, 50)
        assert 0.85 * kernels <= res.median_ms <= 1.15 * kernels, (shape, res.median_ms, kernels, res.message)
        assert "GPU kernel time" in res.message, res.message
        span = float(res.message.split(" ms from a call's first kernel")[0].rsplit(" ", 1)[1])
        assert span >= res.min_ms, res.message


class _FakeEvent:
    """Stands in for the torch.cuda.Event after the spin kernel (CI has no GPU): ``done``
    says whether the GPU has passed it."""

    def __init__(self, done: bool) -> None:
        self.done = done

    def query(self) -> bool:
        return self.done


def test_the_spin_follows_the_host_and_grows_when_the_host_fell_behind():
    from miotui.execute.torch_backend import GpuHold
    hold = GpuHold(torch=None)
    assert hold.hold_ms == GpuHold.FIRST_HOLD_MS
    assert hold.ahead(_FakeEvent(done=False), queued_s=0.001) is True
    assert hold.hold_ms == pytest.approx(2.0)          # twice the host's 1 ms
    assert hold.ahead(_FakeEvent(done=True), queued_s=0.001) is False
    assert hold.hold_ms == pytest.approx(8.0)          # behind: four times that
    assert hold.ahead(_FakeEvent(done=False), queued_s=0.00001) is True
    assert hold.hold_ms == GpuHold.MIN_HOLD_MS

"""Reading the GPU's own time per call from a profiler trace (miotui.execute.kernel_time).

The traces here are written by hand in the Chrome JSON form torch.profiler exports (the
fields it writes: ph, cat, name, ts, dur, tid, args.correlation); the GPU tests in
test_torch_gpu.py read real ones."""

from __future__ import annotations

from miotui.execute.kernel_time import CALL_PREFIX, kernel_ms_per_call


def call(i: int, ts: float, dur: float, tid: int = 1) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": f"{CALL_PREFIX}{i}", "ts": ts, "dur": dur, "tid": tid}


def launch(corr: int, ts: float, tid: int = 1) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 2, "tid": tid,
            "args": {"correlation": corr}}


def kernel(corr: int, dur: float, cat: str = "kernel") -> dict:
    return {"ph": "X", "cat": cat, "name": "sm90_xmma_fprop", "ts": 1000 + corr, "dur": dur, "tid": 7,
            "args": {"correlation": corr}}


def test_each_call_gets_the_kernels_it_launched_and_the_spin_kernel_none():
    trace = [
        launch(1, 5), kernel(1, 500.0),                          # the spin kernel: outside every call
        call(0, 10, 20), launch(2, 12), kernel(2, 4.0), launch(3, 20), kernel(3, 1.5),
        launch(4, 22), kernel(4, 0.5, cat="gpu_memset"),
        call(1, 40, 20), launch(5, 45), kernel(5, 4.5),
        launch(6, 70), kernel(6, 3.0),                           # after the last call: none
    ]
    assert kernel_ms_per_call(trace, 2) == [0.006, 0.0045]


def test_a_call_with_no_kernel_or_a_trace_without_ranges_gives_no_answer():
    assert kernel_ms_per_call([call(0, 10, 20), launch(2, 12), kernel(2, 4.0), call(1, 40, 5)], 2) is None
    assert kernel_ms_per_call([launch(2, 12), kernel(2, 4.0)], 1) is None
    assert kernel_ms_per_call([], 1) is None


def test_ranges_are_per_thread():
    trace = [call(0, 10, 20, tid=1), launch(2, 12, tid=2), kernel(2, 4.0)]
    assert kernel_ms_per_call(trace, 1) is None

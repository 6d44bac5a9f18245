"""The torch backend: PyTorch's own kernels on the CPU or the GPU.

An independent implementation, so its numbers check the reference as much as the
reference checks it.  ``torch.cuda.is_available()`` is also true on ROCm builds, where
the GPU path is MIOpen itself.  On a GPU, float32 stays float32 (TF32 off) and times are
device time between events (:meth:`TorchBackend.time_calls`).  torch is imported only
when a run needs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import tempfile
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from miotui.execute.guard import torch_bytes
from miotui.execute.kernel_time import CALL_PREFIX, kernel_ms_per_call
from miotui.execute.protocol import InProcessBackend, MemoryEstimate, RunSettings
from miotui.execute.threads import Cancelled
from miotui.execute.torch_ops import torch_describe, torch_prepare, torch_run
from miotui.problems import BatchNormProblem, Problem

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


class TorchInputs:
    """Prepared torch tensors, whether they had to be upcast to float32, and what the layer
    set up ahead of its timed calls (:func:`miotui.execute.torch_ops.torch_prepare`)."""

    def __init__(self, tensors: dict[str, Any]):
        self.tensors = tensors
        self.upcast: str | bool = False
        self.state: dict[str, Any] = {}


class TorchBackend(InProcessBackend):
    """PyTorch's kernels.  Convolutions go through ``torch.nn.functional`` (forward) and
    ``aten.convolution_backward`` (what ``torch.nn.grad``/autograd use) for backward data
    and weights, so only the gradient asked for is computed."""

    name = "torch"
    label = "PyTorch"

    def __init__(self) -> None:
        self._why: Optional[str] = None
        self._checked = False
        self._device: Optional[str] = None
        # how the last GPU timing went (for :meth:`timer`): spin kernel used, batches, batches behind
        self._held = False
        self._batches = 0
        self._behind = 0
        self._span_ms: Optional[float] = None   # median event span when kernel times were read
        self._why_no_kernels = ""

    def unavailable(self, settings: Optional[RunSettings] = None) -> Optional[str]:
        if not self._checked:
            import importlib.util
            if importlib.util.find_spec("torch") is None:
                self._why = "torch is not installed (pip install torch)"
            self._checked = True
        return self._why

    @property
    def device(self) -> str:
        if self._device is None:
            import torch
            self._device = "cuda" if torch.cuda.is_available() else "cpu"
            if self._device == "cuda":
                fp32_without_tf32(torch)
        return self._device

    def memory_estimate(self, problem: Problem, settings: RunSettings,
                        device: Optional[str] = None) -> MemoryEstimate:
        """:func:`miotui.execute.guard.torch_bytes` on ``device`` (its own by default): on the
        CPU everything is host memory."""
        host, dev = torch_bytes(problem, device or self.device)
        return MemoryEstimate(host, dev)

    def free_device_bytes(self) -> Optional[int]:
        """The GPU's free memory as the CUDA/HIP runtime reports it (None on the CPU, or
        when torch cannot tell)."""
        try:
            import torch
            free, _total = torch.cuda.mem_get_info()
            return int(free)
        except Exception:
            return None

    def device_name(self) -> str:
        import torch
        if self.device == "cuda":
            try:
                name = torch.cuda.get_device_name(0)
            except Exception:  # pragma: no cover
                name = "GPU"
            kind = "ROCm" if getattr(torch.version, "hip", None) else "CUDA"
            return f"{kind} {name}"
        return "cpu"

    def applies(self, problem: Problem) -> Optional[str]:
        if problem.dtype == "int8":
            return "torch has no int8 kernels for this layer (MIOpen's int8 path has no torch equivalent)"
        if problem.dtype in ("fp8", "bf8"):
            return "torch has no fp8/bf8 kernels for this layer"
        return None

    @staticmethod
    def _torch_dtype(dtype: str) -> Any:
        """fp16/bf16/fp64 as themselves; fp32 and "unknown" as float32."""
        import torch
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp64": torch.float64}.get(dtype, torch.float32)

    def _dtype(self, problem: Problem) -> Any:
        return self._torch_dtype(problem.dtype)

    def describe(self, problem: Problem) -> str:
        import torch
        dt = str(self._dtype(problem)).replace("torch.", "")
        if dt == "float32" and self.device == "cuda":
            dt += " (TF32 off)"
        return f"torch {torch.__version__} {self.device_name()} {dt}{torch_describe(problem)}"

    def prepare(self, problem: Problem, inputs: dict[str, "np.ndarray"]) -> Any:
        """Torch copies of the inputs on the device, in the problem's dtype (batch-norm
        parameters in its ``param_dtype``): fp16 stays fp16, bf16 values become exact
        torch bfloat16."""
        import numpy as np
        import torch
        if self.device == "cuda":   # again: code sharing this process may have turned TF32 back on
            fp32_without_tf32(torch)
        dt = self._dtype(problem)
        pdt = self._torch_dtype(problem.param_dtype) if isinstance(problem, BatchNormProblem) else dt
        out = {}
        for name, a in inputs.items():
            t = torch.from_numpy(np.ascontiguousarray(a))
            if t.is_floating_point():
                t = t.to(dtype=dt if name in ("x", "dy", "w") else pdt)
            out[name] = t.to(self.device)
        prepared = TorchInputs(out)
        self._with_upcast(prepared, lambda: torch_prepare(problem, prepared.tensors, prepared.state))
        return prepared

    def run(self, problem: Problem, prepared: Any, cancel: Any) -> Any:
        """One call; if torch has no kernel for the low-precision dtype on this device
        (some CPU ops lack fp16), the run continues in float32 and says so."""
        return self._with_upcast(prepared, lambda: torch_run(problem, prepared.tensors, prepared.state))

    def _with_upcast(self, prepared: TorchInputs, call: Callable[[], Any]) -> Any:
        """``call()`` without gradients; once, on a missing fp16/bf16 kernel, again with the
        tensors in float32 (what the layer set up is dropped: it is rebuilt in float32)."""
        import torch
        with torch.no_grad():
            if not prepared.upcast:
                try:
                    return call()
                except (RuntimeError, NotImplementedError) as e:
                    if not any(t.dtype in (torch.float16, torch.bfloat16) for t in prepared.tensors.values()):
                        raise
                    first = (str(e).splitlines() or [""])[0][:80]
                    prepared.upcast = (f"torch has no {self.device} kernel for this dtype ({first}); "
                                       "computed in float32")
                    prepared.tensors = {k: (v.float() if v.is_floating_point() else v)
                                        for k, v in prepared.tensors.items()}
                    prepared.state.clear()
            return call()

    def note(self, prepared: Any) -> str:
        return prepared.upcast or ""

    def synchronize(self) -> None:
        if self.device == "cuda":
            import torch
            torch.cuda.synchronize()

    def time_calls(self, problem: Problem, prepared: Any, iters: int, cancel: Any,
                   before_call: Callable[[int], None]) -> tuple[Any, list[float]]:
        """On the GPU, the time of a call is the sum of the durations of the kernels it
        launched, read from the profiler's trace (:mod:`miotui.execute.kernel_time`): the
        quantity MIOpenDriver's kernel time sums too.  A pair of events around each call
        also gives its span (first kernel to last, the gaps between its kernels included),
        said in :meth:`timer`, and is the time itself where the profiler cannot run.

        Events only measure the GPU if it never waits for the host.  A layer of 0.005-0.1 ms
        runs faster on the GPU than Python can queue it (an H100 fp16 conv: about 20 us of
        host work per call), so the GPU idled between the start event and the first kernel
        and that idle time was counted: fp16/bf16 medians 1.7-2.5x the kernels' own time
        (up to 29x on a 4 us layer).  So each batch of calls is queued behind a spin kernel
        (:class:`GpuHold`) that keeps the GPU busy until the host has queued the batch.

        At most ``GPU_QUEUE_AHEAD`` calls wait on the GPU, and the host polls their events
        instead of blocking in a synchronize, so a cancel or timeout is answered within a
        batch; the calls already queued then finish on the GPU on their own."""
        if self.device != "cuda":
            return super().time_calls(problem, prepared, iters, cancel, before_call)
        import torch
        hold = GpuHold.make(torch)
        self._held, self._batches, self._behind, self._span_ms, self._why_no_kernels = hold is not None, 0, 0, None, ""
        profiler = start_profiler(torch)
        if isinstance(profiler, str):
            self._why_no_kernels, profiler = profiler, None
        raw: Any = None
        spans: list[float] = []
        done = 0
        try:
            while done < iters:
                batch = min(GPU_QUEUE_AHEAD, iters - done)
                released = hold.hold() if hold is not None else None
                events = []
                t0 = time.perf_counter()
                for _ in range(batch):
                    before_call(done)
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    with call_range(torch, profiler, done):
                        start.record()
                        raw = self.run(problem, prepared, cancel)
                        end.record()
                    events.append((start, end))
                    done += 1
                self._batches += 1
                if hold is not None and released is not None and not hold.ahead(released, time.perf_counter() - t0):
                    self._behind += 1
                wait_for_event(events[-1][1], cancel)
                spans += [start.elapsed_time(end) for start, end in events]
        finally:
            trace = stop_profiler(profiler)
        kernels = kernel_ms_per_call(trace, len(spans)) if trace is not None else None
        if kernels is None:
            self._why_no_kernels = (self._why_no_kernels
                                    or "the profiler's trace did not attribute a kernel to every call")
            return raw, spans
        self._span_ms = statistics.median(spans)
        return raw, kernels

    def timer(self) -> str:
        if self.device != "cuda":
            return ""
        if self._span_ms is not None:
            return ("GPU kernel time: the kernels each call launched, summed, from the profiler's trace; "
                    f"{self._span_ms:.4f} ms from a call's first kernel to its last between torch.cuda events")
        how = f"GPU time between torch.cuda events, gaps between kernels included ({self._why_no_kernels})"
        if not self._held:
            return how + "; no spin kernel on this torch: host launch gaps may count on fast layers"
        if self._behind:
            return how + (f"; the host fell behind the GPU in {self._behind} of {self._batches} batches: "
                          "their times include launch gaps")
        return how + "; calls queued behind a spin kernel (launch gaps not counted)"

    def outputs(self, problem: Problem, raw: Any) -> dict[str, "np.ndarray"]:
        import numpy as np
        import torch
        res = {}
        for name, t in raw.items():
            t = t.detach().to("cpu")
            if t.dtype in (torch.float16, torch.float32, torch.float64):
                res[name] = t.numpy()
            elif t.is_floating_point():   # bfloat16: numpy has no such type; exact in float32
                res[name] = t.to(torch.float32).numpy()
            else:
                res[name] = np.asarray(t.numpy())
        return res


#: calls a GPU run keeps queued ahead of the host: enough to keep the device busy on
#: layers that take tens of microseconds, few enough that a cancel is answered quickly
GPU_QUEUE_AHEAD = 16


def start_profiler(torch: Any) -> Any:
    """A running torch.profiler recording host ranges and GPU kernels, or a string saying
    why there is none (no CUPTI/roctracer, another profiler active)."""
    try:
        import warnings

        from torch.profiler import ProfilerActivity, profile
        # torch warns on stderr when a profiler stops; in the app that would be drawn over the screen
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events", category=UserWarning)
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
        return prof
    except Exception as e:  # the profiler is optional: timing falls back to events
        return f"no profiler: {type(e).__name__}: {str(e)[:80]}"


def call_range(torch: Any, profiler: Any, index: int) -> Any:
    """The profiler range that marks timed call ``index`` (nothing without a profiler)."""
    if profiler is None:
        return contextlib.nullcontext()
    return torch.profiler.record_function(CALL_PREFIX + str(index))


def stop_profiler(profiler: Any) -> Optional[list[dict[str, Any]]]:
    """Stop ``profiler`` and return its trace's events (None without one or on failure)."""
    if profiler is None:
        return None
    try:
        profiler.__exit__(None, None, None)
        fd, path = tempfile.mkstemp(prefix="miotui-trace-", suffix=".json")
        os.close(fd)
        try:
            profiler.export_chrome_trace(path)
            with open(path, encoding="utf-8") as f:
                return json.load(f).get("traceEvents", [])
        finally:
            os.unlink(path)
    except Exception:  # a failed trace leaves the event times, and the result says so
        return None


class GpuHold:
    """A spin kernel (``torch.cuda._sleep``, on CUDA and ROCm builds) queued before a batch
    of timed calls, so the host queues the batch while the GPU is busy.

    Its length follows the host: the first batch spins ``FIRST_HOLD_MS``; after each
    batch the next spin is twice the time the host took to queue it (at least
    ``MIN_HOLD_MS``).  An event after the spin tells whether it was still running when
    the host had queued the batch (:meth:`ahead`); if not, the next spin is four times
    longer and the caller reports the batch.
    """

    FIRST_HOLD_MS = 2.0
    MIN_HOLD_MS = 0.2
    #: GPU clock cycles per millisecond of spin, measured once per process
    cycles_per_ms: Optional[float] = None

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self.hold_ms = self.FIRST_HOLD_MS

    @classmethod
    def make(cls, torch: Any) -> Optional["GpuHold"]:
        """A hold for this process, or None where this torch has no spin kernel."""
        if not callable(getattr(torch.cuda, "_sleep", None)):
            return None
        if cls.cycles_per_ms is None:
            cycles = 1_000_000
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(cycles)   # the first spin pays for loading the kernel
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            cls.cycles_per_ms = cycles / max(start.elapsed_time(end), 1e-3)
        return cls(torch)

    def hold(self) -> Any:
        """Queue the spin; returns the event that passes when it ends."""
        assert self.cycles_per_ms is not None
        self._torch.cuda._sleep(max(1, int(self.hold_ms * self.cycles_per_ms)))
        released = self._torch.cuda.Event()
        released.record()
        return released

    def ahead(self, released: Any, queued_s: float) -> bool:
        """Whether the spin still ran when the host finished queueing (``queued_s`` seconds
        of host work); sizes the next spin."""
        still_held = not released.query()
        self.hold_ms = max(self.MIN_HOLD_MS, 2e3 * queued_s)
        if not still_held:
            self.hold_ms *= 4
        return still_held


def wait_for_event(event: Any, cancel: Any) -> None:
    """Wait until the GPU has passed ``event``, answering ``cancel`` meanwhile (a
    ``torch.cuda.synchronize`` cannot be interrupted)."""
    while True:
        if cancel is not None and cancel.is_set():
            raise Cancelled("GPU run cancelled (the calls already queued finish on the GPU)")
        if event.query():
            return
        time.sleep(0.0002)


def fp32_without_tf32(torch: Any) -> None:
    """Make float32 convolutions and matmuls on the GPU real float32.

    torch lets cuDNN use TF32 (10-bit mantissa) for float32 convolutions by default: on
    an H100 that put rms_range at 2e-5 to 7e-5 against a tolerance of 1.5e-6, failing
    73 of 169 layers.  MIOpen's fp32 solvers compute in fp32, so the comparison that
    means something is with TF32 off (process-wide: miotui owns this torch).
    """
    # The legacy flags, on purpose: torch >= 2.9 also has per-operator ``fp32_precision``,
    # but setting those makes reading ``allow_tf32`` raise (a "mix of APIs"), which
    # breaks torch.backends.cudnn.flags() in any code that shares this process.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False



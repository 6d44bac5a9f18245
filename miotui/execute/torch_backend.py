"""The torch backend: PyTorch's own kernels on the CPU or the GPU.

An independent implementation, so its numbers check the reference as much as the
reference checks it.  ``torch.cuda.is_available()`` is also true on ROCm builds, where
the GPU path is MIOpen itself.  On a GPU, float32 stays float32 (TF32 off) and times are
device time between events (:meth:`TorchBackend.time_calls`).  torch is imported only
when a run needs it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from miotui.execute.protocol import Backend
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


class TorchBackend(Backend):
    """PyTorch's kernels.  Convolutions go through ``torch.nn.functional`` (forward) and
    ``aten.convolution_backward`` (what ``torch.nn.grad``/autograd use) for backward data
    and weights, so only the gradient asked for is computed."""

    name = "torch"

    def __init__(self) -> None:
        self._why: Optional[str] = None
        self._checked = False
        self._device: Optional[str] = None

    def unavailable(self) -> Optional[str]:
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
        """On the GPU: a pair of events around each call, the calls queued back to back,
        so each time is what the device spent from the call's first kernel to its last
        (as MIOpenDriver's kernel time is; gaps between one call's own kernels count).
        Timing each call with the wall clock and a synchronize added 10-70 us of launch
        and sync latency per call on an H100 (a 1x1 ResNet-50 layer: 0.070 ms that way,
        0.045 ms back to back).

        At most ``GPU_QUEUE_AHEAD`` calls wait on the GPU, and the host polls their events
        instead of blocking in a synchronize, so a cancel or timeout is answered within a
        few calls; the calls already queued then finish on the GPU on their own."""
        if self.device != "cuda":
            return super().time_calls(problem, prepared, iters, cancel, before_call)
        import torch
        raw: Any = None
        events = []
        for i in range(iters):
            before_call(i)
            if i >= GPU_QUEUE_AHEAD:
                wait_for_event(events[i - GPU_QUEUE_AHEAD][1], cancel)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            raw = self.run(problem, prepared, cancel)
            end.record()
            events.append((start, end))
        if events:
            wait_for_event(events[-1][1], cancel)
        return raw, [start.elapsed_time(end) for start, end in events]

    def timer(self) -> str:
        return "GPU time between torch.cuda events" if self.device == "cuda" else ""

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



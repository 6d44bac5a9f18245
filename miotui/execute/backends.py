"""The backends a layer can run on, behind one interface, and the values a run returns.

* ``numpy``  the CPU reference (:mod:`miotui.execute.reference`), float32 as MIOpenDriver
  computes; always available.
* ``numba``  the same reference with numba's direct kernels where they beat im2col
  (depthwise / small-group convolution, pooling); numpy elsewhere.  Compile time is
  reported apart from run time.
* ``torch``  PyTorch's own kernels (CPU, or the GPU when ``torch.cuda.is_available()``,
  which is also true on ROCm builds): an independent implementation, so its numbers
  check the reference as much as the reference checks it.
* ``miopen-driver``  the real ``MIOpenDriver`` in a child process (see
  :mod:`miotui.execute.runner`); its own timing and its own verdict.

Every backend is verified against the float64 reference on the same seeded inputs
(:func:`miotui.execute.verify.compare`), except MIOpenDriver, which makes its own
inputs and checks itself: its verdict is read from its output.

numpy, numba and torch are imported only when a run needs them: the CLI and the app
import this module at start-up.
"""

from __future__ import annotations

import math
import os
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

# torch's OpenMP threads spin after each op by default; with numpy runs alternating in the
# same process that idle spinning slowed numpy up to 17x here. Must be set before torch
# is imported (a user's own setting wins).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from miotui.problems import (FUSION_ACTIV_MODES, ActivationProblem, BatchNormProblem, ConvProblem, FusionProblem,
                             LRNProblem, PoolProblem, Problem, SoftmaxProblem)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from miotui.execute.verify import Verification

#: The backends, in the order tables list them.
BACKENDS = ("numpy", "numba", "torch", "miopen-driver")
#: What ``--backend`` accepts.
BACKEND_CHOICES = BACKENDS + ("auto", "all")
STATUSES = ("ok", "failed", "error", "refused", "cancelled")
#: Where ROCm installs the driver.
DEFAULT_DRIVER = "/opt/rocm/bin/MIOpenDriver"


@dataclass(frozen=True)
class RunSettings:
    """How to run a layer.  Hashable: it is part of the result cache's key.

    ``batch`` replaces the layer's N (the result's note says so); ``warmup`` calls are
    untimed; ``launcher`` is an argv prefix for the driver (``("ssh", "gpu-node")``,
    ``("srun", "-p", "gpu")``), never a shell string; ``verify`` False skips the
    float64 reference (timing only); ``dump_dir`` writes inputs and outputs as .npy.
    """

    backend: str = "auto"
    iters: int = 10
    warmup: int = 1
    batch: Optional[int] = None
    seed: int = 0
    timeout_s: float = 600
    driver_path: Optional[str] = None
    launcher: tuple[str, ...] = ()
    verify: bool = True
    dump_dir: Optional[str] = None


#: per-iteration times kept on a result (a run of 100,000 iterations keeps its first ones)
TIMES_KEPT = 1000
#: median/min above this flags a result as noisy
NOISY_SPREAD = 1.5


@dataclass(frozen=True)
class RunResult:
    """One run of one layer on one backend.

    ``status``: ``ok`` (ran; verified when verification was asked), ``failed`` (ran, but
    the check failed), ``error`` (did not run, or crashed: ``message`` says why),
    ``refused`` (the memory guard stopped it before allocating: ``message`` suggests a
    batch), ``n/a`` (the backend does not apply to this layer: ``message`` says why; no
    other backend stood in for it), ``cancelled``.  Times are per call, in ms:
    ``median_ms``/``min_ms``/``max_ms`` over the timed iterations (for MIOpenDriver: the
    driver's average / minimum), ``times_ms`` each iteration's time (at most
    ``TIMES_KEPT``), ``jit_ms`` compile time kept apart.  ``problem`` is the layer as run
    (after ``--batch``).
    """

    backend: str
    problem: Problem
    settings: RunSettings
    status: str
    message: str = ""
    median_ms: Optional[float] = None
    min_ms: Optional[float] = None
    jit_ms: Optional[float] = None
    gflops: Optional[float] = None
    gbps: Optional[float] = None
    verification: Optional["Verification"] = None
    driver_output: Optional[str] = None
    note: str = ""
    #: what ran, e.g. "numpy im2col+GEMM", "torch 2.13.0 cpu float32", "MIOpenDriver /opt/rocm/bin/MIOpenDriver"
    engine: str = ""
    iterations: int = 0
    #: extra facts, e.g. (("solver", "85/ConvDirectNaiveConvFwd"), ("driver verdict", "ok"))
    details: tuple[tuple[str, str], ...] = ()
    #: the argv that ran (MIOpenDriver), launcher included
    argv: tuple[str, ...] = ()
    #: files written by --dump
    dumped: tuple[str, ...] = ()
    cached: bool = field(default=False, compare=False)
    elapsed_s: float = field(default=0.0, compare=False)
    max_ms: Optional[float] = None
    times_ms: tuple[float, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def spread(self) -> Optional[float]:
        """How noisy the timing was: median / min (1.0 = every iteration as fast as the
        best; shared hosts were seen at 2-6).  None without both times."""
        if self.median_ms is None or self.min_ms is None or not self.min_ms > 0:
            return None
        return self.median_ms / self.min_ms

    @property
    def noisy(self) -> bool:
        """The spread is large enough that the median should not be trusted as the
        layer's speed (as hyperfine warns about outliers): rerun on a quieter machine."""
        spread = self.spread
        return spread is not None and spread > NOISY_SPREAD

    def detail(self, name: str, default: str = "") -> str:
        for k, v in self.details:
            if k == name:
                return v
        return default

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the CLI's ``--json``); floats that are not finite become None."""
        def num(v: Optional[float]) -> Optional[float]:
            return None if v is None or not math.isfinite(v) else float(v)

        ver = None
        if self.verification is not None:
            v = self.verification
            ver = {"max_abs": num(v.max_abs), "max_rel": num(v.max_rel), "rms_range": num(v.rms_range),
                   "metric": getattr(v, "metric", "rms_range"), "error": num(getattr(v, "error", v.rms_range)),
                   "tolerance": num(v.tolerance), "ok": bool(v.ok), "how": v.how}
        s = asdict(self.settings)
        s["launcher"] = list(self.settings.launcher)
        return {
            "backend": self.backend, "status": self.status, "message": self.message,
            "op": self.problem.op, "direction": self.problem.direction, "problem": self.problem.to_dict(),
            "key": self.problem.key, "median_ms": num(self.median_ms), "min_ms": num(self.min_ms),
            "jit_ms": num(self.jit_ms), "gflops": num(self.gflops), "gbps": num(self.gbps),
            "iterations": self.iterations, "verification": ver, "note": self.note, "engine": self.engine,
            "details": dict(self.details), "argv": list(self.argv), "dumped": list(self.dumped),
            "max_ms": num(self.max_ms), "spread": num(self.spread), "noisy": self.noisy,
            "cached": self.cached, "elapsed_s": round(self.elapsed_s, 4), "settings": s,
            "driver_output": self.driver_output,
        }


# ============================================================================= driver discovery

def find_driver(settings: RunSettings) -> tuple[Optional[str], str]:
    """(path, how it was found) or (None, why not).

    Order: ``settings.driver_path`` (``--driver``), ``$MIOPEN_DRIVER``, ``MIOpenDriver`` on
    PATH, ``/opt/rocm/bin/MIOpenDriver``.  With a launcher the driver lives on the other
    machine, so the path cannot be checked here: the explicit one, or ROCm's default.
    """
    explicit = settings.driver_path or os.environ.get("MIOPEN_DRIVER") or None
    how = "--driver" if settings.driver_path else "$MIOPEN_DRIVER"
    if settings.launcher:
        if explicit:
            return explicit, f"{how} (on the launcher's machine)"
        return DEFAULT_DRIVER, "ROCm's default location (on the launcher's machine)"
    if explicit:
        path = os.path.expanduser(explicit)
        if os.path.isdir(path):
            return None, f"{how} names a directory, not MIOpenDriver: {path}"
        if not os.path.exists(path):
            found = shutil.which(path)
            if found:
                return found, f"{how} (on PATH)"
            return None, f"{how} names {path}, which does not exist"
        if not os.access(path, os.X_OK):
            return None, f"{how} names {path}, which is not executable"
        return path, how
    found = shutil.which("MIOpenDriver")
    if found:
        return found, "PATH"
    if os.access(DEFAULT_DRIVER, os.X_OK):
        return DEFAULT_DRIVER, "ROCm's default location"
    return None, ("MIOpenDriver not found: give --driver PATH, set $MIOPEN_DRIVER, put it on PATH, "
                  f"or install ROCm ({DEFAULT_DRIVER}); --launcher runs it on another machine")


# ============================================================================= in-process backends

class Backend:
    """A backend that runs in this process on the reference's seeded inputs.

    The runner calls ``prepare`` (untimed: convert inputs), then ``run`` repeatedly
    (timed; ``synchronize`` waits for asynchronous devices), then ``outputs`` (untimed:
    back to numpy for verification and dumping).
    """

    name = ""
    #: whether the first call compiles (its time is reported as jit_ms, not run time)
    jit = False

    def unavailable(self) -> Optional[str]:
        """None when usable on this machine, else why not."""
        return None

    def applies(self, problem: Problem) -> Optional[str]:
        """None when this backend can run ``problem``, else why not."""
        return None

    def describe(self, problem: Problem) -> str:
        return self.name

    def compile(self, problem: Problem) -> float:
        """Compile ahead of timing; seconds spent (0 for backends with nothing to compile)."""
        return 0.0

    def prepare(self, problem: Problem, inputs: dict[str, "np.ndarray"]) -> Any:
        return inputs

    def run(self, problem: Problem, prepared: Any, cancel: Any) -> Any:
        raise NotImplementedError

    def synchronize(self) -> None:
        return None

    def time_calls(self, problem: Problem, prepared: Any, iters: int, cancel: Any,
                   before_call: Callable[[int], None]) -> tuple[Any, list[float]]:
        """``iters`` timed calls: (the last call's result, milliseconds per call).

        ``before_call(i)`` runs first each time (the runner's cancel check and progress
        message: it may raise to stop).  Wall clock around each call and ``synchronize``;
        a GPU backend overrides this with device-side timing.
        """
        raw: Any = None
        times: list[float] = []
        for i in range(iters):
            before_call(i)
            t0 = time.perf_counter()
            raw = self.run(problem, prepared, cancel)
            self.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        return raw, times

    def timer(self) -> str:
        """How :meth:`time_calls` measures, for the result ("" = wall clock)."""
        return ""

    def outputs(self, problem: Problem, raw: Any) -> dict[str, "np.ndarray"]:
        return raw

    def note(self, prepared: Any) -> str:
        """Anything the run had to change (e.g. a dtype torch has no kernel for)."""
        return ""


class NumpyBackend(Backend):
    name = "numpy"
    engine = "numpy"

    def describe(self, problem: Problem) -> str:
        from miotui.execute.reference import engine_used
        return engine_used(problem, self.engine)

    def run(self, problem: Problem, prepared: Any, cancel: Any) -> Any:
        from miotui.execute.reference import run_reference
        return run_reference(problem, prepared, precision="fp32", cancel=cancel, engine=self.engine)


class NumbaBackend(NumpyBackend):
    name = "numba"
    engine = "numba"
    jit = True

    def unavailable(self) -> Optional[str]:
        try:
            from miotui.execute import numba_kernels
        except ImportError as e:  # pragma: no cover - the module itself imports without numba
            return f"numba kernels unavailable: {e}"
        return numba_kernels.available()

    def compile(self, problem: Problem) -> float:
        from miotui.execute import numba_kernels
        return float(numba_kernels.warmup(problem, ("fp32",)))

    def kernels_apply(self, problem: Problem) -> bool:
        """Whether numba's direct kernels (not the numpy fallback) would run."""
        if self.unavailable() is not None:
            return False
        try:
            return self.describe(problem).startswith("numba")
        except Exception:
            return False


class _TorchInputs:
    """Prepared torch tensors, and whether they had to be upcast to float32."""

    def __init__(self, tensors: dict[str, Any]):
        self.tensors = tensors
        self.upcast: str | bool = False


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
                _fp32_without_tf32(torch)
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
        return f"torch {torch.__version__} {self.device_name()} {dt}"

    def prepare(self, problem: Problem, inputs: dict[str, "np.ndarray"]) -> Any:
        """Torch copies of the inputs on the device, in the problem's dtype (batch-norm
        parameters in its ``param_dtype``): fp16 stays fp16, bf16 values become exact
        torch bfloat16."""
        import numpy as np
        import torch
        if self.device == "cuda":   # again: code sharing this process may have turned TF32 back on
            _fp32_without_tf32(torch)
        dt = self._dtype(problem)
        pdt = self._torch_dtype(problem.param_dtype) if isinstance(problem, BatchNormProblem) else dt
        out = {}
        for name, a in inputs.items():
            t = torch.from_numpy(np.ascontiguousarray(a))
            if t.is_floating_point():
                t = t.to(dtype=dt if name in ("x", "dy", "w") else pdt)
            out[name] = t.to(self.device)
        return _TorchInputs(out)

    def run(self, problem: Problem, prepared: Any, cancel: Any) -> Any:
        """One call; if torch has no kernel for the low-precision dtype on this device
        (some CPU ops lack fp16), the run continues in float32 and says so."""
        import torch
        with torch.no_grad():
            if not prepared.upcast:
                try:
                    return torch_run(problem, prepared.tensors)
                except (RuntimeError, NotImplementedError) as e:
                    if not any(t.dtype in (torch.float16, torch.bfloat16) for t in prepared.tensors.values()):
                        raise
                    first = (str(e).splitlines() or [""])[0][:80]
                    prepared.upcast = (f"torch has no {self.device} kernel for this dtype ({first}); "
                                       "computed in float32")
                    prepared.tensors = {k: (v.float() if v.is_floating_point() else v)
                                        for k, v in prepared.tensors.items()}
            return torch_run(problem, prepared.tensors)

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
                _wait_for_event(events[i - GPU_QUEUE_AHEAD][1], cancel)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            raw = self.run(problem, prepared, cancel)
            end.record()
            events.append((start, end))
        if events:
            _wait_for_event(events[-1][1], cancel)
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


def _wait_for_event(event: Any, cancel: Any) -> None:
    """Wait until the GPU has passed ``event``, answering ``cancel`` meanwhile (a
    ``torch.cuda.synchronize`` cannot be interrupted)."""
    from miotui.execute.reference import Cancelled
    while True:
        if cancel is not None and cancel.is_set():
            raise Cancelled("GPU run cancelled (the calls already queued finish on the GPU)")
        if event.query():
            return
        time.sleep(0.0002)


def _fp32_without_tf32(torch: Any) -> None:
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


# ============================================================================= torch math

def _conv_pads(problem: ConvProblem) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(before, after) padding per spatial axis, MIOpen's meaning for each pad mode.

    ``same``: total padding so that out = ceil(in / stride), the odd pixel after (as
    MIOpenDriver's ``-z same`` does); ``valid``: none; default: the given pads both sides.
    """
    nd = problem.ndim
    if problem.pad_mode == "valid":
        return (0,) * nd, (0,) * nd
    if problem.pad_mode == "same" and problem.mode != "trans":
        before, after = [], []
        for i in range(nd):
            eff = problem.dilations[i] * (problem.filter[i] - 1) + 1
            o = problem.out_spatial[i]
            total = max((o - 1) * problem.strides[i] + eff - problem.in_spatial[i], 0)
            before.append(total // 2)
            after.append(total - total // 2)
        return tuple(before), tuple(after)
    return tuple(problem.pads), tuple(problem.pads)


def _torch_pad_arg(before: tuple[int, ...], after: tuple[int, ...]) -> list[int]:
    """F.pad wants the last axis first: [w_lo, w_hi, h_lo, h_hi, ...]."""
    out: list[int] = []
    for b, a in zip(reversed(before), reversed(after)):
        out += [b, a]
    return out


def torch_conv(problem: ConvProblem, t: dict[str, Any]) -> dict[str, Any]:
    """One convolution direction with PyTorch's kernels, any pad mode, 2-D or 3-D,
    grouped, dilated, transposed.  MIOpen's weight layout ([K, C/G, ...], transposed
    [C, K/G, ...]) is torch's for conv and conv_transpose alike."""
    import torch
    import torch.nn.functional as F

    stride, dil, groups = list(problem.strides), list(problem.dilations), problem.groups
    nd = problem.ndim
    conv_fn = F.conv2d if nd == 2 else F.conv3d
    bwd = torch.ops.aten.convolution_backward
    d = problem.direction
    if problem.mode == "trans":
        pads, opad = list(problem.pads), list(problem.trans_output_pads)
        if d == "fwd":
            tfn = F.conv_transpose2d if nd == 2 else F.conv_transpose3d
            return {"y": tfn(t["x"], t["w"], None, stride, pads, opad, groups, dil)}
        if d == "bwd":
            dummy_x = t["dy"].new_empty(1).expand(problem.input_shape)
            return {"dx": bwd(t["dy"], dummy_x, t["w"], None, stride, pads, dil, True, opad, groups,
                              (True, False, False))[0]}
        dummy_w = t["dy"].new_empty(1).expand(problem.weight_shape)
        return {"dw": bwd(t["dy"], t["x"], dummy_w, None, stride, pads, dil, True, opad, groups,
                          (False, True, False))[1]}
    before, after = _conv_pads(problem)
    symmetric = before == after
    zero = [0] * nd
    pad_arg = list(before) if symmetric else zero
    out_sp = problem.out_spatial

    def padded(x: Any) -> Any:
        return x if symmetric else F.pad(x, _torch_pad_arg(before, after))

    def crop_out(y: Any) -> Any:   # a valid/same input may leave a surplus row at the end
        return y[(slice(None), slice(None)) + tuple(slice(0, o) for o in out_sp)]

    if d == "fwd":
        return {"y": crop_out(conv_fn(padded(t["x"]), t["w"], None, stride, pad_arg, dil, groups))}
    if d == "bwd":
        shape = problem.input_shape
        if not symmetric:
            shape = shape[:2] + tuple(i + b + a for i, b, a in zip(problem.in_spatial, before, after))
        # For "same", padded = (out-1)*stride + eff exactly (or the input itself when no
        # padding is needed), so the forward of this shape gives dy's size.
        dummy_x = t["dy"].new_empty(1).expand(shape)
        dxp = bwd(t["dy"], dummy_x, t["w"], None, stride, pad_arg, dil, False, zero, groups,
                  (True, False, False))[0]
        if not symmetric:
            dxp = dxp[(slice(None), slice(None)) + tuple(slice(b, b + i) for b, i in zip(before, problem.in_spatial))]
        return {"dx": dxp.contiguous()}
    dummy_w = t["dy"].new_empty(1).expand(problem.weight_shape)
    return {"dw": bwd(t["dy"], padded(t["x"]), dummy_w, None, stride, pad_arg, dil, False, zero, groups,
                      (False, True, False))[1]}


def _pool_pad(p: PoolProblem) -> list[int]:
    return _torch_pad_arg(tuple(p.pads), tuple(p.pads))


def torch_pool(p: PoolProblem, t: dict[str, Any]) -> dict[str, Any]:
    """MIOpen pooling with torch's pooling kernels.

    Padding is applied explicitly (MIOpen allows pads torch's pooling refuses: more than
    half the window): -inf for max (a window of padding only gives 0, as MIOpen writes),
    zeros for average.  ``avg`` (miopenPoolingAverage) divides by the in-bounds count,
    ``avg_in`` (AverageInclusive) by the window size.  Backward is autograd of that
    forward (max: the gradient goes to the first maximum, as MIOpen's index does).
    """
    import torch
    import torch.nn.functional as F
    nd = p.ndim
    maxpool = F.max_pool2d if nd == 2 else F.max_pool3d
    avgpool = F.avg_pool2d if nd == 2 else F.avg_pool3d
    window, stride = list(p.window), list(p.strides)
    area = math.prod(p.window)

    def forward(x: Any) -> Any:
        if p.mode == "max":
            xp = F.pad(x, _pool_pad(p), value=float("-inf"))
            y = maxpool(xp, window, stride)
            return torch.where(torch.isneginf(y), torch.zeros_like(y), y)
        total = avgpool(F.pad(x, _pool_pad(p)), window, stride) * area
        if p.mode == "avg_in":
            return total / area
        ones = torch.ones((1, 1) + tuple(p.in_spatial), dtype=x.dtype, device=x.device)
        count = avgpool(F.pad(ones, _pool_pad(p)), window, stride) * area
        return total / torch.clamp(torch.round(count), min=1)

    if p.direction == "fwd":
        return {"y": forward(t["x"])}
    with torch.enable_grad():
        x = t["x"].detach().requires_grad_(True)
        y = forward(x)
        (dx,) = torch.autograd.grad(y, x, t["dy"])
    return {"dx": dx}


def _bn_flat(p: BatchNormProblem, a: Any) -> Any:
    """per_activation statistics are per (c, spatial) over N only: view x as (N, C*HW)."""
    return a.reshape(a.shape[0], -1) if p.mode == "per_activation" else a


def _bn_param(p: BatchNormProblem, a: Any) -> Any:
    return None if a is None else a.reshape(-1)


def torch_batchnorm(p: BatchNormProblem, t: dict[str, Any]) -> dict[str, Any]:
    """Batch norm with ATen's kernels (``native_batch_norm`` and its backward), eps and
    running-average factor as the reference's (MIOpenDriver's eps 1e-3)."""
    import torch
    from miotui.execute.reference_ops import BN_EPSILON, BN_EXP_AVG_FACTOR
    aten = torch.ops.aten
    x = _bn_flat(p, t["x"])
    pshape = tuple(t["scale"].shape)
    scale = _bn_param(p, t["scale"])
    if p.direction == "fwd_infer":
        y, _, _ = aten.native_batch_norm(x, scale, _bn_param(p, t["bias"]), _bn_param(p, t["est_mean"]),
                                         _bn_param(p, t["est_var"]), False, 0.0, BN_EPSILON)
        return {"y": y.reshape(t["x"].shape)}
    if p.direction == "fwd_train":
        rm = _bn_param(p, t["running_mean"]).clone() if p.running else None
        rv = _bn_param(p, t["running_var"]).clone() if p.running else None
        y, mean, invstd = aten.native_batch_norm(x, scale, _bn_param(p, t["bias"]), rm, rv, True,
                                                 BN_EXP_AVG_FACTOR, BN_EPSILON)
        out = {"y": y.reshape(t["x"].shape)}
        if p.running:
            out["running_mean"] = rm.reshape(pshape)
            out["running_var"] = rv.reshape(pshape)
        if p.save:
            out["saved_mean"] = mean.reshape(pshape)
            out["saved_inv_var"] = invstd.reshape(pshape)
        return out
    if p.save:
        mean, invstd = _bn_param(p, t["saved_mean"]), _bn_param(p, t["saved_inv_var"])
    else:   # statistics of this batch, computed by torch's forward kernel
        _, mean, invstd = aten.native_batch_norm(x, scale, None, None, None, True, 0.0, BN_EPSILON)
    dx, dscale, dbias = aten.native_batch_norm_backward(_bn_flat(p, t["dy"]), x, scale, None, None, mean,
                                                        invstd, True, BN_EPSILON, [True, True, True])
    return {"dx": dx.reshape(t["x"].shape), "dscale": dscale.reshape(pshape), "dbias": dbias.reshape(pshape)}


_F32_EPS = 1.1920928955078125e-07


def torch_activation(p: ActivationProblem, t: dict[str, Any]) -> dict[str, Any]:
    """MIOpen's ten activation modes with torch ops; backward by autograd, except POWER,
    whose MIOpen gradient is ``gamma*beta*y/(alpha+beta*x)`` without dy (MIOpen's own
    definition, kept so the comparison is with what MIOpen computes)."""
    import torch
    import torch.nn.functional as F
    a, b, g = p.alpha, p.beta, p.gamma
    mode = p.mode

    def forward(x: Any) -> Any:
        if mode == 0:
            return x * 1
        if mode == 1:
            return torch.sigmoid(x)
        if mode == 2:
            return b * torch.tanh(a * x)
        if mode == 3:
            return F.relu(x)
        if mode == 4:
            return F.softplus(x)
        if mode == 5:
            return torch.abs(x)
        if mode == 6:
            v = a + b * x
            ok = v > _F32_EPS
            return torch.where(ok, torch.where(ok, v, torch.ones_like(v)) ** g, torch.zeros_like(v))
        if mode == 7:
            return torch.clamp(torch.clamp(x, min=0), max=a)
        if mode == 8:
            return F.leaky_relu(x, a)
        if mode == 9:
            return F.elu(x, a)
        raise NotImplementedError(f"activation mode {mode}")

    if p.direction == "fwd":
        return {"y": forward(t["x"])}
    if mode == 6:
        x = t["x"]
        v = a + b * x
        ok = v > _F32_EPS
        return {"dx": torch.where(ok, g * b * forward(x) / torch.where(ok, v, torch.ones_like(v)),
                                  torch.zeros_like(v))}
    if mode == 2 and abs(b) <= _F32_EPS:
        return {"dx": torch.zeros_like(t["x"])}
    with torch.enable_grad():
        x = t["x"].detach().requires_grad_(True)
        (dx,) = torch.autograd.grad(forward(x), x, t["dy"])
    return {"dx": dx}


def torch_lrn(p: LRNProblem, t: dict[str, Any]) -> dict[str, Any]:
    """MIOpen LRN from torch pooling: the window sum of x^2 over [c-pre, c+post] channels
    (cross) or an N x N zero-padded spatial window (within), pre = (N-1)//2; scale =
    K + alpha/area * sum; y = x * scale^-beta.  torch's own ``local_response_norm``
    centres even windows the other way, so it is not used.  Backward: autograd."""
    import torch
    import torch.nn.functional as F
    n = p.lrn_n
    pre = (n - 1) // 2
    post = n - 1 - pre

    def forward(x: Any) -> Any:
        sq = x * x
        if p.mode == "cross":
            padded = F.pad(sq.unsqueeze(1), [0, 0, 0, 0, pre, post])
            total = F.avg_pool3d(padded, (n, 1, 1), stride=1).squeeze(1) * n
            area = n
        else:
            padded = F.pad(sq, [pre, post, pre, post])
            total = F.avg_pool2d(padded, (n, n), stride=1) * (n * n)
            area = n * n
        scale = p.k + (p.alpha / area) * total
        return x * scale ** (-p.beta)

    if p.direction == "fwd":
        return {"y": forward(t["x"])}
    with torch.enable_grad():
        x = t["x"].detach().requires_grad_(True)
        (dx,) = torch.autograd.grad(forward(x), x, t["dy"])
    return {"dx": dx}


def torch_softmax(p: SoftmaxProblem, t: dict[str, Any]) -> dict[str, Any]:
    """Softmax with torch's kernels: mode 0 over C*H*W per image, mode 1 over C per
    pixel; algorithm 2 is log-softmax; 0 (fast) and 1 (accurate) are the same function.
    Backward from y = softmax(x) with ATen's softmax backward; both scaled by alpha."""
    import torch
    aten = torch.ops.aten
    x = t["x"]
    shape = x.shape
    xv = x.reshape(shape[0], -1) if p.mode == 0 else x
    log = p.algorithm == 2
    y = torch.log_softmax(xv, dim=1) if log else torch.softmax(xv, dim=1)
    if p.direction == "fwd":
        return {"y": (p.alpha * y).reshape(shape)}
    dy = t["dy"].reshape(xv.shape)
    if log:
        dx = aten._log_softmax_backward_data(dy, y, 1, y.dtype)
    else:
        dx = aten._softmax_backward_data(dy, y, 1, y.dtype)
    return {"dx": (p.alpha * dx).reshape(shape)}


def torch_run(problem: Problem, t: dict[str, Any]) -> dict[str, Any]:
    """Dispatch one problem to its torch implementation (inputs/outputs by MIOpen name)."""
    if isinstance(problem, ConvProblem):
        return torch_conv(problem, t)
    if isinstance(problem, PoolProblem):
        return torch_pool(problem, t)
    if isinstance(problem, BatchNormProblem):
        return torch_batchnorm(problem, t)
    if isinstance(problem, ActivationProblem):
        return torch_activation(problem, t)
    if isinstance(problem, LRNProblem):
        return torch_lrn(problem, t)
    if isinstance(problem, SoftmaxProblem):
        return torch_softmax(problem, t)
    if isinstance(problem, FusionProblem):
        return torch_fusion(problem, t)
    raise NotImplementedError(f"torch backend: no implementation for {type(problem).__name__}")


def torch_fusion(p: FusionProblem, t: dict[str, Any]) -> dict[str, Any]:
    """A CBAInfer plan as torch's own ops, unfused: convolution, bias, batch norm
    (inference, CBAInfer's epsilon) and the plan's activation, the parts MIOpen fuses
    into one kernel."""
    import torch
    import torch.nn.functional as F

    from miotui.execute.reference_ops import FUSION_BN_EPSILON
    h = torch_conv(p.conv, {"x": t["x"], "w": t["w"]})["y"] if p.has_conv else t["x"]
    if "bias" in t:
        h = h + t["bias"]
    if p.bn_mode == "spatial":
        flat = [t[name].reshape(-1) for name in ("est_mean", "est_var", "scale", "bn_bias")]
        h = F.batch_norm(h, flat[0], flat[1], flat[2], flat[3], training=False, eps=FUSION_BN_EPSILON)
    elif p.bn_mode == "per_activation":
        h = t["scale"] * (h - t["est_mean"]) / torch.sqrt(t["est_var"] + FUSION_BN_EPSILON) + t["bn_bias"]
    if p.fusion_mode in FUSION_ACTIV_MODES:
        activ = ActivationProblem("fwd", p.dtype, h.shape[0], h.shape[1], tuple(h.shape[2:]), p.activ_mode,
                                  p.activ_alpha, p.activ_beta, p.activ_gamma)
        h = torch_activation(activ, {"x": h})["y"]
    return {"y": h}


# ============================================================================= registry

_BACKENDS: dict[str, Backend] = {}
_lock = threading.Lock()


def get_backend(name: str) -> Backend:
    """The in-process backend called ``name`` (numpy, numba, torch)."""
    with _lock:
        if not _BACKENDS:
            for b in (NumpyBackend(), NumbaBackend(), TorchBackend()):
                _BACKENDS[b.name] = b
    if name not in _BACKENDS:
        raise KeyError(f"no in-process backend {name!r} (choose from {', '.join(_BACKENDS)})")
    return _BACKENDS[name]


def available_backends(settings: Optional[RunSettings] = None) -> dict[str, Optional[str]]:
    """Every backend: None when usable here, else why not.  Cheap: nothing heavy is
    imported (torch is only looked up; the driver only searched for)."""
    out: dict[str, Optional[str]] = {}
    for name in ("numpy", "numba", "torch"):
        out[name] = get_backend(name).unavailable()
    path, why = find_driver(settings or RunSettings())
    out["miopen-driver"] = None if path else why
    return out


def resolve_auto(problem: Problem) -> tuple[str, str]:
    """``--backend auto``: the best available reference for this layer, and why.

    numba where its direct kernels apply (depthwise/small-group conv, pooling: 4-20x
    faster than im2col there), numpy everywhere else.
    """
    nb = get_backend("numba")
    assert isinstance(nb, NumbaBackend)
    if nb.kernels_apply(problem):
        return "numba", "auto chose numba: its direct kernels apply to this layer"
    why = nb.unavailable()
    if why:
        return "numpy", f"auto chose numpy ({why})"
    return "numpy", "auto chose numpy: numba's direct kernels do not apply to this layer"


def run_layer(problem: Problem, settings: RunSettings, cancel: Optional[threading.Event] = None,
              on_progress: Optional[Callable[[str], None]] = None) -> RunResult:
    """Run and verify one layer; see :func:`miotui.execute.runner.run_layer`."""
    from miotui.execute.runner import run_layer as _run_layer
    return _run_layer(problem, settings, cancel, on_progress)


def launch_driver(problem: Problem, settings: RunSettings, on_line: Callable[[str], None],
                  cancel: threading.Event) -> RunResult:
    """Run MIOpenDriver, streaming its lines; see :func:`miotui.execute.runner.launch_driver`."""
    from miotui.execute.runner import launch_driver as _launch_driver
    return _launch_driver(problem, settings, on_line, cancel)

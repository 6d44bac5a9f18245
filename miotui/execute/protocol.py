"""What every backend shares: the settings of a run, its result, and the Backend protocol.

:class:`RunSettings` (how to run; part of the result cache's key), :class:`RunResult`
(what a run of one layer on one backend gave: status, times, verification, notes),
:class:`Backend` (what every backend answers before a run: its label, its device, what
memory a run needs, why it cannot run a layer), :class:`InProcessBackend` (what a backend
that runs in this process implements: numpy, numba, torch) and :class:`MemoryEstimate`.
Every other module of the package uses these; this one imports nothing of the package,
so it sits below all of them.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from miotui.problems import Problem

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from miotui.execute.verify import Verification

#: What a result's ``status`` can be (see :class:`RunResult`).
STATUSES = ("ok", "failed", "error", "refused", "n/a", "cancelled")


@dataclass(frozen=True)
class RunSettings:
    """How to run a layer.  Hashable: it is part of the result cache's key.

    ``batch`` replaces the layer's N (the result's note says so); ``warmup`` calls are
    untimed; ``launcher`` is an argv prefix for the driver (``("ssh", "gpu-node")``,
    ``("srun", "-p", "gpu")``), never a shell string; ``verify`` False skips the
    verification reference (timing only); ``dump_dir`` writes inputs and outputs as .npy.
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
    other backend stood in for it; also a backend that is not installed), ``cancelled``.
    Times are per call, in ms: ``median_ms``/``min_ms``/``max_ms`` over the timed
    iterations and ``times_ms`` each iteration's time (at most ``TIMES_KEPT``) for the
    in-process backends; for MIOpenDriver ``median_ms`` is the average it prints and
    ``min_ms`` its minimum where it prints one (it prints no maximum and no per-iteration
    times).  ``jit_ms`` is compile time, kept apart.  ``cached`` says the result came
    from the runner's cache (``run_layer(use_cache=False)`` always measures again).
    ``problem`` is the layer as run (after ``--batch``).
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

    @property
    def reference(self) -> Optional[str]:
        """What the verdict compared against (e.g. "direct float64 tap sum", "MIOpenDriver's
        GPU reference"); None when nothing was compared."""
        v = self.verification
        return None if v is None else getattr(v, "reference", "float64 reference")

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
                   "tolerance": num(v.tolerance), "ok": bool(v.ok), "how": v.how,
                   "reference": getattr(v, "reference", "float64 reference")}
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


def rates(problem: Problem, ms: Optional[float]) -> tuple[Optional[float], Optional[float]]:
    """(GFLOP/s, GB/s) of ``problem`` at ``ms`` per call; (None, None) without a time."""
    if ms is None or not ms > 0:
        return None, None
    s = ms / 1e3
    return problem.flops / s / 1e9, problem.bytes_moved / s / 1e9


@dataclass(frozen=True)
class MemoryEstimate:
    """The bytes a backend's own run of a layer holds at its peak, from the shapes alone.

    ``host``: in this process's memory (inputs, the backend's copies, outputs, workspace).
    ``device``: on the backend's device (a GPU), 0 where it has none or computes on the
    host.  The verification reference that the runner adds for an in-process backend is
    not in it: :func:`miotui.execute.guard.estimate_bytes` adds that.
    """

    host: int
    device: int = 0


class Backend:
    """What every backend answers before it runs a layer, whatever it is.

    The app's chooser, the planning of a side-by-side run (:mod:`miotui.execute.planning`)
    and the memory guard (:mod:`miotui.execute.guard`) ask these questions of any backend
    without knowing its name: ``name`` (what ``--backend`` and results say), ``label`` (what
    the UI shows), ``device`` (where it computes), :meth:`memory_estimate` and
    :meth:`why_not`.  Adding a backend is a subclass and one line in
    :data:`miotui.execute.registry.REGISTERED`.
    """

    name = ""
    #: what the UI shows for it (the run chooser's words)
    label = ""
    #: True: it computes in this process on the reference's seeded inputs, and the float64
    #: reference verifies it here (:class:`InProcessBackend`); False: it runs elsewhere
    #: (MIOpenDriver in a child process makes its own inputs and checks itself)
    in_process = False

    @property
    def device(self) -> str:
        """Where it computes: ``cpu``, a GPU (``cuda``, as torch names both CUDA and ROCm
        devices) or ``child process``."""
        return "cpu"

    def unavailable(self, settings: Optional[RunSettings] = None) -> Optional[str]:
        """None when usable on this machine (with ``settings``: a driver path, a launcher),
        else why not."""
        return None

    def applies(self, problem: Problem) -> Optional[str]:
        """None when this backend can run ``problem``, else why not."""
        return None

    def why_not(self, problem: Problem, settings: RunSettings) -> Optional[str]:
        """Why this backend cannot run ``problem`` with ``settings`` (not installed here, or
        not a layer it runs), or None.  What is known before running: a layer it turns out
        not to compute (the runner's :func:`~miotui.execute.guard.not_modelled`, a command
        MIOpenDriver cannot express) is still an ``n/a`` result of the run itself."""
        return self.unavailable(settings) or self.applies(problem)

    def memory_estimate(self, problem: Problem, settings: RunSettings,
                        device: Optional[str] = None) -> MemoryEstimate:
        """What its own run of ``problem`` holds at its peak (``device``: plan for this
        device instead of :attr:`device`, for a test or a caller that knows better)."""
        raise NotImplementedError(f"{type(self).__name__} does not say what memory it needs")

    def free_device_bytes(self) -> Optional[int]:
        """Free bytes on its device, None where it has none or cannot tell."""
        return None


class InProcessBackend(Backend):
    """A backend that runs in this process on the reference's seeded inputs.

    The runner calls ``prepare`` (untimed: convert inputs), then ``run`` repeatedly
    (timed; ``synchronize`` waits for asynchronous devices), then ``outputs`` (untimed:
    back to numpy for verification and dumping).
    """

    in_process = True
    #: whether the first call compiles (its time is reported as jit_ms, not run time)
    jit = False

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


"""Which backends exist, which are usable here, and which one ``auto`` picks.

* ``numpy``  the CPU reference (:mod:`miotui.execute.reference`), float32 as MIOpenDriver
  computes; always available.
* ``numba``  numba's direct kernels (depthwise / small-group convolution, pooling); for
  any other layer it does not apply (status ``n/a``): numpy's path never runs under its
  name.  Compile time is reported apart from run time.
* ``torch``  PyTorch's own kernels (:mod:`miotui.execute.torch_backend`).
* ``miopen-driver``  the real ``MIOpenDriver`` in a child process
  (:mod:`miotui.execute.driver_backend`).

numpy, numba and torch are imported only when a run needs them: the CLI and the app
import this module at start-up.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

from miotui.execute.driver_backend import find_driver
from miotui.execute.protocol import Backend, RunSettings
from miotui.execute.torch_backend import TorchBackend
from miotui.problems import Problem

#: The backends, in the order tables list them.
BACKENDS = ("numpy", "numba", "torch", "miopen-driver")
#: What ``--backend`` accepts.
BACKEND_CHOICES = BACKENDS + ("auto", "all")


class NumpyBackend(Backend):
    """The reference itself, in float32."""

    name = "numpy"
    engine = "numpy"

    def describe(self, problem: Problem) -> str:
        from miotui.execute import reference
        return reference.engine_used(problem, self.engine)

    def prepare(self, problem: Problem, inputs: dict[str, Any]) -> Any:
        """The inputs, and what the timed calls start from (an RNN backward's forward)."""
        from miotui.execute import reference
        return inputs, reference.prepare(problem, inputs, precision="fp32")

    def run(self, problem: Problem, prepared: Any, cancel: Any) -> Any:
        from miotui.execute import reference
        inputs, saved = prepared
        return reference.run_reference(problem, inputs, precision="fp32", cancel=cancel, engine=self.engine,
                                       saved=saved)


class NumbaBackend(NumpyBackend):
    """The reference with numba's direct kernels; only for the layers they run."""

    name = "numba"
    engine = "numba"
    jit = True

    def unavailable(self) -> Optional[str]:
        from miotui.execute import numba_kernels
        return numba_kernels.available()

    def applies(self, problem: Problem) -> Optional[str]:
        from miotui.execute import numba_kernels
        return numba_kernels.not_applicable(problem)

    def compile(self, problem: Problem) -> float:
        from miotui.execute import numba_kernels
        return float(numba_kernels.warmup(problem, ("fp32",)))

    def kernels_apply(self, problem: Problem) -> bool:
        """Whether numba is usable here and its direct kernels run ``problem``."""
        return self.unavailable() is None and self.applies(problem) is None


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

"""Which backends exist, which are usable here, and the one place a name finds its backend.

* ``numpy``  the CPU reference (:mod:`miotui.execute.reference`), float32 as MIOpenDriver
  computes; always available.
* ``numba``  numba's direct kernels (depthwise / small-group convolution, pooling); for
  any other layer it does not apply (status ``n/a``): numpy's path never runs under its
  name.  Compile time is reported apart from run time.
* ``torch``  PyTorch's own kernels (:mod:`miotui.execute.torch_backend`).
* ``miopen-driver``  the real ``MIOpenDriver`` in a child process
  (:mod:`miotui.execute.driver_backend`).

Every backend is an object that answers the same questions
(:class:`~miotui.execute.protocol.Backend`: label, device, memory estimate, why not), so
the guard, the planning and the UI ask them without switching on names.  Adding a backend
is its class and one line in :data:`REGISTERED`.  Which backends a request runs, ``auto``
included, is :mod:`miotui.execute.planning`'s.

numpy, numba and torch are imported only when a run needs them: the CLI and the app
import this module at start-up.
"""

from __future__ import annotations

from typing import Any, Optional

from miotui.execute.driver_backend import DriverBackend
from miotui.execute.guard import reference_bytes
from miotui.execute.protocol import Backend, InProcessBackend, MemoryEstimate, RunSettings
from miotui.execute.torch_backend import TorchBackend
from miotui.problems import Problem


class NumpyBackend(InProcessBackend):
    """The reference itself, in float32."""

    name = "numpy"
    label = "numpy reference"
    engine = "numpy"

    def describe(self, problem: Problem) -> str:
        from miotui.execute import reference
        return reference.engine_used(problem, self.engine)

    def memory_estimate(self, problem: Problem, settings: RunSettings,
                        device: Optional[str] = None) -> MemoryEstimate:
        """The reference's float32 run: its chunk plan replayed (nothing allocated)."""
        return MemoryEstimate(reference_bytes(problem, "fp32"))

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
    label = "numba reference"
    engine = "numba"
    jit = True

    def unavailable(self, settings: Optional[RunSettings] = None) -> Optional[str]:
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


#: Every backend, in the order tables list them.  Adding a backend: its class, and one line here.
REGISTERED: tuple[type[Backend], ...] = (
    NumpyBackend,
    NumbaBackend,
    TorchBackend,
    DriverBackend,
)
#: Their names (what ``--backend`` takes and results say), in the same order.
BACKENDS = tuple(cls.name for cls in REGISTERED)
#: What ``--backend`` accepts.
BACKEND_CHOICES = BACKENDS + ("auto", "all")

# one object per backend for the process (constructing one imports nothing heavy; torch's
# remembers its device once it has looked)
_INSTANCES: dict[str, Backend] = {cls.name: cls() for cls in REGISTERED}


class UnknownBackend(KeyError):
    """A backend name that no registered backend has: the message names the known ones."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:   # KeyError's own would quote the whole message
        return f"unknown backend {self.name!r}: miotui's backends are {', '.join(BACKENDS)}"


def get_backend(name: str) -> Backend:
    """The backend called ``name``; :class:`UnknownBackend` (a KeyError) names the known ones."""
    try:
        return _INSTANCES[name]
    except (KeyError, TypeError):
        raise UnknownBackend(name) from None


def all_backends() -> tuple[Backend, ...]:
    """Every registered backend, in :data:`BACKENDS` order."""
    return tuple(_INSTANCES[name] for name in BACKENDS)


def available_backends(settings: Optional[RunSettings] = None) -> dict[str, Optional[str]]:
    """Every backend: None when usable here, else why not.  Cheap: nothing heavy is
    imported (torch is only looked up; the driver only searched for)."""
    settings = settings or RunSettings()
    return {backend.name: backend.unavailable(settings) for backend in all_backends()}

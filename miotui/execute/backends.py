"""The backends a layer can run on, and running one: the names the app and the CLI use.

* ``numpy``  the CPU reference (:mod:`miotui.execute.reference`), float32 as MIOpenDriver
  computes; always available.
* ``numba``  numba's direct kernels where they beat im2col (depthwise / small-group
  convolution, pooling); ``n/a`` for other layers.  Compile time is reported apart.
* ``torch``  PyTorch's own kernels (CPU, or the GPU when ``torch.cuda.is_available()``,
  which is also true on ROCm builds): an independent implementation, so its numbers
  check the reference as much as the reference checks it.
* ``miopen-driver``  the real ``MIOpenDriver`` in a child process; its own timing and
  its own verdict.

Every backend is verified on the same seeded inputs against a float64 reference that
shares none of its code (:mod:`miotui.execute.oracle`, :func:`miotui.execute.verify.compare`),
except MIOpenDriver, which makes its own inputs and checks itself: its verdict is read
from its output.

This module only gathers names from where they live: :mod:`protocol` (RunSettings,
RunResult, Backend, InProcessBackend, MemoryEstimate), :mod:`registry` (which backends,
the one place a name finds its backend), :mod:`planning` (which backends a request runs,
``auto``), :mod:`torch_backend` and :mod:`torch_ops`, :mod:`driver_backend`
(MIOpenDriver) and :mod:`runner` (:func:`run_layer`).  It is light to import (the CLI and the app import it at
start-up): numpy, numba and torch load only when a run needs them.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

from miotui.execute.driver_backend import DEFAULT_DRIVER, DriverBackend, driver_argv, find_driver, launch_driver
from miotui.execute.planning import resolve_auto
from miotui.execute.protocol import (
    NOISY_SPREAD,
    STATUSES,
    TIMES_KEPT,
    Backend,
    InProcessBackend,
    MemoryEstimate,
    RunResult,
    RunSettings,
)
from miotui.execute.registry import (
    BACKEND_CHOICES,
    BACKENDS,
    NumbaBackend,
    NumpyBackend,
    UnknownBackend,
    all_backends,
    available_backends,
    get_backend,
)
from miotui.execute.torch_backend import GPU_QUEUE_AHEAD, TorchBackend
from miotui.execute.torch_ops import (
    torch_activation,
    torch_batchnorm,
    torch_conv,
    torch_fusion,
    torch_lrn,
    torch_pool,
    torch_run,
    torch_softmax,
)
from miotui.problems import Problem

__all__ = ["BACKENDS", "BACKEND_CHOICES", "STATUSES", "TIMES_KEPT", "NOISY_SPREAD", "DEFAULT_DRIVER", "Backend",
           "InProcessBackend", "MemoryEstimate", "RunResult", "RunSettings", "NumpyBackend", "NumbaBackend",
           "TorchBackend", "DriverBackend", "GPU_QUEUE_AHEAD", "UnknownBackend", "all_backends",
           "available_backends", "get_backend", "resolve_auto", "find_driver", "driver_argv", "launch_driver",
           "run_layer", "torch_run", "torch_conv", "torch_pool", "torch_batchnorm", "torch_activation", "torch_lrn",
           "torch_softmax", "torch_fusion"]


def run_layer(problem: Problem, settings: RunSettings, cancel: Optional[threading.Event] = None,
              on_progress: Optional[Callable[[str], None]] = None, *, use_cache: bool = True) -> RunResult:
    """Run and verify one layer; see :func:`miotui.execute.runner.run_layer` (imported
    here on first use: it brings numpy)."""
    from miotui.execute.runner import run_layer as run
    return run(problem, settings, cancel, on_progress, use_cache=use_cache)

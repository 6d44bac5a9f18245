"""Which GPU kernels ran for which layer op, and how much GPU time that is.

The profiler links a kernel to the CPU call that launched it by a correlation id: a kernel
event and a launch event (``cudaLaunchKernel``, ``cuLaunchKernel``, ``hipLaunchKernel``...,
category ``cuda_runtime`` or ``cuda_driver``) carry the same ``correlation``.  The launch ran on
a CPU thread inside the op that asked for it, so the op of a kernel is the innermost layer op
on the launch's thread whose time span holds the launch (ops nest properly on one thread).

A convolution's backward op computes both gradients, data first, then weights (PyTorch's
order).  Its kernels are split between the two where the vendor's kernel names say which
(cuDNN's ``dgrad``/``wgrad``, CUTLASS's ``Dgrad``/``Wgrad``, MIOpen's ``bwd``/``wrw`` and
``backward_data``/``backward_weights``): every kernel up to the last one named for the data
gradient is the data gradient's, the rest the weights'.  Helper kernels between the two
(layout transforms) cannot be told apart; their time is reported.  Where the names do not
say (cuBLAS GEMMs, Winograd kernels) or contradict that order, the pair keeps its combined
time and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

_WEIGHTS = re.compile(r"wgrad|wrw|backward_?weight", re.IGNORECASE)
_DATA = re.compile(r"dgrad|bwd|backward_?data", re.IGNORECASE)


def kernel_side(name: str) -> Optional[str]:
    """``"weights"``, ``"data"`` or None: which gradient a backward kernel's name says it
    computes (weights first: MIOpen's ``ConvBwdWrW`` names both words)."""
    if _WEIGHTS.search(name):
        return "weights"
    if _DATA.search(name):
        return "data"
    return None


@dataclass
class OpCall:
    """One call of a layer op: its span on its thread, its layers' catalog rows, its kernels."""

    thread: tuple
    start: float
    end: float
    rows: list            # catalog rows of its layers, in the op's order (data before weights)
    kernels: list = field(default_factory=list)   # (correlation, µs, side)


@dataclass(frozen=True)
class Split:
    """An op call's kernel time per layer (µs), or the combined time where it cannot be split."""

    times: tuple[float, ...]
    combined: Optional[float] = None
    between_us: float = 0.0
    why: str = ""


def split_backward(kernels: list) -> Split:
    """A backward op's kernels (in launch order) shared out between its data and weights
    gradients (see the module's docstring)."""
    kernels = sorted(kernels, key=lambda k: k[0])
    sides = [side for _, _, side in kernels]
    total = sum(us for _, us, _ in kernels)
    if "data" not in sides or "weights" not in sides:
        return Split((), total, why="the kernels' names do not say which gradient each computes")
    last_data = max(i for i, s in enumerate(sides) if s == "data")
    first_weights = sides.index("weights")
    if first_weights < last_data:
        return Split((), total, why="kernels named for the two gradients interleave")
    data = sum(us for _, us, _ in kernels[:last_data + 1])
    between = sum(us for _, us, _ in kernels[last_data + 1:first_weights])
    return Split((data, total - data), between_us=between)


class Attribution:
    """Kernels to op calls, once the whole trace is read (the launches and kernels of a
    trace come in no useful order)."""

    def __init__(self) -> None:
        self.calls: list[OpCall] = []
        self.launches: dict[int, tuple[tuple, float]] = {}
        self.kernels: list[tuple[int, float, Optional[str]]] = []
        self._sides: dict[str, Optional[str]] = {}

    def launch(self, correlation: int, thread: tuple, ts: float) -> None:
        self.launches[correlation] = (thread, ts)

    def kernel(self, correlation: Optional[int], us: float, name: str) -> None:
        side = self._sides.get(name, "?")
        if side == "?":
            side = self._sides[name] = kernel_side(name)
            if len(self._sides) > 65536:
                self._sides.clear()
        self.kernels.append((correlation, us, side))

    def attribute(self) -> tuple[float, int, float, int]:
        """Each kernel given to its op call; returns (µs under no layer op, kernels there,
        µs without a launch event, kernels without one)."""
        by_thread: dict[tuple, list[tuple[float, int, Optional[OpCall], float]]] = {}
        for call in self.calls:   # spans: (start, 0, call, end) sort before launches at the same time
            by_thread.setdefault(call.thread, []).append((call.start, 0, call, call.end))
        orphan_us, orphans = 0.0, 0
        for i, (correlation, us, _side) in enumerate(self.kernels):
            launch = self.launches.get(correlation)
            if launch is None:
                orphan_us += us
                orphans += 1
                continue
            by_thread.setdefault(launch[0], []).append((launch[1], 1, None, float(i)))
        free_us, free = 0.0, 0
        for items in by_thread.values():
            items.sort(key=lambda item: (item[0], item[1], -item[3]))
            stack: list[OpCall] = []
            for ts, kind, call, extra in items:
                while stack and stack[-1].end < ts:
                    stack.pop()
                if kind == 0:
                    stack.append(call)
                    continue
                correlation, us, side = self.kernels[int(extra)]
                if stack:
                    stack[-1].kernels.append((correlation, us, side))
                else:
                    free_us += us
                    free += 1
        return free_us, free, orphan_us, orphans

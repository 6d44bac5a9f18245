"""Which GPU kernels ran under which CPU span of a profiler trace.

The profiler links a kernel to the CPU call that launched it by a correlation id: a kernel
event and a launch event (``cudaLaunchKernel``, ``cuLaunchKernel``, ``hipLaunchKernel``...,
category ``cuda_runtime`` or ``cuda_driver``) carry the same ``correlation``.  The launch ran on
a CPU thread inside the span that asked for it, so the span of a kernel is the innermost span
on the launch's thread whose time holds the launch (spans nest properly on one thread).

One mechanism for both users: the PyTorch profiler format (a layer op's kernels:
:mod:`miotui.formats.torch_profiler`) and the torch backend's GPU timing (a timed call's
kernels: :mod:`miotui.execute.kernel_time`).  It imports nothing of either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass
class OpCall:
    """One call of a layer op: its span on its thread, its layers' catalog rows, its kernels."""

    thread: tuple
    start: float
    end: float
    rows: list            # catalog rows of its layers, in the op's order (data before weights)
    kernels: list = field(default_factory=list)   # (correlation, µs, side)


class Attribution:
    """Kernels to op calls, once the whole trace is read (the launches and kernels of a
    trace come in no useful order).  ``side_of`` names what a kernel computes from its name
    (a backward op's data or weights gradient: ``formats.torch_profiler.attribution.kernel_side``);
    the default names nothing."""

    def __init__(self, side_of: Callable[[str], Optional[str]] = lambda name: None) -> None:
        self.side_of = side_of
        self.calls: list[OpCall] = []
        self.launches: dict[int, tuple[tuple, float]] = {}
        self.kernels: list[tuple[int, float, Optional[str]]] = []
        self._sides: dict[str, Optional[str]] = {}

    def launch(self, correlation: int, thread: tuple, ts: float) -> None:
        self.launches[correlation] = (thread, ts)

    def kernel(self, correlation: Optional[int], us: float, name: str) -> None:
        side = self._sides.get(name, "?")
        if side == "?":
            side = self._sides[name] = self.side_of(name)
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

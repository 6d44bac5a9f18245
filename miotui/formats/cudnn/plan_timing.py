"""Which backend executions are runs and which are benchmark mode's plan timings.

With ``torch.backends.cudnn.benchmark = True``, PyTorch (through cudnn-frontend) times the
candidate plans of each new layer before choosing one: in the API log that is a burst of
``cudnnBackendExecute`` calls of the same layer on one thread, back to back (no record of
that thread between them: one variant pack reused), with the engine changing along the
burst (measured on an H100, cuDNN 9.19: 20 timed executions of 4-5 engines per layer, then
the chosen plan's run).  A real run is built with its own variant pack (descriptor records
on its thread before it), so it starts a burst of its own.

So: back-to-back executions of one layer on one thread form a burst; a burst of two or more
engines is plan timing (its executions are finds), any other burst is runs (a program that
times one plan in a loop runs it that many times).  A burst is counted when it ends: at the
thread's next record that is not part of an execution, or at the end of the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

#: engines remembered per burst (two are enough to decide; a few more name them)
SOLVERS_KEPT = 8
#: threads with a burst open at once
THREADS_KEPT = 1024


@dataclass
class Burst:
    """Back-to-back executions of one layer on one thread (mutable while it grows)."""

    problem: object
    warnings: tuple[str, ...]
    annotations: tuple[tuple[str, str], ...]
    raw: Callable[[], list[tuple[int, str]]]
    first_line: int
    last_line: int
    runs: int = 1
    solvers: list[str] = field(default_factory=list)

    @property
    def timing(self) -> bool:
        return len(self.solvers) >= 2


class PlanTimings:
    """The open burst of each thread."""

    def __init__(self) -> None:
        self.open: dict[str, Burst] = {}

    def execution(self, thread: str, problem: object, warnings: tuple[str, ...],
                  annotations: tuple[tuple[str, str], ...], line: int, raw) -> list[Burst]:
        """A backend execution on ``thread``; returns the bursts it ends."""
        solver = next((v for k, v in annotations if k == "solver"), "")
        burst = self.open.get(thread)
        if burst is not None and burst.problem == problem:
            burst.runs += 1
            burst.last_line = line
            if solver and solver not in burst.solvers and len(burst.solvers) < SOLVERS_KEPT:
                burst.solvers.append(solver)
            return []
        ended = [] if burst is None else [burst]
        if burst is None and len(self.open) >= THREADS_KEPT:
            ended = self.finish()
        self.open[thread] = Burst(problem, warnings, annotations, raw, line, line, 1, [solver] if solver else [])
        return ended

    def other_record(self, thread: str) -> Optional[Burst]:
        """A record of ``thread`` that is not part of an execution: the end of its burst."""
        return self.open.pop(thread, None)

    def finish(self) -> list[Burst]:
        ended = list(self.open.values())
        self.open.clear()
        return ended

"""The app's runs: a queue (one run at a time), each layer's run history, and the work
one queued request does in a worker thread.  No Textual here.

Why a history and no cache: a user who presses ``r`` twice wants a second measurement
(the machine was busy, a driver changed), not the first one again; so app runs ask the
runner for fresh results (``use_cache=False``) and every result is kept, with when it
ran and with which settings, so the detail screen can show how the numbers moved.  A
result that does come from a cache (``RunResult.cached``) is shown as such.

Which backends a request runs (side by side, each is asked first whether it applies;
``auto``) is planned in :mod:`miotui.execute.planning`, as ``miotui run`` plans it: this
module keeps the queue and the book-keeping.

:class:`RunBook` is used from the UI thread only; :func:`execute` runs in a worker and
reports through a callback (the app turns each report into a Textual message).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

from miotui.execute.planning import not_applicable, plan_request
from miotui.views.run_summary import latest_per_backend

#: results kept per layer (older ones are dropped)
HISTORY_KEPT = 50
#: MIOpenDriver output lines kept in a panel's buffer between two repaints
LINES_BUFFERED = 20_000


class LineBuffer:
    """Lines written by a worker thread, taken in batches by the UI (bounded: a chatty
    driver cannot fill memory while nobody looks)."""

    def __init__(self, maxlen: int = LINES_BUFFERED) -> None:
        self._lines: deque[str] = deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self.total = 0

    def append(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
            self.total += 1

    def take(self) -> list[str]:
        with self._lock:
            out = list(self._lines)
            self._lines.clear()
        return out


@dataclass(eq=False)
class RunRequest:
    """One press of ``r``, ``R`` or ``d``: a layer, the backends to run it on, settings."""

    id: int
    layer_id: int
    problem: Any
    backends: tuple[str, ...]
    settings: Any
    kind: str = "run"                  # run | driver
    label: str = ""
    use_cache: bool = False
    lines: Optional[LineBuffer] = None     # MIOpenDriver's output, for the driver panel
    cancel: threading.Event = field(default_factory=threading.Event)
    results: list = field(default_factory=list)
    progress: str = ""


@dataclass(frozen=True)
class RunRecord:
    """One result in a layer's history: when it ran, from which request."""

    layer_id: int
    request_id: int
    started: float            # time.time() when its request started
    result: Any


class RunBook:
    """The queue, the run in progress, and every layer's run history (UI thread only)."""

    def __init__(self) -> None:
        self.queue: deque[RunRequest] = deque()
        self.current: Optional[RunRequest] = None
        self._history: dict[int, list[RunRecord]] = {}
        self._ids = itertools.count(1)
        self._started: dict[int, float] = {}

    def request(self, layer_id: int, problem: Any, backends: tuple[str, ...], settings: Any, *,
                kind: str = "run", label: str = "") -> RunRequest:
        return RunRequest(next(self._ids), layer_id, problem, backends, settings, kind=kind, label=label,
                          lines=LineBuffer() if kind == "driver" else None)

    def submit(self, req: RunRequest) -> bool:
        """Queue ``req``; True when nothing runs, so it should start now."""
        self.queue.append(req)
        return self.current is None

    def start_next(self) -> Optional[RunRequest]:
        """The next request, now current (None when the queue is empty)."""
        if self.current is not None:
            return None
        if not self.queue:
            return None
        self.current = self.queue.popleft()
        self._started[self.current.id] = time.time()
        return self.current

    def add_result(self, req: RunRequest, result: Any) -> RunRecord:
        req.results.append(result)
        record = RunRecord(req.layer_id, req.id, self._started.get(req.id, time.time()), result)
        history = self._history.setdefault(req.layer_id, [])
        history.append(record)
        del history[:-HISTORY_KEPT]
        return record

    def finish(self, req: RunRequest) -> None:
        if req is self.current:
            self.current = None
        self._started.pop(req.id, None)

    # ------------------------------------------------------------------ questions

    def state(self, layer_id: int) -> str:
        """``running``, ``queued`` or ``""``."""
        if self.current is not None and self.current.layer_id == layer_id:
            return "running"
        if any(q.layer_id == layer_id for q in self.queue):
            return "queued"
        return ""

    def position(self, layer_id: int) -> int:
        """1-based place of the layer's first queued request (0: not queued)."""
        for i, q in enumerate(self.queue):
            if q.layer_id == layer_id:
                return i + 1
        return 0

    def progress(self, layer_id: int) -> str:
        cur = self.current
        return cur.progress if cur is not None and cur.layer_id == layer_id else ""

    def history(self, layer_id: int) -> list[RunRecord]:
        return list(self._history.get(layer_id, ()))

    def results(self, layer_id: int) -> list[Any]:
        """Every kept result of the layer, oldest first."""
        return [r.result for r in self._history.get(layer_id, ())]

    def latest_by_backend(self, layer_id: int) -> list[Any]:
        """The newest result of each backend, in the order the backends last ran."""
        latest: dict[str, Any] = {}
        for rec in self._history.get(layer_id, ()):
            latest.pop(rec.result.backend, None)
            latest[rec.result.backend] = rec.result
        return list(latest.values())

    def shown_by_backend(self, layer_id: int) -> list[Any]:
        """Each backend's latest result (``run_summary.latest_per_backend``: a later ``n/a``
        or ``cancelled`` never hides an earlier result): what the table's row picks from."""
        return latest_per_backend((rec.result for rec in self._history.get(layer_id, ())),
                                  lambda r: r.backend, lambda r: r.status)

    def last(self, layer_id: int) -> Optional[Any]:
        history = self._history.get(layer_id)
        return history[-1].result if history else None

    def export_runs(self) -> dict[int, list[dict[str, Any]]]:
        """Layer id -> its results as ``RunResult.to_dict()``, oldest first (for exports)."""
        return {layer_id: [r.result.to_dict() for r in records] for layer_id, records in self._history.items()}

    # ------------------------------------------------------------------ cancelling

    def cancel_queued(self, layer_id: Optional[int] = None, kind: Optional[str] = None) -> list[RunRequest]:
        """Remove (and return) the queued requests of a layer and kind (None: any)."""
        removed = [q for q in self.queue if (layer_id is None or q.layer_id == layer_id)
                   and (kind is None or q.kind == kind)]
        for q in removed:
            self.queue.remove(q)
            q.cancel.set()
        return removed

    def cancel_current(self, layer_id: Optional[int] = None, kind: Optional[str] = None) -> Optional[RunRequest]:
        """Ask the running request to stop (when it matches); returns it."""
        cur = self.current
        if cur is None or (layer_id is not None and cur.layer_id != layer_id) or (kind is not None and
                                                                                   cur.kind != kind):
            return None
        cur.cancel.set()
        return cur

    def clear(self) -> None:
        """Quitting: drop the queue and stop the current run."""
        for q in self.queue:
            q.cancel.set()
        self.queue.clear()
        if self.current is not None:
            self.current.cancel.set()


# ---------------------------------------------------------------------- the work (a worker thread)

Emit = Callable[[str, Any], None]


def execute(req: RunRequest, emit: Emit) -> None:
    """Run every backend of ``req`` in turn (in a worker thread), reporting
    ``("progress", text)``, ``("result", RunResult)`` and finally ``("done", None)``
    through ``emit``.  Never raises: a failure is a result."""
    try:
        _execute(req, emit)
    except Exception as e:   # pragma: no cover - _execute turns failures into results already
        emit("result", not_applicable(req.problem, req.settings, req.label or "run", f"{type(e).__name__}: {e}",
                                      "error"))
    finally:
        emit("done", None)


def _execute(req: RunRequest, emit: Emit) -> None:
    try:
        from miotui.execute.runner import launch_driver, run_layer
    except Exception as e:
        emit("result", not_applicable(req.problem, req.settings, req.label or "run",
                                      f"the execution backends failed to load ({e})", "error"))
        return
    for backend, why in plan_request(req.problem, req.backends, req.settings):
        if req.cancel.is_set():
            emit("result", not_applicable(req.problem, req.settings, backend, "cancelled before it started",
                                          "cancelled"))
            continue
        if why:
            emit("result", not_applicable(req.problem, req.settings, backend, why))
            continue
        settings = replace(req.settings, backend=backend)
        req.progress = f"{backend}: starting"
        emit("progress", req.progress)

        def progress(text: str, b: str = backend) -> None:
            req.progress = text if text.startswith(b) or b == "auto" else f"{b}: {text}"
            emit("progress", req.progress)

        try:
            if req.kind == "driver":
                lines = req.lines if req.lines is not None else LineBuffer()
                result = launch_driver(req.problem, settings, lines.append, req.cancel)
            else:
                result = run_layer(req.problem, settings, req.cancel, progress, use_cache=req.use_cache)
        except Exception as e:  # a failing backend is a result, never a crash
            result = not_applicable(req.problem, settings, backend, f"{type(e).__name__}: {e}", "error")
        emit("result", result)

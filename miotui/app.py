"""The Textual app: live unique-layer table over a growing MIOpen log.

Threads and who does what (the UI thread never reads files, decodes or computes):

* one reader thread per log (``miotui.logs.follow``) reads bytes and decodes them
  into the shared :class:`~miotui.catalog.Catalog`;
* one poller thread asks the catalog what changed (``changed_since``) ~10 times a
  second, samples the job's process, and posts one :class:`Polled` message; it waits
  for the UI to take it before polling again, so a busy UI is never flooded;
* runs (``r``, ``R``, ``d``) are Textual thread workers, one at a time from a queue;
  each gets its worker's ``cancelled_event`` as its cancel flag, so ``escape`` and
  quitting both stop a run at its next check.

``launch()`` is what ``miotui`` (``cli.py``) calls.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Iterable, Optional

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker, get_current_worker

from miotui.catalog import Catalog
from miotui.logs.follow import FollowEvent, JobStatus, LogReader, reader_summary
from miotui.screens.layers import LayersScreen
from miotui.widgets.layer_model import RunSummary
from miotui.widgets.status_bar import StatusInfo, human_bytes

#: Seconds between catalog polls (the table updates at most this often).
POLL_INTERVAL = 0.1
#: Seconds a follow event (truncation, rotation...) stays in the status bar.
EVENT_SECONDS = 15.0
#: Seconds between job samples and between attempts to find the job's process.
JOB_SAMPLE_S = 1.0
JOB_SEARCH_S = 5.0
JOB_SEARCH_TRIES = 12
#: Rows to arrive between two gc.freeze() calls (see MiotuiApp._freeze_long_lived).
FREEZE_EVERY_ROWS = 1000


# ---------------------------------------------------------------------- messages from threads

@dataclass(frozen=True)
class PollData:
    changed: list
    lines: int
    bytes: int
    undecoded: int
    lines_per_s: float
    scan_done: int
    scan_total: int
    scanning: bool
    state: str
    finished: bool
    events: list
    tail: Optional[list]
    job: Optional[JobStatus]
    job_env: Optional[dict]


class Polled(Message):
    def __init__(self, data: PollData) -> None:
        super().__init__()
        self.data = data


@dataclass(eq=False)
class RunRequest:
    id: int
    index: int
    problem: Any
    backends: tuple[str, ...]
    settings: Any
    kind: str = "run"                 # run | driver
    label: str = ""
    worker: Optional[Worker] = None
    screen: Any = None                # DriverScreen for kind == "driver"
    results: list = field(default_factory=list)


class RunProgress(Message):
    def __init__(self, request: RunRequest, text: str) -> None:
        super().__init__()
        self.request = request
        self.text = text


class RunResultReady(Message):
    def __init__(self, request: RunRequest, result: Any) -> None:
        super().__init__()
        self.request = request
        self.result = result


class RunDone(Message):
    def __init__(self, request: RunRequest) -> None:
        super().__init__()
        self.request = request


def summary_of(result: Any) -> RunSummary:
    from miotui.screens.detail import verdict_of
    return RunSummary(result.median_ms, result.gflops, verdict_of(result), result.backend)


def _error_result(problem: Any, settings: Any, backend: str, message: str, status: str = "error") -> Any:
    from miotui.execute.backends import RunResult
    return RunResult(backend=backend, problem=problem, settings=settings, status=status, message=message)


# ---------------------------------------------------------------------- the app

class MiotuiApp(App):
    """miotui: every MIOpen layer of a log, live; inspect, reproduce, run and verify."""

    CSS_PATH = "miotui.tcss"
    TITLE = "miotui"

    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True, id="app.quit"),
        Binding("question_mark", "help", "Keys", id="app.help"),
        Binding("e", "export", "Export", id="app.export"),
        Binding("u", "undecoded", "Undecoded", show=False, id="app.undecoded"),
    ]

    def __init__(self, paths: list[str], *, follow: bool = False, pid: Optional[int] = None,
                 stdin_fd: Optional[int] = None, find_job: Optional[bool] = None, demo: Any = None,
                 poll_interval: float = POLL_INTERVAL, reader_poll_interval: Optional[float] = None,
                 export_dir: str = ".") -> None:
        super().__init__()
        self.paths = list(paths)
        self.follow_mode = follow
        self.stdin_fd = stdin_fd
        self.demo = demo
        self.poll_interval = poll_interval
        self.export_dir = export_dir
        self.catalog = Catalog()
        kw = {} if reader_poll_interval is None else {"poll_interval": reader_poll_interval}
        self.reader = LogReader(self.catalog, self.paths, follow=follow, stdin_fd=stdin_fd, **kw)
        self.job_pid = pid
        self._find_job = (follow or "-" in self.paths) if find_job is None else find_job
        self.job: Optional[JobStatus] = None
        self.job_env: Optional[dict[str, str]] = None
        self.job_env_version = 0
        self._stop_poll = threading.Event()
        self._poll_ack = threading.Event()
        self._poll_thread: Optional[threading.Thread] = None
        self._want_tail = False
        self._tail_cache: list = []
        self._tail_key: Any = None
        self._last: Optional[PollData] = None
        self._event: Optional[FollowEvent] = None
        self._results: dict[int, dict[str, Any]] = {}
        self._run_state: dict[int, str] = {}
        self._queue: deque[RunRequest] = deque()
        self._current: Optional[RunRequest] = None
        self._run_text = ""
        self._ids = itertools.count(1)
        self._closed = False
        self.polls = 0
        self._frozen_rows = 0
        self.layers_screen = LayersScreen()

    # ------------------------------------------------------------------ lifecycle

    def get_default_screen(self) -> Screen:
        return self.layers_screen

    def on_mount(self) -> None:
        self.sub_title = reader_summary(self.reader) if self.paths else ""

    def start_background(self) -> None:
        """Start reading and polling (called once the layers screen is on screen)."""
        if self._poll_thread is not None or self._closed:
            return
        self.reader.start()
        self._poll_thread = threading.Thread(target=self._poll_loop, name="miotui-poll", daemon=True)
        self._poll_thread.start()

    def shutdown_background(self) -> None:
        """Stop every thread this app started (runs first: they may hold the CPU)."""
        if self._closed:
            return
        self._closed = True
        self._queue.clear()
        if self._current is not None and self._current.worker is not None:
            self._current.worker.cancel()
        self._stop_poll.set()
        self._poll_ack.set()
        self.reader.stop(timeout=1.0)
        if self.demo is not None:
            self.demo.cleanup()
        if self._poll_thread is not None:
            self._poll_thread.join(1.0)
        reference = sys.modules.get("miotui.execute.reference")   # loaded only if a layer ran
        if reference is not None:
            reference.shutdown_threads()

    async def action_quit(self) -> None:
        self.shutdown_background()
        self.exit()

    def on_unmount(self) -> None:
        self.shutdown_background()

    # ------------------------------------------------------------------ the poller (its own thread)

    def _poll_loop(self) -> None:
        version = 0
        rate: deque[tuple[float, int]] = deque(maxlen=40)
        watcher = None
        next_job = 0.0
        next_search = 0.0
        searches = 0
        if self.job_pid is not None:
            watcher = self._make_watcher(self.job_pid)
        while not self._stop_poll.is_set():
            t0 = time.monotonic()
            try:
                version, changed = self.catalog.changed_since(version)
                cat = self.catalog
                lines, nbytes = cat.lines, cat.bytes
                rate.append((t0, lines))
                while len(rate) > 2 and t0 - rate[0][0] > 2.0:
                    rate.popleft()
                lps = 0.0
                if len(rate) >= 2 and rate[-1][0] > rate[0][0]:
                    lps = (rate[-1][1] - rate[0][1]) / (rate[-1][0] - rate[0][0])
                done, total, initial_done = self.reader.initial_scan
                job = None
                job_env = None
                if watcher is None and self._find_job and searches < JOB_SEARCH_TRIES and t0 >= next_search:
                    searches += 1
                    next_search = t0 + JOB_SEARCH_S
                    from miotui.logs.follow import find_writer_pid
                    pid = find_writer_pid(self.reader.paths, self.stdin_fd)
                    if pid is not None:
                        watcher = self._make_watcher(pid)
                if watcher is not None and t0 >= next_job:
                    next_job = t0 + JOB_SAMPLE_S
                    job = watcher.sample()
                    if self.job_env is None:
                        job_env = watcher.miopen_environment()
                data = PollData(
                    changed=changed, lines=lines, bytes=nbytes, undecoded=cat.undecoded_count, lines_per_s=lps,
                    scan_done=done, scan_total=total, scanning=not initial_done, state=self.reader.state_text(),
                    finished=self.reader.finished, events=self.reader.drain_events(),
                    tail=self.reader.tail(500) if self._want_tail else None, job=job, job_env=job_env)
            except Exception as e:  # pragma: no cover - keep polling whatever happens
                self.log.error(f"poller: {e!r}")
                if self._stop_poll.wait(self.poll_interval):
                    return
                continue
            self._poll_ack.clear()
            try:
                self.post_message(Polled(data))
            except Exception:
                return
            self._poll_ack.wait(2.0)
            elapsed = time.monotonic() - t0
            if self._stop_poll.wait(max(0.0, self.poll_interval - elapsed)):
                return

    def _freeze_long_lived(self) -> None:
        """Move the table's rows out of the garbage collector's sight once many have arrived.

        Rows live as long as the app (the catalog only grows).  With 10 000 of them, every
        full collection walks them all: a 100+ ms pause in the UI thread, felt as a
        dropped keypress.  ``gc.freeze()`` puts everything alive now into the permanent
        generation, so later collections only see what is new.
        """
        rows = len(self.layers_screen.table.model.rows)
        if rows - self._frozen_rows >= FREEZE_EVERY_ROWS:
            import gc
            gc.freeze()
            self._frozen_rows = rows

    def _make_watcher(self, pid: int) -> Any:
        try:
            from miotui.logs.follow import JobWatcher
            w = JobWatcher(pid)
            self.job_pid = pid
            return w
        except Exception:
            return None

    def on_polled(self, message: Polled) -> None:
        try:
            if not self._closed:
                self._apply_poll(message.data)
        except NoMatches:
            pass  # the screens are being taken down (quitting)
        finally:
            self._poll_ack.set()

    def _apply_poll(self, data: PollData) -> None:
        self.polls += 1
        self._last = data
        screen = self.layers_screen
        if data.changed:
            screen.apply_snapshots(data.changed)
            self._freeze_long_lived()
            top = self.screen
            from miotui.screens.detail import DetailScreen
            if isinstance(top, DetailScreen) and any(s.index == top.index for s in data.changed):
                top.refresh_content()
        if data.job is not None:
            self.job = data.job
        if data.job_env is not None:
            self.job_env = data.job_env
            self.job_env_version += 1
            top = self.screen
            from miotui.screens.detail import DetailScreen
            if isinstance(top, DetailScreen):
                top.refresh_content()
        for ev in data.events:
            self._event = ev
            if ev.kind in ("truncated", "rotated", "deleted", "recreated", "error", "waiting"):
                self.notify(ev.message, title=f"log {ev.kind}",
                            severity="error" if ev.kind == "error" else "warning", timeout=6)
            elif ev.kind == "eof":
                self.notify(ev.message, timeout=4)
        if data.tail is not None:
            self._tail_cache = data.tail
            if screen.tail_visible:
                self.refresh_tail()
        screen.status.set_progress(data.scan_done, data.scan_total, data.scanning)
        self.refresh_status()

    # ------------------------------------------------------------------ status bar and tail

    def refresh_status(self) -> None:
        data = self._last
        screen = self.layers_screen
        if not screen.is_mounted:
            return
        table = screen.table
        model = table.model
        if data is None:
            screen.status.set_info(StatusInfo(sources=reader_summary(self.reader), follow_state="starting"))
            return
        if self.follow_mode:
            if data.state in ("following", "reading"):
                state = "following" if table.follow else "paused (f: follow)"
            else:
                state = data.state + ("" if table.follow else ", paused")
        else:
            if data.scanning and data.scan_total:
                state = f"reading {100 * data.scan_done / data.scan_total:.0f}%"
            elif data.finished or data.state in ("read", "ended"):
                state = "read"
            else:
                state = data.state
        job_text, job_ok = "", None
        if self.job is not None:
            j = self.job
            if j.running:
                job_text = f"job {j.pid} {j.status} CPU {j.cpu_percent:.0f}% RSS {human_bytes(j.rss)}"
                job_ok = True
            else:
                job_text = f"job {j.pid} {j.status}"
                job_ok = False
        event_text, event_kind = "", ""
        if self._event is not None and time.time() - self._event.time < EVENT_SECONDS \
                and self._event.kind not in ("opened", "caught-up"):
            event_text, event_kind = self._event.message, self._event.kind
        info = StatusInfo(
            sources=reader_summary(self.reader), follow_state=state, bytes=data.bytes, lines=data.lines,
            lines_per_s=data.lines_per_s if not data.finished else 0.0, undecoded=data.undecoded,
            layers_shown=len(model.view), layers_total=len(model.rows), job=job_text, job_ok=job_ok,
            run=self._run_text, event=event_text, event_kind=event_kind,
            new_badge=table.new_while_paused if (self.follow_mode and not table.follow) else 0)
        screen.status.set_info(info)

    def refresh_tail(self) -> None:
        screen = self.layers_screen
        self._want_tail = screen.tail_visible
        if not self._want_tail:
            self._tail_key = None
            return
        snap = screen.table.selected_snapshot
        title, lines = "", []
        if snap is not None:
            p = snap.problem
            title = f"layer #{snap.index} {p.op} {p.direction} {p.dtype}: source lines (first sighting)"
            lines = list(snap.raw)
        tail = self._tail_cache
        key = (id(snap), len(tail), tail[-1] if tail else None)
        if key == self._tail_key:
            return   # nothing new: do not repaint the pane 10 times a second
        self._tail_key = key
        screen.show_tail(title, lines, tail)

    # ------------------------------------------------------------------ layer access (UI thread)

    def snapshot(self, index: int) -> Any:
        row = self.layers_screen.table.model.rows.get(index)
        return row.snapshot if row is not None else None

    def results_for(self, index: int) -> list[Any]:
        return list(self._results.get(index, {}).values())

    def run_state(self, index: int) -> str:
        return self._run_state.get(index, "")

    def open_detail(self, index: int) -> None:
        from miotui.screens.detail import DetailScreen
        if self.snapshot(index) is not None:
            self.push_screen(DetailScreen(index))

    def copy_command(self, index: int) -> None:
        snap = self.snapshot(index)
        if snap is None:
            return
        if not snap.driver_command:
            self.notify("MIOpenDriver cannot express this layer (see its warnings).", severity="warning")
            return
        self.copy_to_clipboard(snap.driver_command)
        self.notify(snap.driver_command, title="Copied to the clipboard (OSC 52)", timeout=4)

    def save_command(self, index: int) -> None:
        snap = self.snapshot(index)
        if snap is None or not snap.driver_command:
            self.notify("No MIOpenDriver command for this layer.", severity="warning")
            return
        path = os.path.join(self.export_dir, f"miotui_layer_{index}.sh")
        text = ("#!/usr/bin/env bash\n"
                f"# layer #{index} from miotui: {snap.problem.op} {snap.problem.direction} {snap.problem.dtype}\n"
                'DRIVER="${MIOPEN_DRIVER:-MIOpenDriver}"\n'
                '"$DRIVER" ' + snap.driver_command.split(" ", 1)[1] + ' -t 1 "$@"\n')
        self.run_worker(partial(self._write_file, path, text, True, "Saved the command to"),
                        thread=True, group="io", exit_on_error=False)

    def _write_file(self, path: str, text: str, executable: bool, what: str) -> None:
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            if executable:
                os.chmod(path, 0o755)
        except OSError as e:
            self.call_from_thread(self.notify, f"Cannot write {path}: {e.strerror or e}", severity="error")
            return
        self.call_from_thread(self.notify, f"{what} {path}")

    # ------------------------------------------------------------------ runs

    def _settings(self, **kw: Any) -> Any:
        from miotui.execute.backends import RunSettings
        return RunSettings(**kw)

    def run_default(self, index: int) -> None:
        snap = self.snapshot(index)
        if snap is None:
            return
        self._enqueue(RunRequest(next(self._ids), index, snap.problem, ("auto",), self._settings(),
                                 label="reference"))

    def choose_and_run(self, index: int) -> None:
        from miotui.screens.dialogs import RunChoice, RunChooserScreen
        snap = self.snapshot(index)
        if snap is None:
            return
        p = snap.problem

        def chosen(choice: Optional[RunChoice]) -> None:
            if choice is None:
                return
            settings = self._settings(iters=choice.iters, batch=choice.batch)
            if choice.backend == "miopen-driver":
                self.launch_driver(index, settings=settings)
                return
            backends = ("*all*",) if choice.backend == "all" else (choice.backend,)
            self._enqueue(RunRequest(next(self._ids), index, p, backends, settings, label=choice.backend))

        self.push_screen(RunChooserScreen(f"#{index} {p.op} {p.direction} {p.dtype}", p.input_shape[0]), chosen)

    def launch_driver(self, index: int, settings: Any = None) -> None:
        from miotui.screens.driver_panel import DriverScreen
        snap = self.snapshot(index)
        if snap is None:
            return
        screen = DriverScreen(index, snap.driver_command or "(no MIOpenDriver command for this layer)")
        self.push_screen(screen)
        self._enqueue(RunRequest(next(self._ids), index, snap.problem, ("miopen-driver",),
                                 settings or self._settings(), kind="driver", label="MIOpenDriver", screen=screen))

    def _enqueue(self, req: RunRequest) -> None:
        self._queue.append(req)
        self._run_state[req.index] = "queued"
        self.layers_screen.table.set_result(req.index, RunSummary(None, None, "queued", req.label))
        if self._current is None:
            self._start_next()
        else:
            self.notify(f"Queued layer #{req.index} ({req.label}); {len(self._queue)} waiting.", timeout=3)
        self._refresh_run_views(req.index)

    def _start_next(self) -> None:
        if self._closed:
            return
        if not self._queue:
            self._current = None
            self._run_text = ""
            self.refresh_status()
            return
        req = self._queue.popleft()
        self._current = req
        self._run_state[req.index] = "running"
        self._run_text = f"running #{req.index} {req.label}… (esc cancels)"
        self.layers_screen.table.set_result(req.index, RunSummary(None, None, "running", req.label))
        if req.screen is not None:
            req.screen.set_state("running")
        req.worker = self.run_worker(partial(self._run_thread, req), name=f"run-{req.id}", group="runs",
                                     thread=True, exit_on_error=False)
        self._refresh_run_views(req.index)
        self.refresh_status()

    def _run_thread(self, req: RunRequest) -> None:
        """Worker thread: run every backend of the request, posting each result."""
        worker = get_current_worker()
        cancel = worker.cancelled_event
        backends = list(req.backends)
        try:
            from miotui.execute import backends as be
        except Exception as e:
            self.notify(f"cannot run: the execution backends failed to load ({e})", severity="error")
            self.post_message(RunDone(req))
            return
        if backends == ["*all*"]:
            try:
                avail = be.available_backends(req.settings)
            except Exception as e:
                avail = {"numpy": None}
                self.post_message(RunProgress(req, f"could not list backends: {e}"))
            backends = [name for name in be.BACKENDS if avail.get(name, "missing") is None]
        for backend in backends:
            if cancel.is_set():
                self.post_message(RunResultReady(req, _error_result(req.problem, req.settings, backend,
                                                                    "cancelled before it started", "cancelled")))
                continue
            settings = replace(req.settings, backend=backend)
            self.post_message(RunProgress(req, f"{backend}: starting"))
            try:
                if req.kind == "driver":
                    screen = req.screen
                    result = be.launch_driver(req.problem, settings, screen.feed_line if screen else (lambda _l: None),
                                              cancel)
                else:
                    result = be.run_layer(req.problem, settings, cancel,
                                          lambda text, b=backend: self.post_message(RunProgress(req, f"{b}: {text}")))
            except Exception as e:  # a failing backend is a result, never a crash
                result = _error_result(req.problem, settings, backend, f"{type(e).__name__}: {e}")
            self.post_message(RunResultReady(req, result))
        self.post_message(RunDone(req))

    def on_run_progress(self, message: RunProgress) -> None:
        if message.request is self._current:
            self._run_text = f"#{message.request.index} {message.text} (esc cancels)"
            self.refresh_status()

    def on_run_result_ready(self, message: RunResultReady) -> None:
        req, result = message.request, message.result
        req.results.append(result)
        per_layer = self._results.setdefault(req.index, {})
        per_layer.pop(result.backend, None)
        per_layer[result.backend] = result
        from miotui.screens.detail import verdict_of
        verdict = verdict_of(result)
        parts = [f"layer #{req.index} on {result.backend}: {verdict}"]
        if result.median_ms is not None:
            parts.append(f"{result.median_ms:.4g} ms")
        if result.gflops is not None:
            parts.append(f"{result.gflops:.1f} GFLOP/s")
        if result.message and verdict != "ok":
            parts.append(result.message)
        severity = "information" if verdict == "ok" else ("warning" if verdict in ("refused", "cancelled")
                                                           else "error")
        self.notify(" · ".join(parts), severity=severity, timeout=6)
        if req.screen is not None:
            req.screen.show_result(result)
        self._refresh_run_views(req.index)

    def on_run_done(self, message: RunDone) -> None:
        req = message.request
        self._run_state.pop(req.index, None)
        if any(q.index == req.index for q in self._queue):
            self._run_state[req.index] = "queued"
        results = self.results_for(req.index)
        self.layers_screen.table.set_result(req.index, summary_of(results[-1]) if results else None)
        if req is self._current:
            self._current = None
        self._refresh_run_views(req.index)
        self._start_next()

    def _refresh_run_views(self, index: int) -> None:
        from miotui.screens.detail import DetailScreen
        top = self.screen
        if isinstance(top, DetailScreen) and top.index == index:
            top.refresh_content()

    def cancel_current_run(self) -> bool:
        """Cancel the running run (escape); False when nothing runs."""
        req = self._current
        if req is None or req.worker is None:
            return False
        req.worker.cancel()
        self._run_text = f"cancelling #{req.index}…"
        self.notify(f"Cancelling the run of layer #{req.index}…", timeout=3)
        self.refresh_status()
        return True

    def cancel_run_for(self, index: int, kind: str) -> bool:
        for q in list(self._queue):
            if q.index == index and q.kind == kind:
                self._queue.remove(q)
                backend = q.backends[0] if q.backends[0] != "*all*" else "all"
                self.post_message(RunResultReady(q, _error_result(q.problem, q.settings, backend,
                                                                  "cancelled while queued", "cancelled")))
                self.post_message(RunDone(q))
                return True
        if self._current is not None and self._current.index == index and self._current.kind == kind:
            return self.cancel_current_run()
        return False

    @property
    def running(self) -> bool:
        return self._current is not None

    # ------------------------------------------------------------------ export, help, undecoded

    def action_export(self) -> None:
        from miotui.screens.dialogs import ExportChoice, ExportScreen

        def chosen(choice: Optional[ExportChoice]) -> None:
            if choice is not None:
                self.export_to(choice.fmt, choice.path)

        self.push_screen(ExportScreen(len(self.catalog), self.export_dir), chosen)

    def export_to(self, fmt: str, path: Optional[str] = None) -> None:
        """Write every unique layer (most executed first) in a thread worker."""
        from miotui.screens.dialogs import default_export_path
        target = path or default_export_path(fmt, self.export_dir)
        self.run_worker(partial(self._export_thread, fmt, target), thread=True, group="io", exit_on_error=False)

    def _export_thread(self, fmt: str, path: str) -> None:
        import json

        from miotui import export
        layers = self.catalog.most_executed()
        if fmt == "json":
            stats = {"lines": self.catalog.lines, "bytes": self.catalog.bytes,
                     "seconds": round(self.catalog.seconds, 3)}
            text = json.dumps(export.to_json(layers, self.catalog.undecoded(), stats), indent=1) + "\n"
        elif fmt == "csv":
            text = export.to_csv(layers)
        else:
            text = export.to_driver_script(layers)
        self._write_file(path, text, fmt == "driver", f"Exported {len(layers):,} layers ({fmt}) to")

    def help_rows(self) -> list[tuple[str, str, str, str]]:
        from miotui.screens.detail import DetailScreen
        from miotui.screens.driver_panel import DriverScreen
        from miotui.screens.info import UndecodedScreen, binding_rows
        from miotui.widgets.layer_table import LayerTable
        groups = [("anywhere", self.BINDINGS), ("layers", LayersScreen.BINDINGS), ("table", LayerTable.BINDINGS),
                  ("layer detail", DetailScreen.BINDINGS), ("driver panel", DriverScreen.BINDINGS),
                  ("undecoded", UndecodedScreen.BINDINGS)]
        rows = binding_rows(groups, dict(self._keymap))
        rows.append(("anywhere", "ctrl+p", "Command palette (themes, export, …)", "app.command_palette"))
        return rows

    def action_help(self) -> None:
        from miotui.screens.info import HelpScreen
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.help_rows()))

    def action_undecoded(self) -> None:
        from miotui.screens.info import UndecodedScreen
        if not isinstance(self.screen, UndecodedScreen):
            self.push_screen(UndecodedScreen())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Export layers: MIOpenDriver script", "every unique layer, most executed first (.sh)",
                            partial(self.export_to, "driver"))
        yield SystemCommand("Export layers: CSV", "one row per unique layer", partial(self.export_to, "csv"))
        yield SystemCommand("Export layers: JSON", "the `miotui decode --format json` contract",
                            partial(self.export_to, "json"))
        yield SystemCommand("Export layers…", "choose the format and the file", self.action_export)
        yield SystemCommand("Undecoded lines", "lines that could not be decoded, with the reason",
                            self.action_undecoded)
        yield SystemCommand("Toggle the raw log pane", "the selected layer's lines and the live tail",
                            self.layers_screen.action_toggle_log)
        yield SystemCommand("Follow the newest layer", "resume following", self.layers_screen.action_follow)
        yield SystemCommand("Keys", "every key binding and its id", self.action_help)


# ---------------------------------------------------------------------- entry point

def load_keymap(path: Optional[str] = None) -> dict[str, str]:
    """Binding id -> keys, from ``$MIOTUI_KEYMAP`` or ``~/.config/miotui/keymap.toml``.

    The file is TOML: either top-level ``"layers.run" = "ctrl+r"`` pairs or the same
    under a ``[keys]`` table.  A broken file is reported on stderr and ignored.
    """
    path = path or os.environ.get("MIOTUI_KEYMAP") or os.path.join(
        os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "miotui", "keymap.toml")
    if not os.path.exists(path):
        return {}
    try:
        import tomllib
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, ValueError, ImportError) as e:
        print(f"miotui: ignoring keymap {path}: {e}", file=sys.stderr)
        return {}
    table = data.get("keys", data)
    return {str(k): str(v) for k, v in table.items() if isinstance(v, str)}


def _take_stdin() -> tuple[Optional[int], Optional[str]]:
    """Move a piped stdin aside and give fd 0 the terminal, so the keyboard still works.

    Returns (fd of the pipe, None) or (None, error message).
    """
    if os.isatty(0):
        return None, "stdin is a terminal: pipe a log into miotui (python train.py 2>&1 | miotui -)"
    data_fd = os.dup(0)
    try:
        tty = os.open("/dev/tty", os.O_RDONLY)
    except OSError as e:
        os.close(data_fd)
        return None, f"cannot open the terminal for the keyboard (/dev/tty: {e.strerror}); " \
                     f"use `miotui decode -` without a terminal"
    os.dup2(tty, 0)
    os.close(tty)
    return data_fd, None


def launch(paths: list[str], *, follow: bool, demo: bool, pid: Optional[int]) -> int:
    """Run the app on ``paths`` (files, glob patterns, ``-``); returns the exit status."""
    import glob as _glob

    replay = None
    stdin_fd = None
    paths = list(paths)
    if demo:
        from miotui.demo import DemoReplay
        replay = DemoReplay().start()
        paths = [replay.path]
        follow = True
    if "-" in paths:
        stdin_fd, error = _take_stdin()
        if error:
            print(f"miotui: {error}", file=sys.stderr)
            return 2
    if not follow:
        for p in paths:
            if p == "-":
                continue
            if any(ch in p for ch in "*?["):
                if not _glob.glob(p):
                    print(f"miotui: no file matches {p}", file=sys.stderr)
                    return 2
            elif not os.path.exists(p):
                print(f"miotui: cannot read {p}: no such file (use --follow to wait for it)", file=sys.stderr)
                return 2
            elif not os.access(p, os.R_OK):
                print(f"miotui: cannot read {p}: permission denied", file=sys.stderr)
                return 2
    app = MiotuiApp(paths, follow=follow, pid=pid, stdin_fd=stdin_fd, demo=replay)
    keymap = load_keymap()
    if keymap:
        app.set_keymap(keymap)
    import signal

    def _hangup(signum: int, frame: Any) -> None:
        # Terminal closed or `kill`: leave like ctrl+q (stop runs, remove the demo's log).
        # A signal handler interrupts the event loop's own thread, possibly inside a lock:
        # doing the shutdown here deadlocked. Ask the loop to exit from another thread.
        def request_exit() -> None:
            try:
                app.call_from_thread(app.exit, 128 + signum)
            except Exception:  # the app is already gone or going
                pass

        threading.Thread(target=request_exit, name="miotui-signal", daemon=True).start()

    for sig in (signal.SIGHUP, signal.SIGTERM):
        try:
            signal.signal(sig, _hangup)
        except (ValueError, OSError):  # not the main thread, or no such signal here
            pass
    try:
        app.run()
    finally:
        app.shutdown_background()
        if replay is not None:
            replay.cleanup()
    return app.return_code or 0

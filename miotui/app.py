"""The Textual app: live unique-layer table over a growing MIOpen log.

Threads and who does what (the UI thread never reads files, decodes or computes):

* one reader thread (``miotui.sources.follow.LogReader``) reads every log, a bounded piece
  of one file at a time, and decodes it into the shared :class:`~miotui.catalog.Catalog`;
* the poller (:class:`miotui.views.poller.Poller`) gathers what changed ~10 times a second (the
  layers, where the logged GPU time goes, the first iteration's startup view, each
  file's read rate) and posts one :class:`Polled` message, waiting for the UI to take it
  before the next; the app hands each part to the screens that show it (the startup
  screen by :class:`~miotui.screens.messages.StartupChanged`);
* runs (``r``, ``R``, ``d``) go through a queue (:class:`miotui.run_queue.RunBook`), one
  at a time, each in a thread worker running :func:`miotui.run_queue.execute`, which
  reports by :class:`RunEvent` messages (progress floods merge: ``can_replace``).

Screens never import this module: they read the live model (:class:`miotui.views.poller.LiveModel`)
they are given, ask for things with :class:`~miotui.screens.messages.LayerAction` and are
told of changes with :class:`~miotui.screens.messages.LayerChanged`.
:func:`miotui.launch.launch` starts the app from the command line.
"""

from __future__ import annotations

import os
import sys
import time
from functools import partial
from typing import Any, Iterable, Optional, Sequence

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen

from miotui.catalog import Catalog
from miotui.execute.planning import ALL, not_applicable
from miotui.formats import FORMATS
from miotui.gc_freeze import FreezeAfterSlowCollection
from miotui.run_queue import RunBook, RunRequest, execute
from miotui.safe_text import visible
from miotui.screens.detail import DetailScreen
from miotui.screens.driver_panel import DriverScreen
from miotui.screens.info import HelpScreen, UndecodedScreen, binding_rows
from miotui.screens.layers import LayersScreen, empty_text, time_line_text
from miotui.screens.messages import LayerAction, LayerChanged, RunFinished, StartupChanged, ViewChanged
from miotui.screens.startup import StartupScreen
from miotui.sources.follow import FollowEvent, LogReader, reader_summary
from miotui.views.live_traces import LiveTraces
from miotui.views.poller import POLL_INTERVAL, LiveModel, PollData, Poller
from miotui.views.run_summary import pending_summary, result_line, row_summary, severity, verdict_of
from miotui.widgets.layer_table import LayerTable
from miotui.widgets.log_view import LogView
from miotui.widgets.status_bar import StatusInfo, follow_state

#: Seconds a follow event (truncation, rotation...) stays in the status bar.
EVENT_SECONDS = 15.0
#: The interpreter's thread switch interval while the app runs (see start_background)
GIL_SWITCH_S = 0.0005
#: Seconds between redraws of an open detail screen for a change of the log's GPU time
#: total (its layer's share moves whenever any layer runs again)
SHARE_REDRAW_S = 1.0


class Polled(Message):
    def __init__(self, data: PollData) -> None:
        super().__init__()
        self.data = data


class RunEvent(Message):
    """A report from a run's worker: ``progress`` (text), ``result`` (a RunResult), ``done``."""

    def __init__(self, request: RunRequest, kind: str, payload: Any) -> None:
        super().__init__()
        self.request, self.kind, self.payload = request, kind, payload

    def can_replace(self, message: Message) -> bool:
        # a newer progress line of the same run makes an older one pointless
        return (self.kind == "progress" and isinstance(message, RunEvent) and message.kind == "progress"
                and message.request is self.request)


def binding_groups() -> list[tuple[str, Sequence[Binding]]]:
    """(where, bindings) for the help screen and the keymap check."""
    return [("anywhere", MiotuiApp.BINDINGS), ("layers", LayersScreen.BINDINGS), ("table", LayerTable.BINDINGS),
            ("raw log pane", LogView.BINDINGS), ("layer detail", DetailScreen.BINDINGS),
            ("driver panel", DriverScreen.BINDINGS), ("undecoded", UndecodedScreen.BINDINGS),
            ("first iteration", StartupScreen.BINDINGS)]


def binding_scopes() -> list[tuple[str, list[tuple[str, str]]]]:
    """Sets of bindings active at the same time, as (where, [(id, default keys)])."""
    groups = dict(binding_groups())

    def ids(*names: str) -> list[tuple[str, str]]:
        return [(b.id, b.key) for name in names for b in groups[name] if b.id]

    return [("the layers table", ids("anywhere", "layers", "table")),
            ("the raw log pane", ids("anywhere", "raw log pane")),
            ("the layer detail", ids("anywhere", "layer detail")),
            ("the driver panel", ids("anywhere", "driver panel")), ("the undecoded list", ids("anywhere", "undecoded")),
            ("the first-iteration view", ids("anywhere", "first iteration"))]


class MiotuiApp(App):
    """miotui: every MIOpen layer of a log, live; inspect, reproduce, run and verify."""

    CSS_PATH = "miotui.tcss"
    TITLE = "miotui"

    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True, id="app.quit"),
        Binding("question_mark", "help", "Keys", id="app.help"),
        Binding("e", "export", "Export", id="app.export"),
        Binding("u", "undecoded", "Undecoded", show=False, id="app.undecoded"),
        Binding("i", "startup", "First iteration", id="app.startup"),
    ]

    def __init__(self, paths: list[str], *, follow: bool = False, pid: Optional[int] = None,
                 stdin_fd: Optional[int] = None, find_job: Optional[bool] = None, demo: Any = None,
                 poll_interval: float = POLL_INTERVAL, reader_poll_interval: Optional[float] = None,
                 export_dir: str = ".", driver_path: Optional[str] = None, launcher: tuple[str, ...] = (),
                 theme: Optional[str] = None, settings_file: Optional[str] = None,
                 config_problems: Sequence[str] = (), traces: Sequence[str] = (),
                 kernel_traces: Sequence[str] = ()) -> None:
        super().__init__()
        self.paths = list(paths)
        self.follow_mode = follow
        self.demo = demo
        self.export_dir = export_dir
        self.driver_path = driver_path
        self.launcher = tuple(launcher)
        self.settings_file = settings_file
        self.config_problems = tuple(config_problems)
        self._initial_theme = theme
        self.catalog = Catalog()
        kw = {} if reader_poll_interval is None else {"poll_interval": reader_poll_interval}
        self.reader = LogReader(self.catalog, self.paths, follow=follow, formats=FORMATS, stdin_fd=stdin_fd, **kw)
        self.runs = RunBook()
        self.model = LiveModel(self.catalog, self.runs)
        self.model.job_pid = pid
        find = (follow or "-" in self.paths) if find_job is None else find_job
        self.poller = Poller(self.catalog, self.reader, self._post_poll, interval=poll_interval, pid=pid,
                             find_job=find, stdin_fd=stdin_fd, on_error=lambda text: self.log.error(text),
                             traces=LiveTraces(traces, kernel_traces))
        self._event: Optional[FollowEvent] = None
        self._run_workers: dict[int, Any] = {}
        self._stopped = False
        self._started = False
        self._switch_interval: Optional[float] = None
        self.polls = 0
        #: freezes the heap after a slow full collection (a 100+ ms pause of the UI thread)
        self.gc_freeze = FreezeAfterSlowCollection()
        self._share_told = 0.0
        self._lines_read = 0       # lines the last poll had read (the raw pane reads on when it grows)
        #: the detail and first-iteration screens, made once and reopened
        self._kept_screens: dict[str, Screen] = {}
        default_path = self.paths[0] if len(self.paths) == 1 else ""
        self.layers_screen = LayersScreen(self.model, follow=follow, default_path=default_path,
                                          sources=reader_summary(self.reader))

    # ------------------------------------------------------------------ lifecycle

    def get_default_screen(self) -> Screen:
        return self.layers_screen

    def on_mount(self) -> None:
        self.sub_title = visible(reader_summary(self.reader)) if self.paths else ""
        if self._initial_theme and self._initial_theme in self.available_themes:
            self.theme = self._initial_theme
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        for problem in self.config_problems:
            self.notify(problem, title="keymap", severity="warning", timeout=10)
        self.call_after_refresh(self.start_background)

    def _theme_changed(self, theme: Any) -> None:
        if self.settings_file:
            from miotui.config import save_theme
            self.run_worker(partial(save_theme, self.theme, self.settings_file), thread=True, group="io",
                            exit_on_error=False)

    def start_background(self) -> None:
        """Start reading and polling (once the layers screen is on screen)."""
        if self._started or self._stopped:
            return
        self._started = True
        # The reader, the poller and the layout threads are CPU-bound Python: each time the UI
        # thread wakes (a key, a frame) it waits for the GIL up to the switch interval, 5 ms by
        # default, and a frame wakes it dozens of times.  A shorter interval hands it over sooner.
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(GIL_SWITCH_S)
        self.gc_freeze.start()
        self.reader.start()
        self.poller.start()

    def shutdown_background(self) -> None:
        """Stop every thread this app started (runs first: they may hold the CPU)."""
        if self._stopped:
            return
        self._stopped = True
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)     # as it was before the app started
        self.gc_freeze.stop()
        self.runs.clear()
        for worker in self._run_workers.values():
            worker.cancel()
        self.poller.stop(1.0)
        self.reader.stop(timeout=1.0)
        if self.demo is not None:
            self.demo.cleanup()
        try:
            self.layers_screen.log_pane.close_all()
        except NoMatches:
            pass
        reference = sys.modules.get("miotui.execute.reference")   # loaded only if a layer ran
        if reference is not None:
            reference.shutdown_threads()

    async def action_quit(self) -> None:
        self.shutdown_background()
        self.exit()

    def on_unmount(self) -> None:
        self.shutdown_background()

    def notify(self, message: str, *, title: str = "", severity: str = "information",  # type: ignore[override]
               timeout: Optional[float] = None, markup: bool = True) -> None:
        """Every notification is plain text, made visible: messages quote logs, drivers
        and file names, so markup (``[/x]`` kills the app, ``[@click=app.quit]`` acts)
        and escape sequences are never interpreted."""
        super().notify(visible(str(message), newlines=True), title=visible(str(title)),
                       severity=severity, timeout=timeout, markup=False)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ polls

    def _post_poll(self, data: PollData) -> None:
        self.post_message(Polled(data))

    @property
    def last_poll(self) -> Optional[PollData]:
        return self.model.last

    def on_polled(self, message: Polled) -> None:
        try:
            if not self._stopped:
                self._apply_poll(message.data)
        except NoMatches:
            pass  # the screens are being taken down (quitting)
        finally:
            self.poller.ack()

    def _apply_poll(self, data: PollData) -> None:
        self.polls += 1
        model = self.model
        had_env, searching = model.job_env is not None, model.startup.totals.searching
        new_rate = model.apply(data)
        screen = self.layers_screen
        if data.lines != self._lines_read:
            # the log grew: the raw pane tails it, also when the new lines hold no MIOpen call
            self._lines_read = data.lines
            screen.log_grew()
        if data.changed:
            screen.apply_snapshots(data.changed)
            for snap in data.changed:
                self._tell_screens(snap.id)
        if data.time_summary is not None:
            screen.set_time_line(time_line_text(data.time_summary, data.time_sources, data.formats,
                                                data.trace_lines))
        now, new_env = time.monotonic(), data.job_env is not None and not had_env
        if new_env or (data.time_summary is not None and now - self._share_told >= SHARE_REDRAW_S):
            self._share_told = now
            self._tell_screens(None)
        if data.startup is not None:   # a search's heartbeat: the detail of its layer shows it
            for layer_id in {p.layer_id for p in (*searching, *data.startup.totals.searching)} - {None}:
                self._tell_screens(layer_id)
        if data.startup is not None or new_rate or new_env:
            for s in self.screen_stack:
                if isinstance(s, StartupScreen):
                    s.post_message(StartupChanged())
        for ev in data.events:
            self._event = ev
            if ev.kind in ("truncated", "rotated", "deleted", "recreated", "error", "waiting", "limit"):
                self.notify(ev.message, title=f"log {ev.kind}", severity="error" if ev.kind == "error" else "warning",
                            timeout=6)
            elif ev.kind == "eof":
                self.notify(ev.message, timeout=4)
        self._update_empty_state(data)
        screen.status.set_progress(data.scan_done, data.scan_total, data.scanning)
        self.refresh_status()

    def _update_empty_state(self, data: PollData) -> None:
        screen = self.layers_screen
        sources = reader_summary(self.reader) or "the log"
        if self.model.layers:
            screen.set_empty_state(None)
        elif data.scanning and not data.finished and data.lines == 0:
            screen.set_empty_state(f"Reading {sources}…")
        else:
            screen.set_empty_state(empty_text(data.lines, data.undecoded, sources, self.follow_mode,
                                             data.formats))

    def _tell_screens(self, layer_id: Optional[int]) -> None:
        """Post a LayerChanged to the screens that show one layer (they merge floods)."""
        for screen in self.screen_stack:
            if isinstance(screen, (DetailScreen, DriverScreen)) and layer_id in (None, screen.layer_id):
                screen.post_message(LayerChanged(layer_id))

    def on_view_changed(self, message: ViewChanged) -> None:
        self.refresh_status()

    def refresh_status(self) -> None:
        data = self.model.last
        screen = self.layers_screen
        if not screen.is_mounted:
            return
        table = screen.table
        sources = reader_summary(self.reader)
        if data is None:
            screen.status.set_info(StatusInfo(sources=sources, follow_state="starting"))
            return
        state = follow_state(data, self.follow_mode, table.follow)
        job_text, job_ok = "", None
        j = self.model.job
        if j is not None:
            from miotui.views import units
            job_ok = j.running
            job_text = (f"job {j.pid} {j.status} CPU {j.cpu_percent:.0f}% RSS {units.size(j.rss)}" if j.running
                        else f"job {j.pid} {j.status}")
        event_text, event_kind = "", ""
        ev = self._event
        if ev is not None and time.time() - ev.time < EVENT_SECONDS and ev.kind not in ("opened", "caught-up"):
            event_text, event_kind = ev.message, ev.kind
        cur = self.runs.current
        run_text = f"layer {cur.layer_id} {cur.progress or 'starting'}… (x cancels)" if cur is not None else ""
        model = table.model
        screen.status.set_info(StatusInfo(
            sources=sources, follow_state=state, bytes=data.bytes, lines=data.lines,
            lines_per_s=data.lines_per_s if not data.finished else 0.0, undecoded=data.undecoded,
            layers_shown=len(model.view), layers_total=len(model.rows), job=job_text, job_ok=job_ok,
            run=run_text, event=event_text, event_kind=event_kind,
            new_badge=table.new_while_paused if (self.follow_mode and not table.follow) else 0,
            files=self.model.sources if len(self.model.sources) > 1 else (),
            formats=" + ".join(data.formats)))

    # ------------------------------------------------------------------ layer actions (from screens)

    def snapshot(self, layer_id: int) -> Any:
        return self.model.snapshot(layer_id)

    def results_for(self, layer_id: int) -> list[Any]:
        return self.runs.results(layer_id)

    def on_layer_action(self, message: LayerAction) -> None:
        message.stop()
        handler = {"open": self.open_detail, "run": self.run_default, "run_with": self.choose_and_run,
                   "driver": self.launch_driver, "copy": self.copy_command, "save": self.save_command}.get(
            message.action)
        if message.action == "cancel":
            self.cancel_runs(message.layer_id, message.kind)
        elif handler is not None and message.layer_id is not None:
            handler(message.layer_id)

    def open_detail(self, layer_id: int) -> None:
        """``enter``: the layer's detail, in the one detail screen kept for the app's life
        (a new screen would compose and style its widgets again: 100+ ms on a busy host)."""
        if self.model.snapshot(layer_id) is None:
            return
        detail = self._kept_screens.get("detail")
        if detail is None:
            detail = DetailScreen(self.model, layer_id)
            self._kept_screens["detail"] = detail
            self.install_screen(detail, "miotui-detail")
        elif detail in self.screen_stack:       # already open below another screen: a second one
            self.push_screen(DetailScreen(self.model, layer_id))
            return
        detail.show_layer(layer_id)
        self.push_screen(detail)

    def copy_command(self, layer_id: int) -> None:
        snap = self.model.snapshot(layer_id)
        if snap is None:
            return
        if not snap.driver_command:
            self.notify("MIOpenDriver cannot express this layer (see its warnings).", severity="warning")
            return
        self.copy_to_clipboard(visible(snap.driver_command))
        self.notify(snap.driver_command, title="Copied to the clipboard (OSC 52)", timeout=4)

    def save_command(self, layer_id: int) -> None:
        snap = self.model.snapshot(layer_id)
        if snap is None or not snap.driver_command:
            self.notify("No MIOpenDriver command for this layer.", severity="warning")
            return
        p = snap.problem
        path = os.path.join(self.export_dir, f"miotui_layer_{layer_id}.sh")
        text = ("#!/usr/bin/env bash\n"
                f"# layer {layer_id} from miotui: {p.op} {p.direction} {p.dtype}\n"
                'DRIVER="${MIOPEN_DRIVER:-MIOpenDriver}"\n'
                '"$DRIVER" ' + snap.driver_command.split(" ", 1)[1] + ' -t 1 "$@"\n')
        self.run_worker(partial(self._write_file, path, text, True, "Saved the command to"),
                        thread=True, group="io", exit_on_error=False)

    def _write_file(self, path: str, text: str, executable: bool, what: str) -> None:
        """Worker thread: write a file, then say so (notify is safe from a thread).  A link
        at ``path`` is refused and a file there keeps its mode (:mod:`miotui.output_file`)."""
        from miotui.output_file import write_output
        try:
            write_output(path, text, executable=executable)
        except OSError as e:
            self.call_from_thread(self.notify, f"Cannot write {path}: {e.strerror or e}", severity="error")
            return
        self.call_from_thread(self.notify, f"{what} {path}")

    # ------------------------------------------------------------------ runs

    def run_settings(self, **kw: Any) -> Any:
        from miotui.execute.backends import RunSettings
        return RunSettings(driver_path=self.driver_path, launcher=self.launcher, **kw)

    def run_default(self, layer_id: int) -> None:
        """``r``: a fresh measurement on the default reference (never a cached result)."""
        snap = self.model.snapshot(layer_id)
        if snap is not None:
            req = self.runs.request(layer_id, snap.problem, ("auto",), self.run_settings(), label="reference")
            self.submit_run(req)

    def choose_and_run(self, layer_id: int) -> None:
        from miotui.screens.dialogs import RunChoice, RunChooserScreen
        snap = self.model.snapshot(layer_id)
        if snap is None:
            return
        p = snap.problem

        def chosen(choice: Optional[RunChoice]) -> None:
            if choice is None:
                return
            settings = self.run_settings(iters=choice.iters, batch=choice.batch)
            if choice.backend == "miopen-driver":
                self.launch_driver(layer_id, settings=settings)
                return
            backends = ALL if choice.backend == "all" else (choice.backend,)
            label = "all backends" if choice.backend == "all" else choice.backend
            self.submit_run(self.runs.request(layer_id, p, backends, settings, label=label))

        self.push_screen(RunChooserScreen(f"layer {layer_id}: {p.op} {p.direction} {p.dtype}", p.input_shape[0]),
                         chosen)

    def launch_driver(self, layer_id: int, settings: Any = None) -> None:
        snap = self.model.snapshot(layer_id)
        if snap is None:
            return
        req = self.runs.request(layer_id, snap.problem, ("miopen-driver",), settings or self.run_settings(),
                                kind="driver", label="MIOpenDriver")
        self.push_screen(DriverScreen(layer_id, snap.driver_command or "(no MIOpenDriver command for this layer)",
                                      req))
        self.submit_run(req)

    def submit_run(self, req: RunRequest) -> None:
        start = self.runs.submit(req)
        self.layers_screen.table.set_result(req.layer_id, pending_summary("queued", req.label))
        if start:
            self._start_next()
        else:
            self.notify(f"Queued layer {req.layer_id} ({req.label}); {len(self.runs.queue)} waiting.", timeout=3)
        self._tell_screens(req.layer_id)

    def _start_next(self) -> None:
        if self._stopped:
            return
        req = self.runs.start_next()
        if req is None:
            self.refresh_status()
            return
        self.layers_screen.table.set_result(req.layer_id, pending_summary("running", req.label))
        self._run_workers[req.id] = self.run_worker(partial(execute, req, partial(self._emit, req)),
                                                    name=f"run-{req.id}", group="runs", thread=True,
                                                    exit_on_error=False)
        self._tell_screens(req.layer_id)
        self.refresh_status()

    def _emit(self, req: RunRequest, kind: str, payload: Any) -> None:
        """Worker thread: a report becomes a message (the UI applies it)."""
        self.post_message(RunEvent(req, kind, payload))

    def on_run_event(self, message: RunEvent) -> None:
        if self._stopped:       # quitting: the screens are being taken down
            return
        req = message.request
        if message.kind == "progress":
            self._tell_screens(req.layer_id)
            self.refresh_status()
        elif message.kind == "result":
            self._record(req, message.payload)
        elif message.kind == "done":
            self._done(req)

    def _record(self, req: RunRequest, result: Any) -> None:
        self.runs.add_result(req, result)
        verdict = verdict_of(result)
        level = {"good": "information", "bad": "error"}.get(severity(verdict), "warning")
        if getattr(result, "noisy", False) and level == "information":
            level = "warning"
        self.notify(result_line(req.layer_id, result), severity=level, timeout=6)
        for screen in self.screen_stack:
            if isinstance(screen, DriverScreen) and screen.request is req:
                screen.post_message(RunFinished(result))
        self._tell_screens(req.layer_id)

    def _done(self, req: RunRequest) -> None:
        self.runs.finish(req)
        self._run_workers.pop(req.id, None)
        state = self.runs.state(req.layer_id)
        summary = pending_summary(state, req.label) if state else row_summary(self.runs.shown_by_backend(req.layer_id))
        self.layers_screen.table.set_result(req.layer_id, summary)
        self._tell_screens(req.layer_id)
        self._start_next()

    def cancel_runs(self, layer_id: Optional[int] = None, kind: Optional[str] = None) -> bool:
        """Cancel the queued and running runs of a layer (None: the one running)."""
        removed = self.runs.cancel_queued(layer_id, kind) if layer_id is not None else []
        for q in removed:
            backend = "all" if q.backends == ALL else q.backends[0]
            self._record(q, not_applicable(q.problem, q.settings, backend, "cancelled while queued", "cancelled"))
            self._done(q)
        cur = self.runs.cancel_current(layer_id, kind)
        if cur is not None:
            worker = self._run_workers.get(cur.id)
            if worker is not None:
                worker.cancel()
            cur.progress = "cancelling"
            self.notify(f"Cancelling the run of layer {cur.layer_id}…", timeout=3)
            self.refresh_status()
        if cur is None and not removed:
            self.notify("No run to cancel.", timeout=2)
        return cur is not None or bool(removed)

    @property
    def running(self) -> bool:
        return self.runs.current is not None

    # ------------------------------------------------------------------ export, help, undecoded

    def _shown_layers(self) -> list[Any]:
        model = self.layers_screen.table.model
        return [model.rows[i].snapshot for i in model.view]

    def action_export(self) -> None:
        from miotui.screens.dialogs import ExportChoice, ExportScreen

        def chosen(choice: Optional[ExportChoice]) -> None:
            if choice is not None:
                self.export_to(choice.fmt, choice.path)

        total = len(self.layers_screen.table.model.rows)
        self.push_screen(ExportScreen(len(self._shown_layers()), total, self.layers_screen.scope_text(),
                                      self.export_dir), chosen)

    def export_to(self, fmt: str, path: Optional[str] = None) -> None:
        """Write the layers the table shows (filter and op tab apply, its order), with
        their run results, in a thread worker."""
        from miotui.screens.dialogs import default_export_path
        target = path or default_export_path(fmt, self.export_dir)
        layers = self._shown_layers()
        whole = list(self.model.layers.values())
        runs = self.runs.export_runs()
        self.run_worker(partial(self._export_thread, fmt, target, layers, whole, runs), thread=True, group="io",
                        exit_on_error=False)

    def _export_thread(self, fmt: str, path: str, layers: list[Any], whole: list[Any], runs: dict) -> None:
        """Worker thread: the export says what ``miotui decode`` says of the same log (its
        ``stats``, first iteration included), shares of the whole run (``whole``: every
        layer, as on screen, also when a filter chose ``layers``), in the table's order."""
        import json

        from miotui import export
        cat = self.catalog
        if fmt == "json":
            with cat.lock:
                stats = {"lines": cat.lines, "bytes": cat.bytes, "seconds": round(cat.seconds, 3),
                         "unknown_finds": cat.unknown_finds, "startup": cat.startup.totals().to_dict()}
            doc = export.to_json(layers, cat.undecoded(), stats, runs=runs, whole=whole)
            text = json.dumps(doc, indent=1) + "\n"
        elif fmt == "csv":
            text = export.to_csv(layers, runs=runs, whole=whole)
        else:
            text = export.to_driver_script(layers, keep_order=True)
        self._write_file(path, text, fmt == "driver", f"Exported {len(layers):,} layers ({fmt}) to")

    def help_rows(self) -> list[tuple[str, str, str, str]]:
        rows = binding_rows(binding_groups(), dict(self._keymap))
        rows.append(("anywhere", "ctrl+p", "Command palette (themes, export, …)", "app.command_palette"))
        return rows

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_rows()))

    def action_undecoded(self) -> None:
        if not isinstance(self.screen, UndecodedScreen):
            self.push_screen(UndecodedScreen(self.catalog))

    def action_startup(self) -> None:
        """``i``: what the first iteration spent (updated live by the poller's startup view),
        in the one startup screen kept for the app's life (see :meth:`open_detail`)."""
        if isinstance(self.screen, StartupScreen):
            return
        screen = self._kept_screens.get("startup")
        if screen is None:
            screen = StartupScreen(self.model, follow=self.follow_mode)
            self._kept_screens["startup"] = screen
            self.install_screen(screen, "miotui-startup")
        elif screen in self.screen_stack:
            self.push_screen(StartupScreen(self.model, follow=self.follow_mode))
            return
        self.push_screen(screen)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Export layers: MIOpenDriver script", "the layers shown, in the table's order (.sh)",
                            partial(self.export_to, "driver"))
        yield SystemCommand("Export layers: CSV", "the layers shown, with run results",
                            partial(self.export_to, "csv"))
        yield SystemCommand("Export layers: JSON", "the `miotui decode --format json` contract, with run results",
                            partial(self.export_to, "json"))
        yield SystemCommand("Export layers…", "choose the format and the file", self.action_export)
        yield SystemCommand("Undecoded lines", "lines that could not be decoded, with the reason",
                            self.action_undecoded)
        yield SystemCommand("First iteration", "Finds, tuning searches, kernel compiles: totals, settings, timeline",
                            self.action_startup)
        yield SystemCommand("Sort by total GPU time", "the costliest layers first",
                            self.layers_screen.action_sort_total)
        yield SystemCommand("Toggle the raw log pane", "the selected layer in its log",
                            self.layers_screen.action_toggle_log)
        yield SystemCommand("Follow the newest layer", "resume following", self.layers_screen.action_follow)
        yield SystemCommand("Keys", "every key binding and its id", self.action_help)


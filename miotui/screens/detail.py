"""One layer: every field, derived numbers, how it was seen, MIOpen's choice and verdict
next to miotui's, the driver command (copy / save), the run in progress, the newest
result per backend and the run history, the job's MIOpen environment, and the raw log
lines it came from.

The screen reads the app's live model (``model``: layers, runs, the job) and is told
to redraw by :class:`~miotui.screens.messages.LayerChanged` messages; it asks the app for
runs, copies and cancels with :class:`~miotui.screens.messages.LayerAction`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from miotui.formats import FORMATS
from miotui.safe_text import visible
from miotui.screens import detail_view as view
from miotui.screens.messages import LayerAction, LayerChanged
from miotui.views.startup_model import searches_of, what_logged
from miotui.widgets.footer import KeyFooter
from miotui.widgets.prerender import render_text

#: columns from which the detail lays out side by side and shows every run column
WIDE = 110
#: the sections laid out in a worker thread (``DetailScreen._render_sections``)
SECTIONS = ("#detail-compare", "#detail-time", "#detail-runs", "#detail-warnings", "#detail-fields", "#detail-env",
            "#detail-raw")


@dataclass(frozen=True)
class SectionInputs:
    """What the sections are built from, taken on the UI thread (the worker reads no
    live structure)."""

    snap: Any
    results: list
    latest: list
    history: list
    state: str
    layer_time: Any
    totals: Any
    searching: tuple
    reference_bytes: Optional[int]
    job_env: Optional[dict]
    job_pid: Optional[int]
    wide: bool


class DetailScreen(Screen):
    """Everything known about one layer."""

    BINDINGS = [
        Binding("escape,q", "back", "Back", id="detail.back"),
        Binding("x", "cancel_run", "Cancel run", id="detail.cancel"),
        Binding("c", "copy", "Copy cmd", id="detail.copy"),
        Binding("w", "save", "Save cmd", id="detail.save"),
        Binding("r", "run", "Run again", id="detail.run"),
        Binding("R", "run_with", "Run with…", id="detail.run_with"),
        Binding("d", "driver", "MIOpenDriver", id="detail.driver"),
    ]

    def __init__(self, model: Any, layer_id: int) -> None:
        super().__init__(id="detail-screen")
        self.model = model
        self.layer_id = layer_id
        self.reference_bytes: Optional[int] = None
        self._last_key: Any = None
        self._applied_key: Any = None
        self._shown_layer: Optional[int] = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-scroll"):
            yield Static(id="detail-title")
            yield Static(id="detail-command")
            yield Static(id="detail-state")
            yield Static(id="detail-compare", classes="prerendered")
            yield Static(id="detail-time", classes="prerendered")
            yield Static(id="detail-runs", classes="prerendered")
            yield Static(id="detail-warnings", classes="prerendered")
            yield Static(id="detail-fields", classes="prerendered")
            yield Static(id="detail-env", classes="prerendered")
            yield Static(id="detail-raw", classes="prerendered")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._opened()

    def show_layer(self, layer_id: int) -> None:
        """Show another layer in this (kept) screen: the app keeps one detail screen and
        reopens it, so ``enter`` costs what changed, not a new screen's widgets and styles."""
        if layer_id != self.layer_id:
            self.layer_id = layer_id
            self.reference_bytes = None
            self._last_key = None
        if self.is_mounted:
            self.query_one("#detail-scroll", VerticalScroll).scroll_home(animate=False, immediate=True)
            self._opened()

    def _opened(self) -> None:
        self.refresh_content(force=True)
        self.query_one("#detail-scroll").focus()
        snap = self.model.snapshot(self.layer_id)
        if snap is not None and self.reference_bytes is None:
            self._reference_bytes(snap.problem, self.layer_id)

    @work(thread=True, group="detail-peak", exit_on_error=False)
    def _reference_bytes(self, problem: Any, layer_id: int) -> None:
        """Peak memory of a reference run: needs numpy, so never on the UI thread."""
        try:
            from miotui.execute.reference import peak_bytes
            value = int(peak_bytes(problem))
        except Exception:
            value = -1
        self.app.call_from_thread(self._got_reference_bytes, layer_id, value)

    def _got_reference_bytes(self, layer_id: int, value: int) -> None:
        if layer_id == self.layer_id:       # the screen may show another layer by now
            self.reference_bytes = value
            self.refresh_content()

    def on_layer_changed(self, message: LayerChanged) -> None:
        message.stop()
        if message.layer_id in (None, self.layer_id):
            self.refresh_content()

    # ------------------------------------------------------------------ content

    @property
    def state(self) -> str:
        return self.model.runs.state(self.layer_id)

    def refresh_content(self, force: bool = False) -> None:
        """Redraw what changed.  The title, command and run state are set here; the
        sections below (tables, mostly) are built and laid out in a worker thread
        (:meth:`_render_sections`), so that opening the screen or a run's progress never
        waits for Rich to measure a dozen tables on the UI thread."""
        model = self.model
        snap = model.snapshot(self.layer_id)
        if snap is None:
            return
        runs = model.runs
        history = runs.history(self.layer_id)
        state, progress = runs.state(self.layer_id), runs.progress(self.layer_id)
        width = self._section_width()
        wide = width + 4 >= WIDE
        summary = model.time_summary
        searching = searches_of(model.startup, self.layer_id)
        key = (id(snap), len(history), id(history[-1]) if history else None, state, progress,
               self.reference_bytes, id(model.job_env), width, summary.total_ms if summary is not None else None,
               what_logged(model.startup.totals), tuple(searching))
        if not force and key == self._last_key:
            return
        state_changed = self._last_key is None or self._last_key[3] != state
        self._last_key = key
        p = snap.problem
        title = Text()
        title.append(f"Layer {snap.id}: ", style="bold")
        title.append(f"{p.op} {p.direction} {p.dtype} {p.layout}", style="bold cyan")
        title.append(f"   {view.shape(p.input_shape)} → {view.shape(p.output_shape)}")
        if state:
            title.append(f"   [{state}]", style="italic yellow")
        self.query_one("#detail-title", Static).update(title)

        cmd = Text()
        cmd.append("MIOpenDriver command", style="bold")
        cmd.append("  (c copy · w save · d run it · r run on the reference · R choose)\n", style="dim")
        note = FORMATS.translation(snap.sources)
        if note:
            cmd.append(f"{note}\n", style="italic")
        cmd.append(visible(snap.driver_command) or "(MIOpenDriver cannot express this layer; see warnings)",
                   style="bold green" if snap.driver_command else "yellow")
        self.query_one("#detail-command", Static).update(cmd)
        self._show("#detail-state", view.run_state_text(state, progress, runs.position(self.layer_id)))
        if self._shown_layer != self.layer_id:      # never another layer's sections under this title
            self._shown_layer = self.layer_id
            for selector in SECTIONS:
                self._show(selector, Text())
        # after the next frame: the screen shows (title, command, state) before the layout
        # thread competes with the UI thread for the interpreter
        self.call_after_refresh(self._render_sections, key, width, SectionInputs(
            snap, runs.results(self.layer_id), runs.latest_by_backend(self.layer_id), history, state,
            model.layer_time(self.layer_id), model.startup.totals, tuple(searching), self.reference_bytes,
            model.job_env, model.job_pid, wide))
        if state_changed:
            self.refresh_bindings()

    def _section_width(self) -> int:
        """The width the sections are shown at: the screen less the scroll's padding and
        its scroll bar (the detail is nearly always taller than the screen)."""
        scroll = self.query_one("#detail-scroll", VerticalScroll)
        return max(20, (self.size.width or self.app.size.width) - scroll.styles.gutter.width
                   - scroll.styles.scrollbar_size_vertical)

    @property
    def ready(self) -> bool:
        """Whether the sections show the latest content (their thread has delivered it)."""
        return self._last_key is not None and self._applied_key is self._last_key

    @work(thread=True, exclusive=True, group="detail-render", exit_on_error=False)
    def _render_sections(self, key: Any, width: int, data: "SectionInputs") -> None:
        """Worker thread: build the sections and lay them out ``width`` cells wide."""
        snap = data.snap
        time_grid = Table.grid(padding=(0, 4))
        cudnn = FORMATS.format_of(snap.sources).name == "cudnn"
        tables = (view.time_table(data.layer_time, snap.executions, data.latest, cudnn=cudnn),
                  view.cudnn_startup_table(snap.finds) if cudnn
                  else view.startup_table(snap.startup, snap.finds, data.totals, data.searching))
        if data.wide:
            time_grid.add_row(*tables)
        else:
            time_grid.add_row(tables[0])
            time_grid.add_row(Text(""))
            time_grid.add_row(tables[1])
        sections = {
            "#detail-compare": view.comparison_text(snap, data.results),
            "#detail-time": time_grid,
            "#detail-runs": view.runs_renderable(data.latest, data.history, data.state, narrow=not data.wide),
            "#detail-warnings": view.warnings_text(snap.warnings),
            "#detail-fields": view.fields_grid(snap, data.reference_bytes, side_by_side=data.wide),
            "#detail-env": view.env_table(data.job_env, data.job_pid) if data.job_env is not None else Text(),
            "#detail-raw": view.raw_text(snap.raw),
        }
        rendered = {selector: render_text(r, width) for selector, r in sections.items()}
        try:
            self.app.call_from_thread(self._apply_sections, key, rendered)
        except RuntimeError:
            pass      # the app is closing

    def _apply_sections(self, key: Any, rendered: dict[str, Text]) -> None:
        if key is not self._last_key:
            return            # a newer refresh is on its way
        for selector, text in rendered.items():
            self._show(selector, text)
        self._applied_key = key

    def _show(self, selector: str, text: Text) -> None:
        """Update a section; an empty one takes no room (no blank lines between sections)."""
        static = self.query_one(selector, Static)
        static.update(text)
        static.display = bool(text.plain)

    def on_resize(self) -> None:
        self.refresh_content()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> Optional[bool]:
        if action == "cancel_run":
            return bool(self.state)        # in the footer only while this layer's run is queued or running
        return True

    # ------------------------------------------------------------------ actions

    def action_back(self) -> None:
        """escape / q: back to the table; a run keeps going (x cancels it)."""
        self.app.pop_screen()

    def action_cancel_run(self) -> None:
        self.post_message(LayerAction("cancel", self.layer_id, "run"))

    def action_copy(self) -> None:
        self.post_message(LayerAction("copy", self.layer_id))

    def action_save(self) -> None:
        self.post_message(LayerAction("save", self.layer_id))

    def action_run(self) -> None:
        self.post_message(LayerAction("run", self.layer_id))

    def action_run_with(self) -> None:
        self.post_message(LayerAction("run_with", self.layer_id))

    def action_driver(self) -> None:
        self.post_message(LayerAction("driver", self.layer_id))

"""One layer: every field, derived numbers, how it was seen, MIOpen's choice and verdict
next to miotui's, the driver command (copy / save), the run in progress, the newest
result per backend and the run history, the job's MIOpen environment, and the raw log
lines it came from.

The screen reads the app's live model (``model``: layers, runs, the job) and is told
to redraw by :class:`~miotui.screens.messages.LayerChanged` messages; it asks the app for
runs, copies and cancels with :class:`~miotui.screens.messages.LayerAction`.
"""

from __future__ import annotations

from typing import Any, Optional

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from miotui.formats.cudnn import TRANSLATION, from_cudnn
from miotui.safe_text import visible
from miotui.screens import detail_view as view
from miotui.screens.messages import LayerAction, LayerChanged
from miotui.widgets.startup_model import searches_of, what_logged

#: columns from which the detail lays out side by side and shows every run column
WIDE = 110


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

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-scroll"):
            yield Static(id="detail-title")
            yield Static(id="detail-command")
            yield Static(id="detail-state")
            yield Static(id="detail-compare")
            yield Static(id="detail-time")
            yield Static(id="detail-runs")
            yield Static(id="detail-warnings")
            yield Static(id="detail-fields")
            yield Static(id="detail-env")
            yield Static(id="detail-raw")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_content(force=True)
        self.query_one("#detail-scroll").focus()
        snap = self.model.snapshot(self.layer_id)
        if snap is not None:
            self._reference_bytes(snap.problem)

    @work(thread=True, group="detail-peak", exit_on_error=False)
    def _reference_bytes(self, problem: Any) -> None:
        """Peak memory of a reference run: needs numpy, so never on the UI thread."""
        try:
            from miotui.execute.reference import peak_bytes
            value = int(peak_bytes(problem))
        except Exception:
            value = -1
        self.reference_bytes = value
        self.post_message(LayerChanged(self.layer_id))

    def on_layer_changed(self, message: LayerChanged) -> None:
        message.stop()
        if message.layer_id in (None, self.layer_id):
            self.refresh_content()

    # ------------------------------------------------------------------ content

    @property
    def state(self) -> str:
        return self.model.runs.state(self.layer_id)

    def refresh_content(self, force: bool = False) -> None:
        model = self.model
        snap = model.snapshot(self.layer_id)
        if snap is None:
            return
        runs = model.runs
        history = runs.history(self.layer_id)
        state, progress = runs.state(self.layer_id), runs.progress(self.layer_id)
        wide = self.size.width >= WIDE
        summary = model.time_summary
        searching = searches_of(model.startup, self.layer_id)
        key = (id(snap), len(history), id(history[-1]) if history else None, state, progress,
               self.reference_bytes, id(model.job_env), wide, summary.total_ms if summary is not None else None,
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
        if from_cudnn(snap.sources):
            cmd.append(f"{TRANSLATION}\n", style="italic")
        cmd.append(visible(snap.driver_command) or "(MIOpenDriver cannot express this layer; see warnings)",
                   style="bold green" if snap.driver_command else "yellow")
        self.query_one("#detail-command", Static).update(cmd)
        self.query_one("#detail-fields", Static).update(view.fields_grid(snap, self.reference_bytes, side_by_side=wide))
        self.query_one("#detail-warnings", Static).update(view.warnings_text(snap.warnings))
        results = runs.results(self.layer_id)
        self._show("#detail-compare", view.comparison_text(snap, results))
        totals = model.startup.totals
        time_grid = Table.grid(padding=(0, 4))
        cudnn = from_cudnn(snap.sources)
        tables = (view.time_table(model.layer_time(self.layer_id), snap.executions,
                                  runs.latest_by_backend(self.layer_id), cudnn=cudnn),
                  view.cudnn_startup_table(snap.finds) if cudnn
                  else view.startup_table(snap.startup, snap.finds, totals, searching))
        if wide:
            time_grid.add_row(*tables)
        else:
            time_grid.add_row(tables[0])
            time_grid.add_row(Text(""))
            time_grid.add_row(tables[1])
        self.query_one("#detail-time", Static).update(time_grid)
        self._show("#detail-state", view.run_state_text(state, progress, runs.position(self.layer_id)))
        self.query_one("#detail-runs", Static).update(
            view.runs_renderable(runs.latest_by_backend(self.layer_id), history, state, narrow=not wide))
        if model.job_env is not None:
            self.query_one("#detail-env", Static).update(view.env_table(model.job_env, model.job_pid))
        self.query_one("#detail-raw", Static).update(view.raw_text(snap.raw))
        if state_changed:
            self.refresh_bindings()

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

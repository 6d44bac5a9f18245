"""The MIOpenDriver panel: a layer's command running, its output streamed live.

Lines arrive from the run's worker thread in the request's
:class:`~miotui.run_queue.LineBuffer`; a UI timer moves them into a bounded ``Log``
widget 20 times a second, so a chatty driver can never flood the event loop with one
message per line.  Every line is made visible (``safe_text.visible``) first: driver
output is not ours and may carry escape sequences.  The app tells the panel the run's
state and result with messages (:class:`~miotui.screens.messages.LayerChanged`,
:class:`~miotui.screens.messages.RunFinished`).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Log, Static

from miotui.safe_text import visible
from miotui.screens.messages import LayerAction, LayerChanged, RunFinished
from miotui.views import units
from miotui.views.run_summary import noise_warning, severity, verdict_of
from miotui.widgets.footer import KeyFooter

#: Lines the panel keeps (the driver's whole output is also kept on the result).
PANEL_LINES = 5000
_STYLE = {"good": "bold green", "bad": "bold red", "neutral": "yellow"}


class DriverScreen(Screen):
    BINDINGS = [
        Binding("escape", "cancel_or_close", "Cancel / close", id="driver.cancel"),
        Binding("q", "close", "Close", id="driver.close"),
        Binding("c", "copy", "Copy cmd", id="driver.copy"),
    ]

    def __init__(self, layer_id: int, command: str, request: Any) -> None:
        super().__init__(id="driver-screen")
        self.layer_id = layer_id
        self.command = command
        self.request = request             # run_queue.RunRequest: its lines and its progress
        self.state = "queued"
        self.lines_seen = 0
        self._result: Any = None

    def compose(self) -> ComposeResult:
        yield Static(id="driver-title")
        yield Log(max_lines=PANEL_LINES, id="driver-log", auto_scroll=True)
        yield Static(id="driver-status")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._render_title()
        if self._result is not None:
            self._show_result(self._result)
        self.set_interval(0.05, self._drain)

    def _render_title(self) -> None:
        if not self.is_mounted:
            return
        t = Text()
        t.append(f"MIOpenDriver — layer {self.layer_id}  ", style="bold")
        t.append(f"[{self.state}]\n", style="italic yellow" if self.state in ("queued", "running") else "bold")
        t.append(visible(self.command), style="green")
        self.query_one("#driver-title", Static).update(t)

    def _drain(self) -> None:
        if not self.is_mounted or self.request.lines is None:
            return
        lines = self.request.lines.take()
        if lines:
            self.lines_seen += len(lines)
            self.query_one(Log).write_lines([visible(line, tabsize=4) for line in lines])

    def on_layer_changed(self, message: LayerChanged) -> None:
        message.stop()
        if self.state == "queued" and self.request.progress:
            self.state = "running"
            self._render_title()

    def on_run_finished(self, message: RunFinished) -> None:
        message.stop()
        self._show_result(message.result)

    def _show_result(self, result: Any) -> None:
        self._result = result
        self.state = "finished"
        if not self.is_mounted:
            return
        self._drain()
        verdict = verdict_of(result)
        t = Text()
        t.append("verdict: ", style="bold")
        t.append(verdict, style=_STYLE[severity(verdict)])
        if result.median_ms is not None:
            t.append(f"   time {units.time_ms(result.median_ms)}")
        if result.min_ms is not None:
            t.append(f" (min {units.time_ms(result.min_ms)})")
        rate = units.throughput(result.problem, result.gflops, result.gbps)
        if rate != units.MISSING:
            t.append(f"   {rate}")
        if result.message:
            t.append("\n")
            t.append(visible(result.message, newlines=True), style="yellow" if verdict != "ok" else "dim")
        warning = noise_warning(result)
        if warning:
            t.append("\n⚠ " + warning, style="yellow")
        self.query_one("#driver-status", Static).update(t)
        self._render_title()

    def action_cancel_or_close(self) -> None:
        if self.state in ("queued", "running"):
            self.post_message(LayerAction("cancel", self.layer_id, "driver"))
            self.notify("Cancelling MIOpenDriver… (escape again closes the panel)")
            self.state = "cancelling"
            self._render_title()
            return
        self.app.pop_screen()

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_copy(self) -> None:
        self.post_message(LayerAction("copy", self.layer_id))

    @property
    def log_text(self) -> str:
        self._drain()
        return "\n".join(str(line) for line in self.query_one(Log).lines)

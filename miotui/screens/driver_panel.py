"""The MIOpenDriver panel: a layer's command running, its output streamed live.

Lines arrive from the run's worker thread into a thread-safe deque; a UI timer moves
them into a bounded ``Log`` widget 20 times a second, so a chatty driver can never
flood the event loop with one message per line.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Log, Static

from miotui.widgets.tail_view import printable

if TYPE_CHECKING:  # pragma: no cover
    from miotui.app import MiotuiApp

#: Lines the panel keeps (the driver's whole output is also kept on the result).
PANEL_LINES = 5000


class DriverScreen(Screen):
    BINDINGS = [
        Binding("escape", "cancel_or_close", "Cancel / close", id="driver.cancel"),
        Binding("q", "close", "Close", id="driver.close"),
        Binding("c", "copy", "Copy cmd", id="driver.copy"),
    ]

    def __init__(self, index: int, command: str) -> None:
        super().__init__(id="driver-screen")
        self.index = index
        self.command = command
        self.state = "queued"
        self._pending: deque[str] = deque()
        self._lock = threading.Lock()
        self.lines_seen = 0
        self._result: Any = None

    @property
    def miotui(self) -> "MiotuiApp":
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Static(id="driver-title")
        yield Log(max_lines=PANEL_LINES, id="driver-log", auto_scroll=True)
        yield Static(id="driver-status")
        yield Footer()

    def on_mount(self) -> None:
        self._render_title()
        if self._result is not None:
            self.show_result(self._result)
        self.set_interval(0.05, self._drain)

    def _render_title(self) -> None:
        if not self.is_mounted:
            return
        t = Text()
        t.append(f"MIOpenDriver — layer #{self.index}  ", style="bold")
        t.append(f"[{self.state}]\n", style="italic yellow" if self.state in ("queued", "running") else "bold")
        t.append(self.command, style="green")
        self.query_one("#driver-title", Static).update(t)

    # -- called from the worker thread
    def feed_line(self, line: str) -> None:
        with self._lock:
            self._pending.append(line)

    # -- UI thread
    def _drain(self) -> None:
        if not self.is_mounted:
            return
        with self._lock:
            if not self._pending:
                return
            lines = list(self._pending)
            self._pending.clear()
        self.lines_seen += len(lines)
        self.query_one(Log).write_lines([printable(line) for line in lines])

    def set_state(self, state: str) -> None:
        self.state = state
        self._render_title()

    def show_result(self, result: Any) -> None:
        self._result = result
        self.state = "finished"
        if not self.is_mounted:
            return
        self._drain()
        from miotui.screens.detail import verdict_of
        verdict = verdict_of(result)
        t = Text()
        t.append("verdict: ", style="bold")
        t.append(verdict, style={"ok": "bold green", "FAILED": "bold red", "error": "bold red"}.get(verdict, "yellow"))
        if result.median_ms is not None:
            t.append(f"   time {result.median_ms:.4g} ms")
        if result.min_ms is not None:
            t.append(f" (min {result.min_ms:.4g} ms)")
        if result.gflops is not None:
            t.append(f"   {result.gflops:.1f} GFLOP/s")
        if result.message:
            t.append(f"\n{result.message}", style="yellow" if verdict != "ok" else "dim")
        self.query_one("#driver-status", Static).update(t)
        self.set_state("finished")

    def action_cancel_or_close(self) -> None:
        if self.state in ("queued", "running") and self.miotui.cancel_run_for(self.index, kind="driver"):
            self.notify("Cancelling MIOpenDriver…")
            return
        self.app.pop_screen()

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_copy(self) -> None:
        self.miotui.copy_command(self.index)

    @property
    def log_text(self) -> str:
        self._drain()
        return "\n".join(str(line) for line in self.query_one(Log).lines)

    def pending(self) -> Optional[int]:
        with self._lock:
            return len(self._pending)

"""The status bar: where the data comes from and how the reading (and the job) goes.

One line of text built from a frozen :class:`StatusInfo`, plus a progress bar that is
shown only while a large file's existing content is being scanned.  Re-rendered only
when the info differs from the last one (the app sends it ~10 times a second).  File
names, events and job names come from outside: each is made visible
(:func:`miotui.safe_text.visible`) before it is drawn, so a file named with an escape
sequence cannot drive the terminal on every repaint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Static

from miotui import units
from miotui.safe_text import visible


@dataclass(frozen=True)
class StatusInfo:
    sources: str = ""
    follow_state: str = ""
    bytes: int = 0
    lines: int = 0
    lines_per_s: float = 0.0
    undecoded: int = 0
    layers_shown: int = 0
    layers_total: int = 0
    job: str = ""
    job_ok: Optional[bool] = None
    run: str = ""
    event: str = ""
    event_kind: str = ""
    new_badge: int = 0


class StatusBar(Horizontal):
    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        background: $panel;
        color: $foreground;
        & > #status-text { width: 1fr; height: 1; }
        & > #scan-progress { width: 34; height: 1; display: none; }
        & > #scan-progress.scanning { display: block; }
    }
    """

    def __init__(self, *, id: Optional[str] = None) -> None:
        super().__init__(id=id)
        self.info = StatusInfo()

    def compose(self) -> ComposeResult:
        yield Static("", id="status-text")
        yield ProgressBar(total=100, show_eta=True, show_percentage=True, id="scan-progress")

    def set_info(self, info: StatusInfo) -> None:
        if info == self.info:
            return
        self.info = info
        self.query_one("#status-text", Static).update(self.render_text(info))

    def set_progress(self, done: int, total: int, scanning: bool) -> None:
        bar = self.query_one("#scan-progress", ProgressBar)
        bar.set_class(scanning and total > 0, "scanning")
        if scanning and total > 0:
            bar.update(total=total, progress=done)

    @staticmethod
    def render_text(info: StatusInfo) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        if info.new_badge:
            t.append(f" ▼ {info.new_badge} new ", style="bold reverse")
            t.append(" ")
        t.append(f" {visible(info.sources)} ", style="bold")
        if info.follow_state:
            style = "bold" if info.follow_state.startswith("follow") else ""
            if any(w in info.follow_state for w in ("truncated", "rotated", "deleted", "waiting", "error")):
                style = "bold yellow"
            t.append(f"[{visible(info.follow_state)}] ", style=style)
        if info.run:                  # a run in progress matters more than the byte count
            t.append(visible(info.run), style="italic")
            t.append(" · ")
        t.append(f"{units.size(info.bytes)} · {info.lines:,} lines")
        if info.lines_per_s >= 1:
            t.append(f" · {info.lines_per_s:,.0f} lines/s")
        t.append(f" · {info.layers_shown:,}/{info.layers_total:,} layers")
        if info.undecoded:
            t.append(f" · {info.undecoded:,} undecoded (u)", style="yellow")
        if info.job:
            t.append(" · ")
            t.append(visible(info.job), style="green" if info.job_ok else ("red" if info.job_ok is False else ""))
        if info.event:
            t.append(" · ")
            t.append(visible(info.event),
                     style="bold yellow" if info.event_kind not in ("opened", "caught-up") else "")
        return t

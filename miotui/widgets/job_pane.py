"""The recorded job's pane (``miotui record``): the job's own output, below the table.

What it shows is what the job printed that is not MIOpen's or cuDNN's (the table shows
those): its stdout and the other lines of its stderr, the last ``PANE_KEPT`` of them, each
made visible (:func:`miotui.safe_text.visible`: a job's line cannot drive the terminal);
a long line wraps (the pane is narrow); a line redrawn with carriage returns (a progress
bar) shows its last state, as a terminal would.  Its title says how the job is doing, how
it ended, and what Ctrl-C does now.
The app feeds it (:meth:`JobPane.add_lines`, :meth:`JobPane.set_title`); it reads nothing.
"""

from __future__ import annotations

from typing import Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import RichLog

from miotui.safe_text import visible

#: lines the pane keeps (the log file keeps everything)
PANE_LINES = 2_000


def shown(line: str) -> str:
    """What a terminal would show of ``line``: the part after its last carriage return."""
    return visible(line.rstrip("\r").rsplit("\r", 1)[-1])


class JobPane(Vertical):
    """The job's output and state, docked under the layer table."""

    DEFAULT_CSS = """
    JobPane {
        height: 7;
        border-top: solid $primary;
        border-title-align: left;
    }
    JobPane.hidden {
        display: none;
    }
    JobPane RichLog {
        height: 1fr;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, title: str, first_lines: Iterable[str] = (), **kw) -> None:
        super().__init__(**kw)
        self._first = list(first_lines)
        self.border_title = visible(title)
        self.lines_shown = 0

    def compose(self) -> ComposeResult:
        yield RichLog(max_lines=PANE_LINES, wrap=True, min_width=20, markup=False, highlight=False, id="job-output")

    def on_mount(self) -> None:
        self.add_lines(self._first)

    def add_lines(self, lines: Iterable[str]) -> None:
        log = self.query_one(RichLog)
        for line in lines:
            log.write(Text(shown(line)))
            self.lines_shown += 1

    def set_title(self, title: str) -> None:
        text = visible(title)
        if self.border_title != text:
            self.border_title = text

    @property
    def text(self) -> str:
        """The lines in the pane, as shown (for tests and the tmux check)."""
        return "\n".join(strip.text for strip in self.query_one(RichLog).lines)

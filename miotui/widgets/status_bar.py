"""The status bar: where the data comes from and how the reading (and the job) goes.

One line of text built from a frozen :class:`StatusInfo`, plus a progress bar that is
shown only while a large file's existing content is being scanned.  Re-rendered only
when the info differs from the last one (the app sends it ~10 times a second).  File
names, events and job names come from outside: each is made visible
(:func:`miotui.safe_text.visible`) before it is drawn, so a file named with an escape
sequence cannot drive the terminal on every repaint.

Several followed files (a multi-node job's rank logs, issue 15) get their own part
(:func:`files_text`): how many, the total read rate, the file furthest behind with its
rate, the files in a state that needs a look (waiting for a writer, unreadable, not a
file, a read error), then each file's rate, named by its file name and, where MIOpen's
prefix carries one, its host.  The line is cut at the right edge, so the order is what
matters most first.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Static

from miotui.safe_text import visible
from miotui.views import units


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
    #: each source's ``SourceStats`` when there are several (else empty)
    files: tuple = ()
    #: the log formats read (``MIOpen``, ``cuDNN``; ``MIOpen + cuDNN`` for a mix)
    formats: str = ""


#: states in which a file is read as it should be (the others are named in the bar)
_READING_STATES = frozenset({"starting", "reading", "following", "read", "ended"})
#: a file at least this far behind is named in the bar
BEHIND_SHOWN = 1 << 20
#: words that make the follow state stand out
_WARN_WORDS = ("truncated", "rotated", "deleted", "waiting", "error", "unreadable", "not a file")


def source_name(stats: Any) -> str:
    """A file's short name for the bar: ``rank3`` (its file name less ``.log``/``.gz``),
    ``rank3@node2`` where the log's prefix names a host."""
    name = "stdin" if stats.path == "-" else os.path.basename(stats.path)
    for ext in (".gz", ".log", ".txt", ".err", ".out"):
        if name.endswith(ext) and len(name) > len(ext):
            name = name[:-len(ext)]
    hosts = tuple(getattr(stats, "hosts", ()) or ())
    if hosts:
        name += f"@{hosts[0]}" + (f"+{len(hosts) - 1}" if len(hosts) > 1 else "")
    return visible(name)


def _rate(bytes_per_s: float) -> str:
    return units.byte_rate(bytes_per_s / 1e9)


def files_parts(files: Sequence[Any]) -> list[tuple[str, str]]:
    """The several-files part of the bar as (text, style) pieces, most important first."""
    parts = [(f"{len(files)} files", "bold"), (_rate(sum(f.bytes_per_s for f in files)), "")]
    behind = max(files, key=lambda f: f.behind)
    if behind.behind >= BEHIND_SHOWN:
        parts.append((f"{source_name(behind)} {_rate(behind.bytes_per_s)}, {units.size(behind.behind)} behind",
                      "yellow"))
    states = Counter(f.state for f in files if f.state not in _READING_STATES)
    for state, n in sorted(states.items()):
        named = [source_name(f) for f in files if f.state == state]
        parts.append((f"{n} {visible(state)} ({', '.join(named[:3])}{', …' if n > 3 else ''})", "bold yellow"))
    active = [f for f in files if f.bytes_per_s >= 1]
    if active:
        parts.append((", ".join(f"{source_name(f)} {_rate(f.bytes_per_s)}" for f in active), ""))
    return parts


def follow_state(data: Any, follow_mode: bool, table_follows: bool) -> str:
    """The bracketed state of a poll (``miotui.views.poller.PollData``): following or paused (the
    table stopped following the newest row), how far the first read is, read, or the
    reader's own word (waiting, truncated...)."""
    if follow_mode:
        if data.state in ("following", "reading"):
            return "following" if table_follows else "paused (f: follow)"
        return data.state + ("" if table_follows else ", paused")
    if data.scanning and data.scan_total:
        return f"reading {100 * data.scan_done / data.scan_total:.0f}%"
    if data.finished or data.state in ("read", "ended"):
        return "read"
    return data.state


def files_text(files: Sequence[Any]) -> str:
    """``8 files · 8.20 MB/s · rank3 1.00 MB/s, 94.4 MB behind · 1 waiting for a writer (rank7) ·
    rank0 1.02 MB/s, rank1 ...``."""
    return " · ".join(text for text, _ in files_parts(files))


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
        # one line of a fixed size: a new text needs no layout of the screen (Static.update
        # lays out by default; at ~10 updates a second that was most of the UI thread's work
        # while following, issue 19 §6)
        self.query_one("#status-text", Static).update(self.render_text(info), layout=False)

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
        if info.formats:
            t.append(f"{visible(info.formats)} ", style="cyan")
        if info.follow_state:
            style = "bold" if info.follow_state.startswith("follow") else ""
            if any(w in info.follow_state for w in _WARN_WORDS):
                style = "bold yellow"
            t.append(f"[{visible(info.follow_state)}] ", style=style)
        if info.run:                  # a run in progress matters more than the byte count
            t.append(visible(info.run), style="italic")
            t.append(" · ")
        for text, style in files_parts(info.files) if info.files else ():
            t.append(text, style=style)
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

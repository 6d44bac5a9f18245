"""The raw-log pane of the layers screen: a header saying where it is, the file view
(:class:`~miotui.widgets.log_view.LogView`) and its search box."""

from __future__ import annotations

import os
from typing import Any, Optional

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static

from miotui.safe_text import visible
from miotui.widgets.log_view import LogView

#: log files with an open reader kept (each holds an open descriptor and its index)
CONTEXTS_KEPT = 8


class LogPane(Vertical):
    """Where the selected layer was seen, in its log."""

    DEFAULT_CSS = """
    LogPane {
        height: 40%;
        border-top: solid $primary 50%;
        & > #log-header { height: 1; background: $panel; color: $accent; text-style: bold; }
        & > LogView { height: 1fr; }
        & > #log-search { display: none; height: 1; border: none; padding: 0 1; }
        & > #log-search.visible { display: block; }
    }
    """

    BINDINGS = [Binding("escape", "close_search", "Close search", show=False, id="log.close_search")]

    def __init__(self, *, id: Optional[str] = None) -> None:
        super().__init__(id=id)
        self._readers: dict[str, Any] = {}
        self.title = ""
        self.layer_id: Optional[int] = None

    def compose(self) -> ComposeResult:
        yield Static("", id="log-header")
        yield LogView(id="log-view")
        yield Input(placeholder="search the log (enter finds; then n/N step through the matches)",
                    id="log-search")

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    def _reader_for(self, path: str) -> Any:
        ctx = self._readers.get(path)
        if ctx is None:
            from miotui.sources.context import LogContext
            ctx = LogContext(path)
            self._readers[path] = ctx
            while len(self._readers) > CONTEXTS_KEPT:
                oldest = next(iter(self._readers))
                self._readers.pop(oldest).close()
        return ctx

    def show_layer(self, snapshot: Any, default_path: str) -> None:
        """Show the log around ``snapshot``'s sightings (its first and last line).

        ``default_path`` is the log when the app reads one file (the catalog names the
        file of a layer only when it reads several)."""
        if snapshot is None:
            return
        if self.layer_id == snapshot.id and self.view.context is not None:
            self.view.marks = sorted({snapshot.first_line, snapshot.last_line})
            self._header()
            return
        self.layer_id = snapshot.id
        p = snapshot.problem
        self.title = f"layer {snapshot.id} {p.op} {p.direction} {p.dtype}"
        files = tuple(getattr(snapshot, "files", ()))
        path = files[0] if files else default_path
        marks = [snapshot.first_line]
        if len(files) <= 1:          # with several files the last line may be in another one
            marks.append(snapshot.last_line)
        if path and path != "-" and os.path.isfile(path):
            self.view.show(self._reader_for(path), path, marks)
        else:
            why = "stdin cannot be read back" if path in ("", "-") else f"{path} is not there any more"
            self.view.show(None, path, marks, snapshot.raw,
                           note=f"{why}: these are the lines miotui kept of the first sighting")
        self._header()

    def grew(self) -> None:
        self.view.grew()

    def close_all(self) -> None:
        for ctx in self._readers.values():
            ctx.close()
        self._readers.clear()

    def _header(self) -> None:
        """Where the pane is, the keys that move it, then the file (cut first when narrow)."""
        v = self.view
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(f"── {self.title} ")
        if v.search:
            where = f"line {v.match:,}" if v.match is not None else "searching…"
            t.append(f"· /{visible(v.search)}: {where} · n/N next/prev match, esc ends ", style="not bold")
        elif v.marks:
            i = v.mark if v.mark >= 0 else 0
            t.append(f"· sighting {i + 1}/{len(v.marks)}: line {v.marks[i]:,} · n/N next/prev ", style="not bold")
        t.append("· / search · w wrap" + (" (on)" if v.wrap else "") + " ", style="not bold dim")
        if v.note:
            t.append(f"· {visible(v.note)} ", style="italic")
        if v.path:
            t.append(f"· {visible(os.path.basename(v.path))}", style="not bold")
        self.query_one("#log-header", Static).update(t)

    @on(LogView.StateChanged)
    def _state(self, event: LogView.StateChanged) -> None:
        event.stop()
        self._header()

    @on(LogView.SearchRequested)
    def _open_search(self, event: LogView.SearchRequested) -> None:
        event.stop()
        box = self.query_one("#log-search", Input)
        box.add_class("visible")
        box.value = self.view.search
        box.focus()

    @on(Input.Submitted, "#log-search")
    def _search(self, event: Input.Submitted) -> None:
        event.stop()
        view = self.view
        if event.value != view.search:
            view.match = None
        view.find(event.value)
        self._header()
        self.action_close_search()        # n/N now step through the matches

    def action_close_search(self) -> None:
        box = self.query_one("#log-search", Input)
        box.remove_class("visible")
        self.view.focus()

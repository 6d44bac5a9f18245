"""The main screen: the unique-layer table, op tabs, filter, raw-log pane, status bar.

It shows what the app's live model holds (the app feeds it snapshots and run summaries)
and asks the app for what it cannot do itself with
:class:`~miotui.screens.messages.LayerAction` messages (run, copy, open the detail).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Input, Static, Tab, Tabs

from miotui.safe_text import visible
from miotui.screens.messages import LayerAction, ViewChanged
from miotui.views.timing import cudnn_only
from miotui.widgets.footer import KeyFooter
from miotui.widgets.layer_table import LayerTable
from miotui.widgets.log_pane import LogPane
from miotui.widgets.status_bar import StatusBar

#: what to set so that MIOpen logs what miotui reads (the empty state says it)
LOGGING_HINT = ("MIOpen logs nothing by default. Start the job with MIOPEN_ENABLE_LOGGING_CMD=1 (one line per "
                "call: every layer), and MIOPEN_LOG_LEVEL=5 for MIOpen's chosen solvers; "
                "MIOPEN_ENABLE_LOGGING=1 logs the full API trace.")
#: the same for a cuDNN log (level 3 is the only one with the calls; README "Logging a PyTorch job on NVIDIA")
CUDNN_LOGGING_HINT = ("cuDNN logs its calls only at level 3. Start the job with CUDNN_LOGLEVEL_DBG=3 "
                      "CUDNN_LOGDEST_DBG=cudnn.log (cuDNN 8 and older: CUDNN_LOGINFO_DBG=1); level 2 logs "
                      "warnings only, no layer. The cudnn-frontend log needs CUDNN_FRONTEND_LOG_INFO=1 and "
                      "CUDNN_FRONTEND_LOG_FILE=<file>.")

#: what the time line calls each time source (``miotui.views.timing.TIME_SOURCES``)
SOURCE_NAMES = {"perf_log": "perf log", "execution_log": "execution log", "find": "Find", "driver": "MIOpenDriver",
                "profiler": "profiler trace", "rocprof": "rocprofv3"}


def time_line_text(summary: Any, sources: Sequence[tuple[str, int]], formats: Sequence[str] = (),
                   trace_lines: Sequence[str] = ()) -> str:
    """The line over the table: how many layers are timed and how much the top 5 take,
    how to time the others, where the per-call times come from, and the keys that go
    further (``t``, ``i``).  Cut at the right edge, so the order is what matters most first.
    With profiler traces (``LiveTraces.lines``) a line each follows: what the trace timed
    and attributed, what it matched of the log's layers (as ``miotui decode`` prints them)."""
    parts = [summary.line(formats)]
    if 0 < summary.timed < summary.layers and not trace_lines:   # with a trace its lines say why
        how = ("a profiler trace of the run times them" if cudnn_only(formats)
               else "MIOPEN_LOG_LEVEL=5 or MIOPEN_PERFORMANCE_LOGS=1 times them")
        parts.append(f"{summary.layers - summary.timed} untimed: {how}")
    if sources:
        parts.append("per call from " + ", ".join(f"{SOURCE_NAMES.get(name, name)} ({n})" for name, n in sources))
    parts.append("t: sort by total · i: first iteration")
    return "\n".join([" · ".join(parts), *trace_lines])


def empty_text(lines: int, undecoded: int, sources: str, follow: bool, formats: Sequence[str] = ()) -> str:
    """Why the table is empty once the log has been read: what was read and what to set,
    for the format the log is in (``formats``: ``Catalog.formats``; both while it is not told)."""
    name = "cuDNN" if "cuDNN" in formats else "MIOpen" if formats else ""
    text = f"No {name + ' ' if name else ''}layer in {lines:,} lines of {sources} yet"
    text += " (following: layers appear as the job logs them).\n\n" if follow else ".\n\n"
    text += {"cuDNN": CUDNN_LOGGING_HINT, "MIOpen": LOGGING_HINT}.get(name, f"{LOGGING_HINT}\n\n{CUDNN_LOGGING_HINT}")
    if undecoded:
        what = "records looked like cuDNN's" if name == "cuDNN" else "lines looked like MIOpen's"
        text += f"\n\n{undecoded:,} {what} but could not be decoded: u lists them."
    return text


class LayersScreen(Screen):
    """Unique layers as they are decoded; everything else is reached from here."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", id="layers.filter"),
        Binding("t", "sort_total", "Sort by total", id="layers.sort_total"),
        Binding("escape", "escape", "Cancel run / clear filter", show=False, id="layers.escape"),
        Binding("r", "run", "Run", id="layers.run"),
        Binding("R", "run_with", "Run with…", id="layers.run_with"),
        Binding("d", "driver", "MIOpenDriver", id="layers.driver"),
        Binding("c", "copy", "Copy cmd", id="layers.copy"),
        Binding("x", "cancel_run", "Cancel run", show=False, id="layers.cancel"),
        Binding("f", "follow", "Follow", id="layers.follow"),
        Binding("l", "toggle_log", "Raw log", id="layers.log"),
        Binding("s", "sort", "Sort", id="layers.sort"),
        Binding("S", "reverse_sort", "Reverse sort", show=False, id="layers.reverse_sort"),
        Binding("right_square_bracket", "next_op", "Next op", show=False, id="layers.next_op"),
        Binding("left_square_bracket", "previous_op", "Previous op", show=False, id="layers.previous_op"),
        Binding("q", "app.quit", "Quit", id="layers.quit"),
    ]

    def __init__(self, model: Any, *, follow: bool = False, default_path: str = "", sources: str = "") -> None:
        super().__init__(id="layers-screen")
        self.model = model
        self.sources = sources
        self.follow_mode = follow
        self.default_path = default_path
        self._op_tabs: dict[str, Tab] = {}
        self._op_counts: dict[str, int] = {}
        self._all_tab = Tab("all", id="op-all")
        self._time_lines = 0

    def compose(self) -> ComposeResult:
        yield Tabs(self._all_tab, id="op-tabs")
        with Vertical(id="main"):
            yield Static("", id="time-line")
            yield Static("", id="empty")
            yield LayerTable(id="layers")
            yield LogPane(id="log-pane")
        yield Input(placeholder="filter: text, or op:conv dir:wrw dtype:fp16 n:>=64 exec:>100 "
                                "(enter: keep, escape: clear)", id="filter")
        yield StatusBar(id="status")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.table
        table.follow = self.follow_mode
        table.flash_new = self.follow_mode
        table.focus()
        self.set_interval(0.5, table.tick_flash)
        if not table.model.rows:
            self.set_empty_state(f"Reading {self.sources or 'the log'}…")

    @property
    def table(self) -> LayerTable:
        return self.query_one("#layers", LayerTable)

    @property
    def status(self) -> StatusBar:
        return self.query_one("#status", StatusBar)

    @property
    def log_pane(self) -> LogPane:
        return self.query_one("#log-pane", LogPane)

    @property
    def filter_text(self) -> str:
        return self.query_one("#filter", Input).value

    # ------------------------------------------------------------------ updates from the app

    def apply_snapshots(self, snapshots: list[Any]) -> None:
        info = self.table.apply_snapshots(snapshots)
        if info.new:
            self._refresh_op_tabs()
        if self.log_visible and snapshots:
            snap = self.table.selected_snapshot
            if snap is not None and any(s.id == snap.id for s in snapshots):
                self.log_pane.show_layer(snap, self.default_path)

    def log_grew(self) -> None:
        """The log has more lines: the raw pane, when shown, indexes on (and, at its end,
        shows them)."""
        if self.log_visible:
            self.log_pane.grew()

    def set_time_line(self, text: str) -> None:
        """Where the logged GPU time goes (:func:`time_line_text`): shown once the log has
        a layer."""
        line = self.query_one("#time-line", Static)
        line.set_class(bool(text), "visible")
        shown = Text(visible(text, newlines=True))         # a profiler trace's lines below
        # its lines are cut, never wrapped: only another number of lines changes its height,
        # so only then is the screen laid out again (each poll with a time summary sets it)
        lines = len(shown.plain.split("\n"))
        line.update(shown, layout=lines != self._time_lines)
        self._time_lines = lines

    def set_empty_state(self, text: Optional[str]) -> None:
        """Say why the table is empty (``None``: it is not)."""
        empty = self.query_one("#empty", Static)
        empty.set_class(text is not None, "visible")
        if text is not None:
            empty.update(Text(visible(text, newlines=True)))

    def _refresh_op_tabs(self) -> None:
        counts = self.table.model.op_counts
        tabs = self.query_one("#op-tabs", Tabs)
        self._all_tab.label = f"all {sum(counts.values())}"
        for op in sorted(counts):
            label = f"{op} {counts[op]}"
            tab = self._op_tabs.get(op)
            if tab is None:
                tab = Tab(label, id=f"op-{op}")
                self._op_tabs[op] = tab
                tabs.add_tab(tab)
            elif self._op_counts.get(op) != counts[op]:
                tab.label = label
        self._op_counts = dict(counts)
        self.call_after_refresh(self._realign_underline)

    def _realign_underline(self) -> None:
        """Move the op tabs' underline again once the new labels are laid out: Textual
        moves it when a label changes, sometimes before the tab has its new width, and
        it then stays under the old one ("all" instead of "all 132")."""
        active = self.query_one("#op-tabs", Tabs).active_tab
        if active is not None:
            active.post_message(Tab.Relabelled(active))

    @property
    def log_visible(self) -> bool:
        return self.log_pane.has_class("visible")

    def scope_text(self) -> str:
        """What limits the table's rows now (for the export dialog)."""
        parts = []
        model = self.table.model
        if model.op_kind:
            parts.append(f"op tab: {model.op_kind}")
        if model.filter.active:
            parts.append(f"filter: {model.filter.text}")
        parts.append(f"sorted by {model.sort_key}{' (reversed)' if model.sort_reverse else ''}")
        return "; ".join(parts)

    # ------------------------------------------------------------------ events

    @on(Tabs.TabActivated, "#op-tabs")
    def _op_tab(self, event: Tabs.TabActivated) -> None:
        tab_id = event.tab.id or "op-all"
        op = None if tab_id == "op-all" else tab_id[3:]
        if op != self.table.model.op_kind:
            self.table.set_op_kind(op)
            self.post_message(ViewChanged())

    @on(LayerTable.Selected)
    def _selected(self, event: LayerTable.Selected) -> None:
        self.post_message(LayerAction("open", event.layer_id))

    @on(LayerTable.Highlighted)
    def _highlighted(self, event: LayerTable.Highlighted) -> None:
        if self.log_visible:
            self.log_pane.show_layer(self.table.selected_snapshot, self.default_path)

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        errors = self.table.set_filter(event.value)
        inp = event.input
        inp.border_subtitle = visible("; ".join(errors)) if errors else ""
        inp.set_class(bool(errors), "error")
        self.post_message(ViewChanged())

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.table.focus()
        if not event.value:
            event.input.remove_class("visible")

    # ------------------------------------------------------------------ actions

    def action_filter(self) -> None:
        inp = self.query_one("#filter", Input)
        inp.add_class("visible")
        inp.focus()

    def action_escape(self) -> None:
        """escape: cancel the run in progress; else clear the filter."""
        if self.model.runs.current is not None:
            self.post_message(LayerAction("cancel", None))
            return
        inp = self.query_one("#filter", Input)
        if inp.value or inp.has_class("visible"):
            inp.value = ""
            inp.remove_class("visible")
            self.table.set_filter("")
            self.table.focus()
            self.post_message(ViewChanged())

    def _act(self, action: str) -> None:
        layer_id = self.table.cursor_id
        if layer_id is None:
            self.notify("No layer selected yet.", severity="warning")
            return
        self.post_message(LayerAction(action, layer_id))

    def action_run(self) -> None:
        self._act("run")

    def action_run_with(self) -> None:
        self._act("run_with")

    def action_driver(self) -> None:
        self._act("driver")

    def action_copy(self) -> None:
        self._act("copy")

    def action_cancel_run(self) -> None:
        self.post_message(LayerAction("cancel", None))

    def action_follow(self) -> None:
        if not self.follow_mode:
            self.notify("Not following: this log was read once. Start miotui with --follow (-f) to keep "
                        "reading it as it grows; f then jumps to the newest layer.", severity="warning",
                        timeout=6)
        self.table.action_follow()
        self.table.focus()
        self.post_message(ViewChanged())

    def action_toggle_log(self) -> None:
        pane = self.log_pane
        pane.toggle_class("visible")
        if pane.has_class("visible"):
            pane.show_layer(self.table.selected_snapshot, self.default_path)
        elif not self.table.has_focus:
            self.table.focus()

    def action_sort(self) -> None:
        from miotui.screens.dialogs import SortScreen

        def chosen(key: Optional[str]) -> None:
            if key:
                self.table.sort_by(key)

        model = self.table.model
        self.app.push_screen(SortScreen(model.sort_key, model.sort_reverse), chosen)

    def action_sort_total(self) -> None:
        """``t``: the costliest layers first (the logged GPU total); again: the cheapest first."""
        self.table.sort_by("total_ms")
        self.table.action_first()
        self.table.focus()

    def action_reverse_sort(self) -> None:
        model = self.table.model
        self.table.sort_by(model.sort_key, not model.sort_reverse)

    def action_next_op(self) -> None:
        self.query_one("#op-tabs", Tabs).action_next_tab()

    def action_previous_op(self) -> None:
        self.query_one("#op-tabs", Tabs).action_previous_tab()

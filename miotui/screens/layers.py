"""The main screen: the unique-layer table, op tabs, filter, raw-log pane, status bar."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input, Tab, Tabs

from miotui.widgets.layer_table import LayerTable
from miotui.widgets.status_bar import StatusBar
from miotui.widgets.tail_view import TailView

if TYPE_CHECKING:  # pragma: no cover
    from miotui.app import MiotuiApp


class LayersScreen(Screen):
    """Unique layers as they are decoded; everything else is reached from here."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", id="layers.filter"),
        Binding("escape", "escape", "Cancel run / clear filter", show=False, id="layers.escape"),
        Binding("r", "run", "Run", id="layers.run"),
        Binding("R", "run_with", "Run with…", id="layers.run_with"),
        Binding("d", "driver", "MIOpenDriver", id="layers.driver"),
        Binding("c", "copy", "Copy cmd", id="layers.copy"),
        Binding("f", "follow", "Follow", id="layers.follow"),
        Binding("l", "toggle_log", "Raw log", id="layers.log"),
        Binding("s", "sort", "Sort", id="layers.sort"),
        Binding("S", "reverse_sort", "Reverse sort", show=False, id="layers.reverse_sort"),
        Binding("right_square_bracket", "next_op", "Next op", show=False, id="layers.next_op"),
        Binding("left_square_bracket", "previous_op", "Previous op", show=False, id="layers.previous_op"),
    ]

    def __init__(self) -> None:
        super().__init__(id="layers-screen")
        self._op_tabs: dict[str, Tab] = {}
        self._op_counts: dict[str, int] = {}
        self._all_tab = Tab("all", id="op-all")

    @property
    def miotui(self) -> "MiotuiApp":
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Tabs(self._all_tab, id="op-tabs")
        with Vertical(id="main"):
            yield LayerTable(id="layers")
            yield TailView(id="tail")
        yield Input(placeholder="filter: text, or op:conv dir:wrw dtype:fp16 n:>=64 exec:>100 "
                                "(enter: keep, escape: clear)", id="filter")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.table
        table.follow = self.miotui.follow_mode
        table.flash_new = self.miotui.follow_mode
        table.focus()
        self.set_interval(0.5, table.tick_flash)
        self.call_after_refresh(self.miotui.start_background)

    @property
    def table(self) -> LayerTable:
        return self.query_one("#layers", LayerTable)

    @property
    def status(self) -> StatusBar:
        return self.query_one("#status", StatusBar)

    @property
    def tail(self) -> TailView:
        return self.query_one("#tail", TailView)

    # ------------------------------------------------------------------ updates from the app

    def apply_snapshots(self, snapshots: list[Any]) -> None:
        info = self.table.apply_snapshots(snapshots)
        if info.new:
            self._refresh_op_tabs()

    def _refresh_op_tabs(self) -> None:
        counts = self.table.model.op_counts
        tabs = self.query_one("#op-tabs", Tabs)
        total = sum(counts.values())
        self._all_tab.label = f"all {total}"
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

    def show_tail(self, layer_title: str, layer_lines: list[tuple[int, str]],
                  tail: list[tuple[str, int, str]]) -> None:
        self.tail.set_content(layer_title, layer_lines, tail)

    @property
    def tail_visible(self) -> bool:
        return self.tail.has_class("visible")

    # ------------------------------------------------------------------ events

    @on(Tabs.TabActivated, "#op-tabs")
    def _op_tab(self, event: Tabs.TabActivated) -> None:
        tab_id = event.tab.id or "op-all"
        op = None if tab_id == "op-all" else tab_id[3:]
        if op != self.table.model.op_kind:
            self.table.set_op_kind(op)
            self.miotui.refresh_status()

    @on(LayerTable.Selected)
    def _selected(self, event: LayerTable.Selected) -> None:
        self.miotui.open_detail(event.index)

    @on(LayerTable.Highlighted)
    def _highlighted(self, event: LayerTable.Highlighted) -> None:
        if self.tail_visible:
            self.miotui.refresh_tail()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        errors = self.table.set_filter(event.value)
        inp = event.input
        inp.border_subtitle = "; ".join(errors) if errors else ""
        inp.set_class(bool(errors), "error")
        self.miotui.refresh_status()

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
        if self.miotui.cancel_current_run():
            return
        inp = self.query_one("#filter", Input)
        if inp.value or inp.has_class("visible"):
            inp.value = ""
            inp.remove_class("visible")
            self.table.set_filter("")
            self.table.focus()
            self.miotui.refresh_status()

    def _selected_index(self) -> Optional[int]:
        idx = self.table.cursor_index
        if idx is None:
            self.notify("No layer selected yet.", severity="warning")
        return idx

    def action_run(self) -> None:
        idx = self._selected_index()
        if idx is not None:
            self.miotui.run_default(idx)

    def action_run_with(self) -> None:
        idx = self._selected_index()
        if idx is not None:
            self.miotui.choose_and_run(idx)

    def action_driver(self) -> None:
        idx = self._selected_index()
        if idx is not None:
            self.miotui.launch_driver(idx)

    def action_copy(self) -> None:
        idx = self._selected_index()
        if idx is not None:
            self.miotui.copy_command(idx)

    def action_follow(self) -> None:
        self.table.action_follow()
        self.table.focus()
        self.miotui.refresh_status()

    def action_toggle_log(self) -> None:
        tail = self.tail
        tail.toggle_class("visible")
        if tail.has_class("visible"):
            self.miotui.refresh_tail()

    def action_sort(self) -> None:
        from miotui.screens.dialogs import SortScreen

        def chosen(key: Optional[str]) -> None:
            if key:
                self.table.sort_by(key)

        model = self.table.model
        self.app.push_screen(SortScreen(model.sort_key, model.sort_reverse), chosen)

    def action_reverse_sort(self) -> None:
        model = self.table.model
        self.table.sort_by(model.sort_key, not model.sort_reverse)

    def action_next_op(self) -> None:
        self.query_one("#op-tabs", Tabs).action_next_tab()

    def action_previous_op(self) -> None:
        self.query_one("#op-tabs", Tabs).action_previous_tab()

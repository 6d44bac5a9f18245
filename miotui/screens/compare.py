"""The compare screen (``miotui --compare OLD NEW``): two runs' layers as pairs, ranked by what
they cost the new run, with the selected pair's two sides side by side.

It shows a ``miotui.diff.Comparison`` made off the UI thread (the compare app's poller makes
one each time the NEW log's layers change) and redraws when handed a new one, keeping the
cursor on the pair it was on.  The cells are ``miotui.diff_output``'s, as ``miotui diff``
prints them; every piece of log text is shown as text, never as markup.
"""

from __future__ import annotations

from typing import Any, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from miotui.decode_output import shape_text, startup_text
from miotui.diff import Comparison, LayerFacts, Pair
from miotui.diff_output import pair_cells, side_line
from miotui.safe_text import visible
from miotui.views.units import ms_text

#: the table's columns: (title, index into ``pair_cells``)
COLUMNS = (("#", 0), ("status", 1), ("op", 2), ("dir", 3), ("shape", 5), ("old ms/call", 6), ("new ms/call", 7),
           ("ratio", 8), ("delta total ms", 9), ("solver", 10))
_STATUS_STYLE = {"changed": "bold yellow", "added": "green", "removed": "red", "same": "dim"}


def pair_id(pair: Pair) -> tuple[Optional[int], Optional[int]]:
    """A pair's identity across redraws: its layers' ids on each side."""
    return (None if pair.old is None else pair.old.layer.id, None if pair.new is None else pair.new.layer.id)


def side_text(title: str, facts: Optional[LayerFacts]) -> Text:
    """One side of the detail: what ran, how often, its time and its first iteration."""
    out = Text(title + "\n", style="bold")
    if facts is None:
        out.append("not in this run")
        return out
    layer, t = facts.layer, facts.time
    p = layer.problem
    rows = [("layer", f"{layer.id}: {p.op} {p.direction} {p.dtype} {getattr(p, 'layout', '')} {shape_text(layer)}"),
            ("executions", str(layer.executions)), ("finds", str(layer.finds)),
            ("per call", "not timed" if t.per_call_ms is None else f"{ms_text(t.per_call_ms)} ms ({t.source})"),
            ("total", "" if t.total_ms is None else f"{ms_text(t.total_ms)} ms"),
            ("solver", visible(facts.solver) or "(not logged)"), ("verdict", visible(facts.verdict) or "(none)"),
            ("first iteration", startup_text(layer.startup) or "nothing logged"),
            ("first iteration ms", "" if facts.first_ms is None else ms_text(facts.first_ms)),
            ("command", layer.driver_command or "(none)")]
    for name, value in rows:
        out.append(f"{name}: ", style="bold")
        out.append(value + "\n")   # Text: never markup
    return out


class CompareScreen(Screen):
    """Pairs on top, the selected pair's two sides below, side by side."""

    BINDINGS = [Binding("q", "app.quit", "Quit", id="compare.quit")]

    DEFAULT_CSS = """
    CompareScreen #compare-head { height: auto; padding: 0 1; }
    CompareScreen #compare-table { height: 1fr; }
    CompareScreen #compare-detail { height: auto; max-height: 50%; }
    CompareScreen .compare-side { width: 1fr; padding: 0 1; border: round $primary; height: auto; }
    CompareScreen #compare-changes { height: auto; padding: 0 1; }
    """

    def __init__(self, title: str = "") -> None:
        super().__init__()
        self.comparison: Optional[Comparison] = None
        self.pairs: list[Pair] = []
        self.redraws = 0
        self._title = title

    def compose(self) -> ComposeResult:
        yield Static(Text(self._title or "Reading both runs…"), id="compare-head")
        table: DataTable[Any] = DataTable(id="compare-table", cursor_type="row", zebra_stripes=True)
        yield table
        with Vertical(id="compare-detail"):
            yield Static(Text(""), id="compare-changes")
            with Horizontal():
                yield Static(Text(""), id="compare-old", classes="compare-side")
                yield Static(Text(""), id="compare-new", classes="compare-side")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for title, _ in COLUMNS:
            table.add_column(title, key=title)

    def show(self, comparison: Comparison) -> None:
        """Draw ``comparison`` (made off this thread), the cursor kept on its pair."""
        table = self.query_one(DataTable)
        selected = self.selected
        keep = None if selected is None else pair_id(selected)
        self.comparison = comparison
        self.pairs = list(comparison.pairs)
        table.clear()
        row = 0
        for i, pair in enumerate(self.pairs, 1):
            cells = pair_cells(i, pair)
            values = [Text(cells[index], style=_STATUS_STYLE[pair.status] if title == "status" else "")
                      for title, index in COLUMNS]
            table.add_row(*values, key=str(i))
            if keep is not None and pair_id(pair) == keep:
                row = i - 1
        batch = " (batch ignored in matching)" if comparison.ignore_batch else ""
        head = "\n".join([side_line("old", comparison.old), side_line("new", comparison.new),
                          f"{len(self.pairs)} layers: {comparison.counts_text()}{batch}; "
                          "ranked by what they cost the new run"])
        self.query_one("#compare-head", Static).update(Text(head))
        if self.pairs:
            table.move_cursor(row=row)
        self.show_detail(self.selected)
        self.redraws += 1

    def show_message(self, text: str) -> None:
        """A line in place of the runs' summary (what could not be read)."""
        self.query_one("#compare-head", Static).update(Text(visible(text)))

    @property
    def selected(self) -> Optional[Pair]:
        table = self.query_one(DataTable)
        if not self.pairs or table.cursor_row is None or not 0 <= table.cursor_row < len(self.pairs):
            return None
        return self.pairs[table.cursor_row]

    def show_detail(self, pair: Optional[Pair]) -> None:
        changes = Text("")
        if pair is not None:
            changes.append(f"{pair.status}: ", style="bold")
            changes.append(visible("; ".join(pair.changes)) or "no change")
        self.query_one("#compare-changes", Static).update(changes)
        self.query_one("#compare-old", Static).update(side_text("old", None if pair is None else pair.old)
                                                     if pair is not None else Text(""))
        self.query_one("#compare-new", Static).update(side_text("new", None if pair is None else pair.new)
                                                     if pair is not None else Text(""))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail(self.selected)

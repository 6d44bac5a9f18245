"""Read-only screens: the undecoded lines with their reasons, and the key help."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static

from miotui.safe_text import visible
from miotui.widgets.footer import KeyFooter


class UndecodedScreen(Screen):
    """Lines that looked like MIOpen's but could not be decoded, and why."""

    BINDINGS = [Binding("escape,q,u", "back", "Back", id="undecoded.back")]

    def __init__(self, catalog: Any) -> None:
        super().__init__(id="undecoded-screen")
        self.catalog = catalog

    def compose(self) -> ComposeResult:
        yield Static("Loading undecoded lines…", id="undecoded-title")
        table: DataTable = DataTable(id="undecoded-table", cursor_type="row", zebra_stripes=True)
        yield table
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("line", "file", "reason", "text")
        table.focus()
        self._load()

    class Loaded(Message):
        def __init__(self, records: Sequence[Any]) -> None:
            super().__init__()
            self.records = records

    @work(thread=True, group="undecoded", exit_on_error=False)
    def _load(self) -> None:
        self.post_message(self.Loaded(self.catalog.undecoded()))

    def on_undecoded_screen_loaded(self, message: Loaded) -> None:
        self.show_records(message.records)

    def show_records(self, records: Sequence[Any]) -> None:
        table = self.query_one(DataTable)
        table.clear()
        # Text cells: a DataTable parses plain strings as markup, and these come from the log
        table.add_rows((r.line, Text(visible(r.file.rsplit("/", 1)[-1])), Text(visible(r.reason)),
                        Text(visible(r.text, tabsize=4)[:300])) for r in records)
        total = self.catalog.undecoded_count
        title = Text(f"{total:,} undecoded", style="bold")
        if total > len(records):
            title.append(f" (the last {len(records):,} are kept)", style="dim")
        title.append("  — lines that look like MIOpen's but could not be turned into a layer", style="dim")
        self.query_one("#undecoded-title", Static).update(title)

    def action_back(self) -> None:
        self.app.pop_screen()


def binding_rows(groups: Iterable[tuple[str, Sequence[Any]]],
                 keymap: dict[str, str]) -> list[tuple[str, str, str, str]]:
    """(group, keys, description, id) for every binding, with keymap overrides applied."""
    rows = []
    for group, bindings in groups:
        for b in bindings:
            keys = keymap.get(b.id, b.key) if b.id else b.key
            nice = ", ".join(k.replace("question_mark", "?").replace("slash", "/")
                             .replace("left_square_bracket", "[").replace("right_square_bracket", "]")
                             for k in keys.split(","))
            rows.append((group, visible(nice), b.description or b.action, b.id or ""))
    return rows


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help.close")]

    def __init__(self, rows: Sequence[tuple[str, str, str, str]]) -> None:
        super().__init__(classes="dialog-screen")
        self.rows = rows

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog", id="help-dialog"):
            yield Static(self._help_table(), id="help-text")

    def _help_table(self) -> Any:
        t = Table(title="miotui keys", title_style="bold", expand=True, box=None, padding=(0, 1))
        t.add_column("where", style="dim", no_wrap=True)
        t.add_column("key", style="bold cyan", no_wrap=True)
        t.add_column("does")
        t.add_column("binding id (remap it)", style="dim", no_wrap=True)
        last = None
        for group, keys, desc, bid in self.rows:
            t.add_row(Text(group if group != last else ""), Text(keys), Text(desc), Text(bid))
            last = group
        note = Text.from_markup(
            "\nRemap keys in [b]~/.config/miotui/keymap.toml[/b] (or $MIOTUI_KEYMAP): "
            "[i]\"layers.run\" = \"ctrl+r\"[/i]. ctrl+p opens the command palette (themes, export, …).\n"
            "Filter syntax: words must all appear; field:value with fields op dir dtype layout n c d h w k "
            "filter pad stride dil g mode exec find gflop solver verdict file src; "
            "numbers take = != > >= < <= and a..b; a leading - negates; commas mean any of.")
        from rich.console import Group
        return Group(t, note)

    def action_close(self) -> None:
        self.dismiss(None)

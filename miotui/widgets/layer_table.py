"""The layers table: a Line-API widget over :class:`LayerTableModel`.

Why not ``DataTable``: the table must take 10 Hz in-place updates of counters while
the user scrolls, filter 10 000 rows per keypress, keep the selected layer still on
screen while rows are inserted above it, and flash new rows.  Rendering only the
visible lines from the model (``render_line``), with a per-row cache keyed by the
row's version, makes each of those cost what is on screen, not what is in the log.

The cursor is a *layer* (its id), not a position: when the order changes
the cursor stays on its layer, at the same screen line.  ``follow`` keeps the cursor on
the newest layer as rows arrive; moving the cursor anywhere else pauses it, and
``new_while_paused`` counts what arrived meanwhile (the "N new" badge).

Columns are chosen to fit the width (:func:`~miotui.views.layer_model.fit_columns`:
by priority, the solver name taking what is left); ``w`` shows every column (the wide
view), and scrolling it sideways keeps the frozen columns (``# op dir dtype``) in place.
"""

from __future__ import annotations

from itertools import takewhile
from typing import Any, Iterable, Optional

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from miotui.views.layer_model import Column, LayerTableModel, UpdateInfo, fit_columns, format_cell
from miotui.views.run_summary import RunSummary

_VERDICT_CLASS = {"ok": "ok", "FAILED": "failed", "error": "failed", "refused": "warn", "cancelled": "warn",
                  "n/a": "dim", "running": "running", "queued": "running"}
#: columns in the same order as another (a share sorts as its total): both get the sort
#: arrow, so a narrow table that shows only the share still shows how it is sorted
SAME_ORDER = {"share": "total_ms", "total_ms": "share"}


class LayerTable(ScrollView, can_focus=True):
    """Unique layers, one per line, with a fixed header line."""

    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False, id="table.up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="table.down"),
        Binding("pageup", "page_up", "Page up", show=False, id="table.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="table.page_down"),
        Binding("home,g", "first", "First", show=False, id="table.first"),
        Binding("end,G", "last", "Last / follow", show=False, id="table.last"),
        Binding("left", "scroll_left_cols", "Left", show=False, id="table.left"),
        Binding("right", "scroll_right_cols", "Right", show=False, id="table.right"),
        Binding("enter", "select", "Details", id="table.select"),
        Binding("w", "toggle_wide", "Wide", id="table.wide"),
    ]

    COMPONENT_CLASSES = {
        "layer-table--header", "layer-table--header-sorted", "layer-table--cursor", "layer-table--new",
        "layer-table--even", "layer-table--ok", "layer-table--failed", "layer-table--warn",
        "layer-table--running", "layer-table--dim", "layer-table--share",
    }

    DEFAULT_CSS = """
    LayerTable {
        background: $surface;
        color: $foreground;
        height: 1fr;
        & > .layer-table--header { text-style: bold; background: $panel; color: $foreground; }
        & > .layer-table--header-sorted { text-style: bold underline; background: $panel; color: $accent; }
        & > .layer-table--cursor {
            background: $block-cursor-blurred-background; color: $block-cursor-blurred-foreground;
        }
        &:focus > .layer-table--cursor {
            background: $block-cursor-background; color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
        & > .layer-table--new { background: $success 30%; }
        & > .layer-table--even { background: $surface-lighten-1 40%; }
        & > .layer-table--ok { color: $success; text-style: bold; }
        & > .layer-table--failed { color: $error; text-style: bold; }
        & > .layer-table--warn { color: $warning; }
        & > .layer-table--running { color: $accent; text-style: italic; }
        & > .layer-table--dim { color: $foreground-muted; }
        & > .layer-table--share { color: $accent; }
    }
    """

    follow: reactive[bool] = reactive(True)
    new_while_paused: reactive[int] = reactive(0)

    class Highlighted(Message):
        """The cursor moved to another layer."""

        def __init__(self, table: "LayerTable", layer_id: Optional[int]) -> None:
            super().__init__()
            self.table = table
            self.layer_id = layer_id

    class Selected(Message):
        """Enter (or a double click) on a layer."""

        def __init__(self, table: "LayerTable", layer_id: int) -> None:
            super().__init__()
            self.table = table
            self.layer_id = layer_id

    class SortChanged(Message):
        def __init__(self, table: "LayerTable", key: str, reverse: bool) -> None:
            super().__init__()
            self.table = table
            self.key = key
            self.reverse = reverse

    def __init__(self, *, name: Optional[str] = None, id: Optional[str] = None,
                 classes: Optional[str] = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.model = LayerTableModel()
        self.cursor_id: Optional[int] = None
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._columns: list[Column] = self.model.visible_columns()
        self._widths: dict[str, int] = dict(self.model.widths)
        self._frozen_width = 0
        self._widths_sig: tuple = ()
        #: every column, scrolling sideways (k9s's wide view); else the columns that fit
        self.wide = False
        self._flashing: set[int] = set()
        #: highlight rows as they arrive (off when reading a finished file: everything is new)
        self.flash_new = True
        self._base_style: Optional[Style] = None

    # ------------------------------------------------------------------ data in

    def apply_snapshots(self, snapshots: Iterable[Any]) -> UpdateInfo:
        """Take changed catalog snapshots; rows update in place."""
        anchor = self._anchor()
        info = self.model.update(snapshots)
        if info.new and self.flash_new:
            self._flashing.update(info.new)
        self._after_model_change(info.view_changed, anchor, new=info.new)
        return info

    def set_result(self, layer_id: int, result: Optional[RunSummary]) -> None:
        anchor = self._anchor()
        changed = self.model.set_result(layer_id, result)
        self._after_model_change(changed, anchor)

    def set_filter(self, text: str) -> tuple[str, ...]:
        anchor = self._anchor()
        spec = self.model.set_filter(text)
        self._after_model_change(True, anchor, keep_cursor_visible=True)
        return spec.errors

    def set_op_kind(self, op: Optional[str]) -> None:
        anchor = self._anchor()
        self.model.set_op_kind(op)
        self._after_model_change(True, anchor, keep_cursor_visible=True)

    def sort_by(self, key: str, reverse: Optional[bool] = None) -> None:
        anchor = self._anchor()
        self.model.set_sort(key, reverse)
        self._after_model_change(True, anchor, keep_cursor_visible=True)
        self.post_message(self.SortChanged(self, self.model.sort_key, self.model.sort_reverse))

    # ------------------------------------------------------------------ geometry helpers

    @property
    def body_height(self) -> int:
        """Rows on screen: the height less the header and a horizontal scrollbar."""
        return max(1, self.size.height - 1 - self.scrollbar_size_horizontal)

    @property
    def cursor_position(self) -> Optional[int]:
        if self.cursor_id is None:
            return None
        return self.model.position(self.cursor_id)

    def _anchor(self) -> Optional[tuple[int, int]]:
        """(layer, screen line) of the cursor, to keep it still across a reorder."""
        pos = self.cursor_position
        if pos is None or self.cursor_id is None:
            return None
        return self.cursor_id, pos - round(self.scroll_y)

    def _update_virtual_size(self) -> None:
        model = self.model
        width = self.size.width or 10_000       # not laid out yet: fit everything, redone on resize
        if self.size.height and len(model.view) + 1 > self.size.height:
            width -= self.styles.scrollbar_size_vertical      # the vertical scrollbar takes its share
        self._columns, self._widths = fit_columns(model.visible_columns(), model.widths, width, self.wide,
                                                  model.natural)
        widths = self._widths
        total = 1 + sum(widths[c.key] + 1 for c in self._columns)
        # the frozen columns are the leading ones (a column between them would scroll under them)
        self._frozen_width = 1 + sum(widths[c.key] + 1 for c in takewhile(lambda c: c.frozen, self._columns))
        sig = tuple((c.key, widths[c.key]) for c in self._columns)
        if sig != self._widths_sig:
            self._widths_sig = sig
            self._cache.clear()
        self.virtual_size = Size(total, len(model.view) + 1)

    @property
    def column_keys(self) -> list[str]:
        """The keys of the columns on screen, in order."""
        return [c.key for c in self._columns]

    def action_toggle_wide(self) -> None:
        """Every column (scroll sideways; ``# op dir dtype`` stay) or those that fit."""
        self.wide = not self.wide
        if not self.wide:
            self.scroll_to(x=0, animate=False, immediate=True)
        self._update_virtual_size()
        self.refresh()

    def _after_model_change(self, view_changed: bool, anchor: Optional[tuple[int, int]], *,
                            new: tuple[int, ...] = (), keep_cursor_visible: bool = False) -> None:
        self._update_virtual_size()
        model = self.model
        old_cursor = self.cursor_id
        if self.follow and model.view:
            newest = model.newest_id()
            self.cursor_id = newest
            self._scroll_to_cursor()
        else:
            if new and not self.follow:
                accepted = [i for i in new if model.position(i) is not None]
                if accepted:
                    self.new_while_paused += len(accepted)
            if self.cursor_id is None or model.position(self.cursor_id) is None:
                # The cursor's layer left the view (filter): take the row now at its place.
                if model.view:
                    line = anchor[1] if anchor else 0
                    target = max(0, min(len(model.view) - 1, round(self.scroll_y) + max(line, 0)))
                    self.cursor_id = model.view[target]
                else:
                    self.cursor_id = None
                self._scroll_to_cursor()
            elif view_changed and anchor is not None and anchor[0] == self.cursor_id:
                pos = model.position(self.cursor_id)
                if pos is not None:
                    if keep_cursor_visible:
                        self._scroll_to_cursor()
                    else:
                        self.scroll_to(y=max(0, pos - anchor[1]), animate=False, immediate=True, force=True)
        if self.cursor_id != old_cursor:
            self.post_message(self.Highlighted(self, self.cursor_id))
        self.refresh()

    def _scroll_to_cursor(self) -> None:
        pos = self.cursor_position
        if pos is None:
            return
        top = round(self.scroll_y)
        h = self.body_height
        if pos < top:
            self.scroll_to(y=pos, animate=False, immediate=True, force=True)
        elif pos >= top + h:
            self.scroll_to(y=pos - h + 1, animate=False, immediate=True, force=True)

    def on_resize(self, event: events.Resize) -> None:
        self._cache.clear()
        self._update_virtual_size()
        self._scroll_to_cursor()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    # ------------------------------------------------------------------ cursor

    def _set_cursor_position(self, pos: int) -> None:
        view = self.model.view
        if not view:
            return
        pos = max(0, min(len(view) - 1, pos))
        layer_id = view[pos]
        changed = layer_id != self.cursor_id
        self.cursor_id = layer_id
        newest = self.model.newest_id()
        if layer_id == newest:
            if not self.follow:
                self.follow = True
            self.new_while_paused = 0
        elif self.follow:
            self.follow = False
        self._scroll_to_cursor()
        self.refresh()
        if changed:
            self.post_message(self.Highlighted(self, layer_id))

    def move_cursor_to(self, layer_id: int) -> None:
        pos = self.model.position(layer_id)
        if pos is not None:
            self._set_cursor_position(pos)

    def action_cursor_up(self) -> None:
        pos = self.cursor_position
        self._set_cursor_position((pos if pos is not None else 1) - 1)

    def action_cursor_down(self) -> None:
        pos = self.cursor_position
        self._set_cursor_position((pos if pos is not None else -1) + 1)

    def action_page_up(self) -> None:
        pos = self.cursor_position or 0
        self._set_cursor_position(pos - self.body_height)

    def action_page_down(self) -> None:
        pos = self.cursor_position or 0
        self._set_cursor_position(pos + self.body_height)

    def action_first(self) -> None:
        self._set_cursor_position(0)

    def action_last(self) -> None:
        self._set_cursor_position(len(self.model.view) - 1)

    def action_follow(self) -> None:
        """Jump to the newest layer and keep following."""
        newest = self.model.newest_id()
        self.follow = True
        self.new_while_paused = 0
        if newest is not None:
            self.move_cursor_to(newest)

    def action_scroll_left_cols(self) -> None:
        self.scroll_to(x=max(0, self.scroll_x - 8), animate=False)

    def action_scroll_right_cols(self) -> None:
        self.scroll_to(x=self.scroll_x + 8, animate=False)

    def action_select(self) -> None:
        if self.cursor_id is not None:
            self.post_message(self.Selected(self, self.cursor_id))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            key = self.column_at(offset.x)
            if key is not None:
                self.sort_by(key)
            return
        pos = round(self.scroll_y) + offset.y - 1
        if 0 <= pos < len(self.model.view):
            self._set_cursor_position(pos)
            if event.chain >= 2:
                self.action_select()

    def column_at(self, x: int) -> Optional[str]:
        """The column under screen column ``x`` (frozen columns do not scroll)."""
        if x >= self._frozen_width:
            x += round(self.scroll_x)
        at = 1
        widths = self._widths
        for col in self._columns:
            w = widths[col.key] + 1
            if at <= x < at + w:
                return col.key
            at += w
        return None

    # ------------------------------------------------------------------ rendering

    def render_lines(self, crop: Any) -> list[Strip]:
        # One style lookup per repaint, not per line (it walks the DOM).
        self._base_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._base_style = None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x = round(self.scroll_x)
        base = self._base_style or self.rich_style
        if y == 0:
            strip = self._header_strip()
        else:
            pos = round(self.scroll_y) + y - 1
            row = self.model.row_at(pos)
            if row is None:
                return Strip.blank(width, base)
            strip = self._row_strip(row, pos)
        frozen = self._frozen_width
        if scroll_x <= 0 or frozen >= width:
            return strip.crop_extend(scroll_x, scroll_x + width, base)
        # the frozen columns stay; the rest scrolls under them
        return Strip.join([strip.crop_extend(0, frozen, base),
                           strip.crop_extend(frozen + scroll_x, scroll_x + width, base)])

    def _header_strip(self) -> Strip:
        key = ("header", self.model.sort_key, self.model.sort_reverse)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        header = self.get_component_rich_style("layer-table--header")
        sorted_style = self.get_component_rich_style("layer-table--header-sorted")
        widths = self._widths
        segs = [Segment(" ", header)]
        for col in self._columns:
            title = col.title
            style = header
            if col.key == self.model.sort_key or SAME_ORDER.get(col.key) == self.model.sort_key:
                arrow = "▼" if self.model.sort_reverse else "▲"
                w = widths[col.key]
                title = title + arrow if len(title) < w else title[:max(0, w - 1)] + arrow
                style = sorted_style
            segs.append(Segment(format_cell(title, widths[col.key], col.numeric) + " ", style))
        strip = Strip(segs)
        self._cache[key] = strip
        return strip

    def _row_strip(self, row: Any, pos: int) -> Strip:
        is_cursor = row.id == self.cursor_id
        is_new = row.id in self._flashing and self.model.is_new(row)
        if not is_new:
            self._flashing.discard(row.id)
        focused = self.has_focus
        # a share moves when any layer runs again: the model's time_version says when
        key = (row.id, row.version, is_cursor, is_new, pos % 2, focused, self.model.time_version)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        base = self._base_style or self.rich_style
        if is_cursor:
            style = base + self.get_component_rich_style("layer-table--cursor")
        elif is_new:
            style = base + self.get_component_rich_style("layer-table--new")
        elif pos % 2:
            style = base + self.get_component_rich_style("layer-table--even")
        else:
            style = base
        widths = self._widths
        cells = row.cells
        # Cells sharing a style are joined into one segment (a row is ~3 segments, not ~27).
        segs: list[Segment] = []
        run: list[str] = [" "]
        run_style = style
        for col in self._columns:
            cell_style = style
            if col.key == "share":
                text = format_cell(self.model.share_cell(row, widths["share"]), widths["share"], True) + " "
                if not is_cursor:
                    cell_style = style + self.get_component_rich_style("layer-table--share")
            else:
                text = format_cell(cells.get(col.key, ""), widths[col.key], col.numeric) + " "
            if col.key == "verdict" and row.result is not None and not is_cursor:
                cls = _VERDICT_CLASS.get(row.result.verdict)
                if cls:
                    cell_style = style + self.get_component_rich_style(f"layer-table--{cls}")
            elif col.key == "id" and not is_cursor:
                cell_style = style + self.get_component_rich_style("layer-table--dim")
            if cell_style is not run_style:
                segs.append(Segment("".join(run), run_style))
                run, run_style = [], cell_style
            run.append(text)
        segs.append(Segment("".join(run), run_style))
        strip = Strip(segs)
        self._cache[key] = strip
        return strip

    def tick_flash(self) -> None:
        """Called by the screen's timer: un-highlight rows whose 'new' time ran out."""
        if self._flashing:
            now = self.model.clock()
            expired = [i for i in self._flashing if not self.model.is_new(self.model.rows[i], now)]
            if expired:
                self._flashing.difference_update(expired)
                self.refresh()

    # ------------------------------------------------------------------ reading

    def visible_text(self) -> list[str]:
        """The table's lines as plain text (header first), for tests and debugging."""
        lines = []
        for y in range(self.body_height + 1):
            strip = self.render_line(y)
            lines.append("".join(seg.text for seg in strip).rstrip())
        return lines

    def row_text(self, layer_id: int) -> dict[str, str]:
        """The row's cells as drawn (the share, drawn from the model's totals, with them)."""
        row = self.model.rows.get(layer_id)
        return dict(row.cells, share=self.model.share_cell(row)) if row else {}

    @property
    def selected_snapshot(self) -> Optional[Any]:
        if self.cursor_id is None:
            return None
        row = self.model.rows.get(self.cursor_id)
        return row.snapshot if row else None


__all__ = ["LayerTable", "RunSummary"]

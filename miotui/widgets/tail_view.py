"""The raw-log pane: the selected layer's source lines, then the live tail of the log.

A Line-API widget holding at most a few thousand short lines (the layer's kept block
plus the follower's bounded tail), so a million-line log never becomes a million
widgets or a million-line buffer.  It sticks to the bottom while the user has not
scrolled up, like ``tail -f``.
"""

from __future__ import annotations

from typing import Optional, Sequence

from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

#: Lines of the tail shown (the follower keeps more; this is what the pane renders).
TAIL_SHOWN = 500

#: Control characters (an escape sequence in a log must not reach the terminal) -> visible marks.
_CONTROL = {i: 0x2400 + i for i in range(32) if i != 9}
_CONTROL[127] = 0x2421


def printable(text: str) -> str:
    """``text`` safe to draw: tabs expanded, control characters shown as symbols (␛)."""
    return text.expandtabs(4).translate(_CONTROL)


class TailView(ScrollView, can_focus=True):
    """Two sections in one Line-API widget: the selected layer's source lines pinned at
    the top (at most half the height), and the live tail scrolling below them."""

    COMPONENT_CLASSES = {"tail-view--gutter", "tail-view--title", "tail-view--layer"}

    DEFAULT_CSS = """
    TailView {
        background: $surface-darken-1;
        color: $foreground;
        & > .tail-view--gutter { color: $foreground-muted; }
        & > .tail-view--title { text-style: bold; color: $accent; background: $panel; }
        & > .tail-view--layer { color: $text-success; }
    }
    """

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes)
        self._pinned: list[tuple[str, str, str]] = []  # (kind, gutter, text)
        self._lines: list[tuple[str, str, str]] = []
        self._gutter = 6
        self._stick = True

    @property
    def pinned_height(self) -> int:
        return min(len(self._pinned), max(2, self.size.height // 2))

    def set_content(self, layer_title: str, layer_lines: Sequence[tuple[int, str]],
                    tail: Sequence[tuple[str, int, str]]) -> None:
        """Replace the content: the layer's block (pinned), then the live tail."""
        pinned: list[tuple[str, str, str]] = []
        if layer_title:
            pinned.append(("title", "", layer_title))
            for n, text in layer_lines:
                pinned.append(("layer", str(n), printable(text)))
        multi = len({label for label, _, _ in tail}) > 1
        shown = list(tail)[-TAIL_SHOWN:]
        lines: list[tuple[str, str, str]] = [("title", "", f"live tail (last {len(shown)} lines)")]
        for label, n, text in shown:
            gutter = f"{label.rsplit('/', 1)[-1]}:{n}" if multi and label else str(n)
            lines.append(("tail", gutter, printable(text)))
        at_bottom = self._stick or self.scroll_y >= self.max_scroll_y - 1
        self._pinned = pinned
        self._lines = lines
        everything = pinned + lines
        self._gutter = max([len(g) for _, g, _ in everything] + [4])
        width = self._gutter + 3 + max([len(t) for _, _, t in everything] + [0])
        self.virtual_size = Size(min(width, 4000), self.pinned_height + len(lines))
        if at_bottom:
            self._stick = True
            self._scroll_bottom()
            self.call_after_refresh(self._scroll_bottom)   # again once laid out (just shown: no size yet)
        self.refresh()

    def _scroll_bottom(self) -> None:
        if self._stick:
            self.scroll_to(y=max(0, self.max_scroll_y), animate=False, immediate=True)

    def on_resize(self) -> None:
        if self._lines:
            self.virtual_size = Size(self.virtual_size.width, self.pinned_height + len(self._lines))
            self.call_after_refresh(self._scroll_bottom)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if self.size.height:   # a hidden pane (no size yet) says nothing about the user's intent
            self._stick = new >= self.max_scroll_y - 1

    @property
    def plain_lines(self) -> list[str]:
        return [(f"{g:>{self._gutter}} │ " if k != "title" else "") + t
                for k, g, t in self._pinned + self._lines]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        pinned = self.pinned_height
        if y < pinned:
            item = self._pinned[y] if y < pinned - 1 or len(self._pinned) == pinned else \
                ("title", "", f"… {len(self._pinned) - pinned + 1} more lines (enter: the detail screen)")
        else:
            idx = round(self.scroll_y) + y - pinned
            if idx >= len(self._lines):
                return Strip.blank(width, base)
            item = self._lines[idx]
        kind, gutter, text = item
        if kind == "title":
            style = base + self.get_component_rich_style("tail-view--title")
            return Strip([Segment(("── " + text + " ").ljust(width), style)]).crop(0, width)
        gstyle = base + self.get_component_rich_style("tail-view--gutter")
        tstyle = base + self.get_component_rich_style("tail-view--layer") if kind == "layer" else base
        segs = [Segment(f"{gutter:>{self._gutter}} │ ", gstyle), Segment(text, tstyle)]
        sx = round(self.scroll_x)
        return Strip(segs).crop_extend(sx, sx + width, base)

"""The raw-log pane: the log file around each sighting of the selected layer, like lnav.

The whole file is the scroll range (one line per file line), read on demand through
:class:`~miotui.sources.context.LogContext` in worker threads: the UI thread only renders
lines it already holds (blocks of ``BLOCK`` lines in a bounded LRU cache) and asks for
the missing ones.  So a 20 GB log costs what is on screen, never the file.

Keys (when the pane has focus): ``n``/``N`` the next/previous sighting of the layer
(or, while a search is active, the next/previous match), ``/`` search (wraps around
the file's ends), ``escape`` ends the search, ``w`` wraps long lines, ``home``/``end``
the file's start and end (at the end the pane follows a growing log, like ``tail -f``).

A log read from stdin has no file to read back: the pane shows the lines miotui kept
of the layer's first sighting and says so.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from rich.segment import Segment
from textual import events, on, work
from textual.actions import SkipAction
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from miotui.safe_text import visible

#: lines per block read at once and cached
BLOCK = 256
#: blocks kept (64 x 256 = 16k lines, a few MB at most)
BLOCKS_KEPT = 64
#: bytes the index may read per step while following a growing file
INDEX_BUDGET = 64 << 20
#: lines shown above a sighting when jumping to it
CONTEXT_ABOVE = 5


class LogView(ScrollView, can_focus=True):
    """A file shown from a sparse line index; sightings marked in the gutter."""

    BINDINGS = [
        Binding("n", "next_mark", "Next sighting", id="log.next"),
        Binding("N", "previous_mark", "Previous sighting", id="log.previous"),
        Binding("slash", "search", "Search log", id="log.search"),
        Binding("escape", "end_search", "End search", show=False, id="log.end_search"),
        Binding("w", "toggle_wrap", "Wrap", id="log.wrap"),
        Binding("up,k", "scroll_lines(-1)", "Up", show=False, id="log.up"),
        Binding("down,j", "scroll_lines(1)", "Down", show=False, id="log.down"),
        Binding("pageup", "scroll_lines(-20)", "Page up", show=False, id="log.page_up"),
        Binding("pagedown", "scroll_lines(20)", "Page down", show=False, id="log.page_down"),
        Binding("home,g", "file_start", "File start", show=False, id="log.start"),
        Binding("end,G", "file_end", "File end / follow", show=False, id="log.end"),
    ]

    COMPONENT_CLASSES = {"log-view--gutter", "log-view--mark", "log-view--match", "log-view--current"}

    DEFAULT_CSS = """
    LogView {
        background: $surface-darken-1;
        color: $foreground;
        & > .log-view--gutter { color: $foreground-muted; }
        & > .log-view--mark { color: $text-success; text-style: bold; }
        & > .log-view--current { background: $success 25%; }
        & > .log-view--match { background: $warning 40%; }
    }
    """

    class StateChanged(Message):
        """The header should say something new (sighting, search, position)."""

    class SearchRequested(Message):
        """``/`` pressed: the pane should show its search box."""

    class BlocksLoaded(Message):
        def __init__(self, generation: int, blocks: dict[int, list[str]], known: int, error: str) -> None:
            super().__init__()
            self.generation, self.blocks, self.known, self.error = generation, blocks, known, error

    class SearchDone(Message):
        def __init__(self, generation: int, needle: str, line: Optional[int], wrapped: bool) -> None:
            super().__init__()
            self.generation, self.needle, self.line, self.wrapped = generation, needle, line, wrapped

    def __init__(self, *, id: Optional[str] = None) -> None:
        super().__init__(id=id)
        self.context: Any = None            # LogContext of the file shown (None: kept lines only)
        self.path = ""
        self.known = 0                      # lines the index knows
        self.marks: list[int] = []          # sightings' line numbers
        self.mark = -1                      # the sighting last jumped to
        self.kept: list[tuple[int, str]] = []   # stdin: the kept lines of the first sighting
        self.note = ""
        self.search = ""
        self.match: Optional[int] = None
        self.wrap = False
        self._blocks: LRUCache[int, list[str]] = LRUCache(BLOCKS_KEPT)
        self._asked: set[int] = set()
        self._generation = 0
        self._stick = False
        self._max_width = 0
        self._pending_jump: Optional[int] = None
        self._missing: set[int] = set()

    # ------------------------------------------------------------------ what to show

    def show(self, context: Any, path: str, marks: Sequence[int], kept: Sequence[tuple[int, str]] = (),
             note: str = "") -> None:
        """Show ``path`` (through ``context``) at its first sighting, or, without a
        context, the ``kept`` lines."""
        same_file = context is self.context and context is not None
        self.context = context
        self.path = path
        self.marks = sorted(set(m for m in marks if m > 0))
        self.kept = list(kept)
        self.note = note
        self.mark = -1
        self.match = None
        if not same_file:
            self._generation += 1
            self._blocks.clear()
            self._asked.clear()
            self.known = 0 if context is not None else len(self.kept)
            self._max_width = 0
        if context is None:
            self.virtual_size = Size(self._gutter() + max([len(t) for _, t in self.kept] + [0]), len(self.kept))
            self.scroll_to(0, 0, animate=False, immediate=True, force=True)
            self.refresh()
        elif self.marks:
            self._pending_jump = self.marks[0]
            self.mark = 0
            self._request(self.marks[0])
        else:
            self._request(1)
        self.post_message(self.StateChanged())

    def grew(self) -> None:
        """The log may have grown (a poll saw new lines): extend the index, in a worker."""
        if self.context is not None and self.is_mounted and self.display:
            self._load([], grow=True)

    # ------------------------------------------------------------------ loading (workers)

    def _request(self, line: int) -> None:
        """Make sure the blocks around ``line`` get loaded."""
        block = max(0, (line - 1) // BLOCK)
        want = [b for b in (block - 1, block, block + 1) if b >= 0 and b not in self._blocks
                and b not in self._asked]
        if want:
            self._asked.update(want)
            self._load(want)
        elif self._pending_jump is not None and self.known:
            self._jump(self._pending_jump)

    @work(thread=True, group="log-view", exit_on_error=False)
    def _load(self, blocks: list[int], grow: bool = False) -> None:
        generation, ctx = self._generation, self.context
        if ctx is None:
            return
        out: dict[int, list[str]] = {}
        error = ""
        known = self.known
        try:
            if grow:
                known = ctx.index_to_end(INDEX_BUDGET)
            for b in blocks:
                out[b] = [visible(ln.text, tabsize=4) for ln in ctx.read(b * BLOCK + 1, BLOCK)]
            if not grow:
                known = max(ctx.lines_known, known)
        except OSError as e:
            error = f"cannot read {self.path}: {e.strerror or e}"
        self.post_message(self.BlocksLoaded(generation, out, known, error))

    @on(BlocksLoaded)
    def _blocks_loaded(self, message: BlocksLoaded) -> None:
        message.stop()
        if message.generation != self._generation:
            return
        if message.known > self.known and self.known:
            # the last block was read while its lines were still being written
            for b in [b for b in self._blocks.keys() if b >= self._block_of(self.known)]:
                if b not in message.blocks:
                    self._blocks.discard(b)
        for b, lines in message.blocks.items():
            self._asked.discard(b)
            self._blocks[b] = lines
            self._max_width = max([self._max_width] + [len(t) for t in lines])
        if message.error:
            self.note = message.error
        grown = message.known > self.known
        self.known = max(self.known, message.known)
        self.virtual_size = Size(self._gutter() + self._max_width + 1, self.known)
        if self._pending_jump is not None:
            self._jump(self._pending_jump)
        elif grown and self._stick:
            self.action_file_end()
        self.refresh()
        self.post_message(self.StateChanged())

    # ------------------------------------------------------------------ moving

    def _jump(self, line: int) -> None:
        """Put ``line`` near the top (a few lines of context above it)."""
        self._pending_jump = None
        self._stick = False
        rows = self._rows
        above = min(CONTEXT_ABOVE, max(0, (rows - 1) // 3)) if rows else CONTEXT_ABOVE
        top = max(0, line - 1 - above)
        self._scroll_to_line_index(top)
        self.refresh()

    def _scroll_to_line_index(self, top: int) -> None:
        """Put line ``top + 1`` at the top, now.

        ``force``: Textual scrolls a view only once a layout has given it a scroll bar, and
        the lines that make it scrollable often arrive in the same handler (the first
        blocks of a file, a tail that outgrew the pane); an unforced scroll was then
        dropped and the pane stayed on line 1.  A scroll clamped by a size not yet laid out
        (the pane just shown) is made again once it is."""
        self.scroll_to(y=top, animate=False, immediate=True, force=True)
        if round(self.scroll_y) != top:
            self.call_after_refresh(self.scroll_to, y=top, animate=False, immediate=True, force=True)

    def goto(self, line: int) -> None:
        self._pending_jump = line
        self._request(line)
        if line <= self.known and self._block_of(line) in self._blocks:
            self._jump(line)

    def _load_missing(self) -> None:
        want = sorted(b for b in self._missing if b not in self._blocks and b not in self._asked)
        self._missing.clear()
        if want:
            self._asked.update(want)
            self._load(want)

    @staticmethod
    def _block_of(line: int) -> int:
        return (line - 1) // BLOCK

    def _step_mark(self, step: int) -> None:
        if not self.marks:
            self.app.bell()
            return
        self.mark = (self.mark + step) % len(self.marks)
        self.goto(self.marks[self.mark])
        self.post_message(self.StateChanged())

    def action_next_mark(self) -> None:
        if self.search:
            self.find(self.search, backward=False)
        else:
            self._step_mark(1)

    def action_previous_mark(self) -> None:
        if self.search:
            self.find(self.search, backward=True)
        else:
            self._step_mark(-1)

    def action_search(self) -> None:
        self.post_message(self.SearchRequested())

    def action_end_search(self) -> None:
        if not self.search:
            raise SkipAction()       # escape goes on to the screen (cancel a run, clear the filter)
        if self.search:
            self.search = ""
            self.match = None
            self.refresh()
            self.post_message(self.StateChanged())

    def action_toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        if self.wrap:
            self.scroll_to(x=0, animate=False, immediate=True, force=True)
        self.refresh()
        self.post_message(self.StateChanged())

    def action_scroll_lines(self, n: int) -> None:
        self._stick = False
        self._scroll_to_line_index(max(0, min(self.known - 1, round(self.scroll_y) + n)))

    def action_file_start(self) -> None:
        self._stick = False
        self.goto(1)

    def action_file_end(self) -> None:
        self._stick = True
        top = max(0, self.known - max(1, self._rows))
        self._request(max(1, self.known))
        self._scroll_to_line_index(top)

    @property
    def _rows(self) -> int:
        """Lines on screen: the height less a horizontal scroll bar (a long line brings
        one, and it covers the bottom row)."""
        return self.scrollable_content_region.height

    @property
    def top_line(self) -> int:
        return round(self.scroll_y) + 1

    # ------------------------------------------------------------------ search

    def find(self, needle: str, backward: bool = False) -> None:
        """Jump to the next line (from the top line shown) holding ``needle``."""
        self.search = needle
        if self.context is None or not needle:
            self.refresh()
            return
        start = self.match if self.match is not None else self.top_line - (0 if backward else 1)
        self._find(self._generation, needle, start, backward)

    @work(thread=True, group="log-search", exclusive=True, exit_on_error=False)
    def _find(self, generation: int, needle: str, start: int, backward: bool) -> None:
        ctx = self.context
        if ctx is None:
            return
        try:
            line = ctx.find(needle, start, backward=backward)
        except OSError:
            line = None
        wrapped = line is not None and ((line <= start) if not backward else (line >= start))
        self.post_message(self.SearchDone(generation, needle, line, wrapped))

    @on(SearchDone)
    def _search_done(self, message: SearchDone) -> None:
        message.stop()
        if message.generation != self._generation or message.needle != self.search:
            return
        self.match = message.line
        if message.line is None:
            self.notify(f"not in the log: {message.needle}", severity="warning", timeout=3, markup=False)
        else:
            if message.wrapped:
                self.notify("search wrapped around the end of the log", timeout=2, markup=False)
            self.goto(message.line)
        self.post_message(self.StateChanged())

    # ------------------------------------------------------------------ rendering

    def _gutter(self) -> int:
        return max(6, len(str(max(self.known, 1)))) + 4

    def _line_text(self, number: int) -> Optional[str]:
        if self.context is None:
            return self.kept[number - 1][1] if 0 < number <= len(self.kept) else None
        block = self._blocks.get(self._block_of(number))
        if block is None:
            if not self._missing:
                self.call_later(self._load_missing)      # never start work while rendering
            self._missing.add(self._block_of(number))
            return None
        i = (number - 1) % BLOCK
        return block[i] if i < len(block) else None

    def _number(self, index: int) -> int:
        """The line number shown for the ``index``-th line (1-based) of the view."""
        if self.context is None:
            return self.kept[index - 1][0] if 0 < index <= len(self.kept) else index
        return index

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        gutter_w = self._gutter()
        text_w = max(10, width - gutter_w)
        index, part = self._locate(y, text_w)
        if index > self.known:
            return Strip.blank(width, base)
        number = self._number(index)
        text = self._line_text(index)
        style = base
        marked = number in self.marks
        if self.match is not None and number == self.match:
            style = base + self.get_component_rich_style("log-view--match")
        elif marked and self.mark >= 0 and self.marks[self.mark] == number:
            style = base + self.get_component_rich_style("log-view--current")
        gstyle = base + self.get_component_rich_style("log-view--mark" if marked else "log-view--gutter")
        if part == 0:
            gutter = ("▶" if marked else " ") + f"{number:>{gutter_w - 4}} │ "
        else:
            gutter = " " * (gutter_w - 2) + "│ "
        if text is None:
            body = [Segment("…", base + self.get_component_rich_style("log-view--gutter"))]
        elif self.wrap:
            body = [Segment(text[part * text_w:(part + 1) * text_w], style)]
        else:
            sx = round(self.scroll_x)
            body = [Segment(text[sx:sx + text_w], style)]
        return Strip([Segment(gutter, gstyle), *body]).crop_extend(0, width, style if text else base)

    def _locate(self, y: int, text_w: int) -> tuple[int, int]:
        """(line index, wrapped part) shown on screen row ``y``."""
        top = round(self.scroll_y) + 1
        if not self.wrap:
            return top + y, 0
        index, row = top, 0
        while True:
            text = self._line_text(index) if index <= self.known else ""
            parts = max(1, -(-len(text or "") // text_w))
            if row + parts > y:
                return index, y - row
            row += parts
            index += 1
            if index > self.known:
                return self.known + 1, 0

    def on_resize(self, event: events.Resize) -> None:
        self.refresh()

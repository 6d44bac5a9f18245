"""Repeated API blocks handled as whole texts: the scanner's fast path for API traces.

An API trace is ~15 lines per call and a training log repeats the same calls every
iteration.  Finding a block's ``}`` and looking its whole text up costs a few C-level string
operations instead of a Python step per line; a block text seen before reuses its decoded
events while the trace decoder's remembered state (data types of descriptors) is unchanged.
``BlockCache``, owned by the scanner, finds such a block and keeps its decoded events; the
scanner records them.  The line-by-line path must give the same catalog
(``LogScanner.whole_blocks = False``, tested).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional

from miotui.events import Event, Sighting
from miotui.formats.miopen.line_cache import LineCache
from miotui.formats.miopen.lines import BARE_CLOSE, BARE_HEADER, BARE_PARAM, CLOSE, HEADER, PARAM
from miotui.sources import MAX_LINE

#: Lines kept per open API block (a block is ~20 lines; more means a lost `}`).
MAX_BLOCK_LINES = 400

#: Whole API blocks recognised by their text (see ``BlockCache.find``): at most this
#: many characters per block, and a cache bounded like the line cache.
MAX_FAST_BLOCK = 32_768
BLOCK_CACHE_SIZE = 20_000
BLOCK_CACHE_CHARS = 24_000_000

class _BlockEntry:
    """A validated whole-block text (see ``BlockCache.find``): its thread, header,
    parameters and lines, and, for a pure block, the events decoded under the trace
    decoder's ``version`` and whether they are one plain API call."""

    __slots__ = ("tid", "header", "params", "raw", "pure", "version", "events", "plain")

    def __init__(self, tid: str, header: str, params: tuple, raw: tuple[str, ...], pure: bool):
        self.tid, self.header, self.params, self.raw, self.pure = tid, header, params, raw, pure
        self.version = -1
        self.events: list[Event] = []
        self.plain = False


class BlockCache:
    """Whole API-block texts met before (see the module docstring).  ``bare_close``: the last
    block ended with a bare ``}`` (MIOpen 1.x), the path's guess at how the next one ends (a
    wrong guess just sends the block line by line); ``hits``: blocks whose events were reused
    by their text, without the trace decoder (for tests)."""

    __slots__ = ("entries", "chars", "bare_close", "hits")

    def __init__(self) -> None:
        self.entries: dict[str, object] = {}   # block text -> its _BlockEntry, or False
        self.chars = 0
        self.bare_close = False
        self.hits = 0

    def clear(self) -> None:
        self.entries.clear()
        self.chars = 0

    def find(self, text: str, start: int, header_end: int, end: int, lines: LineCache, open_blocks: dict,
             is_pure: Callable[[str], bool]) -> Optional[tuple[_BlockEntry, int]]:
        """The API block whose header line is ``text[start:header_end]``, as one unit: (its
        entry, the position after its ``}``), or None where the line-by-line path must decide
        (not a header, a block of its thread already open in ``open_blocks``, no ``}``
        before ``end``, other lines inside)."""
        line = text[start:header_end]
        c = lines.entries.get(line)
        if c is None:
            if len(line) > MAX_LINE:
                return None
            line, c = lines.classify_new(line)
        if c[0] == HEADER:
            tid, header = c[1], c[2]
            # MIOpen 1.x prefixes only the header: its blocks end with a bare "}"
            close = "\n}" if self.bare_close else c[3]
            if close is None:
                return None
        elif c[0] == BARE_HEADER:
            tid, header, close = "", c[1], "\n}"
        else:
            return None
        if tid in open_blocks:
            return None
        e = text.find(close, header_end, min(end, start + MAX_FAST_BLOCK))
        if e < 0:
            return None
        after = e + len(close)
        if after < end and text[after] != "\n":
            return None
        body = text[start:after]
        entry = self.entries.get(body)
        if entry is None:
            entry = self._entry(body, tid, header, lines, is_pure)
            self.chars += len(body)
            if len(self.entries) >= BLOCK_CACHE_SIZE or self.chars > BLOCK_CACHE_CHARS:
                self.entries.clear()
                self.chars = len(body)
            self.entries[body] = entry
        if entry is False:
            return None
        return entry, after   # type: ignore[return-value]

    def events(self, entry: _BlockEntry, version: int, decode: Callable[[str, tuple], list[Event]],
               waits_for_dtype: Callable[[Sighting], bool]) -> tuple[list[Event], bool]:
        """A found block's events (reused while the trace decoder's state ``version`` is the
        one they were decoded under), and whether they are one plain call (one sighting that
        is no mention and waits for no data type)."""
        if entry.pure and entry.version == version:
            self.hits += 1
            return entry.events, entry.plain
        events = decode(entry.header, entry.params)
        plain = len(events) == 1 and type(events[0]) is Sighting and events[0].role != "mention" and \
            not waits_for_dtype(events[0])
        if entry.pure:
            entry.version, entry.events, entry.plain = version, events, plain
        return events, plain

    @staticmethod
    def share_problem(events: list[Event], problem: object) -> None:
        """The layer's own problem object (its catalog row's) in place of the equal one in a
        found block's plain call (``events``, cached with the entry): the catalog then finds
        the row by identity, where a lookup with an equal object compares every field (about
        a tenth of an API trace's scan, where the row was made by an earlier form of the call)."""
        sighting = events[0]
        if sighting.problem is not problem and sighting.problem == problem:
            events[0] = replace(sighting, problem=problem)

    @staticmethod
    def _entry(body: str, tid: str, header: str, cache: LineCache, is_pure: Callable[[str], bool]):
        """The entry of a block text (whose header line ``find`` has classified) made only of
        that header, its thread's parameter lines and its ``}``; False for any other text."""
        lines = body.split("\n")
        if len(lines) > MAX_BLOCK_LINES:
            return False
        classes = []
        entries = cache.entries
        for line in lines[1:]:
            if len(line) > MAX_LINE:
                return False
            c = entries.get(line)
            if c is None:
                line, c = cache.classify_new(line)
            classes.append(c)
        last = classes[-1]
        params = []
        if last[0] == CLOSE and last[1] == tid:      # 2.0+: every line prefixed
            for c in classes[:-1]:
                if c[0] != PARAM or c[1] != tid:
                    return False
                params.append(c[4])
        elif last[0] == BARE_CLOSE and tid == "":    # 2017-2019: bare body lines
            for c in classes[:-1]:
                if c[0] != BARE_PARAM:
                    return False
                params.append((c[1], c[2]))
        else:
            return False
        return _BlockEntry(tid, header, tuple(params), tuple(lines), is_pure(header))

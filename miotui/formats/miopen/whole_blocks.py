"""Repeated API blocks handled as whole texts: the scanner's fast path for API traces.

An API trace is ~15 lines per call and a training log repeats the same calls every
iteration.  Finding a block's ``}`` and looking its whole text up costs a few C-level string
operations instead of a Python step per line; a block text seen before reuses its decoded
events while the trace decoder's remembered state (data types of descriptors) is unchanged.
``WholeBlocks`` is the part of ``LogScanner`` (which inherits it) that does this; the
line-by-line path must give the same catalog (``LogScanner.whole_blocks = False``, tested).
"""

from __future__ import annotations

from miotui.events import Event, Sighting
from miotui.formats.miopen.lines import BARE_CLOSE, BARE_HEADER, BARE_PARAM, CLOSE, HEADER, PARAM
from miotui.sources import MAX_LINE

#: Lines kept per open API block (a block is ~20 lines; more means a lost `}`).
MAX_BLOCK_LINES = 400

#: Whole API blocks recognised by their text (see ``WholeBlocks._whole_block``): at most this
#: many characters per block, and a cache bounded like the line cache.
MAX_FAST_BLOCK = 32_768
BLOCK_CACHE_SIZE = 20_000
BLOCK_CACHE_CHARS = 24_000_000

class _BlockEntry:
    """A validated whole-block text (see ``WholeBlocks._whole_block``): its thread, header,
    parameters and lines, and, for a pure block, the events decoded under the trace
    decoder's ``version`` and whether they are one plain API call."""

    __slots__ = ("tid", "header", "params", "raw", "pure", "version", "events", "plain")

    def __init__(self, tid: str, header: str, params: tuple, raw: tuple[str, ...], pure: bool):
        self.tid, self.header, self.params, self.raw, self.pure = tid, header, params, raw, pure
        self.version = -1
        self.events: list[Event] = []
        self.plain = False


class WholeBlocks:
    """``LogScanner``'s whole-block path (see the module docstring); its state lives on the scanner."""

    def _whole_block(self, text: str, start: int, header_end: int, end: int) -> int:
        """Handle the API block whose header line is ``text[start:header_end]`` as one unit;
        the position after it, or -1 where the line-by-line path must decide (not a header,
        a block of its thread already open, no ``}`` before ``end``, other lines inside)."""
        line = text[start:header_end]
        c = self._cache.get(line)
        if c is None:
            if len(line) > MAX_LINE:
                return -1
            line, c = self._classify_new(line)
        if c[0] == HEADER:
            tid, header = c[1], c[2]
            # MIOpen 1.x prefixes only the header: its blocks end with a bare "}"
            close = "\n}" if self._bare_close else c[3]
            if close is None:
                return -1
        elif c[0] == BARE_HEADER:
            tid, header, close = "", c[1], "\n}"
        else:
            return -1
        if tid in self._blocks:
            return -1
        e = text.find(close, header_end, min(end, start + MAX_FAST_BLOCK))
        if e < 0:
            return -1
        after = e + len(close)
        if after < end and text[after] != "\n":
            return -1
        body = text[start:after]
        entry = self._whole_blocks.get(body)
        if entry is None:
            entry = self._block_entry(body, tid, header)
            self._whole_chars += len(body)
            if len(self._whole_blocks) >= BLOCK_CACHE_SIZE or self._whole_chars > BLOCK_CACHE_CHARS:
                self._whole_blocks.clear()
                self._whole_chars = len(body)
            self._whole_blocks[body] = entry
        if entry is False:
            return -1
        raw = entry.raw
        n = self.line_no = self.line_no + 1
        self._begin_call(tid)        # at the header line, as the line path does (it may close a Find)
        self.line_no += len(raw) - 1
        self.catalog.lines += len(raw)
        if entry.pure and entry.version == self.trace.state_version:
            self.whole_block_hits += 1
            events, plain = entry.events, entry.plain
        else:
            version = self.trace.state_version
            events = self._block_events(header, entry.params)
            plain = len(events) == 1 and type(events[0]) is Sighting and events[0].role != "mention" and \
                not self._waits_for_dtype(events[0])
            if entry.pure:
                entry.version, entry.events, entry.plain = version, events, plain
        if plain and not self._held:
            # one plain call: what _apply and _sighting would decide, without asking them
            self._add(tid, events[0], n, self._raw_of(n, raw))
        elif events:
            self._apply(events, tid, n, raw[0], self._raw_of(n, raw))
        return after + 1

    def _block_entry(self, body: str, tid: str, header: str):
        """The entry of a block text (whose header line ``_whole_block`` has classified)
        made only of that header, its thread's parameter lines and its ``}``; False for any
        other text."""
        lines = body.split("\n")
        if len(lines) > MAX_BLOCK_LINES:
            return False
        classes = []
        for line in lines[1:]:
            if len(line) > MAX_LINE:
                return False
            c = self._cache.get(line)
            if c is None:
                line, c = self._classify_new(line)
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
        return _BlockEntry(tid, header, tuple(params), tuple(lines), self.trace.is_pure(header))

"""A Chrome trace read one event at a time, as its bytes arrive.

Why not ``json.load``: a trace is one JSON document, and a long profile is hundreds of MB;
parsed whole, Python holds several times that.  The events are the elements of one array
(``"traceEvents": [...]`` in PyTorch's and TensorBoard's files, or the bare array form of the
Chrome format), each a small object, so each is decoded on its own as soon as it is complete
(``json.JSONDecoder.raw_decode`` at an offset: no copy) and the text before it dropped.
Memory is one event (at most ``EVENT_CHARS``) plus the unread chunk; the header before the
array (``record_shapes``, ``deviceProperties``) is kept up to ``HEADER_CHARS``.

A document that breaks (a profile cut short, a damaged file) stops the reading at the break
with the line it is at and the decoder's reason; what came before is kept.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Callable, Literal, Optional

#: the most characters one event may take before it is called malformed
EVENT_CHARS = 4 << 20
#: characters of the document before its event array that are kept (its metadata)
HEADER_CHARS = 1 << 20
#: consumed text dropped from the buffer once this much of it has piled up
COMPACT_CHARS = 1 << 20

_ARRAY_KEY = re.compile(r'"traceEvents"\s*:\s*\[')
_SPACE = re.compile(r"[\s,]*")

Sink = Callable[[dict, int], None]
#: where the reader is: before the event array, in it, after it, or stopped at a break
State = Literal["header", "events", "tail", "broken"]


class TraceError(ValueError):
    """The document is not a trace or breaks; the message says where and why."""


class EventReader:
    """Feeds a trace's bytes in; calls ``sink(event, line)`` for every event object of its
    event array, ``line`` being the 1-based line the event starts at."""

    def __init__(self, sink: Sink):
        self.sink = sink
        self._decoder = json.JSONDecoder()
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._buf = ""
        self._pos = 0
        self._line = 1          # the line of self._buf[0]
        self._state: State = "header"
        self.header = ""
        self.events = 0
        self.error: Optional[str] = None
        self.error_line = 0

    @property
    def line_no(self) -> int:
        return self._line + self._buf.count("\n", 0, self._pos)

    def feed(self, data: bytes) -> None:
        if self._state in ("tail", "broken"):
            return
        self._buf += self._utf8.decode(data)
        self._run(final=False)

    def finish(self) -> None:
        if self._state in ("tail", "broken"):
            return
        self._buf += self._utf8.decode(b"", final=True)
        self._run(final=True)
        if self._state == "header":
            self._break("no event array (\"traceEvents\": [...]) was found: not a Chrome trace")
        elif self._state == "events":
            self._break("the trace ends inside its event array (a profile cut short?)")

    def _break(self, why: str) -> None:
        self.error_line = self.line_no
        self.error = f"line {self.error_line}: {why}"
        self._line = self.error_line
        self._state = "broken"
        self._buf = ""
        self._pos = 0

    def _run(self, final: bool) -> None:
        if self._state == "header" and not self._find_array(final):
            return
        buf = self._buf
        pos = self._pos
        decode = self._decoder.raw_decode
        sink = self.sink
        line, counted = self._line, 0   # the line at ``counted`` (newlines are counted once)
        while True:
            pos = _SPACE.match(buf, pos).end()
            if pos >= len(buf):
                break
            if buf[pos] == "]":
                self._state = "tail"
                self._line += buf.count("\n")   # the document's end: its last line
                self._buf = ""
                self._pos = 0
                return
            try:
                event, end = decode(buf, pos)
            except json.JSONDecodeError as e:
                self._pos = pos
                if final and not buf[e.pos:].strip():
                    self._break("the trace ends inside an event (a profile cut short?)")
                elif final or len(buf) - pos > EVENT_CHARS:
                    self._break(f"the trace's JSON breaks here ({e.msg}); the events after it are not read")
                return
            if type(event) is dict:
                self.events += 1
                line += buf.count("\n", counted, pos)
                counted = pos
                sink(event, line)
            pos = end
            self._pos = pos
        self._pos = pos
        self._advance()

    def _advance(self) -> None:
        """Drop the text before the read position (kept until COMPACT_CHARS pile up: each
        drop copies the rest)."""
        if self._pos >= COMPACT_CHARS or self._pos == len(self._buf):
            self._line += self._buf.count("\n", 0, self._pos)
            self._buf = self._buf[self._pos:]
            self._pos = 0

    def _find_array(self, final: bool) -> bool:
        buf = self._buf
        start = _SPACE.match(buf).end()
        if start < len(buf) and buf[start] == "[":   # the bare array form
            self._pos = start + 1
            self._state = "events"
            return True
        if start < len(buf) and buf[start] != "{":
            self._break("a Chrome trace starts with { or [")
            return False
        m = _ARRAY_KEY.search(buf)
        if m is None:
            if len(buf) > HEADER_CHARS:
                self._break(f"no event array in the first {HEADER_CHARS:,} characters: not a Chrome trace")
            return False
        self.header = buf[:m.start()][:HEADER_CHARS]
        self._pos = m.end()
        self._state = "events"
        return True


def looks_like_trace(head: bytes) -> bool:
    """Whether a file's first bytes are a Chrome trace's (PyTorch profiler, TensorBoard's
    ``*.pt.trace.json``): a JSON object naming ``traceEvents``, or an array of events."""
    text = head[:HEADER_CHARS].decode("utf-8", "replace").lstrip()
    if text.startswith("{"):
        return _ARRAY_KEY.search(text) is not None
    return text.startswith("[") and re.match(r'\[\s*\{\s*"(ph|name|cat|ts|pid)"\s*:', text) is not None

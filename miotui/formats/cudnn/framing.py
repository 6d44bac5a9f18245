"""Bytes in, whole cuDNN records out: the framing of every public form of a cuDNN log.

Why records and not lines: a cuDNN call is one multi-line record (a header naming the
function, an indented body, a ``Time:``/``Process=`` trailer).  Records are split where the
next one *starts* (its header, or a cudnn-frontend line), never on blank lines: a ``W!``
record's traceback can hold an empty line, and cuDNN 8 and 9 put one or two blank lines
between records.  What is not inside a record (a framework's chatter before the first
header) is counted as ``loose_lines``.

Streaming, with bounded memory whatever the input: only the record being read is held, at
most ``RECORD_CHARS`` of it (a whole-line prefix; the header line at most ``HEADER_CHARS``);
the lines past the cap are counted (``Record.dropped_lines``/``dropped_chars``), never kept.
An unterminated line is held up to ``LINE_CHARS``.  Every cut is made on the record's own
text, so any split of the input into chunks gives the same records (tests/unit/test_cudnn_fuzz.py).
"""

from __future__ import annotations

import codecs
import re
from typing import Callable, NamedTuple

#: the most characters of one record kept (a ResNet-50 record is at most ~8 KB; a
#: ``Visualize`` JSON line ~3 KB)
RECORD_CHARS = 256 * 1024
#: the most characters of a header line kept (a frontend graph's JSON is its header line)
HEADER_CHARS = 64 * 1024
#: an unterminated line is held up to this many characters; the rest is counted
LINE_CHARS = RECORD_CHARS + 1

#: where a unit starts: a backend API record (``I!``/``W!``/``E!``; the documentation's
#: ``cuDNN (v…)``; the ``┌ Debug:`` callback form), a cudnn-frontend line, or a frontend v1
#: graph JSON line, or TensorFlow/XLA's description of a convolution it hands to cuDNN
_STARTS = (r"[IWE]! CuDNN \(v|cuDNN \(v\d+[ )]|┌ Debug: CuDNN \(v|\[cudnn_frontend\]|\{\"context\":"
           r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [EWI] \S{0,120}cuda_dnn\.cc:\d+\] [^\n]{0,200}convolution:\r?$")
ANCHOR = re.compile(f"^(?:{_STARTS})", re.M)
#: the same after a newline: a pattern that starts with a literal is searched for at C speed
#: (from one newline to the next) instead of being tried at every character (4x faster here)
_AFTER_NEWLINE = re.compile(f"\n(?={_STARTS})", re.M)


class Record(NamedTuple):
    """One unit of the log: its first line's number (1-based) and its kept text.  (A named
    tuple, an immutable value that is quicker to make than a frozen dataclass: a log has one
    per call, 54,628 in 50 MB.)"""

    line: int
    text: str
    #: lines (and characters) of this unit past the caps: counted, not kept
    dropped_lines: int = 0
    dropped_chars: int = 0


class RecordFramer:
    """Feeds bytes, hands each complete record to ``emit`` (in log order)."""

    def __init__(self, emit: Callable[[Record], None]):
        self._emit = emit
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.line_no = 0            # complete lines read so far
        self.chars = 0
        self.loose_lines = 0        # lines outside any unit
        self._partial = ""          # the unterminated last line (its first LINE_CHARS)
        self._partial_over = 0      # characters of it past LINE_CHARS
        self._open: list[str] = []  # kept lines of the open record
        self._open_chars = 0
        self._open_line = 0         # 0: no open record
        self._open_full = False     # a line was dropped: nothing more is kept
        self._dropped_lines = 0
        self._dropped_chars = 0

    def feed(self, data: bytes) -> None:
        self._text(self._decoder.decode(data))

    def finish(self) -> None:
        """End of input: the last unterminated line counts as a line; the open record ends."""
        self._text(self._decoder.decode(b"", final=True))
        if self._partial or self._partial_over:
            self._text("\n")
        self._close()

    # ------------------------------------------------------------------ internals

    def _text(self, text: str) -> None:
        if not text:
            return
        self.chars += len(text)
        cut = text.rfind("\n")
        if cut < 0:
            self._hold(text)
            return
        if self._partial_over:   # the held overlong line ends here: its head stands for it
            first = text.find("\n")
            head, over = self._partial, self._partial_over + first
            self._partial, self._partial_over = "", 0
            self._lines(head + "\n", over)
            if first < cut:
                self._lines(text[first + 1:cut + 1], 0)
            rest = text[cut + 1:]
        else:
            head = self._partial + text[:cut + 1]
            self._partial = ""
            rest = text[cut + 1:]
            self._lines(head, 0)
        if rest:
            self._hold(rest)

    def _hold(self, text: str) -> None:
        room = LINE_CHARS - len(self._partial)
        if self._partial_over or len(text) > room:
            if room > 0:
                self._partial += text[:room]
                text = text[room:]
            self._partial_over += len(text)
        else:
            self._partial += text

    def _lines(self, block: str, over: int) -> None:
        """Whole lines (``block`` ends with a newline).  ``over``: characters of its first
        line that were not kept (an overlong line)."""
        base = self.line_no
        starts = [m.start() + 1 for m in _AFTER_NEWLINE.finditer(block)]
        if ANCHOR.match(block):
            starts.insert(0, 0)
        if not starts:
            self._body(block, 0, len(block), over)
            self.line_no = base + block.count("\n")
            return
        if starts[0] > 0:   # the rest of the open record (or loose lines)
            self._body(block, 0, starts[0], over)
            over = 0
        seen = block.count("\n", 0, starts[0])
        self._close()
        last = len(starts) - 1
        emit = self._emit
        for i, start in enumerate(starts):
            end = starts[i + 1] if i < last else len(block)
            lines = block.count("\n", start, end)
            if i < last and end - start - 1 <= RECORD_CHARS and not (over and start == 0) \
                    and block.find("\n", start, end) - start <= HEADER_CHARS:
                # a whole record within the caps: what the line-by-line path below keeps, in one slice
                emit(Record(base + seen + 1, block[start:end - 1]))
            else:
                self._open_line = base + seen + 1
                self._body(block, start, end, over if start == 0 else 0)
                if i < last:
                    self._close()
            seen += lines
        self.line_no = base + seen

    def _body(self, block: str, start: int, end: int, over: int) -> None:
        """Lines ``block[start:end]`` belong to the open record (or to no record)."""
        if start >= end:
            return
        if not self._open_line:
            self.loose_lines += block.count("\n", start, end)
            return
        if not self._open:   # the header line: kept, at most HEADER_CHARS of it
            nl = block.find("\n", start, end)
            header = block[start:nl]
            if len(header) > HEADER_CHARS or over:
                self._dropped_chars += len(header) - HEADER_CHARS + over if len(header) > HEADER_CHARS else over
                header = header[:HEADER_CHARS]
            self._open.append(header)
            self._open_chars = len(header)
            start, over = nl + 1, 0
            if start >= end:
                return
        if self._open_full:
            self._drop(block, start, end, over)
            return
        if self._open_chars + (end - start) <= RECORD_CHARS and not over:
            self._open.append(block[start:end - 1])
            self._open_chars += end - start
            return
        while start < end:   # line by line: the longest whole-line prefix that fits
            nl = block.find("\n", start, end)
            size = nl + 1 - start
            if over or self._open_chars + size > RECORD_CHARS:
                self._open_full = True
                self._drop(block, start, end, over)
                return
            self._open.append(block[start:nl])
            self._open_chars += size
            start = nl + 1

    def _drop(self, block: str, start: int, end: int, over: int) -> None:
        self._dropped_lines += block.count("\n", start, end)
        self._dropped_chars += end - start + over

    def _close(self) -> None:
        if not self._open_line:
            return
        record = Record(self._open_line, "\n".join(self._open), self._dropped_lines, self._dropped_chars)
        self._open = []
        self._open_chars = 0
        self._open_line = 0
        self._open_full = False
        self._dropped_lines = self._dropped_chars = 0
        self._emit(record)

"""Lines of a log file read on demand: the raw-log pane's view of a layer in context.

Why a sparse index: the pane shows the log around each sighting of a layer (as lnav
shows a file around a search hit) in files of any size, a 20 GB training log included.
Holding the file, or one offset per line, is not an option; reading it from the start
for every look is too slow.  So the file is scanned once, forward and only as far as
needed, and every ``STEP``-th line's byte offset is kept (an ``array`` of int64: 8 bytes
per ``STEP`` lines, 800 KB for a billion lines).  A range of lines is then one seek to
the checkpoint before it and a short read.

Lines are numbered as the scanner numbers them (``miotui.formats.miopen.scan``): ``\\n``,
``\\r\\n`` and a lone ``\\r`` each end one line (a ``\\r\\n`` split across two reads is one
line end), the first line is 1.  So the catalog's ``first_line``/``last_line`` of a
layer point at the same text here.

Thread safety: one lock around the index and the file; every call does I/O, so the UI
calls this from a worker thread, never from its own.  ``.gz`` files are read through
``gzip`` (seeking decompresses, so it is slower, but memory stays bounded), and a log in
UTF-16 (Windows PowerShell's ``2>``) through :class:`TranscodedFile`, as the scanner read
it.  A plain file is not kept open between calls (see ``_let_go``).  A file that
shrank or was replaced since it was indexed is re-indexed from its start (``reset``).
"""

from __future__ import annotations

import gzip
import os
import threading
from array import array
from dataclasses import dataclass
from typing import Any, Callable, Optional

from miotui.sources.encoding import SNIFF_BYTES, TextBytes, sniff

#: Lines between two kept offsets.
STEP = 1024
#: Bytes read at a time while indexing or searching.
CHUNK = 1 << 20
#: Characters kept of one line (the rest is cut with a mark).
MAX_LINE_CHARS = 4000


class TranscodedFile:
    """A log in UTF-16/32 (or with a UTF-8 byte order mark) read as the UTF-8 bytes the
    scanner read (``miotui.sources.encoding``), so line numbers and offsets agree with the
    catalog's.  Seeking back decodes again from the start (like a ``.gz``); the index's
    checkpoints are offsets in this UTF-8 stream."""

    def __init__(self, opener: Callable[[], Any]) -> None:
        self._opener = opener
        self._raw: Any = None
        self._text = TextBytes()
        self._pending = b""
        self.pos = 0

    def _restart(self) -> None:
        self.close()
        self._raw = self._opener()
        self._text = TextBytes()
        self._pending = b""
        self.pos = 0

    def read(self, size: int) -> bytes:
        if self._raw is None:
            self._restart()
        while len(self._pending) < size:
            data = self._raw.read(CHUNK)
            if not data:
                if not self._text.decided:
                    self._pending += self._text.flush()
                break      # a character cut by the end of a growing file waits for its rest
            self._pending += self._text.feed(data)
        out, self._pending = self._pending[:size], self._pending[size:]
        self.pos += len(out)
        return out

    def seek(self, target: int) -> None:
        if self._raw is None or target < self.pos:
            self._restart()
        while self.pos < target:
            if not self.read(min(CHUNK, target - self.pos)):
                break

    def close(self) -> None:
        if self._raw is not None:
            self._raw.close()
            self._raw = None


@dataclass(frozen=True)
class Line:
    number: int
    text: str


class LogContext:
    """Random access by line number to one log file, with bounded memory."""

    def __init__(self, path: str, *, step: int = STEP, max_line: int = MAX_LINE_CHARS) -> None:
        self.path = path
        self.step = max(1, step)
        self.max_line = max_line
        self._lock = threading.Lock()
        self._fh: Optional[Any] = None
        self._ident: Optional[tuple[int, int]] = None
        self._plain: Optional[bool] = None     # UTF-8 as it is (None: not looked at yet)
        self.reset_count = 0
        self._reset_index()

    # ------------------------------------------------------------------ index state

    def _reset_index(self) -> None:
        #: offsets[i] is where line i * step + 1 starts
        self._offsets = array("q", [0])
        #: lines ended so far, bytes scanned, where the line being written starts
        self._lines = 0
        self._scanned = 0
        self._line_start = 0
        self._after_cr = False

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def _open(self) -> Any:
        """The open file, re-opened (and the index reset) when the path now names another
        file or the file shrank below what was indexed."""
        st = os.stat(self.path)
        ident = (st.st_dev, st.st_ino)
        if self._ident is not None and (ident != self._ident or (not self._kept() and st.st_size < self._scanned)):
            if self._fh is not None:
                self._fh.close()
                self._fh = None
            self._reset_index()
            self._plain = None
            self.reset_count += 1
        if self._fh is None:
            self._fh = self._open_text()
            self._ident = ident
        return self._fh

    def _open_raw(self) -> Any:
        return gzip.open(self.path, "rb") if self.path.endswith(".gz") else open(self.path, "rb", buffering=0)

    def _open_text(self) -> Any:
        """The file as UTF-8 bytes: as it is, or through :class:`TranscodedFile` when it is
        UTF-16/32 or starts with a byte order mark (decided once per file)."""
        fh = self._open_raw()
        if self._plain is None:
            skip, codec, _name = sniff(fh.read(SNIFF_BYTES))
            self._plain = not (skip or codec)
            fh.seek(0)
        if self._plain:
            return fh
        fh.close()
        return TranscodedFile(self._open_raw)

    def _kept(self) -> bool:
        """The file stays open between calls: reopening it would mean reading it again
        from its start (a ``.gz``, a transcoded file)."""
        return self.path.endswith(".gz") or self._plain is False

    def _let_go(self) -> None:
        """A plain file is closed after each call (reopened by name next time): a pane
        opened on many files must not hold a descriptor for each, which a run or a
        followed file may need."""
        if self._fh is not None and not self._kept():
            self._fh.close()
            self._fh = None

    def _known(self) -> int:
        return self._lines + (1 if self._scanned > self._line_start else 0)

    @property
    def lines_known(self) -> int:
        """Lines indexed so far (a last line still being written included)."""
        with self._lock:
            return self._known()

    # ------------------------------------------------------------------ indexing

    @staticmethod
    def _ends(data: bytes, lo: int, hi: int) -> int:
        """Line ends in ``data[lo:hi]`` (``\r\n`` counted once)."""
        return data.count(b"\n", lo, hi) + data.count(b"\r", lo, hi) - data.count(b"\r\n", lo, hi)

    @staticmethod
    def _next_end(data: bytes, pos: int) -> int:
        """The position just after the first line end at or after ``pos`` (-1: none)."""
        nl = data.find(b"\n", pos)
        cr = data.find(b"\r", pos, nl if nl >= 0 else len(data))
        if cr >= 0:
            return cr + 2 if data[cr + 1:cr + 2] == b"\n" else cr + 1
        return nl + 1 if nl >= 0 else -1

    def _advance(self, data: bytes, pos: int, k: int) -> tuple[int, int]:
        """Pass up to ``k`` line ends from ``pos``: (position after the last one passed,
        how many).  Whole 8 KiB blocks are counted in C; only the block where the k-th
        end lies is walked line by line."""
        size = len(data)
        found = 0
        after = pos
        while found < k and pos < size:
            hi = min(size, pos + 8192)
            if hi < size and data[hi - 1] == 13 and data[hi] == 10:
                hi += 1                                  # never split a "\r\n"
            c = self._ends(data, pos, hi)
            if found + c < k:
                if c:
                    last = max(data.rfind(b"\n", pos, hi), data.rfind(b"\r", pos, hi))
                    after = last + 1
                found += c
                pos = hi
                continue
            while found < k:
                end = self._next_end(data, pos)
                found += 1
                pos = after = end
        return after, found

    def _consume(self, data: bytes) -> None:
        base = self._scanned
        size = len(data)
        pos = 0
        if self._after_cr and data.startswith(b"\n"):
            pos = 1                                      # the "\n" of a "\r\n" split across reads
            if self._line_start == base:
                self._line_start = base + 1
            if self._offsets[-1] == base and len(self._offsets) > 1:
                self._offsets[-1] = base + 1
        every = self._ends(data, pos, size)
        if self._lines + every < len(self._offsets) * self.step:     # no checkpoint in this read
            if every:
                self._lines += every
                self._line_start = base + max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
            pos = size
        while pos < size:
            need = len(self._offsets) * self.step - self._lines
            after, found = self._advance(data, pos, need)
            self._lines += found
            if found:
                self._line_start = base + after
            if found < need:
                break
            self._offsets.append(base + after)
            pos = after
        self._after_cr = data.endswith(b"\r")
        self._scanned = base + size

    def _extend(self, until_line: Optional[int], budget: Optional[int]) -> None:
        """Scan forward from where the index stops, keeping checkpoints, until line
        ``until_line`` is known, the file ends, or ``budget`` bytes were read."""
        fh = self._open()
        fh.seek(self._scanned)
        read = 0
        while until_line is None or self._lines < until_line:
            if budget is not None and read >= budget:
                return
            data = fh.read(CHUNK)
            if not data:
                return
            read += len(data)
            self._consume(data)

    # ------------------------------------------------------------------ reading

    def index_to_end(self, budget: Optional[int] = None) -> int:
        """Index as far as the file goes now (a followed file grows); returns the lines known."""
        with self._lock:
            try:
                self._extend(None, budget)
                return self._known()
            finally:
                self._let_go()

    def read(self, first: int, count: int) -> list[Line]:
        """Lines ``first`` .. ``first + count - 1`` (1-based) that exist, as text (invalid
        UTF-8 replaced, long lines cut).  Callers make the text visible
        (:func:`miotui.safe_text.visible`) before they show it."""
        first = max(1, first)
        if count <= 0:
            return []
        with self._lock:
            try:
                return self._read(first, count)
            finally:
                self._let_go()

    def _read(self, first: int, count: int) -> list[Line]:
        self._extend(first + count, None)
        known = self._known()
        if first > known:
            return []
        slot = (first - 1) // self.step
        line = slot * self.step + 1
        fh = self._open()
        fh.seek(self._offsets[slot])
        out: list[Line] = []
        carry = b""
        after_cr = False
        last = min(first + count - 1, known)
        while line <= last:
            data = fh.read(CHUNK)
            if not data:
                if carry and line >= first:
                    out.append(Line(line, self._text(carry)))
                break
            if after_cr and data.startswith(b"\n"):
                data = data[1:]
            after_cr = data.endswith(b"\r")
            data = carry + data
            pieces = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
            carry = pieces.pop()
            for piece in pieces:
                if line >= first:
                    out.append(Line(line, self._text(piece)))
                line += 1
                if line > last:
                    break
            if len(carry) > self.max_line * 4:
                carry = carry[:self.max_line * 4]
        return out

    def _text(self, raw: bytes) -> str:
        text = raw[:self.max_line * 4].decode("utf-8", "replace")
        if len(text) > self.max_line:
            text = text[:self.max_line] + " …"
        return text

    def find(self, needle: str, start: int, *, backward: bool = False, wrap: bool = True,
             cancel: Optional[threading.Event] = None) -> Optional[int]:
        """The number of the next line after ``start`` (before it, ``backward``) that
        contains ``needle`` (case-insensitive), wrapping around the file's ends when
        ``wrap``; None when no line does (or on ``cancel``)."""
        needle = needle.lower()
        if not needle:
            return None
        total = self.index_to_end()
        if total == 0:
            return None
        block = 4096
        order: list[tuple[int, int]] = []
        if backward:
            order.append((1, start - 1))
            if wrap:
                order.append((start, total))
        else:
            order.append((start + 1, total))
            if wrap:
                order.append((1, start))
        for lo, hi in order:
            if lo > hi:
                continue
            starts = range(lo, hi + 1, block)
            if backward:
                starts = range(max(lo, hi - block + 1), lo - block, -block)  # type: ignore[assignment]
            for s in starts:
                if cancel is not None and cancel.is_set():
                    return None
                s = max(s, lo)
                e = min(hi, s + block - 1)
                lines = self.read(s, e - s + 1)
                hits = [ln.number for ln in lines if needle in ln.text.lower()]
                if hits:
                    return hits[-1] if backward else hits[0]
        return None

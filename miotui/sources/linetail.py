"""The newest lines of a byte stream, for the raw-log pane (no Textual here).

Why lazy: a followed log can grow at 10 MB/s, about 70 000 lines a second, and the
raw-log pane shows a few hundred of them only while it is open.  Splitting every line
into a ``str`` as it arrives would cost more than the rest of the reader; instead the
complete lines are kept as the byte chunks they arrived in (newlines counted in C with
``bytes.count``) and split and decoded only when :meth:`LineTail.snapshot` is asked.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Optional

from miotui.sources import MAX_LINE

#: Lines kept for the raw-log view, per source.
TAIL_LINES = 2000
#: Bytes of complete lines kept per 1 line of ``maxlen`` (a log of 16 KB lines keeps fewer lines).
BYTES_PER_KEPT_LINE = 2048


class LineTail:
    """The last ``maxlen`` complete lines of a byte stream, numbered like the scanner does.

    The scanner's rules are mirrored (``\\n``, ``\\r\\n`` and a lone ``\\r`` each end one
    line; a ``\\r\\n`` split across two chunks is one line end), so line numbers here
    match the catalog's ``first_line``/``last_line`` and the raw lines it keeps.  Memory
    is bounded by lines (``maxlen``) and by bytes (``maxlen * BYTES_PER_KEPT_LINE``):
    when lines are huge, fewer of them are kept.  Each line is cut to ``max_line``
    characters when shown.
    """

    def __init__(self, maxlen: int = TAIL_LINES, max_line: int = MAX_LINE) -> None:
        self.maxlen = maxlen
        self.line_count = 0
        # (number of the chunk's first line, its line count, its lines each ended by "\n")
        self._chunks: deque[tuple[int, int, bytes]] = deque()
        self._kept_lines = 0
        self._kept_bytes = 0
        self._max_bytes = max(maxlen, 1) * BYTES_PER_KEPT_LINE
        self._carry = b""
        self._after_cr = False
        self._max_line = max_line
        self._lock = threading.Lock()

    def feed(self, data: bytes) -> None:
        if not data:
            return
        with self._lock:
            if self._after_cr:
                self._after_cr = False
                if data.startswith(b"\n"):
                    data = data[1:]
                    if not data:
                        return
            if b"\r" in data:
                if data.endswith(b"\r"):
                    self._after_cr = True
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            cut = data.rfind(b"\n")
            if cut < 0:
                self._carry = self._cap(self._carry + data)
                return
            body = self._carry + data[:cut + 1] if self._carry else data[:cut + 1]
            self._carry = self._cap(data[cut + 1:])
            self._append(body, body.count(b"\n"))

    def end_line(self) -> None:
        """End a partial line (end of input, truncation, rotation)."""
        with self._lock:
            if self._carry:
                self._append(self._carry + b"\n", 1)
                self._carry = b""

    def snapshot(self, count: Optional[int] = None) -> list[tuple[int, str]]:
        """The newest ``count`` lines (all kept when None), oldest first, as (number, text)."""
        with self._lock:
            chunks = list(self._chunks)
        want = self.maxlen if count is None else min(count, self.maxlen)
        if want <= 0:
            return []
        out: list[tuple[int, str]] = []
        cap = self._max_line
        for first, n, body in reversed(chunks):
            lines = body.split(b"\n")
            lines.pop()  # the chunk ends with "\n": the last piece is empty
            take = min(n, want - len(out))
            start = n - take
            piece = [(first + start + i, line[:cap * 4].decode("utf-8", "replace")[:cap])
                     for i, line in enumerate(lines[start:])]
            out[:0] = piece
            if len(out) >= want:
                break
        return out

    def _append(self, body: bytes, n: int) -> None:
        """Keep ``body`` (``n`` complete lines) and drop chunks no longer among the newest."""
        if n > self.maxlen:  # keep only the chunk's last maxlen lines
            cut = len(body) - 1
            for _ in range(self.maxlen):
                cut = body.rfind(b"\n", 0, cut)
            body = body[cut + 1:]
            self.line_count += n - self.maxlen
            n = self.maxlen
        self._chunks.append((self.line_count + 1, n, body))
        self.line_count += n
        self._kept_lines += n
        self._kept_bytes += len(body)
        chunks = self._chunks
        while len(chunks) > 1:
            _, old_n, old_body = chunks[0]
            if self._kept_lines - old_n < self.maxlen and self._kept_bytes <= self._max_bytes:
                break
            chunks.popleft()
            self._kept_lines -= old_n
            self._kept_bytes -= len(old_body)

    def _cap(self, carry: bytes) -> bytes:
        return carry if len(carry) <= self._max_line * 4 else carry[:self._max_line * 4]

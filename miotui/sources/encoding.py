"""A log's bytes as UTF-8, whatever text encoding it was written in; a binary file said so.

Why: the scanner reads UTF-8 (invalid bytes replaced).  Windows PowerShell 5.1 writes
``2> log.txt`` in UTF-16 LE with a byte order mark: every other byte is NUL, no line
matched MIOpen's prefix, and the log decoded to 0 layers and 0 undecoded lines, the
app then telling the user to switch logging on.  :class:`TextBytes` looks at the first
bytes once: a UTF-8, UTF-16 LE/BE or UTF-32 LE/BE byte order mark, or UTF-16 without one
(NUL in every other byte of the text), and from then on turns what it is fed into UTF-8
a piece at a time (a character split across two pieces is kept for the next one).  A
plain UTF-8 or ASCII log, the usual case, passes through untouched: no copy, no decode.

A file that is not text (many NUL or control bytes in its first 4 KiB: a core dump, a
``.gz`` not named ``.gz``) is still fed to the scanner, but :attr:`TextBytes.warning`
says why it probably holds no log, and the callers (the whole-file decode and the
follower) record that as an undecoded line, so it is never silence.
"""

from __future__ import annotations

import codecs
from typing import Any, Optional

#: Bytes looked at to decide the encoding (fewer when the input is shorter).
SNIFF_BYTES = 4096
#: A file is taken for binary when more than this share of its first bytes are NUL or
#: control bytes other than tab, line ends, form feed, escape.
BINARY_SHARE = 0.10
#: ... or more than this share are NUL (text has none; UTF-16 was decoded before this look).
NUL_SHARE = 0.01
_BOMS = (  # longest first: UTF-32 LE's mark starts like UTF-16 LE's
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32 LE"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32 BE"),
    (codecs.BOM_UTF8, "", "UTF-8 with a byte order mark"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16 BE"),
)
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27)) + b"\x7f"


def sniff(head: bytes) -> tuple[int, str, str]:
    """(bytes of byte order mark to skip, codec name or "" for UTF-8 as it is, what it is
    in words) for a stream starting with ``head``."""
    for bom, codec, name in _BOMS:
        if head.startswith(bom):
            return len(bom), codec, name
    even, odd = head[0:len(head) & ~1:2], head[1:len(head) & ~1:2]
    if len(even) >= 8:
        zero_even, zero_odd = even.count(0) / len(even), odd.count(0) / len(odd)
        if zero_odd > 0.4 and zero_even < 0.05:
            return 0, "utf-16-le", "UTF-16 LE (no byte order mark)"
        if zero_even > 0.4 and zero_odd < 0.05:
            return 0, "utf-16-be", "UTF-16 BE (no byte order mark)"
    return 0, "", "UTF-8"


def binary_warning(head: bytes) -> str:
    """Why the text starting with ``head`` (already UTF-8) looks like no log, or ""."""
    if not head:
        return ""
    odd = sum(head.count(bytes([b])) for b in _CONTROL)
    nul = head.count(0)
    if odd <= BINARY_SHARE * len(head) and nul <= NUL_SHARE * len(head):
        return ""
    return (f"the input looks binary, not a text log: {odd:,} of its first {len(head):,} bytes are control "
            f"bytes ({nul:,} NUL); what text it holds was read")


class TextBytes:
    """Bytes of a log in, UTF-8 out: see the module's doc.  One per stream (a file
    rewritten from its start or rotated gets a new one: it may be in another encoding)."""

    def __init__(self) -> None:
        self.encoding: Optional[str] = None   # in words, once decided
        self.warning = ""                     # set once, when the input looks binary
        self._head = b""
        self._decoder: Any = None
        self._decided = False

    def feed(self, data: bytes) -> bytes:
        if self._decided:
            return data if self._decoder is None else self._convert(data)
        self._head += data
        head = self._head
        if len(head) < SNIFF_BYTES:
            # decided as soon as possible (a live log's first line must not wait for 4 KiB):
            # a byte order mark needs its 4 bytes, UTF-16 without one a few characters
            if len(head) < 4:
                return b""
            if b"\0" in head and len(head) < 64:
                return b""
        return self._decide()

    @property
    def decided(self) -> bool:
        return self._decided

    def flush(self) -> bytes:
        """The end of the stream: whatever was held back."""
        out = b"" if self._decided else self._decide()
        if self._decoder is not None:
            out += self._decoder.decode(b"", final=True).encode("utf-8", "replace")
        return out

    def _decide(self) -> bytes:
        head, self._head = self._head, b""
        skip, codec, name = sniff(head[:SNIFF_BYTES])
        self._decided = True
        self.encoding = name
        if codec:
            self._decoder = codecs.getincrementaldecoder(codec)(errors="replace")
            out = self._convert(head[skip:])
        else:
            out = head[skip:]
        self.warning = binary_warning(out[:SNIFF_BYTES])
        return out

    def _convert(self, data: bytes) -> bytes:
        return self._decoder.decode(data).encode("utf-8", "replace")


def record_warning(catalog: Any, text: TextBytes, file: str) -> None:
    """Record a binary-looking input as an undecoded line (line 1), once per stream."""
    if text.warning:
        with catalog.lock:
            catalog.add_undecoded(1, text.warning, "", file)
        text.warning = ""

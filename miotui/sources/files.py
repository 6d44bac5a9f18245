"""Bytes of a whole file: a file, stdin, or a ``.gz`` file.

Why a module: a damaged input must lose as little as possible.  A ``.gz`` whose bytes are
corrupt somewhere keeps everything decompressed before the damage (``gzip.GzipFile`` would
drop the whole chunk in flight), and the reader says where the stream broke; a gzip bomb
decompresses a bounded piece at a time; stdin that is closed is a clear error, not a crash.
(Following a growing log is ``miotui.sources.follow``'s job.)
"""

from __future__ import annotations

import os
import sys
import zlib
from typing import BinaryIO, Optional

#: compressed bytes read at a time, and the most decompressed bytes one read returns
_GZ_IN = 64 * 1024
_GZ_OUT = 1 << 20
#: compressed bytes fed at a time when recovering the data before a damaged spot
_SALVAGE_STEP = 64


class GzipStream:
    """A ``.gz`` file decompressed as it is read, member after member (``cat a.gz b.gz`` is
    valid gzip).  ``read`` returns what was decompressed before a corrupt or truncated
    spot, and raises ``OSError`` saying where on the read after that."""

    def __init__(self, raw: BinaryIO, name: str = ""):
        self.raw = raw
        self.name = name
        self._d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        self._pending = b""          # compressed bytes not yet given to the decompressor
        self._error: Optional[str] = None
        self._eof = False
        self.compressed_read = 0

    def read(self, n: int = -1) -> bytes:
        limit = n if n and n > 0 else _GZ_OUT
        out = bytearray()
        while len(out) < limit:
            if self._error is not None:
                if out:
                    break
                error, self._error = self._error, "the stream ended at the damaged spot"
                raise OSError(error)
            if self._d.unconsumed_tail:
                data = self._d.unconsumed_tail
            elif self._d.eof:
                data = self._d.unused_data + self._pending
                self._pending = b""
                if not data:
                    data = self._fill()
                    if not data:
                        break
                self._d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)   # the next member
            else:
                data = self._pending or self._fill()
                self._pending = b""
                if not data:
                    if self.compressed_read == 0:   # an empty file: nothing to decompress
                        break
                    self._error = (f"the .gz file ends in the middle of its compressed data "
                                   f"(after {self.compressed_read:,} compressed bytes)")
                    continue
            backup = self._d.copy()
            try:
                out += self._d.decompress(data, limit - len(out))
            except zlib.error as e:
                kept, at = self._salvage(backup, data)
                out += kept
                where = self.compressed_read - len(self._pending) - len(data) + at
                self._error = f"the .gz file is damaged near compressed byte {where:,} ({e})"
        return bytes(out)

    @staticmethod
    def _salvage(d, data: bytes) -> tuple[bytes, int]:
        """What ``data`` decompresses to before its damaged spot, and that spot's offset in
        ``data``: zlib gives nothing from a call that fails, so the piece is fed again a few
        bytes at a time."""
        out = bytearray()
        for i in range(0, len(data), _SALVAGE_STEP):
            before = d.copy()
            try:
                out += d.decompress(data[i:i + _SALVAGE_STEP])
            except zlib.error:
                for j in range(i, min(i + _SALVAGE_STEP, len(data))):   # the failing piece, byte by byte
                    try:
                        out += before.decompress(data[j:j + 1])
                    except zlib.error:
                        return bytes(out), j
                return bytes(out), i
        return bytes(out), len(data)

    def _fill(self) -> bytes:
        data = self.raw.read(_GZ_IN)
        if not data:
            self._eof = True
        self.compressed_read += len(data)
        return data

    def close(self) -> None:
        self.raw.close()


def open_source(path: str) -> BinaryIO:
    """A binary stream for a path: ``-`` is stdin, ``.gz`` is decompressed as it is read.
    Raises ``OSError`` for an unreadable path or a closed stdin."""
    if path == "-":
        stdin = sys.stdin
        if stdin is None:
            raise OSError(0, "standard input is closed", "-")
        try:
            os.fstat(stdin.fileno())
        except (OSError, ValueError) as e:
            raise OSError(0, "standard input is closed", "-") from e
        return stdin.buffer
    if path.endswith(".gz"):
        return GzipStream(open(path, "rb"), path)  # type: ignore[return-value]
    return open(path, "rb")

"""Is the file at this descriptor still the one we have been reading?

Why content and not only size: ``tail -F`` notices truncation when the size drops below
its offset.  That misses a log truncated and at once rewritten past the old offset (the
new lines before the offset are skipped), and it cannot tell ``truncate -s N`` (the
first N bytes are the ones already read) from a file rewritten from its start to N
bytes (new bytes).  Like lnav, we keep a fingerprint of what we read and compare it
with what the file holds now:

* ``head``: the file's first :data:`HEAD_BYTES` bytes, literally;
* ``window``: the last :data:`WINDOW_BYTES` bytes read (just before our offset);
* ``crc``: a CRC-32 of every byte read, kept up to date as bytes are read;
* ``blocks``: the CRC-32 of the :data:`BLOCK`-byte block at every ``step``-th offset
  (every block at first; past :data:`MAX_BLOCKS` every other one is dropped and the
  step doubles, so a 10 GB log costs 32 KB here).

Why more than the head and a short window: a rerun of the same job writes the same
startup lines and then the same repeated lines, so a rewrite can keep the first 4 KiB
and the last few lines before our offset and still differ in between (a crafted file
did, and 29 layers were missed).  So :meth:`Fingerprint.continues` (the file did not
shrink) compares, besides the head and the window, *every* byte read while the file is
at most :data:`FULL_CHECK_BYTES` long (one read and one CRC), and past that the newest
blocks and a slice of the older ones that moves on at every check (a bounded read:
:data:`CHECK_NEWEST` + :data:`CHECK_SPREAD` blocks), so every block is compared again
within a few checks.  That thorough part is asked for at most every 0.25 s per file (and
owed when skipped: see ``miotui.sources.follow_source``), since a file followed while a fast
writer fills it moves at every read.  :meth:`Fingerprint.kept_prefix` (the file shrank to N bytes)
compares the head and the blocks below N.  A rewrite of a file past
:data:`FULL_CHECK_BYTES` that reproduces every compared byte is taken for the same
file: its bytes are then not read again (a byte is never counted twice; at worst such
a rewrite is not counted).
"""

from __future__ import annotations

import os
import zlib
from array import array
from typing import Optional

#: Bytes of the file's start kept literally.
HEAD_BYTES = 4096
#: Bytes just before our offset kept literally.
WINDOW_BYTES = 4096
#: Bytes per checksummed block, and the distance between two blocks at first.
BLOCK = 4096
#: Block checksums kept per file (then every other one is dropped).
MAX_BLOCKS = 8192
#: A file read up to this offset is compared in full at every check.
FULL_CHECK_BYTES = 256 * 1024
#: Blocks compared per check past FULL_CHECK_BYTES: the newest, and a slice of the others.
CHECK_NEWEST = 4
CHECK_SPREAD = 8
#: Blocks compared when a file shrank (the newest below the cut, and some spread out).
CUT_NEWEST = 32
CUT_SPREAD = 32


def pread_exact(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes at ``offset`` (fewer only at the end of the file)."""
    out = b""
    while len(out) < size:
        piece = os.pread(fd, min(size - len(out), 1 << 20), offset + len(out))
        if not piece:
            break
        out += piece
    return out


def crc_of(fd: int, size: int) -> Optional[int]:
    """The CRC-32 of the file's first ``size`` bytes (None: it holds fewer)."""
    crc = 0
    done = 0
    while done < size:
        piece = os.pread(fd, min(size - done, 1 << 16), done)
        if not piece:
            return None
        crc = zlib.crc32(piece, crc)
        done += len(piece)
    return crc


class Fingerprint:
    """What we read of one file, enough to recognise it later (see the module's doc)."""

    def __init__(self) -> None:
        self.head = b""
        self.window = b""
        self.end = 0             # offset just after the last byte added
        self.crc: Optional[int] = 0   # of bytes 0..end (None: not known after a cut far in)
        self.step = BLOCK
        self.blocks = array("I")
        self._next_block = 0
        self._cursor = 0         # where the next check's slice of older blocks starts

    def add(self, data: bytes, offset: int) -> None:
        """``data`` was read at ``offset`` (always ``self.end``: reads are sequential)."""
        end = offset + len(data)
        if offset < HEAD_BYTES:
            self.head += data[:HEAD_BYTES - offset]
        if self.crc is not None:   # needed only while the file is compared in full
            self.crc = zlib.crc32(data, self.crc) if end <= FULL_CHECK_BYTES else None
        nxt = self._next_block
        while nxt + BLOCK <= end:
            at = nxt - offset
            if at >= 0:
                self.blocks.append(zlib.crc32(data[at:at + BLOCK]))
            else:  # the block began in an earlier read: its start is in the window
                self.blocks.append(zlib.crc32(self.window[at:] + data[:at + BLOCK]))
            nxt += self.step
        self._next_block = nxt
        if len(self.blocks) > MAX_BLOCKS:
            self._thin()
        self.window = (self.window + data)[-WINDOW_BYTES:] if len(data) < WINDOW_BYTES \
            else data[-WINDOW_BYTES:]
        self.end = end

    def _thin(self) -> None:
        self.blocks = self.blocks[::2]
        self.step *= 2
        self._next_block = len(self.blocks) * self.step

    def _block_matches(self, fd: int, k: int) -> bool:
        return zlib.crc32(pread_exact(fd, BLOCK, k * self.step)) == self.blocks[k]

    def continues(self, fd: int, thorough: bool = True) -> bool:
        """The file still holds what we read: its head, our window just before ``end``,
        and (``thorough``) every byte (a small file) or the blocks checked this time (a big
        one).  The follower asks for a thorough look at most a few times a second per file:
        while it catches up with a fast writer, the size moves at every read."""
        if self.head and pread_exact(fd, len(self.head), 0) != self.head:
            return False
        if self.window:
            at = self.end - len(self.window)
            if pread_exact(fd, len(self.window), at) != self.window:
                return False
        if not thorough:
            return True
        if self.end <= FULL_CHECK_BYTES and self.crc is not None:
            return crc_of(fd, self.end) == self.crc
        count = len(self.blocks)
        picks = set(range(max(0, count - CHECK_NEWEST), count))
        older = count - CHECK_NEWEST
        if older > 0:
            stride = max(1, older // CHECK_SPREAD)
            start = self._cursor % older
            picks.update((start + i * stride) % older for i in range(min(CHECK_SPREAD, older)))
            self._cursor += 1    # the next check compares the blocks just after these
        return all(self._block_matches(fd, k) for k in sorted(picks))

    def kept_prefix(self, fd: int, size: int) -> bool:
        """The file, cut to ``size`` bytes, holds what we read there (``truncate -s``)."""
        if size <= 0:
            return False
        n = min(size, len(self.head))
        if pread_exact(fd, n, 0) != self.head[:n]:
            return False
        below = min(len(self.blocks), max(0, (size - BLOCK) // self.step + 1))   # blocks wholly below size
        picks = set(range(max(0, below - CUT_NEWEST), below))
        if below > CUT_NEWEST:
            stride = max(1, (below - CUT_NEWEST) // CUT_SPREAD)
            picks.update(range(0, below - CUT_NEWEST, stride))
        return all(self._block_matches(fd, k) for k in sorted(picks))

    def cut_to(self, fd: int, size: int) -> None:
        """The file was cut to ``size`` bytes and we read on from there."""
        self.head = self.head[:size]
        keep = min(len(self.blocks), max(0, (size - BLOCK) // self.step + 1))
        del self.blocks[keep:]
        self._next_block = keep * self.step
        start = max(0, size - WINDOW_BYTES)
        self.window = pread_exact(fd, size - start, start)
        self.crc = crc_of(fd, size) if size <= FULL_CHECK_BYTES else None
        self.end = size

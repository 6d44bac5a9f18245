"""Is the file at this descriptor still the one we have been reading?

Why content and not only size: ``tail -F`` notices truncation when the size drops below
its offset.  That misses a log truncated and at once rewritten past the old offset (the
new lines before the offset are skipped), and it cannot tell ``truncate -s N`` (the
first N bytes are the ones already read) from a file rewritten from its start to N
bytes (new bytes).  Like lnav, we keep a fingerprint of what we read and compare it
with what the file holds now:

* ``head``: the file's first :data:`HEAD_BYTES` bytes, literally;
* ``window``: the last :data:`WINDOW_BYTES` bytes read (just before our offset);
* ``samples``: :data:`SAMPLE_LEN` bytes at every ``step``-th offset (every 4 KB; when
  :data:`MAX_SAMPLE_BYTES` is reached every other sample is dropped and the step doubles,
  so a 10 GB log costs 64 KB here).

:meth:`Fingerprint.continues` (the file did not shrink): the head and the window must be
unchanged, else the file was rewritten and is read from its start as a new file.
:meth:`Fingerprint.kept_prefix` (the file shrank to N bytes): the head and the samples
below N must match, else the N bytes are new.  A rewrite that reproduces every compared
byte is taken for the same file: its bytes are then not read again (a byte is never
counted twice; at worst an identical rewrite is not counted).
"""

from __future__ import annotations

import os

#: Bytes of the file's start kept literally.
HEAD_BYTES = 4096
#: Bytes just before our offset kept literally.
WINDOW_BYTES = 64
#: Bytes per sample, and the distance between two samples at first.
SAMPLE_LEN = 8
SAMPLE_STEP = 4096
#: Sample bytes kept per file (then every other one is dropped).
MAX_SAMPLE_BYTES = 64 * 1024
#: Samples compared when a file shrank (the newest below the cut, and some spread out).
CHECK_NEWEST = 64
CHECK_SPREAD = 64


def pread_exact(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes at ``offset`` (fewer only at the end of the file)."""
    out = b""
    while len(out) < size:
        piece = os.pread(fd, size - len(out), offset + len(out))
        if not piece:
            break
        out += piece
    return out


class Fingerprint:
    """What we read of one file, enough to recognise it later (see the module's doc)."""

    def __init__(self) -> None:
        self.head = b""
        self.window = b""
        self.end = 0             # offset just after the last byte added
        self.step = SAMPLE_STEP
        self.samples = bytearray()
        self._next_sample = 0

    def add(self, data: bytes, offset: int) -> None:
        """``data`` was read at ``offset`` (always ``self.end``: reads are sequential)."""
        end = offset + len(data)
        if offset < HEAD_BYTES:
            self.head += data[:HEAD_BYTES - offset]
        nxt = self._next_sample
        while nxt + SAMPLE_LEN <= end:
            at = nxt - offset
            if at >= 0:
                self.samples += data[at:at + SAMPLE_LEN]
            else:  # the sample began in the previous read: its start is in the window
                self.samples += self.window[at:] + data[:at + SAMPLE_LEN]
            nxt += self.step
        self._next_sample = nxt
        if len(self.samples) > MAX_SAMPLE_BYTES:
            self._thin()
        self.window = (self.window + data[-WINDOW_BYTES:])[-WINDOW_BYTES:] if len(data) < WINDOW_BYTES \
            else data[-WINDOW_BYTES:]
        self.end = end

    def _thin(self) -> None:
        s = self.samples
        self.samples = bytearray(b"".join(s[i:i + SAMPLE_LEN] for i in range(0, len(s), 2 * SAMPLE_LEN)))
        self.step *= 2
        kept = len(self.samples) // SAMPLE_LEN
        self._next_sample = kept * self.step

    def continues(self, fd: int) -> bool:
        """The file still starts with our head and holds our window just before ``end``."""
        if self.head and pread_exact(fd, len(self.head), 0) != self.head:
            return False
        if self.window:
            at = self.end - len(self.window)
            if pread_exact(fd, len(self.window), at) != self.window:
                return False
        return True

    def kept_prefix(self, fd: int, size: int) -> bool:
        """The file, cut to ``size`` bytes, holds what we read there (``truncate -s``)."""
        if size <= 0:
            return False
        n = min(size, len(self.head))
        if pread_exact(fd, n, 0) != self.head[:n]:
            return False
        count = len(self.samples) // SAMPLE_LEN
        below = min(count, max(0, (size - SAMPLE_LEN) // self.step + 1))   # samples wholly below size
        picks = set(range(max(0, below - CHECK_NEWEST), below))
        if below > CHECK_NEWEST:
            stride = max(1, (below - CHECK_NEWEST) // CHECK_SPREAD)
            picks.update(range(0, below - CHECK_NEWEST, stride))
        for k in sorted(picks):
            want = bytes(self.samples[k * SAMPLE_LEN:(k + 1) * SAMPLE_LEN])
            if pread_exact(fd, SAMPLE_LEN, k * self.step) != want:
                return False
        return True

    def cut_to(self, fd: int, size: int) -> None:
        """The file was cut to ``size`` bytes and we read on from there."""
        self.head = self.head[:size]
        keep = min(len(self.samples) // SAMPLE_LEN, max(0, (size - SAMPLE_LEN) // self.step + 1))
        del self.samples[keep * SAMPLE_LEN:]
        self._next_sample = keep * self.step
        start = max(0, size - WINDOW_BYTES)
        self.window = pread_exact(fd, size - start, start)
        self.end = size

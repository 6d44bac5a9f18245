"""Which format a followed log is in, decided once: from its first text, as a whole-file
decode decides it (``miotui.formats.FORMATS``).

Why a module: a log followed while its job starts arrives a few bytes at a time, and the
first piece (``I! Cu``) may be too short to tell a cuDNN log from a MIOpen one.  The text
is held, unscanned, until it can be told: a complete line that starts a cuDNN record, a
complete line naming MIOpen, ``CHOOSE_BYTES`` of text, the writer pausing (the follower
asks, ``decide``), or the input ending.  Then the held text goes to the chosen scanner
once, in order, so no line is lost or read twice.
"""

from __future__ import annotations

from typing import Callable, Optional

#: text held at most before the format is decided from what is there
CHOOSE_BYTES = 64 * 1024


class HeadChoice:
    """The text of a followed log held until its format can be told."""

    def __init__(self, told: Callable[[bytes], bool]) -> None:
        #: whether complete lines tell the format (``FormatRegistry.told``)
        self._tells = told
        self._held = bytearray()
        self._looked = 0    # held bytes up to the last newline already looked at

    @property
    def held(self) -> int:
        return len(self._held)

    def offer(self, text: bytes) -> Optional[bytes]:
        """``text`` added to what is held; everything held once the format can be told
        (the caller makes the scanner from it and feeds it), else None (still held)."""
        self._held += text
        if len(self._held) >= CHOOSE_BYTES or self._told():
            return self.take()
        return None

    def take(self) -> bytes:
        """Everything held (the format decided now, whatever is there)."""
        held = bytes(self._held)
        self._held.clear()
        self._looked = 0
        return held

    def _told(self) -> bool:
        """A complete line held since the last look tells a format (it starts a cuDNN
        record or names MIOpen)."""
        end = self._held.rfind(b"\n")
        if end < self._looked:
            return False
        lines = bytes(self._held[self._looked:end + 1])
        self._looked = end + 1
        return self._tells(lines)

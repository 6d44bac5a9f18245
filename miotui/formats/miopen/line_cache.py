"""The MIOpen scanner's line cache: each distinct line's class, by its text.

A training log repeats the same lines every iteration, so a line is classified once
(``lines.classify``) and looked up after.  The cache also holds what the scanner learnt of a
line later: a text line the driver tracker ignored becomes NOISE (``quiet``), a plain call
line becomes its replay entry (``miotui.formats.miopen.repeats``; ``calls`` lists the Command
lines among them).  It is bounded: cleared when it holds more than ``LINE_CACHE_SIZE`` lines
or ``LINE_CACHE_CHARS`` characters, so it stays under ~50 MB whatever the log (a log of
distinct lines just re-classifies them).
"""

from __future__ import annotations

from miotui.formats.miopen.lines import NOISE, classify
from miotui.sources import MAX_LINE

LINE_CACHE_SIZE = 100_000
LINE_CACHE_CHARS = 24_000_000


class LineCache:
    """Line text -> its class tuple (``entries``, read directly by the scan loop)."""

    __slots__ = ("entries", "chars", "quieted", "calls")

    def __init__(self) -> None:
        self.entries: dict[str, tuple] = {}
        self.chars = 0
        #: text lines the driver tracker ignored, cached as NOISE since (skipped while cached,
        #: which can matter later: see ``LogScanner.carried_state``)
        self.quieted: set[str] = set()
        #: a Command line that is a call of its own -> its ``PlainLine`` (``repeats``)
        self.calls: dict[str, object] = {}

    def classify_new(self, line: str) -> tuple[str, tuple]:
        """Classify a line not in the cache and cache it: (the line as kept, its class)."""
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
        c = classify(line)
        self.chars += len(line)
        if len(self.entries) >= LINE_CACHE_SIZE or self.chars > LINE_CACHE_CHARS:
            self.entries.clear()
            self.quieted.clear()
            self.calls.clear()
            self.chars = len(line)
        self.entries[line] = c
        return line, c

    def remember(self, line: str, entry: tuple) -> bool:
        """Replace a cached line's class by what the scanner learnt of it; only while the
        line is cached (the cache may have been cleared since it was read)."""
        if line in self.entries:
            self.entries[line] = entry
            return True
        return False

    def quiet(self, line: str) -> None:
        """A text line the driver tracker ignored: skipped from now on."""
        if line in self.entries:
            self.entries[line] = (NOISE,)
            self.quieted.add(line)

    def restart(self) -> None:
        """Empty but for the quieted lines (``LogScanner.move_to``: entries hold rows of the
        catalog left behind)."""
        self.entries.clear()
        self.chars = 0
        for line in self.quieted:
            self.entries[line] = (NOISE,)
        self.calls.clear()

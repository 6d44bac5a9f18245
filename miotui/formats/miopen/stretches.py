"""A training log's iterations recognised by their text: the scanner's fast path for long
stretches of Command lines (and of their calls' level lines, at ``MIOPEN_LOG_LEVEL`` 6).

A Command-line log repeats one iteration's few hundred lines thousands of times.  The
repeated-line replay (``repeats``) already does each such line in a few dictionary
operations, but it still splits the text into lines and looks each up: about two thirds of
the scan.  Here the text is cut instead at one line that comes about once per iteration (the
*anchor*: the rarest Command line of a long run of replayed lines, picked by the scanner),
and each stretch from one anchor to the next (or to the end of the text the scanner was
handed at a progress bar's ``\r``) is looked up whole: one hash and one compare.  A stretch
met before is replayed by its ``RunPlan``: the same counts, last lines and per-thread state
as replaying its lines.  A stretch of Command lines alone gets its plan from the run of them
(``LineReplay.replay_run``); one with level lines (an invoker line, ``algo = 5``) is read
line by line once and its plan recorded from what that left (``LogScanner._record_stretch``),
where every line was replayed and each thread began with a Command line; as those level lines
asked whether a value is a layer's latest, such a plan holds only while no annotation of
the catalog changed.

It is only a cache: a stretch not met before, or met in a state that is not the common one,
goes the line way, and the catalog is the same either way (the tests decode every log both
ways, and compare what the app shows after each chunk).  A log that does not repeat this
way (the anchor's stretches keep differing) loses the anchor after a few misses, and a new
one is tried only after many more lines, so such a log pays a hash per stretch for a while
and then nothing.  Bounded: stretches of more than ``MAX_STRETCH_CHARS`` are not kept, a
stretch is kept only when met a second time (a stretch cut short by a progress bar that
comes at random is met once), and the cache is emptied past ``MAX_CHARS``.
"""

from __future__ import annotations

from typing import Optional

from miotui.formats.miopen.lines import NOISE
from miotui.formats.miopen.repeats import COMMAND_CALL, PLAIN, RunPlan

#: the longest stretch kept (a whole iteration of a big model's Command lines is ~100 KB)
MAX_STRETCH_CHARS = 4 << 20
#: the cache is emptied when its stretches hold more characters than this
MAX_CHARS = 16 << 20
#: stretches that went the line way, past which (and past the stretches replayed) the anchor is dropped
MISSES_BEFORE_DROP = 32
#: lines read after a dropped anchor before another is picked (times the anchors dropped so far)
LINES_BEFORE_RETRY = 200_000
#: stretches met once remembered by their hash, at most (then forgotten)
MAX_SEEN = 4096


class Stretch:
    """A stretch's plan and what it moves the scanner by: its line count and last line."""

    __slots__ = ("plan", "lines", "last_line")

    def __init__(self, plan: RunPlan, lines: int, last_line: str) -> None:
        self.plan = plan
        self.lines = lines
        self.last_line = last_line


class StretchCache:
    """The anchor line and the stretches met after it, by their text (see the module docstring)."""

    __slots__ = ("anchor", "marker", "by_text", "seen", "chars", "hits", "misses", "drops", "retry_at")

    def __init__(self) -> None:
        #: the anchor line with its "\\n" (None: no anchor)
        self.anchor: Optional[str] = None
        #: "\\n" + ``anchor``: the anchor at a line start
        self.marker = ""
        self.by_text: dict[str, Stretch] = {}
        #: the hashes of stretches met once (one is kept when met again: a stretch cut by a
        #: progress bar that does not come once per iteration is met once, and not kept)
        self.seen: set[int] = set()
        self.chars = 0
        self.hits = 0
        self.misses = 0
        self.drops = 0
        #: the line before which no new anchor is picked (after a drop)
        self.retry_at = 0

    def may_pick(self, line_no: int) -> bool:
        return self.anchor is None and line_no >= self.retry_at

    def pick(self, line: str) -> None:
        """Cut stretches at ``line`` from now on."""
        self.anchor = line + "\n"
        self.marker = "\n" + self.anchor
        self.hits = self.misses = 0

    def get(self, text: str) -> Optional[Stretch]:
        return self.by_text.get(text)

    def keep(self, text: str, stretch: Stretch) -> None:
        """A stretch whose lines were all replayed, with its plan: kept the second time it is
        met (or in place of its old plan, which no longer held), to be replayed when met again."""
        if len(text) > MAX_STRETCH_CHARS:
            return
        if text in self.by_text:
            self.by_text[text] = stretch
            return
        key = hash(text)    # computed once per string: ``get`` asked it already
        if key not in self.seen:
            if len(self.seen) >= MAX_SEEN:
                self.seen.clear()
            self.seen.add(key)
            return
        if self.chars + len(text) > MAX_CHARS:
            self.by_text.clear()
            self.chars = 0
        self.by_text[text] = stretch
        self.chars += len(text)

    def hit(self) -> None:
        self.hits += 1

    def miss(self, line_no: int) -> None:
        """A stretch that went the line way; too many (more than were replayed): drop the anchor."""
        self.misses += 1
        if self.misses > MISSES_BEFORE_DROP and self.misses > self.hits:
            self.drops += 1
            self.retry_at = line_no + LINES_BEFORE_RETRY * self.drops
            self.clear()

    def clear(self) -> None:
        """No anchor and no stretches (``LogScanner.move_to``: plans hold rows of the catalog
        left behind)."""
        self.anchor = None
        self.marker = ""
        self.by_text.clear()
        self.seen.clear()
        self.chars = 0


def stretch_threads(lines: list[str], entries: dict[str, tuple]) -> list[str]:
    """The threads of ``lines`` where every line is a plain line (``repeats``; ``entries``:
    the scanner's line cache) or noise and each thread's first plain line is a Command line
    that is a call of its own: what the lines then do depends on no state before them but
    the threads' being common (``LineReplay.replay_plan`` checks that), so reading them once
    can make their plan (``LogScanner._record_stretch``).  Else none."""
    threads: dict[str, None] = {}
    for line in lines:
        c = entries.get(line)
        if c is None:
            return []
        kind = c[0]
        if kind == NOISE:
            continue
        if kind != PLAIN:
            return []
        plain = c[2]
        if plain.tid not in threads:
            if plain.how is not COMMAND_CALL:
                return []
            threads[plain.tid] = None
    return list(threads)

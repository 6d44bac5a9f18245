"""MIOpen's time fields, lifted out of a chunk of log text before it is scanned.

With ``MIOPEN_ENABLE_LOGGING_ELAPSED_TIME`` every line's prefix carries the milliseconds since
the previous line (``MIOpen(HIP)   0.022: ``), and with ``MIOPEN_ENABLE_LOGGING_DATE_TIME`` a
date-time (``MIOpen(HIP) (2026-11-23T20:00:00.123Z): ``).  Those fields make every line of a
training log unique, which defeats the scanner's caches of repeated lines and blocks, and
reading them line by line is a regex per line.  So a timed chunk is split here into the text
without its fields (``MIOpen(HIP): ``, which the line grammar reads the same) and the list of
fields in text order; the scanner's clock (``startup_lines``) applies the fields lazily, only
as far as a startup fact needs it, and the rest in one pass at the chunk's end.

The fast split is ``str.split`` on the log's prefix and one ``partition`` per line; a chunk
whose fields are not all plain elapsed times (a date-time, another prefix spelling, a prefix
word inside a message) takes the general regex path.  Both give the same text and fields.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import reduce
from itertools import accumulate
from operator import add, itemgetter
from typing import Optional

from miotui.formats.miopen.lines import PREFIX_WORD_RE, PREFIX_WORDS

_DATE = r"\d{4}-\d\d-\d\d[T ][\d:.]+Z?"
#: one time field, after MIOpen's prefix word and before its ": "
FIELD_RE = re.compile(rf"({PREFIX_WORD_RE})( *\d+\.\d{{3}}(?: \({_DATE}\))?| \({_DATE}\))(?=: )")
_FIELD_PARTS_RE = re.compile(rf" *(\d+\.\d{{3}})?(?: \(({_DATE[:-2]})Z?\))?")
# the fields of the fast path joined by "\n": each empty or a plain elapsed time
_ELAPSED_FIELDS_RE = re.compile(r"(?:(?: *+\d++\.\d{3})?+\n)*+(?: *\d+\.\d{3})?")
_DRIVER = "MIOpenDriver"
_first, _second, _third = itemgetter(0), itemgetter(1), itemgetter(2)


def field_clock(field: str) -> tuple[Optional[float], Optional[float]]:
    """(elapsed ms, wall-clock ms since the epoch) of one field; None for a part it lacks."""
    m = _FIELD_PARTS_RE.fullmatch(field)
    if m is None:
        return None, None
    elapsed = float(m.group(1)) if m.group(1) else None
    wall = None
    if m.group(2):
        try:
            wall = datetime.fromisoformat(m.group(2).replace(" ", "T")).timestamp() * 1000.0
        except ValueError:
            wall = None
    return elapsed, wall


def advance(clock: Optional[float], field: str) -> Optional[float]:
    """The clock after one field: a date-time sets it, an elapsed time adds to it."""
    elapsed, wall = field_clock(field)
    if wall is not None:
        return wall
    if elapsed is not None:
        return elapsed if clock is None else clock + elapsed
    return clock


def strip_line(line: str) -> tuple[str, list[str]]:
    """One line without its time fields, and the fields (the line-by-line path)."""
    fields = [m.group(2) for m in FIELD_RE.finditer(line)]
    return (FIELD_RE.sub(r"\1", line) if fields else line), fields


class ChunkFields:
    """The time fields of one chunk, in text order, and the chunk line (0-based) each is on
    (worked out only when a fact needs the clock part-way through the chunk)."""

    __slots__ = ("fields", "elapsed_only", "_line_counts", "_lines")

    def __init__(self, fields: list[str], elapsed_only: bool, line_counts=None, lines=None):
        self.fields = fields
        self.elapsed_only = elapsed_only
        self._line_counts = line_counts      # (head, pieces): newlines before each field
        self._lines = lines

    def lines(self) -> list[int]:
        if self._lines is None:
            head, pieces = self._line_counts
            counts = [head.count("\n")] + [p.count("\n") for p in pieces[:-1]]
            self._lines = list(accumulate(counts))
            self._line_counts = None
        return self._lines

    def apply(self, clock: Optional[float], start: int) -> Optional[float]:
        """The clock after the fields from index ``start`` to the end."""
        rest = self.fields[start:] if start else self.fields
        if self.elapsed_only:
            values = list(map(float, filter(None, rest)))
            if not values:
                return clock
            return reduce(add, values, 0.0 if clock is None else clock)
        for field in rest:
            clock = advance(clock, field)
        return clock


def lift(text: str) -> tuple[str, ChunkFields]:
    """``text`` (whole lines, "\\n"-ended) without its time fields, and the fields."""
    fast = lift_fast(text)
    if fast is not None:
        return fast
    fields, lines = [], []
    for i, line in enumerate(text.split("\n")):
        if "MIOpen" in line:
            for m in FIELD_RE.finditer(line):
                fields.append(m.group(2))
                lines.append(i)
    if not fields:
        return text, ChunkFields([], True, lines=[])
    elapsed_only = "(" not in "".join(fields)
    return FIELD_RE.sub(r"\1", text), ChunkFields(fields, elapsed_only, lines=lines)


def lift_fast(text: str) -> Optional[tuple[str, ChunkFields]]:
    """``lift``'s fast path, for a chunk whose every MIOpen prefix is one spelling (any of
    ``PREFIX_WORDS``: ROCm 7's bare ``MIOpen`` as fast as ``MIOpen(HIP)``) with a plain
    elapsed time; None for any other chunk.  The chunk is split on the word; the bare word
    also starts ``MIOpenDriver`` and the other spellings, so it is split on ``"MIOpen "``
    (its elapsed field is right-aligned after a space; a field of 10 s or more has none, and
    its chunk takes the general path)."""
    at = text.find("MIOpen")
    if at < 0:
        return None
    # the spelling of the chunk's first prefix (each spelling but the last starts with the last)
    word = next(w for w in PREFIX_WORDS if text.startswith(w, at))
    split = word + " " if word == PREFIX_WORDS[-1] else word
    head, *pieces = text.split(split)
    if text.count("MIOpen") != len(pieces) + text.count(_DRIVER):   # another spelling too
        return None
    parts = list(map(str.partition, pieces, [": "] * len(pieces)))
    fields = list(map(_first, parts))
    joined = "\n".join(fields)
    if "" in map(_second, parts) or joined.count("\n") != len(fields) - 1 \
            or not _ELAPSED_FIELDS_RE.fullmatch(joined):
        return None
    return (word + ": ").join([head, *map(_third, parts)]), ChunkFields(fields, True, line_counts=(head, pieces))

"""The one rule for sizes read from a log: checked against a stated limit before anything is
built from them.

A log line is untrusted and short; a number on it can still ask for a list of ten million
label lengths, a per-step batch list of four billion entries or a loop over two billion
layers.  Why one module: every decoder and driver reader that builds something whose size a
logged number decides (a list, a string, a repeat, a loop, an allocation in a reference
run) asks here first, so the limits are stated once and a layer past them is handled the
same way everywhere:

* a list the driver itself expands from a short one (the CTC driver's per-sample lengths and
  the RNN driver's per-step batch sizes repeat their last value) is kept *compact*, as the
  log gave it with its repeated tail collapsed, and its count kept as a number beside it
  ("10,000,000 samples of label length 5"), never expanded;
* a list that would have to be spelled out element by element past ``MAX_LISTED`` is not
  built: the layer is undecoded with the reason (``ProblemError``, which every decoder turns
  into an undecoded record).

MIOpen's own limits bound the problem itself: every length, count and size is a C ``int``
(``MAX_DIM``); the values derived from them (FLOPs, bytes, weights) are computed in closed
form, never by a loop over a logged count.
"""

from __future__ import annotations

from typing import Sequence

from miotui.problems.base import MAX_DIM, ProblemError

#: the most elements miotui spells out in a list whose length a logged number decides (per-step
#: batch sizes, per-sample lengths): more than any real network has, few enough that a layer is a
#: few hundred KB at most
MAX_LISTED = 1 << 16

__all__ = ["MAX_DIM", "MAX_LISTED", "check_listed", "collapse_repeats", "expanded_length"]


def check_listed(what: str, count: int, limit: int = MAX_LISTED) -> None:
    """Refuse (``ProblemError``) to spell out ``count`` ``what`` (a plural: "per-step sizes")
    one by one past ``limit``."""
    if count > limit:
        raise ProblemError(f"{count:,} {what} would have to be listed one by one: more than {limit:,} {what} are "
                           f"not modelled")


def collapse_repeats(values: Sequence[int], count: int) -> tuple[int, ...]:
    """``values`` as a driver that repeats the last value to ``count`` entries reads them
    (``-k 5 -n 10000000``: ten million fives), in the shortest form that reads the same:
    cut to ``count``, then the repeated tail dropped (``5,5,5`` -> ``5``; ``4,3,3`` -> ``4,3``).
    Its size is bounded by the text it came from, never by ``count``."""
    if not values:
        return ()
    out = list(values[:count])
    while len(out) > 1 and out[-1] == out[-2]:
        out.pop()
    return tuple(out)


def expanded_length(values: Sequence[int], count: int) -> int:
    """How many of ``count`` entries a collapsed list's last value stands for (0 when the list
    gives every entry itself)."""
    return max(0, count - len(values))

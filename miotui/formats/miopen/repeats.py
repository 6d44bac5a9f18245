"""Repeated call lines handled by their text: the scanner's fast path for Command lines and
level lines.

A training log repeats the same few hundred lines millions of times: each iteration logs
the same ``Command [LogCmdConvolution] ...`` lines, and at ``MIOPEN_LOG_LEVEL`` 5-6 the same
``algo = 5, workspace = 0`` and ``Returning an invoker for problem ...`` lines after them.
The general path routes each through the call bookkeeping (``calls.CallTracker``): a dozen Python
calls per line.  Once a line has gone that way and turned out to be *plain*, its class in
the scanner's line cache is replaced by a ``PLAIN`` entry that says what the line does, and
the next time the same text comes the scanner does just that, in a few dictionary
operations, whenever the scanner's state is the common one:

* ``command``: a Command line that is a call of its own (not the second form of an API
  block's call): counted again on its layer's row;
* ``command form``: a Command line right after the API block of the same call (a 2.x-5.x
  trace with ``MIOPEN_ENABLE_LOGGING_CMD``): the call's second form, not counted;
* ``info``: a level line naming the call its thread's Command line just made (an invoker
  lookup, a ``LogConvolutionExecution`` line): another form of that call, not counted;
* ``annotations``: a level line that only annotates the thread's last call with values the
  layer already has as its latest (``algo = 5, workspace = 0``): nothing changes.

Anything else (an API block open on the thread, a Find in progress, a typed command held, a
new annotation value...) goes the general way, which gives the same catalog: the tests run
every log both ways.  ``LineReplay``, owned by the scanner, registers and replays these lines:
it updates the call tracker's per-thread state (``calls.CallTracker``) and the line cache
(``line_cache``) it is given, and counts the replayed calls through the sink in one go
(``settle``).
"""

from __future__ import annotations

from collections import Counter
from operator import attrgetter, itemgetter
from typing import Optional

from miotui.catalog import Catalog
from miotui.events import Annotation, Event, Sighting
from miotui.formats.miopen.calls import CallTracker
from miotui.formats.miopen.line_cache import LineCache
from miotui.formats.miopen.lines import NOISE
from miotui.formats.miopen.sink import CatalogSink

#: the kind of a line-cache entry that replays a plain line (after the kinds of ``lines``)
PLAIN = 100

_tid_of = attrgetter("tid")
#: the sources of a call made by its Command line alone
_COMMAND_ONLY = frozenset({"command"})
_times_of = itemgetter(1)
_count_of = attrgetter("count")
#: whether a row's latest values are these (``Catalog.has_latest``, which needs no catalog
#: instance: bound once, as every repeated level line asks it)
_has_latest = Catalog.has_latest

#: what a plain line does
COMMAND_CALL, COMMAND_FORM, INFO_FORM, ANNOTATIONS = "command", "command form", "info", "annotations"


class PlainLine:
    """What one plain line does: its thread, the call it makes (``problem``, ``role``, the
    layer's ``row``), or the annotations it repeats.  ``pending`` is the call bookkeeping
    entry a Command line leaves (reused while unchanged); ``count``/``last`` are calls
    replayed but not yet added to the row (``LineReplay.settle`` adds them)."""

    __slots__ = ("tid", "how", "problem", "role", "row", "pairs", "pending", "sources", "count", "last",
                 "queued", "match", "source")

    def __init__(self, tid: str, how: str, problem, role, row, pairs: tuple, match=None, source: str = "") -> None:
        self.tid, self.how, self.problem, self.role, self.row, self.pairs = tid, how, problem, role, row, pairs
        #: for an info form: the level-line source it adds to the call (``info``, ``execution-log``)
        self.source = source
        self.sources = {"command"}
        self.pending = [(problem, role, self.sources)]
        self.count = 0
        self.last = 0
        self.queued = False
        #: for an info form: the problem object of the Command line it followed (equal to
        #: ``problem``; compared by identity first, which is the usual case)
        self.match = match


class LineReplay:
    """The scanner's fast path for repeated plain lines (see the module docstring).
    ``unsettled``: plain lines replayed whose calls are not yet on their rows."""

    def __init__(self, calls: CallTracker, lines: LineCache, sink: CatalogSink) -> None:
        self.lines = lines
        self.sink = sink
        # the call tracker's per-thread state, updated in place (its dicts are never rebound):
        # bound here because this is the path every repeated line of a log takes
        self._pending, self._last_row, self._find_open = calls.pending, calls.last_row, calls.find_open
        #: replay plain lines (False: every line the general way; both give the same catalog)
        self.enabled = True
        self.unsettled: list[PlainLine] = []
        #: runs replayed by their plan whose calls are not yet on their rows
        self.unsettled_plans: list[RunPlan] = []

    def register_command(self, line: str, c: tuple, tid: str, events: list[Event]) -> None:
        """After the general path handled Command line ``line``: remember it as plain if it
        was one call of its own on its layer."""
        if not self.enabled or len(events) != 1 or type(events[0]) is not Sighting:
            return
        ev = events[0]
        if ev.role == "mention" or ev.annotations or ev.only_if_new or ev.source != "command":
            return
        row = self._last_row.get(tid)
        cur = self._pending.get(tid)
        if row is None or not cur or len(cur) != 1 or cur[0][1] != ev.role:
            return
        if cur[0][2] == {"command"} and self.sink.problem_of(row) == ev.problem:
            plain = PlainLine(tid, COMMAND_CALL, ev.problem, ev.role, row, ())
            if self.lines.remember(line, (PLAIN, c, plain)):
                self.lines.calls[line] = plain
        elif cur[0][2] == {"api-trace", "command"} and self.sink.problem_of(row) == cur[0][0]:
            self.lines.remember(line, (PLAIN, c, PlainLine(tid, COMMAND_FORM, ev.problem, ev.role, row, (),
                                                           cur[0][0])))

    def register_level(self, line: str, c: tuple, tid: str, events: list[Event], effect: bool) -> None:
        """After the general path handled level line ``line`` (``effect``: it opened a Find
        or stated a startup fact, so it is never plain)."""
        if not self.enabled or effect:
            return
        if not events:
            self.lines.remember(line, (NOISE,))
            return
        if all(type(e) is Annotation and e.problem is None for e in events):
            pairs = tuple((e.name, e.value) for e in events)
            self.lines.remember(line, (PLAIN, c, PlainLine(tid, ANNOTATIONS, None, None, None, pairs)))
            return
        if len(events) != 1 or type(events[0]) is not Sighting:
            return
        ev = events[0]
        if ev.role == "mention" or ev.only_if_new or ev.source not in ("info", "execution-log"):
            return
        row = self._last_row.get(tid)
        cur = self._pending.get(tid)
        if row is not None and cur and self.sink.problem_of(row) == ev.problem:
            self.lines.remember(line, (PLAIN, c, PlainLine(tid, INFO_FORM, ev.problem, ev.role, row, ev.annotations,
                                                           cur[0][0], ev.source)))

    def replay(self, plain: PlainLine, n: int) -> bool:
        """Do what ``plain`` does, if the scanner's state is the common one (checked by the
        caller, ``LogScanner._routing_is_common``); False: the general path must handle it."""
        tid = plain.tid
        if plain.how is ANNOTATIONS:
            row = self._last_row.get(tid)
            return row is None or _has_latest(row, plain.pairs)
        if self._find_open and tid in self._find_open:
            return False
        cur = self._pending.get(tid)
        if plain.how is COMMAND_CALL:
            if cur is not None:
                for _p, _r, sources in cur:
                    if "command" not in sources:    # an API block's call: this line is its second form
                        return False
            self.replay_call(plain, cur, n)
            return True
        if not cur:
            return False
        if plain.how is COMMAND_FORM:   # the second form of the API block's call
            if len(cur) != 1:
                return False
            p, r, sources = cur[0]
            if r != plain.role or "command" in sources or "api-trace" not in sources or \
                    not (p is plain.match or p == plain.match):
                return False
            sources.add("command")
            self._queue_seen(plain, n)
            return True
        # INFO_FORM: the thread's current call, seen again as an invoker line
        row = plain.row
        if plain.pairs and not _has_latest(row, plain.pairs):
            return False
        problem, role = plain.problem, plain.role
        for p, r, sources in cur:
            if r == role and (p is plain.match or p is problem or p == problem):
                if plain.source in sources:    # the call's form was seen already: a new call
                    return False
                sources.add(plain.source)
                self._queue_seen(plain, n)
                return True
        return False

    def _queue_seen(self, plain: PlainLine, n: int) -> None:
        """Another form of the thread's current call: not counted, its row seen at line ``n``
        (at ``settle``), and the thread's last row is that call's."""
        plain.last = n
        if not plain.queued:
            plain.queued = True
            self.unsettled.append(plain)
        self._last_row[plain.tid] = plain.row

    def replay_call(self, plain: PlainLine, cur: Optional[list], n: int) -> None:
        """A Command line's call, again: the thread's current call is now this one (its
        bookkeeping entry reused when it already is), counted on the row at ``settle``."""
        if cur is not plain.pending or len(plain.sources) != 1:
            plain.sources.clear()
            plain.sources.add("command")
            self._pending[plain.tid] = plain.pending
        if not plain.queued:
            plain.queued = True
            self.unsettled.append(plain)
        plain.count += 1
        plain.last = n
        self._last_row[plain.tid] = plain.row

    def replay_run(self, run: list, first: int) -> Optional["RunPlan"]:
        """A run of Command lines, each a call of its own (``run``: their ``PlainLine`` in
        order, the first on line ``first``), replayed at once: the calls counted per line,
        the last line of each, each thread's current call the run's last one of that thread,
        exactly what ``replay_call`` does line by line.  A command log is such runs between
        its other lines, so a run costs a few C-level passes instead of a Python step per
        line.  The run's plan (to replay the same run again, ``replay_plan``), or None, with
        nothing done, when a thread's state is not the common one."""
        plan = RunPlan.of_run(run)
        return plan if self.replay_plan(plan, first) else None

    def recorded_plan(self, first: int, tids: list[str]) -> Optional["RunPlan"]:
        """The plan of the lines just replayed one by one from line ``first`` with nothing
        unsettled before them (``LogScanner._record_stretch``: plain Command lines and the
        level lines of their calls; ``tids``: their threads, each begun by a Command line):
        what they left unsettled, each thread's current call and its sources, its last row,
        and the catalog's annotation count their ``has_latest`` answers hold for.  None where
        a thread's current call is not one Command line's."""
        threads = []
        for tid in tids:
            cur = self._pending.get(tid)
            if cur is None or len(cur) != 1:
                return None
            threads.append((tid, cur, frozenset(cur[0][2]), self._last_row[tid]))
        calls = tuple((plain, plain.count, plain.last - first) for plain in self.unsettled)
        return RunPlan(calls, tuple(threads), self.sink.annotation_changes())

    def replay_plan(self, plan: "RunPlan", first: int) -> bool:
        """The lines ``plan`` was made of, again, the first on line ``first``: what replaying
        them did, in a step per thread; the counts wait in the plan for ``settle``.  False,
        with nothing done, when a thread's state is not the common one, or when an annotation
        changed since a plan that asked ``has_latest`` was made."""
        if plan.annotations is not None and plan.annotations != self.sink.annotation_changes():
            return False
        pending, find_open = self._pending, self._find_open
        for tid, _cur, _sources, _row in plan.threads:
            cur = pending.get(tid)
            if tid in find_open or (cur is not None and not (len(cur) == 1 and "command" in cur[0][2])):
                return False
        last_row = self._last_row
        for tid, cur, sources, row in plan.threads:
            # the thread's current call is its last in the lines, with the sources it had there
            # (another plain line's ``sources`` is set again before it is current: ``replay_call``)
            now = cur[0][2]
            if now != sources:
                now.clear()
                now.update(sources)
            pending[tid] = cur
            last_row[tid] = row
        plan.times += 1
        plan.first = first
        if not plan.queued:
            plan.queued = True
            self.unsettled_plans.append(plan)
        return True

    def rarest_unsettled(self) -> Optional[PlainLine]:
        """The Command line replayed fewest times among those not yet settled (None: none):
        where a level-6 log's stretches are cut (``stretches``)."""
        calls = [plain for plain in self.unsettled if plain.how is COMMAND_CALL and plain.count]
        return min(calls, key=_count_of) if calls else None

    def settle(self) -> None:
        """Add the replayed calls to their rows (before anyone reads the catalog)."""
        unsettled = self.unsettled
        calls = [(plain.row, plain.role, plain.last, plain.count) for plain in unsettled]
        for plain in unsettled:
            plain.count = 0
            plain.queued = False
        unsettled.clear()
        for plan in self.unsettled_plans:   # each run replayed ``times`` times, the last from line ``first``
            first, times = plan.first, plan.times
            calls += [(plain.row, plain.role, first + last, count * times) for plain, count, last in plan.calls]
            plan.times = 0
            plan.queued = False
        self.unsettled_plans.clear()
        self.sink.count_again_all(calls)


class RunPlan:
    """What replaying some lines did (a run of plain Command lines, ``LineReplay.replay_run``,
    or a stretch of them and their calls' level lines, ``recorded_plan``), worked out once so
    that the same lines met again cost a step per thread (``replay_plan``): ``calls``: each
    line's ``PlainLine``, the calls it counts and where in the lines it last is, in first-seen
    order; ``threads``: each thread's current call after the lines (its bookkeeping entry and
    that entry's sources) and its last row; ``annotations``: the catalog's annotation count the
    lines' ``has_latest`` answers held for (None: none was asked).  ``times``/``first``: replays
    from this plan not yet added to the rows (``settle``), the last of them from line ``first``."""

    __slots__ = ("calls", "threads", "annotations", "times", "first", "queued")

    def __init__(self, calls: tuple, threads: tuple, annotations: Optional[int] = None) -> None:
        self.calls = calls
        self.threads = threads
        self.annotations = annotations
        self.times = 0
        self.first = 0
        self.queued = False

    @classmethod
    def of_run(cls, run: list[PlainLine]) -> RunPlan:
        """The plan of a run of plain Command lines: each thread's current call is its last
        Command line's, of that line alone."""
        last_at = dict(zip(run, range(len(run)), strict=True))
        calls = tuple((plain, count, last_at[plain]) for plain, count in Counter(run).items())
        last_of = dict(zip(map(_tid_of, run), run, strict=True))
        return cls(calls, tuple((tid, plain.pending, _COMMAND_ONLY, plain.row) for tid, plain in last_of.items()))

    def rarest(self) -> int:
        """Where in the lines the call line they count fewest times last is (the first such):
        the line a scanner cuts stretches at (``stretches``), about once per training iteration
        where the lines are one iteration or more."""
        return min((c for c in self.calls if c[0].how is COMMAND_CALL), key=_times_of)[2]

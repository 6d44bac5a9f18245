"""Which sightings are one call, and what each call counts as.

One call can show up as its API block, then MIOpen's Command line for it, then Info lines
naming its problem (and, for a MIOpenDriver run, the driver's command and results).  The
counting contract (README): a call is counted once, by its role (execution, find, mention);
a legacy Find's ``requestAlgoCount`` line is a find of the problem the lines after it name.
``CallTracker`` decides, with the per-thread state that takes; ``CatJoiner`` puts a cat
call's Command lines back together.  Both are parts the scanner owns: they hear of lines
through their methods' arguments and write what they decide to the scanner's sink.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

from miotui.driver import DriverCommandError
from miotui.driver.commands.ops import join_cat_parts
from miotui.events import Event, Sighting, Undecoded
from miotui.formats.miopen.first_iteration import FirstIteration
from miotui.formats.miopen.sink import CatalogSink
from miotui.problems import Problem

#: Fields a Command line may not carry although the API block of the same call does.
_LOSSY_FIELDS = frozenset({"dtype", "param_dtype", "trans_output_pads", "pad_mode", "in_layout",
                           "fil_layout", "out_layout", "layout", "activ_mode", "activ_alpha", "activ_beta",
                           "activ_gamma"})


_SIGNATURES: dict[Problem, tuple] = {}


def call_signature(problem: Problem) -> tuple:
    """What every form of one call agrees on (see ``CallTracker.sighting``); memoised,
    as a log asks it of the same few problems again and again."""
    hit = _SIGNATURES.get(problem)
    if hit is not None:
        return hit
    lossy = _LOSSY_FIELDS | getattr(problem, "lossy_fields", frozenset())
    items = [(f.name, getattr(problem, f.name)) for f in dataclasses.fields(problem) if f.name not in lossy]
    if getattr(problem, "mode", None) == "trans":  # MIOpen < ROCm 6.1 logged C as -k
        items = [(k, v) for k, v in items if k != "k"]
    signature = (problem.op,) + tuple(items)
    if len(_SIGNATURES) >= 4096:
        _SIGNATURES.clear()
    _SIGNATURES[problem] = signature
    return signature


#: MIOpen's legacy Find functions, as named in its ``Info [...] requestAlgoCount`` line
FIND_FUNCS = {"FindConvFwdAlgorithm": "fwd", "FindConvBwdDataAlgorithm": "bwd",
               "FindConvBwdWeightsAlgorithm": "wrw"}


def with_dtype(block: Problem, other: Problem) -> Problem:
    changes = {"dtype": other.dtype}
    if hasattr(block, "param_dtype"):
        changes["param_dtype"] = getattr(other, "param_dtype", other.dtype)
    return dataclasses.replace(block, **changes)


Raw = Callable[[], list[tuple[int, str]]]


class CallTracker:
    """Which sightings are one call, per thread (see the module docstring).

    Its state, by thread id: ``pending`` (the current call: [(problem, role, sources seen)],
    one or two entries, and no problem hashed per sighting), ``last_row`` (the row of the
    thread's last call), ``driver_run`` (the problem of the MIOpenDriver run in progress),
    ``find_open`` ([direction, problem looked up] of a legacy Find) and ``held`` (an API
    sighting with a guessed data type, awaiting its Command line).  The scan loop and the
    repeated-line replay (``repeats``) read and update ``pending``/``last_row``/``find_open``
    in place for speed: the dicts are never rebound.
    """

    def __init__(self, sink: CatalogSink, startup: FirstIteration, current_problem: Callable,
                 guess_warnings: frozenset[str]) -> None:
        self.sink = sink
        self.startup = startup
        #: the MIOpenDriver run's problem in a direction (``DriverLogTracker.current_problem``)
        self.current_problem = current_problem
        self.guess_warnings = guess_warnings
        self.pending: dict[str, list[tuple[Problem, str, set[str]]]] = {}
        self.last_row: dict[str, object] = {}
        self.driver_run: dict[str, object] = {}
        self.find_open: dict[str, list] = {}
        self.held: dict[str, tuple] = {}

    def carried_state(self) -> dict[str, object]:
        """What it carries from the lines read to the lines after them (``LogScanner.carried_state``)."""
        return {"pending": self.pending, "last_row": self.last_row, "driver_run": self.driver_run,
                "find_open": self.find_open, "held": self.held}

    def moved(self, made: dict[int, object]) -> None:
        """The catalog changed (``LogScanner.move_to``): each thread's last row is its row there."""
        rows = {tid: made[id(row)] for tid, row in self.last_row.items()}
        self.last_row.clear()
        self.last_row.update(rows)

    def sighting(self, tid: str, ev: Sighting, n: int, raw: Raw) -> None:
        """Route one sighting: a new call, or another form of the thread's current call.

        One call can show up as its API block, then MIOpen's Command line for it, then an
        Info line naming its problem (and, for a driver run, the driver's echo first).
        Each form may appear once per call: a second Command line for the same problem is
        the next call; a new API block always starts a new call.  MIOpen's Command line
        loses some of what the API block knows (transposed output padding, padding mode,
        layouts before ROCm 4.3, mixed batch-norm types, old transposed -k) and the block
        may not know the data type: those forms are matched by ``call_signature``.
        """
        held = self.held.pop(tid, None) if self.held else None
        if held is not None:
            h_ev, h_n, h_raw, h_notes = held
            if ev.source != "api-trace" and call_signature(h_ev.problem) == call_signature(ev.problem):
                # The block's data type was guessed; this form of the same call (its Command
                # line, an Info line, a Find-Db key lookup) knows it.
                problem = with_dtype(h_ev.problem, ev.problem)
                warnings = tuple(w for w in h_ev.warnings if w not in self.guess_warnings) + ev.warnings
                self.sink.sighting(problem, h_ev.role, "api-trace", h_n, warnings, h_ev.annotations, h_raw)
                mention = ev.role == "mention"
                row = self.sink.sighting(problem, ev.role, ev.source, n, (), tuple(h_notes) + ev.annotations, None,
                                         count=mention)
                self.pending[tid] = [(problem, h_ev.role, {"api-trace"} if mention else {"api-trace", ev.source})]
                self.driver_run.pop(tid, None)
                self.last_row[tid] = row
                return
            self.add(tid, h_ev, h_n, h_raw, h_notes)
        if ev.source == "api-trace" and ev.role != "mention" and self.waits_for_dtype(ev):
            self.held[tid] = (ev, n, raw, [])
            return
        self.add(tid, ev, n, raw)

    def held_note(self, tid: str, name: str, value: str) -> bool:
        """An annotation of the thread's held call (applied when it is recorded); False when
        the thread holds none."""
        held = self.held.get(tid)
        if held is None:
            return False
        held[3].append((name, value))
        return True

    def bare_form_of_traced_call(self, tid: str, args: str, events: list[Event]) -> bool:
        """A Command line that is only its base (MIOpen 1.x logs batch-norm backward as
        ``bnorm`` with no flags) right after the API block of that call: nothing to decode
        and nothing missing, so not an undecoded line each iteration."""
        if len(events) != 1 or type(events[0]) is not Undecoded:
            return False
        tokens = args.split()
        if len(tokens) != 1:
            return False
        base = tokens[0]
        held = self.held.get(tid)
        if held is not None:  # the block's data type was guessed: it waits for this line
            return base.startswith(held[0].problem.op)
        return any("api-trace" in sources and base.startswith(problem.op)
                   for problem, _role, sources in self.pending.get(tid, ()))

    def waits_for_dtype(self, ev: Sighting) -> bool:
        """An API sighting whose data type was guessed: held for the call's Command line."""
        return bool(ev.warnings) and any(w in self.guess_warnings for w in ev.warnings)

    def startup_layer(self, tid: str) -> tuple[bool, Optional[object]]:
        """(whether the thread is in a legacy Find whose layer is not named yet, the row of its
        last call): where a first-iteration fact of the thread belongs now."""
        entry = self.find_open.get(tid) if self.find_open else None
        return entry is not None and entry[1] is None, self.last_row.get(tid)

    def find_form(self, tid: str, ev: Sighting, n: int, at: int) -> Optional[Sighting]:
        """Inside a legacy Find (after MIOpen's ``Info [FindConv...Algorithm] requestAlgoCount =
        ...``), the first line that names a convolution of the Find's direction (a Find-Db key
        lookup, an invoker line) says which layer the Find searched for: the Find is counted
        on it.  The line itself is still what it is (a lookup is a mention).  Any other call on
        the thread ends the Find (``at``: the scanner's line now)."""
        entry = self.find_open[tid]
        if ev.role != "mention" or ev.source != "info":
            if ev.role == "execution":
                self.close_find(tid, at)
            return ev
        problem = ev.problem
        if entry[1] is None and getattr(problem, "op", "") == "conv" and problem.direction == entry[0]:
            entry[1] = problem
            row = self.sink.sighting(problem, "find", "info", n, ev.warnings, (), None)
            self.startup.find_named(tid, row)
            self.pending[tid] = [(problem, "find", {"info"})]
        return ev

    def open_find(self, tid: str, direction: str, n: int, line: str, at: int) -> None:
        """MIOpen's ``Info [FindConv...Algorithm] requestAlgoCount = ...``: one Find.

        It is the log line of a Find the thread's API block or Command line already
        showed; or, inside a MIOpenDriver run, a Find of the run's layer; or a Find whose
        problem the next lines name (a Find-Db key lookup); if none does before the
        thread's next call, a Find of an unknown problem (counted in the stats)."""
        self.close_find(tid, at)
        self.startup.find_opened(tid, at)
        for problem, role, sources in self.pending.get(tid, ()):
            if role == "find" and "info" not in sources and getattr(problem, "direction", None) == direction:
                self.find_open[tid] = [direction, problem]
                return
        problem = self.current_problem(direction)
        if problem is not None:
            self.add(tid, Sighting(problem, "find", "info"), n, lambda: [(n, line)])
            self.find_open[tid] = [direction, problem]
            return
        self.find_open[tid] = [direction, None]

    def close_find(self, tid: str, at: int) -> None:
        entry = self.find_open.pop(tid, None)
        if entry is not None:
            if entry[1] is None:
                self.sink.unknown_find()
            self.startup.find_closed(tid, None if entry[1] is None else self.sink.existing_row(entry[1]), at)

    def begin_call(self, tid: str, at: int) -> None:
        """A new API block starts the thread's next call: what the thread held is recorded,
        its current call and its Find end."""
        if self.held:
            self.flush_held(tid)
        self.pending.pop(tid, None)
        if self.find_open:
            self.close_find(tid, at)

    def finish(self) -> None:
        """End of input: held calls are recorded, no call is current (open Finds are closed
        after the first-iteration attributor's own end, ``close_finds``)."""
        for tid in list(self.held):
            self.flush_held(tid)
        self.pending.clear()

    def close_finds(self, at: int) -> None:
        for tid in list(self.find_open):
            self.close_find(tid, at)

    def flush_held(self, tid: str) -> None:
        held = self.held.pop(tid, None)
        if held is not None:
            self.add(tid, *held)

    def add(self, tid: str, ev: Sighting, n: int, raw: Optional[Raw], notes: Sequence[tuple[str, str]] = ()) -> None:
        target, count = self._new_call(tid, ev)
        annotations = tuple(ev.annotations) + tuple(notes) if notes else ev.annotations
        self.last_row[tid] = self.sink.sighting(target, ev.role, ev.source, n, ev.warnings, annotations, raw,
                                                count, ev.only_if_new)

    def _new_call(self, tid: str, ev: Sighting) -> tuple[Problem, bool]:
        """(the layer to record it on, whether it is a new call)."""
        if ev.source in ("find-db", "perf-db") or ev.role == "mention":
            return ev.problem, True
        current = self.pending.get(tid)
        if current:
            seen = None
            target = ev.problem
            for problem, role, sources in current:
                if role == ev.role and (problem is ev.problem or problem == ev.problem):
                    seen = sources
                    break
            if seen is None and ev.source != "api-trace":
                # MIOpen 2.1-5.3 log the backward-weights *Find* as [LogCmdConvolution], and
                # Command lines drop fields the API block has: match the call, not the text.
                for problem, _role, sources in current:
                    if "api-trace" in sources and ev.source not in sources and \
                            (problem == ev.problem or call_signature(problem) == call_signature(ev.problem)):
                        seen, target = sources, problem
                        break
            if seen is not None and ev.source not in seen:
                seen.add(ev.source)
                return target, False
            if seen is None and self.driver_run.get(tid) == ev.problem:
                # A MIOpenDriver run's own library calls (its Find, then its first run).
                current.append((ev.problem, ev.role, {ev.source}))
                return ev.problem, True
        self.pending[tid] = [(ev.problem, ev.role, {ev.source})]
        if ev.source == "driver-command":
            self.driver_run[tid] = ev.problem
        elif self.driver_run:
            self.driver_run.pop(tid, None)
        return ev.problem, True


class CatJoiner:
    """MIOpen's ``LogCmdCat`` prints one Command line per input of a cat call, before the
    call runs: the consecutive cat lines of one thread are that one call (put back together
    by ``join_cat_parts``), ended by any other call of the thread or the end of input.
    ``parts``: thread -> [(sighting, line number, line)] of its call so far."""

    def __init__(self) -> None:
        self.parts: dict[str, list] = {}

    def part(self, tid: str, events: list[Event], n: int, line: str) -> bool:
        """Keep a one-input cat line for its call; False when ``events`` are something else."""
        if len(events) != 1 or type(events[0]) is not Sighting:
            return False
        problem = events[0].problem
        if getattr(problem, "name", None) != "cat" or len(problem.shapes) != 1:
            return False
        self.parts.setdefault(tid, []).append((events[0], n, line))
        return True

    def flush(self, tid: str) -> Optional[tuple[list[Event], int, str, Optional[Raw]]]:
        """The thread's cat call, ended: (its events, the line number and text of its first
        line, its source lines), or None when the thread has none."""
        parts = self.parts.pop(tid, None)
        if not parts:
            return None
        first, n, line = parts[0]
        raw = [(m, text) for _ev, m, text in parts]
        if len(parts) == 1:
            return [first], n, line, lambda: raw
        try:
            joined = join_cat_parts([ev.problem for ev, _m, _t in parts])
        except DriverCommandError as e:
            return [Undecoded(f"cat Command lines of one call do not agree: {e}")], n, line, None
        warnings = tuple(dict.fromkeys(w for ev, _m, _t in parts for w in ev.warnings if "one input" not in w))
        note = (f"{len(parts)} cat Command lines (one per input, as MIOpen prints them) read as one call; "
                + ("the dimension is the one axis their lengths differ on" if not joined.missing else
                   "the concatenation dimension is not in them"),)
        return [Sighting(joined, first.role, first.source, note + warnings)], n, line, lambda: raw

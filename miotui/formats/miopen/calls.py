"""Which sightings are one call, and what each call counts as.

One call can show up as its API block, then MIOpen's Command line for it, then Info lines
naming its problem (and, for a MIOpenDriver run, the driver's command and results).  The
counting contract (README): a call is counted once, by its role (execution, find, mention);
a legacy Find's ``requestAlgoCount`` line is a find of the problem the lines after it name.
``CallRouting`` is the part of ``LogScanner`` (which inherits it) that decides; its state
lives on the scanner.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

from miotui.driver import DriverCommandError
from miotui.driver.commands.ops import join_cat_parts
from miotui.events import Event, Sighting, Undecoded
from miotui.problems import Problem

#: Fields a Command line may not carry although the API block of the same call does.
_LOSSY_FIELDS = frozenset({"dtype", "param_dtype", "trans_output_pads", "pad_mode", "in_layout",
                           "fil_layout", "out_layout", "layout", "activ_mode", "activ_alpha", "activ_beta",
                           "activ_gamma"})


_SIGNATURES: dict[Problem, tuple] = {}


def call_signature(problem: Problem) -> tuple:
    """What every form of one call agrees on (see ``LogScanner._sighting``); memoised,
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


class CallRouting:
    """``LogScanner``'s call bookkeeping (see the module docstring)."""

    def _sighting(self, tid: str, ev: Sighting, n: int, raw: Callable[[], list[tuple[int, str]]]) -> None:
        """Route one sighting: a new call, or another form of the thread's current call.

        One call can show up as its API block, then MIOpen's Command line for it, then an
        Info line naming its problem (and, for a driver run, the driver's echo first).
        Each form may appear once per call: a second Command line for the same problem is
        the next call; a new API block always starts a new call.  MIOpen's Command line
        loses some of what the API block knows (transposed output padding, padding mode,
        layouts before ROCm 4.3, mixed batch-norm types, old transposed -k) and the block
        may not know the data type: those forms are matched by ``call_signature``.
        """
        held = self._held.pop(tid, None) if self._held else None
        if held is not None:
            h_ev, h_n, h_raw, h_notes = held
            if ev.source != "api-trace" and call_signature(h_ev.problem) == call_signature(ev.problem):
                # The block's data type was guessed; this form of the same call (its Command
                # line, an Info line, a Find-Db key lookup) knows it.
                problem = with_dtype(h_ev.problem, ev.problem)
                warnings = tuple(w for w in h_ev.warnings if w not in self._guess_warnings) + ev.warnings
                self.catalog.add_sighting(problem, h_ev.role, "api-trace", h_n, self.file, warnings,
                                          h_ev.annotations, h_raw)
                mention = ev.role == "mention"
                row = self.catalog.add_sighting(problem, ev.role, ev.source, n, self.file, (),
                                                tuple(h_notes) + ev.annotations, None, count=mention)
                self._pending[tid] = [(problem, h_ev.role, {"api-trace"} if mention else {"api-trace", ev.source})]
                self._driver_run.pop(tid, None)
                self._last_row[tid] = row
                return
            self._add(tid, h_ev, h_n, h_raw, h_notes)
        if ev.source == "api-trace" and ev.role != "mention" and self._waits_for_dtype(ev):
            self._held[tid] = (ev, n, raw, [])
            return
        self._add(tid, ev, n, raw)

    def _bare_form_of_traced_call(self, tid: str, args: str, events: list[Event]) -> bool:
        """A Command line that is only its base (MIOpen 1.x logs batch-norm backward as
        ``bnorm`` with no flags) right after the API block of that call: nothing to decode
        and nothing missing, so not an undecoded line each iteration."""
        if len(events) != 1 or type(events[0]) is not Undecoded:
            return False
        tokens = args.split()
        if len(tokens) != 1:
            return False
        base = tokens[0]
        held = self._held.get(tid)
        if held is not None:  # the block's data type was guessed: it waits for this line
            return base.startswith(held[0].problem.op)
        return any("api-trace" in sources and base.startswith(problem.op)
                   for problem, _role, sources in self._pending.get(tid, ()))

    def _waits_for_dtype(self, ev: Sighting) -> bool:
        """An API sighting whose data type was guessed: held for the call's Command line."""
        return bool(ev.warnings) and any(w in self._guess_warnings for w in ev.warnings)

    def _find_form(self, tid: str, ev: Sighting, n: int) -> Optional[Sighting]:
        """Inside a legacy Find (after MIOpen's ``Info [FindConv...Algorithm] requestAlgoCount =
        ...``), the first line that names a convolution of the Find's direction (a Find-Db key
        lookup, an invoker line) says which layer the Find searched for: the Find is counted
        on it.  The line itself is still what it is (a lookup is a mention).  Any other call on
        the thread ends the Find."""
        entry = self._find_open[tid]
        if ev.role != "mention" or ev.source != "info":
            if ev.role == "execution":
                self._close_find(tid)
            return ev
        problem = ev.problem
        if entry[1] is None and getattr(problem, "op", "") == "conv" and problem.direction == entry[0]:
            entry[1] = problem
            row = self.catalog.add_sighting(problem, "find", "info", n, self.file, ev.warnings, (), None)
            self._startup_find_named(tid, row)
            self._pending[tid] = [(problem, "find", {"info"})]
        return ev

    def _open_find(self, tid: str, direction: str, n: int, line: str) -> None:
        """MIOpen's ``Info [FindConv...Algorithm] requestAlgoCount = ...``: one Find.

        It is the log line of a Find the thread's API block or Command line already
        showed; or, inside a MIOpenDriver run, a Find of the run's layer; or a Find whose
        problem the next lines name (a Find-Db key lookup); if none does before the
        thread's next call, a Find of an unknown problem (counted in the stats)."""
        self._close_find(tid)
        self._startup_find_opened(tid)
        for problem, role, sources in self._pending.get(tid, ()):
            if role == "find" and "info" not in sources and getattr(problem, "direction", None) == direction:
                self._find_open[tid] = [direction, problem]
                return
        problem = self.driver.current_problem(direction)
        if problem is not None:
            self._add(tid, Sighting(problem, "find", "info"), n, lambda: [(n, line)])
            self._find_open[tid] = [direction, problem]
            return
        self._find_open[tid] = [direction, None]

    def _close_find(self, tid: str) -> None:
        entry = self._find_open.pop(tid, None)
        if entry is not None:
            if entry[1] is None:
                self.catalog.unknown_finds += 1
            self._startup_find_closed(tid, None if entry[1] is None else self.catalog.existing_row(entry[1]))

    def _flush_held(self, tid: str) -> None:
        held = self._held.pop(tid, None)
        if held is not None:
            self._add(tid, *held)

    def _add(self, tid: str, ev: Sighting, n: int, raw: Optional[Callable[[], list[tuple[int, str]]]],
             notes: Sequence[tuple[str, str]] = ()) -> None:
        target, count = self._new_call(tid, ev)
        annotations = tuple(ev.annotations) + tuple(notes) if notes else ev.annotations
        row = self.catalog.add_sighting(target, ev.role, ev.source, n, self.file, ev.warnings,
                                        annotations, raw, count=count, only_if_new=ev.only_if_new)
        self._last_row[tid] = row

    def _new_call(self, tid: str, ev: Sighting) -> tuple[Problem, bool]:
        """(the layer to record it on, whether it is a new call)."""
        if ev.source in ("find-db", "perf-db") or ev.role == "mention":
            return ev.problem, True
        current = self._pending.get(tid)
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
            if seen is None and self._driver_run.get(tid) == ev.problem:
                # A MIOpenDriver run's own library calls (its Find, then its first run).
                current.append((ev.problem, ev.role, {ev.source}))
                return ev.problem, True
        self._pending[tid] = [(ev.problem, ev.role, {ev.source})]
        if ev.source == "driver-command":
            self._driver_run[tid] = ev.problem
        elif self._driver_run:
            self._driver_run.pop(tid, None)
        return ev.problem, True


class CatJoining:
    """MIOpen's ``LogCmdCat`` prints one Command line per input of a cat call, before the
    call runs: the consecutive cat lines of one thread are that one call (put back together
    by ``join_cat_parts``), ended by any other call of the thread or the end of input.  Part
    of ``LogScanner``; ``_cat`` (thread -> [(sighting, line number, line)]) lives there."""

    def _cat_part(self, tid: str, events: list[Event], n: int, line: str) -> bool:
        """Keep a one-input cat line for its call; False when ``events`` are something else."""
        if len(events) != 1 or type(events[0]) is not Sighting:
            return False
        problem = events[0].problem
        if getattr(problem, "name", None) != "cat" or len(problem.shapes) != 1:
            return False
        self._cat.setdefault(tid, []).append((events[0], n, line))
        return True

    def _flush_cat(self, tid: str) -> None:
        parts = self._cat.pop(tid, None)
        if not parts:
            return
        first, n, line = parts[0]
        raw = [(m, text) for _ev, m, text in parts]
        if len(parts) == 1:
            self._apply([first], tid, n, line, lambda: raw)
            return
        try:
            joined = join_cat_parts([ev.problem for ev, _m, _t in parts])
        except DriverCommandError as e:
            self._apply([Undecoded(f"cat Command lines of one call do not agree: {e}")], tid, n, line)
            return
        warnings = tuple(dict.fromkeys(w for ev, _m, _t in parts for w in ev.warnings if "one input" not in w))
        note = (f"{len(parts)} cat Command lines (one per input, as MIOpen prints them) read as one call; "
                + ("the dimension is the one axis their lengths differ on" if not joined.missing else
                   "the concatenation dimension is not in them"),)
        self._apply([Sighting(joined, first.role, first.source, note + warnings)], tid, n, line, lambda: raw)

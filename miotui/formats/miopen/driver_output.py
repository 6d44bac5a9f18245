"""MIOpenDriver commands and output met inside logs (users paste their terminal into bug
reports).  ``DriverLogTracker.feed(line)`` recognises the commands they typed (shell prompts,
env assignments, ``\\`` continuations, Python argv lists), the driver's echo of its own
command line, and the output that follows (parsed by ``miotui.driver.output``), and attaches
each result to the layer of the direction it belongs to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from miotui.driver import KNOWN_BASES
from miotui.driver.output_lines import OutputLine, parse_output_line
from miotui.events import Annotation, Event, Sighting, Undecoded
from miotui.formats.miopen.lines import PREFIX_WORD_RE

# ============================================================================= inside logs

_LIBRARY_LINE_RE = re.compile(PREFIX_WORD_RE + r"[^:]{0,20}: (?:Command \[|\S+ \[)|"
                              r"^\s*miopen\w+: \S*MIOpenDriver")
_FRAGMENT_RE = re.compile(r"^(?:-{1,2}[A-Za-z_@#$%^!&?]\S*(?:\s+\S+)?(?:\s|$)|"
                          r"(?:conv|pool|bnorm|activ|lrn|softmax|CBAInfer|CAInfer|rnn|gemm|ctc|dropout|tensorop|"
                          r"reduce|layernorm|addlayernorm|t5layernorm|groupnorm|cat|getitem|kthvalue|prelu|rope|"
                          r"adam|ampadam|transformers|glu|softmarginloss|multimarginloss|sum|argmax)\w*\s+-)")
#: Continuation lines buffered before a typed command is given up as cut.
MAX_CONTINUATION_LINES = 64
#: output lines that are a direction's result: the run executed that direction
_RESULT_KINDS = frozenset({"kernel_time", "wall_time", "verify", "stats"})
#: result lines printed once per result block: seen again, they are the next block
_BLOCK_KINDS = frozenset({"kernel_time", "stats"})
#: the driver's own flags that only print something and run no layer
_NO_RUN_ARGS = frozenset({"--version", "-h", "--help", "-?"})
#: result lines that name another op than the run's: the CTC driver prints its kernel time as
#: "Forward Conv.", and the Transformers AdamW driver as "Forward Adam"
_OP_ALIASES = {"ctc": frozenset({"conv"}), "transformersadamw": frozenset({"adam"})}


def _unmarked(text: str) -> str:
    """A pasted line without the Markdown around it: a ``> `` quote marker, ``**`` bold."""
    if text.startswith(">") and not text.startswith(">>"):
        text = text[1:].lstrip()
    return text.replace("**", "") if "**" in text else text


@dataclass
class _Run:
    problems: tuple
    op: str
    failed: set = field(default_factory=set)
    #: direction -> the result line kinds seen in its current result block (a kind seen
    #: again starts the next block: the same command's output pasted twice, per build)
    done: dict = field(default_factory=dict)


class DriverLogTracker:
    """MIOpenDriver commands and output met among log lines (one per scanner).

    ``feed(line)`` returns None for text that is not driver text, else a (possibly
    empty) list of events, by the counting contract:

    * a command (typed, echoed by the driver, or both: a command right after the same
      command with no output between is its echo) is a ``mention`` of each layer it
      names (source ``driver-command``);
    * each direction's first result line in that run (kernel time, wall-clock time,
      ``stats:``, verification verdict) is one ``execution`` of that direction's layer
      (source ``driver-output``); every result line adds ``Annotation``\\s (time,
      verdict, solver...) for it;
    * result lines with no command before them (the command is cut off the log) are one
      ``Undecoded`` record per block, saying the layer cannot be named: guessing it would
      credit the wrong layer.
    """

    def __init__(self, recent_keys: Optional[Callable[[], tuple[tuple, tuple]]] = None) -> None:
        #: (convolutions, im2col kernel keys) the latest MIOpen level lines named: a ``stats:`` line
        #: whose command is not in the log is the run of the one that agrees with it
        self._recent_keys = recent_keys
        self._run: Optional[_Run] = None
        #: typed commands not yet echoed, oldest first (a chain runs them in order), with their runs
        self._awaiting: list[tuple[tuple[str, ...], Optional[_Run]]] = []
        self._cont: Optional[list[str]] = None  # a typed command continued with "\\"
        #: a line of typed commands, kept for one line: the next line may continue it (a paste
        #: that wrapped without "\\") or, for a bare argument list, be MIOpen's own Command line
        #: for the same call (MIOpen prints RNN commands to stdout too).  The scanner calls
        #: ``flush()`` before any other line while this is set.
        self.held: Optional[str] = None
        self._held_bare = False
        self._last_dir: Optional[str] = None
        self._orphan_told = False   # output without a command already reported since the last command
        #: an RNN "<direction> RNN time results:" block whose timing lines have not come yet
        self._open_block: Optional[str] = None
        self._cache: dict[tuple[str, ...], tuple[tuple, tuple[str, ...]]] = {}

    # ------------------------------------------------------------------ entry

    def feed(self, line: str) -> Optional[list[Event]]:
        try:
            return self._feed(line)
        except Exception as e:  # a decoder bug must not stop the scan
            self.held = None
            return [Undecoded(f"driver output decoder failed: {type(e).__name__}: {e}")]

    def flush(self) -> list[Event]:
        """The events of the held line (see ``held``)."""
        held, self.held = self.held, None
        if held is None:
            return []
        try:
            return self._commands(held, hold=False) or []
        except Exception as e:  # a decoder bug must not stop the scan
            return [Undecoded(f"driver output decoder failed: {type(e).__name__}: {e}")]

    def absorb_logged(self, args: str) -> bool:
        """MIOpen's own ``Command [LogCmd...]`` line for the call whose arguments the held bare
        line printed (``rnn -n ...`` on stdout, then ``Command [LogCmdRNN] ... rnn -n ...``): the
        two are one call, so the held line is dropped.  False (nothing changed) otherwise."""
        if self.held is not None and self._held_bare and self.held.split() == args.split():
            self.held = None
            return True
        return False

    @property
    def run_open(self) -> bool:
        """A driver run's output may still follow (its command was seen)."""
        return self._run is not None

    def current_problem(self, direction: str, op: str = "conv") -> Optional[Any]:
        """The layer of ``direction`` in the driver run in progress (its library's Info lines
        belong to it), or None."""
        return self._problem(direction, op)

    def _feed(self, line: str) -> Optional[list[Event]]:
        text = _unmarked(line.strip())
        if self._cont is not None:
            if text == ">" or text.startswith("> "):
                text = text[1:].strip()  # bash's continuation prompt (PS2) in a pasted terminal
            if text.endswith("\\"):
                self._cont.append(text[:-1])
                if len(self._cont) > MAX_CONTINUATION_LINES:
                    self._cont = None
                    return [Undecoded("MIOpenDriver command continued over too many lines; dropped")]
                return []
            self._cont.append(text)
            joined = " ".join(self._cont)
            self._cont = None
            return self._commands(joined, joined_from_continuation=True)
        if self.held is not None:
            if text.startswith("-") and _FRAGMENT_RE.match(text):   # the held line wrapped here
                joined = self.held + " " + text
                self.held = None
                return self._commands(joined) or []
            events = self.flush()
            more = self._line(text)
            return events + more if more is not None else (events or None)
        return self._line(text)

    def _line(self, text: str) -> Optional[list[Event]]:
        if not text:
            return None
        if "MIOpenDriver" in text:
            if _LIBRARY_LINE_RE.search(text):
                return None  # the library's own Command line: the scanner's business
            if text.endswith("\\"):
                self._cont = [text[:-1]]
                return []
            events = self._commands(text)
            if events is not None:
                return events
        elif text[0].isalpha() or text[0] in "`|":
            events = self._commands(text)
            if events is not None:
                return events
        ol = parse_output_line(text)
        if ol is None:
            if _FRAGMENT_RE.match(text):
                # A piece of a command split with "\\" (or a bare argument list): never "not
                # driver text", or the scanner would skip it for good next time it appears.
                return []
            return None
        return self._output(ol)

    # ------------------------------------------------------------------ commands

    def _commands(self, text: str, joined_from_continuation: bool = False, hold: bool = True
                  ) -> Optional[list[Event]]:
        """Every command on the line (chains, a command glued to its echo, a bare argument
        list), in order; None when the line is not a command (prose that mentions
        MIOpenDriver, a word that is not a base argument)."""
        from miotui.driver.shell import find_bare_commands, find_commands
        found = [c for c in find_commands(text) if c.args[0] in _NO_RUN_ARGS or _is_base(c.args[0])]
        bare = False
        if not found and "MIOpenDriver" not in text:
            found = find_bare_commands(text, _ALL_BASES)
            bare = True
        if not found:
            if joined_from_continuation:
                return [Undecoded("MIOpenDriver command continued with '\\' has no known base argument")]
            return None
        if hold and not found[-1].echo_shaped:
            self.held, self._held_bare = text, bare
            return []
        events: list[Event] = []
        typed_line = False
        for command in found:
            args = command.args
            if args[0] in _NO_RUN_ARGS:
                events += self._end_run()
                self._awaiting.clear()
                continue
            if command.echo_shaped:
                if self._echo_of_typed(args):
                    continue
                self._awaiting.clear()   # a run whose typed command is not in the log
            elif not typed_line:
                typed_line = True
                self._awaiting.clear()   # a new prompt line: earlier commands were never echoed
            events += self._start(args)
            self._awaiting.append((args, self._run))
        if typed_line and self._awaiting:
            self._run = self._awaiting[0][1]   # a chain runs its first command first
        return events

    def _echo_of_typed(self, args: tuple[str, ...]) -> bool:
        """The driver echoing a command typed before it (the first of a chain still waiting,
        or a later one): the same run, no new mention."""
        for i, (typed, run) in enumerate(self._awaiting):
            # the same text, or the same layers (a run-only value the shell expanded: "-C $DIR")
            if typed == args or (run is not None and self._problems_of(args) == run.problems):
                del self._awaiting[:i + 1]
                self._open_block = None   # nothing of the echoed run's output has come yet
                self._end_run()
                self._run = run
                return True
        return False

    def _problems_of(self, args: tuple[str, ...]) -> tuple:
        try:
            return self._parse(list(args))[0]
        except ValueError:
            return ()

    def _start(self, args: tuple[str, ...]) -> list[Event]:
        """A new run: one mention of each layer the command names."""
        closed = self._end_run()
        # output from here on is this command's: never "output without its command", even
        # when the command itself could not be read (it was reported already)
        self._orphan_told = True
        try:
            problems, warnings = self._parse(list(args))
        except ValueError as e:
            return closed + [Undecoded(f"MIOpenDriver command: {e}")]
        if not problems:
            return closed
        self._run = _Run(tuple(problems), problems[0].op)
        return closed + [Sighting(p, "mention", "driver-command", tuple(warnings)) for p in problems]

    def _parse(self, tokens: list[str]) -> tuple[tuple, tuple[str, ...]]:
        """Problems of a typed command (driver defaults for omitted flags); cached."""
        from miotui.driver import DriverCommandError, parse_driver_args
        key = tuple(tokens)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        try:
            parsed = parse_driver_args(tokens)
            result = (parsed.problems, parsed.warnings)
        except DriverCommandError as e:
            if "has no value" not in str(e) or len(tokens) < 3:
                raise
            # a command cut right after a flag: drop the flag, let the driver default stand
            parsed = parse_driver_args(tokens[:-1])
            result = (parsed.problems, parsed.warnings + (
                f"command cut short: trailing {tokens[-1]} without a value ignored (driver default used)",))
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key] = result
        return result

    def _end_run(self) -> list[Event]:
        events = self._close_block()
        self._run = None
        self._last_dir = None
        return events

    def _close_block(self) -> list[Event]:
        """An RNN timing block that ended without its timing lines was cut short."""
        if self._open_block is None:
            return []
        direction, self._open_block = self._open_block, None
        return [Undecoded(f"MIOpenDriver RNN '{direction}' time results cut short: the block has no GPU Kernel Time "
                          f"line")]

    def finish(self) -> list[Event]:
        """End of input: what is still open (a held command, an RNN timing block cut short)."""
        return self.flush() + self._end_run()

    # ------------------------------------------------------------------ output

    def _problem(self, direction: Optional[str], op: Optional[str]) -> Optional[Any]:
        run = self._run
        if run is None or direction is None:
            return None
        if run.op == "fusion":
            return run.problems[0] if direction == "fwd" else None
        if op is not None and op != run.op and op not in _OP_ALIASES.get(run.op, ()):
            return None
        for p in run.problems:
            d = p.direction
            if d == direction or (direction == "fwd" and d in ("fwd_train", "fwd_infer")):
                return p
        return None

    def _output(self, ol: OutputLine) -> list[Event]:
        k = ol.kind
        if k == "echo":  # only reached for odd spacing; treat like an echo
            return self._commands("MIOpenDriver " + ol.get("args", ""), hold=False) or []
        if k == "cut_result":
            return [Undecoded("MIOpenDriver result line cut short: "
                              f"{str(ol.get('text'))[:60]!r} has no value (the paste or the run ended here)")]
        if k == "time_header":
            events = self._close_block()
            self._last_dir = ol.direction   # the lines after it are that direction's
            if self._run is not None:
                self._open_block = ol.direction
            return events
        if k in ("version", "prng", "sysinfo", "stats_header", "info", "warning", "solutions_available",
                 "fusion"):
            if k == "solutions_available":
                self._last_dir = ol.direction
            return []
        run = self._run
        if run is None:
            return self._orphan(ol)
        if ol.direction is None and k in ("kernel_time", "wall_time") and self._last_dir is not None:
            # the RNN timer's lines (2024+) are the direction of the timing block they close
            ol = OutputLine(k, self._last_dir, None, ol.values)
        if ol.direction is not None:
            self._last_dir = ol.direction
        self._orphan_told = True
        if k in _RESULT_KINDS:
            self._open_block = None
            # a run with results is no longer waiting for its echo: the same command echoed
            # again is the next run (a paste of the same run twice)
            self._awaiting = [(a, r) for a, r in self._awaiting if r is not run]
        events = self._result(ol) if k in _RESULT_KINDS else []
        return events + self._annotations(ol, run)

    def _result(self, ol: OutputLine) -> list[Event]:
        """One execution of a direction, at its first result line in the run."""
        run = self._run
        direction = ol.direction if ol.direction is not None else self._last_dir
        p = self._problem(direction, ol.op if ol.kind != "stats" else None)
        if run is None or p is None:
            return []
        # a block prints each timing line once (verdict lines can repeat: batch norm checks dx,
        # dscale and dbias in turn), so a timing line seen again starts the next block
        kind = (ol.kind, ol.get("kind"))
        kinds = run.done.get(p.direction)
        if kinds is not None and (kind not in kinds or ol.kind not in _BLOCK_KINDS):
            kinds.add(kind)
            return []
        run.done[p.direction] = {kind}
        return [Sighting(p, "execution", "driver-output")]

    def _orphan(self, ol: OutputLine) -> list[Event]:
        """Result lines whose command is not in the log: one undecoded record per block --
        unless a ``stats:`` line and a problem key MIOpen logged before it name the layer
        together (a driver log pasted from the middle): then an execution of that layer, with
        a warning that the command was not seen."""
        if ol.kind == "stats":
            named = self._named_by_stats(ol)
            if named:
                self._orphan_told = True
                return named
        if ol.kind not in _RESULT_KINDS or self._orphan_told:
            return []
        self._orphan_told = True
        what = {"kernel_time": "a kernel time", "wall_time": "a wall-clock time", "verify": "a verification verdict",
                "stats": "a stats: line"}[ol.kind]
        where = f" ({ol.direction})" if ol.direction else ""
        return [Undecoded(f"MIOpenDriver output{where} without its command: {what} with no MIOpenDriver command "
                          f"before it, so its layer cannot be named")]

    def _named_by_stats(self, ol: OutputLine) -> list[Event]:
        stats = ol.get("stats")
        if self._recent_keys is None or stats is None or ol.op != "conv" or ol.direction is None:
            return []
        if None in (stats.n, stats.c, stats.k) or not stats.filter or not stats.out_spatial:
            return []
        from miotui.formats.miopen.keys import conv_from_stats
        convs, im2col = self._recent_keys()
        found = conv_from_stats(ol.direction, stats.n, stats.c, stats.k, stats.filter, stats.out_spatial,
                                tuple(convs), tuple(im2col))
        if found is None:
            return []
        problem, how, counted = found
        events: list[Event] = []
        if not counted:   # a key that was a layer already counted the call (its invoker line): only the time
            warning = (f"the MIOpenDriver command was not seen (the log starts after it): this layer is read from "
                       f"the driver's stats: line ({stats.name}) and {how}")
            events.append(Sighting(problem, "execution", "driver-output", (warning,)))
        if stats.time_ms is not None:
            events.append(Annotation("driver_kernel_ms", _fmt(stats.time_ms), problem))
        return events

    def _annotations(self, ol: OutputLine, run: _Run) -> list[Event]:
        k = ol.kind
        if k == "algorithm":
            p = self._problem(ol.direction, "conv")
            if p is None:
                return []
            out: list[Event] = [Annotation("algorithm", str(ol.get("algorithm")), p)]
            sid, name = ol.get("solution_id"), ol.get("solver")
            if sid is not None and sid > 0:
                out.append(Annotation("solver_id", str(sid), p))
            if name and name != "UNKNOWN":
                out.append(Annotation("solver", name, p))
            return out
        if k == "kernel_time":
            p = self._problem(ol.direction, ol.op)
            ms = ol.get("ms")
            return [Annotation("driver_kernel_ms", _fmt(ms), p)] if p is not None and ms is not None else []
        if k == "wall_time":
            p = self._problem(ol.direction, ol.op)
            ms = ol.get("ms")
            return [Annotation("driver_wall_ms", _fmt(ms), p)] if p is not None and ms is not None else []
        if k == "solution":
            p = self._problem(self._last_dir, "conv")
            if p is None:
                return []
            return [Annotation("find_result", f"{ol.get('name')} {_fmt(ol.get('time_ms'))} ms "
                                              f"ws={ol.get('workspace')}", p)]
        if k == "verify":
            return self._verdict(self._problem(ol.direction, ol.op), ol.get("verdict"), ol.get("error"),
                                 ol.get("tolerance"), ol.get("reference"))
        if k == "verify_detail":
            return self._verdict(self._problem(self._last_dir, ol.op), "failed", ol.get("error"), None, None)
        if k == "run_error":
            which = ol.get("which")
            msg = ol.get("message")
            if which == "RunForwardGPU":
                targets = [p for p in (self._problem("fwd", None),) if p is not None]
            elif which == "RunBackwardGPU":
                targets = [p for p in run.problems if p.direction in ("bwd", "wrw")]
            else:
                targets = list(run.problems)
            return [Annotation("driver_error", msg, p) for p in targets]
        if k == "error":
            return [Annotation("driver_error", ol.get("message"), p) for p in run.problems]
        return []

    def _verdict(self, p: Any, verdict: Optional[str], error: Optional[float], tolerance: Optional[float],
                 reference: Optional[str]) -> list[Event]:
        run = self._run
        if p is None or run is None or verdict is None:
            return []
        out: list[Event] = []
        if verdict == "failed":
            first = p.direction not in run.failed
            run.failed.add(p.direction)
            if first:
                out.append(Annotation("driver_verdict", "FAILED", p))
            if error is not None and first:
                out.append(Annotation("driver_verify_error", _fmt(error), p))
        else:
            if p.direction in run.failed:
                return []  # a later "passed on dbias" must not hide "FAILED on dscale"
            out.append(Annotation("driver_verdict", "OK", p))
            if error is not None:
                out.append(Annotation("driver_verify_error", _fmt(error), p))
        if tolerance is not None:
            out.append(Annotation("driver_tolerance", _fmt(tolerance), p))
        if reference is not None:
            out.append(Annotation("driver_reference", reference, p))
        return out


def _fmt(value: Optional[float]) -> str:
    """Numbers as the driver printed them (``%f`` trailing zeros dropped, 12 digits kept)."""
    return "" if value is None else format(value, ".12g")


_ALL_BASES = frozenset(KNOWN_BASES)


def _is_base(token: str) -> bool:
    return token in _ALL_BASES


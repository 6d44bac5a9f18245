"""MIOpenDriver's stdout, every version: the results of one run.

MIOpenDriver prints, per direction it runs, the algorithm/solver it used, the kernel
time, a ``stats:`` line and a verification verdict (``docs/formats.md`` §9).  Each line
is recognised by ``miotui.driver.output_lines.parse_output_line``; this module gathers
the lines of one run into a ``DriverOutput``, what the miopen-driver backend reads after
running a command.  ``miotui.formats.miopen.driver_output.DriverLogTracker`` finds driver runs
inside logs with the same line parser.
"""


from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from miotui.driver.output_lines import DriverStats, OutputLine, parse_output_line, parse_stats

__all__ = ["DirectionResult", "DriverOutput", "DriverOutputParser", "DriverStats", "ImmediateSolution",
           "OutputLine", "parse_driver_output", "parse_output_line", "parse_stats"]


# ============================================================================= values

@dataclass(frozen=True)
class ImmediateSolution:
    """``- id: 85 algo: 1, time: 0.5 ms, ws: 0, name: ConvDirectNaiveConvFwd`` (immediate mode)."""

    direction: Optional[str]
    solution_id: int
    algorithm: int
    time_ms: Optional[float]
    workspace: int
    name: str


@dataclass(frozen=True)
class DirectionResult:
    """What the driver reported for one direction of one run.

    ``direction``: ``fwd``, ``bwd`` (backward data), ``wrw`` (backward weights), or
    ``fwd_bias``/``bwd_bias`` for the conv driver's bias kernels (``-b 1``).
    ``kernel_ms`` is the average the driver printed when it printed one (``(average)``,
    ``Avg Time``); otherwise its single number (the last iteration for old conv,
    pooling and LRN drivers) or, failing that, the minimum (``Min Time``);
    ``kernel_ms_kind`` says which.  ``verdict`` is ``ok``/``failed``/None (not verified).
    """

    direction: str
    op: str
    algorithm: Optional[int] = None
    solution_id: Optional[int] = None
    solver: Optional[str] = None
    kernel_ms: Optional[float] = None
    kernel_ms_kind: str = ""
    kernel_min_ms: Optional[float] = None
    wall_ms: Optional[float] = None
    iterations: Optional[int] = None
    stats: Optional[DriverStats] = None
    verdict: Optional[str] = None
    error: Optional[float] = None
    tolerance: Optional[float] = None
    reference: Optional[str] = None
    checks: tuple[tuple[str, str, Optional[float]], ...] = ()
    run_error: Optional[str] = None

    @property
    def gflops(self) -> Optional[float]:
        """From the stats line, or None."""
        return self.stats.gflops if self.stats is not None else None


@dataclass(frozen=True)
class DriverOutput:
    """Everything parsed from one driver invocation's stdout (or several, in order)."""

    results: tuple[DirectionResult, ...] = ()
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    version: Optional[str] = None
    command: Optional[str] = None
    prng_seed: Optional[int] = None
    system_info: tuple[tuple[str, str], ...] = ()
    solutions: tuple[ImmediateSolution, ...] = ()
    fusion: Optional[str] = None

    def result(self, direction: str, op: Optional[str] = None) -> Optional[DirectionResult]:
        """The last result for ``direction`` (and ``op``, if given)."""
        for r in reversed(self.results):
            if r.direction == direction and (op is None or r.op == op):
                return r
        return None

    @property
    def verdict(self) -> Optional[str]:
        """``failed`` if any direction failed verification or failed to run (or, with
        nothing verified, any error was printed); ``ok`` if every verified direction
        passed; None if nothing was verified."""
        verdicts = [r.verdict for r in self.results if r.verdict is not None]
        if any(v == "failed" for v in verdicts) or any(r.run_error for r in self.results):
            return "failed"
        if self.errors and not verdicts:
            return "failed"
        return "ok" if verdicts else None



# ============================================================================= whole output

class _ResultBuilder:
    """Mutable result for one direction; frozen into a DirectionResult at the end."""

    def __init__(self, direction: str, op: str):
        self.data: dict[str, Any] = {"direction": direction, "op": op}
        self.checks: list[tuple[str, str, Optional[float]]] = []

    def has(self, name: str) -> bool:
        return self.data.get(name) is not None

    def freeze(self) -> DirectionResult:
        return DirectionResult(checks=tuple(self.checks), **self.data)


class _OutputBuilder:
    def __init__(self) -> None:
        self.order: list[_ResultBuilder] = []
        self.current: dict[tuple[str, str], _ResultBuilder] = {}
        self.last_key: Optional[tuple[str, str]] = None
        self.op_hint: Optional[str] = None
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.version: Optional[str] = None
        self.command: Optional[str] = None
        self.prng: Optional[int] = None
        self.sysinfo: tuple[tuple[str, str], ...] = ()
        self.solutions: list[ImmediateSolution] = []
        self.fusion: Optional[str] = None
        self.sol_direction: Optional[str] = None
        #: the direction of the RNN timing block in progress ("Forward RNN time results:")
        self.header_dir: Optional[str] = None

    def _op(self, op: Optional[str]) -> str:
        return op or self.op_hint or "conv"

    def builder(self, direction: str, op: Optional[str], field_name: Optional[str] = None) -> _ResultBuilder:
        """The builder for (direction, op); a new one if ``field_name`` is already set
        (the text holds a second run of the same direction)."""
        key = (direction, self._op(op))
        b = self.current.get(key)
        if b is None or (field_name is not None and b.has(field_name)):
            b = _ResultBuilder(*key)
            self.current[key] = b
            self.order.append(b)
        self.last_key = key
        return b

    def new_run(self) -> None:
        self.current = {}
        self.last_key = None

    def apply(self, ol: OutputLine) -> None:
        k = ol.kind
        if k in ("kernel_time", "wall_time") and ol.direction is None and self.header_dir is not None:
            ol = OutputLine(k, self.header_dir, "rnn", ol.values)
        if k == "time_header":
            self.header_dir = ol.direction
        elif k == "echo":
            self.header_dir = None
            if self.order:
                self.new_run()
            args = ol.get("args")
            if self.command is None:
                self.command = args
            base = args.split()[0] if args else ""
            self.op_hint = _op_of_base(base)
        elif k == "version":
            self.version = ol.get("version")
        elif k == "prng":
            self.prng = ol.get("seed")
        elif k == "sysinfo":
            self.sysinfo = ol.get("pairs")
        elif k == "fusion":
            self.fusion = ol.get("plan")
            self.op_hint = "fusion"
        elif k == "algorithm" and ol.direction:
            b = self.builder(ol.direction, "conv", "algorithm")
            b.data["algorithm"] = ol.get("algorithm")
            sid = ol.get("solution_id")
            name = ol.get("solver")
            if sid is not None:
                b.data["solution_id"] = sid
            if name and name != "UNKNOWN":
                b.data["solver"] = name
        elif k == "kernel_time" and ol.direction:
            kind = ol.get("kind")
            if kind == "min":
                b = self.builder(ol.direction, ol.op, "kernel_min_ms")
                b.data["kernel_min_ms"] = ol.get("ms")
                if not b.has("kernel_ms"):
                    b.data["kernel_ms"] = ol.get("ms")
                    b.data["kernel_ms_kind"] = "min"
            else:
                b = self.builder(ol.direction, ol.op, None)
                if b.has("kernel_ms") and b.data.get("kernel_ms_kind") != "min":
                    b = self.builder(ol.direction, ol.op, "kernel_ms")
                b.data["kernel_ms"] = ol.get("ms")
                b.data["kernel_ms_kind"] = kind
            if ol.get("iterations") is not None:
                b.data["iterations"] = ol.get("iterations")
        elif k == "wall_time" and ol.direction:
            b = self.builder(ol.direction, ol.op, "wall_ms")
            b.data["wall_ms"] = ol.get("ms")
            if ol.get("iterations") is not None and not b.has("iterations"):
                b.data["iterations"] = ol.get("iterations")
        elif k == "stats" and ol.direction:
            b = self.builder(ol.direction, ol.op, "stats")
            b.data["stats"] = ol.get("stats")
        elif k == "verify" and ol.direction:
            op = ol.op
            if self.op_hint == "fusion":
                op = "fusion"  # CBAInfer verifies with "Forward Activation ..." wording
            b = self.builder(ol.direction, op, None)
            check = ol.get("check")
            verdict = ol.get("verdict")
            if check is not None:
                b.checks.append((check, verdict, ol.get("error")))
            elif b.has("verdict") and not b.checks:
                b = self.builder(ol.direction, op, "verdict")  # a second run of this direction
            _merge_verdict(b, verdict, ol.get("error"), ol.get("tolerance"), ol.get("reference"))
        elif k == "verify_detail":
            if self.last_key is not None:
                b = self.current[self.last_key]
                _merge_verdict(b, "failed", ol.get("error"), None, None)
        elif k == "run_error":
            which = ol.get("which")
            msg = ol.get("message")
            targets = self._run_error_targets(which, ol.get("rc"))
            if targets:
                for b in targets:
                    b.data["run_error"] = msg
            self.errors.append(msg)
        elif k == "error":
            self.errors.append(ol.get("message"))
        elif k == "warning":
            self.warnings.append(ol.get("message"))
        elif k == "solutions_available":
            self.sol_direction = ol.direction
        elif k == "solution":
            self.solutions.append(ImmediateSolution(self.sol_direction, ol.get("id"), ol.get("algorithm"),
                                                    ol.get("time_ms"), ol.get("workspace"), ol.get("name")))

    def _run_error_targets(self, which: str, rc: Optional[str]) -> list[_ResultBuilder]:
        """RunForwardGPU -> the forward result; RunBackwardGPU -> backward data and/or weights
        (the conv driver ORs the weights error code shifted by 16 bits, docs/formats.md §8.2)."""
        code: Optional[int] = None
        if rc:
            try:
                code = int(rc, 16) if rc.lower().startswith("0x") else int(rc)
            except ValueError:
                code = None
        if which == "RunForwardGPU":
            dirs = ["fwd"]
        elif which == "RunBackwardGPU":
            if self.op_hint not in (None, "conv"):
                dirs = ["bwd"]
            elif code is None:
                dirs = ["bwd", "wrw"]
            else:
                dirs = [d for d, bits in (("bwd", code & 0xFFFF), ("wrw", code >> 16)) if bits]
        else:
            return []
        out: list[_ResultBuilder] = []
        for d in dirs:
            found = [b for (dd, _op), b in self.current.items() if dd == d]
            if found:
                out.extend(found)
            elif code is not None or d == "fwd" or self.op_hint not in (None, "conv"):
                out.append(self.builder(d, None))  # the run failed before printing anything
        return out

    def freeze(self) -> DriverOutput:
        return DriverOutput(results=tuple(b.freeze() for b in self.order), errors=tuple(self.errors),
                            warnings=tuple(self.warnings), version=self.version, command=self.command,
                            prng_seed=self.prng, system_info=self.sysinfo, solutions=tuple(self.solutions),
                            fusion=self.fusion)


def _merge_verdict(b: _ResultBuilder, verdict: Optional[str], error: Optional[float],
                   tolerance: Optional[float], reference: Optional[str]) -> None:
    """A failure sticks: a later ``passed on dbias`` does not undo ``FAILED on dscale``."""
    old = b.data.get("verdict")
    if verdict == "failed":
        b.data["verdict"] = "failed"
        if error is not None and (old != "failed" or b.data.get("error") is None):
            b.data["error"] = error
        if tolerance is not None:
            b.data["tolerance"] = tolerance
    elif old != "failed":
        b.data["verdict"] = verdict
        if error is not None:
            b.data["error"] = error
        if tolerance is not None:
            b.data["tolerance"] = tolerance
    if reference is not None:
        b.data["reference"] = reference


_OP_BASES = (("conv", "conv"), ("CBAInfer", "fusion"), ("CAInfer", "fusion"), ("pool", "pool"),
             ("bnorm", "bnorm"), ("activ", "activ"), ("lrn", "lrn"), ("softmax", "softmax"))
#: driver families whose op (``Problem.op``) has another name
_OP_OF_FAMILY = {"rnn_seq": "rnn", "ampadam": "adam", "transformersampadamw": "transformersadamw"}


def _op_of_base(base: str) -> Optional[str]:
    for prefix, op in _OP_BASES:
        if base.startswith(prefix):
            return op
    from miotui.driver.tables import subcommand_for_base
    sub = subcommand_for_base(base)
    return _OP_OF_FAMILY.get(sub.family, sub.family) if sub is not None else None


class DriverOutputParser:
    """Incremental form of ``parse_driver_output`` for output streamed line by line
    (the miopen-driver backend shows results while the driver still runs)."""

    def __init__(self) -> None:
        self._builder = _OutputBuilder()

    def feed(self, line: str) -> Optional[OutputLine]:
        """Take one line; returns what it was recognised as (None: not driver output)."""
        try:
            ol = parse_output_line(line)
            if ol is not None:
                self._builder.apply(ol)
            return ol
        except Exception:  # pragma: no cover - a parser bug must not lose the run's output
            return None

    def output(self) -> DriverOutput:
        """Everything seen so far (the parser can keep being fed)."""
        return self._builder.freeze()


def parse_driver_output(text: str) -> DriverOutput:
    """Parse MIOpenDriver's stdout (any version); never raises.

    Unrecognised lines (library log lines, profiler output) are skipped.  If the text
    holds several runs (several echo lines), results are listed per run in order;
    ``DriverOutput.result(direction)`` gives the last.
    """
    parser = DriverOutputParser()
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        parser.feed(line)
    return parser.output()

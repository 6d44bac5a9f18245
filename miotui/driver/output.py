"""MIOpenDriver's stdout, every version: the results of one run.

MIOpenDriver prints, per direction it runs, the algorithm/solver it used, the kernel
time, a ``stats:`` line and a verification verdict (``miopen_formats.md`` §6).  The
wording changed many times between 2017 and 2026 (``Verifies on CPU and GPU`` ->
``Verifies OK on GPU reference (e < tol)``, ``Failed:`` -> ``FAILED:``, ``MIOpenDriver:``
-> ``MIOpenDriver``, ``(average)`` added, ``Solution: id/name`` added, ...), and the
numbers are not always where the headers say (§6.2 "stats field order pitfalls").

One line parser (``parse_output_line``) serves two consumers: ``parse_driver_output(text)``
-> ``DriverOutput``, what the miopen-driver backend reads after running a command, and
``miotui.logs.driver_output.DriverLogTracker``, which finds driver runs inside logs.
"""


from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Optional


# ============================================================================= values


@dataclass(frozen=True)
class DriverStats:
    """One ``stats:`` line, its numbers put where they belong.

    Conv lines print ``n, c, ho, wo, fh, fw, k`` (forward, weights) but ``n, c, fh, fw, k,
    ho, wo`` (backward data) under the same header, and the header's ``x, y`` are really
    (filter height, filter width); 3-D lines add depths and the 3-D backward-data line
    lacks a comma.  ``values`` keeps the raw fields for anything not interpreted.
    """

    name: str
    values: tuple[str, ...]
    n: Optional[int] = None
    c: Optional[int] = None
    k: Optional[int] = None
    out_spatial: tuple[int, ...] = ()
    filter: tuple[int, ...] = ()
    flop_count: Optional[int] = None
    bytes_read: Optional[int] = None
    bytes_written: Optional[int] = None
    gflops: Optional[float] = None
    gbps: Optional[float] = None
    time_ms: Optional[float] = None
    complete: bool = True


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


# ============================================================================= one line

@dataclass(frozen=True)
class OutputLine:
    """A recognised driver output line: its kind, direction/op if any, and values."""

    kind: str
    direction: Optional[str] = None
    op: Optional[str] = None
    values: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        for k, v in self.values:
            if k == name:
                return v
        return default


_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)"


def _float(text: Optional[str]) -> Optional[float]:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _int(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    return None


#: words naming the newer drivers' ops in their result lines -> op; longest first, so
#: ``AddLayerNorm`` is not read as ``LayerNorm``
_OP_WORDS = (("addlayernorm", "addlayernorm"), ("t5layernorm", "t5layernorm"), ("layernorm", "layernorm"),
             ("groupnorm", "groupnorm"), ("multimarginloss", "multimarginloss"),
             ("softmarginloss", "softmarginloss"), ("reduce calculation", "reducecalculation"),
             ("reduceextreme", "reduceextreme"), ("reducetensor", "reduce"), ("reduction", "reduce"),
             ("kthvalue", "kthvalue"), ("getitem", "getitem"), ("prelu", "prelu"), ("rope", "rope"),
             ("glu", "glu"), ("cat", "cat"), ("adam", "adam"), ("gemm", "gemm"), ("rnn", "rnn"),
             ("dropout", "dropout"), ("tensor op", "tensorop"), ("ctc", "ctc"))
#: ops whose drivers run one way only: a result line without a direction word is forward
_ONE_WAY = frozenset({"gemm", "reduce", "tensorop", "ctc", "dropout", "kthvalue", "cat", "adam", "reduceextreme",
                      "reducecalculation", "groupnorm", "addlayernorm", "multimarginloss"})


def _new_op(w: str) -> Optional[str]:
    low = w.lower()
    for word, op in _OP_WORDS:
        if word in low:
            return op
    return None


def _phrase(what: str) -> tuple[Optional[str], Optional[str]]:
    """('Forward Conv.' | 'Backward Data Conv.' | 'Backwards Batch Normalization' | 'Backward RNN
    Weights' | 'Kthvalue Fwd' | 'Gemm' ...) -> (direction, op)."""
    w = what.replace("GPU ", "").strip()
    if w.startswith("Forward"):
        direction: Optional[str] = "fwd_bias" if "Bias" in w else "fwd"
    elif w.startswith(("Backward Data", "Backward Convolution Data")):
        direction = "bwd"
    elif w.startswith(("Backward Weights", "Backward Convolution Weights")) or \
            (w.startswith("Backward RNN") and "Weights" in w):
        direction = "wrw"
    elif w.startswith(("Backward Bias", "Backward Convolution Bias")):
        direction = "bwd_bias"
    elif w.startswith("Backward"):
        direction = "bwd"
    elif w.endswith(" Fwd"):
        direction = "fwd"
    else:
        direction = None
    if "Conv" in w:
        op: Optional[str] = "conv"
    elif "Pooling" in w:
        op = "pool"
    elif "Batch Norm" in w or "batch norm" in w:
        op = "bnorm"
    elif "Activation" in w or "neuron" in w:
        op = "activ"
    elif "LRN" in w:
        op = "lrn"
    elif "Softmax" in w:
        op = "softmax"
    else:
        op = _new_op(w)
    if direction is None and op in _ONE_WAY:
        direction = "fwd"
    return direction, op


#: the driver's echo of its own command line
ECHO_RE = re.compile(r"^MIOpenDriver(?:\.exe)?:? +(\S.*)$")
_VERSION_RE = re.compile(r"^MIOpen \(version: ([^)]*)\)")
_ALGO_RE = re.compile(r"^MIOpen (Forward|Backward Data|Backward Weights) Conv\. Algorithm: (-?\d+)"
                      r"(?:, Solution: (-?\d+)/(\S.*?))?\s*$")
_TIME_RE = re.compile(r"^(GPU (?:Fused )?Kernel|Wall-clock)(?: (Min|Avg))? Time (?:(.+?) )?Elapsed: "
                      rf"({_NUM}) ms(.*)$")
_ITER_RE = re.compile(r"for (\d+) iterations")
_VERIFY_OK_RE = re.compile(r"^((?:(?:Forward|Backward|Backwards|CTC)\b|ReduceTensor\(\)).*?) Verifies (?:\w+ )?(?:OK )?"
                           r"(?:on|against) (?:[\w-]+ )?(?:(GPU|CPU) reference|CPU and GPU|(CPU))\.?"
                           r"(?: ?\(([^)]*)\))?\s*$")
_BN_CHECK_RE = re.compile(r"^(Forward train batch norm|Forward batch norm|Backwards prop batch norm) "
                          r"verification (passed|FAILED|failed) on ([\w ]+?)"
                          rf"(?:\.|: ({_NUM})| \(({_NUM})\))?\s*$")
_VERIFY_FAIL_RE = re.compile(r"^((?:(?:Forward|Backward|Backwards|CTC)\b|ReduceTensor\(\)).*?) (?:[Vv]erification )?"
                             r"(?:FAILED|Failed)(.*)$")
_FAIL_TAIL_RE = re.compile(rf"^(?: against [\w-]+ CPU reference)?(?::\s*({_NUM})(?:\s*>\s*({_NUM}))?|"
                           rf"\s*\(({_NUM}),\s*[^)]*\)|\s*!*| with error = ({_NUM}).*)\s*$")
#: the first part of a timing line, cut before its value (a paste's last line, a killed run); prose
#: that starts like one ("GPU Kernel Time 6.39 is lower than ...") is not
_CUT_TIME_RE = re.compile(r"^(?:GPU (?:Fused )?Kernel|Wall-clock)(?: (?:Min|Avg))? Time(?: [A-Za-z][A-Za-z.]*)*"
                          r"(?: Elapsed:?(?: [\d.]*)?)?$")
#: the RNN driver's per-direction timing block (2024+): a header, then direction-less lines
_TIME_HEADER_RE = re.compile(r"^(Forward|Backward Data|Backward Weights) RNN time results:\s*$")
_LAUNCH_RE = re.compile(r"^launch#\s*\d+\s*,\s*host_time=")
#: the RNN driver's checks of hidden/cell states, after its main verdict
_RNN_STATE_CHECK_RE = re.compile(r"^(?:final hidden|final cell|initial hidden|inital cell|difference at inital)")
_DIFF_RE = re.compile(rf"^Difference(?: in [\w -]+)?\s*:?\s*({_NUM})? ?too large")
_SQR_RE = re.compile(rf"^Sqr error\s*:\s*({_NUM})")
_RUN_ERR_RE = re.compile(r"^(RunForwardGPU|RunBackwardGPU|RunForwardCPU|RunBackwardCPU|ParseCmdLineArgs|"
                         r"AllocateBuffersAndCopy|VerifyForward|VerifyBackward)\(\) FAILED, rc = (\S+)")
_FLAG_ERR_RE = re.compile(r"(Input Flag: \S+ Not Found !|Long Name: \S+ Not Found !)")
_SOLCOUNT_RE = re.compile(r"^(Forward|Backward Data|Backward Weights) Conv solutions available: (\d+)")
_SOLUTION_RE = re.compile(rf"^- id: (\d+) algo: (-?\d+), time: ({_NUM}) ms, ws: (\d+), name: (\S+)")
_SOLWARN_RE = re.compile(r"^Warning: Solution id \((-?\d+)\) is not reported by the library")
_PRNG_RE = re.compile(r"^PRNG seed: (\d+)")
_FUSION_RE = re.compile(r"^Running fusion: (.+?)\s*$")
_ERROR_STARTS = (
    "FAILED: Invalid", "Incorrect ", "Illegal input flag", "Error copying data to GPU",
    "Fatal: Error copying data to GPU", "MIOpen Error:", "terminate called after throwing",
    "what():", "Error: ", "Memory access fault", "Segmentation fault", "Aborted (core dumped)",
    "Cross channel LRN needs do_backward=1", "Fusion mode out of range", "Cannot handle layout",
    "reference kernel fail to run", "gpu reference convolution does not support bias",
    "Unknown batch norm state", "Unsupported forward cpu run state", "Something went wrong.",
    "Batch normalization mode forward GPU selection out of range",
)
_WARNING_STARTS = ("Int8 Backward Convolution is not supported", "Warm-up: Error", "Warm-up: This step",
                   "Warm-up: RunWarmupFindForwardGPU")
_INFO_STARTS = ("Warm-up:", "max difference in", "Number of elements", "Number of bad elements",
                "GEMM verification done", "Running CPU ", "stats: <not implemented>")
_FIRST_CHARS = frozenset("MGWsFBPTISDmRALEt-wCrgUNlfid")


def _verify_inner(inner: Optional[str]) -> tuple[Optional[float], Optional[float]]:
    """'(2.7e-05 < 0.0656)' / '(3.7e-08)' / '(err=0.000012)' / '(1e-06, 9)' -> (error, tolerance)."""
    if not inner:
        return None, None
    text = inner.strip()
    if text.startswith("err="):
        return _float(text[4:]), None
    if "<" in text:
        a, _, b = text.partition("<")
        return _float(a.strip()), _float(b.strip())
    first = text.split(",")[0].strip()
    return _float(first), None


def parse_stats(body: str) -> Optional[DriverStats]:
    """The part after ``stats:`` of a values line (not the header)."""
    raw = [f.strip() for f in body.split(",")]
    fields: list[str] = []
    for f in raw:
        # the 3-D backward-data line lacks the comma before flopCnt ("7  12345")
        fields.extend(f.split())
    if not fields:
        return None
    name, vals = fields[0], tuple(fields[1:])
    m = re.match(r"^(fwd|bwdd|bwdw)-conv(\d+(?:x\d+)+)(?:u\d+)?$", name)
    nums = [_float(v) for v in vals]

    def num(i: int) -> Optional[float]:
        return nums[i] if i < len(nums) else None

    def inum(i: int) -> Optional[int]:
        v = num(i)
        return int(v) if v is not None and math.isfinite(v) else None

    if m:
        nd = len(m.group(2).split("x"))
        kind = m.group(1)
        dims = [inum(i) for i in range(2 + 2 * nd + 1)]
        if kind == "bwdd":  # n, c, f..., k, o...
            filt, k, outs = dims[2:2 + nd], dims[2 + nd], dims[3 + nd:3 + 2 * nd]
        else:  # n, c, o..., f..., k
            outs, filt, k = dims[2:2 + nd], dims[2 + nd:2 + 2 * nd], dims[2 + 2 * nd]
        base = 2 + 2 * nd + 1
        complete = len(vals) >= base + 6
        return DriverStats(
            name, vals, n=dims[0], c=dims[1], k=k,
            out_spatial=tuple(v for v in outs if v is not None) if all(v is not None for v in outs) else (),
            filter=tuple(v for v in filt if v is not None) if all(v is not None for v in filt) else (),
            flop_count=inum(base), bytes_read=inum(base + 1), bytes_written=inum(base + 2),
            gflops=num(base + 3), gbps=num(base + 4), time_ms=num(base + 5), complete=complete)
    if name in ("fwd-activ", "bwd-activ"):
        return DriverStats(name, vals, bytes_read=inum(0), bytes_written=inum(1), gbps=num(2),
                           time_ms=num(3), complete=len(vals) >= 4)
    if name in ("bnormf", "bnormb"):
        return DriverStats(name, vals, flop_count=inum(0), bytes_read=inum(1), bytes_written=inum(2),
                           gflops=num(3), gbps=num(4), time_ms=num(5), complete=len(vals) >= 6)
    last = next((v for v in reversed(nums) if v is not None), None)
    return DriverStats(name, vals, time_ms=last, complete=True)


def _verdict_line(text: str) -> Optional[OutputLine]:
    """A verification verdict.  Verdict lines always name the operation ("Forward Convolution",
    "Backward Pooling", "CTC loss", "ReduceTensor()"...); requiring it keeps a framework's
    "Backward pass Failed" from passing for one."""
    m = _VERIFY_OK_RE.match(text)
    if m:
        what, ref, bare_cpu, inner = m.groups()
        ref = ref or bare_cpu
        d, op = _phrase(what)
        if d is not None and op is not None:
            err, tol = _verify_inner(inner)
            return OutputLine("verify", d, op, (("verdict", "ok"), ("error", err), ("tolerance", tol),
                                                ("reference", ref or "CPU")))
    m = _VERIFY_FAIL_RE.match(text)
    if m:
        what, tail = m.groups()
        d, op = _phrase(what)
        t = _FAIL_TAIL_RE.match(tail)
        if d is not None and op is not None and t is not None:
            err = _float(t.group(1) or t.group(3) or t.group(4))
            tol = _float(t.group(2))
            return OutputLine("verify", d, op, (("verdict", "failed"), ("error", err), ("tolerance", tol)))
    return None


def parse_output_line(line: str) -> Optional[OutputLine]:
    """Classify one line of MIOpenDriver output; None if it is not driver output."""
    text = line.strip()
    if not text or text[0] not in _FIRST_CHARS:
        if text and ("Not Found !" in text):
            m = _FLAG_ERR_RE.search(text)
            if m:
                return OutputLine("error", values=(("message", m.group(1)),))
        return None
    c = text[0]
    if c == "M":
        if text.startswith("MIOpen "):
            m = _ALGO_RE.match(text)
            if m:
                d, _ = _phrase(m.group(1) + " Conv.")
                return OutputLine("algorithm", d, "conv", (("algorithm", int(m.group(2))),
                                                           ("solution_id", _int(m.group(3))),
                                                           ("solver", m.group(4))))
            m = _VERSION_RE.match(text)
            if m:
                return OutputLine("version", values=(("version", m.group(1).strip()),))
            if text.startswith("MIOpen Error:"):
                return OutputLine("error", values=(("message", text),))
            return None
        m = ECHO_RE.match(text)
        if m:
            return OutputLine("echo", values=(("args", m.group(1).strip()),))
    if c in "GW":
        m = _TIME_RE.match(text)
        if m:
            src, minavg, what, ms, rest = m.groups()
            if what:
                d, op = _phrase(what)
            elif "Fused" in text or _ITER_RE.search(rest):
                d, op = "fwd", "fusion"   # CBAInfer: "GPU Fused Kernel ...", "Wall-clock ..., for N iterations."
            else:
                d, op = None, None        # the RNN timer (2024+): the direction is in the header before it
            iters = _ITER_RE.search(rest)
            if src == "Wall-clock":
                return OutputLine("wall_time", d, op, (("ms", _float(ms)),
                                                       ("iterations", int(iters.group(1)) if iters else None)))
            if "(average)" in rest or minavg == "Avg":
                kind = "average"
            elif minavg == "Min":
                kind = "min"
            else:
                kind = "single"
            return OutputLine("kernel_time", d, op, (("ms", _float(ms)), ("kind", kind),
                                                     ("iterations", int(iters.group(1)) if iters else None)))
        if _CUT_TIME_RE.match(text):
            # a timing line that does not parse: cut short (a paste's last line, a killed run)
            return OutputLine("cut_result", values=(("text", text),))
    if c == "s" and text.startswith("stats:"):
        body = text[6:].strip()
        if body.startswith("name"):
            return OutputLine("stats_header", values=(("fields", tuple(f.strip() for f in body.split(","))),))
        if body.startswith("<not implemented>"):
            return OutputLine("info")
        stats = parse_stats(body)
        if stats is None:
            return OutputLine("info")
        d = None
        op = None
        if stats.name.startswith("fwd-conv"):
            d, op = "fwd", "conv"
        elif stats.name.startswith("bwdd-conv"):
            d, op = "bwd", "conv"
        elif stats.name.startswith("bwdw-conv"):
            d, op = "wrw", "conv"
        elif stats.name in ("fwd-activ", "bwd-activ"):
            d, op = ("fwd" if stats.name[0] == "f" else "bwd"), "activ"
        elif stats.name in ("bnormf", "bnormb"):
            d, op = ("fwd" if stats.name == "bnormf" else "bwd"), "bnorm"
        return OutputLine("stats", d, op, (("stats", stats),))
    if c in "FB":
        m = _TIME_HEADER_RE.match(text)
        if m:
            return OutputLine("time_header", _phrase(m.group(1) + " RNN")[0], "rnn")
        m = _BN_CHECK_RE.match(text)
        if m:
            what, res, on, e1, e2 = m.groups()
            d = "bwd" if what.startswith("Backwards") else "fwd"
            verdict = "ok" if res == "passed" else "failed"
            return OutputLine("verify", d, "bnorm", (("verdict", verdict), ("error", _float(e1 or e2)),
                                                     ("check", on.strip())))
        verdict = _verdict_line(text)
        if verdict is not None:
            return verdict
        m = _SOLCOUNT_RE.match(text)
        if m:
            d, _ = _phrase(m.group(1) + " Conv.")
            return OutputLine("solutions_available", d, "conv", (("count", int(m.group(2))),))
        if text.startswith("FAILED: Invalid"):
            return OutputLine("error", values=(("message", text),))
        if text.startswith(_ERROR_STARTS):
            return OutputLine("error", values=(("message", text),))
        return None
    if c == "-":
        m = _SOLUTION_RE.match(text)
        if m:
            return OutputLine("solution", values=(("id", int(m.group(1))), ("algorithm", int(m.group(2))),
                                                  ("time_ms", _float(m.group(3))), ("workspace", int(m.group(4))),
                                                  ("name", m.group(5))))
        return None
    if c == "P":
        m = _PRNG_RE.match(text)
        if m:
            return OutputLine("prng", values=(("seed", int(m.group(1))),))
    if c == "T" and text.startswith("Timestamp: ") and "; " in text:
        pairs = []
        for part in text.split("; "):
            k, sep, v = part.partition(": ")
            if sep:
                pairs.append((k.strip(), v.strip()))
        return OutputLine("sysinfo", values=(("pairs", tuple(pairs)),))
    if c == "R":
        m = _FUSION_RE.match(text)
        if m:
            return OutputLine("fusion", "fwd", "fusion", (("plan", m.group(1)),))
    if c in "CR":
        verdict = _verdict_line(text)
        if verdict is not None:
            return verdict
    if c == "l" and _LAUNCH_RE.match(text):
        return OutputLine("info")
    if c in "fid" and _RNN_STATE_CHECK_RE.match(text):
        return OutputLine("info")
    m = _RUN_ERR_RE.match(text)
    if m:
        return OutputLine("run_error", values=(("which", m.group(1)), ("rc", m.group(2)), ("message", text)))
    if c == "D":
        m = _DIFF_RE.match(text)
        if m:
            op = "activ" if "neuron" in text else None
            return OutputLine("verify_detail", None, op, (("error", _float(m.group(1))),))
    if c == "S":
        m = _SQR_RE.match(text)
        if m:
            return OutputLine("verify_detail", values=(("error", _float(m.group(1))),))
    if "Not Found !" in text:
        m = _FLAG_ERR_RE.search(text)
        if m:
            return OutputLine("error", values=(("message", m.group(1)),))
    if text.startswith(_ERROR_STARTS):
        return OutputLine("error", values=(("message", text),))
    m = _SOLWARN_RE.match(text)
    if m or text.startswith(_WARNING_STARTS):
        return OutputLine("warning", values=(("message", text),))
    if text.startswith(_INFO_STARTS):
        return OutputLine("info")
    return None


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
        (the conv driver ORs the weights error code shifted by 16 bits, §5.1)."""
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

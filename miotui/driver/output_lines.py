"""MIOpenDriver's stdout, one line at a time: what a line is and the numbers in it.

The wording changed many times between 2017 and 2026 (``Verifies on CPU and GPU`` ->
``Verifies OK on GPU reference (e < tol)``, ``Failed:`` -> ``FAILED:``, ``MIOpenDriver:``
-> ``MIOpenDriver``, ``(average)`` added, ``Solution: id/name`` added, ...), and the
numbers are not always where the headers say (``docs/formats.md`` §9.3).  ``parse_output_line``
recognises every form; ``miotui.driver.output``
puts the lines of a whole run together and ``miotui.formats.miopen.driver_output`` finds runs in logs.
"""


from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["DriverStats", "OutputLine", "parse_output_line", "parse_stats"]


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
    if t.isascii() and t.lstrip("-").isdigit():
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

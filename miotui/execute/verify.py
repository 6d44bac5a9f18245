"""Compare a backend's outputs with the verification reference, the way MIOpenDriver would.

The reference (:mod:`miotui.execute.oracle`) is float64 code that shares none of the
checked backend's: a direct tap sum for convolutions, formulations of their own for
the other kinds; its name travels with the result (``Verification.reference``).

MIOpenDriver decides "Verifies OK" / "FAILED" per layer kind with its own metric and
tolerance (``docs/formats.md`` §9.5, ``driver/*_driver.hpp``):

* convolution: ``miopen::rms_range`` (RMS of the difference over the largest
  magnitude in either buffer) against ``GetDefaultTolerance``: 1.5e-6 for 4- and 1-byte
  types, 8.2e-3 for 2-byte ones, x8 for bf16, x37 for fp8/bf8; x10 for ImplicitGEMM
  forward / backward data; backward weights 2x base, x2 more for fp32 transposed,
  x10 fp32 Winograd, ImplicitGEMM fp32 a fixed 0.01 and fp16 x5, bf8 x2.
* batch norm: rms_range per output, 1e-4 (fp32) / 2e-3 (16-bit: fp16 and bf16);
  backward x1000 (``bn_driver.hpp`` RMSTOL_FP32 / RMSTOL_FP16 in MIOpen's rocm-libraries
  tree; ROCm/MIOpen's last tree, 2024, had 5e-4 for 16-bit, which a bf16 output rounded
  once already misses: about 6e-4 on these inputs).
* pooling: forward max |diff| per element (1e-5 fp32, 5e-3 16-bit, 1e-6 fp64),
  backward plain RMS of the difference (1e-6 / 5e-3).
* activation and CBAInfer fusion: every element within 80 machine epsilons of the
  data type, absolutely or relatively.
* LRN: rms_range 1.5e-4 forward, 6e-5 backward, fp32 and fp16 alike (``lrn_driver.hpp``);
  MIOpen has no bf16 LRN driver: x8 for bf16 (miotui's, as MIOpen's softmax and
  layer-norm drivers scale bf16's 3 fewer mantissa bits).
* softmax: rms_range 1e-3 fp32, 5e-2 16-bit, x8 for bf16 (``softmax_driver.hpp``
  GetTolerance).
* RNN (``rnn_driver.hpp``, ``rnn_seq_driver.hpp``): rms_range per output (y, hy, cy;
  dx, dhx, dcx; dw) against 1e-6 for 4-byte data, 5e-2 otherwise.
* layer norm, add / T5 layer norm, group norm: rms_range per output (y, mean, rstd;
  dx, dw, db) against 1.5e-6 fp32, 8.2e-3 fp16, x8 for bf16.
* reduce: rms_range 1.5e-4, x4 fp16, x12 for an fp32 norm2; the indices must match
  exactly (``reduce_driver.hpp``).

Every 16-bit verdict also says what rounding the reference itself to the output's type
gives by the same metric (the least error any fp16/bf16 output can have): a failure
then says plainly whether the tolerance is below that floor (no output of that type
can pass) or the backend's own arithmetic lost the precision (e.g. torch on the CPU
computing a layer step by step in fp16).

One deliberate addition: a backward-weights result sums N*Ho*Wo products per weight,
up to 1e5 on real layers, and its rounding error grows with that length (the notes
measured torch's fp32 weight gradient at 3.9e-6 norm-relative there, above MIOpen's
fixed 3e-6).  The weights tolerance is therefore scaled by sqrt(L / 4096) once the
reduction length L exceeds 4096 (about the longest forward reduction, C*R*S, of
common networks, where the fixed tolerance is known to hold); ``how`` says so.

numpy is imported inside the functions: this module is light to import.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping, Optional

from miotui.families import UnknownFamily, family_of
from miotui.problems import (
    REDUCE_OPS,
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    FusionProblem,
    GroupNormProblem,
    LayerNormProblem,
    LRNProblem,
    PoolProblem,
    Problem,
    ReduceProblem,
    RNNProblem,
    SoftmaxProblem,
)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["Verification", "rms_range", "tolerance_for", "compare", "algorithm_kind",
           "WRW_REDUCTION_BASE"]

#: Reduction length up to which MIOpen's fixed weight-gradient tolerance is kept.
WRW_REDUCTION_BASE = 4096
WRW_GROWTH_CAP = 16.0

_DBL_MIN = sys.float_info.min
_DBL_MAX = sys.float_info.max

#: Machine epsilon per data type (activation/fusion checks use 80 of them).
_EPSILON = {"fp32": 2.0 ** -23, "fp16": 2.0 ** -10, "bf16": 2.0 ** -7, "fp64": 2.0 ** -52,
            "fp8": 2.0 ** -3, "bf8": 2.0 ** -2, "int8": 2.0 ** -23, "unknown": 2.0 ** -23}


@dataclass(frozen=True)
class Verification:
    """The outcome of one comparison.  ``error`` is the number that was held against
    ``tolerance`` (the value of ``metric``); ``how`` says what was measured, the
    tolerance applied, and why that tolerance; ``reference`` names what the outputs were
    compared against (:func:`miotui.execute.oracle.reference_name`: never the checked
    backend's own algorithm)."""

    max_abs: float
    max_rel: float
    rms_range: float
    tolerance: float
    ok: bool
    how: str
    metric: str = "rms_range"
    error: float = 0.0
    reference: str = "float64 reference"


def _as_f64(a: Any) -> "np.ndarray":
    import numpy as np
    return np.asarray(a, dtype=np.float64).reshape(-1)


def rms_range(ref: Any, out: Any) -> float:
    """MIOpen's ``miopen::rms_range`` (``test/verify.hpp``):
    sqrt(sum((ref-out)^2)) / (sqrt(n) * max(|max_mag(ref)|, |max_mag(out)|, DBL_MIN));
    0 for empty buffers, the largest double when the sizes differ."""
    import numpy as np
    r, o = _as_f64(ref), _as_f64(out)
    if r.size != o.size:
        return _DBL_MAX
    if r.size == 0:
        return 0.0
    d = r - o
    with np.errstate(over="ignore", invalid="ignore"):
        num = math.sqrt(float(np.dot(d, d)))
        mag = max(float(np.max(np.abs(r))), float(np.max(np.abs(o))), _DBL_MIN)
    return num / (math.sqrt(r.size) * mag)


def algorithm_kind(algorithm: Optional[str]) -> Optional[str]:
    """"igemm", "winograd" or None from an algorithm annotation: a miopenConvAlgorithm_t
    number (3 Winograd, 5 ImplicitGEMM), a name, a solver name or a find result."""
    if not algorithm:
        return None
    text = str(algorithm).strip()
    token = text.split()[0] if text.split() else text
    if token.isascii() and token.isdigit():
        return {3: "winograd", 5: "igemm"}.get(int(token))
    low = text.lower()
    if "implicitgemm" in low or "igemm" in low or "implicit_gemm" in low:
        return "igemm"
    if "winograd" in low or "wino" in low:
        return "winograd"
    return None


def _wrw_reduction_length(p: ConvProblem) -> int:
    """Products summed per weight-gradient element: N times the underlying conv's output size."""
    spatial = p.in_spatial if p.mode == "trans" else p.out_spatial
    return p.n * math.prod(spatial)


def _conv_tolerance(p: ConvProblem, algorithm: Optional[str]) -> tuple[float, str]:
    dtype = "fp32" if p.dtype in ("unknown", "fp64") else p.dtype
    parts: list[str] = []
    if dtype in ("fp32", "int8", "fp8", "bf8"):
        tol = 1.5e-6
        parts.append(f"1.5e-6 base for {dtype} (GetDefaultTolerance: 4- and 1-byte types)")
    else:
        tol = 8.2e-3
        parts.append(f"8.2e-3 base for {dtype} (GetDefaultTolerance: 2-byte types)")
    if p.dtype == "fp64":
        parts.append("MIOpenDriver has no fp64 convolution; fp32's tolerance is used")
    if dtype == "bf16":
        tol *= 8.0
        parts.append("x8 for bf16 (3 fewer mantissa bits than fp16)")
    if dtype in ("fp8", "bf8"):
        tol *= 37.0
        parts.append(f"x37 for {dtype}")
    kind = algorithm_kind(algorithm)
    if p.direction in ("fwd", "bwd"):
        if kind == "igemm":
            tol *= 10.0
            parts.append(f"x10 for ImplicitGEMM ({algorithm})")
        return tol, "; ".join(parts)
    tol *= 2.0
    parts.append("x2 for backward weights (VerifyBackward)")
    if p.mode == "trans" and dtype == "fp32":
        tol *= 2.0
        parts.append("x2 for an fp32 transposed convolution")
    if kind == "winograd" and dtype == "fp32":
        tol *= 10.0
        parts.append(f"x10 for fp32 Winograd weights ({algorithm})")
    elif kind == "igemm":
        if dtype == "fp32":
            tol = 0.01
            parts.append(f"fixed 0.01 for fp32 ImplicitGEMM weights ({algorithm}; WORKAROUND_ISSUE_2176)")
        elif dtype == "fp16":
            tol *= 5.0
            parts.append(f"x5 for fp16 ImplicitGEMM weights ({algorithm})")
    if dtype == "bf8":
        tol *= 2.0
        parts.append("x2 for bf8 weights")
    length = _wrw_reduction_length(p)
    if length > WRW_REDUCTION_BASE and dtype == "fp32" and tol < 1e-3:
        # Only fp32's tiny base needs room for accumulation rounding over a long reduction;
        # 2-byte types are dominated by input rounding, and an unbounded factor would let a
        # grossly wrong output pass. Capped so rms_range stays a meaningful check.
        grow = min(math.sqrt(length / WRW_REDUCTION_BASE), WRW_GROWTH_CAP)
        tol *= grow
        parts.append(f"x{grow:.2f} = sqrt(L/{WRW_REDUCTION_BASE}) for the reduction length "
                     f"L = N*Ho*Wo = {length} (rounding error grows with it; miotui's addition)")
    elif length > WRW_REDUCTION_BASE:
        parts.append(f"reduction length N*Ho*Wo = {length}: not grown (only fp32 is)")
    else:
        parts.append(f"reduction length N*Ho*Wo = {length} <= {WRW_REDUCTION_BASE}: not grown")
    return tol, "; ".join(parts)


def _two_byte(dtype: str) -> bool:
    return dtype in ("fp16", "bf16")


def tolerance_for(problem: Problem, algorithm: Optional[str] = None) -> tuple[float, str]:
    """(tolerance, why) MIOpenDriver would apply to this layer's comparison (see the module
    docstring); ``algorithm`` is the algorithm/solver that produced the result, if known.
    The rule is the family's ``tolerance`` entry (:mod:`miotui.families`)."""
    try:
        entry = family_of(problem).tolerance
    except UnknownFamily:
        entry = None
    if entry is None or not entry.applies:
        raise TypeError(f"no tolerance for {type(problem).__name__}")
    return entry(problem, algorithm)


def conv_tolerance(problem: ConvProblem, algorithm: Optional[str] = None) -> tuple[float, str]:
    return _conv_tolerance(problem, algorithm)


def bnorm_tolerance(problem: BatchNormProblem, algorithm: Optional[str] = None) -> tuple[float, str]:
    dt = problem.dtype
    base = 2e-3 if _two_byte(dt) else 1e-4
    src = ("bn_driver RMSTOL_FP16 2e-3 for 2-byte data (5e-4 before MIOpen moved to rocm-libraries)"
           if _two_byte(dt) else "bn_driver RMSTOL_FP32")
    if problem.direction == "bwd":
        return base * 1000, f"rms_range {base:g} x1000 for backward batch norm ({src}; VerifyBackward)"
    return base, f"rms_range {base:g} for {'16-bit' if _two_byte(dt) else dt} batch norm ({src})"


def pool_tolerance(problem: PoolProblem, algorithm: Optional[str] = None) -> tuple[float, str]:
    dt = problem.dtype
    if problem.direction == "fwd":
        tol = 1e-6 if dt == "fp64" else (5e-3 if _two_byte(dt) else 1e-5)
        return tol, f"max |diff| {tol:g} per element for {dt} forward pooling (pool_driver VerifyForward)"
    tol = 5e-3 if _two_byte(dt) else 1e-6
    return tol, f"RMS of the difference {tol:g} for {dt} backward pooling (mloVerify)"


def _elementwise_tolerance(dt: str, what: str) -> tuple[float, str]:
    eps = _EPSILON.get(dt, _EPSILON["fp32"])
    return 80 * eps, (f"every element within 80 x eps({dt}) = {80 * eps:.3g}, absolutely or relatively "
                      f"({what} driver)")


def activ_tolerance(problem: ActivationProblem, algorithm: Optional[str] = None) -> tuple[float, str]:
    return _elementwise_tolerance(problem.dtype, "activation")


def fusion_tolerance(problem: FusionProblem, algorithm: Optional[str] = None) -> tuple[float, str]:
    return _elementwise_tolerance(problem.dtype, "CBAInfer fusion")


def lrn_tolerance(problem: LRNProblem, algorithm: Optional[str] = None) -> tuple[float, str]:
    tol = 1.5e-4 if problem.direction == "fwd" else 6e-5
    why = f"rms_range {tol:g} for LRN {problem.direction} (lrn_driver, fp32 and fp16 alike)"
    if problem.dtype == "bf16":
        return tol * 8, (f"rms_range {tol * 8:g} for bf16 LRN {problem.direction}: MIOpen has no bf16 LRN driver; "
                         f"its {tol:g} x8 for bfloat16's 3 fewer mantissa bits (as its softmax and layer-norm "
                         "drivers scale bf16; miotui's choice)")
    return tol, why


def softmax_tolerance(problem: SoftmaxProblem, algorithm: Optional[str] = None) -> tuple[float, str]:
    dt = problem.dtype
    src = "softmax_driver GetTolerance: 1e-3 for float, else 5e-2, x8 for bfloat16"
    if dt == "bf16":
        return 5e-2 * 8, f"rms_range 0.4 for bf16 softmax ({src})"
    tol = 5e-2 if dt == "fp16" else 1e-3
    return tol, f"rms_range {tol:g} for {dt} softmax ({src})"


def rnn_tolerance(problem: RNNProblem, algorithm: Optional[str] = None) -> tuple[float, str]:
    return _rnn_tolerance(problem.dtype)


def norm_tolerance(problem: LayerNormProblem | GroupNormProblem, algorithm: Optional[str] = None) -> tuple[float, str]:
    return _norm_tolerance(problem.op, problem.dtype)


def reduce_tolerance(problem: ReduceProblem, algorithm: Optional[str] = None) -> tuple[float, str]:
    return _reduce_tolerance(problem)


def _rnn_tolerance(dt: str) -> tuple[float, str]:
    src = "rnn_driver VerifyForward/VerifyBackward: 1e-6 when the data is 4 bytes, else 5e-2"
    if dt in ("fp32", "unknown", "int32"):
        return 1e-6, f"rms_range 1e-6 per output for fp32 RNN ({src})"
    if dt == "fp64":
        return 1e-6, f"rms_range 1e-6 per output: MIOpenDriver has no fp64 RNN, fp32's is used ({src})"
    return 5e-2, f"rms_range 5e-2 per output for {dt} RNN ({src})"


def _norm_tolerance(op: str, dt: str) -> tuple[float, str]:
    src = f"{op}_driver GetTolerance: 1.5e-6 for float, else 8.2e-3, x8 for bfloat16"
    if dt in ("fp32", "unknown", "int32"):
        return 1.5e-6, f"rms_range 1.5e-6 per output for fp32 {op} ({src})"
    if dt == "fp64":
        return 1.5e-6, f"rms_range 1.5e-6 per output: MIOpenDriver has no fp64 {op}, fp32's is used ({src})"
    if dt == "bf16":
        return 8.2e-3 * 8, f"rms_range 6.56e-2 per output for bf16 {op} ({src})"
    return 8.2e-3, f"rms_range 8.2e-3 per output for {dt} {op} ({src})"


def _reduce_tolerance(p: ReduceProblem) -> tuple[float, str]:
    tol = 1.5e-4
    parts = ["rms_range 1.5e-4 (reduce_driver VerifyForward)"]
    if p.dtype == "fp16":
        tol *= 4
        parts.append("x4 for half")
    if p.dtype == "bf16":
        tol *= 32
        parts.append("MIOpenDriver has no bf16 reduce: half's x4, and x8 for bfloat16's 3 fewer mantissa bits "
                     "(as the layer-norm drivers scale it)")
    if p.dtype in ("fp32", "unknown") and REDUCE_OPS[p.reduce_op] == "norm2":
        tol *= 12
        parts.append("x12 for a float norm2")
    if p.indices:
        parts.append("the indices must match exactly")
    return tol, "; ".join(parts)


#: smallest normal number of each output type: a product of many numbers below 1 (a
#: reduction's mul) underflows there, and below it the comparison is of rounding to 0
_SMALLEST_NORMAL = {"fp16": 2.0 ** -14, "fp64": 2.0 ** -1022}


def _underflow_floor(problem: Problem) -> Optional[float]:
    """The magnitude below which values are compared as 0 (the family's ``underflow_floor``),
    None where the family has none."""
    entry = family_of(problem).underflow_floor
    return entry(problem) if entry.applies else None


def reduce_underflow_floor(problem: ReduceProblem) -> Optional[float]:
    """For a product reduction, the magnitude below which values are compared as 0; None
    for the other reductions.  MIOpenDriver's own check (an fp32 host product against the
    device's) would fail on such values as well."""
    if REDUCE_OPS[problem.reduce_op] == "mul":
        return _SMALLEST_NORMAL.get(problem.dtype, 2.0 ** -126)
    return None


def _exact(problem: Problem, name: str) -> bool:
    """Outputs MIOpenDriver requires to match exactly (the family's ``exact_outputs``)."""
    entry = family_of(problem).exact_outputs
    return entry.applies and name in entry(problem)


def reduce_exact_outputs(problem: ReduceProblem) -> frozenset[str]:
    """A reduction's indices (reduce_driver compares them element by element)."""
    return frozenset({"indices"})


def _metric(problem: Problem) -> str:
    return family_of(problem).metric(problem)


def rms_range_metric(problem: Problem) -> str:
    return "rms_range"


def elementwise_metric(problem: Problem) -> str:
    return "elementwise"


def pool_metric(problem: PoolProblem) -> str:
    """pool_driver: forward max |diff| per element, backward the plain RMS (mloVerify)."""
    return "max_abs" if problem.direction == "fwd" else "rms"


_METRIC_TEXT = {
    "rms_range": "rms_range (MIOpen's metric: RMS of out-ref over the largest |value| in either)",
    "max_abs": "max |out-ref| per element",
    "rms": "RMS of out-ref (not normalised)",
    "elementwise": "worst element by MIOpen's rule (fails if both |out-ref| and |out-ref|/|ref| exceed tol)",
    "mismatches": "elements that differ (must be 0)",
}


@dataclass(frozen=True)
class _One:
    name: str
    max_abs: float
    max_rel: float
    rms_range: float
    error: float
    finite: bool
    note: str = ""
    floor: Optional[float] = None


def _compare_one(name: str, metric: str, tol: float, ref: Any, out: Any) -> _One:
    import numpy as np
    r, o = _as_f64(ref), _as_f64(out)
    if r.size != o.size:
        return _One(name, _DBL_MAX, _DBL_MAX, _DBL_MAX, _DBL_MAX, False,
                    f"{name}: {o.size} values, the reference has {r.size}")
    if r.size == 0:
        return _One(name, 0.0, 0.0, 0.0, 0.0, True)
    finite = bool(np.all(np.isfinite(o))) and bool(np.all(np.isfinite(r)))
    if metric == "mismatches":
        wrong = float(np.count_nonzero(r != o))
        return _One(name, float(np.max(np.abs(r - o))), 0.0, rms_range(r, o), wrong, finite)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        d = np.abs(o - r)
        max_abs = float(np.max(d)) if finite else math.inf
        scale = float(np.max(np.abs(r)))
        floor = max(scale * 1e-3, _DBL_MIN)
        max_rel = float(np.max(d / np.maximum(np.abs(r), floor))) if finite else math.inf
        rr = rms_range(r, o) if finite else math.inf
        if metric == "rms_range":
            err = rr
        elif metric == "max_abs":
            err = max_abs
        elif metric == "rms":
            err = float(math.sqrt(float(np.dot(d, d)) / d.size)) if finite else math.inf
        else:  # elementwise: an element passes if abs <= tol or rel <= tol (rel vs DBL eps floor)
            rel = d / np.maximum(np.abs(r), np.finfo(np.float64).eps)
            worst = np.minimum(d, rel)
            err = float(np.max(worst)) if finite else math.inf
    return _One(name, max_abs, max_rel, rr, err, finite)


#: elements rounded at a time by :func:`rounding_floor`
_FLOOR_CHUNK = 1 << 20


def rounding_floor(problem: Problem, name: str, metric: str, ref: Any, out: Any) -> Optional[float]:
    """The error, by ``metric``, of the reference itself rounded to the problem's 16-bit
    type: the least any output stored in that type can have.  None unless the problem is
    fp16/bf16 and ``out`` holds values of that type (an output a backend computed and
    kept in float32, or a batch norm's float32 statistics, has no such floor)."""
    import numpy as np

    from miotui.execute.tensors import round_to_dtype
    dt = problem.dtype
    if dt not in ("fp16", "bf16"):
        return None
    r, o = _as_f64(ref), _as_f64(out)
    if r.size != o.size or r.size == 0:
        return None
    rounded = np.empty_like(r)
    with np.errstate(over="ignore", invalid="ignore"):
        for at in range(0, r.size, _FLOOR_CHUNK):   # in pieces: rounding bf16 takes 3 temporaries
            part = slice(at, at + _FLOOR_CHUNK)
            if not np.array_equal(np.asarray(round_to_dtype(o[part], dt), dtype=np.float64), o[part],
                                  equal_nan=True):
                return None
            rounded[part] = round_to_dtype(r[part], dt)
    return _compare_one(name, metric, 0.0, r, rounded).error


def _floor_text(problem: Problem, tol: float, results: list[_One]) -> str:
    """A plain sentence on why a 16-bit output failed: the tolerance is below what rounding
    to the type alone gives, or the backend's own arithmetic lost the precision."""
    over = [o for o in results if o.floor is not None and math.isfinite(o.error) and o.error > tol]
    if not over:
        return ""
    o = max(over, key=lambda one: one.error)
    dt = problem.dtype
    if o.floor > tol:
        return (f"No {dt} output can meet MIOpen's tolerance {tol:.3g} here: rounding the exact {o.name} to {dt} "
                f"alone gives {o.floor:.3g}.")
    times = f"{o.error / o.floor:.1f}x" if o.floor > 0 else "above"
    return (f"The exact {o.name} rounded to {dt} would pass ({o.floor:.3g} <= {tol:.3g}); this output's "
            f"{o.error:.3g} is {times} that: the backend's own {dt} arithmetic, not the rounding of its "
            "output, is outside MIOpen's tolerance.")


def compare(problem: Problem, ref: Mapping[str, Any], out: Mapping[str, Any], *,
            algorithm: Optional[str] = None, reference: str = "float64 reference") -> Verification:
    """Compare every output the reference has (``ref``: what
    :func:`miotui.execute.oracle.reference_outputs` gave, named ``reference``) with the
    backend's ``out``, by the metric and tolerance MIOpenDriver uses for the kind.
    ok is False when an output is missing, has another size, or holds NaN/inf."""
    tol, why = tolerance_for(problem, algorithm)
    metric = _metric(problem)
    floor = _underflow_floor(problem)
    if floor is not None:
        import numpy as np
        ref = {k: np.where(np.abs(_as_f64(v)) < floor, 0.0, _as_f64(v)) for k, v in ref.items()}
        out = {k: np.where(np.abs(_as_f64(v)) < floor, 0.0, _as_f64(v)) for k, v in out.items()}
        why += f"; values below {floor:.3g} (the smallest normal {problem.dtype} number) compared as 0"
    results: list[_One] = []
    problems: list[str] = []
    exact: list[_One] = []
    for name in ref:
        if name not in out:
            problems.append(f"output {name!r} missing")
            continue
        if _exact(problem, name):
            one = _compare_one(name, "mismatches", 0.0, ref[name], out[name])
            exact.append(one)
            if one.note:
                problems.append(one.note)
            continue
        one = _compare_one(name, metric, tol, ref[name], out[name])
        if one.finite and not one.note:
            one = replace(one, floor=rounding_floor(problem, name, metric, ref[name], out[name]))
        results.append(one)
        if one.note:
            problems.append(one.note)
        elif not one.finite:
            problems.append(f"{name} holds NaN or inf")
    if not results:
        how = "nothing compared: " + "; ".join(problems or ["the reference has no outputs"])
        return Verification(_DBL_MAX, _DBL_MAX, _DBL_MAX, tol, False, how, metric, _DBL_MAX, reference)
    worst = max(results, key=lambda o: o.error)
    error = worst.error
    ok = not problems and all(math.isfinite(o.error) and o.error <= tol for o in results)
    per = ", ".join(f"{o.name} {o.error:.3g}"
                    + (f" (the reference rounded to {problem.dtype}: {o.floor:.3g})" if o.floor is not None else "")
                    for o in results)
    verdict = "<=" if ok else ">"
    exact_text = "".join(f" {o.name}: {o.error:.0f} elements differ (must be 0)." for o in exact)
    how = (f"{_METRIC_TEXT[metric]} vs the {reference}: {per} "
           f"{verdict} tolerance {tol:.3g}.{exact_text} Tolerance: {why}. "
           f"max |diff| {max(o.max_abs for o in results):.3g}, max relative diff "
           f"{max(o.max_rel for o in results):.3g} (relative to max(|ref|, 1e-3 x max|ref|)).")
    wrong = [o for o in exact if o.error > 0]
    if wrong and ok:   # the values pass but an output that must match exactly does not: report it
        ok, metric, error, tol = False, "mismatches", wrong[0].error, 0.0
    plain = "" if ok else _floor_text(problem, tol, results)
    if plain:
        how = plain + " " + how
    if problems:
        how = "; ".join(problems) + ". " + how
    return Verification(
        max_abs=max(o.max_abs for o in results),
        max_rel=max(o.max_rel for o in results),
        rms_range=max(o.rms_range for o in results),
        tolerance=tol, ok=ok, how=how, metric=metric, error=error, reference=reference)

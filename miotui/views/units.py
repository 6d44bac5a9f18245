"""How miotui writes numbers: one precision policy for the app, ``miotui run`` and ``decode``.

Why one module: the same quantity must read the same everywhere (a time in the table,
in the detail screen and in ``miotui run``'s table), and each unit must say what it is.
The rules:

* three significant digits, never an exponent (``6.4e-08 GFLOP`` is unreadable): a
  value is scaled to the SI prefix that keeps it in ``[1, 1000)`` (``64 FLOP``,
  ``1.23 TFLOP/s``, ``450 µs``);
* one unit family: sizes and rates are decimal (``122 MB``, ``45.6 GB/s`` = 45.6e9 bytes
  per second, what ``RunResult.gbps`` holds), as bandwidths are quoted.  A size in MiB
  next to a rate in MB/s made "196 MiB in 0.208 s" read as 987 MB/s: the arithmetic a
  reader does on a screen must come out as printed;
* a layer is judged by the rate that bounds it: convolutions (and fusion plans with
  one) by FLOP/s, every other op (batch norm, activation, pooling, softmax, LRN,
  layer/group norm, reductions, concatenation ...) by GB/s;
* errors and tolerances keep an exponent (``1.2e-07``): that is how they are read;
* a missing or non-finite value is ``—``.

No Rich and no Textual here: the headless CLI uses this module too.
"""

from __future__ import annotations

import math
from typing import Any, Optional

MISSING = "—"

#: ops whose speed is a FLOP rate; every other op is memory-bound and shown in GB/s
COMPUTE_BOUND_OPS = frozenset({"conv", "gemm", "rnn", "mha", "attention", "matmul"})

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_DECIMAL = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))


def _finite(value: Optional[float]) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


def sig(value: Optional[float], digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits and no exponent; integers >= 1000
    get thousands separators (``1,234``)."""
    if not _finite(value):
        return MISSING
    v = float(value)  # type: ignore[arg-type]
    if v == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{v:,.{decimals}f}"
    # rounding can carry into one more digit (9.996 -> "10.00"): keep `digits` of them
    if decimals and len(text.replace(",", "").replace("-", "").replace(".", "").lstrip("0")) > digits:
        text = f"{v:,.{decimals - 1}f}"
    return text


def _scaled(value: float, unit: str, digits: int = 3) -> str:
    a = abs(value)
    for factor, prefix in _SI:
        if a >= factor * 0.9995:
            return f"{sig(value / factor, digits)} {prefix}{unit}"
    return f"{sig(value, digits)} {unit}"


def count(value: Optional[int]) -> str:
    """A count: ``1,234``."""
    return MISSING if value is None else f"{int(value):,}"


def time_ms(ms: Optional[float]) -> str:
    """A duration given in milliseconds: ``1.23 s``, ``12.3 ms``, ``450 µs``, ``80.0 ns``."""
    if not _finite(ms):
        return MISSING
    v = float(ms)  # type: ignore[arg-type]
    if v == 0:
        return "0 ms"
    a = abs(v)
    if a >= 999.5:
        return f"{sig(v / 1e3)} s"
    if a >= 0.9995:
        return f"{sig(v)} ms"
    if a >= 0.0009995:
        return f"{sig(v * 1e3)} µs"
    return f"{sig(v * 1e6)} ns"


def flops(value: Optional[float]) -> str:
    """Work per call: ``64 FLOP``, ``118 MFLOP``, ``1.23 GFLOP``."""
    if not _finite(value):
        return MISSING
    return _scaled(float(value), "FLOP")  # type: ignore[arg-type]


def flop_rate(gflops: Optional[float]) -> str:
    """A compute rate given in GFLOP/s: ``812 GFLOP/s``, ``1.23 TFLOP/s``, ``45.6 MFLOP/s``."""
    if not _finite(gflops):
        return MISSING
    return _scaled(float(gflops) * 1e9, "FLOP/s")  # type: ignore[arg-type]


def byte_rate(gbps: Optional[float]) -> str:
    """A bandwidth given in GB/s (1e9 bytes per second): ``45.6 GB/s``, ``812 MB/s``."""
    if not _finite(gbps):
        return MISSING
    return _scaled(float(gbps) * 1e9, "B/s")  # type: ignore[arg-type]


def size(nbytes: Optional[float]) -> str:
    """A size in memory or on disk, in the rates' decimal units: ``512 B``, ``122 MB``,
    ``1.50 GB``."""
    if not _finite(nbytes):
        return MISSING
    v = float(nbytes)  # type: ignore[arg-type]
    for factor, unit in _DECIMAL:
        if abs(v) >= factor * 0.9995:
            return f"{sig(v / factor)} {unit}"
    return f"{int(v):,} B"


def sci(value: Optional[float], digits: int = 2) -> str:
    """An error or a tolerance: ``1.2e-07`` (an exponent is how these are read)."""
    if not _finite(value):
        return MISSING
    return f"{float(value):.{digits - 1}e}"  # type: ignore[arg-type]


def ratio(value: Optional[float]) -> str:
    """A ratio such as a timing spread (median / min): ``×1.03``."""
    if not _finite(value):
        return MISSING
    return f"×{float(value):.2f}"  # type: ignore[arg-type]


def memory_bound(problem: Any) -> bool:
    """Whether a layer's speed is judged in GB/s (True) rather than FLOP/s."""
    op = getattr(problem, "op", "")
    if op == "fusion":
        return not getattr(problem, "has_conv", False)
    return op not in COMPUTE_BOUND_OPS


def rate_unit(problem: Any) -> str:
    """``GB/s`` or ``GFLOP/s``: the rate a table column shows for this layer."""
    return "GB/s" if memory_bound(problem) else "GFLOP/s"


def rate_value(problem: Any, gflops: Optional[float], gbps: Optional[float]) -> Optional[float]:
    """The number (in the unit of :func:`rate_unit`) to sort and compare by."""
    return gbps if memory_bound(problem) else gflops


def throughput(problem: Any, gflops: Optional[float], gbps: Optional[float]) -> str:
    """The rate that bounds this layer, with its unit: GB/s for memory-bound ops,
    FLOP/s for convolutions."""
    return byte_rate(gbps) if memory_bound(problem) else flop_rate(gflops)


def ms_text(ms: Optional[float]) -> str:
    """A time in ms as the exports and ``decode`` write it: a bare number, three significant
    digits (the column names the unit); empty where the log has none."""
    if ms is None:
        return ""
    return f"{ms:,.0f}" if ms >= 1000 else f"{ms:.3g}"

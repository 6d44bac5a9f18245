"""Find-Db and Perf-Db text records -> one sighting per record.

A db file (``*.fdb.txt``, ``*.ufdb.txt``, ``*.pdb.txt``, ``*.udb.txt``, ``*.db.txt``)
is one record per line, ``<key>=<id>:<values>[;<id>:<values>...]`` (``docs/formats.md``
§6.2).  The key names a convolution problem (decoded by ``miotui.formats.miopen.keys``); the
items say, per algorithm or solver, how fast MIOpen found it (Find-Db) or which tuned
parameters it stored (Perf-Db).  Users paste these files into bug reports and the
scanner meets their lines among log text, so a record becomes one ``mention`` of its
layer, annotated with every recorded solver and time; the fastest Find-Db entry is
what MIOpen would pick, so it is also given as ``solver``/``solver_time_ms``.

Find-Db items exist in three formats:

* v0 (MIOpen 1.5-1.8): ``<algo>:<solver>,<time>,<workspace>,<kcache key>``
* v1.0 (MIOpen 2.0-2.19, and every shipped system db): ``<algo>:<solver>,<time>,<workspace>,
  <kcache algo>,<kcache config or "<unused>">`` (MITuna writes ``not used``)
* v2.0 (ROCm >= 5.6 user dbs): ``<solver>:<time>,<workspace>,<algo>``

A Perf-Db item is ``<solver>:<perf-config>``, the solver's own serialisation.

``parse_db_items`` is shared with the level-line decoder (``SetValues`` lines print
the same items).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional

from miotui.events import Event, Sighting, Undecoded
from miotui.formats.miopen.keys import ProblemKeyError, decode_db_key
from miotui.problems import ConvProblem, ProblemError

_NUMBER_RE = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$|^[-+]?(?:inf|nan)$", re.I)
_ALGO_PREFIXES = ("miopenConvolution", "miopenTransposeBwdDataAlgo")
#: miopenConv*Algo* names -> miopenConvAlgorithm_t integer (the ``algorithm`` annotation).
ALGORITHM_NUMBERS = {"GEMM": 0, "Direct": 1, "FFT": 2, "Winograd": 3, "ImplicitGEMM": 5}
_ALGO_RE = re.compile(r"^miopen(?:Convolution(Fwd|BwdData|BwdWeights)Algo|TransposeBwdDataAlgo)(\w+)$")


@dataclass(frozen=True)
class DbItem:
    """One ``<id>:<values>`` item of a record."""

    kind: str                      # "find" or "perf"
    solver: str
    time_ms: Optional[float] = None
    workspace: Optional[int] = None
    algorithm: str = ""            # miopenConvolution*Algo* name ("" for perf items)
    config: str = ""               # perf-config text (perf items)
    text: str = ""                 # the item as written

    @property
    def find_result(self) -> str:
        """The ``find_result`` annotation value, e.g. ``GemmFwdRest 0.308879 ms ws=0``."""
        ws = f" ws={self.workspace}" if self.workspace is not None else ""
        return f"{self.solver} {_fmt(self.time_ms)} ms{ws}"

    @property
    def perf_config(self) -> str:
        return f"{self.solver}:{self.config}"


def _fmt(value: Optional[float]) -> str:
    if value is None:
        return "?"
    return format(value, "g")


def algorithm_number(name: str) -> Optional[int]:
    """``miopenConvolutionFwdAlgoWinograd`` -> 3; ``miopenTransposeBwdDataAlgoGEMM`` -> 4."""
    m = _ALGO_RE.match(name)
    if m is None:
        return None
    if name.startswith("miopenTranspose"):
        return 4
    return ALGORITHM_NUMBERS.get(m.group(2))


def algorithm_direction(name: str) -> Optional[str]:
    """``miopenConvolutionBwdWeightsAlgoGEMM`` -> ``wrw`` (None if not an algorithm name)."""
    m = _ALGO_RE.match(name)
    if m is None:
        return None
    if name.startswith("miopenTranspose"):
        return "bwd"
    return {"Fwd": "fwd", "BwdData": "bwd", "BwdWeights": "wrw"}[m.group(1)]


def _number(text: str) -> Optional[float]:
    t = text.strip()
    if not _NUMBER_RE.match(t):
        return None
    return float(t)


def _workspace(text: str) -> Optional[int]:
    t = text.strip()
    return int(t) if t.isascii() and t.isdigit() else None


def parse_db_item(text: str) -> DbItem:
    """One ``<id>:<values>`` item; raises ValueError if it is not readable (e.g. cut)."""
    ident, sep, values = text.partition(":")
    ident = ident.strip()
    if not sep or not ident:
        raise ValueError(f"item {text[:60]!r} has no '<id>:'")
    fields = values.split(",")
    if ident.startswith(_ALGO_PREFIXES):
        # v0 / v1.0: <algo>:<solver>,<time>,<workspace>,<kcache...>
        if len(fields) < 4:
            raise ValueError(f"Find-Db item {text[:60]!r} has {len(fields)} fields; v0/v1.0 items have 4 or 5")
        time_ms = _number(fields[1])
        ws = _workspace(fields[2])
        if time_ms is None or ws is None:
            raise ValueError(f"Find-Db item {text[:60]!r}: time/workspace are not numbers")
        return DbItem("find", fields[0].strip(), time_ms, ws, ident, "", text)
    if len(fields) == 3 and fields[2].strip().startswith(_ALGO_PREFIXES):
        # v2.0: <solver>:<time>,<workspace>,<algo>
        time_ms = _number(fields[0])
        ws = _workspace(fields[1])
        if time_ms is not None and ws is not None:
            return DbItem("find", ident, time_ms, ws, fields[2].strip(), "", text)
    if not re.match(r"^[\w<>\-]+$", ident):
        raise ValueError(f"item id {ident[:60]!r} is not a solver name")
    return DbItem("perf", ident, config=values, text=text)


def parse_db_items(values: str) -> tuple[list[DbItem], list[str]]:
    """All items of a record's value part, and a warning per unreadable item."""
    items: list[DbItem] = []
    warnings: list[str] = []
    seen: set[str] = set()
    parts = values.split(";")
    for i, part in enumerate(parts):
        if not part.strip():
            continue
        try:
            item = parse_db_item(part)
        except ValueError as e:
            cut = " (the record looks cut)" if i == len(parts) - 1 else ""
            warnings.append(f"db item {i + 1} unreadable{cut}: {e}")
            continue
        ident = part.partition(":")[0].strip()
        if ident in seen:
            continue  # MIOpen ignores duplicate ids in a record (§6.2)
        seen.add(ident)
        items.append(item)
    return items, warnings


def item_annotations(items: list[DbItem]) -> tuple[tuple[str, str], ...]:
    """``find_result``/``perf_config`` per item, then the fastest Find-Db entry."""
    ann: list[tuple[str, str]] = []
    finds = [it for it in items if it.kind == "find"]
    for it in items:
        if it.kind == "find":
            ann.append(("find_result", it.find_result))
        else:
            ann.append(("perf_config", it.perf_config))
    timed = [it for it in finds if it.time_ms is not None and math.isfinite(it.time_ms)]
    if timed:
        best = min(timed, key=lambda it: it.time_ms)  # type: ignore[arg-type, return-value]
        ann.append(("solver", best.solver))
        ann.append(("solver_time_ms", _fmt(best.time_ms)))
    return tuple(ann)


def decode_db_record(line: str) -> Optional[list[Event]]:
    """One db text line -> ``[Sighting]``, ``[Undecoded]``, or None if it is no db record.

    Cheap to reject: a record starts with a digit (the key's C) and has ``=``.
    """
    if not line or not line[0].isdigit():
        text = line.strip()
        if not text or not text[0].isdigit():
            return None
    else:
        text = line.rstrip()
    eq = text.find("=")
    if eq < 0:
        return None
    key = text[:eq]
    if "-" not in key or not key[-1:].isalnum() or not _looks_like_key(key):
        return None
    try:
        decoded = decode_db_key(key)
    except ProblemKeyError as e:
        return [Undecoded(f"db record key {key[:80]!r}: {e}")]
    values = text[eq + 1:]
    items, warnings = parse_db_items(values)
    if not items:
        return [Undecoded(f"db record for {key[:80]!r} holds no readable item")]
    source = "find-db" if any(it.kind == "find" for it in items) else "perf-db"
    annotations = item_annotations(items)
    return [Sighting(p, "mention", source, decoded.warnings + tuple(warnings), annotations)
            for p in decoded.problems]


_KEY_SHAPE_RE = re.compile(r"^\d+(?:-\d+){1,3}-\d+x\d+(?:x\d+)?-\d[\dx-]*-[A-Za-z0-9-]+-[FBW](?:_\w+)?$")


def _looks_like_key(key: str) -> bool:
    return _KEY_SHAPE_RE.match(key) is not None


# ----------------------------------------------------------------------------- SQLite perf-db dumps

#: the ``config`` table's columns in MIOpen's SQLite perf-db (MIOpen 2.x), used when a dump's
#: ``INSERT`` rows come without their ``CREATE TABLE``
SQL_CONFIG_COLUMNS = ("id", "layout", "data_type", "direction", "spatial_dim", "in_channels", "in_h", "in_w", "in_d",
                      "fil_h", "fil_w", "fil_d", "out_channels", "batchsize", "pad_h", "pad_w", "pad_d",
                      "conv_stride_h", "conv_stride_w", "conv_stride_d", "dilation_h", "dilation_w", "dilation_d",
                      "bias", "group_count")
_CREATE_RE = re.compile(r"^CREATE TABLE [`\"']?config[`\"']?\s*\((.*)\)\s*;?\s*$")
_INSERT_RE = re.compile(r"^INSERT INTO [`\"']?config[`\"']? VALUES\s*\((.*)\)\s*;?\s*$")
_SQL_TYPES = {"FP32": "fp32", "FP16": "fp16", "BF16": "bf16", "INT8": "int8", "FP64": "fp64"}


class SqlConfigReader:
    """Rows of a user perf-db dumped with ``sqlite3 .dump`` (MIOpen 2.x kept perf-db records
    in SQLite): each ``INSERT INTO "config" VALUES(...)`` names one convolution problem, one
    mention; the ``CREATE TABLE`` line before them gives the column order."""

    def __init__(self) -> None:
        self.columns: tuple[str, ...] = SQL_CONFIG_COLUMNS

    def feed(self, line: str) -> Optional[list[Event]]:
        m = _CREATE_RE.match(line)
        if m:
            names = [part.strip().split()[0].strip("`\"'") for part in m.group(1).split(",") if part.strip()]
            if "in_channels" in names:
                self.columns = tuple(names)
            return []
        m = _INSERT_RE.match(line)
        if m is None:
            return None
        values = [v.strip().strip("'\"") for v in m.group(1).split(",")]
        if len(values) != len(self.columns):
            return [Undecoded(f"perf-db config row with {len(values)} values for {len(self.columns)} columns")]
        row = dict(zip(self.columns, values, strict=True))
        try:
            return [Sighting(_config_problem(row), "mention", "perf-db", _config_warnings(row))]
        except (ValueError, KeyError, ProblemError) as e:
            return [Undecoded(f"perf-db config row: {e}")]


def _config_warnings(row: dict[str, str]) -> tuple[str, ...]:
    if row.get("direction", "F") != "F" and any(row.get(f"conv_stride_{a}", "1") != "1" for a in "hw"):
        return ("a perf-db config row stores only dy's size: dx's size is the smallest that gives it (with a "
                "stride above 1 another size gives the same dy)",)
    return ()


def _config_problem(row: dict[str, str]) -> ConvProblem:
    def num(name: str, default: int = 0) -> int:
        v = row.get(name, str(default))
        if not (v.isascii() and v.isdigit()) or len(v) > 12:
            raise ValueError(f"{name} is not a count: {v!r}")
        return int(v)

    nd = num("spatial_dim", 2)
    if nd not in (2, 3):
        raise ValueError(f"spatial_dim must be 2 or 3, got {nd}")
    axes = ("d", "h", "w")[3 - nd:]
    size = tuple(num(f"in_{a}") for a in axes)
    filt = tuple(num(f"fil_{a}") for a in axes)
    pads = tuple(num(f"pad_{a}") for a in axes)
    strides = tuple(num(f"conv_stride_{a}", 1) for a in axes)
    dils = tuple(num(f"dilation_{a}", 1) for a in axes)
    direction = {"F": "fwd", "B": "bwd", "W": "wrw"}.get(row.get("direction", ""))
    if direction is None:
        raise ValueError(f"direction must be F, B or W, got {row.get('direction')!r}")
    c, k = num("in_channels"), num("out_channels")
    if direction != "fwd":   # the row's "in" is dy: the forward convolution runs k -> c
        c, k = k, c
        size = tuple(max(1, (o - 1) * s - 2 * p + d * (f - 1) + 1)
                     for o, s, p, d, f in zip(size, strides, pads, dils, filt, strict=True))
    dtype = _SQL_TYPES.get(row.get("data_type", "").upper())
    if dtype is None:
        raise ValueError(f"unknown data type {row.get('data_type')!r}")
    layout = row.get("layout", "NCHW").upper()
    return ConvProblem(direction, dtype, num("batchsize"), c, k, size, filt, pads, strides, dils,
                       groups=max(1, num("group_count", 1)), in_layout=layout, fil_layout=layout, out_layout=layout)

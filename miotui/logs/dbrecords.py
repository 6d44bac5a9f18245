"""Find-Db and Perf-Db text records -> one sighting per record.

A db file (``*.fdb.txt``, ``*.ufdb.txt``, ``*.pdb.txt``, ``*.udb.txt``, ``*.db.txt``)
is one record per line, ``<key>=<id>:<values>[;<id>:<values>...]`` (``miopen_formats.md``
§7.2).  The key names a convolution problem (decoded by ``miotui.logs.keys``); the
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

from miotui.logs.events import Event, Sighting, Undecoded
from miotui.logs.keys import ProblemKeyError, decode_db_key

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
    return int(t) if t.isdigit() else None


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
            continue  # MIOpen ignores duplicate ids in a record (§7.2)
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

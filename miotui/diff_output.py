"""What ``miotui diff`` writes: the readable table, the JSON contract and CSV, and the cells
of one pair that the app's compare screen shows too (so the two never disagree).

Plain text and part of the core, like ``decode_output``: every piece of log text goes through
``safe_text.visible``, and CSV cells through the export's formula guard.
"""

from __future__ import annotations

import csv
from typing import IO, Any, Optional

from miotui import export
from miotui.decode_output import shape_text
from miotui.diff import Comparison, LayerFacts, Pair, Side, ratio_text
from miotui.safe_text import visible
from miotui.text_table import TextTable
from miotui.views.units import ms_text

FORMATS = ("table", "json", "csv")

#: the table's columns (title, right-aligned); the compare screen shows the same cells
COLUMNS = (("#", True), ("status", False), ("op", False), ("dir", False), ("dtype", False), ("shape", False),
           ("old ms/call", True), ("new ms/call", True), ("ratio", True), ("delta total ms", True),
           ("solver", False))


def time_cell(facts: Optional[LayerFacts]) -> str:
    if facts is None or facts.time.per_call_ms is None:
        return ""
    return ms_text(facts.time.per_call_ms)


def shape_cell(pair: Pair) -> str:
    """The layer's shape; both batches where they differ (``32->16x64x56x56 ...``)."""
    if pair.old is not None and pair.new is not None:
        a, b = shape_text(pair.old.layer), shape_text(pair.new.layer)
        if a != b:
            return f"{a} -> {b}"
    return shape_text(pair.either.layer)


def solver_cell(pair: Pair) -> str:
    """The solver, or ``old -> new`` where it changed."""
    if pair.old is not None and pair.new is not None and pair.solver_changed:
        return visible(f"{pair.old.solver or '?'} -> {pair.new.solver or '?'}")
    return visible(pair.either.solver)


def pair_cells(rank: int, pair: Pair) -> list[str]:
    """One row of the table (``COLUMNS``), log text made visible."""
    p = pair.either.layer.problem
    delta = pair.delta_total_ms
    return [str(rank), pair.status, p.op, p.direction, p.dtype, shape_cell(pair), time_cell(pair.old),
            time_cell(pair.new), "" if pair.ratio_per_call is None else ratio_text(pair.ratio_per_call),
            "" if delta is None else ("+" if delta >= 0 else "-") + ms_text(abs(delta)), solver_cell(pair)]


def side_line(name: str, side: Side) -> str:
    """``old: a.log (132 unique layers, 2,326 lines; MIOpen 3.1.0; MIOPEN_FIND_MODE = NORMAL(1))``."""
    parts = [f"{len(side.layers)} unique layers", f"{int(side.stats.get('lines', 0)):,} lines"]
    parts += [f"{k} {v}" for k, v in side.versions]
    parts += [f"{k} = {v}" for k, v in side.settings]
    return visible(f"{name}: {' '.join(side.paths)} ({'; '.join(parts)})")


def write_table(out: IO[str], comparison: Comparison) -> None:
    out.write(side_line("old", comparison.old) + "\n")
    out.write(side_line("new", comparison.new) + "\n")
    batch = " (batch ignored in matching)" if comparison.ignore_batch else ""
    out.write(f"{len(comparison.pairs)} layers: {comparison.counts_text()}{batch}; "
              "ranked by what they cost the new run\n")
    table = TextTable(COLUMNS)
    for i, pair in enumerate(comparison.pairs, 1):
        table.add(pair_cells(i, pair))
    for line in table.lines():
        out.write(line + "\n")
    written = False
    for i, pair in enumerate(comparison.pairs, 1):
        if pair.status == "same":
            continue
        if not written:
            out.write("\nchanges:\n")
            written = True
        out.write(f"{i:>4}  {visible('; '.join(pair.changes))}\n")


def layer_json(facts: LayerFacts) -> dict[str, Any]:
    """A side's layer as ``decode --format json`` writes it (with its time on its own run)."""
    return export.layer_json(facts.layer, time=facts.time)


def side_json(side: Side) -> dict[str, Any]:
    return {"paths": list(side.paths), "layers": len(side.layers), "stats": dict(side.stats)}


def write_json(out: IO[str], comparison: Comparison) -> None:
    """The documented document, written a pair per line (a diff of many layers never holds
    the whole text)."""
    dumps = export.json_encoder().encode
    out.write('{"old": ' + dumps(side_json(comparison.old)) + ',\n"new": ' + dumps(side_json(comparison.new))
              + ',\n"pairs": [')
    sep = "\n "
    for pair in comparison.pairs:
        out.write(sep + dumps(pair.to_dict(layer_json)))
        sep = ",\n "
    out.write("\n]}\n")


CSV_COLUMNS = ("rank", "status", "op", "direction", "dtype", "old_id", "new_id", "old_shape", "new_shape",
               "old_executions", "new_executions", "old_finds", "new_finds", "old_ms_per_call", "new_ms_per_call",
               "old_time_source", "new_time_source", "old_total_ms", "new_total_ms", "delta_total_ms",
               "ratio_per_call", "old_solver", "new_solver", "old_first_iteration_ms", "new_first_iteration_ms",
               "old_verdict", "new_verdict", "changes")


def _num(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.6g}"


def _side_cells(facts: Optional[LayerFacts]) -> dict[str, str]:
    if facts is None:
        return {k: "" for k in ("id", "shape", "executions", "finds", "ms_per_call", "time_source", "total_ms",
                                "solver", "first_iteration_ms", "verdict")}
    return {"id": str(facts.layer.id), "shape": shape_text(facts.layer), "executions": str(facts.layer.executions),
            "finds": str(facts.layer.finds), "ms_per_call": _num(facts.time.per_call_ms),
            "time_source": facts.time.source or "", "total_ms": _num(facts.time.total_ms),
            "solver": export.csv_cell(facts.solver), "first_iteration_ms": _num(facts.first_ms),
            "verdict": export.csv_cell(facts.verdict)}


def write_csv(out: IO[str], comparison: Comparison) -> None:
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for i, pair in enumerate(comparison.pairs, 1):
        p = pair.either.layer.problem
        row = {"rank": str(i), "status": pair.status, "op": p.op, "direction": p.direction, "dtype": p.dtype,
               **{f"old_{k}": v for k, v in _side_cells(pair.old).items()},
               **{f"new_{k}": v for k, v in _side_cells(pair.new).items()},
               "delta_total_ms": _num(pair.delta_total_ms), "ratio_per_call": _num(pair.ratio_per_call),
               "changes": export.csv_cell("; ".join(pair.changes))}
        w.writerow([row[c] for c in CSV_COLUMNS])


def write(out: IO[str], comparison: Comparison, fmt: str) -> None:
    if fmt == "table":
        write_table(out, comparison)
    elif fmt == "json":
        write_json(out, comparison)
    elif fmt == "csv":
        write_csv(out, comparison)
    else:
        raise ValueError(f"unknown format {fmt!r}")

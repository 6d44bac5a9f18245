"""Unique layers out of miotui: a runnable MIOpenDriver script, CSV, and the JSON contract.

Pure functions of catalog snapshots, shared by ``miotui decode --format ...`` and the
app's export key, so a file written from either is the same.  Also the per-layer
column values (``layer_columns``) the app's table and the CSV both show, so the two
never disagree about what "filter" or "output" of a pooling layer means.

The driver script is meant to be run as is (``bash layers.sh``, or ``./layers.sh``
after the app marks it executable).  Every argument comes from ``to_driver_argv``,
whose tokens are validated numbers and whitelisted names, and is still passed through
``shlex.quote``: a log is untrusted input and the script must never let it inject
shell syntax.
"""

from __future__ import annotations

import csv
import io
import json
import shlex
from typing import IO, Any, Iterable, Mapping, Optional, Sequence

from miotui.driver import DriverCommandError, to_driver_argv
from miotui.formats.cudnn import TRANSLATION, from_cudnn
from miotui.problems import (
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    FusionProblem,
    LRNProblem,
    PoolProblem,
    SoftmaxProblem,
)
from miotui.safe_text import visible
from miotui.startup import NO_STARTUP
from miotui.timing import NO_TIME, LayerTime, layer_times, time_summary

__all__ = ["layer_columns", "to_json", "to_csv", "to_driver_script", "layer_json", "dims", "run_stats", "json_encoder",
           "csv_cell"]


def dims(values: Iterable[int]) -> str:
    """``(3, 3)`` -> ``"3x3"``."""
    return "x".join(str(v) for v in values)


def layer_columns(problem: Any) -> dict[str, Any]:
    """The shape columns of one problem, by column name, as the table and CSV show them.

    ``n c d h w`` are the input tensor's (``d`` empty for 2-D); ``k`` the output
    channels of a convolution; ``filter`` is the convolution filter, the pooling window
    or the LRN window; ``mode`` says what kind of the op it is (``trans``, ``max``,
    ``spatial``, ``RELU`` ...).  Missing values are empty strings.
    """
    shape = tuple(getattr(problem, "input_shape", ()))
    spatial = shape[2:]
    out: dict[str, Any] = {
        "n": shape[0] if shape else "", "c": shape[1] if len(shape) > 1 else "",
        "d": spatial[0] if len(spatial) == 3 else "",
        "h": spatial[-2] if len(spatial) >= 2 else "", "w": spatial[-1] if spatial else "",
        "k": "", "filter": "", "pad": "", "stride": "", "dilation": "", "groups": "", "mode": "",
        "output": dims(getattr(problem, "output_shape", ())),
    }
    conv: ConvProblem | None = None
    if isinstance(problem, ConvProblem):
        conv = problem
        mode = problem.mode
        if problem.pad_mode != "default":
            mode += f" pad={problem.pad_mode}"
        if problem.mode == "trans" and any(problem.trans_output_pads):
            mode += f" adj={dims(problem.trans_output_pads)}"
        if problem.in_layout != problem.fil_layout or problem.in_layout != problem.out_layout:
            mode += f" w:{problem.fil_layout} y:{problem.out_layout}"
        out["mode"] = mode
    elif isinstance(problem, FusionProblem):
        out["mode"] = problem.description
        if problem.has_conv:
            conv = problem.conv
    elif isinstance(problem, PoolProblem):
        out.update(filter=dims(problem.window), pad=dims(problem.pads), stride=dims(problem.strides),
                   mode=problem.mode)
    elif isinstance(problem, BatchNormProblem):
        mode = problem.mode
        if problem.param_dtype != problem.dtype:
            mode += f" params:{problem.param_dtype}"
        out["mode"] = mode
    elif isinstance(problem, ActivationProblem):
        out["mode"] = problem.mode_name
    elif isinstance(problem, LRNProblem):
        out.update(filter=str(problem.lrn_n), mode=problem.mode)
    elif isinstance(problem, SoftmaxProblem):
        out["mode"] = (("fast", "accurate", "log")[problem.algorithm] + " "
                       + ("instance", "channel")[problem.mode])
    if conv is not None:
        out.update(k=conv.k, filter=dims(conv.filter), pad=dims(conv.pads), stride=dims(conv.strides),
                   dilation=dims(conv.dilations), groups=conv.groups)
    return out


def _driver_argv(problem: Any) -> tuple[list[str] | None, str]:
    try:
        return to_driver_argv(problem), ""
    except DriverCommandError as e:
        return None, str(e)


# ---------------------------------------------------------------------- JSON


def layer_json(layer: Any, runs: Optional[Sequence[Mapping[str, Any]]] = None,
               time: Optional[LayerTime] = None) -> dict[str, Any]:
    """One layer in the documented JSON shape; ``runs`` (the layer's run results as
    ``RunResult.to_dict()``, oldest first) adds a ``runs`` list; ``time`` is the layer's
    logged time (``miotui.timing.layer_times``, which needs every layer for the shares).
    Ready for the JSON encoder (the problem's shapes are tuples, which it writes as arrays)."""
    p = layer.problem
    out = {
        "id": layer.id, "op": p.op, "direction": p.direction, "dtype": p.dtype, "layout": p.layout,
        "driver_command": layer.driver_command, "executions": layer.executions, "finds": layer.finds,
        "mentions": layer.mentions, "first_line": layer.first_line, "last_line": layer.last_line,
        "sources": list(layer.sources), "warnings": list(layer.warnings), "problem": p.json_fields(),
        "time": (time or NO_TIME).to_dict(),
        "startup": getattr(layer, "startup", NO_STARTUP).to_dict(layer.finds),
    }
    if from_cudnn(layer.sources):   # the command is not the log's own: say so beside it
        out["driver_command_note"] = TRANSLATION
    if runs is not None:
        out["runs"] = [dict(r) for r in runs]
    return out


def to_json(catalog_layers: Sequence[Any], undecoded: Iterable[Any], stats: Mapping[str, Any],
            runs: Optional[Mapping[int, Sequence[Mapping[str, Any]]]] = None) -> dict[str, Any]:
    """The ``--format json`` document: layers (in the order given), undecoded lines, stats.

    ``stats`` must hold ``lines``, ``bytes`` and ``seconds`` (``unknown_finds``, Finds whose
    problem the log never named, defaults to 0; ``startup``, the catalog's
    ``StartupTotals.to_dict()``, defaults to nothing counted); only those keys are kept, so
    the contract stays what the README documents; ``time`` is added from the layers.
    ``runs`` maps a layer id to its run results (``RunResult.to_dict()``); each layer then
    carries a ``runs`` list.
    """
    layers = list(catalog_layers)
    times = layer_times(layers)
    return {
        "layers": [layer_json(layer, None if runs is None else runs.get(layer.id, ()), times.get(layer.id))
                   for layer in layers],
        "undecoded": [{"line": u.line, "reason": u.reason, "text": u.text} for u in undecoded],
        "stats": _stats(stats, times),
    }


def _stats(stats: Mapping[str, Any], times: Mapping[int, LayerTime]) -> dict[str, Any]:
    summary = time_summary(dict(times))
    return {"lines": int(stats["lines"]), "bytes": int(stats["bytes"]), "seconds": float(stats["seconds"]),
            "unknown_finds": int(stats.get("unknown_finds", 0)),
            "time": {"layers": summary.layers, "timed": summary.timed,
                     "total_ms": None if summary.total_ms is None else round(summary.total_ms, 6),
                     "top5_share": None if summary.top5_share is None else round(summary.top5_share, 6)},
            "startup": dict(stats.get("startup") or _NO_STARTUP_TOTALS)}


def run_stats(stats: Mapping[str, Any], layers: Sequence[Any]) -> dict[str, Any]:
    """The ``stats`` object of the JSON document for ``layers`` (``miotui diff`` gives each
    run's, the same as ``decode --format json`` does)."""
    return _stats(stats, layer_times(list(layers)))


#: the ``stats.startup`` of a log with no first-iteration lines
_NO_STARTUP_TOTALS = {"kernels_compiled": 0, "kernels_from_cache": 0, "compile_ms": None, "tuning_ms": None,
                      "searches": 0, "find_db_misses": 0, "find_db_hits": 0, "unattributed": 0,
                      "unattributed_ms": None, "timed": False, "settings": {}}


#: ``json.dumps`` with its defaults, less the check for circular references (a layer's dict has
#: none), made once: 200,000 layers are 200,000 calls
_ENCODER = json.JSONEncoder(check_circular=False)


def json_encoder() -> json.JSONEncoder:
    """The encoder the JSON documents are written with (``miotui diff``'s too)."""
    return _ENCODER


def write_json(out: IO[str], catalog_layers: Iterable[Any], undecoded: Iterable[Any], stats: Mapping[str, Any],
               runs: Optional[Mapping[int, Sequence[Mapping[str, Any]]]] = None) -> None:
    """The same document as ``to_json``, written as it is made: one layer or undecoded record
    per line, so a log of 200,000 layers never holds the whole text (nor every layer's dict)
    in memory, and each line is encoded by the C encoder."""
    dumps = _ENCODER.encode
    layers = catalog_layers if isinstance(catalog_layers, list) else list(catalog_layers)
    times = layer_times(layers)
    out.write('{"layers": [')
    sep = "\n "
    for layer in layers:
        out.write(sep + dumps(layer_json(layer, None if runs is None else runs.get(layer.id, ()), times.get(layer.id))))
        sep = ",\n "
    out.write('\n],\n"undecoded": [')
    sep = "\n "
    for u in undecoded:
        out.write(sep + dumps({"line": u.line, "reason": u.reason, "text": u.text}))
        sep = ",\n "
    out.write('\n],\n"stats": ' + dumps(_stats(stats, times)) + "\n}\n")


# ---------------------------------------------------------------------- CSV

CSV_COLUMNS = ("id", "op", "direction", "dtype", "layout", "n", "c", "d", "h", "w", "k", "filter", "pad",
               "stride", "dilation", "groups", "mode", "output", "executions", "finds", "mentions",
               "gflop_per_call", "first_line", "last_line", "sources", "files", "solver", "algorithm",
               "solver_time_ms", "time_per_call_ms", "time_source", "time_total_ms", "time_share", "find_db",
               "searched", "kernels_compiled", "kernels_from_cache", "compile_ms", "tuning_ms", "warnings",
               "driver_command",
               "run_backend", "run_status", "run_median_ms", "run_min_ms", "run_max_ms", "run_gflops",
               "run_gbps", "run_verified", "run_error", "run_tolerance")

#: the CSV's run columns and the ``RunResult.to_dict()`` keys they show (the latest run)
_RUN_COLUMNS = (("run_backend", "backend"), ("run_status", "status"), ("run_median_ms", "median_ms"),
                ("run_min_ms", "min_ms"), ("run_max_ms", "max_ms"), ("run_gflops", "gflops"),
                ("run_gbps", "gbps"))


def _run_cells(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run columns of a layer: its latest run, empty when it has none."""
    cells: dict[str, Any] = {column: "" for column in CSV_COLUMNS if column.startswith("run_")}
    if not runs:
        return cells
    last = runs[-1]
    for column, key in _RUN_COLUMNS:
        value = last.get(key)
        cells[column] = "" if value is None else value
    ver = last.get("verification") or {}
    if ver:
        cells.update(run_verified="yes" if ver.get("ok") else "no",
                     run_error="" if ver.get("error") is None else ver["error"],
                     run_tolerance="" if ver.get("tolerance") is None else ver["tolerance"])
    return cells


def _blank(value: Optional[float]) -> str:
    """A number, or an empty cell where the log has none (never 0 for "unknown")."""
    return "" if value is None else f"{value:.6g}"


#: what may stand before a formula a spreadsheet still runs: whitespace (tabs, newlines and
#: spaces of any width, which ``visible`` keeps) and the marks ``visible`` puts where a
#: control character was (``\\x1b=`` becomes ``␛=``)
_FORMULA_LEAD = "".join(c for c in map(chr, range(0x3001)) if c.isspace()) + "".join(
    chr(0x2400 + i) for i in range(0x22))


def _cell(text: str) -> str:
    """Log text in a CSV cell: control characters made visible, and a cell whose first
    character past any whitespace or control is ``=``, ``+``, ``-`` or ``@`` quoted with
    ``'`` so a spreadsheet reads it as text, not a formula (a hostile log could name a
    solver ``=HYPERLINK(...)``, or ``\\t=HYPERLINK(...)``: spreadsheets skip the tab)."""
    text = visible(text, newlines=True)
    return "'" + text if text.lstrip(_FORMULA_LEAD)[:1] in ("=", "+", "-", "@") else text


#: a CSV cell of log text, for the other CSV writers (``miotui diff``)
csv_cell = _cell


def to_csv(layers: Sequence[Any], runs: Optional[Mapping[int, Sequence[Mapping[str, Any]]]] = None) -> str:
    """One row per layer, in the order given; ``id`` is the layer's id, the ``run_*``
    columns its latest run in ``runs`` (layer id -> ``RunResult.to_dict()`` list)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    times = layer_times(layers)
    for layer in layers:
        p = layer.problem
        t = times.get(layer.id, NO_TIME)
        s = getattr(layer, "startup", NO_STARTUP)
        cols = layer_columns(p)
        ann = dict(layer.annotations)
        row = {
            "id": layer.id, "op": p.op, "direction": p.direction, "dtype": p.dtype, "layout": p.layout,
            **cols, "executions": layer.executions, "finds": layer.finds, "mentions": layer.mentions,
            "gflop_per_call": f"{p.flops / 1e9:.6g}", "first_line": layer.first_line,
            "last_line": layer.last_line, "sources": ";".join(layer.sources),
            "files": _cell(";".join(getattr(layer, "files", ()))), "solver": _cell(ann.get("solver", "")),
            "algorithm": _cell(ann.get("algorithm", "")), "solver_time_ms": _cell(ann.get("solver_time_ms", "")),
            "time_per_call_ms": _blank(t.per_call_ms), "time_source": t.source or "",
            "time_total_ms": _blank(t.total_ms), "time_share": "" if t.share is None else f"{t.share:.6g}",
            "find_db": s.find_db, "searched": "yes" if s.searched else "no", "kernels_compiled": s.kernels_compiled,
            "kernels_from_cache": s.kernels_from_cache, "compile_ms": _blank(s.compile_ms),
            "tuning_ms": _blank(s.tuning_ms),
            "warnings": _cell(" | ".join(layer.warnings)), "driver_command": layer.driver_command,
            **_run_cells(runs.get(layer.id, ()) if runs else ()),
        }
        w.writerow([row[c] for c in CSV_COLUMNS])
    return buf.getvalue()


# ---------------------------------------------------------------------- driver script


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def to_driver_script(layers: Sequence[Any]) -> str:
    """A bash script running every layer with MIOpenDriver, most executed first.

    The layers are sorted here (executions, then finds, then mentions, descending;
    first seen first on ties), so callers may pass them in any order.  Each command gets
    ``-t 1`` (print kernel time) and the script's own arguments, so
    ``./layers.sh -V 0 -i 100`` passes ``-V 0 -i 100`` to every layer.  The driver binary
    is ``$MIOPEN_DRIVER`` or ``MIOpenDriver`` on PATH.  A failing layer is reported and
    the script goes on; its exit status is the number of failures (capped at 255).
    """
    ordered = sorted(layers, key=lambda s: (-s.executions, -s.finds, -s.mentions, s.first_line,
                                            getattr(s, "index", 0)))
    out = [
        "#!/usr/bin/env bash",
        "# MIOpenDriver commands for the unique layers of a MIOpen log, most executed first.",
        "# Written by miotui. Usage: bash this.sh [extra MIOpenDriver flags, e.g. -V 0 -i 100]",
        "# The driver is $MIOPEN_DRIVER, else MIOpenDriver on PATH (e.g. /opt/rocm/bin/MIOpenDriver).",
        'DRIVER="${MIOPEN_DRIVER:-MIOpenDriver}"',
        "failures=0",
        "",
    ]
    for layer in ordered:
        p = layer.problem
        shape = dims(getattr(p, "input_shape", ()))
        out.append(f"# layer {layer.id}: {p.op} {p.direction} {p.dtype} {p.layout} {shape} - "
                   f"{_plural(layer.executions, 'execution')}, {_plural(layer.finds, 'find')}, "
                   f"{_plural(layer.mentions, 'mention')}; log lines {layer.first_line}-{layer.last_line}")
        if from_cudnn(getattr(layer, "sources", ())):
            out.append(f"#   {TRANSLATION}")
        for warning in layer.warnings:
            out.append("#   warning: " + visible(" ".join(warning.split())))
        argv, why = _driver_argv(p)
        if argv is None:
            out.append("#   skipped: " + visible(" ".join(why.split())))
            out.append("")
            continue
        cmd = " ".join(shlex.quote(a) for a in argv)
        out.append(f'echo "== layer {layer.id}: {p.op} {p.direction} {p.dtype}" >&2')
        out.append(f'"$DRIVER" {cmd} -t 1 "$@" || {{ echo "miotui: layer {layer.id} failed (exit $?)" >&2; '
                   f'failures=$((failures + 1)); }}')
        out.append("")
    out.append('[ "$failures" -gt 0 ] && echo "miotui: $failures layer(s) failed" >&2')
    out.append('exit $(( failures > 255 ? 255 : failures ))')
    return "\n".join(out) + "\n"

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
from miotui.families import UnknownFamily, family_of
from miotui.formats import FORMATS
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
from miotui.startup import NO_STARTUP, LayerStartup
from miotui.views.run_summary import latest_per_backend, shown_index
from miotui.views.timing import NO_TIME, LayerTime, layer_times, time_summary

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
    try:
        columns = family_of(problem).columns
    except UnknownFamily:
        return out
    if columns.applies:
        out.update(columns(problem))
    return out


def _conv_parts(conv: ConvProblem) -> dict[str, Any]:
    return dict(k=conv.k, filter=dims(conv.filter), pad=dims(conv.pads), stride=dims(conv.strides),
                dilation=dims(conv.dilations), groups=conv.groups)


def conv_columns(problem: ConvProblem) -> dict[str, Any]:
    """The convolution's geometry; ``mode`` adds its pad mode, transposed output padding and
    any layouts that differ from the input's."""
    mode = problem.mode
    if problem.pad_mode != "default":
        mode += f" pad={problem.pad_mode}"
    if problem.mode == "trans" and any(problem.trans_output_pads):
        mode += f" adj={dims(problem.trans_output_pads)}"
    if problem.in_layout != problem.fil_layout or problem.in_layout != problem.out_layout:
        mode += f" w:{problem.fil_layout} y:{problem.out_layout}"
    return {"mode": mode, **_conv_parts(problem)}


def fusion_columns(problem: FusionProblem) -> dict[str, Any]:
    """The plan's description, and its convolution's geometry when it has one."""
    return {"mode": problem.description, **(_conv_parts(problem.conv) if problem.has_conv else {})}


def pool_columns(problem: PoolProblem) -> dict[str, Any]:
    return dict(filter=dims(problem.window), pad=dims(problem.pads), stride=dims(problem.strides),
                mode=problem.mode)


def bnorm_columns(problem: BatchNormProblem) -> dict[str, Any]:
    mode = problem.mode
    if problem.param_dtype != problem.dtype:
        mode += f" params:{problem.param_dtype}"
    return {"mode": mode}


def activ_columns(problem: ActivationProblem) -> dict[str, Any]:
    return {"mode": problem.mode_name}


def lrn_columns(problem: LRNProblem) -> dict[str, Any]:
    return {"filter": str(problem.lrn_n), "mode": problem.mode}


def softmax_columns(problem: SoftmaxProblem) -> dict[str, Any]:
    return {"mode": ("fast", "accurate", "log")[problem.algorithm] + " " + ("instance", "channel")[problem.mode]}


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
    logged time (``miotui.views.timing.layer_times``, which needs every layer for the shares).
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
    note = FORMATS.translation(layer.sources)
    if note:   # the command is not the log's own: say so beside it
        out["driver_command_note"] = note
    if runs is not None:
        out["runs"] = [dict(r) for r in runs]
        latest = latest_runs(runs)
        out["latest_runs"] = [dict(r) for r in latest]
        out["verdict"] = _verdict(latest)
    return out


def latest_runs(runs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Each backend's latest result among a layer's runs (``RunResult.to_dict()``, oldest
    first), as the table's row picks from (``run_summary.latest_per_backend``)."""
    return latest_per_backend(runs, lambda r: str(r.get("backend", "")), lambda r: str(r.get("status", "")))


def _verdict(latest: Sequence[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    """The verdict the table's row shows: the backend and status :func:`shown_index` picks,
    with how many other backends have a result (None: never run)."""
    i = shown_index([str(r.get("status", "")) for r in latest])
    if i < 0:
        return None
    return {"backend": latest[i].get("backend"), "status": latest[i].get("status"), "others": len(latest) - 1}


def to_json(catalog_layers: Sequence[Any], undecoded: Iterable[Any], stats: Mapping[str, Any],
            runs: Optional[Mapping[int, Sequence[Mapping[str, Any]]]] = None,
            whole: Optional[Sequence[Any]] = None) -> dict[str, Any]:
    """The ``--format json`` document: layers (in the order given), undecoded lines, stats.

    ``stats`` must hold ``lines``, ``bytes`` and ``seconds`` (``unknown_finds``, Finds whose
    problem the log never named, defaults to 0; ``startup``, the catalog's
    ``StartupTotals.to_dict()``, defaults to nothing counted); only those keys are kept, so
    the contract stays what the README documents; ``time`` is added from the layers.
    ``runs`` maps a layer id to its run results (``RunResult.to_dict()``); each layer then
    carries a ``runs`` list, each backend's latest result (``latest_runs``) and the
    ``verdict`` the table's row shows.  ``whole``: every layer of the run, when
    ``catalog_layers`` are some of them (a filtered export): shares and ``stats.time`` are
    of the whole run, as on screen, never renormalised over the layers written.
    """
    layers = list(catalog_layers)
    times = whole_times(layers, whole)
    return {
        "layers": [layer_json(layer, None if runs is None else runs.get(layer.id, ()), times.get(layer.id))
                   for layer in layers],
        "undecoded": [{"line": u.line, "reason": u.reason, "text": u.text} for u in undecoded],
        "stats": _stats(stats, times),
    }


def whole_times(layers: Sequence[Any], whole: Optional[Sequence[Any]]) -> dict[int, LayerTime]:
    """Each layer's logged time with its share of the whole run's (``whole``: every layer;
    None: ``layers`` are all of them)."""
    return layer_times(layers if whole is None else whole)


def _stats(stats: Mapping[str, Any], times: Mapping[int, LayerTime]) -> dict[str, Any]:
    summary = time_summary(dict(times))
    return {"lines": int(stats["lines"]), "bytes": int(stats["bytes"]), "seconds": float(stats["seconds"]),
            "unknown_finds": int(stats.get("unknown_finds", 0)),
            "time": {"layers": summary.layers, "timed": summary.timed,
                     "total_ms": None if summary.total_ms is None else round(summary.total_ms, 6),
                     "top5_share": None if summary.top5_share is None else round(summary.top5_share, 6)},
            "startup": dict(stats.get("startup") or _NO_STARTUP_TOTALS),
            **({"kernel_time": dict(stats["kernel_time"])} if stats.get("kernel_time") else {})}


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
               runs: Optional[Mapping[int, Sequence[Mapping[str, Any]]]] = None,
               whole: Optional[Sequence[Any]] = None) -> None:
    """The same document as ``to_json``, written as it is made: one layer or undecoded record
    per line, so a log of 200,000 layers never holds the whole text (nor every layer's dict)
    in memory, and each line is encoded by the C encoder."""
    dumps = _ENCODER.encode
    layers = catalog_layers if isinstance(catalog_layers, list) else list(catalog_layers)
    times = whole_times(layers, whole)
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
               "driver_command", "miopen_verdict", "miopen_error", "miopen_tolerance",
               "run_backend", "run_status", "run_median_ms", "run_min_ms", "run_max_ms", "run_gflops",
               "run_gbps", "run_verified", "run_error", "run_tolerance", "run_backends")

#: the backends (``miotui.execute.registry.BACKENDS``, named here so that an export does not
#: load the execution package): each has its latest result's columns in the CSV
RUN_BACKENDS = ("numpy", "numba", "torch", "miopen-driver")
#: a backend's CSV columns: ``<backend>_<what>`` and the ``RunResult.to_dict()`` value shown
_BACKEND_COLUMNS = ("status", "median_ms", "min_ms", "max_ms", "error", "tolerance")
CSV_COLUMNS = CSV_COLUMNS + tuple(f"{b.replace('-', '_')}_{what}" for b in RUN_BACKENDS for what in _BACKEND_COLUMNS)

#: the CSV's run columns and the ``RunResult.to_dict()`` keys they show (the latest run)
_RUN_COLUMNS = (("run_backend", "backend"), ("run_status", "status"), ("run_median_ms", "median_ms"),
                ("run_min_ms", "min_ms"), ("run_max_ms", "max_ms"), ("run_gflops", "gflops"),
                ("run_gbps", "gbps"))


def _run_cells(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run columns of a layer: ``run_*`` the result its table row shows (of each
    backend's latest, a failure before a pass: ``miotui.views.run_summary.shown_index``) and
    ``run_backends`` the backends with a result; ``<backend>_*`` each backend's latest
    result.  Empty when it has none."""
    cells: dict[str, Any] = {column: "" for column in CSV_COLUMNS[CSV_COLUMNS.index("run_backend"):]}
    latest = latest_runs(runs) if runs else []
    i = shown_index([str(r.get("status", "")) for r in latest])
    if i < 0:
        return cells
    shown = latest[i]
    for column, key in _RUN_COLUMNS:
        value = shown.get(key)
        cells[column] = "" if value is None else value
    ver = shown.get("verification") or {}
    if ver:
        cells.update(run_verified="yes" if ver.get("ok") else "no",
                     run_error="" if ver.get("error") is None else ver["error"],
                     run_tolerance="" if ver.get("tolerance") is None else ver["tolerance"])
    cells["run_backends"] = ";".join(str(r.get("backend", "")) for r in latest)
    for r in latest:
        name = str(r.get("backend", "")).replace("-", "_")
        if f"{name}_status" not in cells:
            continue
        ver = r.get("verification") or {}
        for what, value in (("status", r.get("status")), ("median_ms", r.get("median_ms")),
                            ("min_ms", r.get("min_ms")), ("max_ms", r.get("max_ms")),
                            ("error", ver.get("error")), ("tolerance", ver.get("tolerance"))):
            cells[f"{name}_{what}"] = "" if value is None else value
    return cells


def _miopen_cells(ann: Mapping[str, str]) -> dict[str, str]:
    """MIOpen's own verdict printed in the log (MIOpenDriver's output), as the table's
    ``MIOpen verdict`` column shows it: ``FAILED`` or ``ok``, with its error and tolerance."""
    verdict = ann.get("driver_verdict", "")
    return {"miopen_verdict": ("FAILED" if verdict.upper().startswith("FAIL") else "ok") if verdict else "",
            "miopen_error": _cell(ann.get("driver_verify_error", "")) if verdict else "",
            "miopen_tolerance": _cell(ann.get("driver_tolerance", "")) if verdict else ""}


def kernels_logged(layers: Iterable[Any]) -> bool:
    """Whether the log says anything about kernels (MIOPEN_LOG_LEVEL=6 lines: a kernel
    compiled or loaded from the binary cache) for any of ``layers``: without such lines a
    layer's kernel counts are unknown, not zero."""
    return any(s.kernels_compiled or s.kernels_from_cache
               for s in (getattr(layer, "startup", NO_STARTUP) for layer in layers))


def _kernel_counts(s: LayerStartup, logged: bool) -> tuple[Any, Any]:
    """(compiled, from the cache) for the CSV: blank where the log says nothing about kernels."""
    if not logged and not (s.kernels_compiled or s.kernels_from_cache):
        return "", ""
    return s.kernels_compiled, s.kernels_from_cache


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


def to_csv(layers: Sequence[Any], runs: Optional[Mapping[int, Sequence[Mapping[str, Any]]]] = None,
           whole: Optional[Sequence[Any]] = None) -> str:
    """One row per layer, in the order given; ``id`` is the layer's id, the ``run_*``
    columns the result its table row shows, ``<backend>_*`` each backend's latest result
    (``runs``: layer id -> ``RunResult.to_dict()`` list, oldest first).  ``whole``: every
    layer of the run, when ``layers`` are some of them: ``time_share`` is of the whole run,
    and kernel counts are blank ("not logged") only where the whole log has no kernel lines."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    times = whole_times(layers, whole)
    logged = kernels_logged(layers if whole is None else whole)
    for layer in layers:
        p = layer.problem
        t = times.get(layer.id, NO_TIME)
        s = getattr(layer, "startup", NO_STARTUP)
        compiled, from_cache = _kernel_counts(s, logged)
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
            "find_db": s.find_db, "searched": "yes" if s.searched else "no", "kernels_compiled": compiled,
            "kernels_from_cache": from_cache, "compile_ms": _blank(s.compile_ms),
            "tuning_ms": _blank(s.tuning_ms),
            "warnings": _cell(" | ".join(layer.warnings)), "driver_command": layer.driver_command,
            **_miopen_cells(ann),
            **_run_cells(runs.get(layer.id, ()) if runs else ()),
        }
        w.writerow([row[c] for c in CSV_COLUMNS])
    return buf.getvalue()


# ---------------------------------------------------------------------- driver script


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def to_driver_script(layers: Sequence[Any], keep_order: bool = False) -> str:
    """A bash script running every layer with MIOpenDriver, most executed first, or in the
    order given (``keep_order``: the app's export follows the table's order, as its
    dialog says).

    Otherwise the layers are sorted here (executions, then finds, then mentions, descending;
    first seen first on ties), so callers may pass them in any order.  Each command gets
    ``-t 1`` (print kernel time) and the script's own arguments, so
    ``./layers.sh -V 0 -i 100`` passes ``-V 0 -i 100`` to every layer.  The driver binary
    is ``$MIOPEN_DRIVER`` or ``MIOpenDriver`` on PATH.  A failing layer is reported and
    the script goes on; its exit status is the number of failures (capped at 255).
    """
    ordered = list(layers) if keep_order else sorted(
        layers, key=lambda s: (-s.executions, -s.finds, -s.mentions, s.first_line, getattr(s, "index", 0)))
    order = "in the order miotui's table showed them" if keep_order else "most executed first"
    out = [
        "#!/usr/bin/env bash",
        f"# MIOpenDriver commands for the unique layers of a MIOpen log, {order}.",
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
        note = FORMATS.translation(getattr(layer, "sources", ()))
        if note:
            out.append(f"#   {note}")
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

"""What the detail screen draws, as Rich renderables built from plain data.

Every string that comes from a log, a driver, a file or the environment goes through
:func:`t` (``safe_text.visible``, then a ``Text``: never markup), so a log line carrying
an escape sequence or ``[link=...]`` shows as text and drives nothing.
"""

from __future__ import annotations

import time
from typing import Any, Optional, Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text

from miotui.safe_text import visible
from miotui.views import units
from miotui.views.run_summary import (
    driver_comparison,
    noise_warning,
    rate_arithmetic,
    settings_text,
    severity,
    status_text,
    verdict_of,
)
from miotui.views.startup_model import search_progress_text, what_logged
from miotui.views.timing import CUDNN_HOW_TO_TIME, HOW_TO_TIME
from miotui.widgets.bar_chart import bar_chart

#: Annotation names shown under "MIOpen's choice", with their labels.
CHOICE_LABELS = (
    ("solver", "solver"), ("solver_id", "solver id"), ("algorithm", "algorithm"),
    ("solver_time_ms", "time (ms)"), ("workspace", "workspace"), ("perf_config", "perf config"),
    ("find_result", "find result"), ("driver_kernel_ms", "driver kernel (ms)"),
    ("driver_verdict", "driver verdict"), ("driver_error", "driver error"),
    ("driver_tolerance", "driver tolerance"), ("driver_reference", "driver reference"),
)
#: cuDNN's facts (``miotui.formats.cudnn``'s annotations), in this order, for a cuDNN layer
CUDNN_CHOICE_LABELS = (
    ("solver", "engine (knobs)"), ("tf32", "TF32"), ("compute_type", "compute type"), ("math_type", "math type"),
    ("algo", "algorithm (legacy API)"), ("numerical_notes", "numerical notes"), ("plan_timing", "plan timing"),
    ("engine_config", "engines tried"),
    ("cudnn_warning", "warnings"), ("cudnn_error", "errors"),
)
_VERDICT_STYLE = {"good": "bold green", "bad": "bold red", "neutral": "yellow"}
#: what each time source is (``miotui.views.timing``)
SOURCE_LABELS = {
    "perf_log": "MIOPEN_PERFORMANCE_LOGS: MIOpen's mean measured kernel time",
    "execution_log": "LogConvolutionExecution: the Find-Db time of the solution each execution ran",
    "find": "the Find: the time it measured for the chosen solution",
    "driver": "MIOpenDriver's kernel time, printed in the log",
    "profiler": "a PyTorch profiler trace: the GPU's own time of the kernels the layer's calls launched",
    "rocprof": "a rocprofv3 kernel trace: kernel times given to the log's calls by their order",
}
_FIND_DB = {"hit": "hit: the Find was answered from the Find-Db",
            "miss": "miss: the Find measured the solvers (Find-db regenerating)"}
NOT_LOGGED = "not logged"


def t(value: Any, style: str = "") -> Text:
    """Untrusted text, made visible, as a Text (never parsed as markup)."""
    return Text(visible(str(value), newlines=True, tabsize=4), style=style)


def shape(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def kv_table(title: str, rows: Sequence[tuple[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", show_header=False, box=None,
                  padding=(0, 1), expand=False)
    table.add_column("name", style="dim", no_wrap=True)
    table.add_column("value", overflow="fold")
    for name, value in rows:
        table.add_row(t(name), value if isinstance(value, Text) else t(value))
    return table


def derived_rows(problem: Any, reference_bytes: Optional[int]) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = [("input (N,C,[D,]H,W)", shape(problem.input_shape))]
    if hasattr(problem, "weight_shape"):
        rows.append(("weights (MIOpen order)", shape(problem.weight_shape)))
    rows.append(("output", shape(problem.output_shape)))
    flops, moved = problem.flops, problem.bytes_moved
    rows.append(("work per call", f"{units.flops(flops)} ({flops:,} FLOP)"))
    rows.append(("bytes moved (x, w, y once)", f"{units.size(moved)} ({moved:,} bytes)"))
    rows.append(("arithmetic intensity", f"{units.sig(flops / moved if moved else 0)} FLOP/byte"))
    rows.append(("judged by", "bandwidth (GB/s): a memory-bound layer" if units.memory_bound(problem)
                 else "compute rate (FLOP/s)"))
    if reference_bytes is None:
        rows.append(("reference run needs", Text("computing…", style="dim")))
    elif reference_bytes < 0:
        rows.append(("reference run needs", Text("unknown (no reference for this layer)", style="dim")))
    else:
        rows.append(("reference run needs", f"{units.size(reference_bytes)} of memory (fp32 reference)"))
    return rows


def choice_table(snap: Any) -> Table:
    from miotui.formats import FORMATS
    cudnn = FORMATS.format_of(snap.sources).name == "cudnn"
    labels = CUDNN_CHOICE_LABELS + CHOICE_LABELS[1:] if cudnn else CHOICE_LABELS
    history = dict(getattr(snap, "annotation_history", ()) or ())
    ann = dict(snap.annotations)
    choice: list[tuple[str, Any]] = []
    for name, label in labels:
        values = history.get(name) or ((ann[name],) if name in ann else ())
        if values:
            choice.append((label, "\n".join(values)))
    known = {n for n, _ in labels}
    for name, value in snap.annotations:
        if name not in known:
            choice.append((name, value))
    if not choice:
        hint = ("nothing logged (CUDNN_LOGLEVEL_DBG=3 logs the engine of each run)" if cudnn else
                "nothing logged (MIOPEN_LOG_LEVEL=5 or 6 logs the chosen solver and its time)")
        choice.append(("", Text(hint, style="dim")))
    return kv_table("cuDNN's choice" if cudnn else "MIOpen's choice", choice)


def fields_grid(snap: Any, reference_bytes: Optional[int], side_by_side: bool = True) -> Table:
    p = snap.problem
    fields = kv_table("Fields", [(k, "x".join(map(str, v)) if isinstance(v, list) else v)
                                 for k, v in p.to_dict().items()])
    seen = [("executions", f"{snap.executions:,}"), ("finds", f"{snap.finds:,}"),
            ("other mentions", f"{snap.mentions:,}"), ("first line", snap.first_line),
            ("last line", snap.last_line), ("seen in", ", ".join(snap.sources) or "—")]
    if snap.files:
        per_file = dict(snap.file_executions)
        if len(snap.files) > 1:   # a layer merged from several files (ranks): how many calls each ran
            lines = [f"{name}: {per_file.get(name, 0):,} execution{'' if per_file.get(name, 0) == 1 else 's'}"
                     for name in snap.files]
        else:
            lines = list(snap.files)
        seen.append(("files", "\n".join(lines)))
    right = Table.grid()
    right.add_row(kv_table("Derived", derived_rows(p, reference_bytes)))
    right.add_row(Text(""))
    right.add_row(kv_table("How it was seen", seen))
    right.add_row(Text(""))
    right.add_row(choice_table(snap))
    grid = Table.grid(padding=(0, 4))
    if side_by_side:
        grid.add_row(fields, right)
    else:                       # a narrow terminal: one column, nothing folded
        grid.add_row(right)
        grid.add_row(Text(""))
        grid.add_row(fields)
    return grid


def _logged(ms: Optional[float], note: str = "") -> Any:
    """A duration, or ``not logged`` (never 0 for a duration the log does not give)."""
    if ms is not None:
        return units.time_ms(ms)
    return Text(NOT_LOGGED + (f" ({note})" if note else ""), style="dim")




def time_table(layer_time: Any, executions: int, latest: Sequence[Any], cudnn: bool = False) -> Table:
    """The layer's logged GPU time (per call, from where, total, share) or how to get one
    (``cudnn``: the layer is from a cuDNN log), and, apart, the time miotui measured itself
    (a CPU reference is not GPU time)."""
    lt = layer_time
    rows: list[tuple[str, Any]] = []
    if lt.per_call_ms is None:
        rows.append(("per call", Text("not in the log", style="yellow")))
        how = CUDNN_HOW_TO_TIME if cudnn else HOW_TO_TIME.split(": ", 1)[-1]
        rows.append(("to get it", Text(visible(how), style="dim")))
    else:
        rows.append(("per call", units.time_ms(lt.per_call_ms)))
        rows.append(("from", SOURCE_LABELS.get(lt.source or "", lt.source or "")))
        for source, ms in lt.also:   # the other sources' times, beside the one used
            rows.append((f"also ({source})", f"{units.time_ms(ms)}: {SOURCE_LABELS.get(source, source)}"))
        if lt.total_ms is None:
            rows.append(("total", Text("none: not executed in the log (found or mentioned only)", style="dim")))
        else:
            rows.append(("total", f"{units.time_ms(lt.total_ms)} ({executions:,} executions)"))
            rows.append(("share", f"{100 * lt.share:.1f}% of the logged GPU time" if lt.share is not None
                         else units.MISSING))
    for r in latest:
        if r.median_ms is not None:
            rows.append((f"miotui run ({r.backend})", Text(f"{units.time_ms(r.median_ms)} median: measured here, "
                                                            "not the log's GPU time, never in its totals",
                                                            style="italic")))
            break
    return kv_table("Time (the log's GPU time)", rows)


def startup_table(startup: Any, finds: int, totals: Any, searching: Sequence[Any] = ()) -> Table:
    """The layer's first iteration: Find-Db, solvers measured, tuning, kernels compiled or
    from the binary cache, and how long each took (``not logged`` where the whole log, whose
    ``totals`` say what it holds, says nothing of the kind; ``none`` only where it would have);
    a tuning search in progress (``searching``, while following) with MIOpen's progress and ETA."""
    s = startup
    log_timed, log_has_binaries, log_has_searches = what_logged(totals)
    no_clock = "" if log_timed else "the log has no clock"
    rows: list[tuple[str, Any]] = [("Finds", f"{finds:,}")]
    rows.append(("Find-Db", _FIND_DB.get(s.find_db) or Text(f"{NOT_LOGGED} (MIOPEN_LOG_LEVEL=5 logs Find-Db misses)",
                                                             style="dim")))
    rows.append(("solvers measured", str(s.solvers_measured) if s.solvers_measured or s.find_db != "unknown"
                 else Text(NOT_LOGGED, style="dim")))
    if searching and s.tuning_ms is None:
        rows.append(("tuning search", Text("in progress (below)", style="bold")))
    elif s.tuning_ms is not None or (s.searched and s.find_db != "miss"):
        rows.append(("tuning search", _logged(s.tuning_ms, no_clock)))
    elif log_has_searches:
        rows.append(("tuning search", "none"))
    else:
        rows.append(("tuning search", Text(f"{NOT_LOGGED} (MIOPEN_LOG_LEVEL=5 logs tuning searches)", style="dim")))
    if log_has_binaries:
        rows.append(("kernels compiled", str(s.kernels_compiled)))
        rows.append(("from the binary cache", str(s.kernels_from_cache)))
        rows.append(("compile time", _logged(s.compile_ms, no_clock) if s.kernels_compiled else "none"))
    else:
        rows.append(("kernels", Text(f"{NOT_LOGGED} (MIOPEN_LOG_LEVEL=6 logs each compile and cache hit)",
                                     style="dim")))
    if finds or s.find_ms is not None:
        rows.append(("Find time", Text("in progress", style="bold") if searching and s.find_ms is None
                     else _logged(s.find_ms, no_clock)))
    for p in searching:
        now = Text()
        now.append(visible(p.solver), style="cyan")
        now.append("\n" + search_progress_text(p), style="bold")
        rows.append(("searching now", now))
    return kv_table("First iteration", rows)


def cudnn_startup_table(finds: int) -> Table:
    """A cuDNN layer's first iteration: its finds (``cudnnFind*`` calls, benchmark mode's
    timed plans); MIOpen's Find-Db, tuning and kernel compiles have no counterpart in the log."""
    return kv_table("First iteration", [
        ("Finds", f"{finds:,}"),
        ("", Text("cuDNN logs no Find-Db, tuning search or kernel compile: its engines tried are under "
                  "cuDNN's choice", style="dim"))])


def warnings_text(warnings: Sequence[str]) -> Text:
    out = Text()
    if warnings:
        out.append("Warnings\n", style="bold yellow")
        for w in warnings:
            out.append("  • ")
            out.append(t(w, "yellow"))
            out.append("\n")
    return out


def comparison_text(snap: Any, results: Sequence[Any]) -> Text:
    """MIOpen's logged verdict next to miotui's, and why they differ (empty when the log
    has no driver verdict for the layer)."""
    lines = driver_comparison(snap.annotations, results)
    out = Text()
    if lines:
        out.append("MIOpen's verdict and miotui's", style="bold")
        for line in lines:
            out.append("\n  ")
            out.append(t(line, "yellow" if line.startswith("Why") else ""))
    return out


def run_state_text(state: str, progress: str, position: int) -> Text:
    """What is happening to this layer's run right now."""
    out = Text()
    if state == "running":
        out.append("Running: ", style="bold italic")
        out.append(t(progress or "starting…", "italic"))
        out.append("   (x cancels it)", style="dim")
    elif state == "queued":
        out.append(f"Queued: {position} in line behind the run in progress", style="italic")
        out.append("   (x takes it out of the queue)", style="dim")
    return out


def runs_renderable(latest: Sequence[Any], history: Sequence[Any], state: str, narrow: bool = False) -> Any:
    """The newest result per backend (with a bar chart when several ran), then every run
    of this layer with when it ran and its settings.  ``narrow`` (an 80-column terminal)
    keeps the columns that decide (median, spread, speed, verdict) and moves the rest
    into each backend's note."""
    if not latest:
        if state:
            return Text("No result yet: the run above is " + state + ".", style="dim")
        return Text("No run yet: r runs it on the reference, R chooses backends, d launches MIOpenDriver.",
                    style="dim")
    table = Table(title="Runs (newest per backend)", title_justify="left", title_style="bold", expand=False,
                  padding=(0, 1))
    columns = ("backend", "verdict", "median", "spread", "speed") if narrow else \
        ("backend", "verdict", "median", "min–max", "spread", "JIT", "speed", "error ≤ tolerance")
    for col in columns:
        table.add_column(col, justify="left" if col in ("backend", "verdict") else "right", no_wrap=True)
    notes: list[Text] = []
    for r in latest:
        v = r.verification
        verdict = verdict_of(r)
        vtext = Text(verdict, style=_VERDICT_STYLE[severity(verdict)])
        if r.noisy:
            vtext.append(" noisy", style="bold yellow")
        if r.cached:
            vtext.append(" cached", style="bold magenta")
        spread = units.ratio(r.spread) if r.spread is not None else units.MISSING
        span = units.MISSING if r.min_ms is None else f"{units.time_ms(r.min_ms)}–{units.time_ms(r.max_ms)}"
        check = units.MISSING if v is None else \
            f"{units.sci(getattr(v, 'error', v.rms_range))} {'≤' if v.ok else '>'} {units.sci(v.tolerance)}"
        cells = {"backend": t(r.backend), "verdict": vtext, "median": units.time_ms(r.median_ms), "min–max": span,
                 "spread": Text(spread, style="bold yellow" if r.noisy else ""), "JIT": units.time_ms(r.jit_ms),
                 "speed": units.throughput(r.problem, r.gflops, r.gbps), "error ≤ tolerance": check}
        table.add_row(*(cells[c] for c in columns))
        line = Text(f"{visible(r.backend)}: ", style="bold")
        parts = [status_text(r) if verdict != "ok" else "",
                 f"min–max {span}, JIT {units.time_ms(r.jit_ms)}, error {check}" if narrow and r.median_ms else "",
                 rate_arithmetic(r), r.engine, f"compared against: {r.reference}" if r.reference else "",
                 r.message if verdict == "ok" else "", r.note, v.how if v else "",
                 f"max abs error {units.sci(v.max_abs)}, max relative {units.sci(v.max_rel)}" if v else ""]
        line.append(t("; ".join(p.rstrip(". ") for p in parts if p)))
        notes.append(line)
        warning = noise_warning(r)
        if warning:
            notes.append(Text("  ⚠ " + warning, style="yellow"))
    items: list[Any] = [table, *notes]
    timed = [(r.backend, r.median_ms, "" if r.median_ms else status_text(r)) for r in latest]
    if sum(1 for _, ms, _ in timed if ms) > 1:
        items.append(Text(""))
        items.append(bar_chart(timed, width=36, fmt=units.time_ms, title="median time per call (shorter is faster)"))
    if history:
        items.append(Text(""))
        items.append(history_table(history, narrow))
    return Group(*items)


def history_table(history: Sequence[Any], narrow: bool = False) -> Table:
    """Every kept run of the layer, newest first: when, what, how, and the result."""
    table = Table(title=f"Run history ({len(history)})", title_justify="left", title_style="bold",
                  expand=False, padding=(0, 1), box=None, header_style="bold dim")
    columns = ("when", "backend", "settings", "median", "spread", "verdict") if narrow else \
        ("when", "backend", "settings", "median", "min–max", "spread", "verdict")
    for col in columns:
        table.add_column(col, justify="right" if col in ("median", "min–max", "spread") else "left", no_wrap=True)
    for rec in reversed(history):
        r = rec.result
        verdict = verdict_of(r)
        vtext = Text(verdict, style=_VERDICT_STYLE[severity(verdict)])
        if r.cached:
            vtext.append(" (cached)", style="magenta")
        span = units.MISSING if r.min_ms is None else f"{units.time_ms(r.min_ms)}–{units.time_ms(r.max_ms)}"
        cells = {"when": time.strftime("%H:%M:%S", time.localtime(rec.started)), "backend": t(r.backend),
                 "settings": settings_text(r.settings, short=narrow), "median": units.time_ms(r.median_ms),
                 "min–max": span, "spread": Text(units.ratio(r.spread), style="bold yellow" if r.noisy else ""),
                 "verdict": vtext}
        table.add_row(*(cells[c] for c in columns))
    return table


def env_table(env: dict, pid: Optional[int]) -> Table:
    rows = list(env.items()) or [("", Text("no MIOPEN_* variables set", style="dim"))]
    return kv_table(f"MIOPEN_* environment of the job (pid {pid})", rows)


def raw_text(raw: Sequence[tuple[int, str]]) -> Text:
    out = Text()
    out.append("Raw log lines (first sighting)\n", style="bold")
    for n, line in raw:
        out.append(f"{n:>8} │ ", style="dim")
        out.append(t(visible(line, tabsize=4)))
        out.append("\n")
    return out

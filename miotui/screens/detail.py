"""One layer: every field, derived numbers, how it was seen, MIOpen's choice, the driver
command (copy / save), the runs and their verdicts, the job's MIOpen environment, and
the raw log block(s) it came from."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from miotui.widgets.bar_chart import bar_chart
from miotui.widgets.status_bar import human_bytes
from miotui.widgets.tail_view import printable

if TYPE_CHECKING:  # pragma: no cover
    from miotui.app import MiotuiApp

#: Annotation names shown under "MIOpen's choice", with their labels.
CHOICE_LABELS = (
    ("solver", "solver"), ("solver_id", "solver id"), ("algorithm", "algorithm"),
    ("solver_time_ms", "time (ms)"), ("workspace", "workspace"), ("perf_config", "perf config"),
    ("find_result", "find result"), ("driver_kernel_ms", "driver kernel (ms)"),
    ("driver_verdict", "driver verdict"), ("driver_error", "driver error"),
    ("driver_tolerance", "driver tolerance"), ("driver_reference", "driver reference"),
)


def shape(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _kv_table(title: str, rows: Sequence[tuple[str, Any]]) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", show_header=False, box=None,
              padding=(0, 1), expand=False)
    t.add_column("name", style="dim", no_wrap=True)
    t.add_column("value", overflow="fold")
    for name, value in rows:
        t.add_row(name, value if isinstance(value, Text) else Text(str(value)))
    return t


def _num(v: Optional[float], fmt: str = ".4g") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    return format(v, fmt)


def derived_rows(problem: Any, reference_bytes: Optional[int]) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = [("input (N,C,[D,]H,W)", shape(problem.input_shape))]
    if hasattr(problem, "weight_shape"):
        rows.append(("weights (MIOpen order)", shape(problem.weight_shape)))
    rows.append(("output", shape(problem.output_shape)))
    flops = problem.flops
    moved = problem.bytes_moved
    rows.append(("FLOPs per call", f"{flops:,} ({flops / 1e9:.4g} GFLOP)"))
    rows.append(("bytes moved (x, w, y once)", f"{moved:,} ({human_bytes(moved)})"))
    rows.append(("arithmetic intensity", f"{(flops / moved if moved else 0):.3g} FLOP/byte"))
    if reference_bytes is None:
        rows.append(("reference run needs", Text("computing…", style="dim")))
    elif reference_bytes < 0:
        rows.append(("reference run needs", Text("unknown (no reference for this layer)", style="dim")))
    else:
        rows.append(("reference run needs", f"{human_bytes(reference_bytes)} of memory (fp32 reference)"))
    return rows


def runs_renderable(results: Sequence[Any]) -> Any:
    """A table of the runs of this layer (latest per backend) and a bar chart when several ran."""
    if not results:
        return Text("No run yet: r runs it on the reference, R chooses backends, d launches MIOpenDriver.",
                    style="dim")
    t = Table(title="Runs", title_justify="left", title_style="bold", expand=False, padding=(0, 1))
    for col in ("backend", "status", "median ms", "min ms", "jit ms", "GFLOP/s", "GB/s", "max abs err",
                "max rel err", "rms/range", "tolerance", "verdict"):
        t.add_column(col, justify="right" if col not in ("backend", "status", "verdict") else "left",
                     no_wrap=True)
    notes: list[Text] = []
    for r in results:
        v = r.verification
        verdict = verdict_of(r)
        vstyle = {"ok": "bold green", "FAILED": "bold red", "error": "bold red"}.get(verdict, "yellow")
        t.add_row(r.backend, r.status, _num(r.median_ms), _num(r.min_ms), _num(r.jit_ms), _num(r.gflops, ".1f"),
                  _num(r.gbps, ".1f"), _num(v.max_abs if v else None, ".3g"), _num(v.max_rel if v else None, ".3g"),
                  _num(v.rms_range if v else None, ".3g"), _num(v.tolerance if v else None, ".3g"),
                  Text(verdict, style=vstyle))
        line = Text(f"{r.backend}: ", style="bold")
        parts = [p for p in (r.engine, r.message, r.note, v.how if v else "") if p]
        if r.iterations:
            parts.append(f"{r.iterations} timed iterations")
        line.append("; ".join(parts) if parts else "")
        notes.append(line)
    items: list[Any] = [t, *notes]
    timed = [(r.backend, r.median_ms, r.status) for r in results]
    if sum(1 for _, ms, _ in timed if ms) > 1:
        items.append(Text(""))
        items.append(bar_chart(timed, width=36, unit="ms", title="median time per call (shorter is faster)"))
    return Group(*items)


def verdict_of(result: Any) -> str:
    status = getattr(result, "status", "")
    if status == "ok":
        return "ok"
    if status == "failed":
        return "FAILED"
    return status or "?"


class DetailScreen(Screen):
    """Everything known about one layer."""

    BINDINGS = [
        Binding("escape,q", "back", "Back", id="detail.back"),
        Binding("c", "copy", "Copy cmd", id="detail.copy"),
        Binding("w", "save", "Save cmd", id="detail.save"),
        Binding("r", "run", "Run", id="detail.run"),
        Binding("R", "run_with", "Run with…", id="detail.run_with"),
        Binding("d", "driver", "MIOpenDriver", id="detail.driver"),
    ]

    def __init__(self, index: int) -> None:
        super().__init__(id="detail-screen")
        self.index = index
        self.reference_bytes: Optional[int] = None
        self._last_key: Any = None

    @property
    def miotui(self) -> "MiotuiApp":
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-scroll"):
            yield Static(id="detail-title")
            yield Static(id="detail-command")
            yield Static(id="detail-fields")
            yield Static(id="detail-warnings")
            yield Static(id="detail-runs")
            yield Static(id="detail-env")
            yield Static(id="detail-raw")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_content(force=True)
        self.query_one("#detail-scroll").focus()
        snap = self.miotui.snapshot(self.index)
        if snap is not None:
            self.run_worker(lambda: self._compute_reference_bytes(snap.problem), thread=True,
                            group="detail-peak", exit_on_error=False)

    def _compute_reference_bytes(self, problem: Any) -> None:
        """Peak memory of a reference run: needs numpy, so never on the UI thread."""
        try:
            from miotui.execute.reference import peak_bytes
            value = int(peak_bytes(problem))
        except Exception:
            value = -1
        self.app.call_from_thread(self._set_reference_bytes, value)

    def _set_reference_bytes(self, value: int) -> None:
        self.reference_bytes = value
        self.refresh_content(force=True)

    # ------------------------------------------------------------------ content

    def refresh_content(self, force: bool = False) -> None:
        app = self.miotui
        snap = app.snapshot(self.index)
        if snap is None:
            return
        results = app.results_for(self.index)
        state = app.run_state(self.index)
        key = (id(snap), tuple(id(r) for r in results), state, self.reference_bytes, app.job_env_version)
        if not force and key == self._last_key:
            return
        self._last_key = key
        p = snap.problem
        title = Text()
        title.append(f"Layer #{snap.index}: ", style="bold")
        title.append(f"{p.op} {p.direction} {p.dtype} {p.layout}", style="bold cyan")
        title.append(f"   {shape(p.input_shape)} → {shape(p.output_shape)}")
        if state:
            title.append(f"   [{state}]", style="italic yellow")
        self.query_one("#detail-title", Static).update(title)

        cmd = Text()
        cmd.append("MIOpenDriver command", style="bold")
        cmd.append("  (c copy · w save · d run it · r run on the reference · R choose)\n", style="dim")
        cmd.append(snap.driver_command or "(MIOpenDriver cannot express this layer; see warnings)",
                   style="bold green" if snap.driver_command else "yellow")
        self.query_one("#detail-command", Static).update(cmd)

        fields = _kv_table("Fields", [(k, "x".join(map(str, v)) if isinstance(v, list) else v)
                                      for k, v in p.to_dict().items()])
        derived = _kv_table("Derived", derived_rows(p, self.reference_bytes))

        seen = [("executions", f"{snap.executions:,}"), ("finds", f"{snap.finds:,}"),
                ("other mentions", f"{snap.mentions:,}"), ("first line", snap.first_line),
                ("last line", snap.last_line), ("seen in", ", ".join(snap.sources) or "—")]
        if snap.files:
            seen.append(("files", "\n".join(snap.files)))
        seen_table = _kv_table("How it was seen", seen)

        history = dict(getattr(snap, "annotation_history", ()) or ())
        ann = dict(snap.annotations)
        choice: list[tuple[str, Any]] = []
        for name, label in CHOICE_LABELS:
            values = history.get(name) or ((ann[name],) if name in ann else ())
            if values:
                choice.append((label, "\n".join(values)))
        known = {n for n, _ in CHOICE_LABELS}
        for name, value in snap.annotations:
            if name not in known:
                choice.append((name, value))
        if not choice:
            choice.append(("", Text("nothing logged (MIOPEN_LOG_LEVEL=5 or 6 logs the chosen solver and "
                                    "its time)", style="dim")))
        right = Table.grid()
        right.add_row(derived)
        right.add_row(Text(""))
        right.add_row(seen_table)
        right.add_row(Text(""))
        right.add_row(_kv_table("MIOpen's choice", choice))
        grid = Table.grid(padding=(0, 4))
        grid.add_row(fields, right)
        self.query_one("#detail-fields", Static).update(grid)

        warnings = Text()
        if snap.warnings:
            warnings.append("Warnings\n", style="bold yellow")
            for w in snap.warnings:
                warnings.append(f"  • {w}\n", style="yellow")
        self.query_one("#detail-warnings", Static).update(warnings)

        self.query_one("#detail-runs", Static).update(runs_renderable(results))

        env = app.job_env
        if env is not None:
            rows = list(env.items()) or [("", Text("no MIOPEN_* variables set", style="dim"))]
            self.query_one("#detail-env", Static).update(
                _kv_table(f"MIOPEN_* environment of the job (pid {app.job_pid})", rows))

        raw = Text()
        raw.append("Raw log lines\n", style="bold")
        for n, line in snap.raw:
            raw.append(f"{n:>8} │ ", style="dim")
            raw.append(printable(line) + "\n")
        self.query_one("#detail-raw", Static).update(raw)

    # ------------------------------------------------------------------ actions

    def action_back(self) -> None:
        """escape: cancel this layer's run if one is going, else go back."""
        if self.miotui.cancel_run_for(self.index, kind="run"):
            return
        self.app.pop_screen()

    def action_copy(self) -> None:
        self.miotui.copy_command(self.index)

    def action_save(self) -> None:
        self.miotui.save_command(self.index)

    def action_run(self) -> None:
        self.miotui.run_default(self.index)

    def action_run_with(self) -> None:
        self.miotui.choose_and_run(self.index)

    def action_driver(self) -> None:
        self.miotui.launch_driver(self.index)

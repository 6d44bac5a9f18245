"""The startup view: what the first iteration spent, while it is being spent.

MIOpen does its expensive work the first time it meets a problem (a Find measures the
solvers, a tuning search tries hundreds of configs, each kernel not in the binary cache
is compiled), and users ask why their first iteration takes minutes.  This screen shows
the log's answer: the totals, the settings in force (from the log, and from the job's
environment where miotui can read it), the tuning searches in progress with MIOpen's own
progress and ETA, calls per second and compile time per layer as sparklines, and a
timeline of the layers as MIOpen met them with their Find, tuning and compile spans.

It reads the live model's :class:`~miotui.views.startup_model.StartupView` (built by the
poller) and redraws when the app posts :class:`~miotui.screens.messages.StartupChanged`;
it never polls.  Every name from the log or the environment is shown as text
(``detail_view.t``), never as markup.
"""

from __future__ import annotations

from typing import Any, Optional

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Sparkline, Static

from miotui.screens.detail_view import NOT_LOGGED, t
from miotui.screens.messages import StartupChanged
from miotui.views import units
from miotui.views.startup_model import (
    StartupView,
    compile_series,
    gpu_cell,
    search_progress_text,
    settings_rows,
    span_bar,
    timeline_caption,
    what_logged,
)
from miotui.views.timing import cudnn_only
from miotui.widgets.footer import KeyFooter
from miotui.widgets.prerender import render_text

#: what to set when the log has no clock
UNTIMED_HINT = ("No durations: this log has no clock. MIOPEN_ENABLE_LOGGING_ELAPSED_TIME=1 (or "
                "MIOPEN_ENABLE_LOGGING_DATE_TIME=1) makes MIOpen time every line, and compiles, tuning and Finds "
                "get their durations.")
#: a cuDNN log: MIOpen's switches do not apply, and cuDNN logs no compile, tuning or Find
CUDNN_UNTIMED_HINT = ("No durations: cuDNN logs no kernel compile, tuning search or Find. A PyTorch profiler "
                      "trace of the same run beside the log (miotui LOG TRACE) places each layer's first call.")
#: what to set when the log says nothing about its first iteration
NOTHING_HINT = ("Nothing about the first iteration in this log yet. MIOPEN_LOG_LEVEL=5 logs each Find and "
                "Find-Db miss and the tuning searches, 6 also each kernel compiled or loaded from the binary cache; "
                "MIOPEN_ENABLE_LOGGING_ELAPSED_TIME=1 how long each took.")
#: the timeline's columns between the layer and the span bar, and their widths
_FIXED = (("Find-Db", 7), ("find", 7), ("tune", 7), ("compile", 7), ("kernels", 7))
#: the narrowest the layer label and the span bar get, and the widest the label gets
_LABEL_MIN, _LABEL_MAX, _BAR_MIN = 16, 40, 12


def spark_data(values: list[float]) -> list[float]:
    """What a sparkline draws: nothing (a flat baseline) where every value is zero, since
    Textual draws a lone value, zero included, as a full bar."""
    return values if any(values) else []


def duration(ms: Optional[float], happened: bool) -> str:
    """A span's duration: empty when it did not happen, ``—`` when the log has no clock."""
    if not happened:
        return ""
    return units.time_ms(ms) if ms is not None else units.MISSING


class StartupScreen(Screen):
    """The first iteration: totals, settings, searches in progress, timeline."""

    BINDINGS = [Binding("escape,q,i", "back", "Back", id="startup.back")]

    def __init__(self, model: Any, follow: bool = False) -> None:
        super().__init__(id="startup-screen")
        self.model = model
        #: calls per second mean something only while following (a file read once is read
        #: as fast as the disk goes): the sparkline shows then
        self.follow = follow
        self._rows_key: Any = None
        self._timeline_key: Any = None

    def compose(self) -> ComposeResult:
        yield Static(id="startup-title")
        with VerticalScroll(id="startup-scroll"):
            yield Static(id="startup-notes")
            yield Static(id="startup-settings")
            yield Static(id="startup-searching")
            with Horizontal(classes="spark-row", id="calls-row") as row:
                row.display = self.follow
                yield Static(id="calls-label", classes="spark-label")
                yield Sparkline([], id="calls-spark")
            with Horizontal(classes="spark-row"):
                yield Static(id="compile-label", classes="spark-label")
                yield Sparkline([], id="compile-spark")
            yield Static(id="startup-timeline", classes="prerendered")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.refresh_content()
        self.query_one("#startup-scroll").focus()

    def on_screen_resume(self) -> None:
        """Reopened (the app keeps this screen): what changed while it was away."""
        self.refresh_content()

    def on_startup_changed(self, message: StartupChanged) -> None:
        message.stop()
        self.refresh_content()

    def on_resize(self) -> None:
        self._rows_key = None
        self.refresh_content()

    def action_back(self) -> None:
        self.app.pop_screen()

    # ------------------------------------------------------------------ content

    def refresh_content(self) -> None:
        model = self.model
        view: StartupView = model.startup
        title = Text()
        if view.anything:       # the summary starts "first iteration: ..."
            title.append(t(view.summary[:1].upper() + view.summary[1:]))
            title.stylize("bold", 0, len("First iteration"))
        else:
            title.append("First iteration", style="bold")
            title.append(": nothing logged yet")
        self.query_one("#startup-title", Static).update(title)
        self.query_one("#startup-notes", Static).update(self._notes(view))
        self.query_one("#startup-settings", Static).update(self._settings(view))
        self.query_one("#startup-searching", Static).update(self._searching(view))
        rates = list(model.call_rates)
        self.query_one("#calls-label", Static).update(
            Text(f"calls/s {units.sig(rates[-1]) if rates else units.MISSING}", style="dim"))
        self.query_one("#calls-spark", Sparkline).data = spark_data(rates)
        series = compile_series(view.rows, view.totals.timed)
        top = max(series, default=0.0)
        if not what_logged(view.totals)[1] and view.totals.compile_ms is None:
            what = f"compiles/layer: {NOT_LOGGED}"
        elif not any(series):
            what = "compiles/layer: none"
        else:
            what = (f"compile/layer ≤{units.time_ms(top)}" if view.totals.timed
                    else f"compiles/layer ≤{top:.0f}")
        self.query_one("#compile-label", Static).update(Text(what, style="dim"))
        self.query_one("#compile-spark", Sparkline).data = spark_data(series)
        screen_width = self.size.width or self.app.size.width
        scroll = self.query_one("#startup-scroll")
        width = max(20, screen_width - scroll.styles.gutter.width - scroll.styles.scrollbar_size_vertical)
        key = (view.rows, view.clock, view.more, screen_width, width)
        if key != self._rows_key:
            self._rows_key = key
            self.call_after_refresh(self._render_timeline, key, view, screen_width, width)   # after the frame

    @property
    def ready(self) -> bool:
        """Whether the timeline shows the latest view (its thread has delivered it)."""
        return self._rows_key is not None and self._timeline_key is self._rows_key

    @work(thread=True, exclusive=True, group="startup-timeline", exit_on_error=False)
    def _render_timeline(self, key: Any, view: StartupView, screen_width: int, width: int) -> None:
        """Worker thread: the timeline (up to 400 layers in a table) laid out ``width``
        wide, so that ``i`` and the ten-a-second updates while MIOpen compiles never wait
        for Rich to measure it on the UI thread."""
        text = render_text(self._timeline(view, screen_width), width)
        try:
            self.app.call_from_thread(self._show_timeline, key, text)
        except RuntimeError:
            pass      # the app is closing

    def _show_timeline(self, key: Any, text: Text) -> None:
        if key is self._rows_key:
            self.query_one("#startup-timeline", Static).update(text)
            self._timeline_key = key

    def _notes(self, view: StartupView) -> Text:
        out = Text()
        last = getattr(self.model, "last", None)
        cudnn = cudnn_only(getattr(last, "formats", ()) or ())
        summary = self.model.time_summary
        if summary is not None:
            out.append("GPU time: ", style="bold")
            out.append(t(summary.line()))
        if not view.anything:
            out.append("\n" if out.plain else "")
            out.append(t(NOTHING_HINT, "yellow"))
        elif not view.totals.timed and not (cudnn and view.clock_source == "trace"):
            out.append("\n" if out.plain else "")
            out.append(t(CUDNN_UNTIMED_HINT if cudnn else UNTIMED_HINT, "yellow"))
        if view.note:
            out.append("\n" if out.plain else "")
            out.append(t(view.note, "cyan"))
        if view.totals.unattributed:
            out.append("\n" if out.plain else "")
            ms = view.totals.unattributed_ms
            out.append(t(f"{view.totals.unattributed} events could not be given to a layer"
                         + (f" ({units.time_ms(ms)})" if ms is not None else "")
                         + ": a thread with no call of its own (a compile thread, say)", "dim"))
        return out

    def _settings(self, view: StartupView) -> Any:
        model = self.model
        rows = settings_rows(view.totals.settings, model.job_env, model.job_pid)
        table = Table(title="Settings in force", title_justify="left", title_style="bold", show_header=False,
                      box=None, padding=(0, 1), expand=False)
        table.add_column("setting", style="dim", no_wrap=True)
        table.add_column("value", overflow="fold")
        table.add_column("from", style="dim", overflow="fold")
        for name, value, where in rows:
            table.add_row(t(name), t(value), t(where))
        names = {name for name, _, _ in rows}
        if "MIOPEN_FIND_MODE" not in names:
            table.add_row(t("MIOPEN_FIND_MODE"), Text("not in the log or the job's environment", style="dim"),
                          Text("MIOpen's default applies", style="dim"))
        if model.job_env is None:
            note = Text("The job's environment is unknown: --pid N (or the job found writing the log) reads its "
                        "MIOPEN_* variables.", style="dim")
        elif not model.job_env:
            note = Text("The job's environment has no MIOPEN_* variable.", style="dim")
        else:
            return table
        return Group(table, note)

    def _searching(self, view: StartupView) -> Text:
        searching = view.totals.searching
        out = Text()
        out.append("Tuning searches", style="bold")
        if not searching:
            done = view.totals.searches
            out.append(t(f"  none running ({done} in the log so far)" if done else "  none in the log", "dim"))
            return out
        out.append("  (progress and ETA from MIOpen's heartbeat, every 3 s)", style="dim")
        labels = {r.layer_id: r.label for r in view.rows}
        for p in searching:
            out.append("\n  ")
            if p.layer_id is not None:
                out.append(f"layer {p.layer_id} ", style="bold")
                out.append(t(labels.get(p.layer_id, "")))
                out.append("  ")
            out.append(t(p.solver, "cyan"))
            out.append("\n    ")
            out.append(search_progress_text(p))
        return out

    @staticmethod
    def _timeline(view: StartupView, screen_width: int) -> Any:
        id_width = max(2, len(str(max((r.layer_id for r in view.rows), default=1))))
        fixed = _FIXED + ((("GPU 1st", 8),) if view.clock_source == "trace" else ())
        free = screen_width - 5 - id_width - sum(w + 1 for _, w in fixed) - 2
        label = max(_LABEL_MIN, min(_LABEL_MAX, free - _BAR_MIN, max((len(r.label) for r in view.rows), default=0)))
        width = max(_BAR_MIN, free - label)
        caption = timeline_caption(view)
        table = Table(title="Timeline: the layers as MIOpen met them", title_justify="left", title_style="bold",
                      box=None, padding=(0, 1, 0, 0), pad_edge=False, header_style="bold dim", expand=False,
                      caption=caption, caption_justify="left", caption_style="dim")
        table.add_column("#", width=id_width, no_wrap=True, justify="right")
        table.add_column("layer", width=label, no_wrap=True, overflow="ellipsis")
        for name, w in fixed:
            table.add_column(name, width=w, no_wrap=True, overflow="ellipsis",
                             justify="left" if name == "Find-Db" else "right")
        table.add_column("when", width=width, no_wrap=True)
        for row in view.rows:
            s = row.startup
            kernels = f"{s.kernels_compiled}+{s.kernels_from_cache}" if s.kernels_compiled or s.kernels_from_cache \
                else ""
            table.add_row(str(row.layer_id), t(row.label), t(s.find_db if s.find_db != "unknown" else ""),
                          duration(s.find_ms, s.find_ms is not None or s.find_db == "miss"),
                          duration(s.tuning_ms, s.searched and s.find_db != "miss" or s.tuning_ms is not None),
                          duration(s.compile_ms, s.kernels_compiled > 0),
                          kernels, *[gpu_cell(row)][:len(fixed) - len(_FIXED)],
                          Text(span_bar(row, view.clock, width), style="cyan"))
        if not view.rows:
            table.add_row("", Text("no layer has first-iteration facts yet", style="dim"), *([""] * (len(fixed) + 1)))
        return table

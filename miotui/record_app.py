"""The live app on a job ``miotui record`` started: the app as it follows any log, plus the
job's pane (:class:`~miotui.widgets.job_pane.JobPane`) and the keys that reach the job.

Why a subclass: everything the app does for a followed log (the reader, the poller, the
job's state in the status bar from its process id) applies as it is; recording adds only
the pane, Ctrl-C for the job and the end of the job (the app stays with the final table and
says how the job ended).  The pane is fed from the recorder's memory five times a second
(:meth:`~miotui.record_job.RecordedJob.take_lines`: no I/O in the UI thread).
"""

from __future__ import annotations

from typing import Any, Sequence

from textual.binding import Binding

from miotui.app import MiotuiApp
from miotui.record_job import RecordedJob
from miotui.screens.info import binding_rows
from miotui.widgets.job_pane import JobPane

#: seconds between looks at the job's new lines and state
PANE_POLL_S = 0.2


def empty_record_text(lines: int, warning: str, finished: bool, library: str = "MIOpen") -> str:
    """Why the table of a recorded job is empty (``library``: the one whose logging record
    switched on, MIOpen or cuDNN; ``warning``: something said at start)."""
    head = f"No {library} layer in {lines:,} lines the job has written" + ("." if finished else " yet.")
    if warning:
        return f"{head}\n\n{warning}."
    return (f"{head}\n\nThe job runs with {library}'s logging switched on (the variables are the job pane's first "
            f"lines): each layer shows here when the job first calls {library} for it. A job that runs no "
            f"{library} call (CPU only, or another library) logs none.")


class RecordApp(MiotuiApp):
    """The app following the log of a job it started."""

    BINDINGS = [
        Binding("ctrl+c", "interrupt_job", "Interrupt job", priority=True, id="record.interrupt"),
        Binding("o", "toggle_job_pane", "Job output", id="record.output"),
    ]

    def __init__(self, job: RecordedJob, paths: list[str], report: Sequence[str] = (), warning: str = "",
                 library: str = "MIOpen", **kw: Any) -> None:
        super().__init__(paths, follow=True, pid=job.pid, find_job=False, **kw)
        self.job = job
        self.report = list(report)
        #: said at start and kept on screen a while
        self.warning = warning
        #: whose logging record switched on (MIOpen or cuDNN): the empty state names it
        self.library = library
        self.told_end = False
        self.pane = JobPane(self._title(), self.report, id="job-pane")

    def on_mount(self) -> None:
        self.call_after_refresh(self._add_pane)
        if self.warning:
            self.notify(self.warning, title="recording", severity="warning", timeout=30)
        self.set_interval(PANE_POLL_S, self.pull_job)

    def _update_empty_state(self, data: Any) -> None:
        """An empty table while recording: not the generic "set MIOPEN_ENABLE_LOGGING_CMD"
        (record set it), but what the job runs with and why no layer may have come yet."""
        super()._update_empty_state(data)
        if not self.model.layers and data.lines:
            self.layers_screen.set_empty_state(empty_record_text(data.lines, self.warning, self.job.finished.is_set(),
                                                                   self.library))

    def _add_pane(self) -> None:
        if not self.pane.is_mounted:
            self.layers_screen.query_one("#main").mount(self.pane)

    def _title(self) -> str:
        job = self.job
        if job.returncode is None:
            keys = "ctrl+c: stop it (SIGTERM)" if job.interrupts else "ctrl+c: interrupt (SIGINT)"
            return f"{job.status_text()} · {keys} · o: hide"
        return f"{job.status_text()} · the table is final · ctrl+q: quit"

    def pull_job(self) -> None:
        """Take the job's new lines, notes and state (memory only)."""
        job = self.job
        if not self.pane.is_mounted:
            return           # the lines wait in the recorder until the pane can show them
        lines, _count = job.take_lines()
        if lines:
            self.pane.add_lines(lines)
        self.pane.set_title(self._title())
        for note in job.take_notes():
            if note.kind != "exit":          # said once, below, when the recording is done
                self.notify(note.text, title="job", severity=note.severity, timeout=8)
        if job.finished.is_set() and not self.told_end:
            self.told_end = True
            self.notify(f"Recording done: {job.status_text()}. The table holds the whole log; ctrl+q quits "
                        f"(miotui's exit status is the job's).", title="job",
                        severity="information" if job.exit_code == 0 else "warning", timeout=10)

    def action_interrupt_job(self) -> None:
        """Ctrl-C: the first interrupts the job (SIGINT), the next stops it."""
        job = self.job
        text = job.interrupt() if not job.interrupts else job.stop()
        self.notify(text, title="job", severity="warning", timeout=5)
        self.pull_job()

    def help_rows(self) -> list[tuple[str, str, str, str]]:
        """``?`` lists the recording keys too."""
        return binding_rows([("recording", RecordApp.BINDINGS)], dict(self._keymap)) + super().help_rows()

    def action_toggle_job_pane(self) -> None:
        self.pane.toggle_class("hidden")

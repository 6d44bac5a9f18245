"""The live model's poller: what changed in the catalog, how fast the log grows, where the
time goes, what the first iteration spent, how each followed file is read, and the state
of the job writing it, gathered in a thread and handed to the UI.  No Textual here.

Why a poller and not callbacks from the readers: a log at 20 MB/s changes the catalog
thousands of times a second; the UI wants one summary ~10 times a second.  The poller
asks the catalog what changed since the version it last saw (``changed_since``),
samples the job's process, and hands one frozen :class:`PollData` to ``post``.  It then
waits for the UI to :meth:`Poller.ack` it before polling again, so a busy UI is never
flooded and no change is lost (changes accumulate in the catalog meanwhile).

Why the time summary and the startup view are made here: both read every layer (the
summary sorts every logged total to find the top five; the startup view groups up to
5 000 timeline facts by layer), which is work for this thread, not the UI's.  Both are
made only when their input moved (a changed layer; the startup ledger's version), and
each layer's time is kept from its last change, so a poll costs what changed.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Callable, Optional

from miotui.views.startup_model import StartupView, build_view, layer_label, trace_first
from miotui.views.timing import LayerTime, TimeSummary, layer_times, time_summary

#: Seconds between catalog polls (the table updates at most this often).
POLL_INTERVAL = 0.1
#: Seconds between job samples and between attempts to find the job's process.
JOB_SAMPLE_S = 1.0
JOB_SEARCH_S = 5.0
JOB_SEARCH_TRIES = 12
#: Seconds the poller waits for the UI to take a poll before polling again anyway.
ACK_WAIT_S = 2.0
#: Seconds between samples of every source's rates (the status bar of several files).
SOURCE_SAMPLE_S = 0.5
#: Calls-per-second samples the live model keeps (one a second: the startup view's sparkline).
CALL_RATE_KEPT = 120


@dataclass(frozen=True)
class PollData:
    changed: list
    lines: int
    bytes: int
    undecoded: int
    lines_per_s: float
    scan_done: int
    scan_total: int
    scanning: bool
    state: str
    finished: bool
    events: list
    job: Any = None            # JobStatus, sampled about once a second
    job_env: Optional[dict] = None   # the job's MIOPEN_* variables, once
    #: where the logged GPU time goes (``miotui.views.timing``), when a layer changed (else None)
    time_summary: Optional[TimeSummary] = None
    #: (time source, layers timed from it) with each time summary
    time_sources: tuple = ()
    #: what the first iteration spent, when the startup ledger changed (else None)
    startup: Optional[StartupView] = None
    #: every source's ``SourceStats``, every ``SOURCE_SAMPLE_S`` (else None)
    sources: Optional[tuple] = None
    #: executions and finds a second, over the last ~2 s
    calls_per_s: float = 0.0
    #: the log formats read so far (``Catalog.formats``: ``MIOpen``, ``cuDNN``)
    formats: tuple = ()
    #: where the measured times came from and what each profiler trace matched
    #: (``LiveTraces.lines``), with each time summary when the app has traces
    trace_lines: tuple = ()


class _Rate:
    """Lines per second over the last ~2 s."""

    def __init__(self) -> None:
        self._points: deque[tuple[float, int]] = deque(maxlen=40)

    def add(self, t: float, lines: int) -> float:
        pts = self._points
        pts.append((t, lines))
        while len(pts) > 2 and t - pts[0][0] > 2.0:
            pts.popleft()
        if len(pts) >= 2 and pts[-1][0] > pts[0][0]:
            return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])
        return 0.0


class _Books:
    """What the poller keeps between polls: each layer's time, call count, first-iteration
    counts and label, from the snapshots that changed."""

    def __init__(self) -> None:
        self.times: dict[int, LayerTime] = {}
        self.calls: dict[int, int] = {}
        self.total_calls = 0
        self.startups: dict[int, Any] = {}
        self.labels: dict[int, str] = {}
        #: each layer's first call in a joined profiler trace (the startup view's clock when the log has none)
        self.firsts: dict[int, Any] = {}
        self.startup_version = -1
        #: a layer's first-iteration counts changed since the last view (the ledger may
        #: have moved in an earlier poll than the snapshot that carries the counts)
        self.startups_moved = False

    def take(self, changed: list) -> Optional[TimeSummary]:
        """Fold in the changed snapshots; the new time summary (None: nothing changed)."""
        if not changed:
            return None
        for snap in changed:
            calls = snap.executions + snap.finds
            self.total_calls += calls - self.calls.get(snap.id, 0)
            self.calls[snap.id] = calls
            if self.startups.get(snap.id) != snap.startup:
                self.startups[snap.id] = snap.startup
                self.startups_moved = True
            if snap.id not in self.labels:
                self.labels[snap.id] = layer_label(snap)
            first = trace_first(snap)
            if first is not None and self.firsts.get(snap.id) != first:
                self.firsts[snap.id] = first
                self.startups_moved = True
        self.times.update(layer_times(changed))     # per-call time and total (shares are the summary's)
        return time_summary(self.times)

    def sources(self) -> tuple[tuple[str, int], ...]:
        """(time source, layers timed from it), most layers first (the header line names them)."""
        counts = Counter(t.source for t in self.times.values() if t.source is not None)
        return tuple(counts.most_common())

    def startup_view(self, catalog: Any) -> Optional[StartupView]:
        """The startup view when the ledger or a layer's counts moved since the last one (else None)."""
        ledger = catalog.startup
        with catalog.lock:
            if ledger.version == self.startup_version and not self.startups_moved:
                return None
            self.startup_version = ledger.version
            self.startups_moved = False
            totals, timeline = ledger.totals(), ledger.timeline()
        return build_view(totals, timeline, self.startups, self.labels, self.firsts)


class Poller:
    """A thread that posts :class:`PollData` to ``post`` until stopped."""

    def __init__(self, catalog: Any, reader: Any, post: Callable[[PollData], None], *,
                 interval: float = POLL_INTERVAL, pid: Optional[int] = None, find_job: bool = False,
                 stdin_fd: Optional[int] = None, on_error: Optional[Callable[[str], None]] = None,
                 traces: Any = None) -> None:
        self.catalog = catalog
        self.reader = reader
        self.post = post
        self.interval = interval
        self.job_pid = pid
        self.find_job = find_job
        self.stdin_fd = stdin_fd
        self.on_error = on_error
        #: the profiler traces joined to the log's layers as they appear (``LiveTraces``)
        self.traces = traces
        self._stop = threading.Event()
        self._ack = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._env_sent = False

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="miotui-poll", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        self._stop.set()
        self._ack.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def ack(self) -> None:
        """The UI took the last poll: the next one may come."""
        self._ack.set()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _watcher(self, pid: int) -> Any:
        try:
            from miotui.sources.follow import JobWatcher
            watcher = JobWatcher(pid)
        except Exception:
            return None
        self.job_pid = pid
        return watcher

    def _loop(self) -> None:
        version = 0
        rate = _Rate()
        call_rate = _Rate()
        books = _Books()
        watcher = self._watcher(self.job_pid) if self.job_pid is not None else None
        next_job = next_search = next_sources = 0.0
        searches = 0
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                version, changed = self.catalog.changed_since(version)
                cat = self.catalog
                # new layers timed: their new snapshots, with the layers read meanwhile, joined in turn
                # (one read between the two looks would be posted untimed and never offered again)
                while self.traces and self.traces.join(cat, changed):
                    version, changed = _newer(changed, *cat.changed_since(version))
                lps = rate.add(t0, cat.lines)
                summary = books.take(changed)
                startup = books.startup_view(cat)
                sources = None
                if t0 >= next_sources:
                    next_sources = t0 + SOURCE_SAMPLE_S
                    sources = tuple(self.reader.source_stats())
                done, total, initial_done = self.reader.initial_scan
                job = job_env = None
                if watcher is None and self.find_job and searches < JOB_SEARCH_TRIES and t0 >= next_search:
                    searches += 1
                    next_search = t0 + JOB_SEARCH_S
                    from miotui.sources.follow import find_writer_pid
                    pid = find_writer_pid(self.reader.paths, self.stdin_fd)
                    if pid is not None:
                        watcher = self._watcher(pid)
                if watcher is not None and t0 >= next_job:
                    next_job = t0 + JOB_SAMPLE_S
                    job = watcher.sample()
                    if not self._env_sent:
                        job_env = watcher.miopen_environment()
                        self._env_sent = True
                data = PollData(
                    changed=changed, lines=cat.lines, bytes=cat.bytes, undecoded=cat.undecoded_count,
                    lines_per_s=lps, scan_done=done, scan_total=total, scanning=not initial_done,
                    state=self.reader.state_text(), finished=self.reader.finished,
                    events=self.reader.drain_events(), job=job, job_env=job_env, time_summary=summary,
                    time_sources=books.sources() if summary is not None else (), startup=startup,
                    sources=sources, calls_per_s=call_rate.add(t0, books.total_calls), formats=tuple(cat.formats),
                    trace_lines=self.traces.lines(cat) if self.traces and summary is not None else ())
            except Exception as e:  # pragma: no cover - keep polling whatever happens
                if self.on_error is not None:
                    self.on_error(f"poller: {e!r}")
                if self._stop.wait(self.interval):
                    return
                continue
            self._ack.clear()
            try:
                self.post(data)
            except Exception:
                return
            self._ack.wait(ACK_WAIT_S)
            if self._stop.wait(max(0.0, self.interval - (time.monotonic() - t0))):
                return


def _newer(changed: list, version: int, again: list) -> tuple[int, list]:
    """(version, ``changed`` with the snapshots in ``again`` replacing theirs, the new ones added)."""
    by_id = {snap.id: snap for snap in changed}
    by_id.update((snap.id, snap) for snap in again)
    return version, list(by_id.values())


class LiveModel:
    """What the screens read, kept by the UI thread: every layer's latest snapshot by
    id, the runs (a :class:`~miotui.run_queue.RunBook`), the job and its environment,
    and the last poll.  Screens get this object, never the app."""

    def __init__(self, catalog: Any, runs: Any) -> None:
        self.catalog = catalog
        self.runs = runs
        self.layers: dict[int, Any] = {}
        self.job: Any = None
        self.job_env: Optional[dict] = None
        self.job_pid: Optional[int] = None
        self.last: Optional[PollData] = None
        self.time_summary: Optional[TimeSummary] = None
        self.startup: StartupView = StartupView()
        self.sources: tuple = ()
        #: calls per second, one sample a second, oldest first
        self.call_rates: deque[float] = deque(maxlen=CALL_RATE_KEPT)
        self._next_rate = 0.0

    def snapshot(self, layer_id: Optional[int]) -> Any:
        return self.layers.get(layer_id) if layer_id is not None else None

    def layer_time(self, layer_id: int) -> LayerTime:
        """A layer's logged GPU time with its share of the whole log's (see ``miotui.views.timing``)."""
        snap = self.layers.get(layer_id)
        if snap is None:
            return LayerTime()
        t = layer_times([snap])[layer_id]
        grand = self.time_summary.total_ms if self.time_summary is not None else None
        share = t.total_ms / grand if t.total_ms is not None and grand else None
        return LayerTime(t.per_call_ms, t.source, t.total_ms, share)

    def apply(self, data: PollData, now: Optional[float] = None) -> bool:
        """Take a poll; True when a calls-per-second sample was added (once a second)."""
        self.last = data
        for snap in data.changed:
            self.layers[snap.id] = snap
        if data.job is not None:
            self.job = data.job
            self.job_pid = data.job.pid
        if data.job_env is not None:
            self.job_env = data.job_env
        if data.time_summary is not None:
            self.time_summary = data.time_summary
        if data.startup is not None:
            self.startup = data.startup
        if data.sources is not None:
            self.sources = data.sources
        now = time.monotonic() if now is None else now
        if now >= self._next_rate:
            self._next_rate = now + 1.0
            self.call_rates.append(data.calls_per_s)
            return True
        return False

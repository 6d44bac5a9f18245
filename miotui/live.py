"""The live model's poller: what changed in the catalog, how fast the log grows, and the
state of the job writing it, gathered in a thread and handed to the UI.  No Textual here.

Why a poller and not callbacks from the readers: a log at 20 MB/s changes the catalog
thousands of times a second; the UI wants one summary ~10 times a second.  The poller
asks the catalog what changed since the version it last saw (``changed_since``),
samples the job's process, and hands one frozen :class:`PollData` to ``post``.  It then
waits for the UI to :meth:`Poller.ack` it before polling again, so a busy UI is never
flooded and no change is lost (changes accumulate in the catalog meanwhile).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Optional

#: Seconds between catalog polls (the table updates at most this often).
POLL_INTERVAL = 0.1
#: Seconds between job samples and between attempts to find the job's process.
JOB_SAMPLE_S = 1.0
JOB_SEARCH_S = 5.0
JOB_SEARCH_TRIES = 12
#: Seconds the poller waits for the UI to take a poll before polling again anyway.
ACK_WAIT_S = 2.0


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


class Poller:
    """A thread that posts :class:`PollData` to ``post`` until stopped."""

    def __init__(self, catalog: Any, reader: Any, post: Callable[[PollData], None], *,
                 interval: float = POLL_INTERVAL, pid: Optional[int] = None, find_job: bool = False,
                 stdin_fd: Optional[int] = None, on_error: Optional[Callable[[str], None]] = None) -> None:
        self.catalog = catalog
        self.reader = reader
        self.post = post
        self.interval = interval
        self.job_pid = pid
        self.find_job = find_job
        self.stdin_fd = stdin_fd
        self.on_error = on_error
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
            from miotui.logs.follow import JobWatcher
            watcher = JobWatcher(pid)
        except Exception:
            return None
        self.job_pid = pid
        return watcher

    def _loop(self) -> None:
        version = 0
        rate = _Rate()
        watcher = self._watcher(self.job_pid) if self.job_pid is not None else None
        next_job = next_search = 0.0
        searches = 0
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                version, changed = self.catalog.changed_since(version)
                cat = self.catalog
                lps = rate.add(t0, cat.lines)
                done, total, initial_done = self.reader.initial_scan
                job = job_env = None
                if watcher is None and self.find_job and searches < JOB_SEARCH_TRIES and t0 >= next_search:
                    searches += 1
                    next_search = t0 + JOB_SEARCH_S
                    from miotui.logs.follow import find_writer_pid
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
                    events=self.reader.drain_events(), job=job, job_env=job_env)
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

    def snapshot(self, layer_id: Optional[int]) -> Any:
        return self.layers.get(layer_id) if layer_id is not None else None

    def apply(self, data: PollData) -> None:
        self.last = data
        for snap in data.changed:
            self.layers[snap.id] = snap
        if data.job is not None:
            self.job = data.job
            self.job_pid = data.job.pid
        if data.job_env is not None:
            self.job_env = data.job_env

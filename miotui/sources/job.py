"""The process writing a followed log: found with psutil, sampled for the status bar.

Why here and not in the reader: finding the writer walks every process (slow), so the
app asks for it from its poller thread now and then; nothing here reads the log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class JobStatus:
    pid: int
    name: str
    running: bool
    status: str          # psutil status, or "exited"
    cpu_percent: float
    rss: int
    cmdline: str = ""


def _pipe_id(fd: int) -> Optional[str]:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def find_writer_pid(paths: list[str], stdin_fd: Optional[int] = None) -> Optional[int]:
    """The process that has one of ``paths`` open for writing (or writes our stdin pipe).

    Slow (walks every process); call it from a worker thread.  Only processes of the
    current user can be inspected; None when nothing is found.
    """
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency
        return None
    me = os.getpid()
    real = {os.path.realpath(p) for p in paths if p != "-"}
    pipe = _pipe_id(stdin_fd) if stdin_fd is not None else None
    if pipe is not None and not pipe.startswith("pipe:"):
        pipe = None
    best: Optional[int] = None
    for proc in psutil.process_iter(["pid"]):
        pid = proc.info["pid"]
        if pid == me:
            continue
        try:
            if pipe is not None:
                for fd in (1, 2):
                    try:
                        if os.readlink(f"/proc/{pid}/fd/{fd}") == pipe:
                            return pid
                    except OSError:
                        pass
            if real:
                for f in proc.open_files():
                    mode = getattr(f, "mode", "r")
                    if f.path in real and mode != "r":
                        best = pid if best is None else min(best, pid)
        except (psutil.Error, OSError):
            continue
    return best


class JobWatcher:
    """Samples one process for the status bar (state, CPU, RSS) and its MIOpen environment."""

    def __init__(self, pid: int) -> None:
        import psutil
        self.pid = pid
        self._psutil = psutil
        try:
            self._proc: Optional[object] = psutil.Process(pid)
            self._proc.cpu_percent(None)  # type: ignore[attr-defined]
        except psutil.Error:
            self._proc = None
        self._name = ""
        self._cmdline = ""

    def sample(self) -> JobStatus:
        psutil = self._psutil
        proc = self._proc
        if proc is None:
            return JobStatus(self.pid, self._name, False, "not found", 0.0, 0)
        try:
            with proc.oneshot():  # type: ignore[attr-defined]
                if not self._name:
                    self._name = proc.name()  # type: ignore[attr-defined]
                    try:
                        self._cmdline = " ".join(proc.cmdline())  # type: ignore[attr-defined]
                    except psutil.Error:
                        self._cmdline = ""
                status = proc.status()  # type: ignore[attr-defined]
                if status == psutil.STATUS_ZOMBIE:
                    return JobStatus(self.pid, self._name, False, "exited", 0.0, 0, self._cmdline)
                cpu = proc.cpu_percent(None)  # type: ignore[attr-defined]
                rss = proc.memory_info().rss  # type: ignore[attr-defined]
            return JobStatus(self.pid, self._name, True, status, cpu, rss, self._cmdline)
        except psutil.NoSuchProcess:
            return JobStatus(self.pid, self._name, False, "exited", 0.0, 0, self._cmdline)
        except psutil.Error as e:
            return JobStatus(self.pid, self._name, False, f"unreadable ({type(e).__name__})", 0.0, 0,
                             self._cmdline)

    def miopen_environment(self) -> dict[str, str]:
        """The job's ``MIOPEN_*`` variables (empty when they cannot be read)."""
        if self._proc is None:
            return {}
        try:
            env = self._proc.environ()  # type: ignore[attr-defined]
        except (self._psutil.Error, OSError):
            return {}
        return {k: v for k, v in sorted(env.items()) if k.startswith("MIOPEN")}

"""The recorded job: started in a process group of its own, its output copied to the log
file as it comes, its non-MIOpen lines kept for the job pane (or passed through), and
signals sent to the whole group.  No Textual here: the app and ``--headless`` both drive it.

Why one pipe for stdout and stderr: the log must hold the job's lines in the order the job
wrote them (a layer's lines between the prints of the step that ran it); two pipes read by
one reader cannot give that order back.  ``PYTHONUNBUFFERED=1`` (``record_env``) makes a
Python job's prints leave as they are made, not a buffer later.

Why a process group: Ctrl-C, stopping and the end of miotui must reach every process the
job started (DataLoader workers, a launcher's ranks), and none may outlive miotui.  The
group is not the terminal's foreground group, so the terminal's Ctrl-C reaches miotui
only, and miotui decides what the job gets: the first Ctrl-C is the job's SIGINT, a second
stops it (SIGTERM, then SIGKILL ``grace_s`` later), closing the terminal (SIGHUP) ends it.
A process that left the group (torchrun starts each worker in a session of its own) is
still the job's: every process of the job inherits ``MIOTUI_RECORD_JOB=<this job's tag>``,
and stopping the job, or miotui's end, reaches those too.  Ctrl-C goes to the group only,
as a terminal's would (the launcher passes it on to its workers its own way).

Why recording goes on after the job's main process exits: a process it started may still
write to the pipe (a job that forks and exits); the log is complete when the pipe's last
writer has closed it, as with ``tee``.  What is left of the group when miotui ends is
stopped (:meth:`RecordedJob.close`).
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Literal, Optional, Sequence

from miotui.formats import FORMATS

#: bytes read from the job's pipe at once
CHUNK = 1 << 20
#: job lines the pane keeps (the log file keeps everything)
PANE_KEPT = 2_000
#: a line longer than this with no newline yet is shown as it is (a progress bar redrawn with \r)
MAX_PARTIAL = 1 << 16
#: seconds between SIGTERM and SIGKILL when the job is stopped
GRACE_S = 5.0
#: the variable every process of the job inherits (its value is one job's own): how a process
#: that left the job's process group (a torchrun worker starts a session of its own) is still found
TAG_VARIABLE = "MIOTUI_RECORD_JOB"

#: a line of the library's log (hidden from the pane: the table shows it), decided on one line's
#: text by the formats (``Format.line_pattern``: MIOpen's prefix, a cuDNN record mark)
LIBRARY_RE = FORMATS.line_pattern()
_LIBRARY_LINE = re.compile(LIBRARY_RE.encode())


def is_library_line(line: bytes) -> bool:
    """A line MIOpen or cuDNN wrote (the table shows it; the pane and the terminal do not)."""
    return _LIBRARY_LINE.search(line) is not None


def exit_status(returncode: int) -> int:
    """A shell's exit status for Popen's return code (killed by signal N: 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name} (exit status {exit_status(returncode)})"
    return f"exited with status {returncode}"


@dataclass(frozen=True)
class JobNote:
    """Something the recorder did or saw, for the app's notifications and stderr."""

    time: float
    text: str
    severity: Literal["information", "warning", "error"] = "information"
    kind: Literal["", "exit"] = ""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def group_members(pgid: Optional[int], tag: str = "") -> list[int]:
    """The live (not zombie) processes of process group ``pgid``, and with ``tag`` also those
    whose environment holds ``MIOTUI_RECORD_JOB=<tag>`` wherever they are (from /proc; where
    there is none, the group id itself while the group exists)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        try:
            if pgid is None:
                return []
            os.killpg(pgid, 0)
            return [pgid]
        except OSError:
            return []
    found = []
    group = str(pgid).encode() if pgid else b"-"       # None (or 0, the kernel's): no group
    mark = f"{TAG_VARIABLE}={tag}".encode() if tag else b""
    me = os.getpid()
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) < 3 or fields[0] == b"Z":
            continue
        if fields[2] == group or (mark and _has_tag(name, mark)):
            found.append(int(name))
    return found


def _has_tag(pid: str, mark: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return mark in fh.read().split(b"\0")
    except OSError:        # another user's process, or gone
        return False


class RecordedJob:
    """One job: started by :meth:`start`, read by a pump thread until its output closes.

    ``passthrough``: a file descriptor the job's non-library lines are copied to as they
    come (``--headless``: miotui's stderr); None keeps them for :meth:`take_lines` (the pane).
    """

    def __init__(self, argv: Sequence[str], env: dict[str, str], log_path: str, *,
                 passthrough: Optional[int] = None, grace_s: float = GRACE_S, stdin: Optional[int] = None,
                 cwd: Optional[str] = None) -> None:
        self.argv = list(argv)
        self.env = env
        self.log_path = log_path
        self.passthrough = passthrough
        self.grace_s = grace_s
        self.stdin = stdin
        self.cwd = cwd
        self.proc: Optional[subprocess.Popen] = None
        self.pid = 0
        self.tag = f"{os.getpid()}-{secrets.token_hex(6)}"
        self.returncode: Optional[int] = None
        self.bytes = 0
        self.finished = threading.Event()
        self.interrupts = 0
        self.stopping = False
        self._lock = threading.Lock()
        self._lines: deque[str] = deque(maxlen=PANE_KEPT)
        self._new = 0
        self._notes: list[JobNote] = []
        self._log_fd = -1
        self._read_fd = -1
        self._threads: list[threading.Thread] = []
        self._output_closed = threading.Event()
        self._exited = threading.Event()

    # ------------------------------------------------------------------ start

    def start(self, log_fd: int) -> None:
        """Start the job writing into ``log_fd`` (a file opened for writing; the job's
        output is appended to it).  Raises OSError when the program cannot be started."""
        self._log_fd = log_fd
        read_fd, write_fd = os.pipe()
        self.env = dict(self.env, **{TAG_VARIABLE: self.tag})
        try:
            # a process group of its own (``process_group`` is Python 3.11's; setpgid before that)
            group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
            self.proc = subprocess.Popen(self.argv, env=self.env, stdin=self.stdin if self.stdin is not None
                                         else subprocess.DEVNULL, stdout=write_fd, stderr=write_fd,
                                         cwd=self.cwd, **group)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self._read_fd = read_fd
        self.pid = self.proc.pid
        for target, name in ((self._pump, "miotui-record-pump"), (self._wait, "miotui-record-wait")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    @property
    def exit_code(self) -> Optional[int]:
        """The job's exit status as a shell gives it (None while it runs)."""
        return None if self.returncode is None else exit_status(self.returncode)

    def status_text(self) -> str:
        """One line: what the job is doing or how it ended."""
        if self.returncode is None:
            text = f"job {self.pid} running"
            if self.stopping:
                text += " (stopping)"
            elif self.interrupts:
                text += " (sent SIGINT)"
            return text
        text = f"job {self.pid} {describe_exit(self.returncode)}"
        if not self._output_closed.is_set():
            text += "; a process it started still has its output open (recording goes on)"
        return text

    # ------------------------------------------------------------------ threads

    def _wait(self) -> None:
        assert self.proc is not None
        rc = self.proc.wait()
        self.returncode = rc
        self._exited.set()
        self._note(f"The job {'was ' if rc < 0 else ''}{describe_exit(rc)}.", "information" if rc == 0 else "warning",
                   "exit")
        self._maybe_finished()

    def _pump(self) -> None:
        carry = b""
        fd = self._read_fd
        while True:
            try:
                data = os.read(fd, CHUNK)
            except InterruptedError:
                continue
            except OSError:
                break
            if not data:
                break
            try:
                _write_all(self._log_fd, data)
            except OSError as e:
                self._note(f"Cannot write the log {self.log_path}: {e.strerror or e}; the job goes on, unrecorded.",
                           "error")
                self._log_fd = -1
                self._drain(fd)
                break
            self.bytes += len(data)
            buf = carry + data if carry else data
            cut = buf.rfind(b"\n") + 1
            if cut:
                self._take(buf[:cut - 1].split(b"\n"))
                carry = buf[cut:]
            else:
                carry = buf
            if len(carry) > MAX_PARTIAL:
                self._take([carry])
                carry = b""
        if carry:
            self._take([carry])
        os.close(fd)
        self._output_closed.set()
        self._maybe_finished()

    def _drain(self, fd: int) -> None:
        """Read the pipe to its end without keeping anything (the job must not block on it)."""
        while True:
            try:
                if not os.read(fd, CHUNK):
                    return
            except InterruptedError:
                continue
            except OSError:
                return

    def _take(self, lines: list[bytes]) -> None:
        """The job's own lines (not the library's) go to the pane or through."""
        mine = [line for line in lines if not is_library_line(line)]
        if not mine:
            return
        if self.passthrough is not None:
            try:
                _write_all(self.passthrough, b"\n".join(mine) + b"\n")
            except OSError:
                self.passthrough = None      # the terminal is gone: the log still has everything
            return
        text = [line.decode("utf-8", "replace").rstrip("\r") for line in mine]
        with self._lock:
            self._lines.extend(text)
            self._new += len(text)

    def _maybe_finished(self) -> None:
        if self._exited.is_set() and self._output_closed.is_set():
            self.finished.set()

    def _note(self, text: str, severity: Literal["information", "warning", "error"] = "information",
              kind: Literal["", "exit"] = "") -> None:
        with self._lock:
            self._notes.append(JobNote(time.time(), text, severity, kind))

    # ------------------------------------------------------------------ for the pane

    def take_lines(self) -> tuple[list[str], int]:
        """(the job lines that came since the last call, at most ``PANE_KEPT``; how many came
        in all since then).  Cheap: no I/O, one lock."""
        with self._lock:
            n = self._new
            self._new = 0
            if not n:
                return [], 0
            lines = list(self._lines)[-min(n, len(self._lines)):]
        return lines, n

    def take_notes(self) -> list[JobNote]:
        with self._lock:
            notes, self._notes = self._notes, []
        return notes

    # ------------------------------------------------------------------ signals

    def members(self) -> list[int]:
        """The job's live processes: its process group, and those that left it (tagged)."""
        return group_members(self.pid, self.tag) if self.pid else []

    def _signal(self, sig: int, everyone: bool = True) -> bool:
        """``sig`` to the job's process group and (``everyone``) to each of its processes
        that left the group; True when any process got it."""
        sent = False
        try:
            os.killpg(self.pid, sig)
            sent = True
        except (ProcessLookupError, PermissionError):
            pass
        if everyone:
            for pid in group_members(None, self.tag):
                try:
                    if os.getpgid(pid) != self.pid:       # the group had it already
                        os.kill(pid, sig)
                        sent = True
                except (ProcessLookupError, PermissionError):
                    pass
        return sent

    def interrupt(self) -> str:
        """The first Ctrl-C: SIGINT to the job's process group, as a terminal's Ctrl-C goes to
        its foreground group (a launcher passes it on to ranks in sessions of their own);
        what to tell the user."""
        if self.returncode is not None and not self.members():
            return "The job has ended: nothing to interrupt."
        self.interrupts += 1
        self._signal(signal.SIGINT, everyone=False)
        return f"Sent SIGINT to the job (process group {self.pid}); Ctrl-C again stops it (SIGTERM, then SIGKILL " \
               f"after {self.grace_s:g} s)."

    def stop(self, first: int = signal.SIGTERM) -> str:
        """Stop the job: ``first`` (SIGTERM; SIGHUP when the terminal closed, then SIGTERM) to
        the group at once, SIGKILL ``grace_s`` later to whatever is left of it."""
        if not self.members():
            return "The job has ended: nothing to stop."
        if self.stopping:
            return "Already stopping the job."
        self.stopping = True
        self._signal(first)
        if first != signal.SIGTERM:
            self._signal(signal.SIGTERM)
        t = threading.Thread(target=self._kill_later, name="miotui-record-kill", daemon=True)
        t.start()
        name = signal.Signals(first).name
        return f"Stopping the job: sent {name} to process group {self.pid}, SIGKILL in {self.grace_s:g} s " \
               f"if it is still there."

    def _kill_later(self) -> None:
        deadline = time.monotonic() + self.grace_s
        while time.monotonic() < deadline:
            if not self.members():
                return
            time.sleep(0.05)
        if self.members():
            # said before the signal: the job dies with it, and miotui may end (this thread is a
            # daemon) before a note made after the kill is shown
            self._note(f"The job was still there {self.grace_s:g} s after SIGTERM: sent SIGKILL.", "warning")
            self._signal(signal.SIGKILL)

    def kill_now(self) -> None:
        """SIGKILL to the group at once (miotui is leaving and cannot wait)."""
        self._signal(signal.SIGKILL)

    def close(self, timeout: float = 2.0) -> list[str]:
        """At miotui's end: stop what is left of the group (SIGTERM, then SIGKILL after the
        grace), wait for the log's last bytes, close it.  Returns what was done, in words."""
        said = []
        left = self.members()
        if left:
            said.append(f"{len(left)} process(es) of the job were still running at miotui's end: stopped them "
                        f"(SIGTERM, SIGKILL after {self.grace_s:g} s).")
            self.stopping = False
            self.stop()
            deadline = time.monotonic() + self.grace_s + 1.0
            while self.members() and time.monotonic() < deadline:
                time.sleep(0.05)
        if self.proc is not None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill_now()
        if not self._output_closed.wait(timeout):
            return said         # the pump still writes: the fd stays open until miotui's end
        for t in self._threads:
            t.join(timeout)
        if self._log_fd >= 0:
            try:
                os.close(self._log_fd)
            except OSError:
                pass
            self._log_fd = -1
        return said

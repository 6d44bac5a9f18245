"""Running MIOpenDriver (or its launcher) as a child process, bounded whatever it does.

:func:`run_driver` starts an argv (never a shell) in its own session, so that a timeout
or a cancel can stop the driver *and* everything it started in its process group
(SIGTERM, then SIGKILL after ``KILL_GRACE_S``); every output line goes to ``on_line`` as
it arrives; the output is parsed by :func:`miotui.driver.output.parse_driver_output`.

What the child does cannot stretch a run past its deadline:

* The output is read in the calling thread from a non-blocking pipe, a poll at a time
  (``POLL_S``), so a cancel or a deadline is seen within one poll and nothing ever
  blocks on a read.  A process that left our process group (its own session: ssh's
  ``ControlPersist`` master, a daemon) can keep the pipe open forever: once the driver
  has exited and its group is empty, reading stops after ``EOF_GRACE_S`` and the result
  says so; after a kill, reading stops at once.
* Memory is bounded however the output looks: a line is kept up to
  ``MAX_LINE_BYTES`` (the rest of it is counted and dropped as it arrives, so a
  gigabyte without a newline costs one read buffer), and the first ``HEAD_LINES`` and
  last ``TAIL_LINES`` lines are kept (the verdict is at the end).  What was cut is said
  in the output and in :attr:`DriverRun.notes`.
"""

from __future__ import annotations

import collections
import math
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from miotui.driver.output import DriverOutput, parse_driver_output

#: Seconds between SIGTERM and SIGKILL when stopping the driver's process group.
KILL_GRACE_S = 0.5
#: Seconds to wait for a SIGKILLed group to go (a process in uninterruptible sleep may not).
KILL_WAIT_S = 0.3
#: How often the loop looks at the clock and the cancel flag when no output comes.
POLL_S = 0.05
#: After the driver exited and its group is empty: how long to keep reading output that
#: some process outside the group still writes, before giving up on end-of-file.
EOF_GRACE_S = 0.5
#: Bytes kept of one line; the rest of a longer line is dropped as it arrives.
MAX_LINE_BYTES = 4000
#: Lines kept from the start and from the end of the output (the rest is streamed only).
HEAD_LINES = 10_000
TAIL_LINES = 10_000
#: Bytes asked for per read.
READ_BYTES = 1 << 16


@dataclass(frozen=True)
class DriverRun:
    """One child process run to its end, or stopped.

    ``text`` is the output as kept (with ``[miotui: ...]`` lines where something was
    cut), ``output`` its parse.  ``stopped``: "" (it ended by itself), ``cancelled`` or
    ``timeout``; ``kill`` says what stopping it took.  ``returncode`` is None when the
    process could not be reaped (still in uninterruptible sleep after SIGKILL).
    ``notes`` are for the result: lines cut or dropped, a process that kept the output
    open after the driver exited.
    """

    argv: tuple[str, ...]
    text: str
    output: DriverOutput
    returncode: Optional[int]
    stopped: str = ""
    kill: str = ""
    notes: tuple[str, ...] = ()
    elapsed_s: float = 0.0


def process_group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs (zombies do not count: they
    hold no resources and an init that does not reap would keep them forever)."""
    proc = "/proc"
    if os.path.isdir(proc):
        for entry in os.listdir(proc):
            if not entry.isdigit():
                continue
            try:
                with open(os.path.join(proc, entry, "stat"), "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            tail = data[data.rfind(b")") + 2:].split()
            if len(tail) >= 3 and int(tail[2]) == pgid and tail[0] not in (b"Z", b"X"):
                return True
        return False
    try:  # pragma: no cover - non-Linux
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:  # pragma: no cover
        return False
    except PermissionError:  # pragma: no cover
        return True


def _signal_and_wait(proc: "subprocess.Popen[bytes]", sig: int, wait_s: float) -> bool:
    """Send ``sig`` to the child's process group; whether the group is gone within ``wait_s``."""
    pgid = proc.pid   # start_new_session: the child leads its own group
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        if proc.poll() is not None and not process_group_alive(pgid):
            return True
        time.sleep(0.01)
    return False


def kill_process_group(proc: "subprocess.Popen[bytes]", grace_s: float = KILL_GRACE_S) -> str:
    """SIGTERM the child's whole process group, SIGKILL what is left after ``grace_s``;
    returns what was done (for the result's message).  Takes at most ``grace_s`` +
    ``KILL_WAIT_S`` (plus a scan of /proc per 10 ms)."""
    if _signal_and_wait(proc, signal.SIGTERM, grace_s):
        return "stopped with SIGTERM"
    if _signal_and_wait(proc, signal.SIGKILL, KILL_WAIT_S):
        return "killed with SIGKILL"
    return "SIGKILL sent; a process of the group had not exited yet"


class _Lines:
    """Bytes in, complete lines out, each at most ``limit`` bytes: the part of a line
    past the limit is counted and dropped as it arrives (the line is handed on as soon
    as it reaches the limit, so a stream without newlines still streams)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.skipping = False
        self.cut_lines = 0
        self.cut_bytes = 0

    @staticmethod
    def _text(data: bytes) -> str:
        return data.decode("utf-8", "replace").rstrip("\r")

    def feed(self, data: bytes) -> list[str]:
        out: list[str] = []
        start = 0
        while start <= len(data):
            nl = data.find(b"\n", start)
            end = len(data) if nl < 0 else nl
            seg_len = end - start
            if self.skipping:
                self.cut_bytes += seg_len
            else:
                room = self.limit - len(self.buf)
                if seg_len > room:
                    self.buf += data[start:start + room]
                    self.cut_bytes += seg_len - room
                    self.cut_lines += 1
                    self.skipping = True
                    out.append(self._text(bytes(self.buf)) + " [miotui: line cut]")
                    self.buf.clear()
                else:
                    self.buf += data[start:end]
            if nl < 0:
                break
            if not self.skipping:
                out.append(self._text(bytes(self.buf)))
            self.buf.clear()
            self.skipping = False
            start = nl + 1
        return out

    def finish(self) -> list[str]:
        """The last line, if the output did not end with a newline."""
        if self.buf and not self.skipping:
            line = self._text(bytes(self.buf))
            self.buf.clear()
            return [line]
        return []


class _Kept:
    """The first ``head`` and the last ``tail`` lines; how many in between were dropped."""

    def __init__(self, head: int, tail: int) -> None:
        self.head: list[str] = []
        self.tail: collections.deque[str] = collections.deque(maxlen=max(tail, 0))
        self.head_max = head
        self.dropped = 0

    def add(self, line: str) -> None:
        if len(self.head) < self.head_max:
            self.head.append(line)
        elif self.tail.maxlen == 0:
            self.dropped += 1
        else:
            if len(self.tail) == self.tail.maxlen:
                self.dropped += 1   # the oldest tail line leaves
            self.tail.append(line)

    def lines(self) -> list[str]:
        middle = [f"[miotui: {self.dropped} lines not kept here]"] if self.dropped else []
        return self.head + middle + list(self.tail)


def run_driver(argv: Sequence[str], on_line: Callable[[str], None], cancel: Optional[threading.Event],
               timeout_s: float) -> DriverRun:
    """Run ``argv`` in its own session; stream its lines; stop it on ``cancel`` or after
    ``timeout_s`` (<= 0: no limit).  Returns within about ``KILL_GRACE_S + KILL_WAIT_S``
    + ``POLL_S`` of a cancel or the deadline, whatever the process and its descendants do.

    Raises OSError when the process cannot be started (FileNotFoundError for a missing
    program).  On KeyboardInterrupt the group is killed first."""
    start = time.monotonic()
    deadline = start + timeout_s if timeout_s and timeout_s > 0 else math.inf
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, close_fds=True, bufsize=0)
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    lines = _Lines(MAX_LINE_BYTES)
    kept = _Kept(HEAD_LINES, TAIL_LINES)
    notes: list[str] = []
    stopped = kill = ""

    def deliver(batch: list[str]) -> None:
        for line in batch:
            kept.add(line)
            try:
                on_line(line)
            except Exception:   # a display callback must not break the run
                pass

    def read_ready(selector: selectors.BaseSelector, wait: float) -> Optional[bool]:
        """Read what is there (waiting up to ``wait``): True data, False nothing, None EOF."""
        if not selector.select(max(wait, 0.0)):
            return False
        try:
            data = os.read(fd, READ_BYTES)
        except BlockingIOError:
            return False
        except OSError:
            return None
        if not data:
            return None
        deliver(lines.feed(data))
        return True

    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    give_up_at = math.inf   # once the driver has exited: when to stop waiting for end-of-file
    try:
        while True:
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                stopped = "cancelled"
                break
            if now >= deadline:
                stopped = "timeout"
                break
            if read_ready(selector, min(POLL_S, deadline - now)) is None:
                break   # end of file: every writer has gone
            if proc.poll() is not None and time.monotonic() >= give_up_at:
                if not process_group_alive(proc.pid):
                    notes.append("MIOpenDriver exited but a process it started outside its process group "
                                 "(its own session) kept the output open; miotui stopped reading it")
                    break
                give_up_at = time.monotonic() + EOF_GRACE_S   # its group still runs: look again later
            elif proc.poll() is not None and give_up_at == math.inf:
                give_up_at = time.monotonic() + EOF_GRACE_S
        if stopped:
            kill = kill_process_group(proc)
            # what the group wrote before it died, without waiting for an end-of-file
            # (a writer outside the group may never stop: a bounded drain)
            drain_end = time.monotonic() + POLL_S
            while time.monotonic() < drain_end and read_ready(selector, 0.0):
                pass
    except BaseException:
        kill_process_group(proc)
        raise
    finally:
        selector.close()
        if proc.poll() is None and not stopped:
            kill_process_group(proc)
        proc.stdout.close()   # no other thread reads it: closing cannot block
    deliver(lines.finish())
    if lines.cut_lines:
        notes.append(f"{lines.cut_lines} output line(s) longer than {MAX_LINE_BYTES} bytes were cut "
                     f"({lines.cut_bytes} bytes not kept)")
    if kept.dropped:
        notes.append(f"{kept.dropped} output lines in the middle were not kept (the first {HEAD_LINES} "
                     f"and the last {TAIL_LINES} were)")
    try:
        returncode = proc.wait(timeout=0) if proc.returncode is None else proc.returncode
    except subprocess.TimeoutExpired:
        returncode = None
        notes.append("the driver had not exited when miotui stopped waiting")
    body = kept.lines()
    text = "\n".join(body) + ("\n" if body else "")
    text += "".join(f"[miotui: {n}]\n" for n in notes)
    return DriverRun(argv=tuple(argv), text=text, output=parse_driver_output(text), returncode=returncode,
                     stopped=stopped, kill=kill, notes=tuple(notes), elapsed_s=time.monotonic() - start)

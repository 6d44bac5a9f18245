"""Read logs as they grow, like ``tail -F``, in background threads (no Textual here).

Why a thread per source and plain ``os.read``: a training job appends to its log
while we read it, so the file's size changes under us.  ``mmap`` of a file that is
truncated while mapped raises SIGBUS, so a live file is only ever read with
``os.read`` on a descriptor we own.  Each reader thread feeds the bytes straight into
its own :class:`~miotui.logs.scan.LogScanner` (decoding happens in that thread, never
in the UI thread), and keeps a small tail of the latest lines for the raw-log view.

The UI polls: it reads the catalog's ``changed_since`` and this module's counters and
event queue on a timer, so no callback from here ever touches UI objects.

``tail -F`` behaviour, per path:

* a missing path is waited for (``waiting``), then read from its start;
* truncation (size below our offset) restarts at offset 0 (``truncated``);
* rotation (a new inode at the same path): the old file is drained to its end, then
  the new one is read from its start (``rotated``);
* deletion (``deleted``) keeps reading the open, unlinked file (the writer may still
  be writing to it) until a new file appears at the path (``recreated``).

A partial line at a truncation/rotation point is ended there, so it never glues onto
the first line of the new file.  Line numbers keep counting across such events: they
number the lines read from that path since miotui started.  Nothing already decoded is
dropped; the catalog only grows.

Also here, because it is about "who writes this log": finding the writer process with
psutil and sampling its state for the status bar.
"""

from __future__ import annotations

import glob
import os
import select
import stat
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from miotui.catalog import Catalog
from miotui.logs.scan import MAX_LINE, LogScanner

#: Bytes read per ``os.read``; a large file is decoded in chunks of this size.
CHUNK = 1 << 20
#: Seconds between polls of a file at its end (also bounds how late a new line is seen).
POLL_INTERVAL = 0.05
#: Seconds between re-expansions of glob patterns while following.
GLOB_INTERVAL = 1.0
#: Lines kept for the raw-log view, per source.
TAIL_LINES = 2000
#: Follow events kept for the UI (older ones are dropped if nobody drains them).
EVENTS_KEPT = 500


@dataclass(frozen=True)
class FollowEvent:
    """Something a user should be told about a source (shown in the status bar)."""

    path: str
    kind: str  # opened waiting truncated rotated deleted recreated caught-up eof error
    message: str
    time: float = field(default_factory=time.time)


class LineTail:
    """The last ``maxlen`` complete lines of a byte stream, numbered like the scanner does.

    The scanner's rules are mirrored (``\\n``, ``\\r\\n`` and a lone ``\\r`` each end one
    line; a ``\\r\\n`` split across two chunks is one line end), so line numbers here
    match the catalog's ``first_line``/``last_line`` and the raw lines it keeps.  Only the
    tail is ever split into ``str``: the newline count of a chunk is taken in C
    (``bytes.count``), so a 20 MB/s log costs little here.
    """

    def __init__(self, maxlen: int = TAIL_LINES, max_line: int = MAX_LINE) -> None:
        self.lines: deque[tuple[int, str]] = deque(maxlen=maxlen)
        self.line_count = 0
        self._carry = b""
        self._after_cr = False
        self._max_line = max_line
        self._lock = threading.Lock()

    def feed(self, data: bytes) -> None:
        if not data:
            return
        with self._lock:
            if self._after_cr:
                self._after_cr = False
                if data.startswith(b"\n"):
                    data = data[1:]
                    if not data:
                        return
            if b"\r" in data:
                if data.endswith(b"\r"):
                    self._after_cr = True
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            cut = data.rfind(b"\n")
            if cut < 0:
                self._carry = self._cap(self._carry + data)
                return
            body = self._carry + data[:cut]
            self._carry = self._cap(data[cut + 1:])
            n_lines = body.count(b"\n") + 1
            keep = self.lines.maxlen or 0
            pieces = body.rsplit(b"\n", keep) if keep else []
            pieces = pieces[-keep:] if keep else []
            first = self.line_count + n_lines - len(pieces) + 1
            for i, piece in enumerate(pieces):
                self.lines.append((first + i, piece[:self._max_line].decode("utf-8", "replace")))
            self.line_count += n_lines

    def end_line(self) -> None:
        """End a partial line (end of input, truncation, rotation)."""
        with self._lock:
            if self._carry:
                self.line_count += 1
                self.lines.append((self.line_count, self._carry[:self._max_line].decode("utf-8", "replace")))
                self._carry = b""

    def snapshot(self, count: Optional[int] = None) -> list[tuple[int, str]]:
        with self._lock:
            items = list(self.lines)
        return items if count is None else items[-count:]

    def _cap(self, carry: bytes) -> bytes:
        return carry if len(carry) <= self._max_line * 4 else carry[:self._max_line * 4]


class Source:
    """One path (or stdin) being read into the catalog by its own thread."""

    def __init__(self, reader: "LogReader", path: str, label: str, *, fd: Optional[int] = None):
        self.reader = reader
        self.path = path
        self.label = label
        self.scanner: Optional[LogScanner] = None   # made in the thread: building it imports the decoders
        self.tail = LineTail(reader.tail_lines)
        self.position = 0          # offset in the file currently read
        self.bytes_read = 0        # all bytes fed, across truncations/rotations
        self.initial_size = 0      # size at open: the "initial scan" the progress bar shows
        self.initial_done = False  # the initial content has been read
        self.state = "starting"
        self.finished = False
        self._fd = fd
        self._last_byte = b"\n"
        self.thread = threading.Thread(target=self._run, name=f"miotui-follow:{path}", daemon=True)

    # ------------------------------------------------------------------ feeding

    def _feed(self, data: bytes) -> None:
        assert self.scanner is not None
        self.scanner.feed(data)
        self.tail.feed(data)
        self.bytes_read += len(data)
        self._last_byte = data[-1:]

    def _end_line(self) -> None:
        """A partial line at a truncation/rotation ends here (never glued to new text)."""
        if self._last_byte not in (b"\n", b"\r") and self.scanner is not None:
            self.scanner.feed(b"\n")
            self._last_byte = b"\n"
        self.tail.end_line()

    def _event(self, kind: str, message: str) -> None:
        self.reader._event(FollowEvent(self.path, kind, message))

    # ------------------------------------------------------------------ thread body

    def _run(self) -> None:
        try:
            self.scanner = LogScanner(self.reader.catalog, self.label)
            if self.path == "-" or self._fd is not None:
                self._run_pipe()
            elif self.path.endswith(".gz"):
                self._run_gzip()
            else:
                self._run_file()
        except Exception as e:  # a reader must never take the app down
            self.state = "error"
            self._event("error", f"{self.path}: {type(e).__name__}: {e}")
        finally:
            self.initial_done = True
            if not self.finished:
                self._finish()

    def _finish(self) -> None:
        self.finished = True
        self.tail.end_line()
        if self.scanner is None:
            return
        try:
            self.scanner.finish()
        except Exception as e:  # pragma: no cover - scanner bugs are reported, not raised
            self._event("error", f"{self.path}: scanner failed at end: {e}")

    @property
    def stopping(self) -> bool:
        return self.reader._stop.is_set()

    def _run_pipe(self) -> None:
        fd = self._fd if self._fd is not None else 0
        self.state = "reading"
        self._event("opened", "reading standard input")
        while not self.stopping:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                if not self.initial_done:
                    self.initial_done = True
                continue
            data = os.read(fd, CHUNK)
            if not data:
                self.state = "ended"
                self._event("eof", "standard input closed")
                return
            self._feed(data)
            self.position += len(data)

    def _run_gzip(self) -> None:
        import gzip
        self.state = "reading"
        with gzip.open(self.path, "rb") as fh:
            self.initial_size = os.path.getsize(self.path)
            self._event("opened", f"{self.path} (gzip: read once, not followed)")
            while not self.stopping:
                data = fh.read(CHUNK)
                if not data:
                    break
                self._feed(data)
                self.position = fh.fileobj.tell() if fh.fileobj is not None else self.position  # type: ignore[attr-defined]
        self.state = "read"

    def _open(self) -> Optional[tuple[int, os.stat_result]]:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            # A FIFO or device: read it like a pipe, without offsets.
            self._fd = fd
            return fd, st
        return fd, st

    def _run_file(self) -> None:
        follow = self.reader.follow
        opened = self._open()
        if opened is None:
            if not follow:
                raise FileNotFoundError(f"no such file: {self.path}")
            self.state = "waiting"
            self._event("waiting", f"{self.path} does not exist yet; waiting for it")
            while opened is None:
                if self.reader._stop.wait(self.reader.poll_interval * 4):
                    return
                opened = self._open()
            self._event("recreated", f"{self.path} appeared")
        fd, st = opened
        if not stat.S_ISREG(st.st_mode):
            self._run_pipe()
            return
        self.initial_size = st.st_size
        self.state = "reading"
        self._event("opened", f"{self.path}: {st.st_size:,} bytes")
        deleted = False
        try:
            while not self.stopping:
                data = os.read(fd, CHUNK)
                if data:
                    self._feed(data)
                    self.position += len(data)
                    if not self.initial_done and self.position >= self.initial_size:
                        self.initial_done = True
                        self._event("caught-up", f"{self.path}: read {self.position:,} bytes")
                    continue
                # At the end of what is there now.
                if not self.initial_done:
                    self.initial_done = True
                    self._event("caught-up", f"{self.path}: read {self.position:,} bytes")
                if not follow:
                    self.state = "read"
                    return
                self.state = "deleted" if deleted else "following"
                if self.reader._stop.wait(self.reader.poll_interval):
                    return
                cur = os.fstat(fd)
                if cur.st_size < self.position:
                    self._end_line()
                    self._event("truncated", f"{self.path} was truncated ({self.position:,} -> "
                                             f"{cur.st_size:,} bytes); reading from its start")
                    os.lseek(fd, 0, os.SEEK_SET)
                    self.position = 0
                    continue
                if cur.st_size > self.position:
                    continue  # more data: read it before looking at the name
                try:
                    named = os.stat(self.path)
                except FileNotFoundError:
                    if not deleted:
                        deleted = True
                        self.state = "deleted"
                        self._event("deleted", f"{self.path} was deleted; still reading the open file, "
                                               f"waiting for it to be re-created")
                    continue
                if (named.st_ino, named.st_dev) != (cur.st_ino, cur.st_dev):
                    # Rotated or re-created: finish the old file, then switch.
                    while True:
                        data = os.read(fd, CHUNK)
                        if not data:
                            break
                        self._feed(data)
                        self.position += len(data)
                    new = self._open()
                    if new is None:
                        continue
                    os.close(fd)
                    fd, st = new
                    self._end_line()
                    kind = "recreated" if deleted else "rotated"
                    what = "re-created" if deleted else "rotated (new file at the same path)"
                    self._event(kind, f"{self.path} was {what}; reading the new file from its start")
                    deleted = False
                    self.position = 0
                    self.state = "following"
                    if not stat.S_ISREG(st.st_mode):
                        self._run_pipe()
                        return
        finally:
            try:
                os.close(fd)
            except OSError:
                pass


def is_pattern(path: str) -> bool:
    return any(ch in path for ch in "*?[")


class LogReader:
    """All sources of one app session feeding one catalog.

    ``patterns`` are paths, glob patterns or ``-`` (stdin; pass ``stdin_fd`` when the
    real stdin was moved away so the terminal can take fd 0).  While following, glob
    patterns are re-expanded every second, so ``'logs/rank*.log'`` picks up ranks that
    start later.  Each source's rows carry its path when there is more than one
    possible source (several paths or any pattern), as ``decode_paths`` does.
    """

    def __init__(self, catalog: Catalog, patterns: list[str], *, follow: bool,
                 poll_interval: float = POLL_INTERVAL, tail_lines: int = TAIL_LINES,
                 stdin_fd: Optional[int] = None) -> None:
        self.catalog = catalog
        self.patterns = list(patterns)
        self.follow = follow
        self.poll_interval = poll_interval
        self.tail_lines = tail_lines
        self.stdin_fd = stdin_fd
        self.sources: list[Source] = []
        self._known: set[str] = set()
        self._events: deque[FollowEvent] = deque(maxlen=EVENTS_KEPT)
        self._events_lock = threading.Lock()
        self._stop = threading.Event()
        self._glob_thread: Optional[threading.Thread] = None
        self.multi = len(patterns) > 1 or any(is_pattern(p) for p in patterns)
        self.started = 0.0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self.started = time.monotonic()
        for p in self.patterns:
            if p == "-":
                self._add("-", fd=self.stdin_fd)
            elif is_pattern(p):
                matches = sorted(glob.glob(p))
                if not matches and not self.follow:
                    self._event(FollowEvent(p, "error", f"no file matches {p}"))
                for m in matches:
                    self._add(m)
            else:
                self._add(p)
        if self.follow and any(is_pattern(p) for p in self.patterns):
            self._glob_thread = threading.Thread(target=self._watch_globs, name="miotui-glob", daemon=True)
            self._glob_thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop every reader thread and wait for them (bounded)."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        for s in list(self.sources):
            s.thread.join(max(0.0, deadline - time.monotonic()))
        if self._glob_thread is not None:
            self._glob_thread.join(max(0.0, deadline - time.monotonic()))

    @property
    def alive(self) -> bool:
        return any(s.thread.is_alive() for s in self.sources)

    def _add(self, path: str, fd: Optional[int] = None) -> None:
        if path in self._known:
            return
        self._known.add(path)
        label = path if self.multi else ""
        src = Source(self, path, label, fd=fd)
        self.sources.append(src)
        src.thread.start()

    def _watch_globs(self) -> None:
        while not self._stop.wait(GLOB_INTERVAL):
            for p in self.patterns:
                if is_pattern(p):
                    for m in sorted(glob.glob(p)):
                        if m not in self._known:
                            self._event(FollowEvent(m, "opened", f"new file matches {p}: {m}"))
                            self._add(m)

    # ------------------------------------------------------------------ what the UI polls

    def _event(self, ev: FollowEvent) -> None:
        with self._events_lock:
            self._events.append(ev)

    def drain_events(self) -> list[FollowEvent]:
        with self._events_lock:
            out = list(self._events)
            self._events.clear()
        return out

    @property
    def initial_scan(self) -> tuple[int, int, bool]:
        """(bytes read, bytes there were at open, all initial content read) for the progress bar."""
        done = total = 0
        for s in self.sources:
            total += s.initial_size
            done += min(s.position if not s.initial_done else s.initial_size, s.initial_size)
        return done, total, all(s.initial_done for s in self.sources)

    @property
    def finished(self) -> bool:
        """Every source has reached its end and will not be read again."""
        return bool(self.sources) and all(s.finished for s in self.sources)

    def state_text(self) -> str:
        states = sorted({s.state for s in self.sources})
        return ",".join(states) if states else "no source"

    def tail(self, count: int = 200) -> list[tuple[str, int, str]]:
        """The newest lines, (label, line number, text), of every source (oldest first)."""
        out: list[tuple[str, int, str]] = []
        for s in self.sources:
            out.extend((s.label, n, t) for n, t in s.tail.snapshot(count))
        if len(self.sources) > 1:
            return out[-count:]
        return out

    @property
    def paths(self) -> list[str]:
        return [s.path for s in self.sources]


# ---------------------------------------------------------------------- the job writing the log


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


def reader_summary(reader: LogReader) -> str:
    """One line naming the sources (for the status bar and the title)."""
    paths = reader.paths or reader.patterns
    names = ["stdin" if p == "-" else os.path.basename(p) for p in paths]
    if len(names) <= 2:
        return ", ".join(names)
    return f"{names[0]}, {names[1]} +{len(names) - 2} more"


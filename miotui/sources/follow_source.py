"""One followed path (or stdin), read a bounded piece at a time by the reader's one thread.

Why a state machine and not a thread per path: a glob of 1 000 rank logs made 1 005
threads that woke each other up; here :meth:`Source.step` does a bounded amount of work
(one ``os.read`` of at most ``chunk`` bytes, fed to the scanner, or one look at the
file) and says when it wants to be looked at again (``due``), and
``miotui.sources.follow.LogReader`` steps every source from one thread.  A piece is fed to
the scanner under the catalog's lock, so the piece size also bounds how long the lock
is held.

Why ``os.pread`` on a descriptor we own: a live log changes size under us, and ``mmap``
of a file truncated while mapped raises SIGBUS.

``tail -F`` behaviour, per path, each saying so in the source's ``state`` and an event:

* a missing path, one that cannot be read yet (permission), or one that is not a regular
  file (a directory for now) is retried, its state saying why (``waiting``,
  ``unreadable``, ``not a file``); ``open`` never blocks (``O_NONBLOCK``: a FIFO at the
  path is read as a stream, waiting for a writer without blocking the reader);
* truncation is noticed by size *and* by content (:mod:`miotui.sources.fingerprint`): a
  file rewritten from its start is read again from there as a new file; a file cut to N
  bytes that are the ones already read is read on from N (nothing is counted twice);
* rotation (a new inode at the path): the old file is read to the size it had when the
  rotation was seen, then the new file from its start;
* deletion keeps reading the open, unlinked file until a file appears at the path.

A partial line at a truncation/rotation point is ended there, so it never glues onto
the first line of the new file.  Line numbers keep counting across such events.
"""

from __future__ import annotations

import math
import os
import select
import stat
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from miotui.sources.encoding import TextBytes, record_warning
from miotui.sources.fingerprint import Fingerprint
from miotui.sources.head_choice import HeadChoice
from miotui.sources.linetail import LineTail

#: Rate samples are taken at most this often, and rates cover about this long.
RATE_SAMPLE_S = 0.25
RATE_WINDOW_S = 2.0
#: Host names (or launcher tags) remembered per source.
MAX_HOSTS = 16
#: Seconds without new data before a file is looked at less and less often.
ACTIVE_GRACE_S = 2.0
#: Idle looks are rounded up to a multiple of this many seconds (see ``Source._idle``).
IDLE_QUANTUM = 0.1
#: A file that moved is compared with all of what was read (or a slice of its blocks) at
#: most this often; in between only its first 4 KiB and the 4 KiB before the read position
#: (``Fingerprint.continues``): catching up with a fast writer, the size moves at every read.
THOROUGH_CHECK_S = 0.25

#: A descriptor slot of the reader: one of its budget, one of the few extra a stream (a
#: FIFO, a .gz read once) may take past it, or none (the file is reopened for each read).
Slot = Literal["", "budget", "extra"]

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
@dataclass(frozen=True)
class FollowEvent:
    """Something a user should be told about a source (shown in the status bar)."""

    path: str
    kind: str  # opened waiting truncated rotated deleted recreated caught-up eof error
    message: str
    time: float = field(default_factory=time.time)


@dataclass(frozen=True)
class SourceStats:
    """One source as the status bar shows it: where it is and how fast it is read."""

    path: str
    label: str
    state: str
    bytes: int             # bytes read (all files the path has been, across truncations)
    lines: int             # lines read
    bytes_per_s: float     # over the last ~2 s
    lines_per_s: float
    behind: int            # bytes the file holds that are not read yet (0 for a stream)
    hosts: tuple[str, ...] = ()   # host names / rank tags seen before MIOpen's prefix (sampled)


class Source:
    """One path (or stdin): its descriptor, where we are in it, and what it is doing."""

    def __init__(self, reader: Any, path: str, label: str, *, fd: Optional[int] = None) -> None:
        self.reader = reader
        self.path = path
        self.label = label
        #: made once the log's format can be told from its first text (``head_choice``)
        self.scanner: Any = None
        self._head = HeadChoice(reader.formats.told)
        self.tail = LineTail(reader.tail_lines)
        self.position = 0               # offset in the file now read (compressed offset for .gz)
        self.bytes_read = 0             # all bytes fed, across truncations/rotations
        self.initial_size = 0           # size at open: the "initial scan" of the progress bar
        self.initial_done = False
        self.state = "starting"
        self.finished = False
        self.hosts: dict[str, None] = {}
        self.due = 0.0                  # monotonic time of the next look
        self.busy = True                # there is (or may be) data to read now
        self.interval = reader.poll_interval
        self.last_data = time.monotonic()
        self.known_size = 0
        self.is_stdin = path == "-" or fd is not None
        self.is_gzip = path.endswith(".gz") and not self.is_stdin
        self._fd: Optional[int] = fd if fd is not None else (0 if path == "-" else None)
        self._gz: Any = None
        self._stream = self.is_stdin    # read without offsets (stdin, a FIFO or device at the path)
        self._writer = False            # a FIFO: a writer is connected
        self._stream_poll: Any = None
        self._ident: tuple[int, int] = (0, 0)   # (inode, device) of the open file
        #: the reader's descriptor slot this source holds ("": none, its file is closed
        #: between steps and reopened by name: ``parked``)
        self.slot: Slot = ""
        self.watch_dirs: tuple[str, ...] = ()   # directories inotify watches for this path
        self.parked = False
        self._fp = Fingerprint()
        self._last_key: Optional[tuple[int, int]] = None
        self._checked = 0.0             # monotonic time of the last thorough content check
        self._unchecked = False         # the file moved since then: a thorough check is owed
        self._deleted = False
        self._moved = False
        self._drain_to: Optional[int] = None    # rotation seen: read the old file to here, then switch
        self._problem = ""              # why the path cannot be read now (said once per change)
        self._last_byte = b"\n"
        self._text = TextBytes()        # the file's bytes as UTF-8 (UTF-16, byte order marks)
        self._rates: deque[tuple[float, int, int]] = deque(maxlen=int(RATE_WINDOW_S / RATE_SAMPLE_S) + 4)

    # ------------------------------------------------------------------ what the reader asks

    def progress(self) -> tuple:
        """What the UI's summaries of this source depend on (the reader remakes them when it moves)."""
        return (self.state, self.initial_done, self.finished, self.position, self.known_size, self.bytes_read)

    def stats(self, now: float) -> SourceStats:
        bps = lps = 0.0
        rates = list(self._rates) if now - self.last_data <= RATE_WINDOW_S else []   # none read lately: 0/s
        if rates:
            base = rates[0]
            for sample in rates:
                if sample[0] <= now - RATE_WINDOW_S:
                    base = sample
            dt = now - base[0]
            if dt > 0:
                bps = (self.bytes_read - base[1]) / dt
                lps = (self.tail.line_count - base[2]) / dt
        behind = 0 if self._stream else max(0, self.known_size - self.position)
        return SourceStats(self.path, self.label, self.state, self.bytes_read, self.tail.line_count, bps, lps,
                           behind, tuple(self.hosts))

    # ------------------------------------------------------------------ feeding

    def _feed(self, data: bytes) -> None:
        """``data`` as read (raw: it is what the fingerprint and the offsets count); the
        scanner and the raw-log tail get it as UTF-8 (``miotui.sources.encoding``)."""
        if not self._stream and self._gz is None:
            self._fp.add(data, self.position)
        self.bytes_read += len(data)
        self._scan(self._text.feed(data))
        record_warning(self.reader.catalog, self._text, self.label)
        now = time.monotonic()
        self.last_data = now
        if not self._rates or now - self._rates[-1][0] >= RATE_SAMPLE_S:
            self._rates.append((now, self.bytes_read, self.tail.line_count))

    def _scan(self, text: bytes) -> None:
        """UTF-8 text to the scanner (its feed's time noted: it holds the catalog lock) and the tail."""
        if not text:
            return
        self.tail.feed(text)
        self._last_byte = text[-1:]
        if len(self.hosts) < MAX_HOSTS:
            self._sample_host(text)
        if self.scanner is None:
            chosen = self._head.offer(text)
            if chosen is None:   # the format cannot be told yet: held, scanned once it can
                return
            self._choose(chosen)
        else:
            self._scanner_feed(text)

    def _scanner_feed(self, text: bytes) -> None:
        t0 = time.perf_counter()
        self.scanner.feed(text)
        held = time.perf_counter() - t0
        if held > self.reader.longest_feed_s:
            self.reader.longest_feed_s = held

    def _sample_host(self, data: bytes) -> None:
        """The host name or rank tag the piece's lines carry, if its format says one."""
        label = self.reader.formats.host_label(data)
        if label is not None:
            self.hosts[label] = None

    def _choose(self, head: bytes) -> None:
        """The scanner of the format ``head`` (the log's first text) is in, fed ``head``."""
        self.scanner = self.reader.formats.scanner_for(head, self.reader.catalog, self.label)
        if head:
            self._scanner_feed(head)

    def _make_scanner(self) -> None:
        """The format decided now from what is held (the input ended, broke, or paused)."""
        if self.scanner is None:
            self._choose(self._head.take())

    def _end_line(self, new_file: bool = True) -> None:
        """A partial line at a truncation/rotation ends here (never glued to new text); a
        ``new_file``'s encoding is decided afresh."""
        self._scan(self._text.flush())
        if new_file:
            self._text = TextBytes()
        if self._head.held:
            self._make_scanner()
        if self._last_byte not in (b"\n", b"\r") and self.scanner is not None:
            self.scanner.feed(b"\n")
            self._last_byte = b"\n"
        self.tail.end_line()

    def _event(self, kind: str, message: str) -> None:
        self.reader.emit(FollowEvent(self.path, kind, message))

    def finish(self) -> None:
        """No more input from this source: the last partial line counts, descriptors close."""
        if self.finished:
            return
        self.finished = True
        self.busy = False
        self.initial_done = True
        self._scan(self._text.flush())
        self.tail.end_line()
        self.close()
        if self.scanner is None:
            self._make_scanner()
        try:
            self.scanner.finish()
        except Exception as e:  # pragma: no cover - scanner bugs are reported, not raised
            self._event("error", f"{self.path}: scanner failed at end: {e}")

    def close(self, release: bool = True) -> None:
        if self._gz is not None:
            raw = self._gz.fileobj
            for closing in (self._gz, raw):
                try:
                    if closing is not None:
                        closing.close()
                except Exception:
                    pass
            self._gz = None
            self._fd = None    # closed with its file object
        if self._fd is not None:
            self.reader.forget_stream(self._fd)
        if self._fd is not None and not self.is_stdin:
            try:
                os.close(self._fd)
            except OSError:
                pass
        if not self.is_stdin:
            self._fd = None
        if release and self.slot:
            self.reader.release_slot(self.slot)
            self.slot = ""
        self.parked = False

    def _park(self) -> None:
        """Close the file until the next step (no descriptor slot is free): the next step
        reopens it by name and checks that it is the same file (:meth:`_reopen`)."""
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
        if not self.parked:
            self.parked = True
            self.reader.note_parked(self)

    def fail(self, error: BaseException) -> None:
        """An unexpected error: say so and stop this source (the others go on)."""
        self.state = "error"
        self._event("error", f"{self.path}: {type(error).__name__}: {error}")
        self.finish()

    # ------------------------------------------------------------------ scheduling

    def _idle(self, now: float, cap: float = 0.0) -> None:
        """Nothing new: look again soon while the file was active lately, then less often.

        Idle looks fall on a grid of ``IDLE_QUANTUM`` seconds (ten times that once they are
        4 s apart or more), so 1 000 idle files wake the reader 10 times a second at most,
        not 1 000 times, and once a second when they have been idle a while (each wake-up
        walks every source)."""
        if self._head.held and now - self.last_data >= ACTIVE_GRACE_S:   # the writer paused: decide
            self._make_scanner()
        active, idle_cap = self.reader.intervals(self.reader.watched(self))
        if now - self.last_data < ACTIVE_GRACE_S:
            self.interval = active
        else:
            self.interval = min(max(self.interval, active) * 2, min(cap, idle_cap) if cap else idle_cap)
        due = now + self.interval
        if self.interval >= 4 * IDLE_QUANTUM:
            quantum = IDLE_QUANTUM if self.interval < 40 * IDLE_QUANTUM else 10 * IDLE_QUANTUM
            due = math.ceil(due / quantum) * quantum
        self.due = due

    # ------------------------------------------------------------------ one step

    def step(self, now: float) -> bool:
        """Do a bounded piece of work; True when bytes were read.  A regular file that holds
        no descriptor slot is closed again at the end of the step, whatever happened."""
        try:
            return self._step(now)
        finally:
            if not self.slot and self._fd is not None and not self._stream and self._gz is None \
                    and not self.is_stdin and not self.finished:
                self._park()

    def _step(self, now: float) -> bool:
        if self.finished:
            return False
        if self.is_stdin:
            return self._step_stdin(now)
        if self._fd is None:
            return self._reopen(now) if self.parked else self._try_open(now)
        if self._stream:
            return self._step_fifo(now)
        if self._gz is not None:
            return self._step_gzip()
        return self._step_file(now)

    # stdin -------------------------------------------------------------

    def _step_stdin(self, now: float) -> bool:
        fd = self._fd if self._fd is not None else 0
        if self._stream_poll is None:
            self._stream_poll = select.poll()
            self._stream_poll.register(fd, select.POLLIN)
            self.reader.wait_on_stream(fd, self)
            self.state = "reading"
            self._event("opened", "reading standard input")
        if not self._stream_poll.poll(0):
            self.initial_done = True
            self.busy = False
            self._idle(now)
            return False
        data = os.read(fd, self.reader.chunk)
        if not data:
            self.state = "ended"
            self._event("eof", "standard input closed")
            self.finish()
            return False
        self._feed(data)
        self.position += len(data)
        self.busy = True
        return True

    # opening -----------------------------------------------------------

    def _open_path(self) -> tuple[Optional[int], Optional[os.stat_result], str, str]:
        """(fd, stat, "", "") or (None, None, state, why): never blocks (a FIFO opens at once)."""
        try:
            fd = os.open(self.path, _OPEN_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            return None, None, "waiting", "does not exist"
        except PermissionError:
            return None, None, "unreadable", "cannot be read (permission denied)"
        except OSError as e:
            return None, None, "unreadable", f"cannot be opened ({e.strerror or e})"
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
            if self.is_gzip and not stat.S_ISREG(st.st_mode):
                os.close(fd)
                return None, None, "not a file", "is not a regular file (a .gz is read only from a file)"
            must_hold = self.is_gzip or not stat.S_ISREG(st.st_mode)   # a stream cannot be reopened where it was
            if not self.slot:
                self.slot = self.reader.take_slot(must_hold)
            if must_hold and not self.slot:
                os.close(fd)
                return None, None, "queued", f"waits for a descriptor (all {self.reader.max_open:,} of the " \
                                             f"open-file budget are in use)"
            return fd, st, "", ""
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "a block device" if stat.S_ISBLK(st.st_mode) \
            else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file"
        return None, None, "not a file", f"is {what}, not a log file"

    def _try_open(self, now: float) -> bool:
        fd, st, state, why = self._open_path()
        if fd is None or st is None:
            if state == "queued":
                if why != self._problem:
                    self._problem = why
                    self.state = state
                    self._event("limit", f"{self.path} {why}")
                self.busy = False
                self.due = now + IDLE_QUANTUM
                return False
            if not self.reader.follow:
                self.state = "error"
                self._event("error", f"{self.path}: no such file" if state == "waiting" else f"{self.path} {why}")
                self.finish()
                return False
            if why != self._problem:
                self._problem = why
                self.state = state
                again = "waiting for it" if state == "waiting" else "retrying, like tail -F"
                self._event("waiting", f"{self.path} {why}; {again}")
            self.busy = False
            self._idle(now)
            return False
        before = self.state
        self._problem = ""
        self._adopt(fd, st)
        if before == "waiting":
            self._event("recreated", f"{self.path} appeared")
        elif before in ("unreadable", "not a file"):
            self._event("recreated", f"{self.path} can be read now")
        self.reader.watch_path(self)
        return False

    def _reopen(self, now: float) -> bool:
        """A parked file (no descriptor slot): look at its name, and reopen it only when it
        may hold something new.  The file reopened must be the one read (same device and
        inode; its content is compared by ``_step_file`` whenever its size or time moved);
        another file at the name is read from its start, and what could not be read of
        the old one (not kept open) is said."""
        if not self.busy and self._drain_to is None:
            try:
                named: Optional[os.stat_result] = os.stat(self.path)
            except OSError:
                named = None
            if named is not None and (named.st_ino, named.st_dev) == self._ident \
                    and (named.st_size, named.st_mtime_ns) == self._last_key and named.st_size == self.position \
                    and not self._unchecked:
                self._idle(now)      # nothing new: one stat, no descriptor
                return False
        fd, st, state, why = self._open_path()
        if fd is None or st is None:
            if state != "waiting":         # there, but not readable now: retried
                if why != self._problem:
                    self._problem = why
                    self.state = state
                    self._event("waiting", f"{self.path} {why}; retrying, like tail -F")
                self.busy = False
                self._idle(now)
                return False
            self._event("deleted", f"{self.path} was deleted or moved away; it was not kept open (more files "
                                   f"than the open-file budget), so it is not read further{self._unread()}; "
                                   f"waiting for a file at the path")
            self._end_line()
            self.parked = False
            self._ident = (0, 0)
            self._problem = "does not exist"
            self.state = "waiting"
            self.busy = False
            self._idle(now)
            return False
        if (st.st_ino, st.st_dev) != self._ident:
            lost = self._unread()
            self._end_line()
            self._fd = fd
            self.parked = False
            self._adopt(fd, st, announce=False)
            self._event("rotated", f"{self.path} is another file now (rotated or re-created); reading it from its "
                                   f"start{lost}")
            self.reader.watch_path(self)
            return False
        self._fd = fd
        return self._step_file(now)

    def _unread(self) -> str:
        """What a parked file that went away still held for us, said in an event."""
        left = self.known_size - self.position
        if left <= 0:
            return ""
        return f" ({left:,} bytes of the old file were not read: it was not kept open, over the open-file budget)"

    def _adopt(self, fd: int, st: os.stat_result, *, announce: bool = True) -> None:
        """Start reading a freshly opened descriptor from its start (``announce``: say
        "opened"; a rotation or re-creation says so itself, and the status bar shows the
        latest event)."""
        self._fd = fd
        self._ident = (st.st_ino, st.st_dev)
        self._fp = Fingerprint()
        self._last_key = None
        self._deleted = False
        self._moved = False
        self._drain_to = None
        self.position = 0
        self.busy = True
        self.due = 0.0
        if self.is_gzip:
            import gzip
            self._gz = gzip.GzipFile(fileobj=os.fdopen(fd, "rb"), mode="rb")   # its file owns fd now
            self.initial_size = self.known_size = st.st_size
            self.state = "reading"
            if announce:
                self._event("opened", f"{self.path} (gzip: read once, not followed)")
            return
        self._writer = False
        if stat.S_ISREG(st.st_mode):
            self._stream = False
            if not self.initial_done:
                self.initial_size = st.st_size
            self.known_size = st.st_size
            self.state = "reading"
            if announce:
                self._event("opened", f"{self.path}: {st.st_size:,} bytes")
            return
        self._stream = True
        self.state = "waiting for a writer"
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device"
        if announce:
            self._event("opened", f"{self.path} is {kind}: read as a stream, as writers write it")

    # gzip --------------------------------------------------------------

    def _step_gzip(self) -> bool:
        try:
            data = self._gz.read(self.reader.chunk)
        except (EOFError, OSError, ValueError) as e:
            self.state = "error"
            self._event("error", f"{self.path}: the compressed data is damaged after {self.bytes_read:,} bytes "
                                 f"({e}); what came before is kept")
            self.finish()
            return False
        if not data:
            self.state = "read"
            self.finish()
            return False
        self._feed(data)
        fileobj = self._gz.fileobj
        self.position = fileobj.tell() if fileobj is not None else self.position
        return True

    # a FIFO or device at the path ----------------------------------------

    def _step_fifo(self, now: float) -> bool:
        assert self._fd is not None
        try:
            data = os.read(self._fd, self.reader.chunk)
        except BlockingIOError:   # a writer is there, with nothing to say now
            self._connected(True)
            self.initial_done = True
            self.busy = False
            self._idle(now, self.reader.poll_interval * 4)
            return False
        if data:
            self._connected(True)
            self._feed(data)
            self.position += len(data)
            self.busy = True
            return True
        self.initial_done = True
        self.busy = False
        if self._writer:   # the writer closed its end
            self._connected(False)
            self._event("eof", f"{self.path}: the writer closed the FIFO" +
                        ("; waiting for another" if self.reader.follow else ""))
            if not self.reader.follow:
                self.state = "ended"
                self.finish()
                return False
        if self._replaced():
            return False
        self._idle(now, self.reader.poll_interval * 4)
        return False

    def _connected(self, yes: bool) -> None:
        if yes == self._writer:
            return
        self._writer = yes
        self.state = "reading" if yes else "waiting for a writer"
        if yes:
            self.reader.wait_on_stream(self._fd, self)
        elif self._fd is not None:
            self.reader.forget_stream(self._fd)

    def _replaced(self) -> bool:
        """Another file now at the path (a FIFO replaced by a log, say): switch to it."""
        try:
            named = os.stat(self.path)
        except OSError:
            return False
        if (named.st_ino, named.st_dev) == self._ident:
            return False
        self._switch("rotated", "replaced by another file")
        return True

    # a regular file --------------------------------------------------------

    def _step_file(self, now: float) -> bool:
        """Read one piece; while following, first make sure the file is still the one we
        read (content, size), so not one byte of a rewritten file is read at the old offset."""
        fd = self._fd
        assert fd is not None
        size = self.reader.chunk
        if self._drain_to is not None:
            size = min(size, self._drain_to - self.position)
        elif self.reader.follow:
            cur = os.fstat(fd)
            self.known_size = cur.st_size
            if cur.st_size < self.position:
                self._shrunk(cur.st_size)
                return False
            key = (cur.st_size, cur.st_mtime_ns)
            thorough = now - self._checked >= THOROUGH_CHECK_S
            if key != self._last_key or (self._unchecked and thorough):
                self._last_key = key
                self._unchecked = not thorough    # a thorough look follows within THOROUGH_CHECK_S
                if thorough:
                    self._checked = now
                if self.position > 0 and not self._fp.continues(fd, thorough):
                    self._event("truncated", f"{self.path} was rewritten (its content before our offset "
                                             f"{self.position:,} changed); reading it from its start as a new file")
                    self._restart()
                    return False
            if cur.st_size == self.position:
                size = 0
        data = os.pread(fd, size, self.position) if size > 0 else b""
        if data:
            self._feed(data)
            self.position += len(data)
            if self.position > self.known_size:
                self.known_size = self.position
            self.busy = True
            if not self.initial_done and self.position >= self.initial_size:
                self._caught_up()
            return True
        self.busy = False
        if not self.initial_done:
            self._caught_up()
        if self._drain_to is not None:
            self._drain_to = None
            self._switch("recreated" if self._deleted else "rotated", "")
            return False
        if not self.reader.follow:
            self.state = "read"
            self.finish()
            return False
        self.state = "deleted" if self._deleted else "following"
        self._look_at_the_name()
        if not self.busy:
            self._idle(now)
        return False

    def _caught_up(self) -> None:
        self.initial_done = True
        self._event("caught-up", f"{self.path}: read {self.position:,} bytes")

    def _look_at_the_name(self) -> None:
        """At the end of the file: is it still the one at the path (rotation, deletion)?"""
        fd = self._fd
        assert fd is not None
        try:
            named = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            if os.fstat(fd).st_nlink > 0:   # renamed away (logrotate's first step), not deleted
                if not self._moved:
                    self._moved = True
                    self._event("rotated", f"{self.path} was moved away (rotation?); still reading it, "
                                           f"waiting for a new file at the path")
            elif not self._deleted:
                self._deleted = True
                self.state = "deleted"
                self._event("deleted", f"{self.path} was deleted; still reading the open file, "
                                       f"waiting for it to be re-created")
            return
        except OSError:
            return   # the directory cannot be searched right now: ask again later
        if (named.st_ino, named.st_dev) == self._ident:
            return
        # Rotated or re-created: read the old file to its end as it is now, then switch.
        size = os.fstat(fd).st_size
        if size > self.position:
            self._drain_to = size
            self.busy = True
            return
        self._switch("recreated" if self._deleted else "rotated", "")

    def _shrunk(self, size: int) -> None:
        """The file is now shorter than our offset: cut (``truncate -s``) or rewritten?"""
        assert self._fd is not None
        self._end_line(new_file=False)
        if self._fp.kept_prefix(self._fd, size):
            self._event("truncated", f"{self.path} was cut to {size:,} bytes (from {self.position:,}); those "
                                     f"bytes were read already: reading on from there")
            self._fp.cut_to(self._fd, size)
            self.position = size
            self._last_key = None
            self.busy = True
            return
        self._event("truncated", f"{self.path} was truncated ({self.position:,} -> {size:,} bytes); "
                                 f"reading it from its start as a new file")
        self._restart()

    def _restart(self) -> None:
        self._end_line()
        self._fp = Fingerprint()
        self._last_key = None
        self.position = 0
        self.busy = True

    def _switch(self, kind: str, why: str) -> None:
        """Open what is at the path now and read it from its start (rotation, re-creation)."""
        fd, st, state, problem = self._open_path()
        if fd is None or st is None:
            if problem != self._problem:
                self._problem = problem
                self._event("waiting", f"{self.path} {problem}; still reading the old file, retrying")
            return
        self._problem = ""
        self._end_line()
        self.close(release=False)     # the new file takes the old one's slot
        if kind == "recreated":
            message = f"{self.path} was re-created; reading the new file from its start"
        else:
            message = f"{self.path} was {why or 'rotated (new file at the same path)'}; reading the new file " \
                      f"from its start"
        self._adopt(fd, st, announce=False)
        self._event(kind, message)
        self.reader.watch_path(self)

"""Read logs as they grow, like ``tail -F``, in one background thread (no Textual here).

Why one thread for every source: a glob of 1 000 rank logs used to start a thread per
file (1 005 threads, 125 % CPU while idle).  Now :class:`LogReader` runs one thread that
steps each source (:class:`~miotui.sources.follow_source.Source`) in turn, a bounded piece
at a time, so a 1 GB initial scan of one file never starves the live tail of another,
and the catalog's lock is held for one piece at most (``CHUNK`` bytes of scanning).

Why the reader is told and not only asking: with Linux inotify
(:mod:`miotui.sources.dirwatch`) the thread sleeps until a followed directory changes, so a
new line is read within milliseconds while an idle file is looked at less and less often,
down to once every ``IDLE_POLL_WATCHED`` seconds (in case an event was lost).  Files that
grew in the last 2 s are also looked at every ``poll_interval``.  Where inotify does not
see every write (not Linux, or a network file system written by other machines: NFS,
Lustre, FUSE...) an idle file is looked at every ``IDLE_POLL`` seconds instead.  With
many files there are at most ``LOOKS_PER_S`` looks a second in all.  What the UI polls
(progress, states, per-file rates) is remade only when a source moved
(``generation``), so 5 000 idle files cost the UI nothing either.

Each source's bytes go straight into its own :class:`~miotui.formats.miopen.scan.LogScanner`
(decoding happens in the reader thread, never in the UI thread); the UI polls the
catalog, this module's counters (:meth:`LogReader.source_stats`: per-source bytes/s,
lines/s, bytes behind, host names) and its event queue on a timer, so nothing here ever
touches UI objects.  What each source does on truncation, rotation, deletion and the
like is described in :mod:`miotui.sources.follow_source`.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import select
import threading
import time
from collections import deque
from typing import Any, Optional, Protocol

from miotui.catalog import Catalog
from miotui.sources.dirwatch import APPEAR_MASK, DirWatcher, MountTable, open_watcher
from miotui.sources.follow_source import ACTIVE_GRACE_S, RATE_WINDOW_S, FollowEvent, Slot, Source, SourceStats
from miotui.sources.job import JobStatus, JobWatcher, find_writer_pid
from miotui.sources.linetail import TAIL_LINES, LineTail

__all__ = ["CHUNK", "EVENTS_KEPT", "FollowEvent", "GLOB_INTERVAL", "IDLE_POLL", "IDLE_POLL_WATCHED", "JobStatus",
           "JobWatcher", "LineTail", "LogReader", "POLL_INTERVAL", "SourceStats", "TAIL_LINES", "find_writer_pid",
           "is_pattern", "reader_summary"]

#: Bytes read and fed to the scanner at once: bounds the catalog lock's hold (about 3 ms of
#: scanning Command lines at the scanner's ~13 MB/s) and the latency one source adds to the
#: others.
CHUNK = 1 << 15
#: Seconds between looks at a file that grew lately (also bounds how late a line is seen
#: where inotify says nothing).
POLL_INTERVAL = 0.05
#: Seconds between looks at an idle file at most, where inotify would not see its writes
#: (no inotify, a network file system, a directory that could not be watched).
IDLE_POLL = 1.0
#: The same for a file inotify watches on a local file system: inotify says at once when it
#: changes, so it is only looked at now and then, in case an event was lost.
IDLE_POLL_WATCHED = 30.0
#: Looks a second the reader allows itself at idle files, and at active ones (1 000 idle
#: files: each every 2 s, unless inotify says it changed).
LOOKS_PER_S = 500
#: Seconds between re-expansions of glob patterns while following.
GLOB_INTERVAL = 1.0
#: Follow events kept for the UI (older ones are dropped if nobody drains them).
EVENTS_KEPT = 500
#: Events that only say all is well (the first to go when nobody drains the queue).
ROUTINE_EVENTS = frozenset({"opened", "caught-up"})
#: Descriptors a stream (a FIFO, a .gz being read) may hold past the budget (taken from
#: the reserve: a stream cannot be closed between reads).
EXTRA_SLOTS = 8


def fd_reserve(soft_limit: int) -> int:
    """Descriptors left to the rest of the process under a limit of ``soft_limit``: a run's
    threads and imports, MIOpenDriver's pipes, exports, the raw-log pane, the terminal."""
    return max(64, min(256, soft_limit // 8))


def open_descriptor_count() -> int:
    """Descriptors this process has open now (an estimate where it cannot be listed)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder))
        except OSError:
            continue
    return 16


def descriptor_limit() -> int:
    """The soft open-file limit (``ulimit -n``); 1 << 16 where it is unlimited or unknown."""
    try:
        import resource
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 1 << 16
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 1 << 16
    return int(soft)


def descriptor_budget() -> int:
    """How many followed files may stay open at once: the limit, less what is open now and
    the reserve (:func:`fd_reserve`).  Files past it are closed between reads."""
    soft = descriptor_limit()
    return max(0, soft - open_descriptor_count() - fd_reserve(soft) - EXTRA_SLOTS)


def is_pattern(path: str) -> bool:
    """A glob pattern, unless a file of that very name exists (``rank[0].log`` is a name)."""
    return any(ch in path for ch in "*?[") and not os.path.exists(path)


class FormatChoice(Protocol):
    """What the reader asks of the formats (``miotui.formats.FormatRegistry`` answers)."""

    def told(self, lines: bytes) -> bool: ...

    def scanner_for(self, head: bytes, catalog: Catalog, file: str = "") -> Any: ...

    def host_label(self, data: bytes) -> Optional[str]: ...


class LogReader:
    """All sources of one app session feeding one catalog, read by one thread.

    ``patterns`` are paths, glob patterns or ``-`` (stdin; pass ``stdin_fd`` when the
    real stdin was moved away so the terminal can take fd 0).  While following, glob
    patterns are re-expanded every second (at once when inotify sees a new file), so
    ``'logs/rank*.log'`` picks up ranks that start later.  Each source's rows carry its
    path when there is more than one possible source (several paths or any pattern), as
    ``decode_paths`` does.
    """

    def __init__(self, catalog: Catalog, patterns: list[str], *, follow: bool, formats: "FormatChoice",
                 poll_interval: float = POLL_INTERVAL, tail_lines: int = TAIL_LINES,
                 stdin_fd: Optional[int] = None, max_open: Optional[int] = None) -> None:
        self.catalog = catalog
        #: the log formats to tell and scan with (``miotui.formats.FORMATS``: handed in, as
        #: this package may not import a format)
        self.formats = formats
        self.patterns = list(patterns)
        self.follow = follow
        self.poll_interval = poll_interval
        self.tail_lines = tail_lines
        self.stdin_fd = stdin_fd
        self.chunk = CHUNK
        #: followed files kept open at most (None: :func:`descriptor_budget` at start)
        self.max_open = max_open
        self.held_descriptors = 0
        self._extra_held = 0
        self._parked_told = False
        #: moves whenever a source read bytes or changed state (the UI's summaries are
        #: remade only then: 5 000 idle files cost nothing to poll)
        self.generation = 0
        self._last_read = 0.0
        self._summary: tuple = (-1, (0, 0, False), "no source", False)
        self._stats: tuple[int, float, list[SourceStats]] = (-1, 0.0, [])
        self.sources: list[Source] = []
        #: the longest single feed of the scanner (it holds the catalog lock meanwhile), seconds
        self.longest_feed_s = 0.0
        self.multi = len(patterns) > 1 or any(is_pattern(p) for p in patterns)
        self.started = 0.0
        self._known: set[str] = set()
        self._events: deque[FollowEvent] = deque(maxlen=EVENTS_KEPT)
        #: events a user must see (not "opened"/"caught-up"): kept apart, so 5 000 files
        #: opening at once cannot push them out before the UI drains them
        self._notices: deque[FollowEvent] = deque(maxlen=EVENTS_KEPT)
        self._events_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._globs = [p for p in self.patterns if p != "-" and is_pattern(p)]
        self._glob_now = False
        self._watcher: Optional[DirWatcher] = None
        self._mounts: Optional[MountTable] = None
        self._names: dict[tuple[str, str], list[Source]] = {}   # (directory, name) -> its sources
        self._streams: dict[int, Source] = {}
        self._active_count = 0
        self._glob_dirs: dict[str, tuple[int, int]] = {}   # a pattern's directory -> (inode, mtime) seen
        self._poll = select.poll()
        self._wake_lock = threading.Lock()
        self._wake_r, self._wake_w = -1, -1

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the reader thread.  No file is touched here (this runs in the UI thread):
        globs are expanded and directories watched by the reader thread itself."""
        self.started = time.monotonic()
        if self.max_open is None:
            self.max_open = descriptor_budget()
        for p in self.patterns:
            if p in self._known:
                continue     # named twice: read once
            if p == "-":
                self._add("-", fd=self.stdin_fd)
            elif not is_pattern(p):
                self._add(p)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._poll.register(self._wake_r, select.POLLIN)
        self._thread = threading.Thread(target=self._run, name="miotui-follow", daemon=True)
        self._thread.start()

    def _first_sources(self) -> None:
        """In the reader thread: the glob patterns' files (in the patterns' order), and the
        directory watches."""
        if self._globs:
            ordered: list[Source] = []
            by_path = {s.path: s for s in self.sources}
            for p in self.patterns:
                if p == "-" or not is_pattern(p):
                    src = by_path.get(p)
                    if src is not None and src not in ordered:
                        ordered.append(src)
                    continue
                matches = sorted(glob.glob(p))
                if not matches and not self.follow:
                    self.emit(FollowEvent(p, "error", f"no file matches {p}"))
                for m in matches:
                    if m not in self._known:
                        ordered.append(self._add(m, keep=False))
            self.sources = ordered      # one assignment: other threads see the old list or the new
        if self.follow:
            self._watcher = open_watcher()
            if self._watcher is not None:
                self._mounts = MountTable()
                self._poll.register(self._watcher.fd, select.POLLIN)
                for p in self._globs:
                    folder = os.path.dirname(os.path.abspath(p))
                    if not is_pattern(folder):
                        self._watcher.watch(folder)
                for s in self.sources:
                    self.watch_path(s)

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the reader thread and wait for it (bounded)."""
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(max(0.0, timeout))
            if self._thread.is_alive():
                return   # still inside a step: it closes its descriptors when it ends
        self._close_wake()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _add(self, path: str, fd: Optional[int] = None, keep: bool = True) -> Source:
        self.generation += 1
        self._known.add(path)
        label = path if self.multi else ""
        src = Source(self, path, label, fd=fd)
        if keep:
            self.sources.append(src)
        return src

    # ------------------------------------------------------------------ what sources ask of the reader

    def emit(self, ev: FollowEvent) -> None:
        with self._events_lock:
            (self._events if ev.kind in ROUTINE_EVENTS else self._notices).append(ev)

    def intervals(self, watched: bool = False) -> tuple[float, float]:
        """(seconds between looks at a file that grew lately, at most between looks at an
        idle one, longer when inotify covers it: ``watched``): each kind of look is kept
        under ``LOOKS_PER_S`` a second in all."""
        return (max(self.poll_interval, self._active_count / LOOKS_PER_S),
                max(IDLE_POLL_WATCHED if watched else IDLE_POLL, len(self.sources) / LOOKS_PER_S))

    def watched(self, src: Source) -> bool:
        """inotify sees every write to ``src``'s file: its directories are watched now and
        on a local file system (a network one's writes from other machines are not seen)."""
        if self._watcher is None or not src.watch_dirs:
            return False
        return all(self._watcher.watching(d) and self._mounts.local(d) for d in src.watch_dirs)

    def take_slot(self, stream: bool) -> Slot:
        """A descriptor slot for a source's open file, or "" (the file is then closed
        between reads); a stream, which cannot be, may take one of ``EXTRA_SLOTS`` more."""
        if self.held_descriptors < (self.max_open or 0):
            self.held_descriptors += 1
            return "budget"
        if stream and self._extra_held < EXTRA_SLOTS:
            self._extra_held += 1
            return "extra"
        return ""

    def release_slot(self, slot: Slot) -> None:
        if slot == "budget":
            self.held_descriptors -= 1
        elif slot == "extra":
            self._extra_held -= 1

    def note_parked(self, src: Source) -> None:
        """The first file past the budget: say once what that means (the status bar)."""
        if self._parked_told:
            return
        self._parked_told = True
        self.emit(FollowEvent(src.path, "limit", (
            f"more files than the open-file budget ({self.max_open:,} of `ulimit -n` {descriptor_limit():,}, the "
            f"rest kept for runs and drivers): files past it are closed between reads and reopened by name, so "
            f"one deleted or rotated away is not read to its end")))

    def watch_path(self, src: Source) -> None:
        """Be told (inotify) when ``src``'s file, or its directory, changes."""
        if self._watcher is None or src.is_stdin:
            return
        folders = []
        for p in {os.path.abspath(src.path), os.path.realpath(src.path)}:
            folder, name = os.path.split(p)
            folders.append(folder)
            if self._watcher.watch(folder):
                entry = self._names.setdefault((folder, name), [])
                if src not in entry:
                    entry.append(src)
        src.watch_dirs = tuple(folders)

    def wait_on_stream(self, fd: int, src: Source) -> None:
        if fd not in self._streams:
            self._streams[fd] = src
            self._poll.register(fd, select.POLLIN)

    def forget_stream(self, fd: int) -> None:
        if self._streams.pop(fd, None) is not None:
            try:
                self._poll.unregister(fd)
            except (KeyError, ValueError):
                pass

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        next_glob = time.monotonic() + GLOB_INTERVAL
        try:
            self._first_sources()
            while not self._stop.is_set():
                now = time.monotonic()
                more = self._round(now)
                if self._stop.is_set():
                    return
                if more is None:
                    return
                if self._globs and self.follow and (self._glob_now or now >= next_glob):
                    force, self._glob_now = self._glob_now, False
                    next_glob = now + GLOB_INTERVAL
                    self._expand_globs(force)
                if self._globs and self.follow:
                    more = min(more, next_glob)
                self._take_notices(max(0.0, more - time.monotonic()))
        finally:
            for s in self.sources:
                if not s.finished:
                    try:
                        s.finish()
                    except Exception:  # pragma: no cover - finishing must not raise out of the thread
                        pass
            self.generation += 1
            if self._watcher is not None:
                self._watcher.close()
            if self._stop.is_set():
                self._close_wake()

    def _round(self, now: float) -> Optional[float]:
        """Step every source that is due or has data (one piece each, in turn), in one pass
        over the sources (1 000 of them cost ~0.2 ms).  Returns when to look next (``now``
        when some source has more to read), None when every source is finished for good."""
        soonest = float("inf")
        active = 0
        left = False
        for src in self.sources:
            if src.finished:
                continue
            if src.busy or src.due <= now:
                before = src.progress()
                try:
                    if src.step(now):
                        self._last_read = now
                except OSError as e:
                    self._os_error(src, e, now)
                except Exception as e:  # a reader must never take the app down
                    src.fail(e)
                if src.progress() != before:
                    self.generation += 1
                if self._stop.is_set():
                    return now
                if src.finished:
                    continue
            left = True
            if src.busy:
                soonest = now
            elif src.due < soonest:
                soonest = src.due
            if now - src.last_data < ACTIVE_GRACE_S:
                active += 1
        self._active_count = active
        if not left and not (self.follow and self._globs):
            return None
        return soonest if left else now + GLOB_INTERVAL

    def _os_error(self, src: Source, e: OSError, now: float) -> None:
        """A read or stat failed (EIO on a network file system, say): retry, like tail -F."""
        if not self.follow:
            src.fail(e)
            return
        message = f"{src.path}: {e.strerror or e}; retrying"
        if src.state != "read error":
            src.state = "read error"
            self.emit(FollowEvent(src.path, "error", message))
        src.busy = False
        src.due = now + self.intervals()[1]

    def _take_notices(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for inotify, a stream or ``stop``; mark who is due."""
        try:
            ready = self._poll.poll(timeout * 1000.0)
        except InterruptedError:  # pragma: no cover - retried by the caller's loop
            return
        for fd, _ in ready:
            if fd == self._wake_r:
                try:
                    os.read(self._wake_r, 4096)
                except OSError:
                    pass
            elif self._watcher is not None and fd == self._watcher.fd:
                self._take_dir_events()
            else:
                src = self._streams.get(fd)
                if src is not None:
                    src.due = 0.0
                    src.busy = True

    def _take_dir_events(self) -> None:
        assert self._watcher is not None
        events, overflow = self._watcher.read()
        if overflow:
            for s in self.sources:
                s.due = 0.0
            self._glob_now = True
        for folder, name, mask in events:
            for s in self._names.get((folder, name), ()):
                s.due = 0.0
            if mask & APPEAR_MASK and self._globs:
                full = os.path.join(folder, name)
                if any(fnmatch.fnmatch(full, os.path.abspath(p)) for p in self._globs):
                    self._glob_now = True

    def _expand_globs(self, force: bool = False) -> None:
        """New files matching a pattern become sources.  A pattern whose directory part
        has no wildcard is expanded only when that directory changed lately (its mtime:
        unchanged and older than 2 s means no file came or went), so 1 000 matches cost
        one ``stat`` a second, not a listing."""
        for p in self._globs:
            folder = os.path.dirname(p) or "."
            if not is_pattern(folder):
                try:
                    st = os.stat(folder)
                except OSError:
                    continue
                seen = (st.st_ino, st.st_mtime_ns)
                settled = time.time() - st.st_mtime > 2.0   # timestamps are coarse: a recent one may hide a change
                if self._glob_dirs.get(folder) == seen and settled and not force:
                    continue
                self._glob_dirs[folder] = seen
            for m in sorted(glob.glob(p)):
                if m not in self._known:
                    self.emit(FollowEvent(m, "opened", f"new file matches {p}: {m}"))
                    src = self._add(m)
                    self.watch_path(src)

    def _wake(self) -> None:
        with self._wake_lock:
            if self._wake_w >= 0:
                try:
                    os.write(self._wake_w, b"x")
                except OSError:
                    pass

    def _close_wake(self) -> None:
        with self._wake_lock:
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self._wake_r = self._wake_w = -1

    # ------------------------------------------------------------------ what the UI polls

    def drain_events(self) -> list[FollowEvent]:
        with self._events_lock:
            out = sorted((*self._events, *self._notices), key=lambda ev: ev.time)
            self._events.clear()
            self._notices.clear()
        return out

    def _summarise(self) -> tuple:
        """(generation, initial scan, state text, finished), remade only when a source moved."""
        summary = self._summary
        generation = self.generation
        if summary[0] == generation:
            return summary
        sources = list(self.sources)
        done = total = 0
        for s in sources:
            total += s.initial_size
            done += min(s.position if not s.initial_done else s.initial_size, s.initial_size)
        states = sorted({s.state for s in sources})
        summary = (generation, (done, total, all(s.initial_done for s in sources)),
                   ",".join(states) if states else "no source", bool(sources) and all(s.finished for s in sources))
        self._summary = summary
        return summary

    @property
    def initial_scan(self) -> tuple[int, int, bool]:
        """(bytes read, bytes there were at open, all initial content read) for the progress bar."""
        return self._summarise()[1]

    @property
    def finished(self) -> bool:
        """Every source has reached its end and will not be read again."""
        return self._summarise()[3]

    def state_text(self) -> str:
        return self._summarise()[2]

    def source_stats(self) -> list[SourceStats]:
        """Per source: state, bytes and lines read, their rates over ~2 s, bytes behind, hosts.
        The same list object again while nothing was read or changed and every rate has
        settled (no source read for ``RATE_WINDOW_S``), so a poller can tell nothing moved."""
        now = time.monotonic()
        generation, made, stats = self._stats
        settled = made - self._last_read > RATE_WINDOW_S
        if generation == self.generation and settled:
            return stats
        generation = self.generation
        stats = [s.stats(now) for s in list(self.sources)]
        self._stats = (generation, now, stats)
        return stats

    def tail(self, count: int = 200) -> list[tuple[str, int, str]]:
        """The newest lines, (label, line number, text), of every source (oldest first)."""
        out: list[tuple[str, int, str]] = []
        for s in list(self.sources):
            out.extend((s.label, n, t) for n, t in s.tail.snapshot(count))
        if len(self.sources) > 1:
            return out[-count:]
        return out

    @property
    def paths(self) -> list[str]:
        return [s.path for s in list(self.sources)]


def reader_summary(reader: LogReader) -> str:
    """One line naming the sources (for the status bar and the title; asked at every poll,
    so it looks at two paths, not at every one of 5 000)."""
    sources = list(reader.sources)
    paths = [s.path for s in sources[:3]] if sources else reader.patterns[:3]
    count = len(sources) if sources else len(reader.patterns)
    names = ["stdin" if p == "-" else os.path.basename(p) for p in paths]
    if count <= 2:
        return ", ".join(names[:count])
    return f"{names[0]}, {names[1]} +{count - 2} more"

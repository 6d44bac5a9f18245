#!/usr/bin/env python3
"""Follow benchmark (run by hand): a multi-node job's rank logs followed live, and many idle files.

What is measured, and how:

``scanner``  the ceiling: one ``LogScanner`` alone decoding the same Command-line log
             (``miotui.samplegen``, format ``command``) from memory, MB/s and lines/s.
             The reader cannot go faster than this on one core.
``live``     a separate *writer process* appends Command-line text to ``--ranks`` files at
             ``--rate`` MB/s each (in pieces cut at line ends, every 10 ms), and every
             ``--marker-every`` seconds adds to each rank a line with a never-seen layer,
             noting when its ``write`` returned.  In this process a ``LogReader`` follows
             ``rank*.log``; the catalog notes when each new layer gets its row
             (``Catalog.row_for``), so a layer's latency is row time - write time (one
             monotonic clock).  Reported: per rank, bytes/s and lines/s read while writing
             (bytes read from 2 s after the start to the writer's end, and the median of
             ``LogReader.source_stats``'s lines/s) and bytes behind when the writer stops; the
             time to catch up after it stops; layer latency p50/p95/max (layers not seen
             before the catch-up deadline are counted apart); the longest hold of the
             catalog's lock (every outermost ``with catalog.lock`` timed, wall clock and the
             CPU time of the holding thread: on a loaded machine the two differ) and the longest
             wait for it by a poller that takes it every 100 ms like the app's; the
             reader process's CPU use.
``idle``     ``--idle-files`` small files followed through one glob by a ``LogReader`` and
             the app's ``Poller`` (its polls taken at once, as the UI does), the initial read
             done, then the CPU time of the whole process over ``--idle-seconds`` (all threads:
             ``time.process_time``, not wall time: the host may be loaded), and the number of
             threads; first the baseline with inotify off (polling alone), then with it.
``app-idle`` the same files followed by the whole app (Textual, headless): the process's
             CPU seconds, and each thread's (``/proc/self/task``), baseline first.

    python benchmarks/bench_follow.py                               # everything, the issue's figures
    python benchmarks/bench_follow.py --only live --ranks 8 --rate 0.5 --seconds 10
    python benchmarks/bench_follow.py --only idle --only app-idle --idle-files 1000 --idle-seconds 30
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

MARKER = ("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {n} -c 8 -H 16 -W 16 -k 8 -y 3 "
          "-x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")
MARKER_BASE = 100_000
MB = 1 << 20


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def command_log(size: int) -> bytes:
    from miotui.samplegen import SampleSpec, iter_chunks
    return "".join(iter_chunks(SampleSpec(format="command", size=size, seed=1))).encode()


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


# ---------------------------------------------------------------------- instrumentation

class TimedLock:
    """A re-entrant lock that times each outermost hold, and the waits of chosen threads."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._local = threading.local()
        self.holds: list[float] = []
        self.cpu_holds: list[float] = []   # CPU time of the holding thread during each hold
        self.longest = 0.0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        ok = self._lock.acquire(blocking, timeout)
        if ok:
            depth = getattr(self._local, "depth", 0)
            if depth == 0:
                self._local.t0 = time.perf_counter()
                self._local.c0 = time.thread_time()
            self._local.depth = depth + 1
        return ok

    def release(self) -> None:
        self._local.depth -= 1
        if self._local.depth == 0:
            held = time.perf_counter() - self._local.t0
            self.holds.append(held)
            self.cpu_holds.append(time.thread_time() - self._local.c0)
            if held > self.longest:
                self.longest = held
                self.longest_by = threading.current_thread().name
        self._lock.release()

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()


def timed_catalog():
    from miotui.catalog import Catalog

    class TimedCatalog(Catalog):
        """Notes when each marker layer gets its row (the moment the UI could show it)."""

        def __init__(self) -> None:
            super().__init__()
            self.lock = TimedLock()  # type: ignore[assignment]
            self.first_seen: dict[int, float] = {}

        def row_for(self, problem, line, file=""):  # type: ignore[no-untyped-def]
            n = getattr(problem, "n", 0)
            if n >= MARKER_BASE and not self.has_row(problem):
                self.first_seen.setdefault(n, time.monotonic())
            return super().row_for(problem, line, file)

    return TimedCatalog()


# ---------------------------------------------------------------------- the scanner alone

def bench_scanner(size: int) -> dict:
    from miotui.catalog import Catalog
    from miotui.formats.miopen.scan import LogScanner
    text = command_log(size)
    lines = text.count(b"\n")
    best = None
    for _ in range(2):
        scanner = LogScanner(Catalog(), "x")
        c0, t0 = time.process_time(), time.perf_counter()
        for i in range(0, len(text), 1 << 15):
            scanner.feed(text[i:i + (1 << 15)])
        scanner.finish()
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        if best is None or cpu < best[0]:
            best = (cpu, wall)
    assert best is not None
    cpu, wall = best
    return {"what": "LogScanner alone, Command-line log, 32 KB pieces (best of 2)", "mb": round(len(text) / MB, 1),
            "mb_per_cpu_s": round(len(text) / MB / cpu, 1), "lines_per_cpu_s": round(lines / cpu),
            "mb_per_wall_s": round(len(text) / MB / wall, 1), "load": load()}


# ---------------------------------------------------------------------- live: N ranks written at a rate

def writer_child(folder: str, ranks: int, rate_mb: float, seconds: float, marker_every: float, out: str) -> None:
    """A job of ``ranks`` processes, each appending its log at ``rate_mb`` MB/s."""
    text = command_log(16 * MB)
    fds = [os.open(os.path.join(folder, f"rank{r}.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
           for r in range(ranks)]
    pos = [(len(text) * r // ranks) for r in range(ranks)]
    pos = [text.find(b"\n", p) + 1 for p in pos]
    written = [0] * ranks
    rate = rate_mb * MB
    markers: list[tuple[int, int, float]] = []
    next_marker = [marker_every * (1 + r / ranks) for r in range(ranks)]
    serial = MARKER_BASE
    print("ready", flush=True)
    start = time.monotonic()
    while True:
        now = time.monotonic()
        elapsed = now - start
        if elapsed > seconds:
            break
        for r in range(ranks):
            due = int(elapsed * rate) - written[r]
            if due > 0:
                end = text.find(b"\n", pos[r] + due)
                if end < 0:
                    pos[r] = 0
                    end = text.find(b"\n", due)
                end += 1
                os.write(fds[r], text[pos[r]:end])
                written[r] += end - pos[r]
                pos[r] = end
            if elapsed >= next_marker[r]:
                serial += 1
                line = MARKER.format(n=serial).encode()
                os.write(fds[r], line)
                markers.append((serial, r, time.monotonic()))
                written[r] += len(line)
                next_marker[r] += marker_every
        time.sleep(max(0.0, 0.01 - (time.monotonic() - now)))
    for fd in fds:
        os.close(fd)
    with open(out, "w") as fh:
        json.dump({"markers": markers, "written": written, "seconds": time.monotonic() - start}, fh)


def scratch_dir() -> str | None:
    """tmpfs where there is one: at 80 MB/s a disk's writeback throttles the writer, not the reader."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


class GcClock:
    """Pauses of the cyclic garbage collector (they happen inside whatever holds the lock)."""

    def __init__(self) -> None:
        import gc
        self.pauses: list[tuple[int, float]] = []
        self._t0 = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.pauses.append((info["generation"], time.perf_counter() - self._t0))

    def summary(self) -> dict:
        full = [t for g, t in self.pauses if g == 2]
        return {"collections": len(self.pauses), "full": len(full),
                "longest_ms": round(max((t for _, t in self.pauses), default=0) * 1000, 1),
                "longest_full_ms": round(max(full, default=0) * 1000, 1)}


def bench_live(ranks: int, rate: float, seconds: float, marker_every: float, drain_s: float) -> dict:
    from miotui.formats import FORMATS
    from miotui.sources.follow import LogReader
    gc_clock = GcClock()
    with tempfile.TemporaryDirectory(prefix="miotui-bench-follow-", dir=scratch_dir()) as folder:
        for r in range(ranks):
            open(os.path.join(folder, f"rank{r}.log"), "wb").close()
        cat = timed_catalog()
        reader = LogReader(cat, [os.path.join(folder, "rank*.log")], follow=True, formats=FORMATS)
        reader.start()
        poller_waits: list[float] = []
        stop = threading.Event()

        def poller() -> None:   # what the app's poller does, every 100 ms
            version = 0
            while not stop.wait(0.1):
                t0 = time.perf_counter()
                version, _ = cat.changed_since(version)
                poller_waits.append(time.perf_counter() - t0)

        poll_thread = threading.Thread(target=poller, daemon=True)
        poll_thread.start()
        out = os.path.join(folder, "writer.json")
        proc = subprocess.Popen([sys.executable, __file__, "--writer-child", folder, str(ranks), str(rate),
                                 str(seconds), str(marker_every), out], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        c0, t0 = time.process_time(), time.monotonic()
        samples: list[dict[str, tuple[float, float]]] = []
        threads = threading.active_count()
        at_start: dict[str, int] = {}
        while proc.poll() is None:
            time.sleep(0.5)
            threads = max(threads, threading.active_count())
            stats = reader.source_stats()
            if not at_start and time.monotonic() - t0 > 2.0:   # past the start-up (imports, first layers)
                at_start = {os.path.basename(s.path): s.bytes for s in stats}
                lines_start = {os.path.basename(s.path): s.lines for s in stats}
                measured_from = time.monotonic()
            if at_start:
                samples.append({os.path.basename(s.path): (s.bytes_per_s, s.lines_per_s) for s in stats})
        write_end = time.monotonic()
        cpu_writing = time.process_time() - c0
        at_end = {os.path.basename(s.path): (s.bytes, s.lines) for s in reader.source_stats()}
        with open(out) as fh:
            wrote = json.load(fh)
        sizes = {f"rank{r}.log": os.path.getsize(os.path.join(folder, f"rank{r}.log")) for r in range(ranks)}
        behind_at_end = {os.path.basename(s.path): sizes[os.path.basename(s.path)] - s.bytes
                         for s in reader.source_stats()}
        caught_up = None
        while time.monotonic() - write_end < drain_s:
            if all(sizes[os.path.basename(s.path)] == s.bytes for s in reader.source_stats()):
                caught_up = time.monotonic() - write_end
                break
            time.sleep(0.05)
        final = reader.source_stats()
        stop.set()
        poll_thread.join(1)
        reader.stop()
        markers = wrote["markers"]
        lat = [(cat.first_seen[n] - t) * 1000 for n, _, t in markers if n in cat.first_seen]
        unseen = sum(1 for n, _, _ in markers if n not in cat.first_seen)
        per_rank = {}
        span = write_end - measured_from if at_start else float("nan")
        for name in sorted(sizes):
            bps = [s[name][1] for s in samples if name in s]
            per_rank[name] = {
                "written_mb_per_s": round(wrote["written"][int(name[4:-4])] / MB / wrote["seconds"], 2),
                "read_mb_per_s": round((at_end[name][0] - at_start.get(name, 0)) / MB / span, 2),
                "read_lines_per_s": round((at_end[name][1] - lines_start.get(name, 0)) / span) if at_start else 0,
                "source_stats_lines_per_s_median": round(statistics.median(bps)) if bps else 0,
                "behind_mb_at_writer_end": round(behind_at_end[name] / MB, 1)}
        holds = cat.lock.holds
        return {
            "what": f"{ranks} ranks x {rate} MB/s of Command lines for {seconds:.0f} s, a new layer per rank "
                    f"every {marker_every} s",
            "per_rank": per_rank,
            "total_read_mb_per_s": round(sum(v["read_mb_per_s"] for v in per_rank.values()), 1),
            "caught_up_s_after_writer_end": None if caught_up is None else round(caught_up, 2),
            "still_behind_mb_after_drain": round(sum(sizes[os.path.basename(s.path)] - s.bytes
                                                     for s in final) / MB, 1),
            "new_layer_ms": {"n": len(lat), "p50": round(pct(lat, 0.5), 1), "p95": round(pct(lat, 0.95), 1),
                             "max": round(max(lat), 1) if lat else None, "not_seen_in_time": unseen},
            "catalog_lock_hold_ms": {"n": len(holds), "p50": round(pct(holds, 0.5) * 1000, 2),
                                     "p99": round(pct(holds, 0.99) * 1000, 2),
                                     "max": round(cat.lock.longest * 1000, 2), "max_by": cat.lock.longest_by,
                                     "max_cpu_of_holder": round(max(cat.lock.cpu_holds, default=0) * 1000, 2)},
            "reader_longest_feed_ms": round(reader.longest_feed_s * 1000, 2),
            "gc": gc_clock.summary(),
            "poller_lock_wait_ms": {"p95": round(pct(poller_waits, 0.95) * 1000, 2),
                                    "max": round(max(poller_waits) * 1000, 2) if poller_waits else None},
            "reader_process_cpu_percent": round(100 * cpu_writing / (write_end - t0), 1),
            "hosts": sorted({h for s in reader.source_stats() for h in s.hosts}),
            "threads_while_reading": threads,
            "dir": folder,
            "load": load(),
        }


# ---------------------------------------------------------------------- idle: many files, nothing written

def bench_idle(files: int, seconds: float, *, inotify: bool = True, settle: float = 60.0) -> dict:
    """The reader and the app's poller (``miotui.views.poller.Poller``, taking every poll at once as
    the UI does) following ``files`` idle files; ``inotify=False`` is the baseline, polling
    alone (what a network file system or a system without inotify gets)."""
    from unittest import mock

    from miotui.catalog import Catalog
    from miotui.formats import FORMATS
    from miotui.sources import follow
    from miotui.views.poller import Poller
    body = command_log(4096)
    with tempfile.TemporaryDirectory(prefix="miotui-bench-idle-") as folder:
        for i in range(files):
            with open(os.path.join(folder, f"rank{i:05d}.log"), "wb") as fh:
                fh.write(body)
        threads_before = threading.active_count()
        catalog = Catalog()
        patch = mock.patch.object(follow, "open_watcher", return_value=None) if not inotify else mock.MagicMock()
        with patch:
            reader = follow.LogReader(catalog, [os.path.join(folder, "rank*.log")], follow=True, formats=FORMATS)
            poller: Poller

            def post(data) -> None:
                poller.ack()

            poller = Poller(catalog, reader, post)
            t0 = time.monotonic()
            reader.start()
            poller.start()
            while not (len(reader.sources) == files and reader.initial_scan[2]):
                time.sleep(0.05)
            initial = time.monotonic() - t0
            time.sleep(settle)   # idle files are looked at less and less often: past the back-off
            c0, w0 = time.process_time(), time.monotonic()
            time.sleep(seconds)
            cpu, wall = time.process_time() - c0, time.monotonic() - w0
            threads = threading.active_count() - threads_before
            poller.stop()
            reader.stop()
    how = "inotify, idle files backed off" if inotify else "baseline: polling alone (no inotify)"
    return {"what": f"{files} idle files followed through one glob, reader + poller, {how}",
            "initial_read_s": round(initial, 2), "settle_s": settle, "idle_seconds": round(wall, 1),
            "cpu_s": round(cpu, 3), "cpu_percent_of_a_core": round(100 * cpu / wall, 2),
            "threads": threads, "load": load()}


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each thread of this process, by thread name (Linux /proc)."""
    names = {str(t.native_id): t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as fh:
                text = fh.read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        name = names.get(tid, "other")
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def bench_app_idle(files: int, seconds: float, *, inotify: bool = True, settle: float = 60.0) -> dict:
    """The whole app (Textual, headless, as ``miotui --follow 'rank*.log'``) following
    ``files`` idle files: the process's CPU seconds over ``seconds``, and per thread."""
    import asyncio
    from unittest import mock

    from miotui.app import MiotuiApp
    from miotui.sources import follow
    result: dict = {}

    async def run(folder: str) -> None:
        app = MiotuiApp([os.path.join(folder, "rank*.log")], follow=True, find_job=False)
        async with app.run_test(size=(160, 45)) as pilot:
            t0 = time.monotonic()
            while len(app.layers_screen.table.model.rows) < files:
                await pilot.pause(0.2)
            result["initial_read_s"] = round(time.monotonic() - t0, 2)
            await pilot.pause(settle)
            before, c0, w0 = thread_cpu(), time.process_time(), time.monotonic()
            await pilot.pause(seconds)
            cpu, wall, after = time.process_time() - c0, time.monotonic() - w0, thread_cpu()
            result.update(idle_seconds=round(wall, 1), cpu_s=round(cpu, 3),
                          cpu_percent_of_a_core=round(100 * cpu / wall, 2),
                          by_thread={k: round(v - before.get(k, 0.0), 3) for k, v in after.items()
                                     if v - before.get(k, 0.0) > 0})

    with tempfile.TemporaryDirectory(prefix="miotui-bench-app-idle-") as folder:
        for i in range(files):
            with open(os.path.join(folder, f"rank{i:05d}.log"), "w") as fh:
                fh.write(MARKER.format(n=i + 1))
        patch = mock.patch.object(follow, "open_watcher", return_value=None) if not inotify else mock.MagicMock()
        with patch:
            asyncio.run(run(folder))
    how = "inotify, idle files backed off" if inotify else "baseline: polling alone (no inotify)"
    return {"what": f"the app following {files} idle files (one layer each), {how}", "settle_s": settle,
            **result, "load": load()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("scanner", "live", "idle", "app-idle"), action="append")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--rate", type=float, default=10.0, help="MB/s per rank")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--marker-every", type=float, default=0.25)
    ap.add_argument("--drain", type=float, default=30.0, help="seconds allowed to catch up after the writer stops")
    ap.add_argument("--idle-files", type=int, default=1000)
    ap.add_argument("--idle-seconds", type=float, default=30.0)
    ap.add_argument("--idle-settle", type=float, default=60.0, help="seconds idle before measuring")
    ap.add_argument("--writer-child", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.writer_child:
        folder, ranks, rate, seconds, every, out = args.writer_child
        writer_child(folder, int(ranks), float(rate), float(seconds), float(every), out)
        return
    parts = args.only or ["scanner", "live", "idle", "app-idle"]
    print(json.dumps({"start": load()}))
    if "scanner" in parts:
        print(json.dumps(bench_scanner(32 * MB), indent=1), flush=True)
    if "live" in parts:
        print(json.dumps(bench_live(args.ranks, args.rate, args.seconds, args.marker_every, args.drain), indent=1),
              flush=True)
    if "idle" in parts:
        for inotify in (False, True):
            print(json.dumps(bench_idle(args.idle_files, args.idle_seconds, inotify=inotify,
                                         settle=args.idle_settle), indent=1), flush=True)
    if "app-idle" in parts:
        for inotify in (False, True):
            print(json.dumps(bench_app_idle(args.idle_files, args.idle_seconds, inotify=inotify,
                                            settle=args.idle_settle), indent=1), flush=True)


if __name__ == "__main__":
    main()

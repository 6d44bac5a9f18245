#!/usr/bin/env python3
"""Decode throughput benchmark: wall time, MB/s and peak RSS of ``miotui decode`` on a big log.

Why: miotui must keep up with multi-gigabyte training logs, so decode speed and memory are
measured on the real CLI, in a fresh process, on a log of realistic shape.  The log is
generated once (``miotui.samplegen``, default 1 GiB of the ``trace55`` API-trace format,
the most verbose one) under ``benchmarks/out/`` (git-ignored) and reused afterwards.

Peak RSS comes from GNU ``/usr/bin/time -v`` when it exists (the kernel's own maximum of
the decoder process), otherwise from polling the process tree with psutil every 50 ms.

Examples::

    python benchmarks/bench_decode.py                       # 1G trace55, json output
    python benchmarks/bench_decode.py --size 200M --format command --format info
    python benchmarks/bench_decode.py --generate-only       # just (re)build the log, report the speed
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from miotui import samplegen  # noqa: E402

OUT_DIR = os.path.join(ROOT, "benchmarks", "out")
GNU_TIME = "/usr/bin/time"


@dataclass(frozen=True)
class Generated:
    path: str
    bytes: int
    seconds: float | None  # None: reused an existing file

    @property
    def mb_per_s(self) -> float | None:
        return None if not self.seconds else self.bytes / 1e6 / self.seconds


@dataclass(frozen=True)
class DecodeRun:
    log_format: str
    log_bytes: int
    wall_s: float
    mb_per_s: float
    peak_rss_mb: float | None
    rss_source: str
    exit_code: int
    output_bytes: int
    stderr_tail: str
    loop_mb_per_s: float | None = None   # a plain Python line loop over the same file, same run

    @property
    def ratio(self) -> float | None:
        """decode speed / line-loop speed: what holds on a noisy host."""
        return None if not self.loop_mb_per_s else self.mb_per_s / self.loop_mb_per_s


def size_label(size: int) -> str:
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size % mult == 0:
            return f"{size // mult}{unit}"
    return str(size)


def ensure_log(fmt: str, size: int, *, regenerate: bool = False, seed: int = 0) -> Generated:
    """The benchmark log for (format, size), generated if missing."""
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, f"resnet50_{fmt}_{size_label(size)}.log")
    if os.path.exists(path) and not regenerate:
        return Generated(path, os.path.getsize(path), None)
    spec = samplegen.SampleSpec(format=fmt, size=size, seed=seed)
    t0 = time.perf_counter()
    n = samplegen.write_log(spec, path)
    return Generated(path, n, time.perf_counter() - t0)


def _parse_gnu_time(text: str) -> float | None:
    m = re.search(r"Maximum resident set size \(kbytes\):\s*(\d+)", text)
    return int(m.group(1)) / 1024 if m else None


def _poll_peak_rss(proc: subprocess.Popen) -> float:
    """Largest summed RSS of the process and its children while it runs (MB)."""
    import psutil

    peak = 0
    try:
        p = psutil.Process(proc.pid)
    except psutil.Error:
        return 0.0
    while proc.poll() is None:
        try:
            total = p.memory_info().rss + sum(c.memory_info().rss for c in p.children(recursive=True))
            peak = max(peak, total)
        except psutil.Error:
            pass
        time.sleep(0.05)
    return peak / (1 << 20)


def run_decode(log: Generated, fmt: str, out_format: str, *, use_gnu_time: bool = True,
               timeout: float | None = None) -> DecodeRun:
    """Run ``python -m miotui decode LOG --format OUT -o FILE`` in a fresh process."""
    out_path = os.path.join(OUT_DIR, f"decode_{fmt}.{out_format}")
    cmd = [sys.executable, "-m", "miotui", "decode", log.path, "--format", out_format, "-o", out_path]
    stats_path = os.path.join(OUT_DIR, "gnu_time.txt")
    gnu = use_gnu_time and os.access(GNU_TIME, os.X_OK)
    if gnu:
        cmd = [GNU_TIME, "-v", "-o", stats_path, *cmd]
    if os.path.exists(out_path):
        os.remove(out_path)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if gnu:
        _, err = proc.communicate(timeout=timeout)
        wall = time.perf_counter() - t0
        try:
            with open(stats_path, encoding="utf-8") as fh:
                peak = _parse_gnu_time(fh.read())
        except OSError:
            peak = None
        source = "/usr/bin/time -v"
    else:
        peak = _poll_peak_rss(proc)
        _, err = proc.communicate(timeout=timeout)
        wall = time.perf_counter() - t0
        source = "psutil polling"
    out_bytes = os.path.getsize(out_path) if os.path.exists(out_path) else 0
    return DecodeRun(fmt, log.bytes, wall, log.bytes / 1e6 / wall if wall else 0.0, peak, source,
                     proc.returncode, out_bytes, "\n".join((err or "").strip().splitlines()[-5:]))


_LINE_LOOP = "import sys\nfor line in open(sys.argv[1], encoding='utf-8', errors='replace'):\n    pass"


def line_loop_mb_per_s(path: str) -> float:
    """The plain-Python ``for line in file`` rate of ``path`` in a fresh process (the floor
    every decode figure is compared with: same file, same host, same minute)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", _LINE_LOOP, path], check=True)
    return os.path.getsize(path) / 1e6 / (time.perf_counter() - t0)


def print_table(gens: list[tuple[str, Generated]], runs: list[DecodeRun]) -> None:
    print(f"{'format':<10} {'log MB':>9} {'gen s':>7} {'gen MB/s':>9}")
    for fmt, g in gens:
        gs = "reused" if g.seconds is None else f"{g.seconds:.2f}"
        gm = "" if g.mb_per_s is None else f"{g.mb_per_s:.0f}"
        print(f"{fmt:<10} {g.bytes / 1e6:>9.1f} {gs:>7} {gm:>9}")
    if not runs:
        return
    print()
    print(f"{'format':<10} {'log MB':>9} {'decode s':>9} {'MB/s':>7} {'loop MB/s':>10} {'ratio':>6} "
          f"{'peak RSS MB':>12} {'exit':>5} {'out KB':>8}  rss from")
    for r in runs:
        rss = "?" if r.peak_rss_mb is None else f"{r.peak_rss_mb:.0f}"
        loop = "?" if r.loop_mb_per_s is None else f"{r.loop_mb_per_s:.0f}"
        ratio = "?" if r.ratio is None else f"{r.ratio:.2f}"
        print(f"{r.log_format:<10} {r.log_bytes / 1e6:>9.1f} {r.wall_s:>9.2f} {r.mb_per_s:>7.1f} {loop:>10} "
              f"{ratio:>6} {rss:>12} {r.exit_code:>5} {r.output_bytes / 1024:>8.0f}  {r.rss_source}")
        if r.exit_code != 0 and r.stderr_tail:
            print("  stderr: " + r.stderr_tail.replace("\n", "\n          "))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=samplegen.parse_size, default=1 << 30, help="log size (default 1G)")
    ap.add_argument("--format", action="append", choices=samplegen.FORMATS, dest="formats",
                    help="log format(s) to benchmark (default trace55; repeatable)")
    ap.add_argument("--decode-format", default="json", choices=("json", "table", "csv", "driver"),
                    help="miotui decode --format (default json)")
    ap.add_argument("--regenerate", action="store_true", help="rebuild the log even if it exists")
    ap.add_argument("--generate-only", action="store_true", help="build the log(s) and report generation speed only")
    ap.add_argument("--psutil", action="store_true", help="measure RSS by psutil polling, not /usr/bin/time")
    ap.add_argument("--timeout", type=float, default=None, help="give up on a decode after this many seconds")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--repeat", type=int, default=3, help="decode and line-loop runs per format, best kept (default 3)")
    ns = ap.parse_args(argv)
    formats = ns.formats or ["trace55"]
    gens = [(fmt, ensure_log(fmt, ns.size, regenerate=ns.regenerate)) for fmt in formats]
    runs: list[DecodeRun] = []
    if not ns.generate_only:
        for fmt, g in gens:
            # decode and line loop alternate, best of --repeat each: on a shared host the two
            # then see the same minutes, and the ratio of the bests is what holds
            best, loop = None, 0.0
            for _ in range(ns.repeat):
                run = run_decode(g, fmt, ns.decode_format, use_gnu_time=not ns.psutil, timeout=ns.timeout)
                if best is None or run.wall_s < best.wall_s:
                    best = run
                loop = max(loop, line_loop_mb_per_s(g.path))
            runs.append(dataclasses.replace(best, loop_mb_per_s=loop))
    print_table(gens, runs)
    if ns.json:
        with open(ns.json, "w", encoding="utf-8") as fh:
            json.dump({"generated": [dict(format=f, path=g.path, bytes=g.bytes, seconds=g.seconds) for f, g in gens],
                       "decode": [asdict(r) for r in runs]}, fh, indent=2)
    return 0 if all(r.exit_code == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""One big log decoded in byte ranges at once (``miotui.decoding.ranges``): wall time and peak
memory per worker for 1 and 2 workers, each next to the plain ``for line in file`` loop over
the same file in the same run; and the ``MIOpen:`` prefix (ROCm 7) next to ``MIOpen(HIP):``.

Why: the issue's targets are relative to the line loop (a Command-line log at >= 0.6x its
speed on 2 workers, an API trace at >= 0.5x) and the bare prefix within 10% of the old one;
only numbers from the same run on the same machine can be compared.  Each decode runs in a
fresh process; ``ranges`` says whether the seams agreed (else the file was decoded serially,
and the time is the serial one).  Peak memory: the parent's and the largest worker's
(``RUSAGE_CHILDREN``, so the workers are forked here rather than started by the forkserver
``miotui decode`` uses), in MB.

Logs are generated once (``miotui.samplegen``) under ``benchmarks/out/`` (git-ignored)::

    python benchmarks/bench_decode_ranges.py --size 200M
    python benchmarks/bench_decode_ranges.py --size 1G --repeat 3 --info
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from miotui.samplegen.cli import main as samplegen_main  # noqa: E402
from miotui.samplegen.generator import parse_size  # noqa: E402

OUT_DIR = os.path.join(ROOT, "benchmarks", "out")

#: what one measurement runs in a fresh process: the decode, whether ranges were used, memory
_DECODE = """
import json, multiprocessing, resource, sys, time
from miotui.decoding.ranges import decode_file_in_ranges
from miotui.decoding.whole import decode_paths
path, workers = sys.argv[1], int(sys.argv[2])
t = time.perf_counter()
fork = multiprocessing.get_context("fork")
catalog = decode_file_in_ranges(path, workers, pool_context=fork) if workers > 1 else None
ranges = catalog is not None
if catalog is None:
    catalog = decode_paths([path])
wall = time.perf_counter() - t
print(json.dumps({"wall_s": wall, "ranges": ranges, "layers": len(catalog), "lines": catalog.lines,
                  "rss_parent_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def ensure(fmt: str, size: int, elapsed: bool, bare: bool = False) -> str:
    os.makedirs(OUT_DIR, exist_ok=True)
    name = f"ranges-{fmt}-{size >> 20}M{'-elapsed' if elapsed else ''}{'-bare' if bare else ''}.log"
    path = os.path.join(OUT_DIR, name)
    if os.path.exists(path):
        return path
    if bare:
        hip = ensure(fmt, size, elapsed)
        with open(hip, "rb") as src, open(path + ".tmp", "wb") as dst:
            for block in iter(lambda: src.read(1 << 24), b""):
                dst.write(block.replace(b"MIOpen(HIP)", b"MIOpen"))
    else:
        samplegen_main(["--format", fmt, "--size", str(size), "--elapsed" if elapsed else "--no-elapsed",
                        "--out", path + ".tmp", "--quiet"])
    os.replace(path + ".tmp", path)
    return path


def line_loop(path: str) -> float:
    """The plain baseline: every line of the file read as text, nothing done with it."""
    t = time.perf_counter()
    with open(path, encoding="utf-8", errors="replace") as fh:
        for _line in fh:
            pass
    return time.perf_counter() - t


def decode(path: str, workers: int) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", _DECODE, path, str(workers)], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout)


def prefix_cpu(hip: str, bare: str, runs: int = 7, size: int = 32 << 20) -> None:
    """The two prefixes' serial decode in this process, CPU seconds (less moved by the other
    processes on a shared host than wall time), alternating, on the first ``size`` bytes."""
    from miotui.catalog import Catalog
    from miotui.decoding.whole import decode_stream
    texts = {}
    for label, path in (("MIOpen(HIP):", hip), ("MIOpen:", bare)):
        with open(path, "rb") as fh:
            texts[label] = fh.read(size)
    times: dict[str, list[float]] = {label: [] for label in texts}
    for _ in range(runs):
        for label, data in texts.items():
            t = time.process_time()
            decode_stream(Catalog(), io.BytesIO(data))
            times[label].append(time.process_time() - t)
    best = {label: min(v) for label, v in times.items()}
    median = {label: sorted(v)[len(v) // 2] for label, v in times.items()}
    print(f"\nprefix, serial CPU time on the first {size >> 20} MB, {runs} alternating runs: " + ", ".join(
        f"{label} best {best[label]:.3f} s median {median[label]:.3f} s" for label in texts)
        + f"; MIOpen: / MIOpen(HIP): best {best['MIOpen:'] / best['MIOpen(HIP):']:.3f}, "
          f"median {median['MIOpen:'] / median['MIOpen(HIP):']:.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=parse_size, default=parse_size("200M"), help="log size (default 200M)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each measurement; the best is kept")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts (default 1 2)")
    ap.add_argument("--no-prefix", dest="prefix", action="store_false",
                    help="leave out the MIOpen: / MIOpen(HIP): comparison (timed Command-line logs)")
    ap.add_argument("--prefix-only", action="store_true", help="only the MIOpen: / MIOpen(HIP): comparison")
    ap.add_argument("--info", action="store_true", help="also a level-6 Info + Command log")
    ns = ap.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f}  cores: {os.cpu_count()}")
    cases = [] if ns.prefix_only else [("Command lines", ensure("command", ns.size, False)),
                                       ("API trace", ensure("trace55", ns.size, False))]
    if ns.info and not ns.prefix_only:
        cases.append(("level-6 Info + Command", ensure("info", ns.size, False)))
    if ns.prefix or ns.prefix_only:
        cases += [("Command lines, MIOpen(HIP) + elapsed", ensure("command", ns.size, True)),
                  ("Command lines, MIOpen: + elapsed", ensure("command", ns.size, True, bare=True))]
    for label, path in cases:
        size_mb = os.path.getsize(path) / 1e6
        loop = min(line_loop(path) for _ in range(ns.repeat))
        print(f"\n{label}: {size_mb:.0f} MB  line loop {loop:.2f} s ({size_mb / loop:.0f} MB/s)")
        for n in ns.workers:
            runs = [decode(path, n) for _ in range(ns.repeat)]
            best = min(runs, key=lambda r: r["wall_s"])
            print(f"  {n} worker(s): {best['wall_s']:.2f} s ({size_mb / best['wall_s']:.0f} MB/s) "
                  f"= {loop / best['wall_s']:.2f}x the line loop; ranges used: {best['ranges']}; "
                  f"peak RSS parent {best['rss_parent_mb']:.0f} MB, largest worker {best['rss_worker_mb']:.0f} MB; "
                  f"{best['layers']} layers, {best['lines']:,} lines")
    if ns.prefix or ns.prefix_only:
        prefix_cpu(cases[-2][1], cases[-1][1])
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

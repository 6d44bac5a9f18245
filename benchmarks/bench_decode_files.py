#!/usr/bin/env python3
"""Several files: wall time of ``miotui decode F1 ... FN`` with ``--jobs 1`` (one after the
other) and ``--jobs N`` (one worker process per file), and a check that both print the same.

Why: a node's logs come as one file per rank or process; decoding them is pure-Python work,
so only processes use more than one core.  The files are generated once (``miotui.samplegen``,
the same network with a different seed and batch per file, so most layers are in every file)
under ``benchmarks/out/`` (git-ignored) and reused.  Each run is a fresh CLI process, so the
times include the interpreter's and the workers' start.

Examples::

    python benchmarks/bench_decode_files.py                        # as many 50 MB files as cores
    python benchmarks/bench_decode_files.py --files 4 --size 200M --format info
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from miotui import samplegen  # noqa: E402

OUT_DIR = os.path.join(ROOT, "benchmarks", "out")


def size_label(size: int) -> str:
    return f"{size / (1 << 20):g}M"


def ensure_files(fmt: str, size: int, count: int) -> list[str]:
    """``count`` logs of ``size`` bytes, generated if missing."""
    os.makedirs(OUT_DIR, exist_ok=True)
    paths = []
    for i in range(count):
        path = os.path.join(OUT_DIR, f"rank{i}_{fmt}_{size_label(size)}.log")
        if not os.path.exists(path):
            samplegen.write_log(samplegen.SampleSpec(format=fmt, size=size, seed=i, batch=(32, 16)[i % 2]), path)
        paths.append(path)
    return paths


def decode(paths: list[str], jobs: int) -> tuple[float, dict]:
    """(wall seconds, the JSON document without its own ``seconds``)."""
    cmd = [sys.executable, "-m", "miotui", "decode", *paths, "--format", "json", "--jobs", str(jobs)]
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - start
    doc = json.loads(out)
    del doc["stats"]["seconds"]
    return wall, doc


def _wall(run: tuple[float, dict]) -> float:
    return run[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=os.cpu_count() or 1, help="how many files (default: the cores)")
    p.add_argument("--size", type=samplegen.parse_size, default=50_000_000, help="bytes per file (default 50M)")
    p.add_argument("--format", default="trace55", choices=samplegen.FORMATS)
    p.add_argument("--repeat", type=int, default=1, help="runs of each, alternating; the fastest is shown (a busy "
                                                         "host's noise only ever adds time)")
    ns = p.parse_args(argv)
    paths = ensure_files(ns.format, ns.size, ns.files)
    serial_runs, parallel_runs = [], []
    for _ in range(ns.repeat):
        serial_runs.append(decode(paths, 1))
        parallel_runs.append(decode(paths, ns.files))
    (serial_s, serial), (parallel_s, parallel) = min(serial_runs, key=_wall), min(parallel_runs, key=_wall)
    total_mb = sum(os.path.getsize(path) for path in paths) / 1e6
    print(f"{ns.files} files x {size_label(ns.size)} {ns.format} ({total_mb:.0f} MB), {os.cpu_count()} cores: "
          f"--jobs 1 {serial_s:.2f} s ({total_mb / serial_s:.0f} MB/s), --jobs {ns.files} {parallel_s:.2f} s "
          f"({total_mb / parallel_s:.0f} MB/s), x{serial_s / parallel_s:.2f}; "
          f"same output: {'yes' if serial == parallel else 'NO'}")
    return 0 if serial == parallel else 1


if __name__ == "__main__":
    sys.exit(main())

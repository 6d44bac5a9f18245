#!/usr/bin/env python3
"""``miotui diff OLD NEW``: wall time of the whole command (both logs decoded, paired, the JSON
written) next to the plain baseline of the same run, ``miotui decode`` of the NEW log alone.

Why that baseline: a diff is two decodes and a comparison; with two cores the two decodes
run at once (one process per file), so the diff should take about one decode, and what it
adds beyond that is the pairing and the output.  The logs are generated once
(``miotui.samplegen``: the same ResNet-50 at batch 32 and 16, different seeds, so the times
differ and ``--ignore-batch`` pairs every layer) under ``benchmarks/out/`` (git-ignored) and
reused.  Each run is a fresh CLI process: the times include the interpreter's start.

Examples::

    python benchmarks/bench_diff.py                     # two 200 MB level-6 Info logs
    python benchmarks/bench_diff.py --size 1G --format info
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# the several-files benchmark's setup: the project on the path, where logs are kept, their names
from bench_decode_files import OUT_DIR, ROOT, size_label

from miotui import samplegen


def ensure_logs(fmt: str, size: int) -> tuple[str, str]:
    """(OLD, NEW): ``size`` bytes each, batch 32 and 16, generated if missing."""
    os.makedirs(OUT_DIR, exist_ok=True)
    paths = []
    for seed, batch in ((0, 32), (1, 16)):
        path = os.path.join(OUT_DIR, f"diff_b{batch}_{fmt}_{size_label(size)}.log")
        if not os.path.exists(path):
            samplegen.write_log(samplegen.SampleSpec(format=fmt, size=size, seed=seed, batch=batch), path)
        paths.append(path)
    return paths[0], paths[1]


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - start, out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=samplegen.parse_size, default=200 << 20, help="bytes per log (default 200M)")
    p.add_argument("--format", default="info", choices=samplegen.FORMATS)
    p.add_argument("--repeat", type=int, default=1, help="runs of each; the fastest is shown")
    ns = p.parse_args(argv)
    old, new = ensure_logs(ns.format, ns.size)
    py = [sys.executable, "-m", "miotui"]
    diffs, decodes = [], []
    for _ in range(ns.repeat):
        decodes.append(timed([*py, "decode", new, "--format", "json"])[0])
        diffs.append(timed([*py, "diff", old, new, "--ignore-batch", "--format", "json"]))
    diff_s, out = min(diffs)
    decode_s = min(decodes)
    doc = json.loads(out)
    statuses = [pair["status"] for pair in doc["pairs"]]
    mb = (os.path.getsize(old) + os.path.getsize(new)) / 1e6
    print(f"diff of 2 x {size_label(ns.size)} {ns.format} ({mb:.0f} MB, {os.cpu_count()} cores): "
          f"{diff_s:.1f} s ({mb / diff_s:.0f} MB/s); baseline, decode of NEW alone: {decode_s:.1f} s; "
          f"ratio {diff_s / decode_s:.2f}; {len(statuses)} pairs, {statuses.count('added')} added, "
          f"{statuses.count('removed')} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""PyTorch profiler trace decode rate and peak memory against ``json.load`` of the same file.

Why: a trace is one JSON document; miotui reads it one event at a time so that memory does
not grow with the document's text.  The trace is the real DenseNet-121 H100 trace of the
tests (6.8 MB, one step), its event array repeated to ``--size`` (a profile of several steps).
Each is run in a fresh process, alternately, best of ``--repeat``: ``miotui decode`` of the
trace, and a plain baseline that parses the whole document with ``json.load`` and walks its
events.  Peak RSS from ``/usr/bin/time -f %M``.

    python benchmarks/bench_torch_profiler.py --size 200M --repeat 3
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRACE = os.path.join(ROOT, "tests", "data", "profiler", "profile_densenet121.json.gz")
BASELINE = "import json,sys\nwith open(sys.argv[1]) as fh: d = json.load(fh)\nn = sum(1 for e in d['traceEvents'])\n"


def make(size: int, path: str) -> int:
    """The trace with its events repeated until the file is about ``size`` bytes; its size."""
    text = gzip.decompress(open(TRACE, "rb").read()).decode()
    start = text.index("[", text.index('"traceEvents"')) + 1
    end = text.rindex("]")
    head, events, tail = text[:start], text[start:end].strip().rstrip(","), text[end:]
    copies = max(1, size // len(text))
    with open(path, "w") as fh:
        fh.write(head)
        fh.write(",\n".join([events] * copies))
        fh.write(tail)
    return os.path.getsize(path)


def run(argv: list[str]) -> float:
    """Wall seconds of a child process."""
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=ROOT))
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="50M")
    parser.add_argument("--repeat", type=int, default=3)
    ns = parser.parse_args()
    size = int(ns.size.rstrip("M")) << 20
    os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
    path = os.path.join(HERE, "out", "trace.json")
    n = make(size, path)
    best: dict[str, float] = {}
    for _ in range(ns.repeat):
        for name, argv in (("miotui decode", [sys.executable, "-m", "miotui", "decode", "--format", "json", path]),
                           ("json.load baseline", [sys.executable, "-c", BASELINE, path])):
            best[name] = min(best.get(name, float("inf")), run(argv))
    for name, wall in best.items():
        print(f"{name:20s} {n / wall / 1e6:8.1f} MB/s ({wall:.2f} s for {n / 1e6:.0f} MB)")
    for name, argv in (("miotui decode", [sys.executable, "-m", "miotui", "decode", "--format", "json", path]),
                       ("json.load baseline", [sys.executable, "-c", BASELINE, path])):
        out = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], check=True, capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=ROOT))
        print(f"{name:20s} peak RSS {int(out.stderr.strip().splitlines()[-1]) / 1024:.0f} MiB")


if __name__ == "__main__":
    main()

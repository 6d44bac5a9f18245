"""``sample_logs/generate.py``'s command line."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Sequence

from miotui.samplegen.generator import iter_chunks, parse_size, write_log
from miotui.samplegen.spec import FORMAT_DESCRIPTIONS, FORMATS, SampleSpec

# --------------------------------------------------------------------------------------
# Command line (sample_logs/generate.py is a thin wrapper around main)
# --------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="generate.py",
        description="Write a realistic synthetic MIOpen log of a ResNet-50 training run.",
        epilog="Formats: " + "; ".join(f"{k}: {v}" for k, v in FORMAT_DESCRIPTIONS.items()))
    ap.add_argument("--format", choices=FORMATS, default="trace55", help="log format (default trace55)")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--iterations", type=int, default=2, help="training iterations (default 2)")
    group.add_argument("--size", type=parse_size, help="stop at about this many bytes, e.g. 1G (binary units)")
    ap.add_argument("--batch", type=int, default=32, help="batch size N (default 32)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--level", type=int, choices=(5, 6), default=6, help="MIOPEN_LOG_LEVEL for --format info")
    el = ap.add_mutually_exclusive_group()
    el.add_argument("--elapsed", dest="elapsed", action="store_true", default=None,
                    help="add MIOPEN_ENABLE_LOGGING_ELAPSED_TIME's field (default: trace2x only)")
    el.add_argument("--no-elapsed", dest="elapsed", action="store_false")
    ap.add_argument("--startup", action="store_true",
                    help="--format info: the first iteration as MIOpen spends it (Find-Db misses, kernel compiles and "
                         "cache hits, tuning searches with heartbeats; the elapsed-time field on) and a "
                         "LogConvolutionExecution line per convolution")
    ap.add_argument("--no-inference", dest="inference", action="store_false",
                    help="leave out the final inference pass")
    ap.add_argument("--out", default="-", help="output file ('-' = stdout; '.gz' = gzip)")
    ap.add_argument("--quiet", action="store_true", help="do not report size and speed on stderr")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    try:
        spec = SampleSpec(format=ns.format, iterations=ns.iterations, size=ns.size, batch=ns.batch,
                          seed=ns.seed, level=ns.level, elapsed=ns.elapsed, inference=ns.inference,
                          startup=ns.startup)
    except ValueError as exc:
        print(f"generate: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    if ns.out == "-":
        out = sys.stdout.buffer
        written = 0
        for chunk in iter_chunks(spec):
            data = chunk.encode("utf-8")
            out.write(data)
            written += len(data)
        out.flush()
    else:
        directory = os.path.dirname(os.path.abspath(ns.out))
        os.makedirs(directory, exist_ok=True)
        written = write_log(spec, ns.out)
    dt = time.perf_counter() - t0
    if not ns.quiet:
        print(f"generate: {spec.format}: {written} bytes in {dt:.2f} s ({written / 1e6 / max(dt, 1e-9):.0f} MB/s)"
              f"{'' if ns.out == '-' else ' -> ' + ns.out}", file=sys.stderr)
    return 0

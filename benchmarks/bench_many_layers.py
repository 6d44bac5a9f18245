"""A log of many unique layers (a shape-varying job, a fuzzer): decode time and peak memory.

    python benchmarks/bench_many_layers.py [--layers 200000] [--format json --format table]

Writes a log of N distinct Command lines (every line a new layer), then runs
``miotui decode --format F`` on it in a fresh process per format and reports wall time and
peak RSS (that child's own ``ru_maxrss``).  Target (the hostile-input issue): 200,000 layers in
< 10 s and < 600 MB for json and table.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


def write_log(path: str, layers: int) -> int:
    with open(path, "w") as fh:
        for i in range(layers):
            n, c, k = 1 + i % 64, 3 + (i // 64) % 512, 8 + (i // 32768) % 64
            fh.write(f"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {n} -c {c} -H 32 -W 32 "
                     f"-k {k} -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")
    return os.path.getsize(path)


def measure(path: str, fmt: str) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, the child's own peak RSS in MB): ``os.wait4`` gives the
    rusage of that one child (``RUSAGE_CHILDREN`` would be the largest of every child so far).
    CPU seconds (user + system) leave out the time a shared host gives to other guests."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "miotui", "decode", path, "--format", fmt, "-o", os.devnull],
                                stdout=subprocess.DEVNULL, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(err.read().decode()[-2000:])
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=200_000)
    ap.add_argument("--format", action="append", choices=("json", "table", "csv", "driver"))
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "many.log")
        size = write_log(path, ns.layers)
        print(f"{ns.layers:,} unique layers, {size / 1e6:.1f} MB")
        for fmt in ns.format or ["json", "table"]:
            wall, cpu, peak_mb = measure(path, fmt)
            print(f"  decode --format {fmt:6s} {wall:7.2f} s wall  {cpu:7.2f} s CPU   peak RSS {peak_mb:7.0f} MB")


if __name__ == "__main__":
    main()

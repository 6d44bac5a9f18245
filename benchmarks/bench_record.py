#!/usr/bin/env python3
"""Record benchmark (run by hand): how fast ``miotui record``'s recorder takes a job's output,
next to the plain baseline of the same job writing straight into a file (``2> file``).

A writer child process writes ``--mb`` megabytes of MIOpen ``Command`` lines (with a few of
its own lines between them) to stderr, as fast as it can, in 64 KB writes.  Two ways, run
alternately ``--repeat`` times (best of each reported, this host's speed swings):

``file``      the child's stdout and stderr are a file (what ``python train.py 2> log`` does): the
              ceiling, nothing reads the output;
``recorder``  :class:`miotui.record_job.RecordedJob`: the child's output is a pipe read by the
              pump thread, appended to the log file, and its non-MIOpen lines kept for the pane.

Reported: MB/s for each (bytes over the child's wall time from start to exit), the ratio, and
the CPU seconds this process (the pump) spent per 100 MB recorded.

    python benchmarks/bench_record.py --mb 200 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from miotui.record_job import RecordedJob

LINE = (b"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 64 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 "
        b"-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")
WRITER = """
import os, sys
line, own, total = {line!r}, b"epoch 1 step 10 loss 0.25\\n", {total}
block = (line * 99 + own) * 4
written = 0
while written < total:
    n = os.write(2, block)
    written += n
"""


def run_file(folder: str, total: int) -> float:
    path = os.path.join(folder, "plain.log")
    with open(path, "wb") as fh:
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", WRITER.format(line=LINE, total=total)], stdout=fh, stderr=fh,
                       check=True)
        took = time.monotonic() - t0
    assert os.path.getsize(path) >= total
    os.unlink(path)
    return took


def run_recorder(folder: str, total: int) -> tuple[float, float]:
    path = os.path.join(folder, "recorded.log")
    job = RecordedJob([sys.executable, "-c", WRITER.format(line=LINE, total=total)], dict(os.environ), path)
    cpu0 = time.process_time()
    t0 = time.monotonic()
    job.start(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    job.finished.wait()
    took = time.monotonic() - t0
    cpu = time.process_time() - cpu0
    job.close()
    assert job.exit_code == 0 and os.path.getsize(path) == job.bytes >= total
    os.unlink(path)
    return took, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=200.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    total = int(args.mb * 1e6)
    plain, recorded, cpus = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.repeat):
            plain.append(run_file(folder, total))
            took, cpu = run_recorder(folder, total)
            recorded.append(took)
            cpus.append(cpu)
    best_plain, best_rec = min(plain), min(recorded)
    print(json.dumps({"mb": args.mb, "file_mb_s": round(args.mb / best_plain, 1),
                      "recorder_mb_s": round(args.mb / best_rec, 1), "ratio": round(best_plain / best_rec, 2),
                      "recorder_cpu_s_per_100mb": round(min(cpus) / args.mb * 100, 2),
                      "file_s": [round(t, 2) for t in plain], "recorder_s": [round(t, 2) for t in recorded]},
                     indent=1))


if __name__ == "__main__":
    main()

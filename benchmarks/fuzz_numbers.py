"""The full numbers sweep of issue 26/27: no log line can take the machine.

Run by hand::

    python benchmarks/fuzz_numbers.py                # every case of tests/number_fuzz.py (~10k lines)
    python benchmarks/fuzz_numbers.py --real-logs    # and every number of every real log (~70k decodes)

Every numeric flag of every driver subcommand table and every number of one block of each
log form (and, with ``--real-logs``, of each file of ``tests/data/real_logs``, decoded whole)
set to 0, -1, 2**31, 2**32+1, 10**8 and 10**11, one at a time; per line: under 2 s, under
200 MB allocated, under 64 KB of output, nothing raised.  The suite runs every second case
of the first set (``tests/unit/test_number_fuzz.py``).

Also timed: the RNN extreme of issue 27 (``rnn -l 2147483647``: its FLOPs and weight count
looped once per layer, 35 minutes a call), decoded and written in every format, against a
plain baseline in the same run (the same line with ``-l 2``): target under 1 s.

Prints one line per failing case, the slowest, largest and most allocating case, and the
totals.  Exit status 1 when any case fails or the RNN extreme takes 1 s or more.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import number_fuzz as nf  # noqa: E402

RNN_EXTREME = ("MIOpen(HIP): Command [LogCmdRNN] ./bin/MIOpenDriver rnn -n 256 -W 30 -H 256 -l {layers} -b 1 -m lstm "
               "-p 0 -r 0 -q 0 -k 45 -c 0 -F 1 -t 1 -w 1")


def real_log_cases() -> Iterator[nf.Case]:
    """Every number of every real excerpt, one at a time, the file decoded whole (made as
    they are run: all of them at once would hold ~70,000 copies of the files)."""
    for path in sorted((ROOT / "tests" / "data" / "real_logs").glob("*.log")):
        text = path.read_text(errors="replace")
        for m in re.finditer(r"\d+", text):
            for value in nf.HOSTILE:
                yield nf.Case(f"{path.name} number {m.group()!r}@{m.start()} -> {value}",
                              text[:m.start()] + value + text[m.end():])


def rnn_extreme(repeats: int = 5) -> tuple[float, float]:
    """(best seconds of the extreme, best seconds of the baseline), each decoded and written in every format."""
    def best(layers: int) -> float:
        times = []
        for _ in range(repeats):
            o = nf.check(nf.Case(f"rnn -l {layers}", RNN_EXTREME.format(layers=layers)))
            assert not o.error, o.error
            times.append(o.seconds)
        return min(times)
    return best(2**31 - 1), best(2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--real-logs", action="store_true", help="also every number of every real log")
    ap.add_argument("--memory-gib", type=float, default=4.0, help="address-space cap for this process")
    ns = ap.parse_args(argv)
    nf.limit_memory(ns.memory_gib)
    cases = itertools.chain(nf.all_cases(), real_log_cases() if ns.real_logs else ())
    start = time.perf_counter()
    failed = count = 0
    slowest = largest = hungriest = None
    for case in cases:
        count += 1
        o = nf.check(case)
        if o.failures:
            failed += 1
            print(f"FAIL {case.name}: {', '.join(o.failures)}", flush=True)
        if slowest is None or o.seconds > slowest.seconds:
            slowest = o
        if largest is None or o.output_bytes > largest.output_bytes:
            largest = o
        if hungriest is None or o.peak_bytes > hungriest.peak_bytes:
            hungriest = o
    total = time.perf_counter() - start
    print(f"{count} lines in {total:.1f} s, {failed} failed")
    if slowest is not None:
        print(f"slowest: {slowest.seconds * 1e3:.0f} ms ({slowest.case.name})")
        print(f"most output: {largest.output_bytes / 1024:.1f} KB ({largest.case.name})")
        print(f"most allocated: {hungriest.peak_bytes / 2**20:.1f} MB ({hungriest.case.name})")
    extreme, plain = rnn_extreme()
    print(f"rnn -l 2147483647, decoded and written in every format: {extreme * 1e3:.1f} ms "
          f"(baseline -l 2: {plain * 1e3:.1f} ms; target < 1000 ms)")
    return 1 if failed or extreme >= 1.0 else 0


if __name__ == "__main__":
    sys.exit(main())

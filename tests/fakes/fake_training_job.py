#!/usr/bin/env python3
"""FAKE training job, for ``miotui record`` tests only: it trains nothing.

It prints what a PyTorch job on MIOpen prints with ``MIOPEN_ENABLE_LOGGING_CMD=1`` set:
its own progress lines on stdout and MIOpen's ``Command`` lines on stderr, interleaved,
each numbered so a test can check the order the log holds (the Command lines by their
batch size ``-n``, ``seq`` on stdout).  Options (all optional):

--steps N            steps to print (each: ``step K`` on stdout, one Command line on stderr)
--env-file PATH      write the environment it got there, as JSON
--exit N             exit status
--wait-signal PATH   after the steps, wait for signals; write each one's name to PATH;
                     SIGINT: print ``interrupted`` and exit 130 (as Python does);
                     SIGTERM and SIGHUP: noted, then it exits 143 or 129
--keep-on-signals    with --wait-signal: note every signal and go on (only SIGKILL ends it)
--ignore-term        ignore SIGTERM (only SIGKILL ends it)
--fork-child S       fork a child that prints 3 more Command lines S seconds after the
                     parent exited (a job that forks and exits)
--mbps R --seconds S write Command lines at R MB/s for S seconds to stderr, each numbered
--rank-lines N       print N Command lines whose batch size is RANK+1 (a rank of a launcher)
--pidfile PATH       write its pid and process group there
--session-child PATH start a child in a session of its own (as torchrun starts its workers),
                     which keeps the output open, sleeps, and writes its pid to PATH
"""

import argparse
import json
import os
import signal
import sys
import time

COMMAND = ("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {n} -c 64 -H 56 -W 56 -k 64 -y 3 "
           "-x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1")


def command(n):
    """A Command line whose batch size is ``n`` (tests number lines by it)."""
    return COMMAND.format(n=n)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--env-file")
    p.add_argument("--exit", type=int, default=0)
    p.add_argument("--wait-signal")
    p.add_argument("--ignore-term", action="store_true")
    p.add_argument("--keep-on-signals", action="store_true")
    p.add_argument("--fork-child", type=float)
    p.add_argument("--mbps", type=float)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--rank-lines", type=int)
    p.add_argument("--pidfile")
    p.add_argument("--session-child")
    a = p.parse_args()
    if a.pidfile:
        with open(a.pidfile, "w") as fh:
            fh.write(f"{os.getpid()} {os.getpgid(0)}\n")
    if a.env_file:
        with open(a.env_file, "w") as fh:
            json.dump(dict(os.environ), fh)
    if a.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    seq = 0
    for k in range(a.steps):
        print(f"step {k} seq {seq}", flush=True)
        seq += 1
        print(command(seq), file=sys.stderr, flush=True)
        seq += 1
    if a.rank_lines:
        rank = int(os.environ.get("RANK", "0"))
        for i in range(a.rank_lines):
            print(f"rank {rank} says {i}", file=sys.stderr, flush=True)
            print(command(rank + 1), file=sys.stderr, flush=True)
    if a.mbps:
        rate_bytes = a.mbps * 1e6
        line = command(7).encode() + b" # line "
        block_lines = 5000
        written = 0
        start = time.monotonic()
        n = 0
        out = sys.stderr.buffer
        while time.monotonic() - start < a.seconds:
            block = b"".join(line + b"%d\n" % (n + i) for i in range(block_lines))
            n += block_lines
            out.write(block)
            out.flush()
            written += len(block)
            ahead = written / rate_bytes - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
        took = time.monotonic() - start
        print(f"wrote {written} bytes {n} lines in {took:.3f} s", flush=True)
    if a.fork_child is not None:
        if os.fork() == 0:
            time.sleep(a.fork_child)
            for i in range(3):
                print(command(1000 + i), file=sys.stderr, flush=True)
            print("child done", flush=True)
            os._exit(0)
        print("parent exits", flush=True)
    if a.session_child:
        import subprocess
        code = f"import os, time; open({a.session_child!r}, 'w').write(str(os.getpid())); time.sleep(120)"
        subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    if a.wait_signal:
        def got(signum, frame):
            with open(a.wait_signal, "a") as fh:
                fh.write(signal.Signals(signum).name + "\n")
            if a.keep_on_signals:
                return
            print("interrupted" if signum == signal.SIGINT else "ended", flush=True)
            sys.exit(128 + signum)
        signal.signal(signal.SIGINT, got)
        signal.signal(signal.SIGHUP, got)
        if not a.ignore_term:
            signal.signal(signal.SIGTERM, got)
        print("waiting for a signal", flush=True)
        while True:
            time.sleep(0.05)
    sys.exit(a.exit)


if __name__ == "__main__":
    main()

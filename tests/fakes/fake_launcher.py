#!/usr/bin/env python3
"""FAKE rank launcher (a tiny ``torchrun``), for ``miotui record`` tests only.

``fake_launcher.py --nproc N CMD ARGS...`` starts N copies of CMD at once, each with
``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE`` set as torchrun sets them, their stdout and
stderr the launcher's own (merged, as torchrun does without ``--redirects``); it prints
its own line first and exits with the highest exit status of its ranks.  Tests copy it
as ``torchrun`` to check that the launcher is recognised by its name.
"""

import os
import subprocess
import sys


def main():
    args = sys.argv[1:]
    n = 2
    if args[:1] == ["--nproc"]:
        n, args = int(args[1]), args[2:]
    print(f"fake launcher: starting {n} ranks", file=sys.stderr, flush=True)
    procs = [subprocess.Popen(args, env=dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(n)))
             for r in range(n)]
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    main()

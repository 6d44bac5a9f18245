#!/usr/bin/env python3
"""FAKE launcher, for tests only: it stands in for ``ssh -o ControlPersist=yes gpu-node``.

Such a launcher leaves a process behind in a session of its own (ssh's control master)
that keeps the launcher's stdout open: killing the launcher's process group does not
reach it, and reading the pipe never ends.  This fake does exactly that, then runs
the command it was given (the fake MIOpenDriver) and exits with its status:

    fake_leaky_launcher.py CMD [ARG...]

It prints ``fake-leaky-launcher: daemon pid P`` first, so a test can end the daemon.

FAKE_LEAK_SECONDS  how long the daemon holds the pipe (default 30)
FAKE_LEAK_MODE     ``hang``: after starting the daemon, sleep forever instead of running CMD
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    seconds = float(os.environ.get("FAKE_LEAK_SECONDS", "30") or 30)
    # start_new_session: the daemon leaves our process group, as ssh's control master does;
    # it inherits stdout (the pipe to whoever runs us) and holds it open
    daemon = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"],
                              start_new_session=True)
    sys.stdout.write(f"fake-leaky-launcher: daemon pid {daemon.pid}\n")
    sys.stdout.flush()
    if os.environ.get("FAKE_LEAK_MODE") == "hang":
        while True:
            time.sleep(60)
    if not argv:
        return 0
    return subprocess.call(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

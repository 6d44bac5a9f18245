"""A real ``python -m miotui`` on a pseudo-terminal, for the tests that end it with a signal
(tests/app/test_app_signals.py, tests/app/test_record_app.py): Linux only."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: seconds a signalled app may take to be gone (it leaves itself within about one)
EXIT_WITHIN_S = 4.0


class Pty:
    """``python -m miotui ARGS`` on a fresh pseudo-terminal of 100x30."""

    def __init__(self, *args: str, env: dict) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:     # the child: the app, on the pty
            fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
            os.chdir(str(ROOT))
            os.execve(sys.executable, [sys.executable, "-m", "miotui", *args], env)
        self.output = b""

    def read_until(self, needle: bytes, timeout: float = 20.0) -> None:
        end = time.monotonic() + timeout
        while needle not in self.output:
            left = end - time.monotonic()
            assert left > 0, f"no {needle!r} on the screen; the last output: {self.output[-400:]!r}"
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.2))
            if ready:
                try:
                    self.output += os.read(self.fd, 65536)
                except OSError:
                    break

    def send(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def end_with(self, sig: int) -> float:
        """Send ``sig``, close the terminal, and return how long the app took to end."""
        t0 = time.monotonic()
        os.kill(self.pid, sig)
        os.close(self.fd)          # the terminal is gone, as when a tmux session is killed
        while time.monotonic() - t0 < EXIT_WITHIN_S:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return time.monotonic() - t0
            time.sleep(0.02)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return float("inf")


def app_env(tmp_path: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color", TMPDIR=str(tmp_path),
                MIOTUI_KEYMAP=str(tmp_path / "none.toml"), XDG_CONFIG_HOME=str(tmp_path / "config"),
                COLUMNS="100", LINES="30")

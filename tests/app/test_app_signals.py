"""The app always ends on SIGHUP (the terminal closed) and SIGTERM, run for real in a
pseudo-terminal.

What was seen: after a run, with a screen open, closing the terminal left an orphan
that ignored SIGTERM in 4 of ~16 tries (blocked in Textual's driver shutdown), and
``miotui --demo`` survived ``tmux kill-session`` once in five, writing its temporary
log until SIGKILL.  Each try here starts the real ``python -m miotui`` on a pty, runs a
layer, opens its detail, sends the signal and closes the terminal; every try must end
within a few seconds (the app gives itself ``EXIT_GRACE_S``), and the demo's log must
be gone.
"""

from __future__ import annotations

import signal
import sys
import time

import pytest
from pilot_helpers import conv
from pty_support import EXIT_WITHIN_S, Pty, app_env

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="pseudo-terminals and signals as on Linux")


@pytest.mark.slow     # 20 real apps, four at a time: 21-34 s alone; .ci/run runs it with -m slow
def test_sighup_after_a_run_with_a_screen_open_always_ends_the_app(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(conv(n=1, c=4, h=8, k=4) * 3)
    env = app_env(tmp_path)
    times = []
    for _ in range(5):                                  # 20 tries, 4 apps at a time
        apps = [Pty(str(log), env=env) for _ in range(4)]
        for app in apps:
            app.read_until(b"Filter", timeout=60)       # the footer: the app is up
            app.read_until(b"1/1 layers", timeout=60)   # and the layer is in the table (else r has none)
            app.send(b"r")
        for app in apps:
            app.read_until(b"layer 1 on ", timeout=60)  # the run's notification
            app.send(b"\r")
        for app in apps:
            app.read_until(b"MIOpenDriver command")     # the detail screen is open
        times += [app.end_with(signal.SIGHUP) for app in apps]
    assert len(times) == 20 and max(times) < EXIT_WITHIN_S, f"an app outlived SIGHUP: {times}"


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_the_demo_ends_on_sighup_and_sigterm_and_removes_its_log(tmp_path, sig):
    env = app_env(tmp_path)
    for _ in range(5):
        app = Pty("--demo", env=env)
        app.read_until(b"miotui-demo-")                 # the status bar names the replayed log
        assert list(tmp_path.glob("miotui-demo-*.log"))
        took = app.end_with(sig)
        assert took < EXIT_WITHIN_S, f"the demo outlived {signal.Signals(sig).name}"
        end = time.monotonic() + 2        # the app is gone (reaped): its log should be too
        while list(tmp_path.glob("miotui-demo-*.log")) and time.monotonic() < end:
            time.sleep(0.02)
        assert not list(tmp_path.glob("miotui-demo-*.log")), "the demo's temporary log is removed"

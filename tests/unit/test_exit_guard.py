"""``launch.ExitGuard``: how miotui leaves on SIGHUP/SIGTERM with a recorded job.

Closing a terminal can deliver SIGHUP twice (the sender's and the kernel's hangup).  The
guard took the second as "no more waiting" and SIGKILLed the job before the thread meant to
send it SIGHUP had run (``tests/app/test_record_app.py``'s terminal test failed that way
under load).  The guard is driven here through its wake-up pipe, as the signal module writes
it, with a job and an app that only record what they are asked."""

from __future__ import annotations

import os
import signal
import threading
import time

from miotui.launch import EXIT_GRACE_S, ExitGuard


class Left(Exception):
    """Raised where the real guard calls ``os._exit``."""


class RecordingJob:
    def __init__(self, said: list) -> None:
        self.said = said

    def stop(self, sig: int) -> None:
        self.said.append(("stop", sig, time.monotonic()))

    def kill_now(self) -> None:
        self.said.append(("kill", signal.SIGKILL, time.monotonic()))


class RecordingApp:
    def __init__(self, said: list) -> None:
        self.said = said

    def call_from_thread(self, fn, **kwargs) -> None:
        self.said.append(("exit asked", kwargs.get("return_code"), time.monotonic()))

    def exit(self, return_code: int = 0) -> None:
        pass


def guarded(said: list) -> tuple[ExitGuard, threading.Thread]:
    guard = ExitGuard(RecordingApp(said), None, terminal=None, job=RecordingJob(said))

    def leave(code: int) -> None:   # what the real one does, but os._exit
        guard.job.kill_now()
        said.append(("left", code, time.monotonic()))
        raise Left

    guard._leave = leave

    def watch() -> None:
        try:
            guard._watch()
        except Left:
            pass

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return guard, thread


def signal_bytes(guard: ExitGuard, *sigs: int) -> None:
    os.write(guard._write, bytes(sigs))


def handled(said: list) -> None:
    """Until the guard has acted on the first signal (asked the app to exit)."""
    deadline = time.monotonic() + 10
    while not any(what == "exit asked" for what, _s, _t in said) and time.monotonic() < deadline:
        time.sleep(0.01)   # a polling step: the watcher thread runs on its own


def test_a_repeated_sighup_is_one_event_and_the_job_is_signalled_before_any_kill():
    said: list = []
    guard, thread = guarded(said)
    t0 = time.monotonic()
    signal_bytes(guard, signal.SIGHUP)
    handled(said)
    signal_bytes(guard, signal.SIGHUP)      # the kernel's hangup after the sender's
    thread.join(10)
    assert not thread.is_alive()
    kinds = [what for what, _sig, _t in said]
    assert kinds.index("stop") < kinds.index("kill"), said
    assert said[kinds.index("stop")][1] == signal.SIGHUP
    left = said[kinds.index("left")]
    assert left[1] == 128 + signal.SIGHUP
    assert left[2] - t0 >= EXIT_GRACE_S * 0.9, "the repeat cut the grace short"


def test_a_second_different_signal_leaves_at_once_after_the_job_had_the_first():
    said: list = []
    guard, thread = guarded(said)
    signal_bytes(guard, signal.SIGHUP)
    handled(said)
    signal_bytes(guard, signal.SIGTERM)
    thread.join(10)
    kinds = [what for what, _sig, _t in said]
    assert kinds[:2] == ["stop", "exit asked"] and "kill" in kinds, said
    assert said[kinds.index("left")][1] == 128 + signal.SIGTERM

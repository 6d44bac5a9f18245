"""MIOpenDriver's child process when it misbehaves: bounded timeouts and cancels whatever
its descendants do, and bounded memory whatever it prints.

Run against tests/fake_miopendriver.py (a FAKE driver) and tests/fake_leaky_launcher.py
(a FAKE launcher that, like ``ssh -o ControlPersist=yes``, leaves a process in its own
session holding the output pipe).
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
import tracemalloc

import pytest

from miotui.driver import process
from miotui.driver.process import MAX_LINE_BYTES, run_driver
from miotui.execute.backends import RunSettings, launch_driver, run_layer
from miotui.problems import ConvProblem

pytestmark = pytest.mark.usefixtures("fresh_run_cache")

SMALL = ConvProblem("fwd", "fp32", 2, 4, 6, (10, 9), (3, 3), (1, 1), (1, 1), (1, 1))
#: how late after its deadline (or a cancel) a run may come back
LATENESS_S = 1.0


@pytest.fixture
def leaky(fake_env, fake_driver, fake_leaky_launcher):
    """RunSettings that run the fake driver through the leaky launcher; the daemons it
    leaves are ended after the test (by the pid it prints)."""
    fake_env.setenv("FAKE_LEAK_SECONDS", "15")
    seen: list[str] = []

    def settings(**kw) -> RunSettings:
        base = dict(backend="miopen-driver", driver_path=fake_driver, iters=2, timeout_s=30,
                    launcher=(sys.executable, fake_leaky_launcher))
        base.update(kw)
        return RunSettings(**base)

    settings.seen = seen   # type: ignore[attr-defined]
    yield settings
    for line in seen:
        m = re.match(r"fake-leaky-launcher: daemon pid (\d+)", line)
        if m:
            try:
                os.kill(int(m.group(1)), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_driver_that_exits_while_a_descendant_holds_the_output_finishes_promptly(leaky):
    """Before: the run read the pipe until the descendant let go (here 15 s) or the
    timeout, and then reported a time-out instead of the driver's verdict."""
    t0 = time.monotonic()
    res = launch_driver(SMALL, leaky(), leaky.seen.append, threading.Event())
    took = time.monotonic() - t0
    assert res.status == "ok", (res.message, res.driver_output)
    assert res.verification is not None and res.verification.ok
    assert "kept the output open" in res.note
    # well under the 15 s the descendant holds the pipe (the fake's own start, a Python
    # interpreter with numpy, took up to 5.7 s on a loaded 2-core host)
    assert took < 10, took


def test_timeout_is_answered_within_a_second_while_a_descendant_holds_the_output(leaky, fake_env):
    """Before: --timeout 1 came back after the descendant let go (15 s here; 60 s seen)."""
    fake_env.setenv("FAKE_LEAK_MODE", "hang")
    t0 = time.monotonic()
    res = launch_driver(SMALL, leaky(timeout_s=1.0), leaky.seen.append, threading.Event())
    took = time.monotonic() - t0
    assert res.status == "error" and "timed out after 1 s" in res.message, res.message
    assert took < 1.0 + LATENESS_S, took


def test_cancel_is_answered_within_a_second_while_a_descendant_holds_the_output(leaky, fake_env):
    fake_env.setenv("FAKE_LEAK_MODE", "hang")
    cancel = threading.Event()
    cancelled_at: list[float] = []

    def on_line(line: str) -> None:
        leaky.seen.append(line)
        if line.startswith("fake-leaky-launcher: daemon pid"):
            def fire() -> None:
                cancelled_at.append(time.monotonic())
                cancel.set()
            threading.Timer(0.2, fire).start()

    res = launch_driver(SMALL, leaky(timeout_s=60), on_line, cancel)
    returned = time.monotonic()
    assert res.status == "cancelled", res.message
    assert cancelled_at and returned - cancelled_at[0] < LATENESS_S, returned - cancelled_at[0]


def test_run_layer_timeout_with_a_hung_descendant_is_bounded_too(leaky, fake_env):
    fake_env.setenv("FAKE_LEAK_MODE", "hang")
    t0 = time.monotonic()
    res = run_layer(SMALL, leaky(timeout_s=1.0), None, leaky.seen.append)
    assert res.status == "error" and "timed out" in res.message
    assert time.monotonic() - t0 < 1.0 + LATENESS_S


def test_output_without_newlines_is_held_to_a_bounded_size(fake_env, fake_driver):
    """Before: a 64 MB line was held whole (1 GB of output took the RSS to 2.6 GB)."""
    fake_env.setenv("FAKE_MIOPEN_STYLE", "noline")
    fake_env.setenv("FAKE_MIOPEN_NOLINE_MB", "64")
    lines: list[str] = []
    tracemalloc.start()
    try:
        res = launch_driver(SMALL, RunSettings(backend="miopen-driver", driver_path=fake_driver, iters=2,
                                               timeout_s=60), lines.append, threading.Event())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.status == "ok", res.message   # the verdict after the long line is still read
    assert peak < 8 << 20, peak
    assert max(len(line) for line in lines) <= MAX_LINE_BYTES + 40
    assert "1 output line(s) longer than 4000 bytes were cut" in res.note
    assert "[miotui: 1 output line(s) longer" in res.driver_output
    assert len(res.driver_output) < 64 << 10


def test_many_lines_keep_the_start_and_the_end(tmp_path, monkeypatch):
    """Only the first and last lines are kept (the verdict comes last); the middle is
    streamed and counted."""
    monkeypatch.setattr(process, "HEAD_LINES", 5)
    monkeypatch.setattr(process, "TAIL_LINES", 3)
    script = tmp_path / "many.py"
    script.write_text("for i in range(1000):\n    print(f'line {i}')\nprint('GPU Kernel Time Forward Conv. "
                      "Elapsed: 0.5 ms (average)')\n")
    streamed: list[str] = []
    run = run_driver([sys.executable, str(script)], streamed.append, None, 30)
    assert len(streamed) == 1001 and run.returncode == 0 and not run.stopped
    kept = run.text.splitlines()
    assert kept[:5] == [f"line {i}" for i in range(5)]
    assert kept[5] == "[miotui: 993 lines not kept here]"
    assert kept[6:9] == ["line 998", "line 999", "GPU Kernel Time Forward Conv. Elapsed: 0.5 ms (average)"]
    assert run.output.result("fwd").kernel_ms == 0.5
    assert any("993 output lines in the middle were not kept" in n for n in run.notes)


def test_a_last_line_without_a_newline_is_kept(tmp_path):
    script = tmp_path / "tail.py"
    script.write_text("import sys\nsys.stdout.write('first\\nno newline at the end')\n")
    run = run_driver([sys.executable, str(script)], lambda _l: None, None, 30)
    assert run.text.splitlines() == ["first", "no newline at the end"]


def test_a_program_that_cannot_start_raises_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        run_driver([str(tmp_path / "missing")], lambda _l: None, None, 5)

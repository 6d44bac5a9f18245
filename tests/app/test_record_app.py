"""The live app on a recording job (``miotui record`` without ``--headless``): the table fills
as the job logs, the job's own lines show in its pane (MIOpen's do not), Ctrl-C reaches the
job and the app says so, and when the job ends the app stays with the final table and says
the job's exit status.  The job is a real process (the named fake
``tests/fakes/fake_training_job.py``); a real pty checks that closing the terminal ends the
app and the job together.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from pilot_helpers import ROOT, wait_until
from pty_support import EXIT_WITHIN_S, Pty, app_env

from miotui.record_app import RecordApp
from miotui.record_env import job_environment
from miotui.record_job import RecordedJob, group_members

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="process groups and signals as on Linux")

FAKE_JOB = str(ROOT / "tests" / "fakes" / "fake_training_job.py")


def started_job(tmp_path: Path, *args: str) -> RecordedJob:
    env = job_environment("layers", "amd", "test", {k: v for k, v in os.environ.items()
                                                    if not k.startswith(("MIOPEN_", "PYTHONUNBUFFERED"))}).env
    log = tmp_path / "x.log"
    job = RecordedJob([sys.executable, FAKE_JOB, *args], env, str(log), grace_s=1.0)
    job.start(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    return job


def notes(app) -> str:
    return "\n".join(str(n.message) for n in app._notifications)


async def test_the_app_follows_the_job_shows_its_lines_forwards_ctrl_c_and_stays_with_the_final_table(tmp_path):
    job = started_job(tmp_path, "--steps", "4", "--wait-signal", str(tmp_path / "sig.txt"))
    app = RecordApp(job, [job.log_path], ["recording the fake job"], poll_interval=0.05, reader_poll_interval=0.02)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.pane.is_mounted and "waiting for a signal" in app.pane.text,
                             what=lambda: app.pane.text if app.pane.is_mounted else "no pane")
            await wait_until(pilot, lambda: len(app.layers_screen.table.model.rows) == 4, what="4 layers")
            pane = app.pane.text
            assert pane.splitlines()[0] == "recording the fake job"
            assert "step 3 seq 6" in pane and "MIOpenDriver" not in pane, "the job's own lines, not MIOpen's"
            assert "running" in str(app.pane.border_title) and "ctrl+c: interrupt" in str(app.pane.border_title)
            await pilot.press("ctrl+c")
            await wait_until(pilot, lambda: job.finished.is_set(), what="the job to end")
            assert (tmp_path / "sig.txt").read_text() == "SIGINT\n"
            assert "Sent SIGINT to the job" in notes(app)
            await wait_until(pilot, lambda: "exited with status 130" in str(app.pane.border_title),
                             what=lambda: str(app.pane.border_title))
            await wait_until(pilot, lambda: "Recording done" in notes(app), what=notes(app))
            assert "interrupted" in app.pane.text
            assert len(app.layers_screen.table.model.rows) == 4, "the final table stays"
            assert app.is_running
            await pilot.press("o")
            assert not app.pane.display, "o hides the pane"
            assert ("recording", "ctrl+c", "Interrupt job", "record.interrupt") in app.help_rows()
    finally:
        job.close()
    assert job.exit_code == 130


async def test_a_second_ctrl_c_stops_a_job_that_does_not_end_on_sigint(tmp_path):
    job = started_job(tmp_path, "--steps", "1", "--wait-signal", str(tmp_path / "sig.txt"), "--keep-on-signals")
    app = RecordApp(job, [job.log_path], poll_interval=0.05, reader_poll_interval=0.02)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.pane.is_mounted and "waiting for a signal" in app.pane.text,
                             what=lambda: (app.pane.text if app.pane.is_mounted else "no pane") + job.status_text())
            await pilot.press("ctrl+c")
            await wait_until(pilot, lambda: (tmp_path / "sig.txt").exists(), what="the job's SIGINT")
            assert "ctrl+c: stop it (SIGTERM)" in str(app.pane.border_title)
            await pilot.press("ctrl+c")
            await wait_until(pilot, lambda: job.finished.is_set(), timeout=15, what="the job to be killed")
            await wait_until(pilot, lambda: "killed by SIGKILL" in str(app.pane.border_title),
                             what=lambda: str(app.pane.border_title))
            assert "Stopping the job" in notes(app)
    finally:
        job.close()
    assert (tmp_path / "sig.txt").read_text() == "SIGINT\nSIGTERM\n"


def test_closing_the_terminal_ends_the_app_and_the_job(tmp_path):
    env = app_env(tmp_path)
    env.pop("PYTHONUNBUFFERED", None)
    app = Pty("record", "--vendor", "amd", "-o", str(tmp_path / "x.log"), "--", sys.executable, FAKE_JOB,
              "--steps", "2", "--wait-signal", str(tmp_path / "sig.txt"), "--pidfile", str(tmp_path / "pid.txt"),
              env=env)
    app.read_until(b"waiting for a signal", timeout=60)
    pid, pgid = map(int, (tmp_path / "pid.txt").read_text().split())
    took = app.end_with(signal.SIGHUP)
    assert took < EXIT_WITHIN_S, "the app outlived SIGHUP"
    end = time.monotonic() + 5
    while group_members(pgid) and time.monotonic() < end:
        time.sleep(0.05)
    assert group_members(pgid) == [], "no process of the job outlives the terminal"
    sig = tmp_path / "sig.txt"
    assert sig.exists() and sig.read_text().splitlines()[0] == "SIGHUP", (tmp_path / "x.log").read_text()[-300:]


async def test_an_empty_table_says_what_the_recorded_job_runs_with_not_what_to_set(tmp_path):
    job = started_job(tmp_path, "--steps", "0", "--wait-signal", str(tmp_path / "sig.txt"))
    app = RecordApp(job, [job.log_path], poll_interval=0.05, reader_poll_interval=0.02)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            empty = app.layers_screen.query_one("#empty")
            await wait_until(pilot, lambda: "lines the job has written yet" in str(empty.render()),
                             what=lambda: str(empty.render()))
            text = str(empty.render())
            assert "The job runs with MIOpen's logging switched on" in text
            assert "Start the job with" not in text, "record set the variables: the generic hint is wrong here"
    finally:
        job.close()

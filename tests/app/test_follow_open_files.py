"""More followed files than the process may open (``ulimit -n``): every file is still read
and followed, descriptors are left for runs and drivers, and the app says what it cannot do.

The limit is the real one: the app runs in a child process that lowers its own
``RLIMIT_NOFILE`` (``resource.setrlimit``) before anything opens a file, so the reader's
budget comes from the same ``getrlimit`` a user's ``ulimit -n 1024`` gives it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from follow_support import batches, conv, rank_logs, started_readers, wait_for
from pilot_helpers import ROOT

resource = pytest.importorskip("resource")

HELPERS = [ROOT / "tests", ROOT / "tests" / "app"]     # the child imports pilot_helpers
LIMIT = 256
FILES = 400      # well past the limit: each needs a descriptor while it is open

APP_SCRIPT = textwrap.dedent("""
    import asyncio, json, resource, sys
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), hard))
    from pilot_helpers import SIZE, app_for, table, wait_until
    from miotui.screens.driver_panel import DriverScreen

    async def main():
        app = app_for([sys.argv[1]], follow=True)
        out = {}
        async with app.run_test(size=SIZE) as pilot:
            files = int(sys.argv[3])
            told = set()

            def loaded():
                told.update(n.message for n in app._notifications if "open-file" in n.message)
                return len(table(app).model.rows) >= files and told

            try:     # all read, or (before the budget) as many as the limit let open: go on to r and d
                await wait_until(pilot, loaded, timeout=40)
            except AssertionError:
                pass
            out["rows_read"] = len(table(app).model.rows)
            t = table(app)
            t.move_cursor_to(1)
            await pilot.press("r")
            await wait_until(pilot, lambda: t.row_text(1)["verdict"] not in ("", "queued", "running"), timeout=60,
                             what="the run's verdict")
            out["run"] = t.row_text(1)["verdict"]
            await pilot.press("d")
            panel = app.screen
            out["driver_screen"] = isinstance(panel, DriverScreen)
            await wait_until(pilot, lambda: panel.state == "finished", timeout=60, what="the driver's end")
            out["driver_log"] = panel.log_text[-2000:]
            await pilot.press("escape")
            out["rows"] = len(table(app).model.rows)
            out["states"] = app.reader.state_text()
            out["events"] = [e.message for e in app.reader.drain_events() if e.kind == "limit"]
            out["notified"] = sorted(told)
        print("RESULT " + json.dumps(out))

    asyncio.run(main())
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child lowers its limit with setrlimit (Linux)")
def test_more_files_than_the_open_file_limit_are_all_read_and_r_and_d_still_work(tmp_path, fake_driver):
    folder = tmp_path / "ranks"
    folder.mkdir()
    for i in range(FILES):
        (folder / f"rank{i:04d}.log").write_text(conv(i + 1))
    script = tmp_path / "child.py"
    script.write_text(APP_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, [ROOT, *HELPERS])), MIOPEN_DRIVER=fake_driver,
               FAKE_MIOPEN_LINE_DELAY="0")
    proc = subprocess.run([sys.executable, str(script), str(folder / "rank*.log"), str(LIMIT), str(FILES)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=str(tmp_path))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"the app failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["rows_read"] == out["rows"] == FILES, "every file was read"
    assert out["run"].startswith("ok"), out
    assert out["driver_screen"] and "Too many open files" not in out["driver_log"], out["driver_log"]
    assert "unreadable" not in out["states"] and "error" not in out["states"], out["states"]
    assert out["notified"], "the user is told that files past the budget are reopened for each read"


def test_files_past_the_budget_are_followed_by_reopening_them(tmp_path):
    """A budget of 3 held descriptors for 10 files: appends, a rewrite and a rotation of a
    parked file are all seen; what is held never passes the budget."""
    logs = rank_logs(tmp_path, 10)
    with started_readers() as make:
        cat, reader = make([str(tmp_path / "rank*.log")], max_open=3)
        assert wait_for(lambda: len(batches(cat)) == 10)
        assert reader.held_descriptors <= 3
        assert sum(1 for s in reader.sources if s.parked) == 7
        last = logs[-1]                          # a parked file (the glob is read in order)
        with open(last, "a") as fh:
            fh.write(conv(50))
        assert wait_for(lambda: 50 in batches(cat))
        last.write_text(conv(60) * 2)            # rewritten from its start, shorter
        assert wait_for(lambda: batches(cat).get(60) == 2)
        os.rename(last, tmp_path / "old.log")    # rotated: a new file at the path
        last.write_text(conv(70))
        assert wait_for(lambda: 70 in batches(cat))
        assert batches(cat)[50] == 1 and batches(cat)[60] == 2, "nothing read twice"
        assert reader.held_descriptors <= 3
        events = reader.drain_events()
        assert any(e.kind == "limit" and "open-file" in e.message for e in events)


def test_a_deleted_parked_file_says_what_was_lost(tmp_path):
    logs = rank_logs(tmp_path, 3)
    with started_readers() as make:
        cat, reader = make([str(tmp_path / "rank*.log")], max_open=1)
        assert wait_for(lambda: len(batches(cat)) == 3)
        os.unlink(logs[2])
        assert wait_for(lambda: any(e.kind == "deleted" and "not kept open" in e.message
                                    for e in reader.drain_events()))
        logs[2].write_text(conv(9))
        assert wait_for(lambda: 9 in batches(cat))


def test_the_budget_leaves_descriptors_for_runs(monkeypatch):
    from miotui.sources import follow
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    budget = follow.descriptor_budget()
    assert 0 < budget <= soft - follow.fd_reserve(soft)


def test_without_follow_files_past_the_budget_are_read_to_their_end(tmp_path):
    rank_logs(tmp_path, 10, times=3)
    with started_readers() as make:
        cat, reader = make([str(tmp_path / "rank*.log")], follow=False, max_open=2)
        assert wait_for(lambda: reader.finished)
        assert batches(cat) == {i + 1: 3 for i in range(10)}
        assert reader.held_descriptors == 0, "every slot is given back when its file is read"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts this process's descriptors in /proc")
def test_the_raw_log_pane_holds_no_descriptor_between_reads(tmp_path):
    """The pane keeps one LogContext per file shown: with many files, each holding its file
    open would eat the descriptors runs need."""
    from miotui.sources.context import LogContext
    logs = []
    for i in range(20):
        log = tmp_path / f"rank{i}.log"
        log.write_text("".join(f"line {n}\n" for n in range(50)))
        logs.append(LogContext(str(log)))
    before = len(os.listdir("/proc/self/fd"))
    assert all([ln.text for ln in c.read(3, 2)] == ["line 2", "line 3"] for c in logs)
    assert all(c.find("line 40", 1) == 41 for c in logs)
    assert len(os.listdir("/proc/self/fd")) <= before


def test_the_budget_notice_outlives_thousands_of_routine_events(tmp_path):
    """600 files opened and caught up (1 200 routine events, more than the queue keeps)
    before anyone drains it: the notice about the budget is still there."""
    rank_logs(tmp_path, 600)
    with started_readers() as make:
        cat, reader = make([str(tmp_path / "rank*.log")], max_open=2)
        assert wait_for(lambda: len(batches(cat)) == 600, timeout=30)
        events = reader.drain_events()
        assert any(e.kind == "limit" for e in events)
        assert [e.time for e in events] == sorted(e.time for e in events)

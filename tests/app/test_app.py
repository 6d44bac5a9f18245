"""Pilot tests of the app: every flow of the layers screen, a layer's detail, runs,
the MIOpenDriver panel (against the fake driver), export, help, and a clean quit.

The follow tests write to a temporary log while the app follows it (appends, a
rotation, a truncation, a deletion) and assert on what the table shows.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import threading
import time
from pathlib import Path

from pilot_helpers import (
    BNORM,
    FAKE_DRIVER,
    SIZE,
    app_for,
    conv,
    exported,
    header_text,
    loaded,
    palette_highlights,
    pane_lines,
    plain,
    pool,
    progress_text,
    shown,
    status_text,
    table,
    wait_until,
)

from miotui.app import MiotuiApp
from miotui.launch import launch
from miotui.screens.detail import DetailScreen
from miotui.screens.dialogs import ExportScreen, RunChooserScreen, SortScreen
from miotui.screens.driver_panel import DriverScreen
from miotui.screens.info import HelpScreen, UndecodedScreen
from miotui.widgets.layer_table import LayerTable

# ---------------------------------------------------------------------- reading and following

async def test_reads_a_file_into_unique_layers(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        rows = shown(app)
        assert [(r["op"], r["dir"], r["executions"], r["finds"]) for r in rows] == [
            ("conv", "fwd", "3", "1"), ("conv", "wrw", "2", ""), ("conv", "fwd", "1", ""),
            ("pool", "fwd", "2", ""), ("bnorm", "fwd_train", "1", "")]
        assert rows[0]["filter"] == "3x3" and rows[0]["output"] == "1x8x16x16" and rows[0]["n"] == "1"
        text = status_text(app)
        assert "train.log" in text and "[read]" in text and "1 undecoded (u)" in text
        assert "5/5 layers" in text
        lines = table(app).visible_text()
        assert lines[0].split()[:3] == ["#▲", "op", "dir"]
        assert "wrw" in lines[2]


async def test_follow_appends_rotation_truncation_deletion(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(conv())
    app = app_for([log], follow=True)
    async with app.run_test(size=SIZE) as pilot:
        t = table(app)
        await wait_until(pilot, lambda: len(t.model.rows) == 1)
        row0 = t.model.rows[1]
        with open(log, "a") as fh:
            fh.write(conv() * 4)
        await wait_until(pilot, lambda: t.row_text(1)["executions"] == "5", what="counts update")
        assert t.model.rows[1] is row0, "the row is updated in place, not rebuilt"
        with open(log, "a") as fh:
            fh.write(conv(fwd=2))
        await wait_until(pilot, lambda: len(t.model.rows) == 2)
        assert t.cursor_id == 2, "following: the cursor is on the newest layer"
        assert "[following]" in status_text(app)
        # Rotation: the old file is drained, then the new one is read from its start.
        with open(log, "a") as old:
            os.rename(log, tmp_path / "train.log.1")
            old.write(conv())
            old.flush()
            log.write_text(conv(n=2))
        await wait_until(pilot, lambda: len(t.model.rows) == 3 and t.row_text(1)["executions"] == "6")
        await wait_until(pilot, lambda: "rotated" in status_text(app), what="rotation in the status bar")
        # Truncation.
        log.write_text("")
        await wait_until(pilot, lambda: "truncated" in status_text(app), what="truncation in the status bar")
        with open(log, "a") as fh:
            fh.write(conv(n=3))
        await wait_until(pilot, lambda: len(t.model.rows) == 4)
        assert t.row_text(1)["executions"] == "6", "nothing already decoded is lost"
        # Deletion, then re-creation.
        os.unlink(log)
        await wait_until(pilot, lambda: "deleted" in status_text(app))
        log.write_text(conv(n=4))
        await wait_until(pilot, lambda: len(t.model.rows) == 5)
        await wait_until(pilot, lambda: "re-created" in status_text(app))


async def test_follow_pauses_off_the_newest_row_and_counts_new_ones(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(conv(n=1) + conv(n=2) + conv(n=3))
    app = app_for([log], follow=True)
    async with app.run_test(size=SIZE) as pilot:
        t = table(app)
        await wait_until(pilot, lambda: len(t.model.rows) == 3)
        assert t.cursor_id == 3 and t.follow
        await pilot.press("up")
        assert t.cursor_id == 2 and not t.follow
        scroll = t.scroll_y
        with open(log, "a") as fh:
            fh.write(conv(n=4) + conv(n=5))
        await wait_until(pilot, lambda: len(t.model.rows) == 5)
        await wait_until(pilot, lambda: t.new_while_paused == 2 and "▼ 2 new" in status_text(app),
                         what=lambda: f"the new rows counted: {t.new_while_paused}, {status_text(app)!r}")
        assert t.cursor_id == 2 and t.scroll_y == scroll, "the view does not move while paused"
        assert t.new_while_paused == 2
        assert "▼ 2 new" in status_text(app) and "paused" in status_text(app)
        await pilot.press("f")
        assert t.follow and t.cursor_id == 5 and t.new_while_paused == 0
        assert "▼" not in status_text(app)
        with open(log, "a") as fh:
            fh.write(conv(n=6))
        await wait_until(pilot, lambda: t.cursor_id == 6, what="follow moves to the new layer")


async def test_a_large_file_is_scanned_in_the_background_with_a_progress_bar(tmp_path, monkeypatch):
    import time as _time

    import miotui.sources.follow as follow
    from miotui.formats.miopen.scan import LogScanner
    monkeypatch.setattr(follow, "CHUNK", 1 << 16)
    # Slow each chunk a little so the scan spans several UI polls however fast the machine is.
    real_feed = LogScanner.feed

    def slow_feed(self, data):
        _time.sleep(0.01)
        real_feed(self, data)

    monkeypatch.setattr(LogScanner, "feed", slow_feed)
    log = tmp_path / "big.log"
    body = (conv() * 50 + conv(n=2) * 50 + pool() * 20).encode()
    with open(log, "wb") as fh:
        for _ in range(8 * 1024 * 1024 // len(body)):
            fh.write(body)
        fh.write(conv(n=3).encode())
    app = app_for([log])
    seen: list[tuple[bool, int, bool]] = []
    from miotui.widgets.status_bar import StatusBar
    original = StatusBar.set_progress

    def spy(self, done, total, scanning):
        original(self, done, total, scanning)
        bar = self.query_one("#scan-progress")
        seen.append((scanning, len(table(app).model.rows), bar.has_class("scanning")))

    monkeypatch.setattr(StatusBar, "set_progress", spy)
    async with app.run_test(size=SIZE) as pilot:
        # 128 slowed pieces: each sleep also waits for the GIL the UI thread holds, which on a
        # loaded host took 17-32 ms instead of 10, so the scan may take longer than the usual wait
        await loaded(pilot, app, 4, timeout=40.0)
        assert any(scanning and bar_shown and rows >= 2 for scanning, rows, bar_shown in seen), \
            "the bar shows while the table already fills"
        assert not app.layers_screen.query_one("#scan-progress").has_class("scanning")
        assert len(table(app).model.rows) == 4 and "[read]" in status_text(app)


async def test_job_state_in_the_status_bar_and_its_environment_in_the_detail(tmp_path):
    import subprocess
    log = tmp_path / "train.log"
    code = ("import sys, time\nf = open(sys.argv[1], 'a')\nf.write(sys.argv[2]); f.flush()\n"
            "print('ready', flush=True)\ntime.sleep(30)\n")
    env = dict(os.environ, MIOPEN_ENABLE_LOGGING_CMD="1", MIOPEN_FIND_MODE="normal")
    proc = subprocess.Popen([sys.executable, "-c", code, str(log), conv()], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        app = app_for([log], follow=True, find_job=True)     # found by who writes the log
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: f"job {proc.pid}" in status_text(app), timeout=15)
            assert "CPU" in status_text(app) and "RSS" in status_text(app)
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.model.job_env is not None and app.screen.ready
                             and "MIOPEN_FIND_MODE" in plain(app.screen.query_one("#detail-env")))
            text = plain(app.screen.query_one("#detail-env"))
            assert "MIOPEN_FIND_MODE" in text and "MIOPEN_ENABLE_LOGGING_CMD" in text
            proc.kill()
            proc.wait()
            await wait_until(pilot, lambda: f"job {proc.pid} exited" in status_text(app), timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_the_followed_newest_row_stays_on_screen_with_a_horizontal_scrollbar(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(conv(n=i) for i in range(1, 60)))
    app = app_for([log], follow=True)
    async with app.run_test(size=(90, 24)) as pilot:
        t = table(app)
        await wait_until(pilot, lambda: len(t.model.rows) == 59)
        await pilot.press("w")          # the wide view: every column, scrolling sideways
        with open(log, "a") as fh:
            fh.write(conv(n=777))
        await wait_until(pilot, lambda: len(t.model.rows) == 60)
        # the cursor follows the newest row and the table scrolls to it on a later refresh
        await wait_until(pilot, lambda: t.cursor_id == 60 and " 777 " in t.visible_text()[-1],
                         what=lambda: f"cursor {t.cursor_id}, last line {t.visible_text()[-1]!r}")
        assert t.scrollbar_size_horizontal == 1, "the table is wider than 90 columns"
        assert " 777 " in t.visible_text()[-1], "the newest row is the last line above the scrollbar"


async def test_several_files_by_glob_share_one_catalog_with_a_file_column(tmp_path):
    (tmp_path / "rank0.log").write_text(conv() * 2 + pool())
    (tmp_path / "rank1.log").write_text(conv() + BNORM)
    app = app_for([tmp_path / "rank*.log"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(table(app).model.rows) == 3 and app.last_poll is not None
                         and app.last_poll.finished)
        by_op = {r["op"]: r for r in shown(app)}
        # Each file has its own reader thread: the layer lists the file it was seen in first.
        assert by_op["conv"]["executions"] == "3"
        assert by_op["conv"]["file"] in ("rank0.log +1", "rank1.log +1")
        assert by_op["bnorm"]["file"] == "rank1.log"
        assert "file" in table(app).visible_text()[0].split()


async def test_stdin_pipe_feeds_the_table_and_keys_still_work():
    r, w = os.pipe()
    app = MiotuiApp(["-"], stdin_fd=r, find_job=False, poll_interval=0.05)
    async with app.run_test(size=SIZE) as pilot:
        os.write(w, (conv() + conv(n=2)).encode())
        await wait_until(pilot, lambda: len(table(app).model.rows) == 2)
        await pilot.press("slash")
        await pilot.press(*"n:2")
        await wait_until(pilot, lambda: len(table(app).model.view) == 1)
        os.close(w)
        await wait_until(pilot, lambda: app.last_poll is not None and "ended" in app.last_poll.state)
    os.close(r)


async def test_demo_mode_shows_layers_arriving(tmp_path):
    from miotui.demo import DemoReplay
    demo = DemoReplay(speed=200, directory=str(tmp_path)).start()
    app = app_for([demo.path], follow=True, demo=demo)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(table(app).model.rows) > 20, timeout=10)
        assert {"conv", "bnorm", "activ", "pool"} <= set(table(app).model.op_counts)
    assert not os.path.exists(demo.path), "quitting removes the demo's temporary log"


# ---------------------------------------------------------------------- filter, sort, tabs

async def test_filter_by_fields_and_text(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        t = table(app)
        await pilot.press("slash")
        assert app.focused.id == "filter"
        await pilot.press(*"op:conv dir:wrw")
        assert [(r["op"], r["dir"]) for r in shown(app)] == [("conv", "wrw")]
        assert "1/5 layers" in status_text(app)
        await pilot.press("enter")
        assert app.focused is t
        inp = app.layers_screen.query_one("#filter")

        async def filter_by(text: str) -> list[dict[str, str]]:
            inp.value = text      # as if typed: Input.Changed re-filters
            await pilot.pause()
            return shown(app)

        assert sorted(r["op"] for r in await filter_by("-op:conv")) == ["bnorm", "pool"]
        assert [(r["c"], r["executions"]) for r in await filter_by("c:>=16 exec:1")] == [("16", "1")]
        assert [r["op"] for r in await filter_by("spatial")] == ["bnorm"]
        assert [r["dir"] for r in await filter_by("op:conv dir:fwd,wrw filter:3")] == ["fwd", "wrw"]
        await filter_by("bogus:1 n:abc")
        assert "unknown field 'bogus'" in str(inp.border_subtitle) and "n:abc" in str(inp.border_subtitle)
        assert inp.has_class("error")
        await pilot.press("slash")
        await pilot.press("escape")
        assert len(t.model.view) == 5 and not inp.has_class("visible")


async def test_sort_by_columns_keeps_the_cursor_on_its_layer(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        t = table(app)
        t.move_cursor_to(4)      # the pooling layer
        await pilot.press("s")
        assert isinstance(app.screen, SortScreen)
        await pilot.press(*"down" * 0)
        ol = app.screen.query_one("OptionList")
        keys = [ol.get_option_at_index(i).id for i in range(ol.option_count)]
        ol.highlighted = keys.index("executions")
        await pilot.press("enter")
        assert not isinstance(app.screen, SortScreen)
        assert [r["executions"] for r in shown(app)] == ["3", "2", "2", "1", "1"]
        assert t.cursor_id == 4
        await pilot.press("S")
        assert [r["executions"] for r in shown(app)] == ["1", "1", "2", "2", "3"]
        # Clicking a header sorts by it.
        x = 1 + sum(t.model.widths[c.key] + 1 for c in t._columns[:t._columns.index(
            next(c for c in t._columns if c.key == "op"))]) + 1
        await pilot.click(LayerTable, offset=(x, 0))
        assert t.model.sort_key == "op" and [r["op"] for r in shown(app)][0] == "bnorm"


async def test_op_tabs_select_an_op_kind(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        tabs = app.layers_screen.query_one("#op-tabs")
        await wait_until(pilot, lambda: len(tabs.query("Tab")) == 4)
        await pilot.press("right_square_bracket")   # all -> bnorm
        assert {r["op"] for r in shown(app)} == {"bnorm"}
        await pilot.press("right_square_bracket")   # -> conv
        assert {r["op"] for r in shown(app)} == {"conv"} and len(shown(app)) == 3
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert len(shown(app)) == 5


# ---------------------------------------------------------------------- one layer

async def test_detail_screen_copy_and_save(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(1)
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        screen = app.screen
        await wait_until(pilot, lambda: screen.reference_bytes is not None, what="reference memory")
        text = " ".join(plain(s) for s in screen.query("Static"))
        snap = app.snapshot(1)
        assert snap.driver_command in text
        for needle in ("work per call", "arithmetic intensity", "reference run needs", "executions",
                       "first line", "MIOpen's choice", "Raw log lines", "[1, 8, 16, 16]"):
            assert needle in text, needle
        await pilot.press("c")
        assert app.clipboard == snap.driver_command
        await pilot.press("w")
        saved = Path("miotui_layer_1.sh")
        await wait_until(pilot, saved.exists)
        assert saved.read_text().startswith("#!/usr/bin/env bash") and os.access(saved, os.X_OK)
        assert snap.driver_command.split(" ", 1)[1] in saved.read_text()
        await pilot.press("escape")
        assert not isinstance(app.screen, DetailScreen)


async def test_raw_log_pane_shows_the_layer_in_its_log(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(4)        # the pooling layer: lines 8 and 9
        await pilot.press("l")
        pane = app.layers_screen.log_pane
        await wait_until(pilot, lambda: "sighting 1/2: line 8 " in header_text(app), what=lambda: header_text(app))
        await wait_until(pilot, lambda: any("▶" in line and "Pooling_logging_cmd" in line for line in pane_lines(app)))
        lines = pane_lines(app)
        assert any("bnorm -n 2" in line for line in lines), "the log after the sighting"
        assert any(" 3 │" in line for line in lines), "and before it"
        await pilot.press("l")
        assert not app.layers_screen.log_visible
        assert not pane.has_class("visible")


async def test_undecoded_lines_with_their_reasons(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        await pilot.press("u")
        assert isinstance(app.screen, UndecodedScreen)
        dt = app.screen.query_one("DataTable")
        await wait_until(pilot, lambda: dt.row_count == 1)
        line, _file, reason, text = dt.get_row_at(0)
        assert line == 11 and "-g 3" in text and reason
        await pilot.press("escape")
        assert not isinstance(app.screen, UndecodedScreen)


# ---------------------------------------------------------------------- runs

async def test_run_on_the_reference_lands_on_the_row_and_the_detail(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        t = table(app)
        t.move_cursor_to(1)
        await pilot.press("r")
        await wait_until(pilot, lambda: t.row_text(1)["verdict"].startswith("ok"), timeout=30, what="run result")
        assert t.row_text(1)["run_ms"].endswith("s") and t.row_text(1)["rate"]
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready)
        runs = plain(app.screen.query_one("#detail-runs"))
        assert "tolerance" in runs and "ok" in runs
        assert not app.running


async def test_second_run_queues_and_escape_cancels(tmp_path, long_big_runs):
    log = tmp_path / "big.log"
    log.write_text(conv(n=32, c=256, h=56, k=256) + conv())
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        t = table(app)
        t.move_cursor_to(1)
        await pilot.press("r")
        t.move_cursor_to(2)
        await pilot.press("r")
        assert t.row_text(2)["verdict"] == "queued" and t.row_text(1)["verdict"] == "running"
        await wait_until(pilot, lambda: "iteration" in progress_text(app) or "warm" in progress_text(app)
                         or "reference" in progress_text(app), timeout=20,
                         what=lambda: f"progress (run text: {progress_text(app)!r}; results: {app.runs.results(1)!r})")
        started = time.monotonic()
        await pilot.press("escape")
        await wait_until(pilot, lambda: t.row_text(1)["verdict"].startswith("cancelled"), timeout=20)
        assert time.monotonic() - started < 10
        await wait_until(pilot, lambda: t.row_text(2)["verdict"].startswith("ok"), timeout=30, what="queued run")
        assert not app.running


async def test_run_chooser_by_keyboard(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(4)
        await pilot.press("R")
        chooser = app.screen
        await wait_until(pilot, lambda: "checking" not in plain(chooser.query_one("#availability")))
        await pilot.press("tab", "backspace", "2", "tab", "1", "shift+tab", "shift+tab", "down", "enter")
        await wait_until(pilot, lambda: not app.running and app.results_for(4), timeout=30)
        r = app.results_for(4)[-1]
        assert (r.backend, r.iterations, r.problem.n) == ("numpy", 2, 1)


async def test_run_chooser_all_backends_side_by_side(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(5)   # the batch norm: fast everywhere
        await pilot.press("R")
        assert isinstance(app.screen, RunChooserScreen)
        chooser = app.screen
        await wait_until(pilot, lambda: "checking" not in plain(chooser.query_one("#availability")))
        chooser.query_one("#backend-all").value = True
        chooser.query_one("#iters").value = "2"
        chooser.query_one("#batch").value = "1"
        await pilot.click("#run")
        await wait_until(pilot, lambda: not app.running and len(app.results_for(5)) >= 3, timeout=60)
        results = app.results_for(5)
        assert {"numpy", "numba", "torch"} <= {r.backend for r in results}
        assert all(r.problem.n == 1 and r.iterations == 2 for r in results if r.status == "ok")
        app.open_detail(5)
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready)
        runs = plain(app.screen.query_one("#detail-runs"))
        assert "median time per call" in runs and "torch" in runs


async def test_memory_guard_refusal_is_a_result_not_a_crash(tmp_path):
    log = tmp_path / "huge.log"
    log.write_text(conv(n=4096, c=2048, h=512, k=2048))
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 1)
        await pilot.press("r")
        await wait_until(pilot, lambda: table(app).row_text(1)["verdict"].split()[:1] in (["refused"], ["error"]),
                         timeout=20)
        assert table(app).row_text(1)["verdict"].split()[0] == "refused"
        assert any("refused" in n.message for n in app._notifications)


async def test_driver_panel_streams_the_fake_driver_and_the_verdict_lands_on_the_row(log, monkeypatch):
    monkeypatch.setenv("MIOPEN_DRIVER", FAKE_DRIVER)
    monkeypatch.setenv("FAKE_MIOPEN_LINE_DELAY", "0.01")
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(1)
        await pilot.press("d")
        assert isinstance(app.screen, DriverScreen)
        panel = app.screen
        await wait_until(pilot, lambda: panel.state == "finished", timeout=30)
        assert panel.lines_seen > 3 and "Verifies OK" in panel.log_text
        assert "verdict: ok" in plain(panel.query_one("#driver-status"))
        assert table(app).row_text(1)["verdict"].startswith("ok")
        assert app.results_for(1)[-1].backend == "miopen-driver"
        await pilot.press("escape")
        assert not isinstance(app.screen, DriverScreen)


async def test_driver_panel_cancel_and_failure_verdict(log, monkeypatch):
    monkeypatch.setenv("MIOPEN_DRIVER", FAKE_DRIVER)
    monkeypatch.setenv("FAKE_MIOPEN_STYLE", "hang")
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(2)
        await pilot.press("d")
        panel = app.screen
        await wait_until(pilot, lambda: "fake-miopendriver: pid" in panel.log_text, timeout=20)
        await pilot.press("escape")
        await wait_until(pilot, lambda: panel.state == "finished", timeout=20)
        assert table(app).row_text(2)["verdict"] == "cancelled miopen-driver"
        await pilot.press("escape")
        monkeypatch.setenv("FAKE_MIOPEN_STYLE", "fail")
        await pilot.press("d")
        panel = app.screen
        await wait_until(pilot, lambda: panel.state == "finished", timeout=30)
        assert table(app).row_text(2)["verdict"] == "FAILED miopen-driver"


async def test_missing_driver_is_a_clear_message(log, monkeypatch):
    monkeypatch.setenv("MIOPEN_DRIVER", "/nonexistent/MIOpenDriver")
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        await pilot.press("d")
        panel = app.screen
        await wait_until(pilot, lambda: panel.state == "finished", timeout=10)
        status = plain(panel.query_one("#driver-status"))
        assert "error" in status and "does not exist" in status


# ---------------------------------------------------------------------- export, help, keys, quit

async def test_export_in_every_format(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        await pilot.press("e")
        assert isinstance(app.screen, ExportScreen)
        assert "miotui_layers.sh" in app.screen.query_one("#path").value
        await pilot.click("#export")
        await wait_until(pilot, lambda: exported(app, "miotui_layers.sh"))
        assert os.access("miotui_layers.sh", os.X_OK)
        script = Path("miotui_layers.sh").read_text()
        assert script.index("-F 1") < script.index("-F 4"), "most executed (fwd, 3) before wrw (2)"
        await pilot.press("e", "down", "enter")          # arrows choose, enter exports
        await wait_until(pilot, lambda: exported(app, "miotui_layers.csv"))
        rows = list(csv.DictReader(open("miotui_layers.csv")))
        assert len(rows) == 5 and rows[0]["executions"] == "3"
        app.export_to("json", "out.json")      # the command palette's path
        await wait_until(pilot, lambda: exported(app, "out.json"))
        doc = json.loads(Path("out.json").read_text())
        assert len(doc["layers"]) == 5 and doc["undecoded"][0]["line"] == 11


async def test_export_typed_name_and_highlighted_format_are_kept(log, tmp_path):
    """Review finding: Down + tab + a typed x.csv + enter wrote a driver script to x.sh."""
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        await pilot.press("e", "down", "tab")
        app.screen.query_one("#path").value = str(tmp_path / "x.csv")
        await pilot.press("enter")
        await wait_until(pilot, lambda: exported(app, tmp_path / "x.csv"))
        assert not (tmp_path / "x.sh").exists()
        assert "executions" in (tmp_path / "x.csv").read_text().splitlines()[0]
        await pilot.press("e", "down", "down", "tab")       # highlighted JSON, a name without extension
        app.screen.query_one("#path").value = str(tmp_path / "layers")
        await pilot.press("enter")
        await wait_until(pilot, lambda: exported(app, tmp_path / "layers"))
        assert json.loads((tmp_path / "layers").read_text())["layers"]


async def test_command_palette_offers_export(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Export layers: MIOpenDriver script" in titles and "Export layers: CSV" in titles
        await pilot.press("ctrl+p")
        await pilot.press(*"layers: CSV")
        await wait_until(pilot, lambda: palette_highlights(app, "Export layers: CSV"), what="the palette's hit")
        await pilot.press("enter")
        await wait_until(pilot, lambda: Path("miotui_layers.csv").exists())


async def test_help_lists_every_key_with_its_id_and_keymaps_remap(log):
    app = app_for([log])
    app.set_keymap({"layers.run": "x"})
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = app.screen.rows
        ids = {r[3] for r in rows}
        from miotui.screens.layers import LayersScreen
        for b in [*MiotuiApp.BINDINGS, *LayersScreen.BINDINGS, *DetailScreen.BINDINGS, *DriverScreen.BINDINGS,
                  *LayerTable.BINDINGS]:
            assert b.id in ids, b
        assert ("layers", "x", "Run", "layers.run") in rows
        await pilot.press("escape")
        await pilot.press("x")
        await wait_until(pilot, lambda: table(app).row_text(table(app).cursor_id)["verdict"].startswith("ok"),
                         timeout=30)


async def test_keymap_file_is_loaded(tmp_path, monkeypatch):
    from miotui.config import load_keymap
    km = tmp_path / "keymap.toml"
    km.write_text('[keys]\n"layers.run" = "ctrl+r"\n"app.export" = "E"\n')
    assert load_keymap(str(km)).keys == {"layers.run": "ctrl+r", "app.export": "E"}
    km.write_text("not toml [")
    bad = load_keymap(str(km))
    assert bad.keys == {} and "invalid TOML" in bad.problems[0]


async def test_themes_work(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        for theme in ("textual-light", "nord", "textual-dark"):
            app.theme = theme
            await pilot.pause()         # until the app has handled the change (its CSS refresh)
            assert table(app).visible_text()[1].strip().startswith("1 conv")


async def test_ctrl_q_quits_cleanly_with_nothing_left_running(tmp_path, long_big_runs):
    log = tmp_path / "big.log"
    log.write_text(conv(n=32, c=256, h=56, k=256))
    # worker threads an earlier test left would count as "before": end them, so the
    # threads this run uses are ones the app itself must end
    from miotui.execute import reference
    reference.shutdown_threads()
    deadline = time.monotonic() + 10
    while any(t.name.startswith("miotui-ref") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.02)
    before = set(threading.enumerate())
    assert not [t for t in before if t.name.startswith("miotui-ref")]
    app = app_for([log], follow=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(table(app).model.rows) == 1)
        await pilot.press("r")
        # past the warm-up: the reference's worker threads exist and are in use
        await wait_until(pilot, lambda: "iteration" in progress_text(app), timeout=30,
                         what=lambda: f"the timed iterations (run text: {progress_text(app)!r})")
        await pilot.press("ctrl+q")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = [t for t in threading.enumerate() if t not in before and t.is_alive()
                and (t.name.startswith("miotui") or "run-" in t.name)]
        if not left and not app.reader.alive:
            break
        time.sleep(0.05)
    assert not app.reader.alive
    assert not [t for t in threading.enumerate() if t not in before and t.name.startswith("miotui")]
    assert all(w.is_finished for w in app.workers) or not list(app.workers)


def test_launch_refuses_a_missing_file_without_follow(tmp_path, capsys):
    assert launch([str(tmp_path / "nope.log")], follow=False, demo=False, pid=None) == 2
    assert "no such file" in capsys.readouterr().err


def test_importing_the_app_is_cheap():
    import subprocess
    code = "import sys, miotui.app; print(sorted(m for m in ('numpy', 'torch', 'numba') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

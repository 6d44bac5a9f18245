"""Where the time goes, in the app (issue 14): the ``ms/call``, ``total ms`` and ``share``
columns, ``t`` (sort by total), the line over the table, the detail's time and
first-iteration sections, the first-iteration screen (``i``), a search in progress while
following, and the status bar of several followed files.

The expected figures come from the log's own numbers (hand-made logs) or from the core's
view of the same log (the generated first iteration), never from the screen itself."""

from __future__ import annotations

import re
import time

import pytest
from pilot_helpers import (
    SIZE,
    app_for,
    conv,
    loaded,
    plain,
    pool,
    screen_text,
    shown,
    status_text,
    table,
    wait_until,
)

from miotui.samplegen.generator import generate_text
from miotui.samplegen.spec import SampleSpec
from miotui.screens.detail import DetailScreen
from miotui.screens.startup import StartupScreen


def execution(n: int, time_ms: str) -> str:
    """One convolution as MIOpen logs its execution, with the Find-Db time of its solution."""
    return (f'MIOpen(HIP): Info [LogConvolutionExecution] Problem="conv -n {n} -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 '
            f'-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1" Solver="GemmFwdRest" '
            f'Config(from_perf_db)="N/A" Time(from_find_db)={time_ms}\n')


def timed_log() -> str:
    """n=1: 3 executions at 2 ms (60% of the logged 10 ms); n=2: 1 at 4 ms (40%); n=3: an
    execution with no time; a pooling with none either."""
    return execution(1, "2.0") * 3 + execution(2, "4.0") + execution(3, "-1") + pool()


def by_batch(app) -> dict[int, int]:
    """Batch size -> layer id (the hand-made convolutions differ by their batch)."""
    return {snap.problem.n: snap.id for snap in app.catalog.layers() if snap.problem.op == "conv"}


@pytest.fixture(name="first_iteration")
def first_iteration_fixture() -> list[str]:
    """One generated first iteration (Find-Db misses, tuning searches with heartbeats,
    kernels compiled or loaded, the elapsed-time field), as lines."""
    return generate_text(SampleSpec(format="info", iterations=1, startup=True)).splitlines(keepends=True)


# ---------------------------------------------------------------------- the table

async def test_time_columns_share_bars_and_the_line_over_the_table(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(timed_log())
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 4)
        t, ids = table(app), by_batch(app)
        assert {"call_ms", "total_ms", "share"} <= set(t.column_keys)
        a, b, untimed = t.row_text(ids[1]), t.row_text(ids[2]), t.row_text(ids[3])
        assert (a["call_ms"], a["total_ms"]) == ("2.00", "6.00") and (b["call_ms"], b["total_ms"]) == ("4.00", "4.00")
        assert a["share"].split()[0] == "60.0%" and b["share"].split()[0] == "40.0%"
        bar_a, bar_b = a["share"].split()[1], b["share"].split()[1]
        assert set(bar_a) == {"█"} and len(bar_a) > len(bar_b), "the costliest layer has the full bar"
        assert untimed["total_ms"] == untimed["share"] == "", "no time in the log: no figure, never 0"
        line = plain(app.layers_screen.query_one("#time-line"))
        assert line.startswith("2 of 4 layers timed; the 2 take 100% of the logged GPU time")
        assert "2 untimed: MIOPEN_LOG_LEVEL=5 or MIOPEN_PERFORMANCE_LOGS=1" in line
        assert "per call from execution log (2)" in line and "t: sort by total" in line


async def test_an_untimed_log_says_how_to_time_it(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(conv() * 3 + pool())
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        assert "share" not in table(app).column_keys and "total_ms" not in table(app).column_keys
        line = plain(app.layers_screen.query_one("#time-line"))
        assert line.startswith("0 of 2 layers timed (no time in the log: MIOPEN_LOG_LEVEL=5")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready)
        section = plain(app.screen.query_one("#detail-time"))
        assert "not in the log" in section and "MIOPEN_PERFORMANCE_LOGS=1" in section


async def test_t_sorts_by_total_costliest_first_then_cheapest_and_the_footer_says_so(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(execution(1, "1.0") + execution(2, "9.0") + execution(3, "5.0") * 3 + pool())
    app = app_for([log])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot, app, 4)
        assert "t Sort by total" in screen_text(app), "one key away, shown in the footer at 80x24"
        ids = by_batch(app)
        await pilot.press("t")
        model = table(app).model
        assert (model.sort_key, model.sort_reverse) == ("total_ms", True)
        assert model.view[:3] == [ids[3], ids[2], ids[1]], "15 ms, 9 ms, 1 ms; the untimed pooling last"
        header = table(app).visible_text()[0]
        assert "share▼" in header, "the share column, which sorts as the total, shows the order at 80 columns"
        assert table(app).cursor_id == ids[3], "the cursor is on the costliest layer"
        await pilot.press("t")
        assert model.sort_reverse is False and model.view.index(ids[1]) < model.view.index(ids[3])
        assert [r["id"] for r in shown(app)][-1] == str(ids[3])


async def test_a_run_in_miotui_is_its_own_figure_never_in_the_log_totals(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(execution(1, "2.0") * 3 + execution(2, "4.0"))
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        t, ids = table(app), by_batch(app)
        before = t.row_text(ids[1])
        t.move_cursor_to(ids[1])
        await pilot.press("r")
        await wait_until(pilot, lambda: t.row_text(ids[1])["verdict"].startswith("ok"), timeout=30,
                         what=lambda: str(t.row_text(ids[1])))
        after = t.row_text(ids[1])
        assert after["run_ms"] and "run_ms" in t.column_keys, "the run's time has its own column"
        assert (after["call_ms"], after["total_ms"], after["share"]) == \
            (before["call_ms"], before["total_ms"], before["share"])
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready)
        section = plain(app.screen.query_one("#detail-time"))
        # (laid out at the screen's width, as shown: the sentence wraps after "measured here, not the log's GPU")
        assert "miotui run (numpy)" in section and "measured here, not the log's GPU" in section
        assert "6.00 ms (3 executions)" in section and "60.0% of the logged GPU time" in section


# ---------------------------------------------------------------------- the detail

async def test_the_detail_shows_the_time_with_its_source_and_the_first_iteration(tmp_path, first_iteration):
    log = tmp_path / "train.log"
    log.write_text("".join(first_iteration))
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.last_poll is not None and app.last_poll.finished
                         and app.model.time_summary is not None, timeout=20)
        snap = app.catalog.layers()[0]           # the first layer: a Find-Db miss, searched and compiled
        lt = app.model.layer_time(snap.id)
        table(app).move_cursor_to(snap.id)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready)
        text = plain(app.screen.query_one("#detail-time"))
        assert "LogConvolutionExecution" in text, "the per-call time names its source"
        assert f"{100 * lt.share:.1f}% of the logged GPU time" in text
        assert "Find-Db" in text and "miss: the Find measured the solvers" in text
        s = snap.startup
        assert s.find_db == "miss" and s.kernels_compiled > 0
        assert f"kernels compiled       {s.kernels_compiled}" in text
        assert f"from the binary cache  {s.kernels_from_cache}" in text


# ---------------------------------------------------------------------- the first-iteration screen

async def test_i_opens_the_first_iteration_with_its_totals_settings_and_timeline(tmp_path, first_iteration):
    log = tmp_path / "train.log"
    log.write_text("".join(first_iteration))
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.last_poll is not None and app.last_poll.finished
                         and app.model.startup.anything, timeout=20)
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, StartupScreen) and app.screen.ready)
        screen = app.screen
        layers = app.catalog.layers()
        totals = app.catalog.startup.totals()
        summary = totals.summary(sum(1 for s in layers if s.startup.searched), len(layers))
        assert totals.kernels_compiled and totals.searches and totals.compile_ms, "the form has all three"
        title = plain(screen.query_one("#startup-title")).replace("\n", " ")
        assert " ".join(title.split()) == "First" + summary[len("first"):]
        settings = plain(screen.query_one("#startup-settings"))
        assert "MIOPEN_FIND_MODE" in settings and "NORMAL(1)" in settings and "the log" in settings
        assert "--pid N" in settings, "the job's environment is unknown without one"
        timeline = plain(screen.query_one("#startup-timeline")).splitlines()
        first = next(ln for ln in timeline if ln.split()[:1] == [str(layers[0].id)])
        assert "miss" in first and "conv fwd 7x7 k64" in first
        assert any(c in first for c in "▒█"), "its tuning and compile spans on the log's clock"
        assert "none running" in plain(screen.query_one("#startup-searching"))
        assert not screen.query_one("#calls-row").display, "calls/s only while following"
        assert max(screen.query_one("#compile-spark").data) == pytest.approx(
            max((s.startup.compile_ms or 0.0) for s in layers))
        await pilot.press("escape")
        assert app.screen is app.layers_screen


async def test_following_a_log_mid_search_shows_its_progress_then_its_end(tmp_path, first_iteration):
    beats = [i for i, ln in enumerate(first_iteration) if "[Monitor]" in ln]
    cut = beats[2] + 1                   # after the third heartbeat of the first search
    assert "236/0/1160" in first_iteration[beats[2]] and "ETA:35.2 sec" in first_iteration[beats[2]]
    log = tmp_path / "train.log"
    log.write_text("".join(first_iteration[:cut]))
    app = app_for([log], follow=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.model.startup.totals.searching, timeout=20, what="a search in progress")
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, StartupScreen) and app.screen.ready)
        searching = app.screen.query_one("#startup-searching")
        text = plain(searching)
        assert "ConvAsmImplicitGemmGTCDynamicFwdXdlops" in text and "236/1,160" in text and "20%" in text
        assert "ETA 35.2 s" in text
        assert app.screen.query_one("#calls-row").display
        await pilot.press("escape")
        layer_id = app.model.startup.totals.searching[0].layer_id
        table(app).move_cursor_to(layer_id)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready)
        detail = app.screen
        assert "searching now" in plain(detail.query_one("#detail-time"))
        assert "tuning search     in progress" in plain(detail.query_one("#detail-time"))
        done, _failed, total = re.search(r"\] (\d+)/(\d+)/(\d+) ", first_iteration[cut]).groups()
        with open(log, "a") as fh:
            fh.write(first_iteration[cut])        # the next heartbeat: the open detail follows it
        await wait_until(pilot, lambda: f"{int(done):,}/{int(total):,}" in plain(detail.query_one("#detail-time")),
                         what=lambda: plain(detail.query_one("#detail-time")))
        with open(log, "a") as fh:
            fh.write("".join(first_iteration[cut + 1:]))
        await wait_until(pilot, lambda: "searching now" not in plain(detail.query_one("#detail-time")), timeout=20)
        await pilot.press("escape", "i")
        await wait_until(pilot, lambda: isinstance(app.screen, StartupScreen) and app.screen.ready)
        await wait_until(pilot, lambda: "none running" in plain(app.screen.query_one("#startup-searching")),
                         timeout=20)
        assert "tuning" in plain(app.screen.query_one("#startup-title"))


# ---------------------------------------------------------------------- the status bar

async def test_several_followed_files_show_their_rates(tmp_path):
    logs = [tmp_path / "rank0.log", tmp_path / "rank1.log"]
    for p in logs:
        p.write_text(conv())
    app = app_for(logs, follow=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(table(app).model.rows) >= 1)
        end = time.monotonic() + 20
        while time.monotonic() < end:
            for p in logs:
                with open(p, "a") as fh:
                    fh.write(conv() * 20)
            await pilot.pause(0.1)      # the writer's pace (rates need time to pass), not a wait
            text = status_text(app)
            if "2 files" in text and "rank0 " in text and "rank1 " in text:
                break
        text = status_text(app)
        assert "2 files" in text and "rank0 " in text and "rank1 " in text, text
        assert "B/s" in text

"""One layer, every result; exports and screens saying the same thing (issue 19, §2-3).

A row's verdict is picked from each backend's latest result (a failure before a pass; an
``n/a`` or ``cancelled`` never hides a result), MIOpen's own verdict printed in the log has
its column and filter, and the app's exports agree with the screen and with ``miotui
decode``: the first iteration's totals, shares of the whole run, the table's order,
"not logged" where nothing was.  The expected values come from the core (decode, the
catalog) or from the log itself, never from the screen being checked."""

from __future__ import annotations

import csv
import io
import json
import shutil

from pilot_helpers import (
    BNORM,
    FAKE_DRIVER,
    ROOT,
    SIZE,
    app_for,
    conv,
    exported,
    loaded,
    plain,
    pool,
    screen_text,
    table,
    wait_until,
)

from miotui.execute.planning import ALL
from miotui.samplegen.generator import generate_text
from miotui.samplegen.spec import SampleSpec
from miotui.screens.startup import StartupScreen


async def export(pilot, app, fmt: str, path) -> str:
    app.export_to(fmt, str(path))
    await wait_until(pilot, lambda: exported(app, path), timeout=20, what=f"{fmt} export")
    return path.read_text()


def execution(n: int, time_ms: str) -> str:
    return (f'MIOpen(HIP): Info [LogConvolutionExecution] Problem="conv -n {n} -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 '
            f'-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1" Solver="GemmFwdRest" '
            f'Config(from_perf_db)="N/A" Time(from_find_db)={time_ms}\n')


# ---------------------------------------------------------------------- §2 one layer, every result

async def test_after_all_backends_the_row_shows_a_result_not_the_last_backends_na(tmp_path):
    """R -> all on a convolution: numpy and torch run and pass, numba and MIOpenDriver do
    not apply here (n/a, MIOpenDriver runs last).  The row reads ``ok`` naming a backend
    that ran, never the last backend's ``n/a``; both exports keep every backend's result."""
    log = tmp_path / "train.log"
    log.write_text(conv() + pool())
    app = app_for([log], driver_path=str(tmp_path / "no-such-driver"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        snap = app.snapshot(1)
        app.submit_run(app.runs.request(1, snap.problem, ALL, app.run_settings(iters=2), label="all backends"))
        await wait_until(pilot, lambda: not app.running and len(app.results_for(1)) >= 4, timeout=120,
                         what=lambda: f"results {[(r.backend, r.status) for r in app.results_for(1)]}")
        status = {r.backend: r.status for r in app.results_for(1)}
        assert status["miopen-driver"] == "n/a" and app.results_for(1)[-1].backend == "miopen-driver"
        passed = sorted(b for b, s in status.items() if s == "ok")
        assert len(passed) >= 2, status
        verdict = table(app).row_text(1)["verdict"]
        assert verdict.split()[0] == "ok" and verdict.split()[1] in passed, verdict
        assert f"+{len(status) - 1}" in verdict, "the row says other backends have results too"
        rows = list(csv.DictReader(io.StringIO(await export(pilot, app, "csv", tmp_path / "out.csv"))))
        row = next(r for r in rows if r["id"] == "1")
        assert row["run_status"] == "ok" and row["run_backend"] in passed
        assert {b: row[f"{b.replace('-', '_')}_status"] for b in status} == status
        doc = json.loads(await export(pilot, app, "json", tmp_path / "out.json"))
        layer = next(x for x in doc["layers"] if x["id"] == 1)
        assert {r["backend"]: r["status"] for r in layer["latest_runs"]} == status
        assert layer["verdict"]["status"] == "ok" and layer["verdict"]["backend"] in passed


async def test_a_failure_wins_over_a_later_pass_and_a_cancel_never_hides_a_result(tmp_path, monkeypatch):
    """MIOpenDriver (the fake, printing the real format) FAILS the layer, then numpy passes
    it: the row still reads FAILED, naming the driver.  A numpy run cancelled while queued
    replaces neither."""
    monkeypatch.setenv("MIOPEN_DRIVER", FAKE_DRIVER)
    monkeypatch.setenv("FAKE_MIOPEN_STYLE", "fail")
    log = tmp_path / "train.log"
    log.write_text(conv() + conv(c=16, k=16, f=1, pad=0))
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        p1, p2 = app.snapshot(1).problem, app.snapshot(2).problem
        app.submit_run(app.runs.request(1, p1, ("miopen-driver",), app.run_settings(), kind="driver",
                                        label="MIOpenDriver"))
        await wait_until(pilot, lambda: not app.running and app.results_for(1), timeout=60, what="the driver run")
        assert app.results_for(1)[-1].status == "failed"
        app.submit_run(app.runs.request(1, p1, ("numpy",), app.run_settings(iters=2), label="numpy"))
        await wait_until(pilot, lambda: not app.running and len(app.results_for(1)) == 2, timeout=60,
                         what="the numpy run")
        assert app.results_for(1)[-1].status == "ok"
        assert table(app).row_text(1)["verdict"] == "FAILED miopen-driver +1"
        # layer 2: numpy passes; a second numpy run is cancelled while it waits in the queue
        app.submit_run(app.runs.request(2, p2, ("numpy",), app.run_settings(iters=2), label="numpy"))
        await wait_until(pilot, lambda: not app.running and app.results_for(2), timeout=60, what="layer 2 run")
        app.submit_run(app.runs.request(1, p1, ("numpy",), app.run_settings(iters=2), label="numpy"))
        app.submit_run(app.runs.request(2, p2, ("numpy",), app.run_settings(iters=2), label="numpy"))
        assert app.runs.state(2) == "queued"
        app.cancel_runs(2)
        await wait_until(pilot, lambda: not app.running, timeout=60, what="the queue to drain")
        assert app.results_for(2)[-1].status == "cancelled"
        assert table(app).row_text(2)["verdict"].startswith("ok numpy"), table(app).row_text(2)["verdict"]


async def test_miopens_logged_verdict_has_a_column_and_a_filter(tmp_path):
    """A MIOpenDriver output in the log says FAILED (error 2.6e-01 over a tolerance of
    8.2e-02): the table shows it, and ``verdict:failed`` finds the layer before miotui ran it."""
    log = tmp_path / "driver.log"
    shutil.copy(next((ROOT / "tests" / "data" / "real_logs").glob("34_*")), log)
    with log.open("a") as fh:
        fh.write(conv(n=7))
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        t = table(app)
        failed = [i for i in t.model.rows if dict(app.snapshot(i).annotations).get("driver_verdict") == "FAILED"]
        assert failed, "the log's FAILED verdict was decoded"
        assert "miopen" in t.column_keys
        assert t.row_text(failed[0])["miopen"] == "FAILED 2.6e-01/8.2e-02"
        t.set_filter("verdict:failed")
        assert t.model.view == failed
        t.set_filter("miopen:failed")
        assert t.model.view == failed
        t.set_filter("-verdict:failed")
        assert failed[0] not in t.model.view and t.model.view


# ---------------------------------------------------------------------- §3 exports and screens agree

async def test_the_json_export_gives_the_first_iteration_decode_gives(tmp_path):
    from miotui.decoding.parallel import decode_files
    log = tmp_path / "train.log"
    log.write_text(generate_text(SampleSpec(format="info", iterations=1, startup=True)))
    expected = decode_files([str(log)], 1).startup.totals().to_dict()
    assert expected["kernels_compiled"] > 0
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.last_poll is not None and app.last_poll.finished, timeout=30)
        doc = json.loads(await export(pilot, app, "json", tmp_path / "out.json"))
        assert doc["stats"]["startup"] == expected


async def test_a_filtered_export_keeps_shares_of_the_whole_run(tmp_path):
    """n=1: 3 x 2 ms (60% of the logged 10 ms), n=2: 4 ms (40%); exporting only n=2 still
    says 40%, as the table does, not 100%."""
    log = tmp_path / "train.log"
    log.write_text(execution(1, "2.0") * 3 + execution(2, "4.0"))
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        await wait_until(pilot, lambda: app.model.time_summary is not None)
        t = table(app)
        t.set_filter("n:2")
        (layer_id,) = t.model.view
        assert t.row_text(layer_id)["share"].split()[0] == "40.0%"
        doc = json.loads(await export(pilot, app, "json", tmp_path / "out.json"))
        assert [x["time"]["share"] for x in doc["layers"]] == [0.4]
        rows = list(csv.DictReader(io.StringIO(await export(pilot, app, "csv", tmp_path / "out.csv"))))
        assert [float(r["time_share"]) for r in rows] == [0.4]


async def test_the_script_export_follows_the_tables_order(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(conv(n=1) * 5 + conv(n=2) + conv(n=3) * 3)
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 3)
        table(app).sort_by("n", reverse=True)
        order = list(table(app).model.view)
        assert order == [3, 2, 1]
        assert "sorted by n (reversed)" in app.layers_screen.scope_text()
        script = await export(pilot, app, "driver", tmp_path / "out.sh")
        ids = [int(line.split()[2].rstrip(":")) for line in script.splitlines() if line.startswith("# layer ")]
        assert ids == order


async def test_nothing_logged_is_not_logged_never_zero(tmp_path):
    """A first iteration logged at level 5 (Finds, searches) without the level-6 kernel
    lines: the CSV leaves kernel counts blank, ``i`` says "kernels not logged" and draws no
    compile bars."""
    lines = generate_text(SampleSpec(format="info", iterations=1, startup=True)).splitlines(keepends=True)
    log = tmp_path / "train.log"
    log.write_text("".join(line for line in lines if "Info2 [" not in line))
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.last_poll is not None and app.last_poll.finished
                         and app.model.startup.anything, timeout=30)
        assert app.model.startup.totals.kernels_compiled == 0 and app.model.startup.totals.searches > 0
        rows = list(csv.DictReader(io.StringIO(await export(pilot, app, "csv", tmp_path / "out.csv"))))
        assert rows and {r["kernels_compiled"] for r in rows} == {""} and {r["kernels_from_cache"] for r in rows} == {""}
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, StartupScreen) and app.screen.ready)
        title = plain(app.screen.query_one("#startup-title"))
        assert "kernels not logged" in title and "0 kernels" not in title
        assert "not logged" in plain(app.screen.query_one("#compile-label"))
        assert list(app.screen.query_one("#compile-spark").data) == [], "no bar for what was not logged"


async def test_file_filter_matches_every_file_a_merged_layer_was_seen_in(tmp_path):
    paths = []
    for rank in range(4):
        p = tmp_path / f"rank{rank}.log"
        p.write_text(conv() * 2 + conv(n=10 + rank))
        paths.append(p)
    app = app_for(paths)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        t = table(app)
        shared = next(i for i, r in t.model.rows.items() if r.snapshot.problem.n == 1)
        assert len(app.snapshot(shared).files) == 4
        t.set_filter("file:rank2")
        assert sorted(t.model.rows[i].snapshot.problem.n for i in t.model.view) == [1, 12]


async def test_the_detail_shows_a_merged_layers_executions_per_file(tmp_path):
    """Rank k runs the shared layer k + 1 times: the detail says so per file, and the counts
    add up to the layer's executions (the first file's only through the replayed lines)."""
    paths = []
    for rank in range(4):
        p = tmp_path / f"rank{rank}.log"
        p.write_text(conv() * (rank + 1) + conv(n=10 + rank))
        paths.append(p)
    app = app_for(paths)
    async with app.run_test(size=(120, 50)) as pilot:
        await loaded(pilot, app, 5)
        t = table(app)
        t.set_filter("n:1")
        await wait_until(pilot, lambda: len(t.model.view) == 1)
        shared = t.model.view[0]
        assert t.model.rows[shared].snapshot.executions == 10
        assert dict(app.snapshot(shared).file_executions) == {str(p): k + 1 for k, p in enumerate(paths)}
        await pilot.press("enter")
        def unwrapped() -> str:   # the paths are long: the detail wraps them
            return "".join(screen_text(app).split())
        await wait_until(pilot, lambda: "rank2.log:3executions" in unwrapped(), what=lambda: screen_text(app)[-3000:])
        assert "rank0.log:1execution" in unwrapped() and "rank3.log:4executions" in unwrapped()


async def test_the_wide_view_keeps_id_op_dir_dtype_frozen_with_a_file_column(tmp_path):
    paths = []
    for rank in range(2):
        p = tmp_path / f"a-long-rank-log-name-{rank}.log"
        p.write_text(conv(n=1 + rank) + pool())
        paths.append(p)
    app = app_for(paths)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot, app, 3)
        t = table(app)
        await pilot.press("w")
        assert "file" in t.column_keys
        await pilot.press("right", "right", "right", "right")
        await wait_until(pilot, lambda: t.scroll_x > 0)
        header = t.visible_text()[0].split()
        assert header[:4] == ["#▲", "op", "dir", "dtype"], header
        assert t.visible_text()[1].split()[1:4] == ["conv", "fwd", "fp32"]


async def test_a_screen_uses_one_unit_family_and_its_arithmetic_holds(tmp_path):
    """A batch norm (memory-bound) run: the detail prints the bytes moved in MB next to
    a rate in MB/s or GB/s, and bytes / median time comes out as the rate printed."""
    from miotui.views import units
    log = tmp_path / "train.log"
    log.write_text(BNORM)
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 1)
        await pilot.press("r")
        await wait_until(pilot, lambda: not app.running and app.results_for(1), timeout=60, what="the run")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.screen.query("#detail-runs") and app.screen.ready, what="the detail")
        text = screen_text(app) + plain(app.screen.query_one("#detail-runs"))
        assert "MiB" not in text and "GiB" not in text and "KiB" not in text
        r = app.results_for(1)[-1]
        moved = r.problem.bytes_moved
        line = " ".join(plain(app.screen.query_one("#detail-runs")).split())
        assert f"speed {units.byte_rate(r.gbps)} = {units.size(moved)} moved / {units.time_ms(r.median_ms)} median" \
            in line
        assert abs(moved / (r.median_ms / 1e3) / 1e9 - r.gbps) <= 1e-9 * r.gbps

"""Numbers a user can trust: each test reproduces what a demanding user met (the run
chooser ran numpy whatever was highlighted, a second ``r`` showed the first result
again, numba "ran" dense convolutions, noise went unflagged, the detail said "No run
yet" while running, GFLOP/s for memory-bound layers, MIOpen's own verdict hidden) and
checks what the app does now."""

from __future__ import annotations

import re
import shutil
import time

from pilot_helpers import (
    ROOT,
    SIZE,
    app_for,
    conv,
    loaded,
    plain,
    shown,
    status_text,
    table,
    wait_until,
)

from miotui.screens.detail import DetailScreen
from miotui.screens.dialogs import RunChooserScreen


async def chooser_ready(pilot, app) -> RunChooserScreen:
    await pilot.press("R")
    chooser = app.screen
    assert isinstance(chooser, RunChooserScreen)
    await wait_until(pilot, lambda: "checking" not in plain(chooser.query_one("#availability")))
    return chooser


def detail_text(app, part: str) -> str:
    return plain(app.screen.query_one(f"#detail-{part}"))


# ---------------------------------------------------------------------- the run chooser

async def test_the_chooser_runs_what_is_highlighted_whatever_field_has_focus_and_fits_80x24(log):
    """R, arrow to "all", tab to iterations, type 3, enter: only numpy ran (the
    RadioSet's pressed button was still the first), and at 80x24 the batch field and
    the Run button were cut off."""
    app = app_for([log])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(4)             # the pooling layer: numba's kernels apply
        chooser = await chooser_ready(pilot, app)
        screen = app.screen.region
        for sel in ("#backend", "#iters", "#batch", "#run", "#cancel"):
            region = chooser.query_one(sel).region
            assert region.height > 0 and region.width > 0, sel
            assert screen.contains_region(region), f"{sel} at {region} is outside the 80x24 screen"
        choices = chooser.query_one("#backend")
        for _ in range(6):                          # the arrows skip what is not installed here
            await pilot.press("down")
            if choices._selected == 5:
                break
        assert choices.chosen == "all", "the highlighted option is the chosen one"
        await pilot.press("tab", "3", "enter")
        await wait_until(pilot, lambda: not app.running and len(app.results_for(4)) >= 4, timeout=90,
                         what=lambda: f"results {[r.backend for r in app.results_for(4)]}")
        ran = {r.backend: r for r in app.results_for(4)}
        assert {"numpy", "numba", "torch", "miopen-driver"} <= set(ran)
        assert ran["miopen-driver"].status == "n/a"
        assert all(r.iterations == 3 for r in ran.values() if r.status == "ok")
        assert sum(r.status == "ok" for r in ran.values()) >= 2


# ---------------------------------------------------------------------- re-measuring and history

async def test_a_second_r_measures_again_and_the_detail_keeps_the_history(log):
    """The second r showed the first run's cached result, silently."""
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(1)
        for n in (1, 2):
            await pilot.press("r")
            await wait_until(pilot, lambda n=n: len(app.runs.history(1)) == n and not app.running, timeout=30)
        first, second = (rec.result for rec in app.runs.history(1))
        assert not first.cached and not second.cached
        assert first.times_ms != second.times_ms, "two measurements, not one shown twice"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready, what="the detail")
        runs = detail_text(app, "runs")
        assert "Run history (2)" in runs
        assert runs.count("10 iterations, 1 warm-up") == 2


async def test_a_result_from_the_cache_is_marked_as_such(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        snap = app.snapshot(5)
        for n in (1, 2):
            req = app.runs.request(5, snap.problem, ("numpy",), app.run_settings(iters=2), label="numpy")
            req.use_cache = True
            app.submit_run(req)
            await wait_until(pilot, lambda n=n: len(app.runs.history(5)) == n and not app.running, timeout=30)
        assert [rec.result.cached for rec in app.runs.history(5)] == [False, True]
        # "ok (noisy, cached)" when the run's spread was wide on a loaded host
        assert table(app).row_text(5)["verdict"] in ("ok numpy (cached)", "ok numpy (noisy, cached)")
        app.open_detail(5)
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready)
        assert "(cached)" in detail_text(app, "runs")


# ---------------------------------------------------------------------- side by side: n/a, noise

async def test_all_backends_on_a_dense_conv_lists_numba_as_not_applicable(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(1)                 # a dense 3x3 convolution
        chooser = await chooser_ready(pilot, app)
        chooser.query_one("#backend-all").value = True
        chooser.query_one("#iters").value = "2"
        await pilot.click("#run")
        await wait_until(pilot, lambda: not app.running and len(app.results_for(1)) >= 4, timeout=90)
        numba = [r for r in app.results_for(1) if r.backend == "numba"]
        assert [r.status for r in numba] == ["n/a"]
        assert "numba's direct kernels are for depthwise" in numba[0].message
        app.open_detail(1)
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready)
        assert "n/a: a dense convolution: numba's direct kernels" in " ".join(detail_text(app, "runs").split())


async def test_a_noisy_result_is_flagged_with_its_spread(log, monkeypatch):
    """hyperfine warns when outliers make the mean untrustworthy; miotui said nothing."""
    from miotui.execute.backends import NumpyBackend
    real = NumpyBackend.run
    calls = {"n": 0}

    def uneven(self, problem, prepared, cancel):        # the machine got busy after two calls
        calls["n"] += 1
        if calls["n"] > 2:
            time.sleep(0.03)
        return real(self, problem, prepared, cancel)

    monkeypatch.setattr(NumpyBackend, "run", uneven)
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(5)
        chooser = await chooser_ready(pilot, app)
        chooser.query_one("#backend-numpy").value = True
        chooser.query_one("#iters").value = "5"
        await pilot.click("#run")
        await wait_until(pilot, lambda: not app.running and app.results_for(5), timeout=30)
        result = app.results_for(5)[-1]
        assert result.noisy and result.spread > 1.5
        assert table(app).row_text(5)["verdict"] == "ok numpy (noisy)"
        assert any("noisy" in n.message and n.severity == "warning" for n in app._notifications)
        app.open_detail(5)
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready)
        runs = " ".join(detail_text(app, "runs").split())
        assert "ok noisy" in runs and "the median is ×" in runs and "min–max" in runs


# ---------------------------------------------------------------------- the detail while running

async def test_the_detail_shows_a_running_run_and_says_what_escape_and_x_do(tmp_path, long_big_runs):
    """The title said [running] while the body said "No run yet"; escape cancelled the run
    while the footer said Back."""
    log = tmp_path / "big.log"
    log.write_text(conv(n=32, c=256, h=56, k=256))
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 1)
        await pilot.press("r", "enter")
        assert isinstance(app.screen, DetailScreen)
        await wait_until(pilot, lambda: "Running:" in detail_text(app, "state")
                         and "numpy" in detail_text(app, "state"),
                         timeout=20, what=lambda: detail_text(app, "state"))
        assert "No run yet" not in detail_text(app, "runs")
        keys = {b.binding.key: b.binding.description for b in app.screen.active_bindings.values()}
        assert keys.get("x") == "Cancel run" and keys.get("escape") == "Back"
        await pilot.press("escape")
        assert not isinstance(app.screen, DetailScreen) and app.running, "escape goes back; the run goes on"
        await pilot.press("enter")
        await pilot.press("x")
        await wait_until(pilot, lambda: not app.running, timeout=20)
        assert [r.status for r in app.results_for(1)] == ["cancelled"]
        await wait_until(pilot, lambda: "Running:" not in detail_text(app, "state"),
                         what=lambda: detail_text(app, "state"))
        assert "Running:" not in detail_text(app, "state")
        assert "x" not in {b.binding.key for b in app.screen.active_bindings.values()}
        from miotui.app import binding_groups
        detail = dict(binding_groups())["layer detail"]
        assert any(b.key == "escape,q" and b.description == "Back" for b in detail)


# ---------------------------------------------------------------------- units

async def test_units_mib_gb_per_s_for_memory_bound_layers_and_no_exponents(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        for layer in (1, 5):                          # a convolution, a batch norm
            table(app).move_cursor_to(layer)
            await pilot.press("r")
            await wait_until(pilot, lambda layer=layer: app.results_for(layer) and not app.running, timeout=30)
        assert table(app).row_text(1)["rate"].endswith("FLOP/s")
        bnorm = table(app).row_text(5)["rate"]
        assert bnorm.endswith("B/s") and "FLOP" not in bnorm, f"a batch norm is judged by bandwidth: {bnorm}"
        assert re.search(r"\d kB ·", status_text(app)), status_text(app)
        for row in shown(app):
            for key, cell in row.items():
                assert not re.search(r"\de[-+]\d", cell), (key, cell)
        app.open_detail(5)
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready)
        assert "B/s" in detail_text(app, "runs") and "FLOP/s" not in detail_text(app, "runs")


def test_the_precision_policy():
    from miotui.views import units
    assert units.flops(64) == "64.0 FLOP" and units.flops(6.4e-8 * 1e9) == "64.0 FLOP"
    assert units.size(122_000_000) == "122 MB" and units.size(512) == "512 B"
    assert units.time_ms(0.45) == "450 µs" and units.time_ms(1234) == "1.23 s" and units.time_ms(12.34) == "12.3 ms"
    assert units.byte_rate(0.8) == "800 MB/s" and units.flop_rate(1234) == "1.23 TFLOP/s"
    assert units.sig(9.996) == "10.0" and units.sig(1234.4) == "1,234"
    assert units.time_ms(None) == units.MISSING and units.sci(1.23e-7) == "1.2e-07"


# ---------------------------------------------------------------------- MIOpen's verdict next to ours

async def test_miopens_logged_failure_is_shown_next_to_miotuis_verdict(tmp_path):
    src = next((ROOT / "tests" / "data" / "real_logs").glob("34_*"))
    log = tmp_path / "driver.log"
    shutil.copy(src, log)
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 1)
        table(app).move_cursor_to(1)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.ready, what="the detail")
        compare = " ".join(detail_text(app, "compare").split())
        assert "MIOpenDriver (in the log): FAILED (error 2.6e-01, tolerance 8.2e-02" in compare
        assert "miotui: not run yet" in compare
        await pilot.press("r")
        await wait_until(pilot, lambda: app.results_for(1) and not app.running, timeout=60)
        await wait_until(pilot, lambda: "miotui (" in detail_text(app, "compare") and app.screen.ready,
                         what=lambda: f"the run in the comparison: {detail_text(app, 'compare')!r}")
        compare = " ".join(detail_text(app, "compare").split())
        assert "miotui (" in compare and "tolerance" in compare
        assert "Why they differ:" in compare


# ---------------------------------------------------------------------- one layer, one id

async def test_the_id_column_is_the_layer_id_everywhere(log):
    from miotui import export
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        ids = [int(row["id"]) for row in shown(app)]
        assert ids == [1, 2, 3, 4, 5]
        doc = export.to_json(app.catalog.layers(), [], {"lines": 0, "bytes": 0, "seconds": 0})
        assert [layer["id"] for layer in doc["layers"]] == ids
        assert [(s.id, s.problem) for s in app.catalog.layers()] == \
            [(i, table(app).model.rows[i].snapshot.problem) for i in ids]
        assert table(app).visible_text()[1].split()[0] == "1"

"""The compare app (``miotui --compare OLD NEW``), driven with Textual's Pilot on real shapes:
the bundled ResNet-50 log against a copy where one layer changed solver and time, and a NEW
log that grows while it is followed."""

from __future__ import annotations

from diff_support import DEMO, SLOW, with_one_layer_changed
from pilot_helpers import SIZE, wait_until

from miotui.compare_app import CompareApp


def _texts(app: CompareApp, row: int) -> list[str]:
    from textual.widgets import DataTable
    table = app.compare_screen.query_one(DataTable)
    return [str(cell) for cell in table.get_row_at(row)]


def _static(app: CompareApp, wid: str) -> str:
    from textual.widgets import Static
    return str(app.compare_screen.query_one(wid, Static).render())


async def test_compare_shows_the_changed_layer_first_with_both_sides(tmp_path):
    slower, _t, _ms = with_one_layer_changed(tmp_path)
    app = CompareApp([str(DEMO)], [str(slower)], reader_poll_interval=0.02, poll_interval=0.02)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        await wait_until(pilot, lambda: screen.comparison is not None and app.reader.finished
                         and len(screen.comparison.new.layers) == 120, what="the comparison of both runs")
        await wait_until(pilot, lambda: "1 changed" in _static(app, "#compare-head"), what="the counts")
        row = _texts(app, 0)
        assert row[1] == "changed" and row[2] == "conv" and f"GemmFwd1x1_0_1 -> {SLOW}" in row[-1]
        assert "x10.0" in row
        old, new = _static(app, "#compare-old"), _static(app, "#compare-new")
        assert "solver: GemmFwd1x1_0_1" in old and f"solver: {SLOW}" in new
        assert f"solver GemmFwd1x1_0_1 -> {SLOW}" in _static(app, "#compare-changes")
        await pilot.press("down")
        await wait_until(pilot, lambda: "same: no change" in _static(app, "#compare-changes"),
                         what="the second pair's detail")


async def test_following_new_updates_the_pairs_and_keeps_the_cursor(tmp_path):
    lines = DEMO.read_text().splitlines(keepends=True)
    new = tmp_path / "new.log"
    new.write_text("".join(lines[: len(lines) // 3]))
    app = CompareApp([str(DEMO)], [str(new)], follow=True, reader_poll_interval=0.02, poll_interval=0.02)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        await wait_until(pilot, lambda: screen.comparison is not None and screen.comparison.count("removed") > 0,
                         what="a first comparison with layers NEW has not reached yet")
        first = screen.comparison
        assert first.count("same") + first.count("changed") < 120
        await pilot.press("down", "down")
        kept = screen.selected
        assert kept is not None
        with new.open("a") as fh:
            fh.write("".join(lines[len(lines) // 3:]))
        await wait_until(pilot, lambda: screen.comparison is not None and screen.comparison.count("same") == 120,
                         timeout=20, what=lambda: f"every layer same: {screen.comparison.counts_text()}")
        assert screen.comparison.count("removed") == 0 and screen.redraws >= 2
        selected = screen.selected
        assert selected is not None and selected.either.layer.problem == kept.either.layer.problem

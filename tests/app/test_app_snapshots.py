"""Snapshot tests of the main screens at a fixed size (pytest-textual-snapshot).

Update after an intended change with ``pytest tests/app/test_app_snapshots.py --snapshot-update``
and look at the report.  Everything on screen is deterministic: a fixed log read once
(no follow, so no "new" highlight and no rate), no job, no toast, two reference threads.
The layers screen is taken at three sizes (80x24, 120x40, 200x50): which columns show
depends on the width (priorities), and that is what these pin.  Where the time goes
(issue 14: the table sorted by total, the first-iteration screen, the detail's time and
first-iteration sections) is taken at 80x24 and 160x45 over a generated first iteration.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pilot_helpers import SIZE, settled, wait_until

from miotui.app import MiotuiApp
from miotui.execute import threads
from miotui.execute.blas import BlasThreads

_CMD = "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver "

LOG = "".join([
    "MIOpen(HIP): Command [LogCmdFindConvolution] ./bin/MIOpenDriver conv -n 32 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 "
    "-p 3 -q 3 -u 2 -v 2 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n",
    "MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: ConvAsmImplicitGemmGTCDynamicFwdXdlops , 0, "
    "0.545735\n",
    (_CMD + "conv -n 32 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n") * 3,
    "MIOpen(HIP): Command [LogCmdBNorm] ./bin/MIOpenDriver bnorm -n 32 -c 64 -H 112 -W 112 -m 1 --forw 1 -b 0 "
    "-s 1 -r 1\n" * 3,
    "MIOpen(HIP): Command [LogCmdActivation] ./bin/MIOpenDriver activ -n 32 -c 64 -H 112 -W 112 -m 3 --forw 1 "
    "-A 1 -B 0 -G 1\n" * 3,
    "MIOpen(HIP): Command [Pooling_logging_cmd] ./bin/MIOpenDriver pool -M 0 --input 32x64x112x112,"
    "802816x12544x112x1 -y 3 -x 3 -p 1 -q 1 -v 2 -u 2 -m max -F 1 -t 1\n" * 2,
    "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver convfp16 -n 8 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 "
    "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 2 -F 4 -t 1\n" * 2,
    "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 8 -H 16 -W 16 -k 8 -y 3 -x 3 "
    "-p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 3 -F 1 -t 1\n",
])


@pytest.fixture
def log(tmp_path: Path, monkeypatch) -> Path:
    """The fixed log (this module's, not conftest's small one), in the test's own directory
    (conftest's ``_isolated``: no user keymap or settings either)."""
    # the detail screen's memory estimate counts one batch part per worker thread, and the
    # thread count follows the machine's cores: pin it to the 2 these snapshots were made
    # with.  The split also needs numpy's OpenBLAS thread API (a numpy built on another
    # BLAS has none): say it is there, as on the machine that made them (a run that then
    # finds no API just runs unsplit).
    monkeypatch.setattr(threads, "THREADS", 2)
    monkeypatch.setattr(BlasThreads, "usable", property(lambda self: True))
    p = tmp_path / "train.log"
    p.write_text(LOG)
    return p


def make_app(log: Path) -> MiotuiApp:
    app = MiotuiApp([str(log)], find_job=False, reader_poll_interval=0.01, poll_interval=0.02)
    app.animation_level = "none"     # the op tabs' underline would be caught mid-slide
    return app


async def read_all(pilot) -> None:
    app: MiotuiApp = pilot.app  # type: ignore[assignment]
    await wait_until(pilot, lambda: app.last_poll is not None and app.last_poll.finished
                     and len(app.layers_screen.table.model.rows) == 5, timeout=10, what="the log read")
    await settled(pilot)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)])
def test_layers_screen(log, snap_compare, size):
    assert snap_compare(make_app(log), terminal_size=size, run_before=read_all)


def test_run_chooser_fits_80x24(log, snap_compare):
    async def before(pilot):
        await read_all(pilot)
        await pilot.press("R")
        chooser = pilot.app.screen
        await wait_until(pilot, lambda: "checking" not in str(chooser.query_one("#availability").content),
                         timeout=10, what="the backends' availability")
        await settled(pilot)
    assert snap_compare(make_app(log), terminal_size=(80, 24), run_before=before)


def test_layers_screen_filtered_with_the_raw_log(log, snap_compare):
    async def before(pilot):
        await read_all(pilot)
        await pilot.press("slash", *"op:conv", "enter", "down", "l")
        view = pilot.app.layers_screen.log_pane.view
        await wait_until(pilot, lambda: view.known >= 14 and view._blocks.get(0) is not None, timeout=10,
                         what="the raw log's lines")
        await settled(pilot)
    assert snap_compare(make_app(log), terminal_size=SIZE, run_before=before)


def test_detail_screen(log, snap_compare):
    async def before(pilot):
        await read_all(pilot)
        app = pilot.app
        app.layers_screen.table.move_cursor_to(1)
        await pilot.press("enter")
        await wait_until(pilot, lambda: getattr(app.screen, "reference_bytes", None) is not None
                         and app.screen.ready, timeout=10, what="the detail laid out")
        await settled(pilot)
    assert snap_compare(make_app(log), terminal_size=SIZE, run_before=before)


def test_help_screen(log, snap_compare):
    assert snap_compare(make_app(log), terminal_size=SIZE, run_before=read_all, press=["question_mark"])


def test_export_dialog(log, snap_compare):
    assert snap_compare(make_app(log), terminal_size=SIZE, run_before=read_all, press=["e"])


def test_undecoded_screen(log, snap_compare):
    async def before(pilot):
        await read_all(pilot)
        await pilot.press("u")
        await wait_until(pilot, lambda: pilot.app.screen.query_one("DataTable").row_count == 1, timeout=10,
                         what="the undecoded line listed")
        await settled(pilot)
    assert snap_compare(make_app(log), terminal_size=SIZE, run_before=before)


# ---------------------------------------------------------------------- where the time goes (issue 14)

@pytest.fixture
def first_iteration_log(log: Path) -> Path:
    """A generated first iteration (Find-Db misses, tuning searches, kernels compiled or
    loaded, the elapsed-time field) beside the fixed log, read once."""
    from miotui.samplegen.generator import generate_text
    from miotui.samplegen.spec import SampleSpec
    p = log.parent / "first.log"
    p.write_text(generate_text(SampleSpec(format="info", iterations=1, startup=True)))
    return p


async def read_first_iteration(pilot) -> None:
    app: MiotuiApp = pilot.app  # type: ignore[assignment]
    await wait_until(pilot, lambda: app.last_poll is not None and app.last_poll.finished
                     and app.model.startup.anything and app.model.time_summary is not None, timeout=30,
                     what="the first iteration read")
    await settled(pilot)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
def test_layers_sorted_by_total(first_iteration_log, snap_compare, size):
    async def before(pilot):
        await read_first_iteration(pilot)
        await pilot.press("t")
        await wait_until(pilot, lambda: pilot.app.layers_screen.table.model.sort_key == "total_ms", timeout=10,
                         what="the table sorted by total")
        await settled(pilot)
    assert snap_compare(make_app(first_iteration_log), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
def test_first_iteration_screen(first_iteration_log, snap_compare, size):
    async def before(pilot):
        await read_first_iteration(pilot)
        await pilot.press("i")
        await wait_until(pilot, lambda: getattr(pilot.app.screen, "ready", False), timeout=10,
                         what="the first-iteration screen laid out")
        await settled(pilot)
    assert snap_compare(make_app(first_iteration_log), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
def test_detail_time_and_first_iteration(first_iteration_log, snap_compare, size):
    async def before(pilot):
        await read_first_iteration(pilot)
        await pilot.press("enter")
        app = pilot.app
        await wait_until(pilot, lambda: getattr(app.screen, "reference_bytes", None) is not None
                         and app.screen.ready, timeout=10, what="the detail laid out")
        if size == (80, 24):     # the sections below the command and the fields
            app.screen.query_one("#detail-time").scroll_visible(top=True, animate=False)
        await settled(pilot)
    assert snap_compare(make_app(first_iteration_log), terminal_size=size, run_before=before)

"""A screen that fits: column priority and frozen columns, export of what the table
shows, the raw log pane as lnav shows a file, the empty state, ``q``, the keymap and
theme, and the app's own ``--driver``/``--launcher``."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pilot_helpers import (
    FAKE_DRIVER,
    ROOT,
    SIZE,
    app_for,
    conv,
    exported,
    header_text,
    loaded,
    pane_lines,
    pane_state,
    plain,
    pool,
    table,
    wait_until,
)

from miotui.screens.detail import DetailScreen
from miotui.screens.dialogs import ExportScreen
from miotui.screens.driver_panel import DriverScreen
from miotui.screens.info import HelpScreen

SOLVER = "ConvAsmImplicitGemmGTCDynamicFwdXdlopsNHWC"
INFO = f"MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: {SOLVER} , 0, 0.545735\n"


# ---------------------------------------------------------------------- columns

@pytest.mark.parametrize("width,shown_keys,hidden_keys", [
    # no run yet: run time, speed and verdict take no room until a run fills them
    (80, ["id", "op", "dir", "dtype", "n", "c", "h", "w", "k", "filter", "executions", "share"],
     ["dilation", "groups", "solver", "layout", "mode", "run_ms", "verdict", "rate"]),
    (120, ["id", "op", "stride", "pad", "solver", "executions", "share", "total_ms"], ["dilation", "groups", "rate"]),
    (200, ["id", "op", "solver", "dilation", "groups", "layout", "mode", "output"], []),
])
async def test_columns_by_priority_at_each_width(tmp_path, width, shown_keys, hidden_keys):
    log = tmp_path / "train.log"
    log.write_text(conv(find=True) + INFO + conv() * 3 + pool())
    app = app_for([log])
    async with app.run_test(size=(width, 30)) as pilot:
        await loaded(pilot, app, 2)
        t = table(app)
        keys = t.column_keys
        for key in shown_keys:
            assert key in keys, (width, key, keys)
        for key in hidden_keys:
            assert key not in keys, (width, key, keys)
        assert keys[:4] == ["id", "op", "dir", "dtype"]
        assert t.virtual_size.width <= t.size.width, "no sideways scrolling outside the wide view"
        if width >= 200:
            assert SOLVER in "\n".join(t.visible_text()), "the solver name takes the free width"


async def test_the_wide_view_scrolls_with_the_first_columns_frozen(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(conv(find=True) + INFO + conv() * 3 + pool())
    app = app_for([log])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot, app, 2)
        t = table(app)
        await pilot.press("w")
        assert "dilation" in t.column_keys and t.virtual_size.width > t.size.width
        for _ in range(12):
            await pilot.press("right")
        assert t.scroll_x > 0
        header, first = t.visible_text()[:2]
        assert header.split()[:4] == ["#▲", "op", "dir", "dtype"], header
        assert first.split()[:4] == ["1", "conv", "fwd", "fp32"], first
        assert "N" not in header.split()[4:6], "the shape columns scrolled away under the frozen ones"
        await pilot.press("w")
        assert "dilation" not in t.column_keys and t.scroll_x == 0


# ---------------------------------------------------------------------- export

async def test_export_writes_what_the_table_shows_with_run_results(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        table(app).move_cursor_to(1)
        await pilot.press("r")
        await wait_until(pilot, lambda: app.results_for(1) and not app.running, timeout=30)
        await pilot.press("slash", *"op:conv", "enter")
        await pilot.press("e")
        dialog = app.screen
        assert isinstance(dialog, ExportScreen)
        assert "Export 3 of 5 layers" in plain(dialog.query_one(".dialog-title"))
        assert "filter: op:conv" in plain(dialog.query_one("#export-scope"))
        path = dialog.query_one("#path")
        assert path.value.endswith(".sh")
        await pilot.press("down")
        assert path.value.endswith(".csv"), "the file name follows the highlighted format"
        await pilot.press("down")
        assert path.value.endswith(".json")
        await pilot.press("up", "enter")
        await wait_until(pilot, lambda: exported(app, "miotui_layers.csv"))
        rows = list(csv.DictReader(open("miotui_layers.csv")))
        assert [r["op"] for r in rows] == ["conv"] * 3 and [r["id"] for r in rows] == ["1", "2", "3"]
        assert rows[0]["run_status"] == "ok" and float(rows[0]["run_median_ms"]) > 0
        assert rows[1]["run_status"] == ""
        app.export_to("json", "out.json")
        await wait_until(pilot, lambda: exported(app, "out.json"))
        doc = json.loads(Path("out.json").read_text())
        assert len(doc["layers"]) == 3 and doc["layers"][0]["runs"][0]["status"] == "ok"


# ---------------------------------------------------------------------- the raw log pane

def sighting_log(path: Path) -> None:
    with open(path, "w") as fh:
        for i in range(1, 30_001):
            if i in (20_001, 30_000):
                fh.write(conv(n=7))
            elif i == 25_000:
                fh.write("MIOpen(HIP): Warning [needle] the one line to find\n")
            else:
                fh.write(f"step {i} loss {1 / i:.6f}\n")
        fh.write(pool())


async def test_the_raw_log_pane_shows_each_sighting_in_context_like_lnav(tmp_path):
    """It showed the last 500 lines of the file under the layer's header."""
    log = tmp_path / "train.log"
    sighting_log(log)
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 2)
        table(app).move_cursor_to(1)
        await pilot.press("l")
        await wait_until(pilot, lambda: "sighting 1/2: line 20,001 " in header_text(app), what=lambda: header_text(app))
        await wait_until(pilot, lambda: any("▶" in ln and "20001 │" in ln and "conv -n 7" in ln
                                            for ln in pane_lines(app)),
                         what=lambda: pane_state(app))
        assert any("19999 │ step 19999" in ln for ln in pane_lines(app)), "the lines before it"
        assert not any("live tail" in ln for ln in pane_lines(app))
        view = app.layers_screen.log_pane.view
        view.focus()
        await pilot.press("n")
        await wait_until(pilot, lambda: "sighting 2/2: line 30,000 " in header_text(app))
        await wait_until(pilot, lambda: any("▶" in ln and "30000 │" in ln for ln in pane_lines(app)))
        await pilot.press("N")
        await wait_until(pilot, lambda: any("20001 │" in ln for ln in pane_lines(app)))
        await pilot.press("slash")
        assert app.focused.id == "log-search"
        await pilot.press(*"one line to find", "enter")
        await wait_until(pilot, lambda: view.match == 25_000, what=lambda: f"match {view.match}")
        await wait_until(pilot, lambda: any("25000 │" in ln and "one line to find" in ln for ln in pane_lines(app)))
        assert "/one line to find: line 25,000" in header_text(app)
        await pilot.press("n")                   # a search is active: n is the next match (it wraps)
        await wait_until(pilot, lambda: "search wrapped" in " ".join(n.message for n in app._notifications))
        await pilot.press("w")
        assert view.wrap and "wrap (on)" in header_text(app)
        await pilot.press("escape")
        assert not view.search and "sighting" in header_text(app)
        ctx = app.layers_screen.log_pane._readers[str(log)]
        assert len(ctx._offsets) < 40, "a sparse index: one offset per 1024 lines"


async def test_a_followed_log_grows_under_the_pane(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(conv() + "".join(f"noise {i}\n" for i in range(50)))
    app = app_for([log], follow=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(table(app).model.rows) == 1)
        await pilot.press("l")
        view = app.layers_screen.log_pane.view
        await wait_until(pilot, lambda: view.known >= 51)
        view.focus()
        await pilot.press("end")
        with open(log, "a") as fh:
            fh.write("".join(f"later {i}\n" for i in range(100)) + conv())
        await wait_until(pilot, lambda: view.known >= 152, what=lambda: f"{view.known} lines known")
        await wait_until(pilot, lambda: any("later 99" in ln for ln in pane_lines(app)), what=lambda: pane_lines(app))


async def test_a_short_followed_log_that_outgrows_the_pane_stays_at_its_end(tmp_path):
    """At the end of a log shorter than the pane, the pane follows it (tail -f), also
    when the new lines hold no MIOpen call. It stayed on line 1 twice over: it heard of
    new lines only with a changed layer, and its jump to the end came before Textual had
    laid the view out with a scroll bar (a view without one refuses to scroll). At 80
    columns the last line was then hidden under the horizontal scroll bar."""
    log = tmp_path / "train.log"
    log.write_text(conv() + "".join(f"noise {i}\n" for i in range(3)))
    app = app_for([log], follow=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: len(table(app).model.rows) == 1)
        await pilot.press("l")
        view = app.layers_screen.log_pane.view
        await wait_until(pilot, lambda: view.known >= 4, what=lambda: pane_state(app))
        view.focus()
        await pilot.press("end")
        with open(log, "a") as fh:
            fh.write("".join(f"later {i}\n" for i in range(100)))
        await wait_until(pilot, lambda: view.known >= 104, what=lambda: f"{view.known} lines known")
        await wait_until(pilot, lambda: any("later 99" in ln for ln in pane_lines(app)), what=lambda: pane_state(app))


# ---------------------------------------------------------------------- empty state, f, q

async def test_an_empty_log_says_which_variable_to_set(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("epoch 1 loss 0.5\nepoch 2 loss 0.4\n")
    app = app_for([log], follow=True)
    async with app.run_test(size=(80, 24)) as pilot:
        empty = app.layers_screen.query_one("#empty")
        # lines that name no format are held until the writer pauses (2 s), then read as MIOpen's
        await wait_until(pilot, lambda: "No MIOpen layer in 2 lines" in plain(empty), timeout=10,
                         what=lambda: plain(empty))
        assert "MIOPEN_ENABLE_LOGGING_CMD=1" in plain(empty) and empty.display
        with open(log, "a") as fh:
            fh.write(conv())
        await wait_until(pilot, lambda: len(table(app).model.rows) == 1)
        await wait_until(pilot, lambda: not empty.has_class("visible"), what="the empty text hidden")
        assert not empty.has_class("visible")


async def test_f_on_a_file_that_is_not_followed_says_so_and_q_goes_back_or_quits(log):
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        await pilot.press("f")
        assert any("Not following" in n.message and "--follow" in n.message for n in app._notifications)
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("q")
        assert not isinstance(app.screen, DetailScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        await wait_until(pilot, lambda: app.return_code is not None, what="q to quit the app")
    assert app.return_code == 0 and not app.reader.alive


# ---------------------------------------------------------------------- keymap and theme

def keymap_with_problems(tmp_path: Path) -> Path:
    km = tmp_path / "keymap.toml"
    km.write_text('"layers.run" = "s"\n"layers.nope" = "z"\n"detail.back" = "escape"\n')
    return km


async def test_keymap_problems_are_notified_when_the_app_starts(log, tmp_path, monkeypatch):
    from miotui.launch import config_report
    monkeypatch.setenv("MIOTUI_KEYMAP", str(keymap_with_problems(tmp_path)))
    keymap, problems = config_report()
    app = app_for([log], config_problems=problems)
    app.set_keymap(keymap.keys)
    async with app.run_test(size=SIZE) as pilot:
        # read at once: the notices time out after 10 s, which a loaded host can spend loading
        await wait_until(pilot, lambda: app._notifications, what="a notification")
        messages = " ".join(n.message for n in app._notifications)
        assert "unknown binding id 'layers.nope'" in messages
        assert "key 's' is bound to layers.run and layers.sort" in messages


def run_miotui(*argv: str, env: dict, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miotui", *argv], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **env), cwd=ROOT)


def test_check_config_reports_unknown_ids_conflicts_and_bad_files(tmp_path):
    km = keymap_with_problems(tmp_path)
    proc = run_miotui("--check-config", env={"MIOTUI_KEYMAP": str(km)})
    assert proc.returncode == 1
    assert "unknown binding id 'layers.nope'" in proc.stdout and "bound to layers.run and layers.sort" in proc.stdout
    km.write_text("not toml [")
    proc = run_miotui("--check-config", env={"MIOTUI_KEYMAP": str(km)})
    assert proc.returncode == 1 and "invalid TOML" in proc.stdout
    km.write_text('"layers.run" = "ctrl+r"\n')
    proc = run_miotui("--check-config", env={"MIOTUI_KEYMAP": str(km)})
    assert proc.returncode == 0 and "no problems" in proc.stdout


def test_the_keymap_is_read_bounded_and_only_from_a_regular_file(tmp_path):
    """MIOTUI_KEYMAP=/dev/zero grew to 11 GB; a FIFO blocked start-up."""
    from miotui.config import MAX_CONFIG_BYTES, load_keymap
    assert "not a regular file" in load_keymap("/dev/zero").problems[0]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "not a regular file" in load_keymap(str(fifo)).problems[0]     # returns: nothing writes to it
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * MAX_CONFIG_BYTES + "\n")
    assert "larger than" in load_keymap(str(big)).problems[0]
    proc = run_miotui("--check-config", env={"MIOTUI_KEYMAP": "/dev/zero"}, timeout=20)
    assert proc.returncode == 1 and "not a regular file" in proc.stdout


async def test_the_theme_choice_persists(log, tmp_path):
    from miotui.config import load_theme
    settings = tmp_path / "config" / "miotui" / "settings.toml"
    app = app_for([log], settings_file=str(settings))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        app.theme = "nord"
        await wait_until(pilot, lambda: settings.exists() and "nord" in settings.read_text())
    assert load_theme(str(settings)) == "nord"
    again = app_for([log], settings_file=str(settings), theme=load_theme(str(settings)))
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()         # until the app has handled what its start posted
        assert again.theme == "nord"


# ---------------------------------------------------------------------- the app's own --driver/--launcher

async def test_the_app_takes_driver_and_launcher(log, monkeypatch):
    monkeypatch.delenv("MIOPEN_DRIVER", raising=False)
    app = app_for([log], driver_path=FAKE_DRIVER, launcher=("env", "FAKE_MIOPEN_STYLE=2019"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 5)
        await pilot.press("d")
        panel = app.screen
        assert isinstance(panel, DriverScreen)
        await wait_until(pilot, lambda: panel.state == "finished", timeout=30)
        result = app.results_for(1)[-1]
        assert result.status == "ok" and list(result.argv[:3]) == ["env", "FAKE_MIOPEN_STYLE=2019", FAKE_DRIVER]
    from miotui.cli import _app_parser
    ns = _app_parser().parse_args(["--driver", "/x/MIOpenDriver", "--launcher", "ssh gpu", "a.log"])
    assert (ns.driver, ns.launcher) == ("/x/MIOpenDriver", "ssh gpu")

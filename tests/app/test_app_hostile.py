"""Hostile text from a log, a driver and a file name, through every screen of the app.

A log line can carry terminal escape sequences (OSC 52 writes the clipboard, OSC 0 the
window title, OSC 8 makes links, CSI clears the screen), C1 controls, bidirectional
overrides, and Rich/Textual markup (``[/x]`` raised inside a notification and killed
the app; ``[@click=app.quit]`` could act).  Opening a layer once set the terminal title,
wrote the clipboard four times and cleared the screen.  Here each string goes through
the table, the raw log pane, the detail (MIOpen's choice, MIOpen's verdict, raw lines),
the undecoded list, the driver panel, notifications and the status bar, and the screen
as exported must hold no control byte and show the markup as text."""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

from pilot_helpers import (
    app_for,
    conv,
    loaded,
    plain,
    screen_text,
    settled,
    table,
    wait_until,
    write_small_log,
)

from miotui.screens.detail import DetailScreen
from miotui.screens.driver_panel import DriverScreen
from miotui.screens.info import UndecodedScreen

ESC, BEL, ST, RLO = "\x1b", "\x07", "\x1b\\", "\u202e"
CATALOGUE = (
    f"{ESC}]0;pwned-title{BEL}",                       # OSC 0: the window title, BEL-ended
    f"{ESC}]52;c;cHduZWQ={BEL}",                        # OSC 52: the clipboard
    f"{ESC}]52;c;cHduZWQ={ST}",                         # the same, ST-ended
    f"{ESC}]8;;http://evil/{ST}link{ESC}]8;;{ST}",      # OSC 8: a hyperlink
    f"{ESC}[2J{ESC}[H",                                 # CSI: clear the screen
    f"{ESC}P1$r{ST}",                                   # DCS
    "\x9b31m\x9d0;c1\x9c",                              # C1 CSI, OSC, ST
    "\x00\x08\x7f",                                     # NUL, backspace, DEL
    "[/x]", "[link=http://x]L[/link]", "[@click=app.quit]Q[/]", "[bold red]R",
    "\u202egnp.exe\u202c", "\u2066iso\u2069",           # bidi override, isolate
    "line\u2028soft\u00adtag\U000e0041\U000e007f",         # a line separator, soft hyphen, tag characters
)
HOSTILE = "".join(CATALOGUE)
#: what must never reach the terminal: C0 but newline, DEL, C1, invisible/bidi formatting
FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
                       "\U000e0000-\U000e007f]")
MARKUP = ("[/x]", "[link=http://x]", "[@click=app.quit]", "[bold red]")


def hostile_log(path: Path) -> None:
    path.write_text(
        conv()
        + f"MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: {HOSTILE} , 0, 0.545735\n"
        + f"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {HOSTILE}\n"
        + f"epoch 1 {HOSTILE}\n"
        + "MIOpenDriver conv -n 2 -c 8 -H 16 -W 16 -k 8 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 "
          "-t 1\n"
        + f"MIOpen Forward Conv. Algorithm: 1, Solution: 85/{HOSTILE}\n"
        + f"RunForwardGPU() FAILED, rc = 0x7 {HOSTILE}\n"
        + "Forward Convolution FAILED: 0.257789 > 0.082\n")


def hostile_driver(tmp_path: Path) -> str:
    """A fake MIOpenDriver (for this test only) whose output carries the catalogue."""
    script = tmp_path / "hostile_miopendriver.py"
    script.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"for part in {list(CATALOGUE)!r}:\n    print('driver says ' + part, flush=True)\n"
        "print('Forward Convolution Verifies OK on CPU reference (1e-07 < 1.5e-06)', flush=True)\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def assert_safe(app, where: str) -> str:
    """The exported screen: no control byte, and the app still running."""
    svg = app.export_screenshot()
    bad = sorted({hex(ord(c)) for c in FORBIDDEN.findall(svg)})
    assert not bad, f"{where}: {bad} would reach the terminal"
    assert app.return_code is None and app.is_running, f"{where}: the app ended"
    return screen_text(app)


async def test_hostile_text_reaches_no_terminal_and_is_never_markup(tmp_path, monkeypatch):
    name = f"train{ESC}]52;c;eA=={BEL}{RLO}.log"   # no "[": the reader would take it for a glob
    log = tmp_path / name
    hostile_log(log)
    monkeypatch.setenv("MIOPEN_DRIVER", hostile_driver(tmp_path))
    app = app_for([log], follow=True)
    async with app.run_test(size=(200, 50), notifications=True) as pilot:
        t = table(app)
        await wait_until(pilot, lambda: len(t.model.rows) == 2 and app.last_poll and app.last_poll.undecoded == 1,
                         what=lambda: f"{len(t.model.rows)} rows, {app.last_poll}")
        await wait_until(pilot, lambda: "␛]52;c;eA==␇<U+202E>.log" in screen_text(app)
                         and "␛]0;pwned-title␇␛]52;c;cHduZWQ=␇" in screen_text(app), what="the name and the solver drawn")
        text = assert_safe(app, "the table and the status bar")
        assert "␛]52;c;eA==␇<U+202E>.log" in text, "the file name is shown with visible marks"
        assert "␛]0;pwned-title␇␛]52;c;cHduZWQ=␇" in text, "the solver cell shows the text, as text"

        t.move_cursor_to(1)
        await pilot.press("l")
        pane = app.layers_screen.log_pane.view
        await wait_until(pilot, lambda: pane.known >= 4)
        await wait_until(pilot, lambda: "epoch 1 ␛]0;pwned-title␇" in screen_text(app), what="the pane's lines drawn")
        text = assert_safe(app, "the raw log pane")
        assert "epoch 1 ␛]0;pwned-title␇" in text and all(m in text for m in MARKUP)

        await pilot.press("l")
        t.move_cursor_to(2)
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        await wait_until(pilot, lambda: app.screen.ready)
        detail = " ".join(plain(s) for s in app.screen.query("Static"))
        assert "RunForwardGPU() FAILED" in detail and "[@click=app.quit]Q[/]" in detail
        assert "<U+202E>gnp.exe<U+202C>" in detail, "a bidi override is named, not applied"
        assert "line<U+2028>soft<U+00AD>tag<U+E0041><U+E007F>" in detail, "invisible characters are named"
        assert not FORBIDDEN.search(detail), "the widgets' own text (what the terminal gets) is clean"
        text = assert_safe(app, "the detail screen")
        assert all(m in text for m in MARKUP)

        await pilot.press("escape", "u")
        assert isinstance(app.screen, UndecodedScreen)
        await wait_until(pilot, lambda: app.screen.query_one("DataTable").row_count == 1)
        await settled(pilot)        # the list drawn
        assert_safe(app, "the undecoded list")
        cell = app.screen.query_one("DataTable").get_row_at(0)[3]
        assert "[link=http://x]L[/link]" in cell.plain and not FORBIDDEN.search(cell.plain)

        await pilot.press("escape", "d")
        panel = app.screen
        assert isinstance(panel, DriverScreen)
        await wait_until(pilot, lambda: panel.state == "finished", timeout=30)
        await wait_until(pilot, lambda: "driver says ␛]52;c;cHduZWQ=␇" in screen_text(app), what="the driver's output drawn")
        assert "driver says [@click=app.quit]Q[/]" in panel.log_text
        text = assert_safe(app, "the driver panel")
        assert "driver says ␛]52;c;cHduZWQ=␇" in text

        await pilot.press("escape")
        (tmp_path / "out[").mkdir()
        out = tmp_path / "out[" / "x][link=http:x]y[@click=app.quit].csv"     # the path holds "[/x]"
        assert "[/x]" in str(out)
        app.export_to("csv", str(out))
        await wait_until(pilot, lambda: out.exists())
        app.notify(HOSTILE, title=HOSTILE)
        await pilot.press("c")                          # copies the command: the clipboard gets no escape
        await wait_until(pilot, lambda: len(app.screen.query("Toast")) >= 3, what="the toasts")
        assert_safe(app, "the notifications")
        toasts = [str(toast.render()) for toast in app.screen.query("Toast")]
        assert not any(FORBIDDEN.search(text) for text in toasts)
        assert any("Exported 2 layers (csv) to" in text and "out[/x][link=http:x]y[@click=app.quit].csv" in text
                   for text in toasts), toasts
        assert any("[@click=app.quit]Q[/]" in text for text in toasts), "markup in a notification is text"
        assert not FORBIDDEN.search(app.clipboard)
        assert not FORBIDDEN.search(app.sub_title) and not FORBIDDEN.search(app.title)
    assert app.return_code == 0 or app.return_code is None


async def test_w_and_export_never_write_through_a_planted_link(tmp_path):
    """Someone who can write the export directory plants ``miotui_layer_1.sh`` and
    ``miotui_layers.csv`` as links to a private file: ``w`` in the detail and the export
    overwrote the file and made it 755.  Now both are refused, each with a notice, and
    a regular file the user chose is overwritten and keeps its mode."""
    log = write_small_log(tmp_path)
    target = tmp_path / "victim"
    target.write_text("precious\n")
    target.chmod(0o600)
    (tmp_path / "miotui_layer_1.sh").symlink_to(target)
    (tmp_path / "miotui_layers.csv").symlink_to(target)
    mine = tmp_path / "mine.sh"
    mine.write_text("old\n")
    mine.chmod(0o600)
    app = app_for([log])
    async with app.run_test(size=(200, 50), notifications=True) as pilot:
        await loaded(pilot, app, 5)

        def refused() -> int:
            return sum("symbolic link" in n.message for n in app._notifications)

        table(app).move_cursor_to(1)
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("w")
        await wait_until(pilot, lambda: refused() == 1, what=lambda: str([n.message for n in app._notifications]))
        await pilot.press("escape")
        app.export_to("csv", str(tmp_path / "miotui_layers.csv"))
        await wait_until(pilot, lambda: refused() == 2, what=lambda: str([n.message for n in app._notifications]))
        app.export_to("driver", str(mine))
        await wait_until(pilot, lambda: mine.read_text().startswith("#!/usr/bin/env bash"))
        assert_safe(app, "the notices")
    assert target.read_text() == "precious\n" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(mine.stat().st_mode) == 0o600, "a file the user chose keeps its mode"

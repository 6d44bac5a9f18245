"""Plain helpers of the app's Pilot tests (not a test module): small logs, waiting for
the app, reading what its widgets show.

Why a module and not fixtures: these are pure functions called inside ``wait_until``
lambdas, inside the tests' own helpers and in a child process that runs the app outside
pytest (tests/app/test_follow_open_files.py); none has a set-up or a tear-down for pytest
to manage.  The fixtures (the small log, the isolation of every app test, the slowed
runs) are in tests/app/conftest.py, built on :func:`write_small_log` and :func:`isolate`.
A conftest is not imported by name, so what tests import lives here.
"""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Callable

import pytest

from miotui.app import MiotuiApp
from miotui.widgets.layer_table import LayerTable

ROOT = Path(__file__).resolve().parents[2]
FAKE_DRIVER = str(ROOT / "tests" / "fake_miopendriver.py")
SIZE = (160, 45)


def conv(n=1, c=8, h=16, k=8, f=3, fwd=1, find=False, pad=1, stride=1) -> str:
    fn = "LogCmdFindConvolution" if find else "LogCmdConvolution"
    return (f"MIOpen(HIP): Command [{fn}] ./bin/MIOpenDriver conv -n {n} -c {c} -H {h} -W {h} -k {k} -y {f} "
            f"-x {f} -p {pad} -q {pad} -u {stride} -v {stride} -l 1 -j 1 -m conv -g 1 -F {fwd} -t 1\n")


def pool(n=1, c=8, h=16) -> str:
    return (f"MIOpen(HIP): Command [Pooling_logging_cmd] ./bin/MIOpenDriver pool -M 0 --input {n}x{c}x{h}x{h},"
            f"{c * h * h}x{h * h}x{h}x1 -y 3 -x 3 -p 1 -q 1 -v 2 -u 2 -m max -F 1 -t 1\n")


BNORM = "MIOpen(HIP): Command [LogCmdBNorm] ./bin/MIOpenDriver bnorm -n 2 -c 8 -H 8 -W 8 -m 1 --forw 1 -b 0 -s 1 -r 1\n"
BROKEN = ("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 8 -H 16 -W 16 -k 8 -y 3 "
          "-x 3 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 3 -F 1 -t 1\n")


def small_log() -> str:
    """Three convolutions (wrw among them), a pooling, a batch norm, one undecodable line."""
    return (conv(find=True) + conv() * 3 + conv(fwd=4) * 2 + conv(c=16, k=16, f=1, pad=0) + pool() * 2
            + BNORM + BROKEN)


async def wait_until(pilot, cond, timeout: float = 8.0, what: "str | Callable[[], str]" = "") -> None:
    """``what`` names the awaited state; a callable is asked at the failure (so the
    message can show the state the app was in instead)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        await pilot.pause(0.03)
    assert cond(), f"timed out waiting for {(what() if callable(what) else what) or cond}"


async def settled(pilot, timeout: float = 10.0) -> None:
    """Until the screen as drawn stops changing: two screenshots, with the app's pending
    messages handled and the screen updated between them (``pilot.pause()``), are the
    same.  For a snapshot, after the condition it shows (rows read, a screen ready): the
    layout and the widgets that refresh after it have caught up, however loaded the host."""
    app = pilot.app
    end = time.monotonic() + timeout
    before = app.export_screenshot()
    while True:
        await pilot.pause()
        now = app.export_screenshot()
        if now == before:
            return
        assert time.monotonic() < end, "the screen kept changing"
        before = now


def table(app: MiotuiApp) -> LayerTable:
    return app.layers_screen.table


def shown(app: MiotuiApp) -> list[dict[str, str]]:
    t = table(app)
    return [t.row_text(i) for i in t.model.view]


def plain(widget) -> str:
    """What a Static shows, as plain text."""
    from rich.console import Console
    console = Console(width=200, file=io.StringIO(), record=True)
    console.print(widget.content)
    return console.export_text()


def progress_text(app: MiotuiApp) -> str:
    cur = app.runs.current
    return cur.progress if cur is not None else ""


def status_text(app: MiotuiApp) -> str:
    from miotui.widgets.status_bar import StatusBar
    return str(StatusBar.render_text(app.layers_screen.status.info))


def header_text(app: MiotuiApp) -> str:
    return str(app.layers_screen.log_pane.query_one("#log-header").content)


def pane_lines(app: MiotuiApp) -> list[str]:
    view = app.layers_screen.log_pane.view
    rows = view.scrollable_content_region.height          # a horizontal scroll bar covers the last row
    return ["".join(seg.text for seg in view.render_line(y)).rstrip() for y in range(rows)]


def pane_state(app: MiotuiApp) -> str:
    """What the raw-log pane holds, for a failure message: its position, what it knows
    and has loaded, and the lines it shows."""
    v = app.layers_screen.log_pane.view
    return (f"top {v.top_line}, size {tuple(v.size)}, known {v.known}, marks {v.marks}, "
            f"pending {v._pending_jump}, blocks {sorted(v._blocks.keys())}, asked {sorted(v._asked)}, "
            f"lines {pane_lines(app)[:3]}")


async def loaded(pilot, app: MiotuiApp, layers: int, timeout: float = 8.0) -> None:
    await wait_until(pilot, lambda: len(table(app).model.rows) >= layers and app.last_poll is not None
                     and app.last_poll.finished, timeout=timeout, what=f"{layers} layers read")
    await pilot.pause()      # no fixed time: until the screen has handled what the last poll posted


def exported(app: MiotuiApp, path: "str | Path") -> bool:
    """The app has said it wrote ``path``: the notice comes after the file is closed (a file
    that exists may still be half written, as the export writes it in place)."""
    return Path(path).exists() and any(str(n.message).startswith("Exported ") and str(n.message).endswith(str(path))
                                       for n in app._notifications)


def palette_highlights(app: MiotuiApp, text: str) -> bool:
    """The command palette is open and its highlighted hit holds ``text`` (its search ran)."""
    from textual.command import CommandList, CommandPalette
    if not isinstance(app.screen, CommandPalette):
        return False
    hits = app.screen.query_one(CommandList)
    return hits.highlighted is not None and text in str(hits.get_option_at_index(hits.highlighted).prompt)


def write_small_log(tmp_path: Path) -> Path:
    p = tmp_path / "train.log"
    p.write_text(small_log())
    return p


def isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each app test runs in its own directory, with no user keymap or settings."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MIOTUI_KEYMAP", str(tmp_path / "no-keymap.toml"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def app_for(paths, **kw) -> MiotuiApp:
    kw.setdefault("find_job", False)
    return MiotuiApp([str(p) for p in paths], reader_poll_interval=0.01, poll_interval=0.05, **kw)


def screen_text(app: MiotuiApp) -> str:
    """The whole screen as the terminal would get it (an SVG of it, tags stripped)."""
    import html
    import re
    svg = app.export_screenshot()
    text = re.sub(r"<[^>]+>", "", svg)
    return html.unescape(text).replace("\xa0", " ")

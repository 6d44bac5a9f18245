"""Helpers shared by the app's Pilot tests (not a test module): small logs, waiting for
the app, reading what its widgets show."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Callable

import pytest

from miotui.app import MiotuiApp
from miotui.widgets.layer_table import LayerTable

ROOT = Path(__file__).resolve().parent.parent
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
    await pilot.pause(0.05)


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


# ---------------------------------------------------------------------- fixtures (import them by these names)

@pytest.fixture(name="log")
def log_fixture(tmp_path: Path) -> Path:
    """The small log of :func:`small_log`, written to a temporary file."""
    return write_small_log(tmp_path)


@pytest.fixture(name="_isolated", autouse=True)
def isolated_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


@pytest.fixture(name="long_big_runs")
def long_big_runs_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each numpy call on a layer with 32 images also waits 1 s (returning early on a
    cancel), so a run outlasts the key presses on any machine: on a 16-core one the
    real layer ran in 4.7 s, while each ``pilot.press`` waited up to 2 s for the CPU
    to go idle, and the run ended before the test could see it."""
    from miotui.execute.backends import NumpyBackend
    real = NumpyBackend.run

    def run(self, problem, prepared, cancel):
        out = real(self, problem, prepared, cancel)
        end = time.monotonic() + (1.0 if problem.n == 32 else 0.0)
        while time.monotonic() < end and not cancel.is_set():
            time.sleep(0.01)
        return out

    monkeypatch.setattr(NumpyBackend, "run", run)

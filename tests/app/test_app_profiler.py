"""The app with a profiler trace of the log's run (issue 23): ``miotui train.log trace.json``,
``miotui --follow train.log --trace trace.json``, ``miotui trace.json``.  The table's times
are the trace's measured ones (source ``profiler``), a followed log's later layers get them
too, and the line over the table says where they came from.

The data is one real H100 run (tests/data/profiler/README.md): a cuDNN API log and a
torch.profiler trace recorded at once.  Expected figures come from ``miotui decode`` of the
same files (the core), never from the screen itself."""

from __future__ import annotations

import gzip
import re
import threading
from pathlib import Path

import pytest
from pilot_helpers import app_for, loaded, plain, table, wait_until

from miotui.catalog import Catalog
from miotui.decoding.whole import decode_paths
from miotui.formats import FORMATS
from miotui.launch import app_paths
from miotui.sources.follow import LogReader
from miotui.views.live_traces import LiveTraces
from miotui.views.poller import Poller
from miotui.views.timing import layer_times

SIZE = (200, 45)
#: seconds a condition may take: the log is 137 619 lines, decoded on a shared 2-core machine
WAIT_S = 30.0
DATA = Path(__file__).parents[1] / "data" / "profiler"
LOG = str(DATA / "joined_cudnn.log.gz")
TRACE = str(DATA / "joined_trace.json.gz")


@pytest.fixture(name="expected", scope="module")
def expected_fixture() -> dict:
    """problem -> (time source, ms per call) as ``miotui decode train.log trace.json`` gives them."""
    joined = decode_paths([LOG, TRACE])
    times = layer_times(joined.layers())
    return {layer.problem: (times[layer.id].source, times[layer.id].per_call_ms) for layer in joined.layers()}


def app_times(app) -> dict:
    """problem -> (time source, ms per call) as the app shows them."""
    return {snap.problem: (app.model.layer_time(snap.id).source, app.model.layer_time(snap.id).per_call_ms)
            for snap in app.model.layers.values()}


def differences(shown: dict, expected: dict, problems) -> str:
    """What the app shows differently from ``expected`` for ``problems`` (a failure's message)."""
    return "; ".join(f"{p}: shown {shown.get(p, 'no row')}, expected {expected[p]}" for p in problems
                     if shown.get(p) != expected[p]) + f"; rows not expected: {set(shown) - set(problems)}"


def time_line(app) -> str:
    return plain(app.layers_screen.query_one("#time-line"))


def test_a_trace_among_the_paths_times_the_logs_layers_and_alone_is_the_log():
    assert app_paths([TRACE, LOG]) == ([LOG], [TRACE], [])
    assert app_paths([LOG], [TRACE]) == ([LOG], [TRACE], [])
    assert app_paths([TRACE]) == ([TRACE], [], []), "a trace alone: its own layers"
    assert app_paths(["later.log"], [TRACE]) == (["later.log"], [TRACE], []), "a log not there yet is followed"


async def test_log_and_trace_show_the_profiler_times_and_the_line_says_so(expected):
    logs, traces, kernel_traces = app_paths([LOG, TRACE])
    app = app_for(logs, traces=traces, kernel_traces=kernel_traces)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 17, timeout=WAIT_S)
        await wait_until(pilot, lambda: app_times(app) == expected and "profiler:" in time_line(app), timeout=WAIT_S,
                         what=lambda: f"profiler times in the table: {app_times(app)}")
        timed = [p for p, (source, _) in expected.items() if source == "profiler"]
        assert len(timed) == 15
        t = table(app)
        snap = next(s for s in app.model.layers.values() if s.problem == timed[0])
        assert float(t.row_text(snap.id)["call_ms"]) == pytest.approx(expected[timed[0]][1], rel=0.01, abs=0.001)
        line = time_line(app)
        assert "per call from profiler trace (15)" in line
        assert "profiler: 9 of 11 conv layers timed (2 more timed only as backward data+weights pairs), " \
               "77% of the trace's GPU kernel time" in line
        assert "trace: 17 of 17 logged layers matched; 8 of the trace's 25 layers are not in the log" in line
        assert "MIOPEN_LOG_LEVEL" not in line and "a profiler trace of the run times them" not in line


async def test_a_followed_log_that_grows_gets_the_trace_times_for_its_new_layers(tmp_path, expected):
    text = gzip.open(LOG, "rt").read()
    starts = [m.start() for m in re.finditer(r"^I! CuDNN", text, re.M)]
    cut = starts[len(starts) // 2]           # a record boundary half-way: 10 of the 17 layers
    log = tmp_path / "train.log"
    log.write_text(text[:cut])
    first = {layer.problem for layer in decode_paths([str(log)]).layers()}
    assert 0 < len(first) < len(expected)
    app = app_for([log], follow=True, traces=[TRACE])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app_times(app) == {p: expected[p] for p in first}, timeout=WAIT_S,
                         what=lambda: f"the first half timed: {differences(app_times(app), expected, first)}")
        await wait_until(pilot, lambda: "trace: 10 of 10 logged layers matched" in time_line(app), timeout=WAIT_S,
                         what=lambda: time_line(app))
        with log.open("a") as f:
            f.write(text[cut:])
        await wait_until(pilot, lambda: app_times(app) == expected, timeout=WAIT_S,
                         what=lambda: f"the new layers timed too: {app_times(app)}")
        assert any(source == "profiler" for p, (source, _) in app_times(app).items() if p not in first)
        await wait_until(pilot, lambda: "trace: 17 of 17 logged layers matched" in time_line(app), timeout=WAIT_S,
                         what=lambda: time_line(app))


async def test_a_trace_alone_opens_with_its_own_layers_and_times():
    alone = decode_paths([TRACE])
    times = layer_times(alone.layers())
    want = {layer.problem: (times[layer.id].source, times[layer.id].per_call_ms) for layer in alone.layers()}
    logs, traces, kernel_traces = app_paths([TRACE])
    app = app_for(logs, traces=traces, kernel_traces=kernel_traces)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, len(want), timeout=WAIT_S)
        await wait_until(pilot, lambda: app_times(app) == want, timeout=WAIT_S, what=lambda: f"{app_times(app)}")
        assert "profiler" in {source for source, _ in want.values()}
        assert "per call from profiler trace" in time_line(app)


def test_a_missing_trace_is_refused_at_start_also_when_following(tmp_path, capsys):
    from miotui.launch import launch
    missing = str(tmp_path / "nope.json")
    assert launch([LOG], follow=True, demo=False, pid=None, traces=[missing]) == 2
    assert f"cannot read the trace {missing}: no such file" in capsys.readouterr().err


async def test_the_trace_is_not_a_file_of_the_logs_layers():
    app = app_for([LOG], traces=[TRACE])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 17, timeout=WAIT_S)
        await wait_until(pilot, lambda: "trace: 17 of 17" in time_line(app), timeout=WAIT_S,
                         what=lambda: time_line(app))
        assert "file" not in table(app).column_keys, "one log: no file column, the trace is not a source file"
        assert all(not snap.files for snap in app.model.layers.values())


class ReadBetweenLooks(Catalog):
    """A catalog whose reader adds a layer right after the poller's first look at what
    changed (the race: a layer read while the poller joins the ones it saw)."""

    def __init__(self, late: list) -> None:
        super().__init__()
        self.late = late

    def changed_since(self, version: int):
        out = super().changed_since(version)
        if self.late and out[1]:
            self.add_sighting(self.late.pop(), "execution", "cudnn-api", 1)
        return out


def test_a_layer_read_while_the_poller_joins_gets_its_time_too(tmp_path, expected):
    timed = [p for p, (source, _) in expected.items() if source == "profiler"]
    catalog = ReadBetweenLooks([timed[1]])
    catalog.add_sighting(timed[0], "execution", "cudnn-api", 1)
    empty = tmp_path / "empty.log"
    empty.write_text("")
    polls: list = []
    done = threading.Event()

    def post(data):
        polls.append(data)
        poller.ack()
        if len(polls) >= 5:
            done.set()

    poller = Poller(catalog, LogReader(catalog, [str(empty)], follow=False, formats=FORMATS), post, interval=0.01,
                    traces=LiveTraces([TRACE]))
    poller.start()
    try:
        assert done.wait(30), "the poller posts"
    finally:
        poller.stop()
    latest = {snap.problem: snap for data in polls for snap in data.changed}
    assert set(latest) == {timed[0], timed[1]}
    for problem, snap in latest.items():
        assert layer_times([snap])[snap.id].source == "profiler", f"{problem} posted without the trace's time"


async def test_the_first_iteration_of_a_log_with_no_clock_is_on_the_traces_clock():
    """``i`` with a log that gives the first-iteration view no clock (a cuDNN log) and its
    trace: the layers are listed in the order of their first calls in the trace, each with
    that call's GPU time, and the screen says the clock is the trace's.  The expected times
    are the core's (``trace_first`` of ``miotui decode LOG TRACE``'s layers)."""
    from miotui.screens.startup import StartupScreen
    from miotui.views import units
    from miotui.views.startup_model import layer_label, trace_first
    firsts = {}
    for snap in decode_paths([LOG, TRACE]).layers():
        first = trace_first(snap)
        firsts[(layer_label(snap), snap.problem)] = first
    assert len(firsts) == 17 and all(firsts.values())
    order = sorted(firsts, key=lambda k: firsts[k].at_ms)
    app = app_for([LOG], traces=[TRACE])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, 17, timeout=WAIT_S)
        await wait_until(pilot, lambda: len(app.model.startup.rows) == 17, timeout=WAIT_S,
                         what=lambda: f"the trace's first calls in the view: {app.model.startup.rows}")
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, StartupScreen) and app.screen.ready, timeout=WAIT_S)
        screen = app.screen
        notes = " ".join(plain(screen.query_one("#startup-notes")).split())
        assert "17 layers are placed by their first call in the profiler trace" in notes
        assert "The trace may have begun after the run's first iteration" in notes
        assert "MIOPEN_ENABLE_LOGGING" not in notes, "MIOpen's switches do not time a cuDNN log"
        timeline = plain(screen.query_one("#startup-timeline"))
        assert "GPU 1st" in timeline and "on the trace's clock" in " ".join(timeline.split())
        rows = [ln for ln in timeline.splitlines() if ln.split()[:1] and ln.split()[0].isdigit()]
        by_id = {snap.id: snap for snap in app.model.layers.values()}
        shown = [(layer_label(by_id[int(ln.split()[0])]), by_id[int(ln.split()[0])].problem) for ln in rows]
        assert shown == order, "the layers in the order of their first calls in the trace"
        for line, key in zip(rows, shown, strict=True):
            assert units.time_ms(firsts[key].gpu_ms) in line and "▓" in line, line

"""The first-iteration view of a log with no clock, joined to a profiler trace of the same run:
each layer is placed by its first call in the trace, on the trace's clock, with that call's
GPU time, and the view says the clock is the trace's (issue 23).

The log and trace are one real H100 run (tests/data/profiler/make_joined.py): a cuDNN API
log (which gives the first-iteration view no clock) and a torch.profiler trace.  The
expected times are read here from the trace's JSON with no code of the decoder."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from miotui.decoding.whole import decode_paths
from miotui.driver.commands import to_driver_command
from miotui.formats.torch_profiler.scanner import first_call_text
from miotui.startup import KERNEL_COMPILED, LayerStartup, StartupTotals, TimelineEntry
from miotui.views.startup_model import (
    CALL,
    CALL_CHAR,
    TraceFirst,
    build_view,
    gpu_cell,
    layer_label,
    span_bar,
    timeline_caption,
    trace_first,
)

DATA = Path(__file__).parents[1] / "data" / "profiler"
LOG = str(DATA / "joined_cudnn.log.gz")
TRACE = str(DATA / "joined_trace.json.gz")


def view_of(catalog):
    """The view as the app's poller builds it from a catalog's snapshots."""
    layers = catalog.layers()
    firsts = {s.id: f for s in layers if (f := trace_first(s)) is not None}
    return build_view(catalog.startup.totals(), catalog.startup.timeline(), {s.id: s.startup for s in layers},
                      {s.id: layer_label(s) for s in layers}, firsts)


def first_forward_calls() -> dict[tuple, tuple[float, float]]:
    """(n, c, h, w, k) -> (ms from the trace's first event to the layer's first forward conv op,
    GPU ms of the kernels launched under that op), from the trace's JSON: kernels found by
    correlation id through their launch, which lies inside the op's span on its thread."""
    events = json.load(gzip.open(TRACE))["traceEvents"]
    origin = min(e["ts"] for e in events if isinstance(e.get("ts"), (int, float)))
    launches = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and "correlation" in e.get("args", {})}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    out: dict[tuple, tuple[float, float]] = {}
    for op in sorted((e for e in events if e.get("name") == "aten::cudnn_convolution"), key=lambda e: e["ts"]):
        x, w = op["args"]["Input Dims"][:2]
        key = (x[0], x[1], x[2], x[3], w[0])
        if key in out:
            continue
        gpu = 0.0
        for k in kernels:
            launch = launches.get(k["args"].get("correlation"))
            if launch is not None and launch["tid"] == op["tid"] and op["ts"] <= launch["ts"] <= op["ts"] + op["dur"]:
                gpu += k["dur"]
        out[key] = ((op["ts"] - origin) / 1000, gpu / 1000)
    return out


@pytest.fixture(scope="module")
def joined():
    return decode_paths([LOG, TRACE])


def test_an_untimed_log_is_placed_by_the_first_calls_in_the_trace(joined):
    view = view_of(joined)
    assert not joined.startup.totals().timed, "the cuDNN log gives the view no clock of its own"
    assert view.clock_source == "trace" and view.anything
    assert "17 layers are placed by their first call in the profiler trace" in view.note
    assert view.summary.endswith("first calls on the trace's clock")
    expected = first_forward_calls()
    assert len(expected) == 4
    rows = {(r.label, r.layer_id): r for r in view.rows}
    by_key = {}
    for s in joined.layers():
        p = s.problem
        if p.op == "conv" and p.direction == "fwd":
            by_key[(p.n, p.c, *p.in_spatial, p.k)] = rows[(layer_label(s), s.id)]
    assert set(by_key) == set(expected)
    for key, (at_ms, gpu_ms) in expected.items():
        row = by_key[key]
        assert row.start_ms == pytest.approx(at_ms, rel=1e-5), key
        assert row.gpu_ms == pytest.approx(gpu_ms, rel=1e-5), key
        assert row.spans == ((row.start_ms, row.end_ms, CALL),)
        assert CALL_CHAR in span_bar(row, view.clock, 40)
    starts = [r.start_ms for r in view.rows]
    assert starts == sorted(starts), "the layers in the order of their first calls"
    assert view.clock == (min(starts), max(r.end_ms for r in view.rows))
    assert "on the trace's clock" in timeline_caption(view)


def test_a_backward_pair_keeps_its_combined_time_and_says_so(joined):
    view = view_of(joined)
    paired = [r for r in view.rows if r.gpu_paired]
    assert len(paired) == 2 and paired[0].gpu_ms == paired[1].gpu_ms   # the 1x1 conv's data and weights
    assert gpu_cell(paired[0]).endswith("*") and "* a backward op's data and weights" in timeline_caption(view)


def test_an_untimed_miopen_log_keeps_its_facts_on_the_trace_clock(tmp_path, joined):
    """A MIOpen Command log (no clock) written here for the trace's forward convolutions, a
    compile after the first: the facts stay the log's, the places are the trace's."""
    trace_only = decode_paths([TRACE])
    forwards = [s.problem for s in trace_only.layers() if s.problem.op == "conv" and s.problem.direction == "fwd"]
    lines = []
    for i, p in enumerate(reversed(forwards)):    # the log meets them in another order than the trace
        lines.append(f"MIOpen(HIP): Command [LogCmdConvolution] {to_driver_command(p, './bin/MIOpenDriver')} -t 1\n")
        if i == 0:
            lines.append('MIOpen(HIP): Info2 [SaveBinary] Saving binary for: "k.o"; args: \n')
    log = tmp_path / "miopen.log"
    log.write_text("".join(lines))
    catalog = decode_paths([str(log), TRACE])
    view = view_of(catalog)
    assert view.clock_source == "trace" and len(view.rows) == 4
    assert [r.start_ms for r in view.rows] == sorted(r.start_ms for r in view.rows)
    compiled = [r for r in view.rows if r.startup.kernels_compiled]
    assert len(compiled) == 1 and compiled[0].startup.compile_ms is None, "a count, not a duration"
    assert compiled[0].layer_id == 1 and view.rows[-1] is compiled[0], "the log's first layer, the trace's last"


def test_a_log_with_a_clock_keeps_its_own():
    timeline = [TimelineEntry(1, 100.0, 1, KERNEL_COMPILED, 40.0), TimelineEntry(2, 300.0, 2, KERNEL_COMPILED, 50.0)]
    startups = {1: LayerStartup(kernels_compiled=1, compile_ms=40.0), 2: LayerStartup(kernels_compiled=1,
                                                                                         compile_ms=50.0)}
    firsts = {1: TraceFirst(5.0, 1.0, 0.1, 1), 2: TraceFirst(1.0, 1.0, 0.2, 1)}
    view = build_view(StartupTotals(kernels_compiled=2, compile_ms=90.0, timed=True), timeline, startups,
                      {1: "a", 2: "b"}, firsts)
    assert view.clock_source == "log" and view.clock == (60.0, 300.0) and not view.note
    assert [r.layer_id for r in view.rows] == [1, 2] and all(r.gpu_ms is None for r in view.rows)
    assert "on the log's clock" in timeline_caption(view)


def test_two_traces_are_never_mixed_and_layers_not_in_the_trace_are_listed_unplaced():
    startups = {1: LayerStartup(kernels_compiled=2), 2: LayerStartup(), 3: LayerStartup(), 4: LayerStartup()}
    timeline = [TimelineEntry(1, None, 1, KERNEL_COMPILED), TimelineEntry(2, None, 1, KERNEL_COMPILED)]
    firsts = {2: TraceFirst(3.0, 1.0, 0.5, 2, trace="a.json"), 3: TraceFirst(1.0, 1.0, 0.25, 1, trace="a.json"),
              4: TraceFirst(0.0, 9.0, 1.0, 1, trace="b.json")}
    view = build_view(StartupTotals(kernels_compiled=2), timeline, startups, {}, firsts)
    assert view.clock_source == "trace"
    assert [r.layer_id for r in view.rows] == [3, 2, 1]
    assert view.rows[2].start_ms is None and view.rows[2].gpu_ms is None and gpu_cell(view.rows[2]) == ""
    assert view.clock == (1.0, 4.0), "b.json's clock is not a.json's"
    assert "profiler trace a.json" in view.note
    assert "1 layers with first-iteration facts are not in the trace" in view.note
    assert "1 layers timed by another trace are not placed" in view.note


class _Snap:
    def __init__(self, **annotations: str) -> None:
        self.annotations = tuple(annotations.items())

    def annotation(self, name: str, default: str = "") -> str:
        return dict(self.annotations).get(name, default)


def test_the_scanners_words_read_back_and_anything_else_is_no_first_call():
    text = first_call_text(1234.5, 250.0, 12.25, 3, True)
    assert trace_first(_Snap(profiler_first_call=text, profiler_trace="t.json")) == \
        TraceFirst(1.2345, 0.25, 0.01225, 3, True, "t.json")
    assert trace_first(_Snap(profiler_first_call=first_call_text(0, 1, 2, 1, False))).paired is False
    for bad in ("", "at nan ms", "at 1 ms into the trace; x ms CPU; 2 ms GPU (1 kernels in the call)"):
        assert trace_first(_Snap(profiler_first_call=bad)) is None


def test_a_trace_opened_alone_is_on_its_own_clock():
    view = view_of(decode_paths([TRACE]))
    assert view.clock_source == "trace" and len(view.rows) == 25
    assert view.note.startswith("25 layers are placed by their first call in the profiler trace, on its clock")

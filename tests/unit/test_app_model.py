"""The layers table's model (no Textual): cells, the filter language, sorting, and the
incremental view that must always equal a view rebuilt from scratch."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui.catalog import LayerSnapshot
from miotui.driver import to_driver_command
from miotui.problems import BatchNormProblem, ConvProblem, PoolProblem
from miotui.views.layer_model import COLUMNS, LayerTableModel, fit_columns, format_cell, parse_filter
from miotui.views.run_summary import RunSummary


def conv(i: int, direction: str = "fwd", dtype: str = "fp32", n: int = 1, c: int = 8, k: int = 8,
         f: int = 3, groups: int = 1) -> ConvProblem:
    return ConvProblem(direction, dtype, n, c, k, (16 + i, 16 + i), (f, f), (f // 2, f // 2), (1, 1), (1, 1),
                       groups=groups)


def snap(index: int, problem, executions: int = 1, finds: int = 0, annotations=(), files=(), warnings=()):
    return LayerSnapshot(index=index, problem=problem, executions=executions, finds=finds, mentions=0,
                         first_line=index + 1, last_line=index + 1, sources=("command",), files=tuple(files),
                         annotations=tuple(annotations), warnings=tuple(warnings), raw=(),
                         driver_command=to_driver_command(problem))


LAYERS = [
    snap(0, conv(0), executions=30, finds=1, annotations=(("solver", "ConvBinWinogradRxSf2x3g1"),
                                                          ("solver_time_ms", "0.48"))),
    snap(1, conv(1, "wrw", "fp16", n=32, c=64, k=128), executions=10),
    snap(2, conv(2, "bwd", n=64, f=1), executions=20),
    snap(3, PoolProblem("fwd", "fp32", 8, 16, (32, 32), (3, 3), (1, 1), (2, 2), "avg"), executions=5),
    snap(4, BatchNormProblem("fwd_train", "bf16", 16, 32, (8, 8)), executions=40, warnings=("odd flag -s",)),
    snap(5, ConvProblem("fwd", "fp32", 2, 4, 4, (4, 8, 8), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
         executions=1, files=("/logs/rank1.log",)),
]


def model_with(layers=LAYERS) -> LayerTableModel:
    m = LayerTableModel(clock=lambda: 0.0)
    m.update(layers)
    return m


def test_cells():
    m = model_with()
    r0 = m.rows[1].cells
    assert (r0["op"], r0["dir"], r0["n"], r0["h"], r0["filter"], r0["pad"], r0["output"]) == \
        ("conv", "fwd", "1", "16", "3x3", "1x1", "1x8x16x16")
    assert (r0["executions"], r0["finds"], r0["solver"]) == ("30", "1", "ConvBinWinogradRxSf2x3g1")
    assert (r0["call_ms"], r0["total_ms"]) == ("0.480", "14.4"), "the Find's time per call, times 30 executions"
    assert m.rows[1].time_source == "find" and m.rows[2].cells["total_ms"] == "", "an untimed layer has no total"
    assert m.rows[4].cells["filter"] == "3x3" and m.rows[4].cells["k"] == ""
    assert m.rows[6].cells["d"] == "4" and m.rows[6].cells["file"] == "rank1.log"
    keys = [c.key for c in m.visible_columns()]
    assert "d" in keys and "file" in keys, "optional columns appear when some row needs them"
    assert [c.key for c in model_with(LAYERS[:2]).visible_columns()].count("d") == 0


def test_widths_only_grow_and_cells_are_cut_with_an_ellipsis():
    m = model_with(LAYERS[:1])
    w = m.widths["executions"]
    m.update([replace(LAYERS[0], executions=123456789)])
    assert m.widths["executions"] == len("123,456,789") > w, "numbers are never cut"
    m.update([replace(LAYERS[0], executions=1)])
    assert m.widths["executions"] == len("123,456,789"), "and the column does not shrink back"
    assert format_cell("ConvAsmImplicitGemmGTCDynamicFwdXdlops", 10, False) == "ConvAsmIm…"
    assert format_cell("42", 5, True) == "   42"


@pytest.mark.parametrize("text, expected", [
    ("op:conv", [1, 2, 3, 6]),
    ("op:conv dir:wrw", [2]),
    ("dir:fwd,bwd op:conv", [1, 3, 6]),
    ("-op:conv", [4, 5]),
    ("!dtype:fp32", [2, 5]),
    ("n:>=32", [2, 3]),
    ("n:16..64", [2, 3, 5]),
    ("exec:>10 exec:<=30", [1, 3]),
    ("k:!=8", [2, 4, 5, 6]),      # a layer without K is not K=8
    ("filter:3", [1, 2, 4, 6]),
    ("filter:1x1", [3]),
    ("winograd", [1]),
    ("solver:conv", [1]),
    ("src:command", [1, 2, 3, 4, 5, 6]),
    ("warn:flag", [5]),
    ("file:rank1", [6]),
    ("mode:avg", [4]),
    ("d:4", [6]),
    ("3x3x3", [6]),
])
def test_filter_language(text, expected):
    m = model_with()
    spec = m.set_filter(text)
    assert not spec.errors
    assert m.view == expected


def test_filter_errors_are_reported_and_ignored():
    spec = parse_filter("nope:1 n:big op:")
    assert len(spec.errors) == 3 and not spec.active
    assert "unknown field 'nope'" in spec.errors[0]
    assert "n:big" in spec.errors[1]


def test_sort_numeric_and_text_columns_and_flip():
    m = model_with()
    m.set_sort("executions")
    assert m.view == [5, 1, 3, 2, 4, 6], "numbers sort biggest first"
    m.set_sort("executions")
    assert m.view == [6, 4, 2, 3, 1, 5], "the same column again flips"
    m.set_sort("op")
    assert [m.rows[i].cells["op"] for i in m.view] == ["bnorm", "conv", "conv", "conv", "conv", "pool"]
    m.set_sort("k")
    assert m.view == [2, 1, 3, 6, 4, 5], "equal values keep first-seen order; empty cells go last"


def test_op_kind_and_results():
    m = model_with()
    m.set_op_kind("conv")
    assert m.view == [1, 2, 3, 6]
    m.set_op_kind(None)
    m.set_result(3, RunSummary(1.5, 3000.0, "FAILED", "numpy", rate_text="3.00 TFLOP/s"))
    assert m.rows[3].cells["verdict"] == "FAILED numpy" and m.rows[3].cells["rate"] == "3.00 TFLOP/s"
    assert m.rows[3].cells["run_ms"] == "1.50 ms"
    m.set_filter("verdict:failed")
    assert m.view == [3]
    m.set_result(3, RunSummary(1.5, 3000.0, "ok", "numpy"))
    assert m.view == [], "a result change re-filters"


# ---------------------------------------------------------------------- incremental == rebuilt

_sorts = st.sampled_from([c.key for c in COLUMNS])
_filters = st.sampled_from(["", "op:conv", "exec:>3", "-dir:fwd", "n:<=2", "fp16", "verdict:ok", "k:8",
                            "solver:algo", "file:b"])


@st.composite
def histories(draw):
    """A sequence of catalog updates: new layers and counter/annotation changes of old ones."""
    steps = []
    count = 0
    state: dict[int, LayerSnapshot] = {}
    for _ in range(draw(st.integers(1, 12))):
        batch = []
        for _ in range(draw(st.integers(1, 5))):
            if state and draw(st.booleans()):
                i = draw(st.sampled_from(sorted(state)))
                s = replace(state[i], executions=state[i].executions + draw(st.integers(0, 5)),
                            annotations=(("algorithm", str(draw(st.integers(0, 5)))),),
                            files=draw(st.sampled_from([(), ("a.log",), ("a.log", "b.log")])))
            else:
                i = count
                count += 1
                s = snap(i, conv(i % 7, direction=draw(st.sampled_from(["fwd", "bwd", "wrw"])),
                                 dtype=draw(st.sampled_from(["fp32", "fp16"])), n=1 + i % 3, k=8 * (1 + i % 2)),
                         executions=draw(st.integers(0, 6)))
            state[i] = s
            batch.append(s)
        steps.append(batch)
    return steps, state


@settings(max_examples=60, deadline=None)
@given(histories(), _sorts, st.booleans(), _filters, st.one_of(st.none(), st.sampled_from(["conv", "pool"])),
       st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["ok", "FAILED"])), max_size=4))
def test_incremental_view_equals_a_rebuilt_one(history, sort_key, reverse, filter_text, op, results):
    steps, final = history
    m = LayerTableModel(clock=lambda: 0.0)
    m.set_sort(sort_key, reverse)
    m.set_filter(filter_text)
    m.set_op_kind(op)
    for batch in steps:
        m.update(batch)
    for layer_id, verdict in results:
        m.set_result(layer_id, RunSummary(1.0, 2.0, verdict))
    fresh = LayerTableModel(clock=lambda: 0.0)
    fresh.update(final[i] for i in sorted(final))
    for layer_id, verdict in results:
        fresh.set_result(layer_id, RunSummary(1.0, 2.0, verdict))
    fresh.set_sort(sort_key, reverse)
    fresh.set_filter(filter_text)
    fresh.set_op_kind(op)
    assert m.view == fresh.view
    assert all(m.position(i) == pos for pos, i in enumerate(m.view))


def test_fit_columns_takes_them_by_priority_and_gives_the_rest_to_the_solver():
    m = model_with()
    candidates = m.visible_columns()
    narrow, _ = fit_columns(candidates, m.widths, 60)
    keys = [c.key for c in narrow]
    assert keys[:4] == ["id", "op", "dir", "dtype"] and "executions" in keys
    assert "run_ms" not in keys and "verdict" not in keys, "no run yet: the run's columns take no room"
    assert "share" in [c.key for c in fit_columns(candidates, m.widths, 80)[0]], "the share is next at 80 columns"
    m.set_result(2, RunSummary(1.0, 2.0, "ok"))
    ran, _ = fit_columns(m.visible_columns(), m.widths, 60)
    assert {"executions", "run_ms", "verdict"} <= {c.key for c in ran}, "a run's time and verdict come first"
    wide_enough, widths = fit_columns(candidates, m.widths, 400, natural={**m.natural, "solver": 30})
    assert {c.key for c in wide_enough} == {c.key for c in candidates}
    assert widths["solver"] == 30, "the solver grows to its longest name when there is room"
    every, _ = fit_columns(candidates, m.widths, 60, wide=True)
    assert every == candidates
    by_priority = sorted(candidates, key=lambda c: c.priority)
    for width in range(20, 300, 7):
        chosen, w = fit_columns(candidates, m.widths, width)
        used = 1 + sum(w[c.key] + 1 for c in chosen)
        assert used <= max(width, 1 + sum(m.widths[c.key] + 1 for c in candidates if c.priority == 0))
        # what is shown is always the most important ones: a prefix of the priority order
        assert {c.key for c in chosen} == {c.key for c in by_priority[:len(chosen)]}
        assert [c.key for c in chosen] == [c.key for c in candidates if c in chosen], "in table order"

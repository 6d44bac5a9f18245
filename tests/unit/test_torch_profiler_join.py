"""A log and a profiler trace of the same run decoded together: the log's layers get the
trace's measured times (``miotui decode train.log trace.json``).  The data is one real run
(tests/data/profiler/make_joined.py, an H100): a cuDNN API log and a torch.profiler trace of
a small conv net's training step, recorded at once."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from miotui.catalog import Catalog
from miotui.decode_output import render_to
from miotui.decoding.parallel import decode_files
from miotui.decoding.whole import decode_paths
from miotui.views.timing import layer_times

DATA = Path(__file__).parents[1] / "data" / "profiler"
LOG = str(DATA / "joined_cudnn.log.gz")
TRACE = str(DATA / "joined_trace.json.gz")


@pytest.fixture(scope="module")
def joined() -> Catalog:
    return decode_files([LOG, TRACE])


def test_every_logged_layer_gets_the_trace_time_of_the_same_layer(joined):
    log_only = {layer.problem: layer for layer in decode_paths([LOG]).layers()}
    trace_only = {layer.problem: layer for layer in decode_paths([TRACE]).layers()}
    layers = joined.layers()
    assert len(layers) == len(log_only) == 17   # the trace adds no layer of its own
    times = layer_times(layers)
    for layer in layers:
        logged = log_only[layer.problem]
        assert (layer.executions, layer.finds) == (logged.executions, logged.finds)   # counts are the log's
        traced = trace_only[layer.problem]
        assert "torch-profiler" in layer.sources and "cudnn-api" in layer.sources
        t = times[layer.id]
        if traced.annotation("profiler_time_ms"):
            assert t.source == "profiler"
            assert t.per_call_ms == pytest.approx(float(traced.annotation("profiler_time_ms")))
            assert t.total_ms == pytest.approx(t.per_call_ms * logged.executions)   # over the log's runs
        else:   # a backward pair whose kernels' names do not say which is which: kept together, said
            assert t.source is None and layer.annotation("profiler_pair")


def test_the_order_of_the_paths_does_not_matter(joined):
    other = decode_paths([TRACE, LOG])
    assert [(s.problem, s.executions, s.annotations) for s in other.layers()] == \
        [(s.problem, s.executions, s.annotations) for s in joined.layers()]


def test_the_table_and_json_say_where_the_times_came_from(joined):
    out = io.StringIO()
    render_to(out, joined, "table")
    head = out.getvalue().splitlines()[:4]
    assert head[2].startswith("profiler: 9 of 11 conv layers timed (2 more timed only as backward data+weights "
                              "pairs), 77% of the trace's GPU kernel time")
    assert "trace: 17 of 17 logged layers matched; 8 of the trace's 25 layers are not in the log" in head[3]
    out = io.StringIO()
    render_to(out, joined, "json")
    doc = json.loads(out.getvalue())
    kernel_time = doc["stats"]["kernel_time"]["profiler"]
    assert kernel_time["kernels"] == 66 and 0.7 < kernel_time["share"] < 0.8
    assert {layer["time"]["source"] for layer in doc["layers"]} == {"profiler", None}


def test_a_layer_with_two_sources_shows_both():
    catalog = Catalog()
    from miotui.problems import ConvProblem
    p = ConvProblem(direction="fwd", dtype="fp32", n=8, c=3, k=32, in_spatial=(64, 64), filter=(3, 3), pads=(1, 1),
                    strides=(1, 1), dilations=(1, 1))
    catalog.add_sighting(p, "execution", "miopen", 1, annotations=[("solver_time_ms", "0.02"),
                                                                   ("profiler_time_ms", "0.0074")])
    t = layer_times(catalog.layers())[1]
    assert (t.source, t.per_call_ms, t.also) == ("profiler", 0.0074, (("find", 0.02),))
    assert t.to_dict()["also"] == {"find": 0.02}


def test_diff_groups_with_a_trace_are_joined_not_merged():
    from miotui.decoding.parallel import decode_file_groups
    old, new = decode_file_groups([[LOG, TRACE], [LOG]], jobs=2, min_bytes=0)
    assert len(old) == len(new) == 17
    assert "profiler" in old.kernel_time and not new.kernel_time
    assert [s.executions for s in old.layers()] == [s.executions for s in new.layers()]

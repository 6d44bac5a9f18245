"""Export: the JSON contract, CSV, and the driver script (runnable, ordered, injection-proof)."""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import stat
import subprocess
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui import export
from miotui.catalog import Catalog, LayerSnapshot, UndecodedRecord
from miotui.decoding.whole import decode_paths
from miotui.driver import parse_driver_command, to_driver_command
from miotui.problems import (
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    FusionProblem,
    LRNProblem,
    PoolProblem,
    SoftmaxProblem,
)
from miotui.views.timing import layer_times

DEMO = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "miotui", "samples",
                    "resnet50_demo.log")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return decode_paths([DEMO])


def snap(problem, index=0, executions=0, finds=0, mentions=0, warnings=(), annotations=()) -> LayerSnapshot:
    return LayerSnapshot(index=index, problem=problem, executions=executions, finds=finds, mentions=mentions,
                         first_line=index + 1, last_line=index + 10, sources=("command",), files=(),
                         annotations=tuple(annotations), warnings=tuple(warnings), raw=(),
                         driver_command=to_driver_command(problem))


CONV = ConvProblem("wrw", "fp16", 16, 64, 128, (28, 28), (3, 3), (1, 1), (2, 2), (1, 1), groups=2,
                   in_layout="NHWC", fil_layout="NHWC", out_layout="NHWC")


# ---------------------------------------------------------------------- columns

def test_layer_columns_of_a_convolution():
    c = export.layer_columns(CONV)
    assert (c["n"], c["c"], c["d"], c["h"], c["w"], c["k"]) == (16, 64, "", 28, 28, 128)
    assert (c["filter"], c["pad"], c["stride"], c["dilation"], c["groups"]) == ("3x3", "1x1", "2x2", "1x1", 2)
    assert c["output"] == "16x128x14x14" and c["mode"] == "conv"


def test_layer_columns_of_the_other_ops():
    pool = export.layer_columns(PoolProblem("fwd", "fp32", 2, 8, (4, 9, 9), (2, 3, 3), (0, 1, 1), (2, 2, 2), "avg"))
    assert (pool["d"], pool["h"], pool["filter"], pool["stride"], pool["mode"], pool["k"]) == \
        (4, 9, "2x3x3", "2x2x2", "avg", "")
    assert export.layer_columns(BatchNormProblem("bwd", "fp16", 2, 8, (5, 5), "per_activation",
                                                 param_dtype="fp32"))["mode"] == "per_activation params:fp32"
    assert export.layer_columns(ActivationProblem("fwd", "fp32", 1, 2, (3, 3), mode=8))["mode"] == "LEAKYRELU"
    assert export.layer_columns(LRNProblem("fwd", "fp32", 1, 4, (3, 3), "cross", lrn_n=3))["filter"] == "3"
    assert export.layer_columns(SoftmaxProblem("fwd", "fp32", 1, 4, (3, 3), algorithm=2, mode=0))["mode"] == \
        "log instance"
    fusion = export.layer_columns(FusionProblem(1, "fp32", 1, 8, (8, 8), 16, (3, 3), (1, 1), (1, 1), (1, 1)))
    assert (fusion["mode"], fusion["k"], fusion["filter"]) == ("conv+bn+activ", 16, "3x3")


# ---------------------------------------------------------------------- JSON

def test_json_follows_the_contract(catalog):
    layers = catalog.most_executed()
    und = [UndecodedRecord(7, "API block cut short", "MIOpen(HIP): miopenStatus_t x(){", "a.log")]
    doc = export.to_json(layers, und, {"lines": 10, "bytes": 20, "seconds": 0.5, "extra": 1})
    doc = json.loads(json.dumps(doc))
    assert set(doc) == {"layers", "undecoded", "stats"}
    stats = dict(doc["stats"])
    times = layer_times(layers)
    timed = [t.total_ms for t in times.values() if t.total_ms is not None]
    assert stats.pop("time") == {"layers": len(layers), "timed": len(timed), "total_ms": round(sum(timed), 6),
                                 "top5_share": round(sum(sorted(timed)[-5:]) / sum(timed), 6)}
    startup = stats.pop("startup")
    assert startup["kernels_compiled"] == 0 and startup["compile_ms"] is None and startup["settings"] == {}
    assert stats == {"lines": 10, "bytes": 20, "seconds": 0.5, "unknown_finds": 0}
    assert doc["undecoded"] == [{"line": 7, "reason": "API block cut short", "text": "MIOpen(HIP): miopenStatus_t x(){"}]
    keys = {"id", "op", "direction", "dtype", "layout", "driver_command", "executions", "finds", "mentions",
            "first_line", "last_line", "sources", "warnings", "problem", "time", "startup"}
    assert len(doc["layers"]) == len(layers)
    for d, layer in zip(doc["layers"], layers, strict=True):
        assert set(d) == keys
        assert d["problem"] == layer.problem.to_dict()
        assert d["time"] == times[layer.id].to_dict() and d["startup"]["finds"] == layer.finds
        assert d["id"] == layer.index + 1
        assert (d["op"], d["direction"], d["executions"]) == (layer.problem.op, layer.problem.direction,
                                                              layer.executions)
        assert layer.problem in parse_driver_command(d["driver_command"]).problems


# ---------------------------------------------------------------------- CSV

def test_csv_has_one_row_per_layer_in_the_order_given(catalog):
    layers = catalog.most_executed()
    rows = list(csv.DictReader(io.StringIO(export.to_csv(layers))))
    assert len(rows) == len(layers)
    assert tuple(rows[0]) == export.CSV_COLUMNS
    for row, layer in zip(rows, layers, strict=True):
        assert int(row["id"]) == layer.id == layer.index + 1
        assert row["run_backend"] == row["run_status"] == ""
        assert int(row["executions"]) == layer.executions
        assert row["op"] == layer.problem.op and row["driver_command"] == layer.driver_command
        assert float(row["gflop_per_call"]) == pytest.approx(layer.problem.flops / 1e9, rel=1e-5)
    assert any(r["solver"] for r in rows), "the demo log logs chosen solvers"


def test_csv_quotes_commas_and_newlines():
    s = snap(CONV, warnings=("first, second", "line\nbreak"))
    row = next(csv.DictReader(io.StringIO(export.to_csv([s]))))
    assert row["warnings"] == "first, second | line\nbreak"


# ---------------------------------------------------------------------- driver script

def _commands(script: str) -> list[list[str]]:
    out = []
    for line in script.splitlines():
        if line.startswith('"$DRIVER" '):
            tokens = shlex.split(line.split(" || ")[0])
            assert tokens[0] == "$DRIVER" and tokens[-3:] == ["-t", "1", "$@"]
            out.append(tokens[1:-3])
    return out


def test_driver_script_runs_most_executed_first_and_round_trips(catalog):
    layers = catalog.layers()
    script = export.to_driver_script(layers)
    assert script.startswith("#!/usr/bin/env bash\n")
    cmds = _commands(script)
    expected = sorted(layers, key=lambda s: (-s.executions, -s.finds, -s.mentions, s.first_line, s.index))
    assert len(cmds) == len(expected)
    for tokens, layer in zip(cmds, expected, strict=True):
        assert layer.problem in parse_driver_command("MIOpenDriver " + " ".join(tokens)).problems
    assert f"{expected[0].executions:,} executions" in script.split('"$DRIVER"')[0]


def test_driver_script_is_valid_bash_and_passes_arguments(tmp_path, catalog):
    script_path = tmp_path / "layers.sh"
    script_path.write_text(export.to_driver_script(catalog.most_executed()[:3]))
    assert subprocess.run(["bash", "-n", str(script_path)]).returncode == 0
    recorder = tmp_path / "fake_driver.sh"
    recorder.write_text('#!/usr/bin/env bash\necho "$@" >> "$RECORD"\n[ "$1" = pool ] && exit 3\nexit 0\n')
    recorder.chmod(recorder.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, MIOPEN_DRIVER=str(recorder), RECORD=str(tmp_path / "argv.txt"))
    done = subprocess.run(["bash", str(script_path), "-V", "0", "-i", "5"], env=env, capture_output=True, text=True)
    recorded = (tmp_path / "argv.txt").read_text().splitlines()
    assert len(recorded) == 3 and all(line.endswith("-t 1 -V 0 -i 5") for line in recorded)
    failures = sum(1 for line in recorded if line.startswith("pool "))
    assert done.returncode == failures
    assert ("failed" in done.stderr) == bool(failures)


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab$`'\"\\;|&()\n\r#! {}")), max_size=40))
def test_nothing_from_a_log_can_inject_shell(tmp_path_factory, text):
    """Warnings come from the log; they must stay comments whatever they hold."""
    tmp = tmp_path_factory.mktemp("inject")
    marker = tmp / "pwned"
    evil = f"{text}\n$(touch {marker}) `touch {marker}`; touch {marker}"
    s = snap(CONV, executions=3, warnings=(evil, text))
    script = tmp / "s.sh"
    script.write_text(export.to_driver_script([s]))
    env = dict(os.environ, MIOPEN_DRIVER="true")
    subprocess.run(["bash", str(script)], env=env, capture_output=True)
    assert not marker.exists()
    assert len(_commands(script.read_text())) == 1


def test_a_layer_without_a_driver_command_is_skipped_with_the_reason():
    s = replace(snap(CONV, executions=5), problem=ConvProblem("fwd", "fp64", 1, 8, 8, (8, 8), (3, 3), (1, 1),
                                                              (1, 1), (1, 1)))
    script = export.to_driver_script([s, snap(CONV, index=1, executions=1)])
    assert "#   skipped: " in script
    assert len(_commands(script)) == 1


def test_run_results_go_into_json_and_csv(catalog):
    """The app exports what it ran: each layer's runs in the JSON, the latest in the CSV."""
    layers = catalog.most_executed()
    first = layers[0]
    runs = {first.id: [{"backend": "numpy", "status": "ok", "median_ms": 1.5, "min_ms": 1.25, "max_ms": 2.0,
                        "gflops": 3.0, "gbps": None,
                        "verification": {"ok": True, "error": 1e-7, "tolerance": 1.5e-6}},
                       {"backend": "torch", "status": "failed", "median_ms": 0.5, "min_ms": 0.4, "max_ms": 0.7,
                        "gflops": 9.0, "gbps": 4.0,
                        "verification": {"ok": False, "error": 0.1, "tolerance": 1.5e-6}}]}
    doc = json.loads(json.dumps(export.to_json(layers, [], {"lines": 1, "bytes": 1, "seconds": 0}, runs=runs)))
    by_id = {d["id"]: d for d in doc["layers"]}
    assert [r["backend"] for r in by_id[first.id]["runs"]] == ["numpy", "torch"]
    assert all(d["runs"] == [] for i, d in by_id.items() if i != first.id)
    rows = {int(r["id"]): r for r in csv.DictReader(io.StringIO(export.to_csv(layers, runs)))}
    latest = rows[first.id]
    assert (latest["run_backend"], latest["run_status"], latest["run_verified"]) == ("torch", "failed", "no")
    assert float(latest["run_median_ms"]) == 0.5 and float(latest["run_max_ms"]) == 0.7
    assert all(r["run_backend"] == "" for i, r in rows.items() if i != first.id)

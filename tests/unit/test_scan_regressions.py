"""Regressions from an independent review of the decoder (inputs in tests/data/regress):
one call logged in several forms counts once, on one layer, whatever MIOpen dropped
from its Command line; old-format lines behind foreign prefixes; cut lines of every op;
corrupt .gz input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REGRESS = Path(__file__).parents[1] / "data" / "regress"


def decode(name: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "miotui", "decode", str(REGRESS / name), "--format", "json"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def rows(doc: dict) -> list[tuple]:
    return [(ln["op"], ln["direction"], ln["dtype"], ln["executions"], ln["finds"]) for ln in doc["layers"]]


def test_guessed_dtype_block_takes_the_type_of_its_command_line():
    doc = decode("t5.log")  # two blocks without Set*TensorDescriptor, each followed by convfp16
    assert rows(doc) == [("conv", "fwd", "fp16", 2, 0)]
    assert doc["layers"][0]["sources"] == ["api-trace", "command"]
    assert not any("guessed" in w for w in doc["layers"][0]["warnings"])


def test_guessed_dtype_resolved_by_find_db_key_and_invoker_lines():
    doc = decode("t13.log")
    assert [(r[0], r[2], r[3]) for r in rows(doc)] == [("conv", "fp16", 1)]
    assert doc["layers"][0]["driver_command"].startswith("MIOpenDriver convfp16 ")


@pytest.mark.parametrize("name", ["t6b.log", "t6c.log"])
def test_old_format_behind_docker_or_markdown_prefix(name):
    doc = decode(name)
    assert rows(doc) == [("conv", "fwd", "fp32", 1, 0)] and not doc["undecoded"]


def test_old_command_line_behind_prefix_keeps_its_api_direction():
    assert rows(decode("t7.log")) == [("conv", "bwd", "fp32", 1, 0)]


def test_old_batchnorm_inference_command():
    doc = decode("t1.log")
    assert rows(doc) == [("bnorm", "fwd_infer", "fp32", 1, 0)]
    assert "--forw 2" in doc["layers"][0]["driver_command"]
    assert rows(decode("t2.log")) == [("bnorm", "fwd_infer", "fp32", 1, 0)]


@pytest.mark.parametrize("name, expected", [
    ("t17.log", [("conv", "fwd", "fp32", 1, 0)]),      # <=1.8 transposed: the log's -k is C
    ("t19.log", [("bnorm", "fwd_train", "fp16", 1, 0)]),  # fp16 x with fp32 scale: bnormfp16fp32
    ("t21.log", [("conv", "fwd", "fp32", 1, 0)] * 2),  # trans output padding / padding same
    ("t20.log", [("activ", "fwd", "fp32", 1, 0), ("softmax", "bwd", "fp32", 1, 0), ("lrn", "fwd", "fp32", 1, 0)]),
    ("t22.log", [("fusion", "fwd", "fp16", 1, 0)]),
])
def test_command_line_that_drops_fields_is_the_same_call(name, expected):
    doc = decode(name)
    assert rows(doc) == expected
    for layer in doc["layers"]:
        assert set(layer["sources"]) == {"api-trace", "command"}


def test_block_fields_win_over_the_lossy_command_line():
    commands = [ln["driver_command"] for ln in decode("t21.log")["layers"]]
    assert "-Y 1 -X 1" in commands[0] and "-z same" in commands[1]
    assert "bnormfp16fp32" in decode("t19.log")["layers"][0]["driver_command"]


def test_cut_command_lines_of_every_op_are_undecoded():
    doc = decode("t11.log")
    assert doc["layers"] == [] and len(doc["undecoded"]) == 6
    assert all("always prints" in u["reason"] for u in doc["undecoded"])


@pytest.mark.parametrize("name", ["trunc.log.gz", "corrupt.log.gz"])
def test_corrupt_gzip_is_reported_not_a_traceback(name):
    doc = decode(name)
    assert doc["undecoded"] and "could not be read further" in doc["undecoded"][-1]["reason"]


def test_line_cache_is_bounded_for_logs_of_distinct_long_lines():
    from miotui.catalog import Catalog
    from miotui.formats.miopen import scan
    scanner = scan.LogScanner(Catalog())
    for i in range(20000):
        scanner.feed((f"{i} " + "x" * 2000 + "\n").encode())
        scanner.feed(f"epoch {i} loss 0.{i}\n".encode())
    assert sum(len(k) for k in scanner.lines.entries) <= scan.LINE_CACHE_CHARS
    assert len(scanner.lines.entries) <= scan.LINE_CACHE_SIZE

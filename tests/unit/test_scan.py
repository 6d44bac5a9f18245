"""The scanner: prefixes of every version, block assembly per thread, chunking, bad input,
and the catalog it fills (counts, dedupe of an API block and its Command line)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui.catalog import Catalog
from miotui.decoding.whole import decode_paths
from miotui.formats.miopen.lines import (
    BARE_PARAM,
    CLOSE,
    COMMAND,
    HEADER,
    LEVEL,
    OLD_COMMAND,
    PARAM,
    TEXT,
    classify,
    split_prefix,
)
from miotui.formats.miopen.scan import LogScanner

DATA = Path(__file__).parents[1] / "data"
REAL = DATA / "real_logs"


def scan_text(text: str, chunk: int = 0) -> Catalog:
    catalog = Catalog()
    scanner = LogScanner(catalog)
    data = text.encode()
    if chunk:
        for i in range(0, len(data), chunk):
            scanner.feed(data[i:i + chunk])
    else:
        scanner.feed(data)
    scanner.finish()
    return catalog


def summary(catalog: Catalog) -> list[tuple]:
    return sorted((s.driver_command, s.executions, s.finds, s.mentions) for s in catalog.layers())


# ---------------------------------------------------------------- prefixes (docs/formats.md §2.2)

@pytest.mark.parametrize("line, tid, body", [
    ("MIOpen(HIP): Info [X] y", "", "Info [X] y"),
    ("MIOpen(OpenCL): Info [X] y", "", "Info [X] y"),
    ("MIOpen: Info [X] y", "", "Info [X] y"),
    ("44781 MIOpen(HIP): \targs = ", "44781", "\targs = "),
    ("node17 44781 MIOpen(HIP): Info [X] y", "44781", "Info [X] y"),
    ("MIOpen(HIP)   0.001: Info [Handle] stream: 0, device_id: 0", "", "Info [Handle] stream: 0, device_id: 0"),
    ("MIOpen(HIP) 12345.678 (2025-01-02T03:04:05.678Z): Info [X] y", "", "Info [X] y"),
    ("trainer-1  | MIOpen(HIP): Info [X] y", "", "Info [X] y"),
    ("**MIOpen(HIP): Info [X] y", "", "Info [X] y"),
    ("   MIOpen(HIP): Command [LogCmdBNorm] ./bin/MIOpenDriver bnorm", "", "Command [LogCmdBNorm] ./bin/MIOpenDriver bnorm"),
])
def test_split_prefix(line, tid, body):
    assert split_prefix(line) == (tid, body)


@pytest.mark.parametrize("line", ["MIOpenDriver: conv -n 1", "MIOpen Forward Conv. Algorithm: 1",
                                  "MIOpen Error: /src/x.cpp:12: bad", "MIOpen (version: 2.9.0)", "plain text"])
def test_not_prefixed(line):
    assert split_prefix(line) is None


def test_classify_kinds():
    assert classify("MIOpen(HIP): miopenStatus_t miopenConvolutionForward(miopenHandle_t){")[0] == HEADER
    assert classify("MIOpen(HIP): \txDesc = {1, 2}, {2, 1}, packed, ")[:3] == (PARAM, "", "xDesc")
    assert classify("MIOpen(HIP): \targs = ")[2:4] == ("args", "")
    assert classify("7 MIOpen(HIP): }") == (CLOSE, "7")
    assert classify("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1")[0] == COMMAND
    assert classify("MIOpen(HIP): Info2 [GetInvoker] Returning x")[:4] == (LEVEL, "", "Info2", "GetInvoker")
    assert classify("miopenConvolutionForward: ./bin/MIOpenDriver conv -n 1")[0] == OLD_COMMAND
    assert classify("dyDesc = 1, 96, 2, 3")[0] == BARE_PARAM
    assert classify("Epoch 1/30")[0] == TEXT


# ---------------------------------------------------------------- chunking and bad input

COMMANDS = "".join(
    f"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {n} -c 3 -H 32 -W 32 -k 8 "
    f"-y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\r\n" for n in (1, 2, 1, 1))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 200))
def test_any_chunking_gives_the_same_catalog(chunk):
    whole = scan_text(COMMANDS)
    assert summary(scan_text(COMMANDS, chunk)) == summary(whole)
    assert scan_text(COMMANDS, chunk).lines == whole.lines


def test_counts_and_line_numbers_with_crlf():
    catalog = scan_text("noise\r" + COMMANDS)
    (a, b) = catalog.most_executed()
    assert (a.executions, a.first_line, a.last_line) == (3, 2, 5)
    assert b.executions == 1 and b.problem.n == 2


@pytest.mark.parametrize("blob", [
    bytes(range(256)) * 50,
    b"\x00" * 10000 + b"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv \x00\n",
    "MIOpen(HIP): Info [X] caf\udcff".encode("utf-8", "surrogateescape") + b"\xff\xfe\n",
    b"x" * 1_000_000 + b"\n" + b"MIOpen(HIP): " + b"{" * 1_000_000,
    b"\r" * 5000 + b"Epoch 1 [=====>   ]\r" * 1000,
])
def test_bad_input_never_crashes(blob):
    catalog = Catalog()
    scanner = LogScanner(catalog)
    for i in range(0, len(blob), 4093):
        scanner.feed(blob[i:i + 4093])
    scanner.finish()
    assert catalog.bytes == len(blob)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([
    "MIOpen(HIP): miopenStatus_t miopenConvolutionForward(miopenHandle_t, const void *){",
    "MIOpen(HIP): \txDesc = {1, 3, 8, 8}, {192, 64, 8, 1}, packed, ",
    "MIOpen(HIP): \twDesc = {4, 3, 3, 3}, {27, 9, 3, 1}, packed, ",
    "MIOpen(HIP): \tconvDesc = conv2d, miopenConvolution, miopenPaddingDefault, {1, 1}, {1, 1}, {1, 1}, ",
    "MIOpen(HIP): \tyDesc = {1, 4, 8, 8}, {256, 64, 8, 1}, packed, ",
    "MIOpen(HIP): }", "}", "12 MIOpen(HIP): }", "xDesc = 1, 3, 8, 8",
    "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H 8",
    "MIOpen(HIP): Info [ConvolutionForward] algo = 1, workspace = 0",
    "MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -F 1", "GPU Kernel Time Forward Conv. Elapsed: 1.0 ms",
    "1-1-1-4x4-512-4-4-128-0x0-1x1-1x1-0-NCHW-FP32-B=miopenConvolutionBwdDataAlgoGEMM:GemmBwdRest,0.1,0,x,y",
    "", "\x00\x01", "MIOpen(HIP): \t", "MIOpen(HIP): Info2 [] ",
]), max_size=40), st.integers(1, 64))
def test_fuzz_scanner_never_raises(lines, chunk):
    scan_text("\n".join(lines), chunk)


def test_truncated_block_is_undecoded_not_a_layer():
    text = ("MIOpen(HIP): miopenStatus_t miopenConvolutionForward(miopenHandle_t){\n"
            "MIOpen(HIP): \txDesc = {1, 3, 8, 8}, {192, 64, 8, 1}, packed, \n")
    catalog = scan_text(text)
    assert len(catalog) == 0
    assert catalog.undecoded_count == 1 and "cut short" in catalog.undecoded()[0].reason


def test_cut_command_line_is_undecoded():
    catalog = scan_text("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8\n")
    assert len(catalog) == 0 and catalog.undecoded_count == 1


# ---------------------------------------------------------------- files

def test_gz_and_plain_give_the_same_catalog(tmp_path):
    plain = tmp_path / "a.log"
    plain.write_text(COMMANDS)
    gz = tmp_path / "a.log.gz"
    gz.write_bytes(gzip.compress(COMMANDS.encode()))
    assert summary(decode_paths([str(plain)])) == summary(decode_paths([str(gz)]))


def test_decode_cli_json_contract(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(COMMANDS + "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c\n")
    out = subprocess.run([sys.executable, "-m", "miotui", "decode", str(log), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    assert set(doc) == {"layers", "undecoded", "stats"}
    first = doc["layers"][0]
    assert first["op"] == "conv" and first["direction"] == "fwd" and first["dtype"] == "fp32"
    assert first["layout"] == "NCHW" and first["executions"] == 3 and first["finds"] == 0
    assert first["driver_command"] == ("MIOpenDriver conv -n 1 -c 3 -H 32 -W 32 -k 8 -y 3 -x 3 -p 1 -q 1 "
                                       "-u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1")
    assert first["problem"]["in_spatial"] == [32, 32]
    assert doc["undecoded"][0]["line"] == 5 and doc["undecoded"][0]["reason"]
    assert doc["stats"]["lines"] >= 5 and doc["stats"]["bytes"] == log.stat().st_size


def test_decode_cli_driver_and_csv(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(COMMANDS)
    out = subprocess.run([sys.executable, "-m", "miotui", "decode", str(log), "--format", "driver"],
                         capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines == [
        "# layer 1: 3 executions, 0 finds, 0 mentions: conv fwd fp32 NCHW (log lines 1-4)",
        "MIOpenDriver conv -n 1 -c 3 -H 32 -W 32 -k 8 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1",
        "# layer 2: 1 executions, 0 finds, 0 mentions: conv fwd fp32 NCHW (log lines 2-2)",
        "MIOpenDriver conv -n 2 -c 3 -H 32 -W 32 -k 8 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1",
    ]
    csv_out = subprocess.run([sys.executable, "-m", "miotui", "decode", str(log), "--format", "csv"],
                             capture_output=True, text=True, check=True).stdout
    assert len(csv_out.strip().splitlines()) == 3


def test_decode_cli_unreadable_path_exits_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "miotui", "decode", str(tmp_path / "missing.log")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "missing.log" in r.stderr


# ---------------------------------------------------------------- legacy Find at Info level (docs/formats.md §5.3)

_FIND_INFO = """\
MIOpen(HIP): Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0
MIOpen(HIP): Info2 [FindRecordUnsafe] Looking for key 192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-F in file /tmp/a.find_db
MIOpen(HIP): Info [GetForwardSolutionsFallback] Fallback path, GEMM
MIOpen(HIP): Info2 [FindRecordUnsafe] Looking for key 192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-F in file /tmp/a.find_db
"""
_CMD = ("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 16 -c 192 -H 28 -W 28 -k 32 -y 5 -x 5 "
        "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")


def test_key_lookups_inside_a_legacy_find_name_its_problem():
    """requestAlgoCount is the Find; the key lookups that follow say which layer it searched
    for (and are mentions themselves, as every lookup is)."""
    rows = [(s.executions, s.finds, s.mentions) for s in scan_text(_FIND_INFO * 3).layers()]
    assert rows == [(0, 3, 6)]
    catalog = scan_text(_FIND_INFO.splitlines(keepends=True)[0])
    assert (len(catalog), catalog.unknown_finds) == (0, 1)    # a Find nothing names: of an unknown problem


def test_lookups_outside_a_find_or_after_an_execution_are_mentions():
    lookup = _FIND_INFO.splitlines(keepends=True)[1]
    rows = [(s.executions, s.finds, s.mentions) for s in scan_text(lookup + _FIND_INFO + _CMD + lookup).layers()]
    assert rows == [(1, 1, 4)]


def test_a_record_read_after_its_lookup_is_that_lookup():
    lookup = ("MIOpen(HIP): Info [FindRecordUnsafe] Looking for key: 512-28-28-3x3-512-28-28-64-1x1-1x1-1x1-0-NCHW-"
              "FP32-W\n")
    record = ("MIOpen(HIP): Info [GetValues] Read record 512-28-28-3x3-512-28-28-64-1x1-1x1-1x1-0-NCHW-FP32-W="
              "ConvAsmBwdWrW3x3:3,0,8,4,4,1\n")
    (layer,) = scan_text(lookup + record).layers()
    assert layer.mentions == 1 and layer.annotation("perf_config") == "ConvAsmBwdWrW3x3:3,0,8,4,4,1"
    (alone,) = scan_text(record).layers()        # a record read with no lookup before it names the layer
    assert alone.mentions == 1


def test_a_find_of_another_direction_does_not_claim_the_lookup():
    text = _FIND_INFO.replace("FindConvFwdAlgorithm", "FindConvBwdDataAlgorithm")
    rows = [(s.problem.direction, s.executions, s.finds, s.mentions) for s in scan_text(text).layers()]
    assert rows == [("fwd", 0, 0, 2)]


def test_bare_bnorm_command_is_the_api_blocks_call_but_undecoded_alone():
    """MIOpen 1.x logs batch-norm backward as 'bnorm' with no flags after its API block."""
    block = ("MIOpen(HIP): miopenStatus_t miopenBatchNormalizationBackward(miopenHandle_t, ...){\n"
             "xDesc = 32, 64, 56, 56\ndyDesc = 32, 64, 56, 56\ndxDesc = 32, 64, 56, 56\n"
             "bnScaleBiasDiffDesc = 1, 64, 1, 1\nbn_mode = 1\nepsilon = 1e-05\n"
             "savedMean = 0x7f9c8d890c00\nsavedInvVariance = 0x7f9c8d892c00\n}\n")
    bare = "miopenBatchNormalizationBackward: ./bin/MIOpenDriver bnorm\n"
    catalog = scan_text((block + bare) * 3)
    assert [(s.problem.op, s.executions) for s in catalog.layers()] == [("bnorm", 3)]
    assert catalog.undecoded_count == 0
    alone = scan_text(bare)
    assert alone.undecoded_count == 1 and "without any flags" in alone.undecoded()[0].reason

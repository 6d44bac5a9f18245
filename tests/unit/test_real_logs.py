"""Every real excerpt (tests/data/real_logs, copied verbatim from public issues) decodes to
its README's hand count, through the whole pipeline (scanner, decoders, catalog)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from miotui.decoding.whole import decode_paths
from miotui.driver import parse_driver_command

REAL = Path(__file__).parents[1] / "data" / "real_logs"


def layers_of(name: str):
    (path,) = REAL.glob(name + "*")
    catalog = decode_paths([str(path)])
    rows = [(s.problem.op, s.problem.direction, s.problem.dtype, s.executions, s.finds, s.mentions)
            for s in catalog.layers()]
    return catalog, rows


HAND_COUNTS = sorted(REAL.glob("hand_counts*.json"))


def _entries() -> list[dict]:
    out = []
    for path in HAND_COUNTS:
        out += json.loads(path.read_text(encoding="utf-8"))
    return out


ENTRIES = _entries()


def test_every_real_log_has_a_hand_count():
    logs = {p.name for p in REAL.glob("*.log")}
    counted = [e["file"] for e in ENTRIES]
    assert len(counted) == len(set(counted)), "a file is counted twice"
    assert logs == set(counted)


def _row(op, direction, dtype, executions, finds, mentions):
    return (op, direction, dtype, executions, finds, mentions)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"][:40] for e in ENTRIES])
def test_hand_count(entry):
    """The decoder agrees with the hand count (made before the decoder ran on the file):
    the same layers (op, direction, dtype) with the same executions, finds and mentions,
    the same number of undecoded records, and the layer each command names."""
    catalog = decode_paths([str(REAL / entry["file"])])
    layers = catalog.layers()
    wildcard = {i for i, e in enumerate(entry["layers"]) if e["dtype"] == "?"}
    got = sorted(_row(s.problem.op, s.problem.direction, s.problem.dtype, s.executions, s.finds, s.mentions)
                 for s in layers)
    want = [_row(e["op"], e["dir"], e["dtype"], e["exec"], e["find"], e["mention"]) for e in entry["layers"]]
    # a "?" dtype (the log cannot tell) matches whatever the decoder guessed, which it must say
    for i in wildcard:
        match = next((g for g in got if g[:2] == want[i][:2] and g[3:] == want[i][3:]), None)
        assert match is not None, f"no layer for {want[i]}"
        want[i] = match
    assert got == sorted(want)
    for s in layers:
        if any(e["dtype"] == "?" and (e["op"], e["dir"]) == (s.problem.op, s.problem.direction)
               for e in entry["layers"]):
            assert any("data type" in w for w in s.warnings), s
    assert catalog.undecoded_count == len(entry["undecoded"]), [u.reason for u in catalog.undecoded()]
    assert catalog.unknown_finds == entry.get("unknown_finds", 0)
    problems = [s.problem for s in layers]
    for e in entry["layers"]:
        if not e.get("command"):
            continue
        named = parse_driver_command(e["command"]).problems
        for want_problem in named:
            if e["dtype"] == "?":
                want_problem = dataclasses.replace(want_problem, dtype=next(
                    p.dtype for p in problems if (p.op, p.direction) == (want_problem.op, want_problem.direction)))
            assert want_problem in problems, f"{e['command']} is not among the decoded layers"


def test_17_interrupted_driver_run_attaches_results():
    catalog, rows = layers_of("17_")
    by_dir = {s.problem.direction: s for s in catalog.layers()}
    assert float(by_dir["fwd"].annotation("driver_kernel_ms")) == pytest.approx(3.43388)
    assert float(by_dir["bwd"].annotation("driver_kernel_ms")) == pytest.approx(104.385124)
    assert by_dir["fwd"].annotation("driver_verdict").lower().startswith("ok")


def test_34_failed_verification_is_on_the_layer():
    catalog, _ = layers_of("34_")
    first = min(catalog.layers(), key=lambda s: s.first_line)
    assert first.annotation("driver_verdict").lower().startswith("fail")
    assert float(first.annotation("driver_tolerance")) == pytest.approx(0.082)
    assert first.annotation("solver") == "ConvHipImplicitGemmForwardV4R4Xdlops"


def test_53_55_db_records_are_layers_with_solvers():
    _, rows53 = layers_of("53_")
    assert len(rows53) == 10 and sum(r[1] == "fwd" for r in rows53) == 5
    catalog, rows55 = layers_of("55_")
    assert len(rows55) == 3 and all(r[2] == "fp16" for r in rows55)
    first = min(catalog.layers(), key=lambda s: s.first_line)
    assert first.annotation("solver") == "ConvWinoFuryRxS<2-3>"
    assert len(dict(first.annotation_history)["find_result"]) == 6


def test_api_block_and_its_command_line_give_the_same_command():
    """MIOpen's own Command line for a call and the command we build from its API block agree."""
    block = """MIOpen(HIP): miopenStatus_t miopenSetTensorDescriptor(miopenTensorDescriptor_t, miopenDataType_t, int, const int *, const int *){
MIOpen(HIP): \ttensorDesc = {}, {}, packed, 
MIOpen(HIP): \tdataType = 0
MIOpen(HIP): \tnbDims = 4
MIOpen(HIP): \tdim.values = { 8 64 56 56 }
MIOpen(HIP): \tstride.values = { 200704 1 3584 64 }
MIOpen(HIP): }
MIOpen(HIP): miopenStatus_t miopenConvolutionBackwardData(miopenHandle_t, const void *, const miopenTensorDescriptor_t, const void *, const miopenTensorDescriptor_t, const void *, const miopenConvolutionDescriptor_t, miopenConvBwdDataAlgorithm_t, const void *, const miopenTensorDescriptor_t, void *, void *, size_t){
MIOpen(HIP): \thandle = stream: 0x1, device_id: 0
MIOpen(HIP): \talpha = 0x7f00
MIOpen(HIP): \tdyDesc = {8, 128, 28, 28}, {100352, 1, 3584, 128}, packed, 
MIOpen(HIP): \tdy = 0x7f10
MIOpen(HIP): \twDesc = {128, 32, 3, 3}, {288, 1, 96, 32}, packed, 
MIOpen(HIP): \tw = 0x7f20
MIOpen(HIP): \tconvDesc = conv2d, miopenConvolution, miopenPaddingDefault, {1, 1}, {2, 2}, {1, 1}, 2, 
MIOpen(HIP): \talgo = 5
MIOpen(HIP): \tbeta = 0x7f30
MIOpen(HIP): \tdxDesc = {8, 64, 56, 56}, {200704, 1, 3584, 64}, packed, 
MIOpen(HIP): \tdx = 0x7f40
MIOpen(HIP): \tworkSpace = 0
MIOpen(HIP): \tworkSpaceSize = 0
MIOpen(HIP): }
MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver convfp16 -n 8 -c 64 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -l 1 -j 1 --in_layout NHWC --fil_layout NHWC --out_layout NHWC -m conv -g 2 -F 2 -t 1
"""
    import io

    from miotui.catalog import Catalog
    from miotui.decoding.whole import decode_stream
    catalog = Catalog()
    decode_stream(catalog, io.BytesIO(block.encode()))
    (layer,) = catalog.layers()
    assert layer.executions == 1 and set(layer.sources) == {"api-trace", "command"}
    assert layer.driver_command == ("MIOpenDriver convfp16 -n 8 -c 64 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 "
                                    "-u 2 -v 2 -l 1 -j 1 --in_layout NHWC --fil_layout NHWC --out_layout NHWC "
                                    "-m conv -g 2 -F 2")

"""Every real excerpt (tests/data/real_logs, copied verbatim from public issues) decodes to
its README's hand count, through the whole pipeline (scanner, decoders, catalog)."""

from __future__ import annotations

from pathlib import Path

import pytest

from miotui.logs.scan import decode_paths

REAL = Path(__file__).parent / "data" / "real_logs"


def layers_of(name: str):
    (path,) = REAL.glob(name + "*")
    catalog = decode_paths([str(path)])
    rows = [(s.problem.op, s.problem.direction, s.problem.dtype, s.executions, s.finds, s.mentions)
            for s in catalog.layers()]
    return catalog, rows


def test_every_real_log_is_present():
    assert len(list(REAL.glob("*.log"))) == 22


@pytest.mark.parametrize("name, expected, undecoded", [
    ("01_", [("conv", "bwd", "fp32", 1, 0, 0)], 0),           # 1 conv bwd-data exec (old unprefixed body)
    ("04_", [], 1),                                           # fusion op-args only; last block cut
    ("06_", [("conv", "fwd", "fp32", 0, 0, 1)], 1),           # 1 workspace query; starts mid-block
    ("12_", [("bnorm", d, "fp32", 1, 0, 0) for d in ["fwd_train", "bwd"] * 4], 0),
    ("14_", [("conv", "fwd", "bf16", 2, 0, 0)], 0),           # Windows LogCmd bf16 NHWC + Info2
    ("18_", [("conv", "fwd", "fp32", 1, 0, 0)], 0),
    ("22_", [("conv", "fwd", "fp32", 2, 0, 0)], 0),           # 2 runs, 1 distinct
    ("24_", [("pool", "bwd", "fp32", 1, 0, 0)], 0),
    ("31_", [("bnorm", "bwd", "fp32", 1, 0, 0)], 0),
    ("34_", [("conv", "fwd", "fp16", 1, 0, 0)] * 2, 0),
    ("38_", [("conv", "fwd", "bf16", 1, 0, 0)] * 2, 0),
    ("39_", [("conv", "wrw", "fp32", 1, 0, 0)], 0),
    ("43_", [("conv", "bwd", "fp32", 0, 0, 1)], 0),           # 1 distinct bwd-data problem, no exec
    ("44_", [("conv", "fwd", "fp32", 0, 1, 0)], 0),           # 1 Find (its key looked up twice)
    ("48_", [("conv", "fwd", "int8", 1, 0, 0)], 0),
    ("52_", [("conv", "fwd", "fp32", 1, 0, 0), ("conv", "wrw", "fp32", 1, 0, 0)], 0),
])
def test_hand_counts(name, expected, undecoded):
    catalog, rows = layers_of(name)
    assert rows == expected
    assert catalog.undecoded_count == undecoded


def test_09_old_logcmd_conv_pool():
    catalog, rows = layers_of("09_")
    convs = [r for r in rows if r[0] == "conv"]
    assert len(convs) == 4 and sum(r[3] for r in convs) == 7   # 8 lines, the last one cut
    assert [r for r in rows if r[0] == "pool"] == [("pool", "fwd", "fp32", 1, 0, 0)]
    assert catalog.undecoded_count == 1 and "cut short" in catalog.undecoded()[0].reason


def test_10_driver_run_find_and_executions():
    catalog, rows = layers_of("10_")
    # The driver's echo is the run; its Find and 4 decodable LogCmdConvolution lines; the 5th is cut.
    assert rows == [("conv", "fwd", "fp32", 4, 1, 0)]
    assert catalog.undecoded_count == 1


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
    from miotui.logs.scan import decode_stream
    catalog = Catalog()
    decode_stream(catalog, io.BytesIO(block.encode()))
    (layer,) = catalog.layers()
    assert layer.executions == 1 and set(layer.sources) == {"api-trace", "command"}
    assert layer.driver_command == ("MIOpenDriver convfp16 -n 8 -c 64 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 "
                                    "-u 2 -v 2 -l 1 -j 1 --in_layout NHWC --fil_layout NHWC --out_layout NHWC "
                                    "-m conv -g 2 -F 2")

"""Tests for the API-trace decoder (miotui.formats.miopen.trace) and its grammars (miotui.formats.miopen.grammar)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miotui.events import Sighting, Undecoded
from miotui.formats.miopen import grammar
from miotui.formats.miopen.grammar import DescriptorError, layout_from_strides, parse_conv, parse_tensor
from miotui.formats.miopen.trace import DTYPE_GUESS_WARNING, TraceDecoder, api_name
from miotui.problems import (
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    FusionProblem,
    LRNProblem,
    PoolProblem,
    SoftmaxProblem,
)

_HERE = Path(__file__).resolve().parents[1]
REAL_LOGS = _HERE / "data" / "real_logs"
SAMPLE_LOGS = _HERE.parent / "sample_logs"

# ----------------------------------------------------------------------------- helpers

_PREFIX = re.compile(r"^(?:\S+ (?=\d+ MIOpen))?(?:\d+ )?MIOpen(?:\((?:HIP|OpenCL)\))?"
                     r"(?: *\d+\.\d{3})?(?: \([^)]*\))?: ")


def split_blocks(text: str) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """The test's own block splitter: strip the prefix / pid and the tab, split at ' = '.
    Param lines before the first header (a block cut at the start) are dropped."""
    header: Optional[str] = None
    params: list[tuple[str, str]] = []
    for raw in text.splitlines():
        body = _PREFIX.sub("", raw, count=1)
        if body.startswith("\t"):
            body = body[1:]
        if body.rstrip().endswith("{") and "(" in body:
            if header is not None:
                yield header, params
            header, params = body, []
        elif body.strip() == "}":
            if header is not None:
                yield header, params
            header, params = None, []
        elif header is not None:
            name, sep, value = body.partition(" = ")
            if sep:
                params.append((name, value))
    if header is not None:
        yield header, params


def hdr(name: str, args: str = "miopenHandle_t, ...") -> str:
    return f"miopenStatus_t {name}({args}){{"


def block(text: str) -> list[tuple[str, str]]:
    """Params from 'name = value' lines (leading whitespace/tabs removed, trailing kept)."""
    out = []
    for line in text.strip("\n").splitlines():
        line = line.lstrip()
        if not line:
            continue
        k, _, v = line.partition(" = ")
        out.append((k, v))
    return out


def decode(dec: TraceDecoder, name: str, params: str) -> list:
    return dec.decode_block(hdr(name), block(params))


def one_sighting(events: list) -> Sighting:
    sightings = [e for e in events if isinstance(e, Sighting)]
    assert len(sightings) == 1, events
    return sightings[0]


def set_tensor(dec: TraceDecoder, dtype: int, lens: tuple[int, ...], strides: tuple[int, ...] = ()) -> None:
    dims = "{ " + " ".join(map(str, lens)) + " }"
    strd = "{ " + " ".join(map(str, strides)) + " }" if strides else "{ }"
    assert decode(dec, "miopenSetTensorDescriptor", f"""
        tensorDesc = {{}}, {{}}, packed, 
        dataType = {dtype}
        nbDims = {len(lens)}
        dim.values = {dims}
        stride.values = {strd}
    """) == []


def tdesc(lens: tuple[int, ...], strides: Optional[tuple[int, ...]] = None, packed: bool = True) -> str:
    strides = strides or grammar.packed_strides(lens)
    return ("{" + ", ".join(map(str, lens)) + "}, {" + ", ".join(map(str, strides)) + "}, "
            + ("packed, " if packed else ""))


CONV_1x1 = "conv2d, miopenConvolution, miopenPaddingDefault, {0, 0}, {1, 1}, {1, 1}, "
CONV_3x3 = "conv2d, miopenConvolution, miopenPaddingDefault, {1, 1}, {1, 1}, {1, 1}, "


def fwd_block(x: str, w: str, conv: str, y: str, algo: int = 1) -> str:
    return f"""
        handle = stream: 0xbde0b0, device_id: 0
        alpha = 0x7ffd1
        xDesc = {x}
        x = 0x7f00001
        wDesc = {w}
        w = 0x7f00002
        convDesc = {conv}
        algo = {algo}
        beta = 0x7ffd2
        yDesc = {y}
        y = 0x7f00003
        workSpace = 0x7f00004
        workSpaceSize = 4096
    """


try:
    from miotui.driver import parse_driver_command, to_driver_command
except ImportError:  # the driver module is the lead's; the comparisons skip without it
    parse_driver_command = to_driver_command = None  # type: ignore[assignment]

needs_driver = pytest.mark.skipif(to_driver_command is None, reason="miotui.driver not available")


# ----------------------------------------------------------------------------- real logs

def _decode_file(name: str) -> tuple[TraceDecoder, list]:
    dec = TraceDecoder()
    events = []
    for header, params in split_blocks((REAL_LOGS / name).read_text(errors="replace")):
        events.extend(dec.decode_block(header, params))
    return dec, events


def test_real_log_01_old_format_backward_data():
    _, events = _decode_file("01_miopen81-2019-api-trace-bwd-data.log")
    assert not [e for e in events if isinstance(e, Undecoded)]
    s = one_sighting(events)
    assert s.role == "execution" and s.source == "api-trace"
    assert s.problem == ConvProblem("bwd", "fp32", 1, 32, 96, (2, 3), (5, 5), (2, 2), (1, 1), (1, 1))
    assert DTYPE_GUESS_WARNING in s.warnings  # 2019 trace: no Set*TensorDescriptor, type guessed
    assert ("algorithm", "0") in s.annotations and ("workspace", "19200") in s.annotations


def test_real_log_04_fusion_op_args_are_not_layers():
    _, events = _decode_file("04_miopen390-2020-pid-prefixed-fusion-api-trace.log")
    assert events == []


def test_real_log_06_new_format_workspace_query():
    _, events = _decode_file("06_migraphx2420-2023-api-trace-strides-packed.log")
    s = one_sighting(events)
    assert s.role == "mention"
    assert s.problem == ConvProblem("fwd", "fp32", 1, 24, 24, (340, 340), (3, 3), (1, 1), (1, 1), (1, 1))
    assert s.warnings == ()  # dtype recovered from the miopenSetTensorDescriptor block


@needs_driver
def test_real_logs_driver_commands():
    _, events = _decode_file("06_migraphx2420-2023-api-trace-strides-packed.log")
    assert to_driver_command(one_sighting(events).problem) == (
        "MIOpenDriver conv -n 1 -c 24 -H 340 -W 340 -k 24 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 "
        "-m conv -g 1 -F 1")
    _, events = _decode_file("01_miopen81-2019-api-trace-bwd-data.log")
    assert to_driver_command(one_sighting(events).problem) == (
        "MIOpenDriver conv -n 1 -c 32 -H 2 -W 3 -k 96 -y 5 -x 5 -p 2 -q 2 -u 1 -v 1 -l 1 -j 1 "
        "-m conv -g 1 -F 2")


@pytest.mark.parametrize("name", ["resnet50_trace55.log", "resnet50_trace2018.log"])
def test_generated_training_traces_decode_cleanly(name):
    """The project's synthetic single-thread ResNet-50 traces: every op decodes, every data
    type is recovered, and the repeated iterations are served from the block cache."""
    path = SAMPLE_LOGS / name
    if not path.exists():
        pytest.skip(f"{path} not generated")
    dec = TraceDecoder()
    sightings, undecoded = [], []
    for header, params in split_blocks(path.read_text()):
        for e in dec.decode_block(header, params):
            (undecoded if isinstance(e, Undecoded) else sightings).append(e)
    assert undecoded == []
    assert {s.problem.op for s in sightings} >= {"conv", "bnorm", "activ", "pool"}
    assert {s.role for s in sightings} == {"execution", "find", "mention"}
    assert all(s.warnings == () for s in sightings)
    assert dec.stats["cache_hits"] > 0


# ----------------------------------------------------------------------------- grammars

@pytest.mark.parametrize("text, lens, strides, packed, cast", [
    ("{1, 24, 340, 340}, {2774400, 115600, 340, 1}, packed, ", (1, 24, 340, 340), (2774400, 115600, 340, 1), True, None),
    ("{1, 24, 340, 340}, {2774400, 115600, 340, 1}, packed,", (1, 24, 340, 340), (2774400, 115600, 340, 1), True, None),
    ("{2, 8, 4, 4}, {256, 1, 64, 16}, ", (2, 8, 4, 4), (256, 1, 64, 16), False, None),
    ("{1, 3}, {3, 1}, packed, cast_type: miopenFloat8", (1, 3), (3, 1), True, "miopenFloat8"),
    ("128, 3, 32, 32", (128, 3, 32, 32), None, None, None),
    ("128, 3, 32, 32, ", (128, 3, 32, 32), None, None, None),
])
def test_tensor_formats(text, lens, strides, packed, cast):
    t = parse_tensor(text)
    assert (t.lens, t.strides, t.packed, t.cast_type) == (lens, strides, packed, cast)


@pytest.mark.parametrize("bad", ["", "{1, 2}, {1}, packed, ", "{1, 2, {3}", "a, b", "{1 2 3}, {}, ", "1,, 2"])
def test_tensor_grammar_rejects(bad):
    with pytest.raises(DescriptorError):
        parse_tensor(bad)


def test_layout_from_strides_matches_miopen_tie_breaks():
    assert layout_from_strides((4, 64, 112, 112), (802816, 1, 7168, 64)) == "NHWC"
    assert layout_from_strides((4, 64, 112, 112), (802816, 12544, 112, 1)) == "NCHW"
    # C = 1: NHWC strides tie C with W; MIOpen sorts by (stride, length) so W comes first
    assert layout_from_strides((2, 1, 5, 7), (35, 1, 7, 1)) == "NHWC"
    assert layout_from_strides((1, 1, 5, 7), (35, 35, 7, 1)) == "NCHW"
    assert layout_from_strides((2, 3, 4, 5, 6), (360, 1, 90, 18, 3)) == "NDHWC"
    assert layout_from_strides((2, 3, 4, 5), (1, 2, 6, 24)) == "WHCN"


def test_conv_grammar_all_versions():
    c = parse_conv("conv3d, miopenTranspose, miopenPaddingSame, {1, 2, 3}, {2, 2, 2}, {1, 1, 1}, 4, {1, 0, 1}, ")
    assert (c.spatial_dim, c.mode, c.pad_mode, c.pads, c.groups, c.trans_output_pads) == \
        (3, "trans", "same", (1, 2, 3), 4, (1, 0, 1))
    c = parse_conv("miopenDepthwise, 1, 1, 2, 2, 1, 1, 32,")
    assert (c.mode, c.legacy_mode, c.groups, c.pads, c.strides, c.new_format) == \
        ("conv", "miopenDepthwise", 32, (1, 1), (2, 2), False)
    with pytest.raises(DescriptorError):
        parse_conv("conv2d, miopenConvolution, miopenPaddingDefault, {1, 1, 1}, {1, 1}, {1, 1}, ")
    with pytest.raises(DescriptorError):
        parse_conv("conv2d, miopenBogus, miopenPaddingDefault, {1, 1}, {1, 1}, {1, 1}, ")


# ----------------------------------------------------------------------------- convolution

def test_forward_new_format_with_dtype_and_annotations():
    dec = TraceDecoder()
    set_tensor(dec, 0, (8, 64, 56, 56), (200704, 3136, 56, 1))
    s = one_sighting(decode(dec, "miopenConvolutionForward", fwd_block(
        tdesc((8, 64, 56, 56)), tdesc((128, 64, 3, 3)), CONV_3x3, tdesc((8, 128, 56, 56)), algo=3)))
    assert s.role == "execution" and s.warnings == ()
    assert s.problem == ConvProblem("fwd", "fp16", 8, 64, 128, (56, 56), (3, 3), (1, 1), (1, 1), (1, 1))
    assert dict(s.annotations) == {"algorithm": "3", "workspace": "4096"}


def test_backward_data_uses_dx_and_backward_weights_uses_dw():
    dec = TraceDecoder()
    s = one_sighting(decode(dec, "miopenConvolutionBackwardData", f"""
        alpha = 0x1
        dyDesc = {tdesc((2, 16, 7, 7))}
        dy = 0x2
        wDesc = {tdesc((16, 8, 3, 3))}
        w = 0x3
        convDesc = conv2d, miopenConvolution, miopenPaddingDefault, {{0, 0}}, {{2, 2}}, {{1, 1}},
        algo = 0
        beta = 0x4
        dxDesc = {tdesc((2, 8, 15, 15))}
        dx = 0x5
        workSpace = 0x6
        workSpaceSize = 0
    """))
    assert s.problem == ConvProblem("bwd", "fp32", 2, 8, 16, (15, 15), (3, 3), (0, 0), (2, 2), (1, 1))
    assert not any("differ" in w for w in s.warnings)
    s = one_sighting(decode(dec, "miopenConvolutionBackwardWeights", f"""
        dyDesc = {tdesc((2, 16, 7, 7))}
        xDesc = {tdesc((2, 8, 15, 15))}
        convDesc = conv2d, miopenConvolution, miopenPaddingDefault, {{0, 0}}, {{2, 2}}, {{1, 1}},
        algo = 5
        dwDesc = {tdesc((16, 8, 3, 3))}
    """))
    assert s.problem.direction == "wrw" and (s.problem.c, s.problem.k) == (8, 16)
    assert ("algorithm", "5") in s.annotations


def test_dy_mismatch_is_a_warning():
    dec = TraceDecoder()
    s = one_sighting(decode(dec, "miopenConvolutionForward", fwd_block(
        tdesc((1, 4, 8, 8)), tdesc((4, 4, 3, 3)), CONV_3x3, tdesc((1, 4, 6, 6)))))
    assert any("differ from the computed output" in w for w in s.warnings)


def test_immediate_find_and_mentions():
    dec = TraceDecoder()
    x, w, y = tdesc((1, 3, 32, 32)), tdesc((8, 3, 3, 3)), tdesc((1, 8, 30, 30))
    conv = "conv2d, miopenConvolution, miopenPaddingDefault, {0, 0}, {1, 1}, {1, 1}, "
    s = one_sighting(decode(dec, "miopenConvolutionForwardImmediate", f"""
        handle = stream: 0, device_id: 0
        wDesc = {w}
        w = 0x1
        xDesc = {x}
        x = 0x2
        convDesc = {conv}
        yDesc = {y}
        y = 0x3
        workSpace = nullptr
        workSpaceSize = 0
        solution_id = 85
    """))
    assert s.role == "execution" and ("solver_id", "85") in s.annotations
    s = one_sighting(decode(dec, "miopenFindConvolutionForwardAlgorithm", f"""
        xDesc = {x}
        x = 0x2
        wDesc = {w}
        w = 0x1
        convDesc = {conv}
        yDesc = {y}
        y = 0x3
        requestAlgoCount = 4
        returnedAlgoCount = 0x7ff
        perfResults = 
        workSpace = 0x5
        workSpaceSize = 1024
        exhaustiveSearch = 0
    """))
    assert s.role == "find" and s.problem.direction == "fwd"
    for name in ("miopenConvolutionForwardGetWorkSpaceSize", "miopenConvolutionForwardGetSolutionCount",
                 "miopenConvolutionForwardCompileSolution"):
        s = one_sighting(decode(dec, name, f"wDesc = {w}\nxDesc = {x}\nconvDesc = {conv}\nyDesc = {y}\n"
                                           "solution_id = 85"))
        assert s.role == "mention" and s.problem.direction == "fwd"
    s = one_sighting(decode(dec, "miopenGetConvolutionForwardOutputDim",
                            f"convDesc = {conv}\ninputTensorDesc = {x}\nfilterDesc = {w}\nn = 0x1\nc = 0x2"))
    assert s.role == "mention" and s.problem.out_spatial == (30, 30)
    s = one_sighting(decode(dec, "miopenConvolutionBackwardWeightsGetWorkSpaceSize",
                            f"dyDesc = {y}\nxDesc = {x}\nconvDesc = {conv}\ndwDesc = {w}\nworkSpaceSize = 0"))
    assert s.role == "mention" and s.problem.direction == "wrw"
    # MIOpen <= 5.4 forward workspace query has no xDesc: not enough for a problem, and not an error
    assert decode(dec, "miopenConvolutionForwardGetWorkSpaceSize",
                  f"wDesc = {w}\nyDesc = {y}\nconvDesc = {conv}\nworkSpaceSize = 0") == []


def test_transposed_grouped_conv_matches_command_semantics():
    dec = TraceDecoder()
    # transposed, G=2: x has C=8 channels, w = [C, K/G, 4, 4] = [8, 3, 4, 4] -> K = 6
    conv = "conv2d, miopenTranspose, miopenPaddingDefault, {1, 1}, {2, 2}, {1, 1}, 2, {1, 1}, "
    s = one_sighting(decode(dec, "miopenConvolutionForward", fwd_block(
        tdesc((1, 8, 5, 5)), tdesc((8, 3, 4, 4)), conv, tdesc((1, 6, 11, 11)))))
    p = s.problem
    assert (p.mode, p.c, p.k, p.groups, p.trans_output_pads) == ("trans", 8, 6, 2, (1, 1))
    assert p.weight_shape == (8, 3, 4, 4) and p.output_shape == (1, 6, 11, 11)
    assert not any("differ" in w for w in s.warnings)


def test_old_format_group_and_depthwise_modes():
    dec = TraceDecoder()
    s = one_sighting(decode(dec, "miopenConvolutionForward", fwd_block(
        "4, 32, 16, 16", "64, 8, 3, 3", "miopenGroupConv, 1, 1, 1, 1, 1, 1, 4, ", "4, 64, 16, 16")))
    assert (s.problem.groups, s.problem.c, s.problem.k, s.problem.mode) == (4, 32, 64, "conv")
    assert any("miopenGroupConv" in w for w in s.warnings)
    s = one_sighting(decode(dec, "miopenConvolutionForward", fwd_block(
        "4, 32, 16, 16", "32, 1, 3, 3", "miopenDepthwise, 1, 1, 1, 1, 1, 1, 1, ", "4, 32, 16, 16")))
    assert s.problem.groups == 32


def test_3d_ndhwc_conv_with_pad_mode():
    dec = TraceDecoder()
    lens = (2, 16, 8, 10, 12)
    x_strides = grammar.layout_strides(lens, "NDHWC")
    w_lens = (32, 16, 3, 3, 3)
    w_strides = grammar.layout_strides(w_lens, "NDHWC")
    y_lens = (2, 32, 4, 5, 6)
    y_strides = grammar.layout_strides(y_lens, "NDHWC")
    set_tensor(dec, 5, lens, x_strides)
    conv = "conv3d, miopenConvolution, miopenPaddingSame, {0, 0, 0}, {2, 2, 2}, {1, 1, 1}, "
    s = one_sighting(decode(dec, "miopenConvolutionForward", fwd_block(
        tdesc(lens, x_strides), tdesc(w_lens, w_strides), conv, tdesc(y_lens, y_strides))))
    p = s.problem
    assert (p.ndim, p.dtype, p.pad_mode, p.in_layout, p.fil_layout, p.out_layout) == \
        (3, "bf16", "same", "NDHWC", "NDHWC", "NDHWC")
    assert p.out_spatial == (4, 5, 6) and s.warnings == ()


def test_odd_and_non_packed_layouts_warn():
    dec = TraceDecoder()
    # padded NCHW (row pitch 40 for W=32): a real layout, but not packed
    s = one_sighting(decode(dec, "miopenConvolutionForward", fwd_block(
        tdesc((1, 4, 32, 32), (5120, 1280, 40, 1), packed=False), tdesc((4, 4, 1, 1)), CONV_1x1,
        tdesc((1, 4, 32, 32)))))
    assert s.problem.in_layout == "NCHW" and any("not packed" in w for w in s.warnings)
    # CNHW storage: MIOpenDriver has no such layout
    s = one_sighting(decode(dec, "miopenConvolutionForward", fwd_block(
        tdesc((2, 4, 8, 8), (64, 128, 8, 1), packed=True), tdesc((4, 4, 1, 1)), CONV_1x1,
        tdesc((2, 4, 8, 8)))))
    assert s.problem.in_layout == "NCHW" and any("CNHW" in w for w in s.warnings)


def test_impl_suffix_is_stripped():
    dec = TraceDecoder()
    events = dec.decode_block("miopenStatus_t miopenConvolutionForward_impl(miopenHandle_t, ...){",
                              block(fwd_block(tdesc((1, 4, 8, 8)), tdesc((4, 4, 1, 1)), CONV_1x1,
                                              tdesc((1, 4, 8, 8)))))
    assert one_sighting(events).problem.direction == "fwd"


# ----------------------------------------------------------------------------- non-API and malformed

@pytest.mark.parametrize("header", [
    "auto miopen::solver::conv::GemmFwd1x1_0_1::GetSolution(const ExecutionContext &, const "
    "conv::ProblemDescription &)::(anonymous class)::operator()(const std::vector<Kernel> &) const{",
    "void miopen::ConvolutionDescriptor::ConvolutionBackwardData(miopen::Handle &, const void *) const{",
    "miopenStatus_t miopen::CallGemm(miopen::Handle &, miopen::GemmDescriptor){",
    "int rocblas_gemm(int){",
    "not a header at all",
    "",
])
def test_non_api_blocks_give_nothing(header):
    dec = TraceDecoder()
    assert dec.decode_block(header, [('"convolution, 1x1"', "convolution, 1x1")]) == []


def test_blocks_that_are_no_layer_give_nothing():
    dec = TraceDecoder()
    for name in ("miopenCreateTensorDescriptor", "miopenDestroyConvolutionDescriptor",
                 "miopenSetOpArgsActivForward", "miopenGetTuningPolicy"):
        assert decode(dec, name, "tensorDesc = 0x17b333f8") == []
    assert api_name("miopenStatus_t miopenGetTuningPolicy_impl(miopenHandle_t, miopenTuningPolicy_t *){") == \
        "miopenGetTuningPolicy"


@pytest.mark.parametrize("params, reason", [
    ("xDesc = {1, 4, 8, 8}, {256, 64, 8, 1}, packed, \nwDesc = {4, 4, 3, 3}, {36, 9, 3, 1}, packed, \n"
     "convDesc = conv2d, miopenConvolution, what, {1, 1}, {1, 1}, {1, 1}, ", "convDesc"),
    ("wDesc = {4, 4, 3, 3}, {36, 9, 3, 1}, packed, \nconvDesc = " + CONV_3x3, "xDesc"),
    ("xDesc = {1, 4, 8}, {32, 8, 1}, packed, \nwDesc = {4, 4, 3, 3}, {36, 9, 3, 1}, packed, \n"
     "convDesc = " + CONV_3x3, "dimensions"),
    ("xDesc = {1, 0, 8, 8}, {0, 64, 8, 1}, \nwDesc = {4, 4, 3, 3}, {36, 9, 3, 1}, packed, \n"
     "convDesc = " + CONV_3x3, "non-positive"),
    ("xDesc = {}, {}, packed, \nwDesc = {4, 4, 3, 3}, {36, 9, 3, 1}, packed, \nconvDesc = " + CONV_3x3,
     "empty"),
])
def test_malformed_conv_is_undecoded(params, reason):
    dec = TraceDecoder()
    events = dec.decode_block(hdr("miopenConvolutionForward"), block(params))
    assert len(events) == 1 and isinstance(events[0], Undecoded), events
    assert reason in events[0].reason and events[0].reason.startswith("miopenConvolutionForward")


def test_a_filter_larger_than_its_input_is_a_layer_with_a_1x1_output():
    """MIOpen accepts it (its output size is clamped to 1), so miotui must too."""
    dec = TraceDecoder()
    events = dec.decode_block(hdr("miopenConvolutionForward"), block(
        "xDesc = {1, 4, 2, 2}, {16, 4, 2, 1}, packed, \nwDesc = {4, 4, 5, 5}, {100, 25, 5, 1}, packed, \n"
        "convDesc = " + CONV_1x1))
    (s,) = events
    assert s.problem.output_shape == (1, 4, 1, 1)


def test_internal_errors_become_undecoded(monkeypatch):
    dec = TraceDecoder()

    def boom(*a, **k):
        raise KeyError("surprise")

    monkeypatch.setattr(dec, "_conv_problem", boom)
    events = decode(dec, "miopenConvolutionForward", fwd_block(
        tdesc((1, 4, 8, 8)), tdesc((4, 4, 1, 1)), CONV_1x1, tdesc((1, 4, 8, 8))))
    assert len(events) == 1 and "internal decoder error" in events[0].reason
    assert dec.decode_block(None, None) == []  # type: ignore[arg-type]
    events = dec.decode_block(hdr("miopenConvolutionForward"), [("only-one",), 5])  # type: ignore[list-item]
    assert len(events) == 1 and "no xDesc" in events[0].reason


# ----------------------------------------------------------------------------- data types

def test_dtype_from_each_set_call():
    dec = TraceDecoder()
    assert decode(dec, "miopenSet4dTensorDescriptor",
                  "tensorDesc = {}, {}, packed, \ndataType = 0\nn = 1\nc = 8\nh = 4\nw = 4") == []
    assert dec.dtype_of(parse_tensor(tdesc((1, 8, 4, 4)))) == "fp16"
    decode(dec, "miopenSet4dTensorDescriptorEx", "dataType = 5\nn = 1\nc = 8\nh = 4\nw = 4\n"
                                                "nStride = 128\ncStride = 1\nhStride = 32\nwStride = 8")
    assert dec.dtype_of(parse_tensor(tdesc((1, 8, 4, 4), (128, 1, 32, 8)))) == "bf16"
    decode(dec, "miopenSetNdTensorDescriptorWithLayout",
           "dataType = 3\ntensorLayout = 1\nlens_in.values = { 2 3 4 5 }\nnum_lens = 4")
    assert dec.dtype_of(parse_tensor(tdesc((2, 3, 4, 5), (60, 1, 15, 3)))) == "int8"
    decode(dec, "miopenSetTensorDescriptorV2", "dataType = 6\nnbDims = 2\ndim.values = { 7 9 }\n"
                                              "stride.values = { 9 1 }")
    assert dec.dtype_of(parse_tensor("{7, 9}, {9, 1}, packed, ")) == "fp64"
    # null strides -> packed; the old lengths-only format matches by lengths
    set_tensor(dec, 0, (3, 3, 3, 3))
    assert dec.dtype_of(parse_tensor("3, 3, 3, 3")) == "fp16"
    # MIOpen <= 2.0 printed only dimsA[0]: nothing to remember, nothing crashes
    assert decode(dec, "miopenSetTensorDescriptor", "dataType = 0\nnbDims = 4\ndimsA = 1\nstridesA = 1") == []


def test_guessed_dtype_warns_and_known_dtype_does_not():
    dec = TraceDecoder()
    params = fwd_block(tdesc((1, 4, 8, 8)), tdesc((4, 4, 1, 1)), CONV_1x1, tdesc((1, 4, 8, 8)))
    s = one_sighting(decode(dec, "miopenConvolutionForward", params))
    assert s.problem.dtype == "fp32" and s.warnings == (DTYPE_GUESS_WARNING,)
    assert "guess" in DTYPE_GUESS_WARNING
    set_tensor(dec, 0, (1, 4, 8, 8), (256, 64, 8, 1))
    s = one_sighting(decode(dec, "miopenConvolutionForward", params))  # cache must not hide the change
    assert s.problem.dtype == "fp16" and s.warnings == ()


def test_dtype_memory_is_bounded():
    dec = TraceDecoder(dtype_memory=16)
    for n in range(1, 41):
        set_tensor(dec, 0, (n, 2, 3, 3))
    assert len(dec._dtypes_exact) <= 16 and len(dec._dtypes_lens) <= 16
    assert dec.dtype_of(parse_tensor(tdesc((40, 2, 3, 3)))) == "fp16"
    assert dec.dtype_of(parse_tensor(tdesc((1, 2, 3, 3)))) is None


def test_dtype_falls_back_to_weights():
    dec = TraceDecoder()
    set_tensor(dec, 0, (4, 4, 1, 1))
    s = one_sighting(decode(dec, "miopenConvolutionForward", fwd_block(
        tdesc((1, 4, 8, 8)), tdesc((4, 4, 1, 1)), CONV_1x1, tdesc((1, 4, 8, 8)))))
    assert s.problem.dtype == "fp16" and s.warnings == ()


# ----------------------------------------------------------------------------- other primitives

POOL_FWD = """
    handle = stream: 0, device_id: 0
    poolDesc = {pool}
    alpha = 0x1
    xDesc = {x}
    x = 0x2
    beta = 0x3
    yDesc = {y}
    y = 0x4
    do_backward = 1
    workSpace = 0x5
    workSpaceSize = 100
"""


def test_pooling_forward_backward_and_modes():
    dec = TraceDecoder()
    x, y = tdesc((1, 64, 112, 112)), tdesc((1, 64, 56, 56))
    s = one_sighting(decode(dec, "miopenPoolingForward",
                            POOL_FWD.format(pool="miopenPoolingMax, 3, 3, 1, 1, 2, 2, ", x=x, y=y)))
    assert s.problem == PoolProblem("fwd", "fp32", 1, 64, (112, 112), (3, 3), (1, 1), (2, 2), "max")
    s = one_sighting(decode(dec, "miopenPoolingForward",
                            POOL_FWD.format(pool="Unknown: 2, 3, 3, 1, 1, 2, 2,", x=x, y=y)))
    assert s.problem.mode == "avg_in"
    s = one_sighting(decode(dec, "miopenPoolingBackward", f"""
        poolDesc = miopenPoolingAverage, 2, 2, 0, 0, 2, 2, 
        yDesc = {tdesc((1, 64, 56, 56))}
        dyDesc = {tdesc((1, 64, 56, 56))}
        xDesc = {x}
        dxDesc = {x}
        workSpace = 0x9
    """))
    assert (s.problem.direction, s.problem.mode, s.problem.window, s.problem.in_spatial) == \
        ("bwd", "avg", (2, 2), (112, 112))


def test_pooling_descriptor_fallback_and_index_mode():
    dec = TraceDecoder()
    x, y = tdesc((2, 8, 16, 16)), tdesc((2, 8, 8, 8))
    events = decode(dec, "miopenPoolingForward", POOL_FWD.format(pool="", x=x, y=y))
    assert isinstance(events[0], Undecoded) and "miopenSet2dPoolingDescriptor" in events[0].reason
    decode(dec, "miopenSet2dPoolingDescriptor", "poolDesc = miopenPoolingMax, 0, 0, 0, 0, 0, 0, \nmode = 1\n"
                                                "windowHeight = 2\nwindowWidth = 2\npad_h = 0\npad_w = 0\n"
                                                "stride_h = 2\nstride_w = 2")
    decode(dec, "miopenSetPoolingWorkSpaceIndexMode", "poolDesc = x\nworkspace_index = 1")
    s = one_sighting(decode(dec, "miopenPoolingForward", POOL_FWD.format(pool="", x=x, y=y)))
    assert (s.problem.mode, s.problem.window, s.problem.strides, s.problem.index_mode) == ("avg", (2, 2), (2, 2), 1)
    assert any("miopenSet2dPoolingDescriptor" in w for w in s.warnings)


def test_pooling_3d():
    dec = TraceDecoder()
    s = one_sighting(decode(dec, "miopenPoolingForward", POOL_FWD.format(
        pool="miopenPoolingMax, 2, 2, 2, 0, 0, 0, 2, 2, 2, ", x=tdesc((1, 4, 8, 8, 8)), y=tdesc((1, 4, 4, 4, 4)))))
    assert s.problem.ndim == 3 and s.problem.out_spatial == (4, 4, 4)


BN_TRAIN = """
    handle = stream: 0, device_id: 0
    bn_mode = {mode}
    xDesc = {x}
    x = 0x1
    yDesc = {x}
    y = 0x2
    bnScaleBiasMeanVarDesc = {p}
    bnScale = 0x3
    bnBias = 0x4
    expAvgFactor = 0.1
    resultRunningMean = {rm}
    resultRunningVariance = {rv}
    epsilon = 1e-05
    resultSaveMean = {sm}
    resultSaveInvVariance = {sv}
"""


def test_batchnorm_train_save_and_running_in_driver_meaning():
    dec = TraceDecoder()
    x, p = tdesc((16, 32, 14, 14)), tdesc((1, 32, 1, 1))
    s = one_sighting(decode(dec, "miopenBatchNormalizationForwardTraining", BN_TRAIN.format(
        mode=1, x=x, p=p, rm="0x10", rv="0x11", sm="nullptr", sv="nullptr")))
    assert s.problem == BatchNormProblem("fwd_train", "fp32", 16, 32, (14, 14), "spatial", "NCHW",
                                         save=False, running=True)
    s = one_sighting(decode(dec, "miopenBatchNormalizationForwardTraining", BN_TRAIN.format(
        mode=0, x=x, p=p, rm="nullptr", rv="nullptr", sm="0x12", sv="0x13")))
    assert (s.problem.mode, s.problem.save, s.problem.running) == ("per_activation", True, False)


def test_batchnorm_inference_backward_v2_and_param_dtype():
    dec = TraceDecoder()
    set_tensor(dec, 0, (4, 8, 5, 5, 5))   # x fp16 (5-D)
    set_tensor(dec, 1, (1, 8, 1, 1, 1))   # mean/var fp32
    x, p = tdesc((4, 8, 5, 5, 5)), tdesc((1, 8, 1, 1, 1))
    s = one_sighting(decode(dec, "miopenBatchNormalizationForwardInference_V2", f"""
        bn_mode = 1
        xDesc = {x}
        yDesc = {x}
        scaleDesc = {p}
        BiasDesc = {p}
        estMeanDesc = {p}
        estVarianceDesc = {p}
        bnScale = 0x1
        bnBias = 0x2
        estimatedMean = 0x3
        estimatedVariance = 0x4
        epsilon = 1e-05
    """))
    assert s.problem == BatchNormProblem("fwd_infer", "fp16", 4, 8, (5, 5, 5), "spatial", "NCDHW",
                                         save=False, running=True, param_dtype="fp32")
    s = one_sighting(decode(dec, "miopenBatchNormalizationBackward", f"""
        bn_mode = 1
        xDesc = {x}
        dyDesc = {x}
        dxDesc = {x}
        bnScaleBiasDiffDesc = {p}
        savedMean = 0x5
        savedInvVariance = 0x6
    """))
    assert (s.problem.direction, s.problem.save, s.problem.running) == ("bwd", True, False)
    events = decode(dec, "miopenBatchNormalizationBackward", f"bn_mode = 7\nxDesc = {x}")
    assert isinstance(events[0], Undecoded) and "bn_mode" in events[0].reason


def test_activation_descriptor_and_fallback():
    dec = TraceDecoder()
    x = tdesc((2, 16, 8, 8))
    s = one_sighting(decode(dec, "miopenActivationForward", f"""
        activDesc = miopenActivationLEAKYRELU, 0.01, 0, 1, 
        alpha = 0x1
        xDesc = {x}
        beta = 0x2
        yDesc = {x}
    """))
    assert s.problem == ActivationProblem("fwd", "fp32", 2, 16, (8, 8), 8, 0.01, 0.0, 1.0)
    decode(dec, "miopenSetActivationDescriptor",
           "activDesc = , 0, 0, 0, \nmode = 7\nactivAlpha = 6\nactivBeta = 0\nactivGamma = 1")
    s = one_sighting(decode(dec, "miopenActivationBackward", f"""
        activDesc = garbled
        yDesc = {x}
        dyDesc = {x}
        xDesc = {x}
        dxDesc = {x}
    """))
    assert (s.problem.direction, s.problem.mode, s.problem.alpha) == ("bwd", 7, 6.0)
    assert any("miopenSetActivationDescriptor" in w for w in s.warnings)
    s = one_sighting(decode(dec, "miopenActivationForward",
                            "activDesc = miopenActivationRELU, 1, 0, 1, \nxDesc = {64, 1000}, {1000, 1}, packed, "))
    assert s.problem.input_shape == (64, 1000, 1, 1) and any("2-D" in w for w in s.warnings)


def test_lrn_and_softmax():
    dec = TraceDecoder()
    x = tdesc((2, 16, 8, 8))
    s = one_sighting(decode(dec, "miopenLRNForward", f"""
        lrnDesc = miopenLRNCrossChannel, 5, 0.0001, 0.75, 2, 
        xDesc = {x}
        yDesc = {x}
        do_backward = 1
        workSpace = 0x1
    """))
    assert s.problem == LRNProblem("fwd", "fp32", 2, 16, (8, 8), "cross", 5, 0.0001, 0.75, 2.0)
    s = one_sighting(decode(dec, "miopenSoftmaxForward", f"alpha = 0x1\nxDesc = {x}\nbeta = 0x2\nyDesc = {x}"))
    assert s.problem == SoftmaxProblem("fwd", "fp32", 2, 16, (8, 8), 1, 1)
    s = one_sighting(decode(dec, "miopenSoftmaxBackward_V2", f"""
        yDesc = {x}
        dyDesc = {x}
        dxDesc = {x}
        algorithm = 2
        mode = 0
    """))
    assert (s.problem.direction, s.problem.algorithm, s.problem.mode) == ("bwd", 2, 0)
    events = decode(dec, "miopenSoftmaxForward_V2", f"xDesc = {x}\nalgorithm = x\nmode = 0")
    assert isinstance(events[0], Undecoded)


# ----------------------------------------------------------------------------- fusion

def _fusion_plan(dec: TraceDecoder, x: str, ops: list[tuple[str, str]]) -> None:
    assert decode(dec, "miopenCreateFusionPlan", f"fusePlanDesc = 0\nfuseDirection = 0\ninputDesc = {x}") == []
    for name, params in ops:
        assert decode(dec, name, params) == []


def test_fusion_plan_execute_conv_bias_activ():
    dec = TraceDecoder()
    x, w, y = tdesc((1, 64, 56, 56)), tdesc((64, 64, 3, 3)), tdesc((1, 64, 56, 56))
    _fusion_plan(dec, x, [
        ("miopenCreateOpConvForward", f"fusePlanDesc = \nconvOp = 0\nconvDesc = {CONV_3x3}\nwDesc = {w}"),
        ("miopenCreateOpBiasForward", f"fusePlanDesc = \nbiasOp = 0\nbDesc = {tdesc((1, 64, 1, 1))}"),
        ("miopenCreateOpActivationForward", "fusePlanDesc = \nactivOp = 0\nmode = 3"),
    ])
    s = one_sighting(decode(dec, "miopenCompileFusionPlan", "handle = x\nfusePlanDesc = "))
    assert s.role == "mention" and s.problem.fusion_mode == 4
    s = one_sighting(decode(dec, "miopenExecuteFusionPlan", f"""
        fusePlanDesc = 
        inputDesc = {x}
        input = 0x1
        outputDesc = {y}
        output = 0x2
        args = 
    """))
    assert s.role == "execution"
    assert s.problem == FusionProblem(4, "fp32", 1, 64, (56, 56), k=64, filter=(3, 3), pads=(1, 1),
                                      strides=(1, 1), dilations=(1, 1))


def test_fusion_plan_activation_mode_and_coefficients():
    dec = TraceDecoder()
    x = tdesc((8, 32, 28, 28))
    _fusion_plan(dec, x, [
        ("miopenCreateOpBatchNormInference", f"bnOp = 0\nbn_mode = 1\nbnScaleBiasMeanVarDesc = {tdesc((1, 32, 1, 1))}"),
        ("miopenCreateOpActivationForward", "activOp = 0\nmode = miopenActivationLEAKYRELU"),
    ])
    assert decode(dec, "miopenSetOpArgsActivForward",
                  "args = 0x1\nactivFwdOp = 0x2\nalpha = 0x3\nbeta = 0x4\nactivAlpha = 0.25\n"
                  "activBeta = 0\nactivGamma = 1") == []
    s = one_sighting(decode(dec, "miopenExecuteFusionPlan", f"inputDesc = {x}\noutputDesc = {x}"))
    assert (s.problem.fusion_mode, s.problem.activ_mode, s.problem.activ_alpha) == (2, 8, 0.25)


def test_fusion_bn_activ_and_plan_choice():
    dec = TraceDecoder()
    x = tdesc((8, 32, 28, 28))
    _fusion_plan(dec, x, [
        ("miopenCreateOpBatchNormInference", f"bnOp = 0\nbn_mode = 0\nbnScaleBiasMeanVarDesc = {tdesc((1, 32, 28, 28))}"),
        ("miopenCreateOpActivationForward", "activOp = 0\nmode = 3"),
    ])
    # a second plan with the same input, conv 1x1 to 16 channels
    _fusion_plan(dec, x, [
        ("miopenCreateOpConvForward", f"convDesc = {CONV_1x1}\nwDesc = {tdesc((16, 32, 1, 1))}"),
        ("miopenCreateOpActivationForward", "activOp = 0\nmode = 3"),
    ])
    s = one_sighting(decode(dec, "miopenExecuteFusionPlan", f"inputDesc = {x}\noutputDesc = {x}"))
    assert (s.problem.fusion_mode, s.problem.bn_mode) == (2, "per_activation")
    s = one_sighting(decode(dec, "miopenExecuteFusionPlan", f"inputDesc = {x}\noutputDesc = {tdesc((8, 16, 28, 28))}"))
    assert (s.problem.fusion_mode, s.problem.k) == (5, 16)


def test_fusion_unsupported_plan_is_undecoded():
    dec = TraceDecoder()
    x = tdesc((1, 8, 4, 4))
    _fusion_plan(dec, x, [("miopenCreateOpActivationForward", "activOp = 0\nmode = 3")])
    assert decode(dec, "miopenCompileFusionPlan", "fusePlanDesc = ") == []
    events = decode(dec, "miopenExecuteFusionPlan", f"inputDesc = {x}\noutputDesc = {x}")
    assert isinstance(events[0], Undecoded) and "not a CBAInfer mode" in events[0].reason
    events = TraceDecoder().decode_block(hdr("miopenExecuteFusionPlan"), block(f"inputDesc = {x}"))
    assert isinstance(events[0], Undecoded)


def test_convolution_bias_activation_forward_is_mode_4():
    dec = TraceDecoder()
    x, w, y = tdesc((2, 16, 10, 10)), tdesc((32, 16, 3, 3)), tdesc((2, 32, 8, 8))
    s = one_sighting(decode(dec, "miopenConvolutionBiasActivationForward", f"""
        alpha1 = 0x1
        xDesc = {x}
        x = 0x2
        wDesc = {w}
        w = 0x3
        conv_desc = conv2d, miopenConvolution, miopenPaddingDefault, {{0, 0}}, {{1, 1}}, {{1, 1}}, 
        algo = 1
        workspace = nullptr
        workspaceSizeInBytes = 0
        alpha2 = 0x4
        zDesc = {y}
        z = 0x5
        biasDesc = {tdesc((1, 32, 1, 1))}
        bias = 0x6
        activationDesc = miopenActivationRELU, 0, 0, 0, 
        ydesc = {y}
        y = 0x7
    """))
    assert (s.problem.fusion_mode, s.problem.k, s.problem.output_shape) == (4, 32, (2, 32, 8, 8))
    assert (s.problem.activ_mode, s.problem.activ_alpha) == (3, 0.0)   # the block's activationDesc
    assert ("algorithm", "1") in s.annotations


# ----------------------------------------------------------------------------- Find 2.0

F2_CONV = "conv2d, miopenConvolution, miopenPaddingDefault, {1, 1}, {1, 1}, {1, 1}, "


def _f2_setup(dec: TraceDecoder, addr: str, direction: int, x: str, w: str, y: str) -> None:
    decode(dec, "miopenCreateConvProblem", f"problem = 0\noperatorDesc = {F2_CONV}\ndirection = {direction}")
    for tid, d in ((1, x), (2, w), (3, y)):
        assert decode(dec, "miopenSetProblemTensorDescriptor", f"problem = {addr}\nid = {tid}\ndescriptor = {d}") == []


def _tensors_vector(x: str, w: str, y: str) -> str:
    return f"{{ ConvX: {x} -> 0x7f1, ConvW: {w} -> 0x7f2, ConvY: {y} -> 0x7f3, }}"


def test_find2_find_then_run_linked_by_solution_address():
    dec = TraceDecoder()
    x, w, y = tdesc((4, 8, 16, 16)), tdesc((8, 8, 3, 3)), tdesc((4, 8, 16, 16))
    _f2_setup(dec, "0x5555a0", 0, x, w, y)   # forward problem
    _f2_setup(dec, "0x5555b0", 1, x, w, y)   # backward-data problem, same tensors
    s = one_sighting(decode(dec, "miopenFindSolutions",
                            "problem = 0x5555b0\noptions = options(...)\nsolutions = 0\nnumSolutions = 0\n"
                            "maxSolutions = 4"))
    assert s.role == "find" and s.problem.direction == "bwd"
    decode(dec, "miopenGetSolutionSolverId", "solution = 0x6000")
    decode(dec, "miopenFindSolutions", "problem = 0x5555a0")
    decode(dec, "miopenGetSolutionTime", "solution = 0x7000")
    s = one_sighting(decode(dec, "miopenRunSolution",
                            f"solution = 0x6000\nnInputs = 3\ntensors_vector = {_tensors_vector(x, w, y)}\n"
                            "workspace = 0\nworkspaceSize = 0"))
    assert s.role == "execution" and s.problem.direction == "bwd"
    s = one_sighting(decode(dec, "miopenRunSolution",
                            f"solution = 0x7000\nnInputs = 3\ntensors_vector = {_tensors_vector(x, w, y)}"))
    assert s.problem.direction == "fwd"
    assert s.problem == ConvProblem("fwd", "fp32", 4, 8, 8, (16, 16), (3, 3), (1, 1), (1, 1), (1, 1))


def test_find2_unlinked_solution_matches_tensors_else_undecoded():
    dec = TraceDecoder()
    x, w, y = tdesc((1, 4, 8, 8)), tdesc((4, 4, 3, 3)), tdesc((1, 4, 8, 8))
    events = decode(dec, "miopenRunSolution", f"solution = 0x1\ntensors_vector = {_tensors_vector(x, w, y)}")
    assert isinstance(events[0], Undecoded) and "cannot be tied" in events[0].reason
    _f2_setup(dec, "0xaa", 2, x, w, y)
    s = one_sighting(decode(dec, "miopenRunSolution", f"solution = 0x1\ntensors_vector = {_tensors_vector(x, w, y)}"))
    assert s.problem.direction == "wrw"
    events = decode(dec, "miopenFindSolutions", "problem = 0xdead")
    assert isinstance(events[0], Undecoded)
    # a solution address bound to one problem but run with another problem's tensors
    x2, w2, y2 = tdesc((2, 4, 6, 6)), tdesc((8, 4, 3, 3)), tdesc((2, 8, 6, 6))
    _f2_setup(dec, "0xbb", 1, x2, w2, y2)
    decode(dec, "miopenFindSolutions", "problem = 0xaa")
    decode(dec, "miopenGetSolutionTime", "solution = 0x2")
    s = one_sighting(decode(dec, "miopenRunSolution", f"solution = 0x2\ntensors_vector = {_tensors_vector(x2, w2, y2)}"))
    assert (s.problem.direction, s.problem.n, s.problem.k) == ("bwd", 2, 8)


def test_find2_activation_problem():
    dec = TraceDecoder()
    x = tdesc((2, 3, 4, 5))
    decode(dec, "miopenCreateActivationProblem",
           "problem = 0\noperatorDesc = miopenActivationTANH, 1, 1, 1, \ndirection = 0")
    decode(dec, "miopenSetProblemTensorDescriptor", f"problem = 0xbb\nid = 37\ndescriptor = {x}")
    decode(dec, "miopenSetProblemTensorDescriptor", f"problem = 0xbb\nid = 38\ndescriptor = {x}")
    s = one_sighting(decode(dec, "miopenFindSolutions", "problem = 0xbb"))
    assert s.problem == ActivationProblem("fwd", "fp32", 2, 3, (4, 5), 2, 1.0, 1.0, 1.0)


# ----------------------------------------------------------------------------- caching

def test_block_cache_ignores_addresses_but_not_null_ness():
    dec = TraceDecoder()
    x, p = tdesc((16, 32, 14, 14)), tdesc((1, 32, 1, 1))
    first = decode(dec, "miopenBatchNormalizationForwardTraining", BN_TRAIN.format(
        mode=1, x=x, p=p, rm="0x10", rv="0x11", sm="0x12", sv="0x13"))
    hits = dec.stats["cache_hits"]
    again = decode(dec, "miopenBatchNormalizationForwardTraining", BN_TRAIN.format(
        mode=1, x=x, p=p, rm="0x90", rv="0x91", sm="0x92", sv="0x93"))
    assert dec.stats["cache_hits"] == hits + 1 and again == first and again is not first
    nulls = decode(dec, "miopenBatchNormalizationForwardTraining", BN_TRAIN.format(
        mode=1, x=x, p=p, rm="0x90", rv="0x91", sm="nullptr", sv="nullptr"))
    assert one_sighting(nulls).problem.save is False and one_sighting(first).problem.save is True
    again.clear()  # callers may mutate what they get
    assert decode(dec, "miopenBatchNormalizationForwardTraining", BN_TRAIN.format(
        mode=1, x=x, p=p, rm="0x1", rv="0x1", sm="0x1", sv="0x1")) == first


def test_grammar_memoises_failures_too():
    grammar.clear_caches()
    before = grammar.parse_conv.misses
    for _ in range(3):
        with pytest.raises(DescriptorError):
            parse_conv("conv2d, nonsense")
    assert grammar.parse_conv.misses == before + 1


# ----------------------------------------------------------------------------- against MIOpen's Command lines

def _cmd(args: str, fn: str = "LogCmdConvolution"):
    return parse_driver_command(f"./bin/MIOpenDriver {args}", log_fn=fn)


@needs_driver
@pytest.mark.parametrize("name, api, command", [
    ("miopenConvolutionForward",
     dict(x=((8, 64, 56, 56), None), w=((128, 64, 3, 3), None), y=((8, 128, 28, 28), None),
          conv="conv2d, miopenConvolution, miopenPaddingDefault, {1, 1}, {2, 2}, {1, 1}, ", dtype=0),
     "convfp16 -n 8 -c 64 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -l 1 -j 1 -m conv -g 1 -F 1 -t 1"),
    ("miopenConvolutionBackwardData",
     dict(x=((2, 32, 14, 14), "NHWC"), w=((64, 8, 3, 3), "NHWC"), y=((2, 64, 14, 14), "NHWC"),
          conv="conv2d, miopenConvolution, miopenPaddingDefault, {1, 1}, {1, 1}, {1, 1}, 4, ", dtype=5),
     "convbfp16 -n 2 -c 32 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 --in_layout NHWC "
     "--fil_layout NHWC --out_layout NHWC -m conv -g 4 -F 2 -t 1"),
    ("miopenConvolutionBackwardWeights",
     dict(x=((1, 8, 4, 6, 6), None), w=((16, 8, 3, 3, 3), None), y=((1, 16, 2, 4, 4), None),
          conv="conv3d, miopenConvolution, miopenPaddingDefault, {0, 0, 0}, {1, 1, 1}, {1, 1, 1}, ", dtype=1),
     "conv -n 1 -c 8 --in_d 4 -H 6 -W 6 -k 16 --fil_d 3 -y 3 -x 3 --pad_d 0 -p 0 -q 0 --conv_stride_d 1 "
     "-u 1 -v 1 --dilation_d 1 -l 1 -j 1 --spatial_dim 3 -m conv -g 1 -F 4 -t 1"),
    # transposed, grouped: MIOpen >= 6.1 logs -k w[1] = K/G (a bug the driver parser corrects)
    ("miopenConvolutionForward",
     dict(x=((1, 8, 5, 5), None), w=((8, 3, 4, 4), None), y=((1, 6, 12, 12), None),
          conv="conv2d, miopenTranspose, miopenPaddingDefault, {0, 0}, {2, 2}, {1, 1}, 2, {0, 0}, ", dtype=1),
     "conv -n 1 -c 8 -H 5 -W 5 -k 3 -y 4 -x 4 -p 0 -q 0 -u 2 -v 2 -l 1 -j 1 -m trans -g 2 -F 1 -t 1"),
])
def test_api_block_equals_its_command_line(name, api, command):
    dec = TraceDecoder()

    def t(spec):
        lens, layout = spec
        strides = grammar.layout_strides(lens, layout) if layout else grammar.packed_strides(lens)
        set_tensor(dec, api["dtype"], lens, strides)
        return tdesc(lens, strides)

    x, w, y = t(api["x"]), t(api["w"]), t(api["y"])
    if name == "miopenConvolutionForward":
        params = fwd_block(x, w, api["conv"], y)
    elif name == "miopenConvolutionBackwardData":
        params = f"dyDesc = {y}\nwDesc = {w}\nconvDesc = {api['conv']}\nalgo = 0\ndxDesc = {x}"
    else:
        params = f"dyDesc = {y}\nxDesc = {x}\nconvDesc = {api['conv']}\nalgo = 0\ndwDesc = {w}"
    s = one_sighting(decode(dec, name, params))
    parsed = _cmd(command)
    assert parsed.problems == (s.problem,)
    assert to_driver_command(s.problem) == to_driver_command(parsed.problems[0])


@needs_driver
def test_other_primitives_equal_their_command_lines():
    dec = TraceDecoder()
    x = tdesc((1, 64, 112, 112))
    s = one_sighting(decode(dec, "miopenPoolingForward", POOL_FWD.format(
        pool="miopenPoolingMax, 3, 3, 1, 1, 2, 2, ", x=x, y=tdesc((1, 64, 56, 56)))))
    parsed = _cmd("pool -M 0 --input 1x64x112x112,802816x12544x112x1 -y 3 -x 3 -p 1 -q 1 -v 2 -u 2 "
                  "-m max -F 1 -t 1", "Pooling_logging_cmd")
    assert parsed.problems == (s.problem,)
    # inference: the library logs "-s 1" for the estimated mean/variance (its -s/-r are swapped)
    xb, pb = tdesc((16, 32, 14, 14)), tdesc((1, 32, 1, 1))
    s = one_sighting(decode(dec, "miopenBatchNormalizationForwardInference", f"""
        bn_mode = 1
        xDesc = {xb}
        yDesc = {xb}
        bnScaleBiasMeanVarDesc = {pb}
        estimatedMean = 0x1
        estimatedVariance = 0x2
    """))
    parsed = _cmd("bnorm -n 16 -c 32 -H 14 -W 14 -m 1 --forw 2 -b 0 -s 1", "LogCmdBNorm")
    assert parsed.problems == (s.problem,)
    s = one_sighting(decode(dec, "miopenBatchNormalizationForwardTraining", BN_TRAIN.format(
        mode=1, x=xb, p=pb, rm="0x10", rv="0x11", sm="0x12", sv="0x13")))
    parsed = _cmd("bnorm -n 16 -c 32 -H 14 -W 14 -m 1 --forw 1 -b 0 -s 1 -r 1", "LogCmdBNorm")
    assert parsed.problems == (s.problem,)
    xs = tdesc((2, 16, 8, 8))
    s = one_sighting(decode(dec, "miopenSoftmaxForward", f"xDesc = {xs}\nyDesc = {xs}"))
    parsed = _cmd("softmax -n 2 -c 16 -H 8 -W 8 -F 1 -a 1 -m 1 -A 1.000000 -B 0.000000", "LogCmdSoftmax")
    assert parsed.problems == (s.problem,)
    s = one_sighting(decode(dec, "miopenActivationForward",
                            f"activDesc = miopenActivationRELU, 1, 0, 1, \nxDesc = {xs}\nyDesc = {xs}"))
    parsed = _cmd("activ -n 2 -c 16 -H 8 -W 8 -m 3 --forw 1 -A 1 -B 0 -G 1", "LogCmdActivation")
    assert parsed.problems == (s.problem,)
    s = one_sighting(decode(dec, "miopenLRNForward",
                            f"lrnDesc = miopenLRNWithinChannel, 5, 0.001, 0.75, 1, \nxDesc = {xs}\nyDesc = {xs}"))
    parsed = _cmd("lrn -A 0.001 -B 0.75 -F 1 -H 8 -K 1 -N 5 -W 8 -c 16 -m 0 -n 2", "LogCmdLRN")
    assert parsed.problems == (s.problem,)
    x, w, y = tdesc((128, 3, 32, 32)), tdesc((64, 3, 3, 3)), tdesc((128, 64, 32, 32))
    _fusion_plan(dec, x, [
        ("miopenCreateOpConvForward", f"convDesc = {CONV_3x3}\nwDesc = {w}"),
        ("miopenCreateOpBiasForward", f"bDesc = {tdesc((1, 64, 1, 1))}"),
        ("miopenCreateOpActivationForward", "mode = 3"),
    ])
    s = one_sighting(decode(dec, "miopenExecuteFusionPlan", f"inputDesc = {x}\noutputDesc = {y}"))
    parsed = _cmd("CBAInfer -F 4 -n 128 -c 3 -H 32 -W 32 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1",
                  "LogCmdFusion")
    assert parsed.problems == (s.problem,)


# ----------------------------------------------------------------------------- never raises

_API_NAMES = sorted(set(TraceDecoder()._handlers))
_PARAM_NAMES = ["xDesc", "wDesc", "yDesc", "dxDesc", "dyDesc", "dwDesc", "convDesc", "poolDesc", "activDesc",
                "lrnDesc", "bn_mode", "dataType", "dim.values", "stride.values", "problem", "id", "descriptor",
                "solution", "tensors_vector", "inputDesc", "outputDesc", "mode", "algorithm", "n", "c", "h", "w",
                "windowHeight", "activAlpha", "lens_in.values", "tensorLayout", "direction", "operatorDesc"]
_VALUE_PIECES = ["{", "}", ", ", "1", "0", "-3", "packed", "conv2d", "conv3d", "miopenConvolution",
                 "miopenTranspose", "miopenPaddingSame", "Unknown: 2", "miopenPoolingMax", "0x7f", "nullptr",
                 "cast_type: ", "ConvX: ", " -> ", "NULL", "{ 1 2 3 4 }", "99999999999999999999", "nan", "e",
                 "miopenActivationRELU", "softmax,alpha1,", "\t", " "]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80), st.lists(st.tuples(st.text(max_size=20), st.text(max_size=60)), max_size=6))
def test_never_raises_on_arbitrary_text(header, params):
    events = TraceDecoder().decode_block(header, params)
    assert isinstance(events, list)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_API_NAMES),
       st.lists(st.tuples(st.sampled_from(_PARAM_NAMES),
                          st.lists(st.sampled_from(_VALUE_PIECES), max_size=14).map("".join)), max_size=8),
       st.integers(0, 2))
def test_never_raises_on_plausible_blocks(name, params, repeats):
    dec = TraceDecoder()
    for _ in range(repeats + 1):
        events = dec.decode_block(hdr(name), params)
        assert isinstance(events, list)
        for e in events:
            assert isinstance(e, (Sighting, Undecoded)) or e.__class__.__name__ in ("Annotation", "Setting")
            if isinstance(e, Undecoded):
                assert "internal decoder error" not in e.reason, e.reason

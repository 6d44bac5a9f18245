"""API-trace blocks of the newer primitives (miotui.formats.miopen.trace_ops, trace_rnn), each written in
MIOpen's real format (the parameters its ``MIOPEN_LOG_FUNCTION`` prints, in that order, values
as its ``LogParam`` prints them), and the cross-check: a block and the Command line MIOpen
prints for the same call give the same problem -- field for field, except the problem's
``lossy_fields`` (what one of the two forms does not print), which is also why the scanner
can count them as one call."""

from __future__ import annotations

import dataclasses
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miotui.catalog import Catalog
from miotui.decoding.whole import decode_stream
from miotui.driver import parse_driver_args, to_driver_argv
from miotui.events import Sighting, Undecoded
from miotui.formats.miopen.calls import call_signature
from miotui.formats.miopen.grammar import packed_strides
from miotui.formats.miopen.trace import TraceDecoder
from miotui.formats.miopen.trace_ops import OpTrace
from miotui.problems import LayerNormProblem, ReduceProblem, RNNProblem

DTYPE = {"fp16": 0, "fp32": 1, "bf16": 5, "fp64": 6}


def tensor(lens, strides=None) -> str:
    strides = strides or packed_strides(tuple(lens))
    return "{" + ", ".join(map(str, lens)) + "}, {" + ", ".join(map(str, strides)) + "}, packed, "


def set_tensor(lens, dtype="fp32") -> tuple[str, list[tuple[str, str]]]:
    return ("miopenSetTensorDescriptor", [("tensorDesc", "{}, {}, packed, "), ("dataType", str(DTYPE[dtype])),
                                          ("nbDims", str(len(lens))),
                                          ("dim.values", "{ " + " ".join(map(str, lens)) + " }"),
                                          ("stride.values", "{ " + " ".join(map(str, packed_strides(tuple(lens))))
                                           + " }")])


def decode(dec: TraceDecoder, name: str, params: list[tuple[str, str]]) -> list:
    return dec.decode_block(f"miopenStatus_t {name}(miopenHandle_t, ...){{", params)


def one(events) -> Sighting:
    sightings = [e for e in events if isinstance(e, Sighting)]
    assert len(sightings) == 1 and not [e for e in events if isinstance(e, Undecoded)], events
    return sightings[0]


def command(line: str, fn: str):
    return parse_driver_args(line.split(), log_fn=fn).problems


def same_call(block, logged) -> None:
    """The two forms of one call agree on every field neither form may lack; they are one
    call for the scanner's ``call_signature`` once those fields are taken from the block."""
    lossy = block.lossy_fields | logged.lossy_fields
    merged = dataclasses.replace(logged, **{f: getattr(block, f) for f in lossy})
    assert merged == block, (block, logged)
    assert call_signature(merged) == call_signature(block)


# ---------------------------------------------------------------- block builders (MIOpen's order)

def rnn_setup(hidden=256, layers=2, mode=2, bidir=0, bias=1, dtype="fp32", v2=True, dropout=None):
    blocks = []
    if dropout is not None:
        blocks.append(("miopenSetDropoutDescriptor", [("dropoutDesc", "1, "), ("dropout", dropout),
                                                       ("states", "0x7f10"), ("stateSizeInBytes", "1024"),
                                                       ("seed", "7"), ("use_mask", "0"), ("state_evo", "0")]))
    params = [("rnnDesc", "0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "), ("hsize", str(hidden)), ("nlayers", str(layers))]
    if v2:
        params.append(("dropoutDesc", "1, "))
    params += [("inMode", "0"), ("direction", str(bidir)), ("rnnMode", str(mode)), ("biasMode", str(bias)),
               ("algo", "0"), ("dataType", str(DTYPE[dtype]))]
    blocks.append(("miopenSetRNNDescriptor_V2" if v2 else "miopenSetRNNDescriptor", params))
    return blocks


def rnn_desc(hidden=256, layers=2, mode=2, bidir=0, bias=1) -> str:
    per_layer = {0: 1, 1: 1, 2: 4, 3: 3}[mode]
    return f"{hidden}, {layers}, {per_layer}, {per_layer + 2}, {mode}, {bidir}, 0, 0, {bias}, 0x55d0a0, "


def rnn_pass(name, steps, batch, weights, hidden=256, layers=2, mode=2, bidir=0, bias=1):
    dirs = 2 if bidir else 1
    hx = tensor((layers * dirs, batch, hidden))
    desc = rnn_desc(hidden, layers, mode, bidir, bias)
    if name == "miopenRNNBackwardWeights":
        return [("handle", "stream: 0x1, device_id: 0"), ("rnnDesc", desc), ("sequenceLen", str(steps)),
                ("xDesc", "0x7ffd10"), ("x", "0x7f01"), ("hxDesc", hx), ("hx", "0x7f02"), ("yDesc", "0x7ffd20"),
                ("y", "0x7f03"), ("dwDesc", tensor((weights,))), ("dw", "0x7f04"), ("workSpace", "0x7f05"),
                ("workSpaceNumBytes", "4096"), ("reserveSpace", "0x7f06"), ("reserveSpaceNumBytes", "8192")]
    if name == "miopenRNNBackwardData":
        return [("handle", "stream: 0x1, device_id: 0"), ("rnnDesc", desc), ("sequenceLen", str(steps)),
                ("yDesc", "0x7ffd20"), ("y", "0x7f03"), ("dyDesc", "0x7ffd30"), ("dy", "0x7f07"), ("dhyDesc", hx),
                ("dhy", "0x7f08"), ("dcyDesc", hx), ("dcy", "0x7f09"), ("wDesc", tensor((weights,))),
                ("w", "0x7f04"), ("hxDesc", hx), ("hx", "0x7f02"), ("cxDesc", hx), ("cx", "0x7f0a"),
                ("dxDesc", "0x7ffd40"), ("dx", "0x7f0b"), ("dhxDesc", hx), ("dhx", "0x7f0c"), ("dcxDesc", hx),
                ("dcx", "0x7f0d"), ("workSpace", "0x7f05"), ("workSpaceNumBytes", "4096"),
                ("reserveSpace", "0x7f06"), ("reserveSpaceNumBytes", "8192")]
    return [("handle", "stream: 0x1, device_id: 0"), ("rnnDesc", desc), ("sequenceLen", str(steps)),
            ("xDesc", "0x7ffd10"), ("x", "0x7f01"), ("hxDesc", hx), ("hx", "0x7f02"), ("cxDesc", hx),
            ("cx", "0x7f0a"), ("wDesc", tensor((weights,))), ("w", "0x7f04"), ("yDesc", "0x7ffd20"), ("y", "0x7f03"),
            ("hyDesc", hx), ("hy", "0x7f0e"), ("cyDesc", hx), ("cy", "0x7f0f"), ("workSpace", "0x7f05"),
            ("workSpaceNumBytes", "4096")] + ([("reserveSpace", "0x7f06"), ("reserveSpaceNumBytes", "8192")]
                                              if name == "miopenRNNForwardTraining" else [])


def weights_of(in_size, hidden=256, layers=2, mode="lstm", bidir=False, bias=True) -> int:
    return RNNProblem("fwd", "fp32", mode, (1,), 1, in_size, hidden, layers, bias, bidirectional=bidir).weight_count


# ---------------------------------------------------------------- RNN

@pytest.mark.parametrize("name, flag", [("miopenRNNForwardTraining", "-c 0 -F 1"),
                                        ("miopenRNNForwardInference", "-c 1 -F 1"),
                                        ("miopenRNNBackwardData", "-F 2"), ("miopenRNNBackwardWeights", "-F 4")])
def test_rnn_block_equals_its_command_line(name, flag):
    dec = TraceDecoder()
    for block in rnn_setup():
        assert decode(dec, *block) == []
    s = one(decode(dec, name, rnn_pass(name, 45, 256, weights_of(30))))
    # the Command line of this call in tests/data/real_logs/210 (LogCmdRNN prints it to stdout too)
    (p,) = command(f"rnn -n 256 -W 30 -H 256 -l 2 -b 1 -m lstm -p 0 -r 0 -q 0 -k 45 {flag} -t 1 -w 1", "LogCmdRNN")
    assert s.problem == p


def test_rnn_descriptor_memory_padding_dropout_and_dtype():
    dec = TraceDecoder()
    for block in rnn_setup(hidden=64, layers=1, mode=3, bidir=1, dtype="fp16", dropout="0.5"):
        decode(dec, *block)
    decode(dec, "miopenSetRNNPaddingMode", [("rnnDesc", rnn_desc(64, 1, 3, 1)), ("paddingMode", "1")])
    w = weights_of(16, 64, 1, "gru", True)
    s = one(decode(dec, "miopenRNNForwardTraining", rnn_pass("miopenRNNForwardTraining", 10, 8, w, 64, 1, 3, 1)))
    (p,) = command("rnnfp16 -n 8 -W 16 -H 64 -l 1 -b 1 -m gru -p 0 -r 1 -q 1 -k 10 -c 0 -F 1 -t 1 -w 1 -U 1 "
                   "-P 0.500000 -L 7 -M 0", "LogCmdRNN")
    assert s.problem == p and s.problem.padded and s.problem.dropout == 0.5
    # a descriptor never set up: the data type from the tensors (guessed here), padding/dropout off
    s = one(TraceDecoder().decode_block("miopenStatus_t miopenRNNForwardTraining(...){",
                                        rnn_pass("miopenRNNForwardTraining", 10, 8, w, 64, 1, 3, 1)))
    assert not s.problem.padded and any("miopenSetRNNDescriptor" in x for x in s.warnings)
    # weights that fit no input size
    events = decode(dec, "miopenRNNForwardTraining", rnn_pass("miopenRNNForwardTraining", 10, 8, w + 1, 64, 1, 3, 1))
    assert isinstance(events[0], Undecoded) and "weights" in events[0].reason


def seq_tensor(batch, steps, vec, lens, layout="{1, 0, 2 }", padded=False) -> str:
    text = f"{{lens{{{batch}, {steps}, {vec} }}, layout{layout}"
    if padded:
        text += ", padded_seq_layout"
    return text + f", padding{{0, 0, 0 }}, sequence_len[{', '.join(map(str, lens))} ], packed}}"


@pytest.mark.parametrize("name, flag", [("miopenRNNForward", "-c 0 -F 1"), ("miopenRNNBackwardSeqData", "-F 2"),
                                        ("miopenRNNBackwardWeightsSeqTensor", "-F 4")])
def test_rnn_seq_block_equals_its_command_line(name, flag):
    dec = TraceDecoder()
    for block in rnn_setup(hidden=32, layers=1, mode=1, bias=0):
        decode(dec, *block)
    x = seq_tensor(3, 5, 8, (5, 4, 2))
    h = tensor((1, 3, 32))
    params = [("handle", "stream: 0x1, device_id: 0"), ("rnnDesc", rnn_desc(32, 1, 1, 0, 0))]
    if name == "miopenRNNForward":
        params += [("fwdMode", "0"), ("xDesc", x), ("x", "0x1"), ("hDesc", h), ("hx", "0x2"), ("hy", "0x3"),
                   ("cDesc", h), ("cx", "0x4"), ("cy", "0x5"), ("yDesc", seq_tensor(3, 5, 32, (5, 4, 2)))]
    else:
        params += [("yDesc", seq_tensor(3, 5, 32, (5, 4, 2))), ("hDesc", h), ("xDesc", x)]
    s = one(decode(dec, name, params))
    (p,) = command(f"rnn_seq -n 3 -W 8 -H 32 -l 1 -b 0 -m tanh -p 0 -r 0 -k 5 -K 5,4,2 -a 0 -I 1 {flag} -t 1 -w 1",
                   "LogCmdRNN")
    assert s.problem == p


# ---------------------------------------------------------------- norms, reductions

def test_layernorm_blocks_and_their_command_lines():
    dec = TraceDecoder()
    x = (32, 128, 768)
    decode(dec, *set_tensor(x, "fp16"))
    s = one(decode(dec, "miopenLayerNormForward", [
        ("handle", "stream: 0x1, device_id: 0"), ("mode", "1"), ("xDesc", tensor(x)), ("x", "0x1"),
        ("weightDesc", tensor((768,))), ("weight", "0x2"), ("biasDesc", tensor((768,))), ("bias", "0x3"),
        ("epsilon", "1e-06"), ("normalized_dim", "2"), ("yDesc", tensor(x)), ("y", "0x4"),
        ("meanDesc", tensor((32, 128))), ("mean", "0x5"), ("rstdDesc", tensor((32, 128))), ("rstd", "0x6")]))
    assert s.problem == LayerNormProblem("fwd", "fp16", x, 2, 1e-6, 1, "layernorm")
    # the block has what the Command line lacks
    assert to_driver_argv(s.problem, (3, 4)) == ["layernormfp16", "-X", "32x128x768", "-e", "1e-06", "-o", "2",
                                                 "-m", "1", "-F", "1"]
    (p,) = command("layernormfp16 -n 32 -c 128 -W 768 -F 1 -m 1", "LogCmdLayerNorm")
    same_call(s.problem, p)
    # T5 backward: the Command line says -F 1 (LogCmdT5LayerNorm(dyDesc, mode, true))
    s = one(decode(dec, "miopenT5LayerNormBackward", [
        ("handle", "stream: 0x1, device_id: 0"), ("mode", "5"), ("workspace", "0x1"), ("workspaceSizeInBytes", "64"),
        ("dyDesc", tensor(x)), ("dy", "0x2"), ("xDesc", tensor(x)), ("x", "0x3"), ("weightDesc", tensor((768,))),
        ("weight", "0x4"), ("rstdDesc", tensor((32, 128))), ("rstd", "0x5"), ("dxDesc", tensor(x)), ("dx", "0x6"),
        ("dw", "0x7")]))
    assert (s.problem.variant, s.problem.direction) == ("t5layernorm", "bwd")
    (p,) = command("t5layernormfp16 -n 32 -c 128 -W 768 -F 1 -m 5", "LogCmdT5LayerNorm")
    same_call(s.problem, p)
    s = one(decode(dec, "miopenAddLayerNormForward", [
        ("mode", "3"), ("xDesc", tensor(x)), ("x2Desc", tensor(x)), ("epsilon", "1e-05"), ("normalized_dim", "1")]))
    (p,) = command("addlayernormfp16 -n 32 -c 128 -W 768 -F 1 -m 3", "LogCmdAddLayerNorm")
    same_call(s.problem, p)


def test_groupnorm_block_and_command_line():
    dec = TraceDecoder()
    x = (2, 32, 16, 16)
    decode(dec, *set_tensor(x, "bf16"))
    s = one(decode(dec, "miopenGroupNormForward", [
        ("mode", "0"), ("xDesc", tensor(x)), ("x", "0x1"), ("weightDesc", tensor((32,))), ("weight", "0x2"),
        ("biasDesc", tensor((32,))), ("bias", "0x3"), ("num_groups", "8"), ("epsilon", "1e-06"),
        ("yDesc", tensor(x)), ("y", "0x4")]))
    (p,) = command("groupnormbfp16 -n 2 -c 32 -H 16 -W 16 -g 8 -m 0 -F 1", "LogCmdGroupNorm")
    same_call(s.problem, p)
    assert s.problem.eps == 1e-6 and p.eps == 1e-5


def test_reduce_tensor_with_remembered_descriptor():
    dec = TraceDecoder()
    a, c = (16, 32, 8), (16, 1, 8)
    decode(dec, *set_tensor(a, "fp16"))
    decode(dec, "miopenSetReduceTensorDescriptor", [
        ("reduceTensorDesc", "ReduceTensor Descriptor : "), ("reduceTensorOp", "3"), ("reduceTensorCompType", "1"),
        ("reduceTensorNanOpt", "0"), ("reduceTensorIndices", "1"), ("reduceTensorIndicesType", "0")])
    params = [("handle", "stream: 0x1, device_id: 0"), ("reduceTensorDesc", "ReduceTensor Descriptor : "),
              ("indices", "0x1"), ("indicesSizeInBytes", "512"), ("workspace", "0x2"), ("workspaceSizeInBytes", "0"),
              ("alpha", "0x7ffd"), ("aDesc", tensor(a)), ("A", "0x3"), ("beta", "0x7ffe"), ("cDesc", tensor(c)),
              ("C", "0x4")]
    s = one(decode(dec, "miopenReduceTensor", params))
    assert s.problem == ReduceProblem("fwd", "fp16", a, (1,), 3, "fp32", False, True)
    (p,) = command("reducefp16 -A 1 -B 0 -C 1 -D 16,32,8 -I 1 -N 0 -O 3 -R 1", "LogCmdRedux")
    assert p == s.problem
    # the descriptor's own lines, when a log keeps them with the block
    params[1] = ("reduceTensorDesc", "ReduceTensor Descriptor : Reduction Operation Type : 0 Reduction CompType : 1 "
                                     "NanPropagation Option : 0 Indices Option : 0")
    assert one(decode(dec, "miopenReduceTensor", params)).problem.reduce_op == 0
    assert isinstance(TraceDecoder().decode_block("miopenStatus_t miopenReduceTensor(...){", params[:1] + params[2:])[0],
                      Undecoded)


# ---------------------------------------------------------------- the other ops

OP_CASES = [
    # (API, block params, Command line, log function) -- the Command line MIOpen prints for the call
    ("miopenReduceExtremeForward", lambda: [("xDesc", tensor((21, 500))), ("x", "0x1"), ("dim", "1"),
                                            ("reduceExtremeOp", "2"), ("indiceDesc", tensor((21,))), ("indice", "0x2")],
     "reduceextremefp32 -input 21x500 -F 1 -R 1 -O 2", "LogCmdReduceExtreme"),
    ("miopenReduceCalculationForward", lambda: [("nanPropagation", "0"), ("workspace", "0x1"),
                                                ("workspaceSizeInBytes", "0"), ("xDesc", tensor((4, 8, 16))),
                                                ("x", "0x2"), ("dim", "2"), ("reduceDesc", tensor((4, 8))),
                                                ("y", "0x3")],
     "reducecalculationfp32 -F 1 -n 0 -R 2 -O 2", "LogCmdReduceCalculation"),
    ("miopenCatForward", lambda: [("xDescs", "0x7ffd10"), ("xs", "0x7ffd20"), ("yDesc", tensor((4, 170000, 91))),
                                  ("y", "0x1"), ("dim", "1")],
     "catfp32 -dims 4,136800,91 -F 1", "LogCmdCat"),
    ("miopenGetitemBackward", lambda: [("workspace", "0x1"), ("workspaceSizeInBytes", "0"),
                                       ("dyDesc", tensor((4, 16, 16))), ("dy", "0x2"), ("indexCount", "1"),
                                       ("indexDescs", "0x7ffd"), ("indexs", "0x3"), ("dxDesc", tensor((4, 16, 16))),
                                       ("dx", "0x4"), ("errorDesc", tensor((1,))), ("error", "0x5"),
                                       ("dimCount", "1"), ("dims", "0"), ("sliceCount", "0"), ("slices", "nullptr"),
                                       ("offset", "0")],
     "getitemfp32 -doutput 4,1616, -index1 4, -dx 4,1616, -dims0, -slice -offset0 -F 1", "LogCmdGetitem"),
    ("miopenKthvalueForward", lambda: [("inputDesc", tensor((4, 8, 16))), ("input", "0x1"),
                                       ("outputDesc", tensor((4, 8))), ("output", "0x2"),
                                       ("indicesDesc", tensor((4, 8))), ("indices", "0"), ("k", "3"), ("dim", "-1"),
                                       ("keepDim", "0")],
     "kthvaluefp32 -n 4 -T {4,8,16} -Si {128,16,1} -F 1", "LogCmdKthvalue"),
    ("miopenPReLUBackward", lambda: [("workspace", "0x1"), ("workspaceSizeInBytes", "0"),
                                     ("inputDesc", tensor((4, 8, 16))), ("input", "0x2"), ("weightDesc", tensor((8,))),
                                     ("weight", "0x3"), ("doutputDesc", tensor((4, 8, 16))), ("doutput", "0x4"),
                                     ("dinputDesc", tensor((4, 8, 16))), ("dinput", "0x5"),
                                     ("dweightDesc", tensor((8,))), ("dweight", "0x6")],
     "prelufp32 --input {4,8,16} --weight {8} -F 2", "LogCmdPReLU"),
    ("miopenRoPEForward", lambda: [("xDesc", tensor((2, 8, 16, 64))), ("x", "0x1"), ("cosDesc", tensor((8, 16, 64))),
                                   ("cos", "0x2"), ("sinDesc", tensor((8, 16, 64))), ("sin", "0x3"),
                                   ("yDesc", tensor((2, 8, 16, 64))), ("y", "0x4")],
     "ropefp32 -input 2x8x16x64 -F 1", "LogCmdRoPE"),
    ("miopenRoPEBackward", lambda: [("dyDesc", tensor((2, 8, 16, 64))), ("dy", "0x1"), ("cosDesc", tensor((8, 16, 64))),
                                    ("cos", "0x2"), ("sinDesc", tensor((8, 16, 64))), ("sin", "0x3"),
                                    ("dxDesc", tensor((2, 8, 16, 64))), ("dx", "0x4")],
     "ropefp32 -input 2x8x16x64 -F 1", "LogCmdRoPE"),
    ("miopenFusedAdam", lambda: [("paramDesc", tensor((64, 32))), ("param", "0x1"), ("gradDesc", tensor((64, 32))),
                                 ("grad", "0x2"), ("expAvgDesc", tensor((64, 32))), ("expAvg", "0x3"),
                                 ("expAvgSqDesc", tensor((64, 32))), ("expAvgSq", "0x4"), ("maxExpAvgSqDesc", "nullptr"),
                                 ("maxExpAvgSq", "nullptr"), ("stateStepDesc", "nullptr"), ("stateStep", "nullptr"),
                                 ("state_step", "1"), ("lr", "0.001"), ("beta1", "0.9"), ("beta2", "0.999"),
                                 ("weight_decay", "0.01"), ("eps", "1e-08"), ("amsgrad", "0"), ("maximize", "0"),
                                 ("adamw", "1"), ("gradScaleDesc", "nullptr"), ("gradScale", "nullptr"),
                                 ("foundInfDesc", "nullptr"), ("foundInf", "nullptr")],
     "adamw -d 64x32 -l 0.001 -1 0.9 -2 0.999 -e 1e-08 -W 0.01 -a 0 -m 0", "LogCmdAdam"),
    ("miopenTransformersAdamW", lambda: [("paramDesc", tensor((128,))), ("param", "0x1"), ("gradDesc", tensor((128,))),
                                         ("grad", "0x2"), ("state_step", "3"), ("lr", "0.0001"), ("beta1", "0.9"),
                                         ("beta2", "0.999"), ("weight_decay", "0"), ("eps", "1e-06"),
                                         ("correct_bias", "1"), ("gradScaleDesc", tensor((1,))), ("gradScale", "0x3"),
                                         ("foundInfDesc", tensor((1,))), ("foundInf", "0x4")],
     "transformersampadamw -d 128 -l 0.0001 -1 0.9 -2 0.999 -e 1e-06 -W 0 -c 1", "LogCmdTransformersAdamW"),
    ("miopenOpTensor", lambda: [("tensorOp", "1"), ("alpha1", "0x7ffd1"), ("aDesc", tensor((2, 3, 4, 5))),
                                ("A", "0x1"), ("alpha2", "0x7ffd2"), ("bDesc", tensor((1, 3, 1, 1))), ("B", "0x2"),
                                ("beta", "0x7ffd3"), ("cDesc", tensor((2, 3, 4, 5))), ("C", "0x3")],
     "tensorop -A 1.000000 -B 1.000000 -G 0.000000 -n 2 -c 3 -H 4 -W 5 -o 3", "LogCmdTensorOp"),
    ("miopenSetTensor", lambda: [("yDesc", tensor((2, 3, 4, 5))), ("y", "0x1"), ("alpha", "0x7ffd")],
     "tensorop -n 2 -c 3 -H 4 -W 5 -o 0 -v 0.000000", "LogCmdTensorOp"),
    ("miopenCTCLoss", lambda: [("probsDesc", tensor((12, 1, 29))), ("probs", "0x1"), ("labels", "5"),
                               ("labelLengths", "4"), ("inputLengths", "12"), ("losses", "0x2"),
                               ("gradientsDesc", tensor((12, 1, 29))), ("gradients", "0x3"), ("algo", "0"),
                               ("ctcLossDesc", "1, "), ("workSpace", "0x4"), ("workSpaceSize", "1024")],
     " ctc  -a 0 -b 0 -c 28 -m 1 -n 1 -l 4 -k 12", "miopenCTCLoss"),
]


@pytest.mark.parametrize("api, params, line, fn", OP_CASES, ids=[c[0] for c in OP_CASES])
def test_op_block_and_its_command_line_are_one_call(api, params, line, fn):
    dec = TraceDecoder()
    s = one(decode(dec, api, params()))
    (p,) = command(line, fn)
    same_call(s.problem, p)


def test_ops_that_print_everything_give_equal_problems():
    """Where both forms print every field, the problems are equal (the scanner needs no
    lossy-field matching for them)."""
    for api, params, line, fn in OP_CASES:
        if api not in ("miopenReduceExtremeForward", "miopenPReLUBackward", "miopenRoPEForward", "miopenFusedAdam",
                       "miopenTransformersAdamW", "miopenCTCLoss"):
            continue
        (p,) = command(line, fn)
        assert one(decode(TraceDecoder(), api, params())).problem == p, api


def test_dropout_and_ctc_descriptors_remembered():
    dec = TraceDecoder()
    x = tensor((4, 32, 28, 28))
    events = decode(dec, "miopenDropoutForward", [("dropoutDesc", "1, "), ("noise_shape", x), ("xDesc", x),
                                                   ("x", "0x1"), ("yDesc", x), ("y", "0x2")])
    assert one(events).problem.missing == ("dropout",)
    decode(dec, "miopenSetDropoutDescriptor", [("dropoutDesc", "1, "), ("dropout", "0.5"), ("states", "0x1"),
                                               ("stateSizeInBytes", "64"), ("seed", "0"), ("use_mask", "0"),
                                               ("state_evo", "0")])
    s = one(decode(dec, "miopenDropoutBackward", [("dropoutDesc", "1, "), ("dyDesc", x), ("dy", "0x1"),
                                                  ("dxDesc", x), ("dx", "0x2")]))
    assert s.problem.direction == "bwd" and s.problem.params == (("p", "0.5"), ("e", "0"))
    assert to_driver_argv(s.problem) == ["dropout", "-d", "4,32,28,28", "-p", "0.5", "-e", "0", "-F", "2"]
    (p,) = command("dropout -F 2 -d 4 -e 0 -l 0 -m 0 -p 0.500000", "LogCmdDropout")
    same_call(s.problem, p)
    decode(dec, "miopenSetCTCLossDescriptor", [("ctcLossDesc", "1, "), ("dataType", "1"), ("blank_label_id", "3"),
                                               ("apply_softmax_layer", "0")])
    s = one(decode(dec, "miopenCTCLoss", [("probsDesc", tensor((12, 2, 29))), ("labelLengths", "4"),
                                          ("inputLengths", "12"), ("algo", "1")]))
    assert s.problem.param("b") == "3" and s.problem.missing == ("input_len", "label_len")


def test_api_only_ops_glu_margin_losses_sum_argmax():
    dec = TraceDecoder()
    s = one(decode(dec, "miopenGLUBackward", [("inputDesc", tensor((8, 64))), ("input", "0x1"),
                                              ("outputGradDesc", tensor((8, 32))), ("dim", "1")]))
    assert to_driver_argv(s.problem) == ["glu", "-D", "8x64", "-R", "1", "-F", "2"]
    s = one(decode(dec, "miopenSoftMarginLossForward", [("inputDesc", tensor((4, 25), (1, 4))),
                                                        ("targetDesc", tensor((4, 25))), ("reduction", "2")]))
    assert s.problem.params == (("C", "0"), ("R", "mean"), ("S", "1x4"))
    assert parse_driver_args(to_driver_argv(s.problem)).problems == (s.problem,)
    s = one(decode(dec, "miopenMultiMarginLossForward", [("inputDesc", tensor((41, 4))), ("targetDesc", tensor((41,))),
                                                         ("p", "1"), ("margin", "1"), ("reduction", "0")]))
    assert to_driver_argv(s.problem) == ["multimarginloss", "-D", "41x4", "-C", "1", "-R", "none"]
    s = one(decode(dec, "miopenSumForward", [("nanPropagation", "0"), ("xDesc", tensor((256, 4, 8732))),
                                             ("dim", "1"), ("yDesc", tensor((256, 1, 8732)))]))
    (p,) = command("sumfp32 -n 256 -c 4 -W 8732 -F 1 -n 0", "LogCmdSum")
    same_call(s.problem, p)
    assert to_driver_argv(s.problem, (3, 2))[0] == "sum"
    s = one(decode(dec, "miopenArgmaxForward", [("xDesc", tensor((21, 500, 375))), ("dim", "0"),
                                                ("yDesc", tensor((500, 375)))]))
    (p,) = command("argmaxfp32 -n 21 -c 500 -W 375 -F 1", "LogCmdArgmax")
    same_call(s.problem, p)


def test_malformed_blocks_are_undecoded_not_errors():
    dec = TraceDecoder()
    for api, params in (("miopenLayerNormForward", [("xDesc", tensor((2, 3)))]),
                        ("miopenRNNForwardTraining", [("rnnDesc", "garbage")]),
                        ("miopenKthvalueForward", [("inputDesc", tensor((4, 8))), ("k", "1"), ("dim", "5"),
                                                   ("keepDim", "0")]),
                        ("miopenSoftMarginLossForward", [("inputDesc", tensor((4, 8))), ("reduction", "9")]),
                        ("miopenOpTensor", [("tensorOp", "7"), ("aDesc", tensor((1, 2, 3, 4)))])):
        (u,) = decode(dec, api, params)
        assert isinstance(u, Undecoded) and api in u.reason


_NAMES = sorted(set(OpTrace(TraceDecoder()).handlers()))
_KEYS = ["xDesc", "yDesc", "dyDesc", "dxDesc", "aDesc", "cDesc", "inputDesc", "weightDesc", "paramDesc", "hxDesc",
         "wDesc", "dwDesc", "probsDesc", "rnnDesc", "sequenceLen", "dim", "mode", "epsilon", "normalized_dim",
         "num_groups", "k", "keepDim", "lr", "beta1", "adamw", "tensorOp", "reduction", "dimCount", "indexCount",
         "sliceCount", "offset", "fwdMode", "hsize", "nlayers", "rnnMode", "paddingMode", "dropout", "use_mask"]
_VALUES = ["{2, 3}, {3, 1}, packed, ", "{2, 3, 4, 5}, {60, 20, 5, 1}, ", "{0, 0}, {}, ", "0x7f", "nullptr", "1",
           "0", "-1", "9", "1e-05", "true", "256, 2, 4, 6, 2, 0, 0, 0, 1, 0x1, ", "{lens{2, 3, 4 }, layout{1, 0, 2 }}",
           "ReduceTensor Descriptor : ", "x", ""]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_NAMES), st.lists(st.tuples(st.sampled_from(_KEYS), st.sampled_from(_VALUES)), max_size=10))
def test_handlers_never_raise(name, params):
    events = decode(TraceDecoder(), name, params)
    assert all(isinstance(e, (Sighting, Undecoded)) for e in events)
    assert not any(isinstance(e, Undecoded) and "internal decoder error" in e.reason for e in events), events


# ---------------------------------------------------------------- through the scanner

def _log(blocks: list[tuple[str, list[tuple[str, str]]]], *lines: str) -> str:
    out = []
    for name, params in blocks:
        out.append(f"MIOpen(HIP): miopenStatus_t {name}(miopenHandle_t, ...){{")
        out += [f"MIOpen(HIP): \t{k} = {v}" for k, v in params]
        out.append("MIOpen(HIP): }")
    return "\n".join(out + list(lines)) + "\n"


def _scan(text: str) -> Catalog:
    catalog = Catalog()
    decode_stream(catalog, io.BytesIO(text.encode()))
    return catalog


def test_block_bare_echo_and_command_line_of_one_rnn_call_count_once():
    """Both logging variables on: the block, LogCmdRNN's stdout copy, then its Command line."""
    args = "rnn -n 256 -W 30 -H 256 -l 2 -b 1 -m lstm -p 0 -r 0 -q 0 -k 45 -c 0 -F 1 -t 1 -w 1"
    call = [("miopenRNNForwardTraining", rnn_pass("miopenRNNForwardTraining", 45, 256, weights_of(30)))]
    text = _log(rnn_setup() + call, args, f"MIOpen(HIP): Command [LogCmdRNN] ./bin/MIOpenDriver {args}")
    catalog = _scan(text + _log(call, args, f"MIOpen(HIP): Command [LogCmdRNN] ./bin/MIOpenDriver {args}"))
    (layer,) = catalog.layers()
    assert (layer.problem.op, layer.executions, layer.mentions, catalog.undecoded_count) == ("rnn", 2, 0, 0)


@pytest.mark.parametrize("api, params, line, fn", [c for c in OP_CASES if c[0] in (
    "miopenReduceExtremeForward", "miopenPReLUBackward", "miopenFusedAdam", "miopenTransformersAdamW")])
def test_block_and_command_line_of_one_op_call_count_once(api, params, line, fn):
    log = _log([(api, params())], f"MIOpen(HIP): Command [{fn}] ./bin/MIOpenDriver {line}")
    (layer,) = _scan(log * 3).layers()
    assert layer.executions == 3


def test_impl_headers_of_the_newest_library():
    dec = TraceDecoder()
    params = [("mode", "1"), ("xDesc", tensor((2, 8, 4, 4))), ("num_groups", "2"), ("epsilon", "1e-05")]
    (s,) = dec.decode_block("miopenStatus_t miopenGroupNormForward_impl(miopenHandle_t, miopenNormMode_t, ...){",
                            params)
    assert s.problem.op == "groupnorm" and s.problem.num_groups == 2


def test_reduction_descriptor_lines_lost_by_the_log_make_the_block_undecoded():
    """ReduceTensorDescriptor prints over five lines, the last four without MIOpen's prefix;
    when a log loses them and no miopenSetReduceTensorDescriptor came first, the reduction's
    op is unknown: the block is undecoded with the reason (never a guessed op)."""
    log = ("MIOpen(HIP): miopenStatus_t miopenReduceTensor(miopenHandle_t, ...){\n"
           "MIOpen(HIP): \treduceTensorDesc = ReduceTensor Descriptor : \nReduction Operation Type : 3\n"
           "Reduction CompType : 1\nNanPropagation Option : 0\nIndices Option : 0\n\n"
           f"MIOpen(HIP): \taDesc = {tensor((16, 32, 8))}\nMIOpen(HIP): \tcDesc = {tensor((16, 1, 8))}\n"
           "MIOpen(HIP): }\n")
    catalog = _scan(log)
    (u,) = catalog.undecoded()
    assert "miopenSetReduceTensorDescriptor" in u.reason
    setup = ("MIOpen(HIP): miopenStatus_t miopenSetReduceTensorDescriptor(...){\n"
             "MIOpen(HIP): \treduceTensorDesc = ReduceTensor Descriptor : \nReduction Operation Type : 0\n"
             "Reduction CompType : 1\nNanPropagation Option : 0\nIndices Option : 0\n\n"
             "MIOpen(HIP): \treduceTensorOp = 3\nMIOpen(HIP): \treduceTensorCompType = 1\n"
             "MIOpen(HIP): \treduceTensorNanOpt = 0\nMIOpen(HIP): \treduceTensorIndices = 0\n"
             "MIOpen(HIP): \treduceTensorIndicesType = 0\nMIOpen(HIP): }\n")
    (layer,) = _scan(setup + log).layers()
    assert (layer.problem.reduce_op, layer.executions) == (3, 1)


def test_workspace_queries_are_mentions_of_the_call_they_size():
    dec = TraceDecoder()
    x = tensor((4, 8, 16))
    (s,) = decode(dec, "miopenGetPReLUBackwardWorkspaceSize", [("inputDesc", x), ("weightDesc", tensor((8,))),
                                                               ("sizeInBytes", "0x7ffd")])
    run = one(decode(dec, "miopenPReLUBackward", [("inputDesc", x), ("weightDesc", tensor((8,)))]))
    assert s.role == "mention" and s.problem == run.problem
    (s,) = decode(dec, "miopenGetSoftMarginLossForwardWorkspaceSize", [("inputDesc", x), ("targetDesc", x),
                                                                       ("outputDesc", tensor((1,))),
                                                                       ("reduction", "1")])
    assert (s.role, s.problem.op, s.problem.param("R")) == ("mention", "softmarginloss", "sum")
    # a query that prints too little is nothing, not an undecoded line
    assert decode(dec, "miopenGetReductionWorkspaceSize", [("aDesc", x), ("cDesc", tensor((4, 1, 16)))]) == []


def test_the_cat_lines_of_one_call_are_one_layer_with_every_input():
    """LogCmdCat prints one line per input; a different call of the thread ends the cat call."""
    cat = "MIOpen(HIP): Command [LogCmdCat] ./bin/MIOpenDriver catfp32 -dims {} -F 1\n"
    conv = ("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 2 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 "
            "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")
    text = (cat.format("2,3,4") + cat.format("2,5,4") + conv) * 3 + cat.format("2,3,4") + cat.format("2,5,4")
    catalog = Catalog()
    decode_stream(catalog, io.BytesIO(text.encode()))
    layers = {s.problem.op: s for s in catalog.layers()}
    assert sorted(layers) == ["cat", "conv"] and catalog.undecoded_count == 0
    cat_layer = layers["cat"]
    assert cat_layer.executions == 4 and layers["conv"].executions == 3
    assert [lens for _, lens in cat_layer.problem.shapes] == [(2, 3, 4), (2, 5, 4)]
    assert cat_layer.problem.param("d") == "1"
    assert to_driver_argv(cat_layer.problem) == ["cat", "-1", "2x3x4", "-2", "2x5x4", "-d", "1"]

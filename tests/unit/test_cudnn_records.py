"""cuDNN records one form at a time: framing, fields, and the layer each call gives."""

from __future__ import annotations

import pytest

from miotui.formats.cudnn import decode_cudnn_bytes
from miotui.formats.cudnn.fields import ARRAY_CHARS, FieldError, int_array, parse_body
from miotui.formats.cudnn.framing import RECORD_CHARS, RecordFramer


def record(fn: str, body: str, *, sev: str = "I", thread: str = "7", version: str = "v91900 56", blanks: int = 2) -> str:
    tag = sev.lower() + "!"
    lines = [f"{sev}! CuDNN ({version}) function {fn}() called:"]
    lines += [f"{tag}     {line}" for line in body.strip("\n").split("\n") if line]
    lines += [f"{tag} Time: 2026-11-26T20:13:52.525847 (0d+0h+0m+0s since start)",
              f"{tag} Process=1; Thread={thread}; GPU=0; Handle=0x1; StreamId=(nil) (defaultStream)."]
    return "\n".join(lines) + "\n" * (blanks + 1)


def tensor(name: str, dims, strides=None, dtype="CUDNN_DATA_FLOAT (0)", filt=False) -> str:
    out = [f"{name}: type={'cudnnFilterDescriptor_t' if filt else 'cudnnTensorDescriptor_t'}:",
           f"    dataType: type=cudnnDataType_t; val={dtype};",
           f"    nbDims: type=int; val={len(dims)};",
           f"    dimA: type=int; val=[{','.join(map(str, dims))}];"]
    if strides is not None:
        out.append(f"    strideA: type=int; val=[{','.join(map(str, strides))}];")
    if filt:
        out.append("    format: type=cudnnTensorFormat_t; val=CUDNN_TENSOR_NCHW (0);")
    return "\n".join(out) + "\n"


def conv_desc(pads, strides, dilations, groups=1, mode="CUDNN_CROSS_CORRELATION (1)") -> str:
    def arr(v):
        return "[" + ",".join(map(str, v)) + "]"
    return (f"convDesc: type=cudnnConvolutionDescriptor_t:\n    mode: type=cudnnConvolutionMode_t; val={mode};\n"
            f"    dataType: type=cudnnDataType_t; val=CUDNN_DATA_FLOAT (0);\n"
            f"    mathType: type=cudnnMathType_t; val=CUDNN_DEFAULT_MATH (0);\n"
            f"    arrayLength: type=int; val={len(pads)};\n    padA: type=int; val={arr(pads)};\n"
            f"    strideA: type=int; val={arr(strides)};\n    dilationA: type=int; val={arr(dilations)};\n"
            f"    groupCount: type=int; val={groups};\n")


def internal(operation="CONV_FORWARD", x=(16, 3, 224, 224), xs=None, w=(64, 3, 7, 7), y=(16, 64, 112, 112), ys=None,
             pads=(3, 3), strides=(2, 2), dil=(1, 1), groups=1, thread="7") -> str:
    body = (f"enable_tf32: type=bool; val=false;\noperation: type=internalType; val={operation};\n"
            + tensor("xDesc", x, xs or _nchw(x)) + tensor("wDesc", w, filt=True) + tensor("yDesc", y, ys or _nchw(y))
            + conv_desc(pads, strides, dil, groups) + "engine_id: type=int; val=7;\n"
            "knobDesc: type=cudnnBackendDescriptor_t:\n    CUDNN_KNOB_TYPE_SPLIT_K: type=int; val=4;\n")
    return record("cudnnBackendExecuteInternal", body, thread=thread)


def _nchw(dims):
    out, step = [], 1
    for d in reversed(dims):
        out.insert(0, step)
        step *= d
    return out


def decode(text: str):
    return decode_cudnn_bytes(text.encode())


def layers(text: str):
    return decode(text).catalog.layers()


def test_execute_internal_is_a_run_with_its_engine():
    (layer,) = layers(internal() + internal())
    p = layer.problem
    assert (p.direction, p.n, p.c, p.k, p.in_spatial, p.filter, p.pads, p.strides) == \
        ("fwd", 16, 3, 64, (224, 224), (7, 7), (3, 3), (2, 2))
    assert layer.executions == 2
    assert layer.annotation("solver") == "eng7 SPLIT_K=4" and layer.annotation("tf32") == "off"


@pytest.mark.parametrize("operation, direction", [("CONV_BWD_DATA", "bwd"), ("CONV_BWD_FILTER", "wrw")])
def test_backward_directions_keep_the_forward_shapes(operation, direction):
    (layer,) = layers(internal(operation, x=(16, 512, 7, 7), w=(2048, 512, 1, 1), y=(16, 2048, 7, 7),
                               pads=(0, 0), strides=(1, 1)))
    assert (layer.problem.direction, layer.problem.c, layer.problem.k) == (direction, 512, 2048)
    assert layer.driver_command.endswith("-F 2" if direction == "bwd" else "-F 4")


def test_channels_last_3d_grouped():
    x, w, y = (2, 8, 4, 6, 6), (16, 2, 3, 3, 3), (2, 16, 4, 6, 6)
    xs = (8 * 4 * 36, 1, 6 * 6 * 8, 6 * 8, 8)
    ys = (16 * 4 * 36, 1, 6 * 6 * 16, 6 * 16, 16)
    (layer,) = layers(internal(x=x, w=w, y=y, xs=xs, ys=ys, pads=(1, 1, 1), strides=(1, 1, 1), dil=(1, 1, 1),
                               groups=4))
    p = layer.problem
    assert (p.ndim, p.groups, p.in_layout, p.out_layout) == (3, 4, "NDHWC", "NDHWC")
    assert layer.warnings == ()


def test_inconsistent_output_is_kept_with_a_warning():
    (layer,) = layers(internal(y=(16, 64, 100, 100)))
    assert any("cuDNN's y is [16, 64, 100, 100]" in w for w in layer.warnings)


def test_true_convolution_mode_is_named():
    text = internal().replace("CUDNN_CROSS_CORRELATION (1)", "CUDNN_CONVOLUTION (0)")
    (layer,) = layers(text)
    assert any("true convolution" in w for w in layer.warnings)


def test_a_warning_record_with_a_blank_line_is_one_record_and_a_note():
    """Split on headers, never on blank lines; a W! record is a note on the thread's last
    call of that name, not a call."""
    bn = record("cudnnBatchNormalizationForwardTrainingEx",
                "mode: type=cudnnBatchNormMode_t; val=CUDNN_BATCHNORM_SPATIAL (1);\n"
                + tensor("xDesc", (4, 8, 5, 5), _nchw((4, 8, 5, 5)))
                + "saveMean: location=dev; addr=0x7f00;\nresultRunningMeanData: location=dev; addr=NULL_PTR;\n")
    warning = ("W! CuDNN (v91900 56) function cudnnBatchNormalizationForwardTrainingEx() called:\n"
               "w!     Info: Traceback contains 2 message(s)\n"
               "w!         Warning: CUDNN_STATUS_SUCCESS; Reason: configured\n\n"
               "w!         Warning: CUDNN_STATUS_NOT_SUPPORTED; Reason: !canRunSemiPersist\n"
               "w! Time: 2026-11-26T20:13:52.594076 (0d+0h+0m+0s since start)\n"
               "w! Process=1; Thread=7; GPU=NULL; Handle=NULL; StreamId=NULL.\n\n\n")
    scanner = decode(bn + warning + bn + warning)
    (layer,) = scanner.catalog.layers()
    assert (layer.problem.op, layer.problem.direction, layer.executions) == ("bnorm", "fwd_train", 2)
    assert layer.problem.save and not layer.problem.running
    assert "!canRunSemiPersist" in layer.annotation("cudnn_warning")
    assert scanner.stats.records == 4 and scanner.stats.warnings == 2


def test_legacy_call_then_its_execute_internal_is_one_run():
    legacy = record("cudnnConvolutionForward", tensor("xDesc", (16, 3, 224, 224), _nchw((16, 3, 224, 224)))
                    + tensor("wDesc", (64, 3, 7, 7), filt=True) + conv_desc((3, 3), (2, 2), (1, 1))
                    + "algo: type=cudnnConvolutionFwdAlgo_t; val=CUDNN_CONVOLUTION_FWD_ALGO_GEMM (2);\n"
                    + tensor("yDesc", (16, 64, 112, 112), _nchw((16, 64, 112, 112))))
    (layer,) = layers(legacy + internal() + legacy + internal())
    assert layer.executions == 2 and layer.annotation("algo") == "FWD_ALGO_GEMM"
    # a run on another thread is its own run
    (layer,) = layers(legacy + internal(thread="8"))
    assert layer.executions == 2


def test_descriptors_given_by_address_are_looked_up():
    """A legacy call naming its convolution descriptor by address (Windows pointers, no
    ``0x``) takes the geometry the earlier cudnnSet* calls gave that address."""
    setup = (record("cudnnSetConvolutionNdDescriptor", "convDesc: location=host; addr=000001F0A0B0C0D0;\n"
                    "arrayLength: type=int; val=2;\npadA: type=int; val=[1,1];\nstrideA: type=int; val=[1,1];\n"
                    "dilationA: type=int; val=[1,1];\nmode: type=cudnnConvolutionMode_t; val=CUDNN_CROSS_CORRELATION "
                    "(1);\ndataType: type=cudnnDataType_t; val=CUDNN_DATA_FLOAT (0);\n")
             + record("cudnnSetConvolutionGroupCount", "convDesc: location=host; addr=000001F0A0B0C0D0;\n"
                      "groupCount: type=int; val=2;\n"))
    call = record("cudnnConvolutionForward", tensor("xDesc", (1, 4, 8, 8), _nchw((1, 4, 8, 8)))
                  + tensor("wDesc", (6, 2, 3, 3), filt=True) + "convDesc: location=host; addr=000001F0A0B0C0D0;\n"
                  + tensor("yDesc", (1, 6, 8, 8), _nchw((1, 6, 8, 8))))
    (layer,) = layers(setup + call)
    assert (layer.problem.pads, layer.problem.groups) == ((1, 1), 2)
    scanner = decode(call)   # no earlier description: undecoded, with why
    assert scanner.catalog.layers() == []
    assert "given by address 000001F0A0B0C0D0" in scanner.catalog.undecoded()[0].reason


def test_return_records_unknown_calls_and_errors():
    status = record("cudnnBackendExecute", "status: type=cudnnStatus_t; val=CUDNN_STATUS_EXECUTION_FAILED (5003);")
    unknown = record("cudnnTransformTensor", "alpha: type=CUDNN_DATA_FLOAT; val=1.000000;")
    error = record("cudnnBackendFinalize", "Error: CUDNN_STATUS_BAD_PARAM; Reason: x", sev="E")
    scanner = decode(status + unknown + error)
    assert scanner.stats.failed_calls == 1
    reasons = [u.reason for u in scanner.catalog.undecoded()]
    assert reasons[0].startswith("cuDNN call cudnnTransformTensor(): no decoder")
    assert reasons[1].startswith("cuDNN error in cudnnBackendFinalize(): Error: CUDNN_STATUS_BAD_PARAM")
    assert scanner.catalog.layers() == []


def test_backend_execute_and_its_execute_internal_are_one_run():
    """cuDNN 9 prints a cudnnBackendExecute call (its plan's graph), then the ExecuteInternal
    record of the same run, then the call's status record."""
    plan = record("cudnnBackendExecute", """executionPlan: type=CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    engcfg: type=CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        engine: type=CUDNN_BACKEND_ENGINE_DESCRIPTOR:
            opGraph: type=CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
                operation: type=CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
                    xDesc: type=CUDNN_BACKEND_TENSOR_DESCRIPTOR:
                        type: type=cudnnDataType_t; val=CUDNN_DATA_HALF (2);
                        dimA: type=int; val=[2,8,6,6];
                        strideA: type=int; val=[288,1,48,8];
                    dwDesc: type=CUDNN_BACKEND_TENSOR_DESCRIPTOR:
                        type: type=cudnnDataType_t; val=CUDNN_DATA_HALF (2);
                        dimA: type=int; val=[4,2,3,3];
                        strideA: type=int; val=[18,1,6,2];
                    convDesc: type=CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
                        computeType: type=cudnnDataType_t; val=CUDNN_DATA_FLOAT (0);
                        mode: type=cudnnConvolutionMode_t; val=CUDNN_CROSS_CORRELATION (1);
                        upperPadA: type=int; val=[1,1];
                        lowerPadA: type=int; val=[1,1];
                        strideA: type=int; val=[1,1];
                        dilationA: type=int; val=[1,1];
                    dyDesc: type=CUDNN_BACKEND_TENSOR_DESCRIPTOR:
                        type: type=cudnnDataType_t; val=CUDNN_DATA_HALF (2);
                        dimA: type=int; val=[2,4,6,6];
                        strideA: type=int; val=[144,1,24,4];
            engine_id: type=int; val=9;
variantPack: type=CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    Workspace: location=dev; addr=0x7f00;""")
    status = record("cudnnBackendExecute", "status: type=cudnnStatus_t; val=CUDNN_STATUS_SUCCESS (0);")
    (layer,) = layers(plan + status + plan.replace("0x7f00", "0x7f80") + status)
    p = layer.problem
    assert (p.direction, p.dtype, p.groups, p.in_layout, p.fil_layout, layer.executions) == \
        ("wrw", "fp16", 4, "NHWC", "NHWC", 2)
    assert layer.annotation("solver") == "eng9" and layer.annotation("compute_type") == "FLOAT"
    internal_record = internal("CONV_BWD_FILTER", x=(2, 8, 6, 6), xs=(288, 1, 48, 8), w=(4, 2, 3, 3),
                               y=(2, 4, 6, 6), ys=(144, 1, 24, 4), pads=(1, 1), strides=(1, 1), groups=4)
    internal_record = internal_record.replace("CUDNN_DATA_FLOAT (0);\ni!         nbDims", "CUDNN_DATA_HALF (2);\n"
                                              "i!         nbDims").replace("CUDNN_TENSOR_NCHW", "CUDNN_TENSOR_NHWC")
    (layer,) = layers(plan + internal_record + status)
    assert layer.executions == 1 and layer.problem == p and layer.warnings == ()
    # where the ExecuteInternal record describes the run otherwise (here its filter's declared
    # format), the run is still one, on the call's row, with what differs
    (layer,) = layers(plan + internal_record.replace("CUDNN_TENSOR_NHWC", "CUDNN_TENSOR_NCHW") + status)
    assert layer.executions == 1 and layer.problem == p
    assert layer.warnings == ("the ExecuteInternal record of a run of this layer describes fil_layout NCHW "
                              "(the call: NHWC)",)
    scanner = decode(record("cudnnBackendExecute", "handle: type=cudnnHandle_t; streamId=(nil);"))
    assert scanner.catalog.undecoded()[0].reason == "cudnnBackendExecute(): no executionPlan in the record"


def test_field_forms():
    body = parse_body("I! CuDNN (v8204) function f() called:\n"
                      "i!     descriptor: type=CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR; val=NOT_IMPLEMENTED;\n"
                      "i!     [0]: type=CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR; val=0x55d780dc2120;\n"
                      "i!         : type=bool; val=true;\n"
                      "i!     apiLog: type=json; val={\"a\": \"b; c\"};\n"
                      "i!     ptr: location=dev; addr=0000008ABE21C1C0;\n"
                      "i! Process=391; Thread=392; GPU=NULL; Handle=NULL; StreamId=NULL.")
    f = body.fields
    assert f["descriptor"] == "NOT_IMPLEMENTED" and f["[0]"] == "0x55d780dc2120"
    assert f["apiLog"] == '{"a": "b; c"}' and f["ptr"] == "@0000008ABE21C1C0" and body.thread == "392"


def test_documentation_and_callback_forms():
    doc = ("cuDNN (v90000) function cudnnActivationForward() called:\n"
           "    activationDesc: type=cudnnActivationDescriptor_t:\n"
           "        mode: type=cudnnActivationMode_t; val=CUDNN_ACTIVATION_RELU (1);\n"
           "        coef: type=double; val=0.000000;\n"
           "    xDesc: type=cudnnTensorDescriptor_t:\n"
           "        dataType: type=cudnnDataType_t; val=CUDNN_DATA_HALF (2);\n"
           "        dimA: type=int; val=[2,3,4,5];\n"
           "        strideA: type=int; val=[60,20,5,1];\n"
           "Time: 2024-01-21T14:14:21.366171 (0d+0h+1m+5s since start)\n"
           "Process: 21264, Thread: 21264, cudnn_handle: NULL, cudnn_stream: NULL.\n")
    (layer,) = layers(doc)
    assert (layer.problem.op, layer.problem.dtype, layer.problem.mode_name) == ("activ", "fp16", "RELU")
    callback = ("┌ Debug: CuDNN (v92400 43) function cudnnSoftmaxForward() called:\n"
                "│ algorithm: type=cudnnSoftmaxAlgorithm_t; val=CUDNN_SOFTMAX_LOG (2);\n"
                "│ mode: type=cudnnSoftmaxMode_t; val=CUDNN_SOFTMAX_MODE_CHANNEL (1);\n"
                "│ xDesc: type=cudnnTensorDescriptor_t:\n"
                "│ dataType: type=cudnnDataType_t; val=CUDNN_DATA_FLOAT (0);\n"
                "│ dimA: type=int; val=[8,10,1,1];\n"
                "│ strideA: type=int; val=[10,1,1,1];\n"
                "│ yDesc: type=cudnnTensorDescriptor_t:\n"
                "│ dimA: type=int; val=[8,10,1,1];\n"
                "│ Time: 2026-07-16T13:13:52.122999 (0d+0h+0m+5s since start)\n"
                "│ Process=34152; Thread=34384; GPU=NULL; Handle=NULL; StreamId=NULL.\n"
                "└ @ cuDNN C:\\x\\cuDNN.jl:147\n")
    (layer,) = layers(callback)
    assert (layer.problem.op, layer.problem.algorithm, layer.problem.mode, layer.problem.c) == ("softmax", 2, 1, 10)


def test_pooling():
    text = record("cudnnPoolingForward", "poolingDesc: type=cudnnPoolingDescriptor_t:\n"
                  "    mode: type=cudnnPoolingMode_t; val=CUDNN_POOLING_MAX (0);\n"
                  "    nbDims: type=int; val=2;\n    windowDimA: type=int; val=[3,3];\n"
                  "    paddingA: type=int; val=[1,1];\n    strideA: type=int; val=[2,2];\n"
                  + tensor("xDesc", (16, 64, 112, 112), _nchw((16, 64, 112, 112))))
    (layer,) = layers(text)
    assert (layer.problem.op, layer.problem.window, layer.problem.out_spatial) == ("pool", (3, 3), (56, 56))


def test_arrays_are_measured_before_they_are_split():
    with pytest.raises(FieldError, match="characters"):
        int_array("dimA", "[" + "1," * ARRAY_CHARS + "1]")
    with pytest.raises(FieldError, match="more than"):
        int_array("dimA", "[" + ",".join(["1"] * 20) + "]")
    scanner = decode(internal().replace("val=[16,3,224,224]", "val=[" + "9" * 500 + "]"))
    assert "characters" in scanner.catalog.undecoded()[0].reason


def test_a_record_past_the_cap_is_cut_and_counted():
    got = []
    framer = RecordFramer(got.append)
    filler = "i!     pad: type=int; val=1;\n" * (RECORD_CHARS // 20)
    framer.feed(("I! CuDNN (v91900 56) function cudnnX() called:\n" + filler + "I! CuDNN (v9) function y() called:\n")
                .encode())
    framer.finish()
    first = got[0]
    assert len(first.text) <= RECORD_CHARS and first.dropped_lines > 0
    assert first.line == 1 and got[1].line == 2 + RECORD_CHARS // 20
    assert first.dropped_chars + len(first.text) + 1 == len("I! CuDNN (v91900 56) function cudnnX() called:\n") \
        + len(filler)


def test_frontend_autotune_timing_is_a_find():
    """Benchmark mode: cudnn-frontend times candidate plans (``Plan <tag> took <ms>``); each
    timing is a find of the graph's layer, with the plan and its time kept."""
    fe = ("[cudnn_frontend]                CUDNN_BACKEND_TENSOR_DESCRIPTOR :\n"
          "                                   Datatype: [\"FLOAT\"]\n                                   Id: 120\n"
          "                                   Dim [ 2,4,8,8 ]\n                                   Str [ 256,64,8,1 ]\n"
          "[cudnn_frontend]                CUDNN_BACKEND_TENSOR_DESCRIPTOR :\n"
          "                                   Datatype: [\"FLOAT\"]\n                                   Id: 121\n"
          "                                   Dim [ 2,6,8,8 ]\n                                   Str [ 384,64,8,1 ]\n"
          "[cudnn_frontend]                CUDNN_BACKEND_TENSOR_DESCRIPTOR :\n"
          "                                   Datatype: [\"FLOAT\"]\n                                   Id: 119\n"
          "                                   Dim [ 6,4,3,3 ]\n                                   Str [ 36,9,3,1 ]\n"
          "[cudnn_frontend] CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR : Datatype: [\"FLOAT\"] Mode: [\"CROSS_CORRELATION\"] "
          "Num Dimensions: 2 PadLower [ 1,1 ] PadUpper [,1,1 ] Dilation [,1,1 ] Stride [,1,1]\n"
          "[cudnn_frontend] CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR has 1 operations.\nTag: ConvFwd_\n\n"
          "[cudnn_frontend] Plan ConvFwd_eng0 took   0.0510\n"
          "[cudnn_frontend] Plan ConvFwd_eng28_k3=1 took   0.0201\n"
          "[cudnn_frontend] CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR : ConvFwd_eng28_k3=1, numeric_notes:[] "
          "behavior_notes:[] workSpaceSize: 0\n"
          "[cudnn_frontend] CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR : has 3 data pointers\n")
    scanner = decode(fe)
    (layer,) = scanner.catalog.layers()
    assert (layer.problem.c, layer.problem.k, layer.finds, layer.mentions) == (4, 6, 2, 1)
    assert dict(layer.annotation_history)["plan_time_ms"] == ("ConvFwd_eng0 0.0510", "ConvFwd_eng28_k3=1 0.0201")
    assert layer.annotation("solver") == "ConvFwd_eng28_k3=1" and scanner.frontend.executions == 1


def test_a_time_inside_a_body_does_not_merge_two_records():
    """Repeated records are decoded once by their text without the trailer; the trailer is
    the last ``Time:`` line, not any ``Time: `` in a value."""
    first = internal().replace("enable_tf32:", 'note: type=string; val="Time: 3";\ni!     enable_tf32:')
    second = first.replace("[16,3,224,224]", "[8,3,224,224]").replace("[16,64,112,112]", "[8,64,112,112]")
    assert [layer.problem.n for layer in layers(first + second)] == [16, 8]

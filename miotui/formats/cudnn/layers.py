"""cuDNN's descriptions of a layer turned into the project's problem values.

One identity across libraries: a convolution is a ``ConvProblem`` with MIOpen's meaning of
every field, so the same layer from a MIOpen log and from a cuDNN log is the same value
(and has the same ``key``).  cuDNN's ``xDesc``/``wDesc``/``yDesc`` are the forward input,
filter and output in every direction (a ``CONV_BWD_DATA`` record of a 2048->512 1x1 layer
has x [16,512,7,7], w [2048,512,1,1], y [16,2048,7,7]), the same convention as
MIOpenDriver's ``-n -c -H -W -k`` with ``-F 1/2/4``.  What cuDNN says that MIOpen's
problem has no field for (compute type, TF32, math type, engine and knobs) is kept beside
the problem as annotations, so it never splits one layer into two.

Where the log contradicts itself (an output shape the convolution does not give, channels
that do not divide by the groups) the layer is kept with a warning naming both values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from miotui.formats.cudnn.fields import FieldError, Fields, int_array
from miotui.problems import (
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    PoolProblem,
    ProblemError,
    RNNProblem,
    SoftmaxProblem,
)
from miotui.problems.base import ProblemBase

#: cudnnDataType_t names (without ``CUDNN_DATA_``; the frontend writes them bare) -> miotui dtype
DTYPES = {"FLOAT": "fp32", "DOUBLE": "fp64", "HALF": "fp16", "BFLOAT16": "bf16", "INT8": "int8",
          "INT32": "int32", "FP8_E4M3": "fp8", "FP8_E5M2": "bf8"}
#: cuDNN's operation names (ExecuteInternal's ``operation``, Visualize's ``finalizeMode``,
#: backend operation descriptors, frontend tags) -> MIOpen's direction
DIRECTIONS = {"CONV_FORWARD": "fwd", "CONV_BWD_DATA": "bwd", "CONV_BWD_FILTER": "wrw",
              "CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR": "fwd",
              "CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR": "bwd",
              "CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR": "wrw",
              "ConvFwd": "fwd", "ConvBwdData": "bwd", "ConvBwdFilter": "wrw",
              "CONV_FPROP": "fwd", "CONV_DGRAD": "bwd", "CONV_WGRAD": "wrw"}
TRUE_CONVOLUTION_WARNING = ("cuDNN runs this as a true convolution (CUDNN_CONVOLUTION, the filter flipped); "
                            "MIOpen's convolution is a cross-correlation: same shapes and cost, mirrored weights")


@dataclass(frozen=True)
class Tensor:
    dtype: str            # miotui's name ("unknown" for a cuDNN type MIOpen has no name for)
    cudnn_type: str       # cuDNN's (``FLOAT``)
    dims: tuple[int, ...]
    strides: tuple[int, ...] = ()
    #: a filter's declared format (``NHWC``), where the record gives one instead of strides
    format: str = ""

    @property
    def channels_last(self) -> bool:
        """NHWC: the strides are the packed channels-last ones, or else the channel stride
        is 1 (with C > 1: else the strides cannot say).  Packed NCHW strides come first: a
        1x1 filter's [64,1,1,1] has a channel stride of 1 and is plain NCHW."""
        strides, dims = self.strides, self.dims
        if strides and len(strides) == len(dims) and len(dims) >= 3:
            if strides == _packed(dims, range(len(dims))):
                return False
            if strides == _packed(dims, (0, *range(2, len(dims)), 1)):
                return True
            return dims[1] > 1 and strides[1] == 1
        return self.format in ("NHWC", "NDHWC")

    def layout(self) -> str:
        spatial = len(self.dims) - 2
        if self.channels_last:
            return "NHWC" if spatial == 2 else "NDHWC"
        return "NCHW" if spatial == 2 else "NCDHW"


def _packed(dims: tuple[int, ...], order) -> tuple[int, ...]:
    """The strides of a packed tensor whose dimensions are stored in ``order`` (outermost first)."""
    strides = [0] * len(dims)
    step = 1
    for axis in reversed(tuple(order)):
        strides[axis] = step
        step *= dims[axis]
    return tuple(strides)


@dataclass(frozen=True)
class ConvGeometry:
    pads: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    groups: int = 1
    true_convolution: bool = False
    compute_type: str = ""      # cuDNN's name of the compute type (``FLOAT``)
    math_type: str = ""         # ``CUDNN_DEFAULT_MATH``...
    upper_pads: tuple[int, ...] = ()


@dataclass(frozen=True)
class Decoded:
    """A layer one record describes, with what the record says beside the problem."""

    problem: ProblemBase
    annotations: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = ()


def type_name(text: str) -> str:
    """``CUDNN_DATA_FLOAT (0)`` / ``"FLOAT"`` / ``["FLOAT"]`` -> ``FLOAT``."""
    name = text.strip().strip('[]"').split(" ")[0]
    return name[len("CUDNN_DATA_"):] if name.startswith("CUDNN_DATA_") else name


def dtype_of(text: str) -> str:
    return DTYPES.get(type_name(text), "unknown")


def enum_name(text: str) -> str:
    """``CUDNN_BATCHNORM_SPATIAL (1)`` -> ``CUDNN_BATCHNORM_SPATIAL``."""
    return text.strip().split(" ")[0]


def tensor(desc: Fields, what: str) -> Tensor:
    """A tensor or filter descriptor block of an API record."""
    try:
        dims = desc.array("dimA", "filterDimA")
        strides = desc.array("strideA") if isinstance(desc.get("strideA"), str) else ()
        dtype_text = desc.text("dataType", "type")
    except FieldError as e:
        raise FieldError(f"{what}: {e}") from None
    fmt = enum_name(desc.get("format", "")) if isinstance(desc.get("format"), str) else ""
    fmt = fmt[len("CUDNN_TENSOR_"):] if fmt.startswith("CUDNN_TENSOR_") else ""
    vect = desc.get("vect")
    if isinstance(vect, str) and vect.strip() not in ("", "0"):
        raise FieldError(f"{what} is a vectorised tensor (vect={vect}), which MIOpen's problems do not describe")
    return Tensor(dtype_of(dtype_text), type_name(dtype_text), dims, strides, fmt)


def geometry(conv: Fields) -> ConvGeometry:
    """A convolution descriptor block (``convDesc``)."""
    try:
        pads = conv.array("padA", "lowerPadA", "prePaddings")
        upper = conv.array("upperPadA") if isinstance(conv.get("upperPadA"), str) else ()
        strides = conv.array("strideA", "filterStrideA")
        dilations = conv.array("dilationA")
    except FieldError as e:
        raise FieldError(f"convDesc: {e}") from None
    return ConvGeometry(pads, strides, dilations, conv.integer("groupCount", default=1),
                        enum_name(conv.get("mode", "") or "") == "CUDNN_CONVOLUTION",
                        type_name(conv.text("dataType", "computeType", default="")),
                        enum_name(conv.text("mathType", default="")), upper)


def conv_layer(direction: str, x: Tensor, w: Tensor, y: Optional[Tensor], geo: ConvGeometry,
               notes: tuple[tuple[str, str], ...] = ()) -> Decoded:
    """The ``ConvProblem`` of x, w, y and the geometry, checked against each other."""
    nd = len(x.dims) - 2
    if nd not in (2, 3):
        raise FieldError(f"x has {len(x.dims)} dimensions {list(x.dims)}: only 2-D and 3-D convolutions are read")
    if len(w.dims) != nd + 2:
        raise FieldError(f"w has dims {list(w.dims)}, x has {list(x.dims)}: their ranks differ")
    warnings: list[str] = []
    if geo.true_convolution:
        warnings.append(TRUE_CONVOLUTION_WARNING)
    if geo.upper_pads and geo.upper_pads != geo.pads:
        warnings.append(f"asymmetric padding (lower {list(geo.pads)}, upper {list(geo.upper_pads)}): "
                        f"MIOpen's problem has one pad per axis, the lower one is kept")
    if x.dtype == "unknown":
        warnings.append(f"data type {x.cudnn_type} has no MIOpen name")
    groups = geo.groups
    if w.dims[1] * groups != x.dims[1]:
        warnings.append(f"x has {x.dims[1]} channels but w {list(w.dims)} with {groups} groups takes "
                        f"{w.dims[1] * groups}")
    layout = x.layout()
    try:
        problem = ConvProblem(direction=direction, dtype=x.dtype, n=x.dims[0], c=x.dims[1], k=w.dims[0],
                              in_spatial=x.dims[2:], filter=w.dims[2:], pads=geo.pads, strides=geo.strides,
                              dilations=geo.dilations, groups=groups, in_layout=layout,
                              fil_layout=w.layout() if (w.strides or w.format) else layout,
                              out_layout=y.layout() if y is not None else layout)
    except ProblemError as e:
        raise FieldError(str(e)) from None
    if y is not None and y.dims != problem.output_shape:
        warnings.append(f"cuDNN's y is {list(y.dims)}, the convolution of x and w gives {list(problem.output_shape)}")
    found = list(notes)
    if geo.compute_type:
        found.append(("compute_type", geo.compute_type))
    if geo.math_type:
        found.append(("math_type", geo.math_type))
    return Decoded(problem, tuple(found), tuple(warnings))


def bnorm_layer(direction: str, f: Fields) -> Decoded:
    x = tensor(f.block("xDesc", "xdesc"), "xDesc")
    nd = len(x.dims) - 2
    if nd not in (2, 3):
        raise FieldError(f"x has dims {list(x.dims)}: batch norm is read for 4-D and 5-D tensors")
    mode = enum_name(f.text("mode", default=""))
    warnings: list[str] = []
    notes: list[tuple[str, str]] = []
    if mode == "CUDNN_BATCHNORM_PER_ACTIVATION":
        bn_mode = "per_activation"
    elif mode in ("CUDNN_BATCHNORM_SPATIAL", "CUDNN_BATCHNORM_SPATIAL_PERSISTENT"):
        bn_mode = "spatial"
        notes.append(("bn_mode", mode))
    else:
        raise FieldError(f"batch norm mode {mode or '(none)'} is not one miotui reads")
    ops = enum_name(f.text("bnOps", default=""))
    if ops and ops != "CUDNN_BATCHNORM_OPS_BN":
        warnings.append(f"cuDNN fused this batch norm with more ({ops}); the problem is the batch norm alone")
    param = f.get("bnScaleBiasMeanVarDesc") or f.get("dBnScaleBiasDesc")
    param_dtype = tensor(param, "bnScaleBiasMeanVarDesc").dtype if isinstance(param, Fields) else ""

    def given(*names: str) -> bool:
        return any(isinstance(f.get(n), str) and f[n] not in ("@NULL_PTR", "NULL_PTR", "@0x0", "@(nil)")
                   for n in names)

    save = given("saveMean", "resultSaveMean", "savedMean")
    running = given("resultRunningMeanData", "resultRunningMean") if direction == "fwd_train" else False
    try:
        problem = BatchNormProblem(direction=direction, dtype=x.dtype, n=x.dims[0], c=x.dims[1],
                                   in_spatial=x.dims[2:], mode=bn_mode, layout=x.layout(), save=save,
                                   running=running, param_dtype=param_dtype if param_dtype != "unknown" else "")
    except ProblemError as e:
        raise FieldError(str(e)) from None
    return Decoded(problem, tuple(notes), tuple(warnings))


def _four_d(x: Tensor, what: str) -> None:
    if len(x.dims) != 4:
        raise FieldError(f"{what} has dims {list(x.dims)}: miotui reads it for 4-D tensors")


#: cudnnActivationMode_t -> MIOpen's activation mode (index into ACTIVATION_MODES)
ACTIVATIONS = {"CUDNN_ACTIVATION_IDENTITY": 0, "CUDNN_ACTIVATION_SIGMOID": 1, "CUDNN_ACTIVATION_TANH": 2,
               "CUDNN_ACTIVATION_RELU": 3, "CUDNN_ACTIVATION_CLIPPED_RELU": 7, "CUDNN_ACTIVATION_ELU": 9}


def activation_layer(direction: str, f: Fields) -> Decoded:
    x = tensor(f.block("xDesc", "srcDesc"), "xDesc")   # cuDNN 9 names the forward's input srcDesc
    _four_d(x, "xDesc")
    desc = f.block("activationDesc")
    mode = enum_name(desc.text("mode"))
    if mode not in ACTIVATIONS:
        raise FieldError(f"activation mode {mode} has no MIOpen counterpart")
    coef = desc.text("coef", default="1.0")
    try:
        alpha = float(coef) if mode in ("CUDNN_ACTIVATION_CLIPPED_RELU", "CUDNN_ACTIVATION_ELU") else 1.0
        problem = ActivationProblem(direction=direction, dtype=x.dtype, n=x.dims[0], c=x.dims[1],
                                    in_spatial=x.dims[2:], mode=ACTIVATIONS[mode], alpha=alpha, layout=x.layout())
    except (ValueError, ProblemError) as e:
        raise FieldError(str(e)) from None
    return Decoded(problem)


_POOL_MODES = {"CUDNN_POOLING_MAX": "max", "CUDNN_POOLING_MAX_DETERMINISTIC": "max",
               "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING": "avg",
               "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING": "avg_in"}


def pool_layer(direction: str, f: Fields) -> Decoded:
    # the input x: srcDesc of the forward, destDesc of the backward (whose srcDesc is y) in cuDNN 9
    x = tensor(f.block("xDesc", "srcDesc" if direction == "fwd" else "destDesc"), "xDesc")
    desc = f.block("poolingDesc")
    mode = enum_name(desc.text("mode"))
    if mode not in _POOL_MODES:
        raise FieldError(f"pooling mode {mode} is not one miotui reads")
    try:
        problem = PoolProblem(direction=direction, dtype=x.dtype, n=x.dims[0], c=x.dims[1], in_spatial=x.dims[2:],
                              window=desc.array("windowDimA"), pads=desc.array("paddingA"),
                              strides=desc.array("strideA"), mode=_POOL_MODES[mode], layout=x.layout())
    except ProblemError as e:
        raise FieldError(str(e)) from None
    return Decoded(problem)


_SOFTMAX_ALGOS = {"CUDNN_SOFTMAX_FAST": 0, "CUDNN_SOFTMAX_ACCURATE": 1, "CUDNN_SOFTMAX_LOG": 2}
_SOFTMAX_MODES = {"CUDNN_SOFTMAX_MODE_INSTANCE": 0, "CUDNN_SOFTMAX_MODE_CHANNEL": 1}


def softmax_layer(direction: str, f: Fields) -> Decoded:
    x = tensor(f.block("xDesc", "srcDesc", "yDesc", "destDiffDesc"), "xDesc")   # every tensor has x's shape
    _four_d(x, "xDesc")
    algo = enum_name(f.text("algorithm", "algo"))
    mode = enum_name(f.text("mode"))
    if algo not in _SOFTMAX_ALGOS or mode not in _SOFTMAX_MODES:
        raise FieldError(f"softmax algorithm {algo} / mode {mode} is not one miotui reads")
    try:
        problem = SoftmaxProblem(direction=direction, dtype=x.dtype, n=x.dims[0], c=x.dims[1], in_spatial=x.dims[2:],
                                 algorithm=_SOFTMAX_ALGOS[algo], mode=_SOFTMAX_MODES[mode])
    except ProblemError as e:
        raise FieldError(str(e)) from None
    return Decoded(problem)


_RNN_MODES = {"CUDNN_RNN_RELU": "relu", "CUDNN_RNN_TANH": "tanh", "CUDNN_LSTM": "lstm", "CUDNN_GRU": "gru"}
#: cudnnRNNDataLayout_t -> MIOpenDriver's -I (1 seq-major packed, 2 seq-major padded, 3 batch-major padded)
_RNN_LAYOUTS = {"CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED": 2, "CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED": 1,
                "CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED": 3}
#: sequence lengths read from one RNN data descriptor (one per sample of the batch)
RNN_BATCH = 4096


def rnn_layer(direction: str, f: Fields) -> Decoded:
    """A ``cudnnRNNForward`` / ``cudnnRNNBackwardData_v8`` / ``cudnnRNNBackwardWeights_v8``
    call (cuDNN 8+ RNN API): ``rnnDesc`` and the input's RNN data descriptor (``dimA`` is
    [max sequence length, batch, vector size], ``seqLengthArray`` one length per sample)."""
    desc = f.block("rnnDesc")
    x = f.block("xDesc")
    mode = enum_name(desc.text("cellMode"))
    if mode not in _RNN_MODES:
        raise FieldError(f"RNN cell mode {mode} has no MIOpen counterpart")
    dims = x.array("dimA")
    if len(dims) != 3:
        raise FieldError(f"xDesc dimA is {list(dims)}, not [max sequence length, batch, vector size]")
    seq_len, batch, _vector = dims
    lengths = int_array("seqLengthArray", x.text("seqLengthArray", default="[]"), RNN_BATCH)
    layout = enum_name(x.text("layout", default=""))
    hidden, proj = desc.integer("hiddenSize"), desc.integer("projSize", default=0)
    warnings = [f"LSTM projection to {proj} (MIOpen's RNN has none): the problem is the unprojected LSTM"] \
        if proj and proj != hidden else []
    dropout = desc.get("dropoutDesc")
    try:
        rate = float(dropout.text("dropout", default="0")) if isinstance(dropout, Fields) else 0.0
        dtype_text = x.text("dataType", default=desc.text("dataType", default=""))
        problem = RNNProblem(
            direction=direction, dtype=dtype_of(dtype_text), mode=_RNN_MODES[mode], batch=(batch,), seq_len=seq_len,
            in_size=desc.integer("inputSize"), hidden=hidden, layers=desc.integer("numLayers"),
            bias=enum_name(desc.text("biasMode", default="")) != "CUDNN_RNN_NO_BIAS",
            input_mode="skip" if enum_name(desc.text("inputMode", default="")) == "CUDNN_SKIP_INPUT" else "linear",
            bidirectional=enum_name(desc.text("bidirectional", "dirMode", default="")) == "CUDNN_BIDIRECTIONAL",
            inference=enum_name(f.text("fwdMode", default="")) == "CUDNN_FWD_MODE_INFERENCE",
            dropout=rate, api="rnn_seq", seq_lens=lengths, io_layout=_RNN_LAYOUTS.get(layout, 0))
    except (ValueError, ProblemError) as e:
        raise FieldError(str(e)) from None
    notes = (("rnn_algo", enum_name(desc.text("algo", default=""))),) if desc.text("algo", default="") else ()
    return Decoded(problem, notes, tuple(warnings))


def solver_name(engine: str, knobs: dict[str, str]) -> str:
    """``eng48 TILE_SIZE=2 LDGA=0`` from an engine id and its knob choices."""
    parts = [f"eng{engine}"]
    for name, value in knobs.items():
        short = name[len("CUDNN_KNOB_TYPE_"):] if name.startswith("CUDNN_KNOB_TYPE_") else name
        parts.append(f"{short}={value}")
    return " ".join(parts)


def match_tensors(direction: str, found: list[Tensor], geo: ConvGeometry) -> tuple[Tensor, Tensor, Tensor]:
    """x, w, y among three tensors a frontend dump lists without saying which is which:
    the assignment whose shapes the convolution explains (in the order given first)."""
    if len(found) != 3:
        raise FieldError(f"the graph has {len(found)} tensors, a convolution has 3")
    orders = ((0, 2, 1), (0, 1, 2), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))
    for i, j, k in orders:
        x, w, y = found[i], found[j], found[k]
        if len(x.dims) == len(w.dims) == len(y.dims) and len(x.dims) >= 3:
            if w.dims[0] != y.dims[1] or not w.dims[1] or x.dims[1] % w.dims[1] or x.dims[0] != y.dims[0]:
                continue
            if not len(x.dims) - 2 == len(geo.pads) == len(geo.strides) == len(geo.dilations):
                continue
            out = tuple((s + 2 * p - (d * (f - 1) + 1)) // st + 1 for s, f, p, st, d in
                        zip(x.dims[2:], w.dims[2:], geo.pads, geo.strides, geo.dilations, strict=False))
            if out == y.dims[2:]:
                return x, w, y
    raise FieldError("no assignment of the graph's tensors to x, w, y fits the convolution "
                     f"({', '.join(str(list(t.dims)) for t in found)})")


def int_list(name: str, value: object) -> tuple[int, ...]:
    """A JSON array of ints, bounded like ``int_array``."""
    if not isinstance(value, list) or len(value) > 12 or not all(type(v) is int for v in value):
        raise FieldError(f"{name} is not a short list of integers")
    return tuple(value)


def array_text(name: str, text: str) -> tuple[int, ...]:
    """The frontend's ``[ 3,3 ]`` / ``[,3,3 ]`` arrays."""
    return int_array(name, "[" + text.strip().strip("[]").strip().strip(",") + "]")

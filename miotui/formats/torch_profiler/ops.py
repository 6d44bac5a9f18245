"""PyTorch's aten ops, as a profiler with ``record_shapes=True`` records them, turned into the
project's problem values.

An op event's ``args`` hold its inputs in the op's schema order: ``Input Dims`` and
``Input Strides`` (a list per tensor input, empty for a scalar or list input), ``Input type``
(``float``, ``c10::Half``...) and, since PyTorch 2.1, ``Concrete Inputs`` (the scalar and list
arguments as text: ``"[3, 3]"``, ``"1"``, ``"False"``).  Each reader here names the schema it
follows.  The problems are the ones a MIOpen or cuDNN log of the same layer gives (shapes in
N, C, H, W order; the layout from the strides), so the same layer has the same identity key.

Ops that no MIOpen problem describes (elementwise ops, GEMMs, ``hardswish``) are not layers:
their kernels are counted as time no layer claims.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from miotui.problems import (
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    LayerNormProblem,
    PoolProblem,
    ProblemError,
    SoftmaxProblem,
)
from miotui.problems.base import ProblemBase

#: ``Input type`` names -> miotui dtype
DTYPES = {"float": "fp32", "c10::Half": "fp16", "c10::BFloat16": "bf16", "double": "fp64",
          "signed char": "int8", "int": "int32", "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "bf8"}


class OpError(ValueError):
    """An op that is a layer whose recorded arguments do not make one (the reason says why)."""


@dataclass(frozen=True)
class OpArgs:
    """One op call's recorded inputs."""

    dims: tuple
    strides: tuple
    types: tuple
    concrete: tuple

    @classmethod
    def of(cls, args: dict) -> Optional[OpArgs]:
        """None where the op was recorded without shapes (``record_shapes`` off)."""
        dims = args.get("Input Dims")
        if not isinstance(dims, list):
            return None
        strides, types, concrete = args.get("Input Strides"), args.get("Input type"), args.get("Concrete Inputs")
        return cls(tuple(dims), tuple(strides) if isinstance(strides, list) else (),
                   tuple(types) if isinstance(types, list) else (),
                   tuple(concrete) if isinstance(concrete, list) else ())

    def tensor(self, i: int, what: str, ranks: tuple[int, ...] = (4, 5)) -> tuple[int, ...]:
        dims = self.dims[i] if i < len(self.dims) else None
        if not isinstance(dims, list) or not all(type(v) is int for v in dims) or len(dims) not in ranks:
            raise OpError(f"{what} (input {i}) has dims {dims!r}, not a tensor of rank {' or '.join(map(str, ranks))}")
        return tuple(dims)

    def has_tensor(self, i: int) -> bool:
        return i < len(self.dims) and isinstance(self.dims[i], list) and bool(self.dims[i])

    def dtype(self, i: int) -> str:
        name = self.types[i] if i < len(self.types) else ""
        return DTYPES.get(name, "unknown") if isinstance(name, str) else "unknown"

    def layout(self, i: int) -> str:
        """NCHW/NHWC (NCDHW/NDHWC) from input ``i``'s strides: channels-last when its strides
        are the packed channels-last ones, or its channel stride is 1 with more than one channel
        and they are not the packed NCHW ones."""
        dims = self.dims[i]
        strides = self.strides[i] if i < len(self.strides) else None
        two_d = len(dims) == 4
        if isinstance(strides, list) and len(strides) == len(dims):
            step, packed = 1, [0] * len(dims)
            for axis in reversed(range(len(dims))):
                packed[axis] = step
                step *= dims[axis]
            if strides != packed and dims[1] > 1 and strides[1] == 1:
                return "NHWC" if two_d else "NDHWC"
        return "NCHW" if two_d else "NCDHW"

    def value(self, i: int, what: str):
        """A ``Concrete Inputs`` entry as a Python value (int, bool, float, list of ints)."""
        if not self.concrete:
            raise OpError("the trace has no Concrete Inputs (PyTorch 2.1 or later records them): "
                          f"the op's {what} is unknown")
        text = self.concrete[i] if i < len(self.concrete) else None
        if not isinstance(text, str) or not text:
            raise OpError(f"{what} (input {i}) is not recorded")
        text = text.strip()
        if text in ("True", "False"):
            return text == "True"
        try:
            if text.startswith("["):
                inner = text[1:-1].strip()
                items = [item.strip() for item in inner.split(",")] if inner else []
                if len(items) > 12:
                    raise ValueError
                return [item == "True" if item in ("True", "False") else int(item) for item in items]
            return float(text) if any(ch in text for ch in ".en") else int(text)
        except ValueError:
            raise OpError(f"{what} (input {i}) is {text[:40]!r}, not a value miotui reads") from None

    def ints(self, i: int, what: str, n: int, default: Optional[tuple[int, ...]] = None) -> tuple[int, ...]:
        """A spatial list of ``n`` ints (one value stands for every axis, as PyTorch allows)."""
        value = self.value(i, what)
        if isinstance(value, list) and not value and default is not None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, list)):
            raise OpError(f"{what} (input {i}) is {value!r}, not a list of ints")
        values = [value] * n if isinstance(value, int) else value
        if len(values) == 1:
            values = values * n
        if len(values) != n or not all(type(v) is int for v in values):
            raise OpError(f"{what} (input {i}) is {value!r}, not {n} ints")
        return tuple(values)


@dataclass(frozen=True)
class OpLayer:
    """A layer one op call ran, with what the trace says beside the problem."""

    problem: ProblemBase
    warnings: tuple[str, ...] = ()


def _conv(direction: str, a: OpArgs, x_at: int, w_at: int, pads: tuple[int, ...], strides: tuple[int, ...],
          dilations: tuple[int, ...], groups: int, transposed: bool = False,
          output_pads: tuple[int, ...] = ()) -> OpLayer:
    x, w = a.tensor(x_at, "the input"), a.tensor(w_at, "the weight")
    if type(groups) is not int:
        raise OpError(f"groups is {groups!r}, not an int")
    if len(w) != len(x):
        raise OpError(f"the weight {list(w)} and the input {list(x)} differ in rank")
    k = w[1] * groups if transposed else w[0]
    warnings = ()
    if not transposed and w[1] * groups != x[1]:
        warnings = (f"the input has {x[1]} channels but the weight {list(w)} with {groups} groups takes "
                    f"{w[1] * groups}",)
    layout = a.layout(x_at)
    try:
        problem = ConvProblem(direction=direction, dtype=a.dtype(x_at), n=x[0], c=x[1], k=k, in_spatial=x[2:],
                              filter=w[2:], pads=pads, strides=strides, dilations=dilations, groups=groups,
                              mode="trans" if transposed else "conv",
                              trans_output_pads=output_pads if transposed else (),
                              in_layout=layout, fil_layout=a.layout(w_at), out_layout=layout)
    except ProblemError as e:
        raise OpError(str(e)) from None
    return OpLayer(problem, warnings)


def _spatial(a: OpArgs, i: int) -> int:
    return len(a.tensor(i, "the input")) - 2


def cudnn_convolution(a: OpArgs) -> list[OpLayer]:
    # cudnn_convolution(self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
    n = _spatial(a, 0)
    return [_conv("fwd", a, 0, 1, a.ints(2, "padding", n), a.ints(3, "stride", n), a.ints(4, "dilation", n),
                  a.value(5, "groups"))]


def miopen_convolution(a: OpArgs) -> list[OpLayer]:
    # miopen_convolution(self, weight, bias?, padding, stride, dilation, groups, benchmark, deterministic)
    n = _spatial(a, 0)
    return [_conv("fwd", a, 0, 1, a.ints(3, "padding", n), a.ints(4, "stride", n), a.ints(5, "dilation", n),
                  a.value(6, "groups"))]


def cudnn_convolution_transpose(a: OpArgs) -> list[OpLayer]:
    # cudnn_convolution_transpose(self, weight, padding, output_padding, stride, dilation, groups, ...)
    n = _spatial(a, 0)
    return [_conv("fwd", a, 0, 1, a.ints(2, "padding", n), a.ints(4, "stride", n), a.ints(5, "dilation", n),
                  a.value(6, "groups"), True, a.ints(3, "output_padding", n))]


def miopen_convolution_transpose(a: OpArgs) -> list[OpLayer]:
    # miopen_convolution_transpose(self, weight, bias?, padding, output_padding, stride, dilation, groups, ...)
    n = _spatial(a, 0)
    return [_conv("fwd", a, 0, 1, a.ints(3, "padding", n), a.ints(5, "stride", n), a.ints(6, "dilation", n),
                  a.value(7, "groups"), True, a.ints(4, "output_padding", n))]


def conv_depthwise2d(a: OpArgs) -> list[OpLayer]:
    # _conv_depthwise2d(self, weight, kernel_size, bias?, stride, padding, dilation): PyTorch's own kernels
    x = a.tensor(0, "the input", (4,))
    layer = _conv("fwd", a, 0, 1, a.ints(5, "padding", 2), a.ints(4, "stride", 2), a.ints(6, "dilation", 2), x[1])
    return [OpLayer(layer.problem, layer.warnings + ("run by PyTorch's own depthwise kernel, not the vendor "
                                                     "library",))]


def convolution_backward(a: OpArgs) -> list[OpLayer]:
    """Its layers in the order PyTorch computes them: backward data (``output_mask[0]``), then
    backward weights (``output_mask[1]``); the bias gradient (``[2]``) is no MIOpen layer.
    convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask)."""
    n = _spatial(a, 1)
    transposed = a.value(7, "transposed") is True
    geometry = (a.ints(5, "padding", n), a.ints(4, "stride", n), a.ints(6, "dilation", n), a.value(9, "groups"),
                transposed, a.ints(8, "output_padding", n))
    mask = a.value(10, "output_mask")
    if not isinstance(mask, list) or len(mask) != 3:
        raise OpError(f"output_mask is {mask!r}, not three booleans")
    return [_conv(direction, a, 1, 2, *geometry) for direction, wanted in (("bwd", mask[0]), ("wrw", mask[1]))
            if wanted]


def _bnorm(direction: str, a: OpArgs, x_at: int, w_at: int, save: bool, running: bool) -> list[OpLayer]:
    x = a.tensor(x_at, "the input")
    try:
        problem = BatchNormProblem(direction=direction, dtype=a.dtype(x_at), n=x[0], c=x[1], in_spatial=x[2:],
                                   mode="spatial", layout=a.layout(x_at), save=save, running=running,
                                   param_dtype=a.dtype(w_at) if a.has_tensor(w_at) else "")
    except ProblemError as e:
        raise OpError(str(e)) from None
    return [OpLayer(problem)]


def batch_norm(a: OpArgs) -> list[OpLayer]:
    # {cudnn,miopen,native}_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
    training = a.value(5, "training") is True
    return _bnorm("fwd_train" if training else "fwd_infer", a, 0, 1, training, training and a.has_tensor(3))


def batch_norm_backward(a: OpArgs) -> list[OpLayer]:
    # {cudnn,miopen}_batch_norm_backward(input, grad_output, weight, running_mean, running_var, save_mean, ...)
    return _bnorm("bwd", a, 0, 2, a.has_tensor(5), False)


def native_batch_norm_backward(a: OpArgs) -> list[OpLayer]:
    # native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, ...)
    return _bnorm("bwd", a, 1, 2, a.has_tensor(5), False)


def _pool(direction: str, mode: str, a: OpArgs, x_at: int, first: int, dilation_at: Optional[int],
          ceil_at: int) -> list[OpLayer]:
    x = a.tensor(x_at, "the input", (4,))
    window = a.ints(first, "kernel_size", 2)
    strides = a.ints(first + 1, "stride", 2, default=window)
    pads = a.ints(first + 2, "padding", 2)
    if dilation_at is not None and a.ints(dilation_at, "dilation", 2) != (1, 1):
        raise OpError("a dilated pooling (MIOpen's pooling has no dilation)")
    warnings = ("ceil_mode: PyTorch rounds the output size up, MIOpen's pooling rounds down",) \
        if a.value(ceil_at, "ceil_mode") is True else ()
    try:
        problem = PoolProblem(direction=direction, dtype=a.dtype(x_at), n=x[0], c=x[1], in_spatial=x[2:],
                              window=window, pads=pads, strides=strides, mode=mode, layout=a.layout(x_at))
    except ProblemError as e:
        raise OpError(str(e)) from None
    return [OpLayer(problem, warnings)]


def max_pool(a: OpArgs) -> list[OpLayer]:
    # max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
    return _pool("fwd", "max", a, 0, 1, 4, 5)


def max_pool_backward(a: OpArgs) -> list[OpLayer]:
    # max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices)
    return _pool("bwd", "max", a, 1, 2, 5, 6)


def avg_pool(a: OpArgs) -> list[OpLayer]:
    # avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return _pool("fwd", "avg_in" if a.value(5, "count_include_pad") is True else "avg", a, 0, 1, None, 4)


def avg_pool_backward(a: OpArgs) -> list[OpLayer]:
    # avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, ...)
    return _pool("bwd", "avg_in" if a.value(6, "count_include_pad") is True else "avg", a, 1, 2, None, 5)


def _activation(direction: str, mode: int, x_at: int) -> Callable[[OpArgs], list[OpLayer]]:
    def read(a: OpArgs) -> list[OpLayer]:
        x = a.tensor(x_at, "the input", (4,))
        if direction == "bwd" and mode == 3 and a.concrete and a.value(2, "threshold") != 0:
            raise OpError("threshold_backward with a threshold other than 0 is not a ReLU")
        try:
            problem = ActivationProblem(direction=direction, dtype=a.dtype(x_at), n=x[0], c=x[1], in_spatial=x[2:],
                                        mode=mode, layout=a.layout(x_at))
        except ProblemError as e:
            raise OpError(str(e)) from None
        return [OpLayer(problem)]
    return read


def _softmax(direction: str, algorithm: int, x_at: int, dim_at: int) -> Callable[[OpArgs], list[OpLayer]]:
    """``_softmax(self, dim, half_to_float)``, ``_softmax_backward_data(grad_output, output, dim,
    input_dtype)`` (and the log forms): over the channels of a 2-D [N, C] or 4-D tensor, MIOpen's
    channel mode."""
    def read(a: OpArgs) -> list[OpLayer]:
        x = a.tensor(x_at, "the input", (2, 4))
        dim = a.value(dim_at, "dim")
        if dim not in (1, 1 - len(x)) and not (len(x) == 2 and dim == -1):
            raise OpError(f"a softmax over dimension {dim} of {list(x)} (MIOpen's is over the channels)")
        spatial = x[2:] if len(x) == 4 else (1, 1)
        try:
            problem = SoftmaxProblem(direction=direction, dtype=a.dtype(x_at), n=x[0], c=x[1], in_spatial=spatial,
                                     algorithm=algorithm, mode=1)
        except ProblemError as e:
            raise OpError(str(e)) from None
        return [OpLayer(problem)]
    return read


def _layer_norm(direction: str, x_at: int, shape_at: int) -> Callable[[OpArgs], list[OpLayer]]:
    """``native_layer_norm(input, normalized_shape, weight, bias, eps)``,
    ``native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, mask)``."""
    def read(a: OpArgs) -> list[OpLayer]:
        x = a.tensor(x_at, "the input", (2, 3, 4, 5))
        normalized = a.value(shape_at, "normalized_shape")
        if not isinstance(normalized, list) or not normalized or len(normalized) > len(x):
            raise OpError(f"normalized_shape is {normalized!r}")
        eps = a.value(4, "eps") if direction == "fwd" else 1e-5
        try:
            problem = LayerNormProblem(direction=direction, dtype=a.dtype(x_at), shape=x,
                                       normalized_dim=len(x) - len(normalized),
                                       eps=float(eps) if isinstance(eps, (int, float)) else 1e-5, mode=0)
        except ProblemError as e:
            raise OpError(str(e)) from None
        return [OpLayer(problem)]
    return read


#: aten op name -> its reader; the op's kernels are the layers' (innermost such op wins)
LAYER_OPS: dict[str, Callable[[OpArgs], list[OpLayer]]] = {
    "aten::cudnn_convolution": cudnn_convolution,
    "aten::miopen_convolution": miopen_convolution,
    "aten::miopen_depthwise_convolution": miopen_convolution,
    "aten::cudnn_convolution_transpose": cudnn_convolution_transpose,
    "aten::miopen_convolution_transpose": miopen_convolution_transpose,
    "aten::_conv_depthwise2d": conv_depthwise2d,
    "aten::convolution_backward": convolution_backward,
    "aten::cudnn_batch_norm": batch_norm,
    "aten::miopen_batch_norm": batch_norm,
    "aten::native_batch_norm": batch_norm,
    "aten::_native_batch_norm_legit": batch_norm,
    "aten::cudnn_batch_norm_backward": batch_norm_backward,
    "aten::miopen_batch_norm_backward": batch_norm_backward,
    "aten::native_batch_norm_backward": native_batch_norm_backward,
    "aten::max_pool2d_with_indices": max_pool,
    "aten::max_pool2d_with_indices_backward": max_pool_backward,
    "aten::avg_pool2d": avg_pool,
    "aten::avg_pool2d_backward": avg_pool_backward,
    "aten::relu": _activation("fwd", 3, 0),
    "aten::relu_": _activation("fwd", 3, 0),
    "aten::threshold_backward": _activation("bwd", 3, 1),
    "aten::sigmoid": _activation("fwd", 1, 0),
    "aten::sigmoid_backward": _activation("bwd", 1, 1),
    "aten::tanh": _activation("fwd", 2, 0),
    "aten::tanh_backward": _activation("bwd", 2, 1),
    "aten::_softmax": _softmax("fwd", 1, 0, 1),
    "aten::_log_softmax": _softmax("fwd", 2, 0, 1),
    "aten::_softmax_backward_data": _softmax("bwd", 1, 1, 2),
    "aten::_log_softmax_backward_data": _softmax("bwd", 2, 1, 2),
    "aten::native_layer_norm": _layer_norm("fwd", 0, 1),
    "aten::native_layer_norm_backward": _layer_norm("bwd", 1, 2),
}


def op_layers(name: str, args: dict) -> Optional[list[OpLayer]]:
    """The layers of one call of a layer op (None: recorded without shapes); ``OpError`` where
    its arguments do not make one."""
    recorded = OpArgs.of(args)
    if recorded is None:
        return None
    return LAYER_OPS[name](recorded)

"""The layer model: frozen values describing one MIOpen operation.

A *problem* is what MIOpen calls the description of one operation (tensor shapes,
convolution geometry, data type, layout) plus its *direction*.  Every decoder in
``miotui.logs`` produces these values, the driver-command builder in
``miotui.driver`` turns them into ``MIOpenDriver`` argv and back, and the execution
core runs them.  They are hashable, so the catalog can key unique layers on the value
itself; ``key`` gives the same identity as a stable string for export and caching.

Shapes are always given in MIOpen's logical order (N, C, [D,] H, W), whatever the
storage layout: MIOpen prints lengths that way in every log format, and the layout
is a separate field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from types import MappingProxyType
from typing import Any, ClassVar, Union

DTYPES = ("fp32", "fp16", "bf16", "int8", "fp64", "fp8", "bf8", "unknown")
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "fp64": 8, "fp8": 1, "bf8": 1, "unknown": 4}
CONV_DIRECTIONS = ("fwd", "bwd", "wrw")
BNORM_DIRECTIONS = ("fwd_train", "fwd_infer", "bwd")
PLAIN_DIRECTIONS = ("fwd", "bwd")
LAYOUTS_2D = ("NCHW", "NHWC")
LAYOUTS_3D = ("NCDHW", "NDHWC")

#: miopenActivationMode_t, in enum order (the integer is what logs and the driver use).
ACTIVATION_MODES = ("PASTHRU", "LOGISTIC", "TANH", "RELU", "SOFTRELU", "ABS", "POWER",
                    "CLIPPEDRELU", "LEAKYRELU", "ELU")
#: CBAInfer fusion modes (driver ``-F``): which ops the fused plan holds.
FUSION_MODES = {0: "conv+bias+bn+activ", 1: "conv+bn+activ", 2: "bn+activ", 3: "conv+bn",
                4: "conv+bias+activ", 5: "conv+activ", 6: "conv+bias"}
FUSION_CONV_MODES = frozenset({0, 1, 3, 4, 5, 6})
FUSION_BN_MODES = frozenset({0, 1, 2, 3})
FUSION_ACTIV_MODES = frozenset({0, 1, 2, 4, 5})
#: a fusion plan's activation when nothing says otherwise: CBAInfer's defaults (RELU,
#: alpha 1, beta 0, gamma 1), which MIOpen's Command lines never override
FUSION_ACTIV_DEFAULTS: Mapping[str, Union[int, float]] = MappingProxyType(
    {"activ_mode": 3, "activ_alpha": 1.0, "activ_beta": 0.0, "activ_gamma": 1.0})


class ProblemError(ValueError):
    """A problem whose values cannot describe a real MIOpen operation."""


def _check(cond: bool, message: str) -> None:
    if not cond:
        raise ProblemError(message)


def _positive(name: str, value: int) -> None:
    _check(isinstance(value, int) and not isinstance(value, bool), f"{name} must be an integer, got {value!r}")
    _check(value > 0, f"{name} must be positive, got {value}")


def _spatial_tuple(name: str, values: tuple[int, ...], ndim: int, minimum: int) -> None:
    _check(isinstance(values, tuple) and len(values) == ndim,
           f"{name} must have {ndim} values (one per spatial dimension), got {values!r}")
    for v in values:
        _check(isinstance(v, int) and not isinstance(v, bool) and v >= minimum,
               f"{name} values must be integers >= {minimum}, got {values!r}")


def _check_common(op: str, direction: str, directions: tuple[str, ...], dtype: str) -> None:
    _check(direction in directions, f"{op} direction must be one of {', '.join(directions)}, got {direction!r}")
    _check(dtype in DTYPES, f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")


def _check_layout(layout: str, ndim: int, what: str = "layout") -> None:
    allowed = LAYOUTS_2D if ndim == 2 else LAYOUTS_3D
    _check(layout in allowed, f"{what} must be one of {', '.join(allowed)} for {ndim}-D, got {layout!r}")


def default_layout(ndim: int) -> str:
    return "NCHW" if ndim == 2 else "NCDHW"


def _prod(values: tuple[int, ...]) -> int:
    return math.prod(values) if values else 1


class _ProblemBase:
    """Shared behaviour; each subclass is a frozen dataclass."""

    op: ClassVar[str] = ""

    @property
    def key(self) -> str:
        """A stable string identity: op, direction, dtype, layout and every field."""
        parts = [self.op]
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = "x".join(str(v) for v in value)
            parts.append(f"{f.name}={value}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """Every field by name, JSON-ready (tuples become lists)."""
        out: dict[str, Any] = {}
        for name, value in asdict(self).items():  # type: ignore[call-overload]
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    @property
    def element_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]  # type: ignore[attr-defined]

    @property
    def arithmetic_intensity(self) -> float:
        moved = self.bytes_moved  # type: ignore[attr-defined]
        return self.flops / moved if moved else 0.0  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ConvProblem(_ProblemBase):
    """A 2-D or 3-D convolution (normal or transposed) in one direction.

    ``n, c, in_spatial`` describe the driver's input tensor x (for a transposed
    convolution too: MIOpenDriver's ``-c`` is x's channels, ``-k`` y's channels).
    """

    op: ClassVar[str] = "conv"
    direction: str
    dtype: str
    n: int
    c: int
    k: int
    in_spatial: tuple[int, ...]
    filter: tuple[int, ...]
    pads: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    groups: int = 1
    mode: str = "conv"
    trans_output_pads: tuple[int, ...] = ()
    pad_mode: str = "default"
    in_layout: str = ""
    fil_layout: str = ""
    out_layout: str = ""

    def __post_init__(self) -> None:
        _check_common("conv", self.direction, CONV_DIRECTIONS, self.dtype)
        for name in ("n", "c", "k", "groups"):
            _positive(name, getattr(self, name))
        nd = len(self.in_spatial) if isinstance(self.in_spatial, tuple) else -1
        _check(nd in (2, 3), f"convolution must be 2-D or 3-D, got spatial dims {self.in_spatial!r}")
        _spatial_tuple("in_spatial", self.in_spatial, nd, 1)
        _spatial_tuple("filter", self.filter, nd, 1)
        _spatial_tuple("pads", self.pads, nd, 0)
        _spatial_tuple("strides", self.strides, nd, 1)
        _spatial_tuple("dilations", self.dilations, nd, 1)
        _check(self.mode in ("conv", "trans"), f"mode must be conv or trans, got {self.mode!r}")
        _check(self.pad_mode in ("default", "same", "valid"),
               f"pad_mode must be default, same or valid, got {self.pad_mode!r}")
        if not self.trans_output_pads:
            object.__setattr__(self, "trans_output_pads", (0,) * nd)
        _spatial_tuple("trans_output_pads", self.trans_output_pads, nd, 0)
        _check(self.mode == "trans" or not any(self.trans_output_pads),
               "output padding only applies to a transposed convolution")
        for name in ("in_layout", "fil_layout", "out_layout"):
            if not getattr(self, name):
                object.__setattr__(self, name, default_layout(nd))
            _check_layout(getattr(self, name), nd, name)
        _check(self.c % self.groups == 0, f"groups ({self.groups}) must divide input channels C ({self.c})")
        _check(self.k % self.groups == 0, f"groups ({self.groups}) must divide output channels K ({self.k})")
        for i, o in enumerate(self.out_spatial):
            _check(o > 0, f"output size would be {o} along spatial axis {i} "
                          f"(input {self.in_spatial[i]}, filter {self.filter[i]}, pad {self.pads[i]}, "
                          f"stride {self.strides[i]}, dilation {self.dilations[i]})")
        for i, (adj, s, d) in enumerate(zip(self.trans_output_pads, self.strides, self.dilations)):
            _check(adj < max(s, d), f"output padding {adj} on axis {i} must be smaller than stride or dilation")

    @property
    def ndim(self) -> int:
        return len(self.in_spatial)

    @property
    def layout(self) -> str:
        return self.in_layout

    @property
    def out_spatial(self) -> tuple[int, ...]:
        out = []
        for i, f, p, s, d, adj in zip(self.in_spatial, self.filter, self.pads, self.strides,
                                      self.dilations, self.trans_output_pads):
            eff = d * (f - 1) + 1
            if self.mode == "trans":
                out.append((i - 1) * s - 2 * p + eff + adj)
            elif self.pad_mode == "same":
                out.append(-(-i // s))
            elif self.pad_mode == "valid":
                out.append(-(-(i - eff + 1) // s))
            else:
                out.append((i + 2 * p - eff) // s + 1)
        return tuple(out)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.n, self.k) + self.out_spatial

    @property
    def weight_shape(self) -> tuple[int, ...]:
        """MIOpen's weight lengths: [K, C/G, ...] normally, [C, K/G, ...] when transposed."""
        if self.mode == "trans":
            return (self.c, self.k // self.groups) + self.filter
        return (self.k, self.c // self.groups) + self.filter

    @property
    def flops(self) -> int:
        """2 multiply-adds per tap of the underlying (non-transposed) convolution; same for all directions."""
        small = self.in_spatial if self.mode == "trans" else self.out_spatial
        return 2 * self.n * self.k * (self.c // self.groups) * _prod(self.filter) * _prod(small)

    @property
    def bytes_moved(self) -> int:
        elems = _prod(self.input_shape) + _prod(self.weight_shape) + _prod(self.output_shape)
        return elems * self.element_bytes


@dataclass(frozen=True)
class PoolProblem(_ProblemBase):
    op: ClassVar[str] = "pool"
    direction: str
    dtype: str
    n: int
    c: int
    in_spatial: tuple[int, ...]
    window: tuple[int, ...]
    pads: tuple[int, ...]
    strides: tuple[int, ...]
    mode: str = "max"
    layout: str = ""
    index_mode: int = 0

    def __post_init__(self) -> None:
        _check_common("pool", self.direction, PLAIN_DIRECTIONS, self.dtype)
        _positive("n", self.n)
        _positive("c", self.c)
        nd = len(self.in_spatial) if isinstance(self.in_spatial, tuple) else -1
        _check(nd in (2, 3), f"pooling must be 2-D or 3-D, got spatial dims {self.in_spatial!r}")
        _spatial_tuple("in_spatial", self.in_spatial, nd, 1)
        _spatial_tuple("window", self.window, nd, 1)
        _spatial_tuple("pads", self.pads, nd, 0)
        _spatial_tuple("strides", self.strides, nd, 1)
        _check(self.mode in ("max", "avg", "avg_in"), f"pooling mode must be max, avg or avg_in, got {self.mode!r}")
        _check(self.index_mode in (0, 1), f"index mode must be 0 (mask) or 1 (image), got {self.index_mode!r}")
        if not self.layout:
            object.__setattr__(self, "layout", default_layout(nd))
        _check_layout(self.layout, nd)
        for i, o in enumerate(self.out_spatial):
            _check(o > 0, f"pooling output size would be {o} along spatial axis {i}")

    @property
    def ndim(self) -> int:
        return len(self.in_spatial)

    @property
    def out_spatial(self) -> tuple[int, ...]:
        return tuple((i + 2 * p - w) // s + 1 for i, w, p, s in
                     zip(self.in_spatial, self.window, self.pads, self.strides))

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.out_spatial

    @property
    def flops(self) -> int:
        return _prod(self.output_shape) * _prod(self.window)

    @property
    def bytes_moved(self) -> int:
        return (_prod(self.input_shape) + _prod(self.output_shape)) * self.element_bytes


@dataclass(frozen=True)
class BatchNormProblem(_ProblemBase):
    """Batch normalisation. ``save``/``running`` say whether saved mean/inv-variance and
    running mean/variance buffers take part, in MIOpenDriver's meaning of ``-s``/``-r``."""

    op: ClassVar[str] = "bnorm"
    direction: str
    dtype: str
    n: int
    c: int
    in_spatial: tuple[int, ...]
    mode: str = "spatial"
    layout: str = ""
    save: bool = False
    running: bool = False
    param_dtype: str = ""

    def __post_init__(self) -> None:
        _check_common("bnorm", self.direction, BNORM_DIRECTIONS, self.dtype)
        _positive("n", self.n)
        _positive("c", self.c)
        nd = len(self.in_spatial) if isinstance(self.in_spatial, tuple) else -1
        _check(nd in (2, 3), f"batch norm must be 2-D or 3-D, got spatial dims {self.in_spatial!r}")
        _spatial_tuple("in_spatial", self.in_spatial, nd, 1)
        _check(self.mode in ("spatial", "per_activation"),
               f"batch norm mode must be spatial or per_activation, got {self.mode!r}")
        if not self.layout:
            object.__setattr__(self, "layout", default_layout(nd))
        _check_layout(self.layout, nd)
        if not self.param_dtype:
            object.__setattr__(self, "param_dtype", self.dtype)
        _check(self.param_dtype in DTYPES, f"param_dtype must be one of {', '.join(DTYPES)}")

    @property
    def ndim(self) -> int:
        return len(self.in_spatial)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    output_shape = input_shape

    @property
    def flops(self) -> int:
        per = {"fwd_infer": 2, "fwd_train": 5, "bwd": 8}[self.direction]
        return per * _prod(self.input_shape)

    @property
    def bytes_moved(self) -> int:
        tensors = 3 if self.direction == "bwd" else 2
        return tensors * _prod(self.input_shape) * self.element_bytes


@dataclass(frozen=True)
class ActivationProblem(_ProblemBase):
    op: ClassVar[str] = "activ"
    direction: str
    dtype: str
    n: int
    c: int
    in_spatial: tuple[int, ...]
    mode: int = 3
    alpha: float = 1.0
    beta: float = 1.0
    gamma: float = 1.0
    layout: str = "NCHW"

    def __post_init__(self) -> None:
        _check_common("activ", self.direction, PLAIN_DIRECTIONS, self.dtype)
        _positive("n", self.n)
        _positive("c", self.c)
        _spatial_tuple("in_spatial", self.in_spatial, 2, 1)
        _check(isinstance(self.mode, int) and 0 <= self.mode < len(ACTIVATION_MODES),
               f"activation mode must be 0..{len(ACTIVATION_MODES) - 1}, got {self.mode!r}")
        for name in ("alpha", "beta", "gamma"):
            _check(math.isfinite(getattr(self, name)), f"activation {name} must be finite")
        _check_layout(self.layout, 2)

    @property
    def mode_name(self) -> str:
        return ACTIVATION_MODES[self.mode]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    output_shape = input_shape

    @property
    def flops(self) -> int:
        return _prod(self.input_shape)

    @property
    def bytes_moved(self) -> int:
        return (2 if self.direction == "fwd" else 4) * _prod(self.input_shape) * self.element_bytes


@dataclass(frozen=True)
class LRNProblem(_ProblemBase):
    op: ClassVar[str] = "lrn"
    direction: str
    dtype: str
    n: int
    c: int
    in_spatial: tuple[int, ...]
    mode: str = "within"
    lrn_n: int = 5
    alpha: float = 0.001
    beta: float = 0.75
    k: float = 1.0

    def __post_init__(self) -> None:
        _check_common("lrn", self.direction, PLAIN_DIRECTIONS, self.dtype)
        _positive("n", self.n)
        _positive("c", self.c)
        _positive("lrn_n", self.lrn_n)
        _spatial_tuple("in_spatial", self.in_spatial, 2, 1)
        _check(self.mode in ("within", "cross"), f"LRN mode must be within or cross, got {self.mode!r}")

    layout: ClassVar[str] = "NCHW"

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    output_shape = input_shape

    @property
    def flops(self) -> int:
        window = self.lrn_n if self.mode == "cross" else self.lrn_n * self.lrn_n
        return 2 * window * _prod(self.input_shape)

    @property
    def bytes_moved(self) -> int:
        return 2 * _prod(self.input_shape) * self.element_bytes


@dataclass(frozen=True)
class SoftmaxProblem(_ProblemBase):
    op: ClassVar[str] = "softmax"
    direction: str
    dtype: str
    n: int
    c: int
    in_spatial: tuple[int, ...]
    algorithm: int = 1
    mode: int = 1
    alpha: float = 1.0
    beta: float = 0.0

    def __post_init__(self) -> None:
        _check_common("softmax", self.direction, PLAIN_DIRECTIONS, self.dtype)
        _positive("n", self.n)
        _positive("c", self.c)
        _spatial_tuple("in_spatial", self.in_spatial, 2, 1)
        _check(self.algorithm in (0, 1, 2), "softmax algorithm must be 0 (fast), 1 (accurate) or 2 (log)")
        _check(self.mode in (0, 1), "softmax mode must be 0 (instance) or 1 (channel)")

    layout: ClassVar[str] = "NCHW"

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    output_shape = input_shape

    @property
    def flops(self) -> int:
        return 3 * _prod(self.input_shape)

    @property
    def bytes_moved(self) -> int:
        return 2 * _prod(self.input_shape) * self.element_bytes


@dataclass(frozen=True)
class FusionProblem(_ProblemBase):
    """A CBAInfer fusion plan (inference only). Conv fields are unused (empty) in mode 2."""

    op: ClassVar[str] = "fusion"
    fusion_mode: int
    dtype: str
    n: int
    c: int
    in_spatial: tuple[int, ...]
    k: int = 0
    filter: tuple[int, ...] = ()
    pads: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    dilations: tuple[int, ...] = ()
    groups: int = 1
    bn_mode: str = "spatial"
    direction: str = "fwd"
    #: the plan's activation (MIOpen mode number and coefficients); CBAInfer's defaults
    activ_mode: int = 3
    activ_alpha: float = 1.0
    activ_beta: float = 0.0
    activ_gamma: float = 1.0

    def __post_init__(self) -> None:
        _check(self.fusion_mode in FUSION_MODES, f"fusion mode must be 0..6, got {self.fusion_mode!r}")
        if self.fusion_mode not in FUSION_ACTIV_MODES:  # the plan has no activation
            for name, value in FUSION_ACTIV_DEFAULTS.items():
                object.__setattr__(self, name, value)
        _check(isinstance(self.activ_mode, int) and 0 <= self.activ_mode < len(ACTIVATION_MODES),
               f"activation mode must be 0..{len(ACTIVATION_MODES) - 1}, got {self.activ_mode!r}")
        for name in ("activ_alpha", "activ_beta", "activ_gamma"):
            value = getattr(self, name)
            _check(isinstance(value, (int, float)) and math.isfinite(value), f"fusion {name} must be finite")
            object.__setattr__(self, name, float(value))
        _check_common("fusion", self.direction, ("fwd",), self.dtype)
        _positive("n", self.n)
        _positive("c", self.c)
        _spatial_tuple("in_spatial", self.in_spatial, 2, 1)
        if self.fusion_mode not in FUSION_BN_MODES:
            object.__setattr__(self, "bn_mode", "none")  # the plan has no batch norm
        _check(self.bn_mode in ("spatial", "per_activation", "none"),
               "bn_mode must be spatial or per_activation")
        if self.has_conv:
            self.conv  # validates the convolution part

    layout: ClassVar[str] = "NCHW"

    @property
    def has_conv(self) -> bool:
        return self.fusion_mode in FUSION_CONV_MODES

    @property
    def conv(self) -> ConvProblem:
        _check(self.has_conv, f"fusion mode {self.fusion_mode} has no convolution")
        return ConvProblem("fwd", self.dtype, self.n, self.c, self.k, self.in_spatial, self.filter,
                           self.pads, self.strides, self.dilations, self.groups)

    @property
    def description(self) -> str:
        return FUSION_MODES[self.fusion_mode]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.conv.output_shape if self.has_conv else self.input_shape

    @property
    def flops(self) -> int:
        return self.conv.flops if self.has_conv else 4 * _prod(self.input_shape)

    @property
    def bytes_moved(self) -> int:
        if self.has_conv:
            return self.conv.bytes_moved
        return 2 * _prod(self.input_shape) * self.element_bytes


def _cached_hash(self: _ProblemBase) -> int:
    """Hash once per value: the catalog looks a problem up for every sighting, and a
    dataclass hash would rebuild the tuple of all fields each time."""
    h = self.__dict__.get("_hash")
    if h is None:
        h = hash((self.op,) + tuple(getattr(self, f.name) for f in fields(self)))  # type: ignore[arg-type]
        object.__setattr__(self, "_hash", h)
    return h


Problem = Union[ConvProblem, PoolProblem, BatchNormProblem, ActivationProblem, LRNProblem,
                SoftmaxProblem, FusionProblem]
PROBLEM_TYPES = (ConvProblem, PoolProblem, BatchNormProblem, ActivationProblem, LRNProblem,
                 SoftmaxProblem, FusionProblem)
for _cls in PROBLEM_TYPES:
    _cls.__hash__ = _cached_hash  # type: ignore[method-assign]

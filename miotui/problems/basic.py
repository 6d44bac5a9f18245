"""The operations MIOpen has logged since 2017 besides convolution: pooling, batch norm,
activation, LRN and softmax."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from miotui.problems.base import (
    ACTIVATION_MODES,
    BNORM_DIRECTIONS,
    DTYPES,
    PLAIN_DIRECTIONS,
    ProblemBase,
    ProblemError,
    check,
    check_common,
    check_layout,
    check_positive,
    check_spatial,
    default_layout,
    prod,
)


@dataclass(frozen=True)
class PoolProblem(ProblemBase):
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
        check_common("pool", self.direction, PLAIN_DIRECTIONS, self.dtype)
        check_positive("n", self.n)
        check_positive("c", self.c)
        nd = len(self.in_spatial) if isinstance(self.in_spatial, tuple) else -1
        check(nd in (2, 3), lambda: f"pooling must be 2-D or 3-D, got spatial dims {self.in_spatial!r}")
        check_spatial("in_spatial", self.in_spatial, nd, 1)
        check_spatial("window", self.window, nd, 1)
        check_spatial("pads", self.pads, nd, 0)
        check_spatial("strides", self.strides, nd, 1)
        check(self.mode in ("max", "avg", "avg_in"),
              lambda: f"pooling mode must be max, avg or avg_in, got {self.mode!r}")
        check(self.index_mode in (0, 1), lambda: f"index mode must be 0 (mask) or 1 (image), got {self.index_mode!r}")
        if not self.layout:
            object.__setattr__(self, "layout", default_layout(nd))
        check_layout(self.layout, nd)

    @property
    def ndim(self) -> int:
        return len(self.in_spatial)

    @property
    def out_spatial(self) -> tuple[int, ...]:
        """As MIOpen computes it (``PoolingDescriptor::GetForwardOutputDim``): never below 1."""
        return tuple(max(1, (i + 2 * p - w) // s + 1) for i, w, p, s in
                     zip(self.in_spatial, self.window, self.pads, self.strides, strict=True))

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.out_spatial

    @property
    def flops(self) -> int:
        return prod(self.output_shape) * prod(self.window)

    @property
    def bytes_moved(self) -> int:
        return (prod(self.input_shape) + prod(self.output_shape)) * self.element_bytes


@dataclass(frozen=True)
class BatchNormProblem(ProblemBase):
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
        check_common("bnorm", self.direction, BNORM_DIRECTIONS, self.dtype)
        check_positive("n", self.n)
        check_positive("c", self.c)
        nd = len(self.in_spatial) if isinstance(self.in_spatial, tuple) else -1
        check(nd in (2, 3), lambda: f"batch norm must be 2-D or 3-D, got spatial dims {self.in_spatial!r}")
        check_spatial("in_spatial", self.in_spatial, nd, 1)
        check(self.mode in ("spatial", "per_activation"),
               lambda: f"batch norm mode must be spatial or per_activation, got {self.mode!r}")
        if not self.layout:
            object.__setattr__(self, "layout", default_layout(nd))
        check_layout(self.layout, nd)
        if not self.param_dtype:
            object.__setattr__(self, "param_dtype", self.dtype)
        check(self.param_dtype in DTYPES, lambda: f"param_dtype must be one of {', '.join(DTYPES)}")

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
        return per * prod(self.input_shape)

    @property
    def bytes_moved(self) -> int:
        tensors = 3 if self.direction == "bwd" else 2
        return tensors * prod(self.input_shape) * self.element_bytes


@dataclass(frozen=True)
class ActivationProblem(ProblemBase):
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
        check_common("activ", self.direction, PLAIN_DIRECTIONS, self.dtype)
        check_positive("n", self.n)
        check_positive("c", self.c)
        check_spatial("in_spatial", self.in_spatial, 2, 1)
        check(isinstance(self.mode, int) and 0 <= self.mode < len(ACTIVATION_MODES),
               lambda: f"activation mode must be 0..{len(ACTIVATION_MODES) - 1}, got {self.mode!r}")
        for name in ("alpha", "beta", "gamma"):
            if not math.isfinite(getattr(self, name)):
                raise ProblemError(f"activation {name} must be finite")
        check_layout(self.layout, 2)

    @property
    def mode_name(self) -> str:
        return ACTIVATION_MODES[self.mode]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    output_shape = input_shape

    @property
    def flops(self) -> int:
        return prod(self.input_shape)

    @property
    def bytes_moved(self) -> int:
        return (2 if self.direction == "fwd" else 4) * prod(self.input_shape) * self.element_bytes


@dataclass(frozen=True)
class LRNProblem(ProblemBase):
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
        check_common("lrn", self.direction, PLAIN_DIRECTIONS, self.dtype)
        check_positive("n", self.n)
        check_positive("c", self.c)
        check_positive("lrn_n", self.lrn_n)
        check_spatial("in_spatial", self.in_spatial, 2, 1)
        check(self.mode in ("within", "cross"), lambda: f"LRN mode must be within or cross, got {self.mode!r}")

    layout: ClassVar[str] = "NCHW"

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    output_shape = input_shape

    @property
    def flops(self) -> int:
        window = self.lrn_n if self.mode == "cross" else self.lrn_n * self.lrn_n
        return 2 * window * prod(self.input_shape)

    @property
    def bytes_moved(self) -> int:
        return 2 * prod(self.input_shape) * self.element_bytes


@dataclass(frozen=True)
class SoftmaxProblem(ProblemBase):
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
        check_common("softmax", self.direction, PLAIN_DIRECTIONS, self.dtype)
        check_positive("n", self.n)
        check_positive("c", self.c)
        check_spatial("in_spatial", self.in_spatial, 2, 1)
        check(self.algorithm in (0, 1, 2), "softmax algorithm must be 0 (fast), 1 (accurate) or 2 (log)")
        check(self.mode in (0, 1), "softmax mode must be 0 (instance) or 1 (channel)")

    layout: ClassVar[str] = "NCHW"

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.n, self.c) + self.in_spatial

    output_shape = input_shape

    @property
    def flops(self) -> int:
        return 3 * prod(self.input_shape)

    @property
    def bytes_moved(self) -> int:
        return 2 * prod(self.input_shape) * self.element_bytes



"""Fusion plans (``CBAInfer`` / ``CAInfer``): a convolution, bias, batch norm and activation run as one."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Union

from miotui.problems.base import (
    ACTIVATION_MODES,
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
from miotui.problems.conv import ConvProblem

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


@dataclass(frozen=True)
class FusionProblem(ProblemBase):
    """A CBAInfer fusion plan (inference only). Conv fields are unused (empty) in mode 2."""

    op: ClassVar[str] = "fusion"
    memory_bound: ClassVar[bool] = False
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
    #: the input layout (the newest driver's 3-D and NHWC plans); NC(D)HW by default
    layout: str = ""
    pad_mode: str = "default"

    def __post_init__(self) -> None:
        check(self.fusion_mode in FUSION_MODES, lambda: f"fusion mode must be 0..6, got {self.fusion_mode!r}")
        if self.fusion_mode not in FUSION_ACTIV_MODES:  # the plan has no activation
            for name, value in FUSION_ACTIV_DEFAULTS.items():
                object.__setattr__(self, name, value)
        check(isinstance(self.activ_mode, int) and 0 <= self.activ_mode < len(ACTIVATION_MODES),
               lambda: f"activation mode must be 0..{len(ACTIVATION_MODES) - 1}, got {self.activ_mode!r}")
        for name in ("activ_alpha", "activ_beta", "activ_gamma"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ProblemError(f"fusion {name} must be finite")
            object.__setattr__(self, name, float(value))
        check_common("fusion", self.direction, ("fwd",), self.dtype)
        check_positive("n", self.n)
        check_positive("c", self.c)
        nd = len(self.in_spatial) if isinstance(self.in_spatial, tuple) else -1
        check(nd in (2, 3), lambda: f"a fusion plan must be 2-D or 3-D, got spatial dims {self.in_spatial!r}")
        check_spatial("in_spatial", self.in_spatial, nd, 1)
        if not self.layout:
            object.__setattr__(self, "layout", default_layout(nd))
        check_layout(self.layout, nd)
        check(self.pad_mode in ("default", "same", "valid"), "pad_mode must be default, same or valid")
        if self.fusion_mode not in FUSION_BN_MODES:
            object.__setattr__(self, "bn_mode", "none")  # the plan has no batch norm
        check(self.bn_mode in ("spatial", "per_activation", "none"),
               "bn_mode must be spatial or per_activation")
        if self.has_conv:
            _ = self.conv  # validates the convolution part

    @property
    def has_conv(self) -> bool:
        return self.fusion_mode in FUSION_CONV_MODES

    @property
    def conv(self) -> ConvProblem:
        check(self.has_conv, lambda: f"fusion mode {self.fusion_mode} has no convolution")
        return ConvProblem("fwd", self.dtype, self.n, self.c, self.k, self.in_spatial, self.filter,
                           self.pads, self.strides, self.dilations, self.groups, pad_mode=self.pad_mode,
                           in_layout=self.layout, fil_layout=self.layout, out_layout=self.layout)

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
        return self.conv.flops if self.has_conv else 4 * prod(self.input_shape)

    @property
    def bytes_moved(self) -> int:
        if self.has_conv:
            return self.conv.bytes_moved
        return 2 * prod(self.input_shape) * self.element_bytes



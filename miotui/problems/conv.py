"""Convolutions: 2-D and 3-D, normal and transposed, grouped, in the three directions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from miotui.problems.base import (
    CONV_DIRECTIONS,
    DTYPES,
    LAYOUTS_2D,
    MAX_DIM,
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

_TUPLE, _TWO, _INT = {tuple}, {2}, {int}


@dataclass(frozen=True)
class ConvProblem(ProblemBase):
    """A 2-D or 3-D convolution (normal or transposed) in one direction.

    ``n, c, in_spatial`` describe the driver's input tensor x (for a transposed
    convolution too: MIOpenDriver's ``-c`` is x's channels, ``-k`` y's channels).
    """

    op: ClassVar[str] = "conv"
    memory_bound: ClassVar[bool] = False
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
        if not self.plainly_valid_2d():
            self.validate()

    def validate(self) -> None:
        """Every rule a convolution MIOpen ran obeys (``ProblemError`` naming the field), and
        the defaults of omitted layouts and output padding filled in."""
        check_common("conv", self.direction, CONV_DIRECTIONS, self.dtype)
        for name in ("n", "c", "k", "groups"):
            check_positive(name, getattr(self, name))
        nd = len(self.in_spatial) if isinstance(self.in_spatial, tuple) else -1
        check(nd in (2, 3), lambda: f"convolution must be 2-D or 3-D, got spatial dims {self.in_spatial!r}")
        check_spatial("in_spatial", self.in_spatial, nd, 1)
        check_spatial("filter", self.filter, nd, 1)
        check_spatial("pads", self.pads, nd, 0)
        check_spatial("strides", self.strides, nd, 1)
        check_spatial("dilations", self.dilations, nd, 1)
        check(self.mode in ("conv", "trans"), lambda: f"mode must be conv or trans, got {self.mode!r}")
        check(self.pad_mode in ("default", "same", "valid"),
               lambda: f"pad_mode must be default, same or valid, got {self.pad_mode!r}")
        if not self.trans_output_pads:
            object.__setattr__(self, "trans_output_pads", (0,) * nd)
        check_spatial("trans_output_pads", self.trans_output_pads, nd, 0)
        check(self.mode == "trans" or not any(self.trans_output_pads),
               "output padding only applies to a transposed convolution")
        for name in ("in_layout", "fil_layout", "out_layout"):
            if not getattr(self, name):
                object.__setattr__(self, name, default_layout(nd))
            check_layout(getattr(self, name), nd, name)
        check(self.c % self.groups == 0, lambda: f"groups ({self.groups}) must divide input channels C ({self.c})")
        check(self.k % self.groups == 0, lambda: f"groups ({self.groups}) must divide output channels K ({self.k})")
        if self.pad_mode == "valid" and self.mode == "conv":
            for i, (size, f, d) in enumerate(zip(self.in_spatial, self.filter, self.dilations, strict=True)):
                if size < d * (f - 1) + 1:
                    raise ProblemError(f"a 'valid' convolution needs an input at least as large as its filter along "
                                       f"spatial axis {i} (input {size}, filter {f}, dilation {d})")
        for i, (adj, s, d) in enumerate(zip(self.trans_output_pads, self.strides, self.dilations, strict=True)):
            if adj >= max(s, d):
                raise ProblemError(f"output padding {adj} on axis {i} must be smaller than stride or dilation")

    def plainly_valid_2d(self) -> bool:
        """Whether this is the common case, valid on its face: a 2-D convolution (not
        transposed) with the default padding mode, every layout given and 2-D, and every
        length a plain int in range.  A log of many distinct layers builds one problem per
        line, and this costs a fraction of the full checks, which anything else goes through
        (and which give the same verdict on this case: tests/unit/test_problems.py)."""
        spatial = (self.in_spatial, self.filter, self.pads, self.strides, self.dilations, self.trans_output_pads)
        if set(map(type, spatial)) != _TUPLE or set(map(len, spatial)) != _TWO:
            return False
        (h, w), (y, x), (ph, pw), (sh, sw), (dh, dw), (ah, aw) = spatial
        n, c, k, g = self.n, self.c, self.k, self.groups
        positive = (n, c, k, g, h, w, y, x, sh, sw, dh, dw, ph + 1, pw + 1) if type(ph) is int is type(pw) else ()
        return (bool(positive) and set(map(type, positive)) == _INT and 0 < min(positive)
                and max(positive) <= MAX_DIM and ah == 0 == aw and type(ah) is int is type(aw)
                and self.mode == "conv" and self.pad_mode == "default"
                and self.direction in CONV_DIRECTIONS and self.dtype in DTYPES
                and self.in_layout in LAYOUTS_2D and self.fil_layout in LAYOUTS_2D and self.out_layout in LAYOUTS_2D
                and c % g == 0 and k % g == 0)

    @property
    def ndim(self) -> int:
        return len(self.in_spatial)

    @property
    def layout(self) -> str:
        return self.in_layout

    @property
    def out_spatial(self) -> tuple[int, ...]:
        """The output size as MIOpen computes it (``ConvolutionDescriptor::
        GetForwardOutputTensor``): never below 1, for transposed convolutions too, so a
        layer whose filter is larger than its padded input still has a 1-pixel output,
        as it does in MIOpen (a problem MIOpen accepted is never rejected here)."""
        return tuple(max(1, size) for size in self._unclamped_out())

    @property
    def output_clamped(self) -> bool:
        """Whether MIOpen's clamp to 1 decided an output size (the filter reaches past the
        padded input): such a layer's taps outside the input read zeros."""
        return self.out_spatial != self._unclamped_out()

    def _unclamped_out(self) -> tuple[int, ...]:
        out = []
        for i, f, p, s, d, adj in zip(self.in_spatial, self.filter, self.pads, self.strides,
                                      self.dilations, self.trans_output_pads, strict=True):
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
        return 2 * self.n * self.k * (self.c // self.groups) * prod(self.filter) * prod(small)

    @property
    def bytes_moved(self) -> int:
        elems = prod(self.input_shape) + prod(self.weight_shape) + prod(self.output_shape)
        return elems * self.element_bytes



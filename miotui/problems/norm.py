"""Layer norm (and its add / T5 forms) and group norm: the normalisations MIOpen added in
2024 (ROCm 6.0-6.2) for transformers and diffusion models.

Their shapes are whole tensors rather than N, C, H, W fields: layer norm takes a tensor of
2 to 5 dimensions and normalises over the dimensions from ``normalized_dim`` on; group norm
normalises each of ``num_groups`` channel groups over the spatial dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from miotui.problems.base import (
    PLAIN_DIRECTIONS,
    ProblemBase,
    check,
    check_common,
    check_finite,
    check_positive,
    check_shape,
    prod,
)

#: the three layer-norm families MIOpen has, each its own driver and op name
LAYERNORM_VARIANTS = ("layernorm", "addlayernorm", "t5layernorm")
#: miopenNormMode_t
NORM_MODES = {0: "elementwise affine", 1: "weight and bias", 2: "elementwise affine, add",
              3: "weight and bias, add", 4: "T5 elementwise affine", 5: "T5 weight"}


@dataclass(frozen=True)
class LayerNormProblem(ProblemBase):
    """``variant`` is the op: ``layernorm``, ``addlayernorm`` (normalises x + x2) or
    ``t5layernorm`` (RMS norm: no mean).  Normalised over ``shape[normalized_dim:]``."""

    direction: str
    dtype: str
    shape: tuple[int, ...]
    normalized_dim: int = 1
    eps: float = 1e-5
    mode: int = 0
    variant: str = "layernorm"
    layout: str = ""

    def __post_init__(self) -> None:
        check(self.variant in LAYERNORM_VARIANTS,
              f"layer norm variant must be one of {', '.join(LAYERNORM_VARIANTS)}, got {self.variant!r}")
        check_common(self.variant, self.direction, PLAIN_DIRECTIONS, self.dtype)
        check_shape("shape", self.shape, 2, 5)
        check(isinstance(self.normalized_dim, int) and 0 <= self.normalized_dim < len(self.shape),
              f"normalized_dim must be 0..{len(self.shape) - 1}, got {self.normalized_dim!r}")
        check_finite("eps", self.eps)
        check(self.mode in NORM_MODES, f"norm mode must be one of {sorted(NORM_MODES)}, got {self.mode!r}")

    @property
    def op(self) -> str:  # type: ignore[override]
        return self.variant

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.shape

    output_shape = input_shape

    @property
    def inner(self) -> int:
        """Elements normalised together (one mean and variance each)."""
        return prod(self.shape[self.normalized_dim:])

    @property
    def flops(self) -> int:
        return (8 if self.direction == "fwd" else 12) * prod(self.shape)

    @property
    def bytes_moved(self) -> int:
        tensors = 3 if self.variant == "addlayernorm" else 2
        if self.direction == "bwd":
            tensors += 1
        return (tensors * prod(self.shape) + 2 * self.inner) * self.element_bytes


@dataclass(frozen=True)
class GroupNormProblem(ProblemBase):
    """Group norm over an N, C[, D], H, W tensor: ``num_groups`` groups of C/num_groups channels."""

    op: ClassVar[str] = "groupnorm"
    direction: str
    dtype: str
    shape: tuple[int, ...]
    num_groups: int = 1
    eps: float = 1e-5
    mode: int = 0
    layout: str = ""

    def __post_init__(self) -> None:
        check_common("groupnorm", self.direction, PLAIN_DIRECTIONS, self.dtype)
        check_shape("shape", self.shape, 2, 5)
        check_positive("num_groups", self.num_groups)
        check(self.shape[1] % self.num_groups == 0,
              f"num_groups ({self.num_groups}) must divide the channels ({self.shape[1]})")
        check_finite("eps", self.eps)
        check(self.mode in (0, 1), f"group norm mode must be 0 or 1, got {self.mode!r}")

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.shape

    output_shape = input_shape

    @property
    def flops(self) -> int:
        return 8 * prod(self.shape)

    @property
    def bytes_moved(self) -> int:
        return 2 * prod(self.shape) * self.element_bytes

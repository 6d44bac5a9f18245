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


#: what MIOpen's Command line for a norm does not carry although the API block of the same call
#: does (eps, and layer norm's first normalised dimension; T5 backward is logged as forward):
#: the fields two forms of one call may disagree on (``formats.miopen.calls.call_signature``)
_NORM_LOSSY = frozenset({"eps", "normalized_dim", "missing"})


@dataclass(frozen=True)
class LayerNormProblem(ProblemBase):
    """``variant`` is the op: ``layernorm``, ``addlayernorm`` (normalises x + x2) or
    ``t5layernorm`` (RMS norm: no mean).  Normalised over ``shape[normalized_dim:]``.

    ``missing`` names what the log did not say and the driver needs: MIOpen's Command line
    never prints ``normalized_dim`` (its API block does), so a layer known only from that
    line has ``normalized_dim`` -1 and ``("normalized_dim",)`` here, and no runnable command.
    T5 layer norm always normalises the last dimension (``normalized_dim`` = rank - 1).
    """

    direction: str
    dtype: str
    shape: tuple[int, ...]
    normalized_dim: int = 1
    eps: float = 1e-5
    mode: int = 0
    variant: str = "layernorm"
    layout: str = ""
    missing: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check(self.variant in LAYERNORM_VARIANTS,
              f"layer norm variant must be one of {', '.join(LAYERNORM_VARIANTS)}, got {self.variant!r}")
        check_common(self.variant, self.direction, PLAIN_DIRECTIONS, self.dtype)
        check_shape("shape", self.shape, 2, 5)
        check(isinstance(self.missing, tuple) and all(isinstance(m, str) for m in self.missing),
              "missing must be a tuple of names")
        unknown_dim = self.normalized_dim == -1 and "normalized_dim" in self.missing
        check(isinstance(self.normalized_dim, int) and (unknown_dim or 0 <= self.normalized_dim < len(self.shape)),
              f"normalized_dim must be 0..{len(self.shape) - 1}, got {self.normalized_dim!r}")
        check_finite("eps", self.eps)
        check(self.mode in NORM_MODES, f"norm mode must be one of {sorted(NORM_MODES)}, got {self.mode!r}")

    @property
    def lossy_fields(self) -> frozenset[str]:
        """Fields one form of a call may lack although another form of it has them (MIOpen
        logs T5 layer norm's backward as forward, so there the direction too)."""
        return _NORM_LOSSY | ({"direction"} if self.variant == "t5layernorm" else set())

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
        """Elements normalised together (one mean and variance each); the last dimension
        when ``normalized_dim`` is not known."""
        return prod(self.shape[self.normalized_dim:]) if self.normalized_dim >= 0 else self.shape[-1]

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
    def lossy_fields(self) -> frozenset[str]:
        """MIOpen's Command line for group norm never prints eps."""
        return frozenset({"eps"})

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

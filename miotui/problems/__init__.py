"""The layer model: frozen values describing one MIOpen operation.

A *problem* is what MIOpen calls the description of one operation (tensor shapes,
convolution geometry, data type, layout) plus its *direction*.  Every decoder in
``miotui.formats`` produces these values, the driver-command builder in
``miotui.driver`` turns them into ``MIOpenDriver`` argv and back, and the execution
core runs them; what each package does per problem type is that type's family record
(``miotui.families``).  They are hashable, so the catalog can key unique layers on the value
itself; ``key`` gives the same identity as a stable string for export and caching.

Shapes are always given in MIOpen's logical order (N, C, [D,] H, W), whatever the
storage layout: MIOpen prints lengths that way in every log format, and the layout
is a separate field.
"""

from __future__ import annotations

from typing import Union

from miotui.problems.base import (
    ACTIVATION_MODES,
    BNORM_DIRECTIONS,
    CONV_DIRECTIONS,
    DTYPE_BYTES,
    DTYPES,
    LAYOUTS_2D,
    LAYOUTS_3D,
    PLAIN_DIRECTIONS,
    ProblemBase,
    ProblemError,
    cached_hash,
    default_layout,
    with_quick_equality,
)
from miotui.problems.basic import ActivationProblem, BatchNormProblem, LRNProblem, PoolProblem, SoftmaxProblem
from miotui.problems.conv import ConvProblem
from miotui.problems.fusion import (
    FUSION_ACTIV_DEFAULTS,
    FUSION_ACTIV_MODES,
    FUSION_BN_MODES,
    FUSION_CONV_MODES,
    FUSION_MODES,
    FusionProblem,
)
from miotui.problems.norm import LAYERNORM_VARIANTS, NORM_MODES, GroupNormProblem, LayerNormProblem
from miotui.problems.ops import REDUCE_OPS, OpProblem, ReduceProblem
from miotui.problems.rnn import RNN_MODES, RNNProblem

Problem = Union[ConvProblem, PoolProblem, BatchNormProblem, ActivationProblem, LRNProblem,
                SoftmaxProblem, FusionProblem, RNNProblem, LayerNormProblem, GroupNormProblem, ReduceProblem,
                OpProblem]
PROBLEM_TYPES = (ConvProblem, PoolProblem, BatchNormProblem, ActivationProblem, LRNProblem,
                 SoftmaxProblem, FusionProblem, RNNProblem, LayerNormProblem, GroupNormProblem, ReduceProblem,
                 OpProblem)
for _cls in PROBLEM_TYPES:
    _cls.__hash__ = cached_hash  # type: ignore[method-assign]
    with_quick_equality(_cls)

__all__ = ["ACTIVATION_MODES", "BNORM_DIRECTIONS", "CONV_DIRECTIONS", "DTYPE_BYTES", "DTYPES", "FUSION_ACTIV_DEFAULTS",
           "FUSION_ACTIV_MODES", "FUSION_BN_MODES", "FUSION_CONV_MODES", "FUSION_MODES", "LAYOUTS_2D", "LAYOUTS_3D",
           "PLAIN_DIRECTIONS", "PROBLEM_TYPES", "ActivationProblem", "BatchNormProblem", "ConvProblem",
           "FusionProblem", "LRNProblem", "PoolProblem", "Problem", "ProblemBase", "ProblemError", "SoftmaxProblem",
           "default_layout", "LAYERNORM_VARIANTS", "NORM_MODES", "GroupNormProblem", "LayerNormProblem",
           "REDUCE_OPS", "OpProblem", "ReduceProblem", "RNN_MODES", "RNNProblem"]

"""Reductions, and every other operation MIOpen logs, as values.

``ReduceProblem`` is MIOpen's tensor reduction (``miopenReduceTensor``; driver ``reduce``),
which miotui runs.  ``OpProblem`` holds any other operation MIOpen's logs name (cat, getitem,
kthvalue, prelu, rope, reduceextreme, reducecalculation, the Adam family, tensorop, dropout,
ctc, gemm, glu, the margin losses, sum, argmax) by what the log says of it: its tensors'
shapes and its driver parameters.  Why one generic value: these ops are decoded, counted,
shown and turned into driver commands, but not run here, so their arithmetic is not
modelled; what a log leaves out (MIOpen's Command lines for several of them lack a shape or
a parameter) is recorded in ``missing``, so a command is never written from a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from miotui.problems.base import DTYPES, ProblemBase, check, check_common, check_finite, check_shape, prod

#: miopenReduceTensorOp_t, in enum order
REDUCE_OPS = ("add", "mul", "min", "max", "amax", "avg", "norm1", "norm2")
#: ops whose cost is arithmetic, not memory traffic
_COMPUTE_OPS = frozenset({"gemm"})
#: every direction a generic op can have (one-way ops, such as an optimizer step, are fwd)
OP_DIRECTIONS = ("fwd", "bwd", "wrw")
#: what MIOpen's Command line for a reduction may lack although its API block has it, and back:
#: alpha/beta are printed as pointers in the block, the descriptor's settings on lines the
#: block may not keep
_REDUCE_LOSSY = frozenset({"alpha", "beta", "comp_dtype", "nan_propagation", "indices"})
#: the forms of one call of a generic op may each lack tensors or parameters the other has (a
#: cat Command line names one input, a dropout line no shape, a reducecalculation block no op)
_OP_LOSSY = frozenset({"shapes", "params", "missing"})
#: ops MIOpen logs backward calls of as forward (``LogCmdRoPE(dyDesc, true)``)
_DIRECTION_NOT_LOGGED = frozenset({"rope"})


@dataclass(frozen=True)
class ReduceProblem(ProblemBase):
    """``miopenReduceTensor`` of ``shape`` over ``reduce_dims`` with ``reduce_op``."""

    op: ClassVar[str] = "reduce"
    layout: ClassVar[str] = ""
    direction: str
    dtype: str
    shape: tuple[int, ...]
    reduce_dims: tuple[int, ...]
    reduce_op: int = 0
    comp_dtype: str = ""
    nan_propagation: bool = False
    indices: bool = False
    alpha: float = 1.0
    beta: float = 0.0

    def __post_init__(self) -> None:
        check_common("reduce", self.direction, ("fwd",), self.dtype)
        check_shape("shape", self.shape, 1, 8)
        check(isinstance(self.reduce_dims, tuple) and len(set(self.reduce_dims)) == len(self.reduce_dims),
              f"reduce_dims must be distinct dimensions, got {self.reduce_dims!r}")
        for d in self.reduce_dims:
            check(isinstance(d, int) and 0 <= d < len(self.shape),
                  f"reduce dimension {d!r} is not one of the {len(self.shape)} dimensions")
        check(isinstance(self.reduce_op, int) and 0 <= self.reduce_op < len(REDUCE_OPS),
              f"reduce op must be 0..{len(REDUCE_OPS) - 1}, got {self.reduce_op!r}")
        if not self.comp_dtype:
            object.__setattr__(self, "comp_dtype", self.dtype)
        check(self.comp_dtype in DTYPES, f"comp_dtype must be one of {', '.join(DTYPES)}")
        check(not self.indices or self.reduce_op in (2, 3, 4),
              "indices are only output for min, max and amax reductions")
        check_finite("alpha", self.alpha)
        check_finite("beta", self.beta)

    @property
    def lossy_fields(self) -> frozenset[str]:
        """Fields one form of a call may lack although another form of it has them."""
        return _REDUCE_LOSSY

    @property
    def op_name(self) -> str:
        return REDUCE_OPS[self.reduce_op]

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def output_shape(self) -> tuple[int, ...]:
        return tuple(1 if i in self.reduce_dims else v for i, v in enumerate(self.shape))

    @property
    def flops(self) -> int:
        return prod(self.shape)

    @property
    def bytes_moved(self) -> int:
        return (prod(self.shape) + prod(self.output_shape)) * self.element_bytes


@dataclass(frozen=True)
class OpProblem(ProblemBase):
    """An operation miotui decodes but does not run: its name, direction, data type, the
    shapes of its tensors by name (``(("x", (4, 8)), ("y", (4, 8)))``) and its other driver
    parameters by flag (``(("d", "1"),)``), as the log gave them.

    Conventions (``miotui.driver.commands.ops`` reads and writes them): a tensor is named by
    the driver flag's long name that takes it (``input1``, ``dim_lengths``); a one-character
    ``params`` key is that driver flag's letter and its value is the canonical text (integers
    as digits, reals as C's ``%g``, which is how MIOpen prints them, so every form of a call
    spells a value alike); a longer key is a fact the base argument carries (``adamw``,
    ``amp``).  ``name`` is the op as the counting contract names it (``adam`` for
    adam/adamw/ampadam/ampadamw).

    ``missing`` names what the driver needs that the log did not say (``("dim",)``): such a
    problem has no runnable command.
    """

    name: str
    direction: str
    dtype: str
    shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    missing: tuple[str, ...] = ()
    layout: str = ""

    def __post_init__(self) -> None:
        check(isinstance(self.name, str) and self.name.isidentifier(), f"op name must be a word, got {self.name!r}")
        check_common(self.name, self.direction, OP_DIRECTIONS, self.dtype)
        check(isinstance(self.shapes, tuple), "shapes must be a tuple of (name, lengths)")
        for tensor, shape in self.shapes:
            check_shape(f"{self.name} {tensor}", shape, 1, 8)
        check(all(isinstance(k, str) and isinstance(v, str) for k, v in self.params),
              "params must be (flag, value) text pairs")
        check(isinstance(self.missing, tuple) and all(isinstance(m, str) for m in self.missing),
              "missing must be a tuple of names")

    @property
    def op(self) -> str:  # type: ignore[override]
        return self.name

    @property
    def lossy_fields(self) -> frozenset[str]:
        """Fields one form of a call may lack although another form of it has them."""
        return _OP_LOSSY | ({"direction"} if self.name in _DIRECTION_NOT_LOGGED else set())

    @property
    def memory_bound(self) -> bool:  # type: ignore[override]
        return self.name not in _COMPUTE_OPS

    def param(self, flag: str, default: str = "") -> str:
        for k, v in self.params:
            if k == flag:
                return v
        return default

    @property
    def n(self) -> int:
        return self.input_shape[0] if self.input_shape else 1

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.shapes[0][1] if self.shapes else ()

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.shapes[-1][1] if self.shapes else ()

    @property
    def flops(self) -> int:
        """Elements of the largest tensor (one operation each); for gemm, 2 M N K."""
        if self.name == "gemm":
            m, n, k = (int(self.param(f, "0") or 0) for f in ("m", "n", "k"))
            return 2 * m * n * k
        return max((prod(shape) for _, shape in self.shapes), default=0)

    @property
    def bytes_moved(self) -> int:
        return sum(prod(shape) for _, shape in self.shapes) * self.element_bytes

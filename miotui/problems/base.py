"""What every problem value shares: data types, directions, layouts, validation, identity.

The problem classes (``miotui.problems.conv``, ``.basic``, ...) are frozen dataclasses built on
``ProblemBase``; their validation uses the checks here, so every class reports a bad value
the same way (``ProblemError`` with a message that names the field).
"""

from __future__ import annotations

import math
import operator
from dataclasses import fields
from typing import Any, Callable, ClassVar, Union

#: miopenActivationMode_t, in enum order (the integer is what logs and the driver use).
ACTIVATION_MODES = ("PASTHRU", "LOGISTIC", "TANH", "RELU", "SOFTRELU", "ABS", "POWER",
                    "CLIPPEDRELU", "LEAKYRELU", "ELU")

DTYPES = ("fp32", "fp16", "bf16", "int8", "fp64", "fp8", "bf8", "int32", "unknown")
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "fp64": 8, "fp8": 1, "bf8": 1, "int32": 4, "unknown": 4}
CONV_DIRECTIONS = ("fwd", "bwd", "wrw")
BNORM_DIRECTIONS = ("fwd_train", "fwd_infer", "bwd")
PLAIN_DIRECTIONS = ("fwd", "bwd")
LAYOUTS_2D = ("NCHW", "NHWC")
LAYOUTS_3D = ("NCDHW", "NDHWC")

class ProblemError(ValueError):
    """A problem whose values cannot describe a real MIOpen operation."""


def check(cond: bool, message: Union[str, Callable[[], str]]) -> None:
    """Raise ``ProblemError(message)`` unless ``cond``.  A message that needs formatting is
    passed as a function, called only on failure: a problem is validated every time one is
    built (once per distinct log line), and formatting the message each time cost more than
    the checks."""
    if not cond:
        raise ProblemError(message() if callable(message) else message)


#: MIOpen's API takes every length, pad, stride and count as a C ``int``: a larger value is
#: not a layer MIOpen ran (and a log line with an 80-digit length must not overflow the FLOP count)
MAX_DIM = 2**31 - 1


def check_positive(name: str, value: int) -> None:
    if type(value) is not int or not 0 < value <= MAX_DIM:   # (bool is not accepted as an int)
        raise ProblemError(f"{name} must be a positive integer of at most {MAX_DIM}, got {value!r}")


def check_spatial(name: str, values: tuple[int, ...], ndim: int, minimum: int) -> None:
    if not isinstance(values, tuple) or len(values) != ndim:
        raise ProblemError(f"{name} must have {ndim} values (one per spatial dimension), got {values!r}")
    for v in values:
        if type(v) is not int or not minimum <= v <= MAX_DIM:
            raise ProblemError(f"{name} values must be integers from {minimum} to {MAX_DIM}, got {values!r}")


def check_common(op: str, direction: str, directions: tuple[str, ...], dtype: str) -> None:
    check(direction in directions, lambda: f"{op} direction must be one of {', '.join(directions)}, got {direction!r}")
    check(dtype in DTYPES, lambda: f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")


def check_layout(layout: str, ndim: int, what: str = "layout") -> None:
    allowed = LAYOUTS_2D if ndim == 2 else LAYOUTS_3D
    check(layout in allowed, lambda: f"{what} must be one of {', '.join(allowed)} for {ndim}-D, got {layout!r}")


def default_layout(ndim: int) -> str:
    return "NCHW" if ndim == 2 else "NCDHW"


def prod(values: tuple[int, ...]) -> int:
    return math.prod(values) if values else 1


def check_shape(name: str, shape: tuple[int, ...], min_rank: int = 1, max_rank: int = 8) -> None:
    """A tensor's lengths: a tuple of min_rank..max_rank positive integers."""
    if not isinstance(shape, tuple) or not min_rank <= len(shape) <= max_rank:
        raise ProblemError(f"{name} must have {min_rank} to {max_rank} lengths, got {shape!r}")
    for v in shape:
        if type(v) is not int or not 0 < v <= MAX_DIM:
            raise ProblemError(f"{name} lengths must be positive integers of at most {MAX_DIM}, got {shape!r}")


def check_finite(name: str, value: float) -> None:
    check(isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
          lambda: f"{name} must be a finite number, got {value!r}")


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


_FIELD_VALUES: dict[type, Callable[[Any], tuple]] = {}


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


class ProblemBase:
    """Shared behaviour; each subclass is a frozen dataclass."""

    op: ClassVar[str] = ""
    #: bounded by memory traffic rather than arithmetic (a rate in GB/s says more than GFLOP/s)
    memory_bound: ClassVar[bool] = True

    @property
    def key(self) -> str:
        """A stable string identity: op, direction, dtype, layout and every field."""
        parts = [self.op]
        for name, value in zip(self._field_names(), self.shown_values(), strict=True):
            if isinstance(value, tuple):
                value = "x".join(str(v) for v in value)
            parts.append(f"{name}={value}")
        return " ".join(parts)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the cached hash: a string's hash differs between processes (a
        decode worker's, ours), so a hash cached there would file an equal problem apart
        here."""
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    def json_fields(self) -> dict[str, Any]:
        """Every field by name, for the JSON encoder (which writes tuples as arrays): what
        ``to_dict`` gives, without copying each tuple into a list, for an export of many
        layers."""
        return dict(zip(self._field_names(), self.shown_values(), strict=True))

    def shown_values(self) -> tuple:
        """Every field's value as keys, JSON and the detail show it: the values themselves,
        except where a class keeps a list the driver expands from a shorter one (an RNN's
        per-step batch sizes) and shows that shorter form, so no output of one log line grows
        with a logged count (``miotui.problems.limits``)."""
        return self._field_values()(self)

    def _field_names(self) -> tuple[str, ...]:
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = _FIELD_NAMES[type(self)] = tuple(f.name for f in fields(self))  # type: ignore[arg-type]
        return names

    def _field_values(self) -> Callable[[Any], tuple]:
        """A function giving every field's value in one call (attrgetter of one name gives the
        bare value)."""
        values = _FIELD_VALUES.get(type(self))
        if values is None:
            names = self._field_names()
            getter = operator.attrgetter(*names)
            values = _FIELD_VALUES[type(self)] = getter if len(names) > 1 else (lambda obj: (getter(obj),))
        return values

    def to_dict(self) -> dict[str, Any]:
        """Every field by name, JSON-ready (tuples, also nested ones, become lists).  Not
        ``dataclasses.asdict``: it deep-copies, and an export of 200,000 layers calls this
        once per layer."""
        return {name: _plain(value) if isinstance(value, tuple) else value
                for name, value in zip(self._field_names(), self.shown_values(), strict=True)}

    @property
    def element_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]  # type: ignore[attr-defined]

    @property
    def arithmetic_intensity(self) -> float:
        moved = self.bytes_moved  # type: ignore[attr-defined]
        return self.flops / moved if moved else 0.0  # type: ignore[attr-defined]


def with_quick_equality(cls: type) -> None:
    """Give ``cls`` an ``__eq__`` that answers the usual questions without comparing every
    field: the same object (a row and the sighting that made it) is equal, and two values
    with different (cached) hashes are not, as a scanner asks of each new layer against the
    last one; only equal hashes go on to the dataclass's field-by-field comparison.  (The
    generated one builds two tuples of all fields every time.)"""
    fields_equal = cls.__eq__

    def __eq__(self: Any, other: Any) -> Any:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        if hash(self) != hash(other):
            return False
        return fields_equal(self, other)

    cls.__eq__ = __eq__  # type: ignore[method-assign]


def cached_hash(self: ProblemBase) -> int:
    """Hash once per value: the catalog looks a problem up for every sighting, and a
    dataclass hash would rebuild the tuple of all fields each time."""
    h = self.__dict__.get("_hash")
    if h is None:
        h = hash((self.op,) + self._field_values()(self))
        object.__setattr__(self, "_hash", h)
    return h

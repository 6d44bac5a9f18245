"""What every family's command reader and writer share: the context a command was met in,
the parsed result, and the small rules that hold for all drivers.

A command is read in one of three contexts, and each changes what counts as complete:

* a ``Command [LogCmd...]`` line (``log_fn``): MIOpen printed it in full, so a flag every
  version of that line prints is missing only when the line was cut short;
* an old ``miopenX: ./bin/MIOpenDriver ...`` line (``api_name``, MIOpen 1.x): the API
  function gives the direction, and those versions printed fewer flags;
* anything typed or pasted (neither): every omitted flag takes the driver's default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from miotui.driver.flags import DriverCommandError, FlagValues, ReadFlags, read_flags
from miotui.driver.spec import Subcommand
from miotui.problems import Problem, ProblemError


@dataclass(frozen=True)
class Context:
    """Where a command was met, and which driver version to read it as (None: any era,
    today's defaults)."""

    api_name: Optional[str] = None
    log_fn: Optional[str] = None
    version: Optional[tuple[int, ...]] = None

    @property
    def logged(self) -> bool:
        """A line MIOpen wrote (complete unless cut), as opposed to a typed command."""
        return bool(self.api_name or self.log_fn)


@dataclass(frozen=True)
class ParsedCommand:
    problems: tuple[Problem, ...]
    warnings: tuple[str, ...] = ()
    base: str = ""


#: direction -> the ``-F`` value that runs only it (convolutions and RNNs alike)
DIRECTION_FLAG = {"fwd": "1", "bwd": "2", "wrw": "4"}

#: a family's reader: (its table, the base argument as written, the flags after it, the context)
Reader = Callable[[Subcommand, str, Sequence[str], Context], ParsedCommand]


def read(sub: Subcommand, base: str, args: Sequence[str], ctx: Context,
         extra_long: Optional[dict[str, str]] = None) -> FlagValues:
    flags: ReadFlags = read_flags(sub, base, args, version=ctx.version, logged=ctx.logged, extra_long=extra_long)
    return FlagValues(flags)


def require(f: FlagValues, required: str, what: str) -> None:
    """A logged line lacks a flag every version of its form prints: it was cut short."""
    missing = [k for k in required.split() if not f.has(k)]
    if missing:
        raise DriverCommandError(f"{what} lacks {' '.join('-' + m for m in missing)}, which MIOpen always prints "
                                 f"on such a line (line cut short?)")


def dtype_of(sub: Subcommand, base: str) -> tuple[str, str]:
    """(data type, parameter data type) a base argument selects."""
    for b in sub.bases:
        if b.name == base:
            return b.dtype, b.param_dtype or b.dtype
    raise DriverCommandError(f"{base!r} is not a {sub.family} base argument")


def base_for(sub: Subcommand, dtype: str, param_dtype: str = "",
             version: Optional[tuple[int, ...]] = None) -> str:
    """The base argument that runs ``dtype`` on the driver of ``version`` (today's when None)."""
    key = (id(sub), dtype, param_dtype, version)
    hit = _BASES.get(key)
    if hit is None:
        hit = (sub, _find_base(sub, dtype, param_dtype, version))
        if len(_BASES) < 1024:
            _BASES[key] = hit   # (holding ``sub``, so its id is not reused while cached)
    return hit[1]


#: (id of the table, dtype, parameter dtype, version) -> (the table, its base argument): asked
#: once per command written
_BASES: dict[tuple, tuple[Subcommand, str]] = {}


def _find_base(sub: Subcommand, dtype: str, param_dtype: str, version: Optional[tuple[int, ...]]) -> str:
    from miotui.driver.tables import valid_bases
    valid = valid_bases(version)
    wanted = param_dtype or dtype
    candidates = [b.name for b in sub.bases if b.dtype == dtype and (b.param_dtype or b.dtype) == wanted]
    for name in candidates:
        if name in valid:
            return name
    era = "today's MIOpenDriver" if version is None else f"MIOpenDriver {'.'.join(map(str, version))}"
    if candidates:
        raise DriverCommandError(f"{era} has no {sub.family} driver for {dtype} ({', '.join(candidates)} is not "
                                 f"among its base arguments)")
    raise DriverCommandError(f"MIOpenDriver has no {sub.family} driver for {dtype}")


#: API function names -> the direction they run (MIOpen 1.x lines carry no -F)
_API_DIRECTION = (("BackwardWeights", "wrw"), ("BackwardData", "bwd"), ("Backward", "bwd"),
                  ("Inference", "fwd_infer"), ("Training", "fwd_train"), ("Forward", "fwd"))


def direction_from_api(api_name: str) -> Optional[str]:
    for needle, direction in _API_DIRECTION:
        if needle in api_name:
            return direction
    return None


def plain_directions(f: FlagValues, ctx: Context) -> tuple[str, ...]:
    """Forward / backward from ``-F`` (1 forward, 2 backward, else both when typed), or from
    the API name of an old line."""
    if ctx.api_name:
        return ("bwd",) if "Backward" in ctx.api_name else ("fwd",)
    fwd_flag = f.int("F", 0)
    return {1: ("fwd",), 2: ("bwd",)}.get(fwd_flag, ("fwd",) if ctx.log_fn else ("fwd", "bwd"))


def fmt_float(v: float) -> str:
    return format(v, "g")


def make(build: Callable[[], Problem]) -> Problem:
    """A problem from decoded values; a value MIOpen could not have run is a command error."""
    try:
        return build()
    except ProblemError as e:
        raise DriverCommandError(str(e)) from e

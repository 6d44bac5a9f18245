"""What the readers and writers of the newer drivers (RNN, norms, reductions, every other op)
share beyond ``common``: checking a written command against the driver version it is for,
canonical value text, and the repairs MIOpen's own Command lines need before the driver's
flag parser can read them.

Why a writer checks every flag it writes: these drivers changed flags between versions (the
RNN driver gained ``-q`` in 3.0 and dropout flags in 2.4, layer norm took ``-X`` only in
3.2-3.4, ``sum`` existed only in 3.1-3.2), and a command with a flag the target driver lacks
stops at ``Input Flag: X Not Found`` -- so a command is refused with the reason instead.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Iterable, Optional, Sequence

from miotui.driver.commands.common import Context, make
from miotui.driver.flags import DriverCommandError, FlagValues
from miotui.driver.spec import Subcommand
from miotui.problems import OpProblem

__all__ = ["canon_float", "canon_int", "check_written", "era_name", "bit_directions", "braces_to_lengths",
           "input_repair", "take_nchw_flags", "lengths_text", "make_op", "not_reproducible", "plain_directions",
           "version_or_newest"]


def era_name(version: Optional[tuple[int, ...]]) -> str:
    return "today's MIOpenDriver" if version is None else f"MIOpenDriver {'.'.join(map(str, version))}"


def version_or_newest(version: Optional[tuple[int, ...]]) -> tuple[int, ...]:
    """A version to compare eras with: None (today's driver) is newer than any."""
    return version if version is not None else (99,)


def check_written(sub: Subcommand, argv: Sequence[str], version: Optional[tuple[int, ...]]) -> list[str]:
    """``argv`` unchanged when the driver of ``version`` declares every flag in it; otherwise
    DriverCommandError naming the first flag it lacks (it would stop at 'Input Flag: X Not
    Found' and run nothing)."""
    flags = sub.flags_in(version)
    shorts = {f.short for f in flags}
    longs = {f.long for f in flags}
    for tok in argv[1::2]:  # a written command is the base, then flag/value pairs
        known = tok[2:] in longs if tok.startswith("--") else tok[1:] in shorts
        if not known:
            raise DriverCommandError(f"{era_name(version)} has no {sub.family} flag {tok}")
    return list(argv)


def canon_float(value: float) -> str:
    """A real as MIOpen prints one with ``operator<<`` (C's ``%g``): ``0.001``, ``1e-08``,
    ``0.9``; so a value typed as ``.001`` and one logged as ``0.001`` are one parameter."""
    if not math.isfinite(value):
        raise DriverCommandError(f"{value} is not a finite number")
    if value == 0:
        return "0"
    return format(value, "g")


def canon_int(value: int) -> str:
    return str(int(value))


def lengths_text(lens: Iterable[int], sep: str = "x") -> str:
    return sep.join(str(v) for v in lens)


_BRACES_RE = re.compile(r"^\{([\d, ]*)\}$")


def braces_to_lengths(text: str) -> Optional[tuple[int, ...]]:
    """``{4,8,16}`` (how kthvalue and prelu log a tensor's lengths) -> (4, 8, 16); None when
    the text is not such a list."""
    m = _BRACES_RE.match(text.strip())
    if m is None:
        return None
    parts = [p for p in re.split(r"[,\s]+", m.group(1)) if p]
    if not parts:
        return None
    return tuple(int(p) for p in parts)


def take_nchw_flags(args: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """The ``-n -c [-D] [-H] -W`` lengths several LogCmd* lines print for ops whose drivers take
    one tensor flag instead (letter -> value text), and the other tokens, in order."""
    found: dict[str, str] = {}
    rest: list[str] = []
    for i in range(0, len(args) - 1, 2):
        if args[i] in ("-n", "-c", "-D", "-H", "-W"):
            found[args[i][1]] = args[i + 1]
        else:
            rest += [args[i], args[i + 1]]
    if len(args) % 2:
        rest.append(args[-1])
    return found, rest


def input_repair(args: list[str], warnings: list[str]) -> list[str]:
    """``-input AxB`` as MIOpen logs rope/reduceextreme inputs -- which MIOpenDriver reads as
    ``-i`` (iterations) -- becomes the tensor flag ``-X``."""
    out = list(args)
    for i in range(0, len(out) - 1, 2):
        if out[i] == "-input":
            out[i] = "-X"
            warnings.append("MIOpen logs the input as -input, which MIOpenDriver reads as -i (iterations); "
                            "read as -X")
    return out


def plain_directions(f: FlagValues, ctx: Context) -> tuple[str, ...]:
    """``-F`` of the newer drivers, read with the family's own default for the era (it
    differs: layer norm's was 1 up to 3.4 and is 0 today): 1 forward, 2 backward, 0 both."""
    forw = f.int("F")
    dirs = {1: ("fwd",), 2: ("bwd",)}.get(forw)
    if dirs is None and forw == 0 and not ctx.log_fn:
        dirs = ("fwd", "bwd")
    if dirs is None:
        raise DriverCommandError(f"-F must be 1 (forward), 2 (backward){'' if ctx.log_fn else ' or 0 (both)'}, "
                                 f"got {f.text('F')!r}")
    return dirs


def bit_directions(forw: int, all_when_zero: bool = True) -> tuple[str, ...]:
    """The RNN driver's -F: 1 forward, 2 backward data, 4 backward weights, summed; 0 all."""
    if forw == 0 and all_when_zero:
        return ("fwd", "bwd", "wrw")
    out = tuple(d for bit, d in ((1, "fwd"), (2, "bwd"), (4, "wrw")) if forw & bit)
    if not out or forw > 7:
        raise DriverCommandError(f"-F must be 1 (forward), 2 (backward data), 4 (backward weights) or their sum, "
                                 f"got {forw}")
    return out


def make_op(build: Callable[[], OpProblem]) -> OpProblem:
    return make(build)  # type: ignore[return-value]


def not_reproducible(what: str, missing: Sequence[str], where: str = "this log") -> DriverCommandError:
    return DriverCommandError(f"{what} is not reproducible from {where}: {', '.join(missing)} "
                              f"{'is' if len(missing) == 1 else 'are'} not in it")

"""``activ``, ``lrn`` and ``softmax`` <-> their problems: N, C, H, W tensors, forward and backward.

MIOpen logs the LRN mode as a number (``-m 0``), which the driver rejects (it wants ``within``
or ``cross``): corrected with a warning.
"""

from __future__ import annotations

from typing import Optional, Sequence

from miotui.driver.commands.common import (
    Context,
    ParsedCommand,
    base_for,
    dtype_of,
    fmt_float,
    make,
    plain_directions,
    read,
    require,
)
from miotui.driver.flags import DriverCommandError
from miotui.driver.spec import Subcommand
from miotui.driver.tables import activ as activ_table
from miotui.driver.tables import lrn as lrn_table
from miotui.driver.tables import softmax as softmax_table
from miotui.problems import ActivationProblem, LRNProblem, SoftmaxProblem


def read_activ(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    if ctx.log_fn:
        require(f, "n c H W m F A B G", "this activation Command line")
    dtype = dtype_of(sub, base)[0]
    problems = tuple(make(lambda d=d: ActivationProblem(d, dtype, f.int("n"), f.int("c"), (f.int("H"), f.int("W")),
                                                         f.int("m"), f.float("A"), f.float("B"), f.float("G", 1.0)))
                     for d in plain_directions(f, ctx))
    return ParsedCommand(problems, tuple(f.warnings), base)


def write_activ(p: ActivationProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    return [base_for(activ_table.ACTIV, p.dtype, version=version), "-n", str(p.n), "-c", str(p.c),
            "-H", str(p.in_spatial[0]), "-W", str(p.in_spatial[1]), "-m", str(p.mode),
            "--forw", "1" if p.direction == "fwd" else "2",
            "-A", fmt_float(p.alpha), "-B", fmt_float(p.beta), "-G", fmt_float(p.gamma)]


def read_lrn(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    if ctx.log_fn:
        require(f, "A B F H K N W c m n", "this LRN Command line")
    mode_text = f.raw.get("m", "within")
    if mode_text in ("0", "1"):
        f.warnings.append(f"MIOpen logs the LRN mode as a number (-m {mode_text}), which MIOpenDriver rejects; "
                          f"corrected to {'within' if mode_text == '0' else 'cross'}")
        mode_text = "within" if mode_text == "0" else "cross"
    if mode_text not in ("within", "cross"):
        raise DriverCommandError(f"LRN -m must be within or cross, got {mode_text!r}")
    dtype = dtype_of(sub, base)[0]
    problems = tuple(make(lambda d=d: LRNProblem(d, dtype, f.int("n"), f.int("c"), (f.int("H"), f.int("W")),
                                                  mode_text, f.int("N"), f.float("A"), f.float("B"), f.float("K")))
                     for d in plain_directions(f, ctx))
    return ParsedCommand(problems, tuple(f.warnings), base)


def write_lrn(p: LRNProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    return [base_for(lrn_table.LRN, p.dtype, version=version), "-n", str(p.n), "-c", str(p.c),
            "-H", str(p.in_spatial[0]), "-W", str(p.in_spatial[1]), "-m", p.mode, "-N", str(p.lrn_n),
            "-A", fmt_float(p.alpha), "-B", fmt_float(p.beta), "-K", fmt_float(p.k),
            "-F", "1" if p.direction == "fwd" else "2"]


def read_softmax(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    if ctx.log_fn:
        require(f, "n c H W F a m A B", "this softmax Command line")
    dtype = dtype_of(sub, base)[0]
    problems = tuple(make(lambda d=d: SoftmaxProblem(d, dtype, f.int("n"), f.int("c"), (f.int("H"), f.int("W")),
                                                      f.int("a"), f.int("m"), f.float("A"), f.float("B")))
                     for d in plain_directions(f, ctx))
    return ParsedCommand(problems, tuple(f.warnings), base)


def write_softmax(p: SoftmaxProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    return [base_for(softmax_table.SOFTMAX, p.dtype, version=version), "-n", str(p.n), "-c", str(p.c),
            "-H", str(p.in_spatial[0]), "-W", str(p.in_spatial[1]), "-F", "1" if p.direction == "fwd" else "2",
            "-a", str(p.algorithm), "-m", str(p.mode), "-A", fmt_float(p.alpha), "-B", fmt_float(p.beta)]


READERS = {"activ": read_activ, "lrn": read_lrn, "softmax": read_softmax}

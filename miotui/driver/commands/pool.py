"""``pool`` (``poolfp16``, ``poolbfp16``) <-> ``PoolProblem``.

Two eras to read: up to MIOpen 2.15 the input was ``-n -c [-D] -H -W`` and ``-u/-v`` were the
H/W strides (MIOpen 1.x logs them so); from 2.16 it is one tensor flag ``--input
NxCx[D]xHxW[,layout]`` and, since 2.3, ``-v`` is the H stride and ``-u`` the W stride.
"""

from __future__ import annotations

from typing import Optional, Sequence

from miotui.driver.commands.common import Context, ParsedCommand, base_for, dtype_of, make, read, require
from miotui.driver.flags import DriverCommandError
from miotui.driver.spec import Subcommand
from miotui.driver.tables import pool as pool_table
from miotui.problems import PoolProblem, default_layout

_POOL_MODES = {"max": "max", "avg": "avg", "avg_in": "avg_in", "0": "max", "1": "avg", "2": "avg_in"}


def read_pool(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    warnings = f.warnings
    tensor = f.raw.get("W", "")
    if ctx.logged:
        require(f, "y x p q u v m", "this pooling command line")
        if "x" not in tensor:
            require(f, "n c H W", "this pooling command line")
    dtype = dtype_of(sub, base)[0]
    layout = ""
    if "x" in tensor:  # --input NxCx[D]xHxW[,layout|strides]
        dims, layout = f.dims("W")
        if len(dims) not in (4, 5):
            raise DriverCommandError(f"--input must be NxCxHxW or NxCxDxHxW, got {tensor!r}")
        n, c, spatial = dims[0], dims[1], tuple(dims[2:])
    else:
        if ctx.log_fn:
            warnings.append("this MIOpen logged pooling with -n/-c/-H/-W, which MIOpenDriver from ROCm 5.1 "
                            "rejects; written as --input")
        n, c = f.int("n", 100), f.int("c", 3)
        d = f.int("D", 0)
        hw = (f.int("H", 32), f.int("W", 32))
        spatial = ((d,) + hw) if (d > 0 or f.int("d", 2) == 3) else hw
        if spatial[0] == 0:
            spatial = (32,) + spatial[1:]
    nd = len(spatial)
    win = (f.int("Z"),) * (nd == 3) + (f.int("y"), f.int("x"))
    pads = (f.int("o"),) * (nd == 3) + (f.int("p"), f.int("q"))
    if ctx.api_name:  # MIOpen <= 1.8: -u vertical (H), -v horizontal (W)
        strides_hw = (f.int("u"), f.int("v"))
    else:
        strides_hw = (f.int("v"), f.int("u"))
    strides = (f.int("s"),) * (nd == 3) + strides_hw
    mode = _POOL_MODES.get(f.raw.get("m", "max"))
    if mode is None:
        raise DriverCommandError(f"pooling -m must be max, avg or avg_in, got {f.raw['m']!r}")
    if ctx.api_name:
        dirs: tuple[str, ...] = ("bwd",) if "Backward" in ctx.api_name else ("fwd",)
    elif ctx.log_fn:
        dirs = ("fwd",) if f.int("F", 1) == 1 else ("bwd",)
    else:
        dirs = {1: ("fwd",), 2: ("bwd",)}.get(f.int("F", 0), ("fwd", "bwd"))
    index_mode = 1 if f.int("M", 0) else 0
    problems = tuple(make(lambda dd=dd: PoolProblem(dd, dtype, n, c, spatial, win, pads, strides, mode, layout,
                                                     index_mode)) for dd in dirs)
    return ParsedCommand(problems, tuple(warnings), base)


def write_pool(p: PoolProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    tensor = "x".join(str(v) for v in (p.n, p.c) + p.in_spatial)
    if p.layout != default_layout(p.ndim):
        tensor += "," + p.layout
    argv: list = [base_for(pool_table.POOL, p.dtype, version=version), "-M", p.index_mode, "--input", tensor]
    if p.ndim == 3:
        argv += ["-Z", p.window[0]]
    argv += ["-y", p.window[-2], "-x", p.window[-1]]
    if p.ndim == 3:
        argv += ["-o", p.pads[0]]
    argv += ["-p", p.pads[-2], "-q", p.pads[-1]]
    if p.ndim == 3:
        argv += ["-s", p.strides[0]]
    argv += ["-v", p.strides[-2], "-u", p.strides[-1], "-m", p.mode, "-F", 1 if p.direction == "fwd" else 2]
    return [str(a) for a in argv]


READERS = {"pool": read_pool}

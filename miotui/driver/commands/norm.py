"""``layernorm``, ``addlayernorm``, ``t5layernorm`` <-> ``LayerNormProblem``; ``groupnorm`` <->
``GroupNormProblem``.

MIOpen's Command lines for these (``LogCmdLayerNorm`` and friends) are not runnable as
printed, and each defect is repaired here with a warning saying what changed:

* the base: ``layernormfp32`` (and ``addlayernormfp32``, ``t5layernormfp32``,
  ``groupnormfp32``; 3.0 also ``layernormbf16``) is no driver's; the fp32 driver is the bare
  name (``LOGGED_BASES``);
* the shape: the library prints ``-n -c [-D -H -W | -H -W | -W]`` in every version while the
  layer-norm drivers took ``-n -c -D -H -W`` (3.0-3.1), one tensor ``-X NxCxHxW`` (3.2-3.4),
  then ``-N -C [-D] -H -W`` (newest, which has 2-D, 4-D and 5-D inputs only); the lengths are
  read from whichever was given, and the command is written in the target driver's spelling
  (a 3-D input, a transformer's (batch, tokens, features), has no command for the newest
  driver, only for 3.2-3.4);
* what is never printed: eps (the driver default 1e-5 is assumed, with a warning) and layer
  norm's ``normalized_dim`` (the layer keeps ``missing`` and has no runnable command: only
  the API trace says it);
* T5 layer norm's backward is logged with ``-F 1`` (``LogCmdT5LayerNorm(dyDesc, mode, true)``),
  so a T5 Command line cannot say which direction it ran: it is read as written, with a
  warning.

A typed command is read in the era its spelling belongs to (``-X`` is 3.2-3.4, ``-n/-c`` 3.0-3.1:
their layer-norm driver's backward pass is an empty stub, so only forward runs; ``-N/-C`` the
newest, whose default ``-F 0`` runs both directions).
"""

from __future__ import annotations

from typing import Optional, Sequence

from miotui.driver.commands.common import Context, ParsedCommand, base_for, dtype_of, fmt_float, make, read, require
from miotui.driver.commands.support import (
    check_written,
    era_name,
    lengths_text,
    plain_directions,
    take_nchw_flags,
    version_or_newest,
)
from miotui.driver.flags import DriverCommandError, FlagValues
from miotui.driver.spec import Subcommand
from miotui.driver.tables import groupnorm as groupnorm_table
from miotui.driver.tables import layernorm as layernorm_table
from miotui.problems import GroupNormProblem, LayerNormProblem

_FP32 = "MIOpen logs fp32 {family} as {logged!r}, which no MIOpenDriver accepts; read as {real!r}"
LOGGED_BASES: dict[str, tuple[str, str]] = {
    logged: (real, _FP32.format(family=real, logged=logged, real=real_base))
    for logged, real, real_base in (
        ("layernormfp32", "layernorm", "layernorm"), ("addlayernormfp32", "addlayernorm", "addlayernorm"),
        ("t5layernormfp32", "t5layernorm", "t5layernorm"), ("groupnormfp32", "groupnorm", "groupnorm"))
}
LOGGED_BASES["layernormbf16"] = ("layernormbfp16", "MIOpen 3.0 logs bf16 layer norm as 'layernormbf16'; the "
                                                   "driver's name is 'layernormbfp16'")

_SUBS = {"layernorm": layernorm_table.LAYERNORM, "addlayernorm": layernorm_table.ADDLAYERNORM,
         "t5layernorm": layernorm_table.T5LAYERNORM}
#: flags every LogCmd*Norm line prints besides its -n/-c/-D/-H/-W lengths (a line without one was cut)
LOGGED_REQUIRED = {"layernorm": "F m", "addlayernorm": "F m", "t5layernorm": "F m", "groupnorm": "g m F"}
_EPS_WARNING = "eps is not in MIOpen's Command line; the driver's default 1e-05 is assumed"
#: the era a typed layer-norm command's shape spelling belongs to
_ERA_OF_X = (3, 4)
_ERA_OF_LOWER = (3, 1)


def _logged_shape(args: Sequence[str], what: str) -> tuple[tuple[int, ...], list[str]]:
    """``-n -c [-D -H -W | -H -W | -W]`` as LogCmd*Norm prints them (only the lengths there
    are, in that order), and the other tokens.  Taken out before the flags are read: the
    add/T5 drivers have no such flags at all."""
    found, rest = take_nchw_flags(args)
    if "n" not in found or "c" not in found:
        raise DriverCommandError(f"{what} lacks -n or -c, which MIOpen always prints (line cut short?)")
    lens = []
    for k in "ncDHW":
        if k in found:
            text = found[k]
            if not (text.isascii() and text.isdigit()) or int(text) <= 0:
                raise DriverCommandError(f"-{k} must be a positive integer, got {text!r}")
            lens.append(int(text))
    return tuple(lens), rest


def _typed_layernorm_shape(f: FlagValues) -> tuple[tuple[int, ...], str]:
    """The input of a typed layer-norm command in any era's spelling: (lengths, layout)."""
    if f.has("X"):
        return f.dims("X")
    if f.has("n") or f.has("c"):  # 3.0-3.1: -n -c -D -H -W; D > 0 makes it 5-D
        d = f.int("D", 0)
        return (f.int("n"), f.int("c")) + ((d,) if d else ()) + (f.int("H"), f.int("W")), ""
    n, c, h, w, d = f.int("N", 100), f.int("C", 3), f.int("H", 32), f.int("W", 32), f.int("D", 0)
    layout = f.raw.get("L", "").upper()
    if d:
        return (n, c, d, h, w), layout if layout in ("NDHWC",) else ""
    if c and h:
        return (n, c, h, w), layout if layout == "NHWC" else ""
    if n and not c and not h and w:
        return (n, w), ""
    raise DriverCommandError(f"layer-norm input -N {n} -C {c} -H {h} -W {w}: the driver accepts N, C, H, W "
                             f"(or D as well), or N and W with C and H 0")


def _typed_era(args: Sequence[str], ctx: Context) -> Context:
    """Read a typed command in the era of its shape spelling (its defaults differ)."""
    if ctx.logged or ctx.version is not None:
        return ctx
    flags = {a for a in args[::2]}
    if flags & {"-X", "--input"}:
        return Context(ctx.api_name, ctx.log_fn, _ERA_OF_X)
    if flags & {"-n", "-c", "--batchsize", "--in_channels"}:
        return Context(ctx.api_name, ctx.log_fn, _ERA_OF_LOWER)
    return ctx


def _read_layernorm(variant: str, sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    ctx = _typed_era(args, ctx)
    if ctx.log_fn:
        shape, args = _logged_shape(args, f"this {variant} Command line")
    f = read(sub, base, args, ctx)
    dtype = dtype_of(sub, base)[0]
    missing: tuple[str, ...] = ()
    layout = ""
    if ctx.log_fn:
        require(f, LOGGED_REQUIRED[variant], f"this {variant} Command line")
        eps = 1e-5
        f.warnings.append(_EPS_WARNING)
        if variant == "t5layernorm":
            normalized_dim = len(shape) - 1
            f.warnings.append("MIOpen logs T5 layer-norm backward calls with -F 1 too: this line may be a "
                              "backward call")
        else:
            normalized_dim, missing = -1, ("normalized_dim",)
        if variant != "layernorm" or version_or_newest(ctx.version) >= (3, 2):
            f.warnings.append(f"MIOpen's -n/-c/-H/-W for {variant} is read as the input tensor (the driver takes "
                              f"{'-X' if variant != 'layernorm' else '-X (3.2-3.4) or -N/-C (newest)'})")
        directions: tuple[str, ...] = {1: ("fwd",), 2: ("bwd",)}.get(f.int("F"), ())
        if not directions:
            raise DriverCommandError(f"MIOpen logs -F 1 or 2, got {f.raw['F']!r}")
    else:
        shape, layout = _typed_layernorm_shape(f) if variant == "layernorm" else f.dims("X")
        eps = f.float("e")
        normalized_dim = len(shape) - 1 if variant == "t5layernorm" else f.int("o")
        directions = plain_directions(f, ctx)
        if variant == "layernorm" and version_or_newest(ctx.version) < (3, 5):
            # up to 3.4 the layer-norm driver's backward pass is an empty stub: only forward runs
            if directions == ("bwd",):
                raise DriverCommandError("the layer-norm driver of MIOpen 3.0-3.4 (whose spelling this command uses) "
                                         "has no backward pass: -F 2 runs nothing")
            directions = ("fwd",)
    mode = f.int("m")
    problems = tuple(make(lambda d=d: LayerNormProblem(d, dtype, shape, normalized_dim, eps, mode, variant, layout,
                                                       missing)) for d in directions)
    return ParsedCommand(problems, tuple(f.warnings), base)


def read_layernorm(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    return _read_layernorm(sub.family, sub, base, args, ctx)


def _layernorm_shape_flags(p: LayerNormProblem, version: Optional[tuple[int, ...]]) -> list:
    """The input in the spelling of the target driver's era."""
    v = version_or_newest(version)
    rank = len(p.shape)
    if p.variant != "layernorm" or (3, 2) <= v < (3, 5):
        text = lengths_text(p.shape) + ("," + p.layout if p.layout else "")
        return ["-X", text]
    if v < (3, 2):
        if rank not in (4, 5) or p.layout:
            raise DriverCommandError(f"{era_name(version)}'s layer-norm driver takes only packed NCHW or NCDHW "
                                     f"inputs (-n -c [-D] -H -W), not {rank}-D {p.layout}".rstrip())
        d = ["-D", p.shape[2]] if rank == 5 else []
        return ["-n", p.shape[0], "-c", p.shape[1]] + d + ["-H", p.shape[-2], "-W", p.shape[-1]]
    # newest: -N -C [-D] -H -W [-L layout]; 2-D is N and W with C and H 0
    if rank == 2:
        return ["-N", p.shape[0], "-C", 0, "-H", 0, "-W", p.shape[1]]
    if rank not in (4, 5):
        # not reshaped here (N x C x 1 x W is the same computation, but another layer to the
        # driver's solvers): the command must be this layer
        raise DriverCommandError(f"{era_name(version)}'s layer-norm driver takes 2-D (N, W), 4-D or 5-D inputs, "
                                 f"not {rank}-D {list(p.shape)}; MIOpenDriver 3.2-3.4 take it as -X "
                                 f"{lengths_text(p.shape)}")
    argv = ["-N", p.shape[0], "-C", p.shape[1]] + (["-D", p.shape[2]] if rank == 5 else [])
    argv += ["-H", p.shape[-2], "-W", p.shape[-1]]
    return argv + (["-L", p.layout] if p.layout else [])


def write_layernorm(p: LayerNormProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    sub = _SUBS[p.variant]
    if p.missing:
        raise DriverCommandError(f"{p.variant} is not reproducible from this log: {', '.join(p.missing)} "
                                 f"{'is' if len(p.missing) == 1 else 'are'} not in MIOpen's Command line (its API "
                                 f"trace, MIOPEN_ENABLE_LOGGING=1, has it)")
    argv: list = [base_for(sub, p.dtype, version=version)] + _layernorm_shape_flags(p, version)
    argv += ["-e", fmt_float(p.eps)]
    if p.variant != "t5layernorm":
        argv += ["-o", p.normalized_dim]
    argv += ["-m", p.mode]
    both_only = p.variant == "layernorm" and version_or_newest(version) < (3, 5)
    if p.direction == "bwd" and (both_only or p.variant == "addlayernorm"):
        raise DriverCommandError(f"{era_name(version)}'s {p.variant} driver runs no backward pass on its own")
    argv += ["-F", 1 if p.direction == "fwd" else 2]
    return check_written(sub, [str(a) for a in argv], version)


def read_groupnorm(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    if ctx.log_fn:
        shape, args = _logged_shape(args, "this group-norm Command line")
    f = read(sub, base, args, ctx)
    dtype = dtype_of(sub, base)[0]
    if ctx.log_fn:
        require(f, LOGGED_REQUIRED["groupnorm"], "this group-norm Command line")
        eps = 1e-5
        f.warnings.append(_EPS_WARNING)
        directions: tuple[str, ...] = {1: ("fwd",), 2: ("bwd",)}.get(f.int("F"), ())
        if not directions:
            raise DriverCommandError(f"MIOpen logs -F 1 or 2, got {f.raw['F']!r}")
    else:
        d, h = f.int("D"), f.int("H")
        shape = (f.int("n"), f.int("c")) + ((d,) if d else ()) + ((h,) if h or d else ()) + (f.int("W"),)
        eps = f.float("e")
        directions = ("fwd",)  # the group-norm driver has only a forward pass
    problems = tuple(make(lambda dd=dd: GroupNormProblem(dd, dtype, shape, f.int("g"), eps, f.int("m")))
                     for dd in directions)
    return ParsedCommand(problems, tuple(f.warnings), base)


def write_groupnorm(p: GroupNormProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    sub = groupnorm_table.GROUPNORM
    rank = len(p.shape)
    if rank == 2 or (rank == 3 and version_or_newest(version) < (3, 3)):
        raise DriverCommandError(f"{era_name(version)}'s group-norm driver takes no {rank}-D input")
    if p.direction != "fwd":
        raise DriverCommandError("the group-norm driver runs forward only")
    spatial = p.shape[2:]
    d = spatial[0] if rank == 5 else 0
    h = spatial[-2] if rank >= 4 else 0
    # -D is always spelled: from 3.3 its default (14) would make a 4-D input 5-D
    argv: list = [base_for(sub, p.dtype, version=version), "-n", p.shape[0], "-c", p.shape[1], "-D", d, "-H", h,
                  "-W", p.shape[-1], "-g", p.num_groups, "-e", fmt_float(p.eps), "-m", p.mode, "-F", 1]
    return check_written(sub, [str(a) for a in argv], version)


READERS = {"layernorm": read_layernorm, "addlayernorm": read_layernorm, "t5layernorm": read_layernorm,
           "groupnorm": read_groupnorm}

"""``conv`` (and ``convfp16``, ``convbfp16``, ``convint8``, ...) <-> ``ConvProblem``."""

from __future__ import annotations

import re
from typing import Optional, Sequence

from miotui.driver.commands.common import (
    DIRECTION_FLAG,
    Context,
    ParsedCommand,
    base_for,
    direction_from_api,
    dtype_of,
    make,
    read,
    require,
)
from miotui.driver.flags import DriverCommandError
from miotui.driver.spec import Subcommand
from miotui.driver.tables import conv as conv_table
from miotui.problems import ConvProblem, default_layout

#: -F -> the directions the driver runs
CONV_DIRECTIONS = {1: ("fwd",), 2: ("bwd",), 4: ("wrw",), 3: ("fwd", "bwd"), 5: ("fwd", "wrw"),
                   6: ("bwd", "wrw"), 0: ("fwd", "bwd", "wrw"), 7: ("fwd", "bwd", "wrw")}
#: what every version of each logged form prints (``tables.conv.LOGGED_FLAGS``): a line that
#: lacks one was cut.  MIOpen 1.2-1.6's ``miopenX:`` lines print no -m / -g.
_COMMAND_LINE_FLAGS = "n c H W k y x p q u v l j m g F t"
_OLD_LINE_FLAGS = "n c H W k y x p q u v l j t"


#: today's 2-D ``Command [LogCmdConvolution]`` line after its base, as MIOpen prints it (each
#: value a plain integer of at most 9 digits, ``-m conv``): see ``read_plain_2d``
_PLAIN_2D_RE = re.compile(" ".join(f"-{k} " + {"m": "conv", "F": "([0-7])", "t": r"\d{1,9}"}.get(k, r"(\d{1,9})")
                                   for k in _COMMAND_LINE_FLAGS.split()), re.ASCII)
#: equal shape tuples shared between problems: a log of many distinct layers repeats the same
#: few sizes, pads, strides and filters, and each tuple costs 56 bytes per layer
_SHARED_PAIRS: dict[tuple[int, int], tuple[int, int]] = {}


def _pair(a: int, b: int) -> tuple[int, int]:
    pair = (a, b)
    shared = _SHARED_PAIRS.get(pair)
    if shared is not None:
        return shared
    if len(_SHARED_PAIRS) < 4096:
        _SHARED_PAIRS[pair] = pair
    return pair


def read_plain_2d(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> Optional[ParsedCommand]:
    """The usual line read with one regular expression: the 17 flags of a 2-D ``Command
    [LogCmdConvolution]`` line in MIOpen's order, every value but ``-m conv`` a plain integer
    of at most 9 digits.  The general reader would read such a line without a default, a
    repair or a warning, and each distinct layer of a log arrives as one, so a log of many
    layers spends its decode here (a fraction of the general reader's time).  Anything else
    (None) goes the general way; both give the same result (tests/unit/test_driver.py)."""
    if len(args) != 34 or ctx.api_name or ctx.version is not None:
        return None
    m = _PLAIN_2D_RE.fullmatch(" ".join(args))
    if m is None:
        return None
    n, c, h, w, k, y, x, p, q, u, v, dil_h, dil_w, g, fwd = map(int, m.groups())
    dtype = dtype_of(sub, base)[0]
    shape = dict(n=n, c=c, k=k, in_spatial=_pair(h, w), filter=_pair(y, x), pads=_pair(p, q), strides=_pair(u, v),
                 dilations=_pair(dil_h, dil_w), groups=g, mode="conv", trans_output_pads=_pair(0, 0),
                 pad_mode="default", in_layout="NCHW", fil_layout="NCHW", out_layout="NCHW")
    problems = tuple(make(lambda d=d: ConvProblem(direction=d, dtype=dtype, **shape)) for d in CONV_DIRECTIONS[fwd])
    return ParsedCommand(problems, (), base)


def read_conv(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    plain = read_plain_2d(sub, base, args, ctx)
    return plain if plain is not None else read_conv_flags(sub, base, args, ctx)


def _vector_note(vect: int, dtype: str) -> str:
    """What ``-Z`` (tensor_vect) does, said as what runs.  MIOpenDriver vectorises only int8
    tensors and only for ``-Z 1`` (``ConvDriver::GetandSetData``: int8 becomes int8x4, the
    channels packed by four); any other value, or any other data type, changes nothing."""
    if vect == 1 and dtype == "int8":
        return ("-Z 1: MIOpenDriver runs these int8 tensors vectorised (int8x4, channels packed by 4); miotui runs "
                "the same convolution on plain int8 tensors (the same values in another memory layout)")
    return (f"-Z {vect} changes nothing: MIOpenDriver vectorises only int8 tensors, and only with -Z 1; this "
            f"{dtype} layer runs as {dtype}")


def read_conv_flags(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    """The general reader: any spelling, era, order and dimension, with the driver's defaults
    for omitted flags and the repairs of MIOpen's logging defects."""
    f = read(sub, base, args, ctx)
    if ctx.log_fn:
        require(f, _COMMAND_LINE_FLAGS, "this Command line")
    elif ctx.api_name:
        require(f, _OLD_LINE_FLAGS, "this command line")
    dtype = dtype_of(sub, base)[0]
    warnings = f.warnings
    if f.raw.get("Z", "0").strip() not in ("0", ""):
        warnings.append(_vector_note(f.int("Z"), dtype))
    nd = f.int("_", 2)  # MIOpenDriver ignores --in_d & co. unless --spatial_dim 3
    if nd not in (2, 3):
        raise DriverCommandError("--spatial_dim must be 2 or 3")
    if nd == 2 and any(f.has(k) for k in "!@#$^%"):
        warnings.append("3-D flags (--in_d, --fil_d, ...) without --spatial_dim 3: MIOpenDriver runs a 2-D "
                        "convolution and ignores them")

    def sp(d_key: str, h_key: str, w_key: str) -> tuple[int, ...]:
        hw = (f.int(h_key), f.int(w_key))
        return ((f.int(d_key),) + hw) if nd == 3 else hw

    n, c, k, g = f.int("n"), f.int("c"), f.int("k"), f.int("g", 1)
    mode = f.choice("m", ("conv", "trans", "group", "dw"), "conv")
    if mode in ("group", "dw"):
        warnings.append(f"legacy -m {mode} is written as -m conv with -g")
        if mode == "dw" and not f.has("g"):
            g = c
        mode = "conv"
    if mode == "trans" and ctx.log_fn:
        if g > 1:
            warnings.append(f"MIOpen logs K/G as -k for a grouped transposed convolution; corrected -k {k} to {k * g}")
            k *= g
        elif k == c:
            warnings.append("MIOpen before ROCm 6.1 logged C as -k for transposed convolutions: if this log is "
                            "that old, K may differ from -k")
    pad_mode = f.choice("z", ("default", "same", "valid", "conv"), "default")
    if pad_mode == "conv":
        pad_mode = "default"
    if ctx.api_name:
        directions: tuple[str, ...] = (direction_from_api(ctx.api_name) or "fwd",)
    else:
        fwd_flag = f.int("F")
        if fwd_flag not in CONV_DIRECTIONS:
            raise DriverCommandError(f"-F {fwd_flag} is not a convolution direction (0-7)")
        directions = CONV_DIRECTIONS[fwd_flag]
    if ctx.log_fn and f.raw.get("S") == "0":
        warnings.append("-S 0 (immediate mode 'fastest', not a solver id) dropped")
    problems = tuple(make(lambda d=d: ConvProblem(
        direction=d, dtype=dtype, n=n, c=c, k=k, in_spatial=sp("!", "H", "W"), filter=sp("@", "y", "x"),
        pads=sp("$", "p", "q"), strides=sp("#", "u", "v"), dilations=sp("^", "l", "j"), groups=g, mode=mode,
        trans_output_pads=sp("%", "Y", "X"), pad_mode=pad_mode, in_layout=f.layout("I", nd),
        fil_layout=f.layout("f", nd), out_layout=f.layout("O", nd))) for d in directions)
    return ParsedCommand(problems, tuple(warnings), base)


def conv_geometry_argv(p: ConvProblem) -> list[str]:
    """The shape flags of a convolution (shared with fusion plans).  Written through one
    format string: a log of many distinct layers writes a command per layer."""
    if p.ndim == 2:
        (h, w), (y, x), (ph, pw), (sh, sw), (dh, dw) = p.in_spatial, p.filter, p.pads, p.strides, p.dilations
        return (f"-n {p.n} -c {p.c} -H {h} -W {w} -k {p.k} -y {y} -x {x} -p {ph} -q {pw} -u {sh} -v {sw} "
                f"-l {dh} -j {dw}").split(" ")
    (d, h, w), (z, y, x) = p.in_spatial, p.filter
    (pd, ph, pw), (sd, sh, sw), (dd, dh, dw) = p.pads, p.strides, p.dilations
    return (f"-n {p.n} -c {p.c} --in_d {d} -H {h} -W {w} -k {p.k} --fil_d {z} -y {y} -x {x} --pad_d {pd} -p {ph} "
            f"-q {pw} --conv_stride_d {sd} -u {sh} -v {sw} --dilation_d {dd} -l {dh} -j {dw} "
            f"--spatial_dim 3").split(" ")


def write_conv(p: ConvProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    argv = [base_for(conv_table.CONV, p.dtype, version=version)] + conv_geometry_argv(p)
    default = default_layout(p.ndim)
    for flag, value in (("--in_layout", p.in_layout), ("--fil_layout", p.fil_layout), ("--out_layout", p.out_layout)):
        if value != default:
            argv += [flag, value]
    argv += ["-m", p.mode, "-g", str(p.groups)]
    if any(p.trans_output_pads):
        if p.ndim == 3:
            argv += ["--trans_output_pad_d", str(p.trans_output_pads[0])]
        argv += ["-Y", str(p.trans_output_pads[-2]), "-X", str(p.trans_output_pads[-1])]
    if p.pad_mode != "default":
        argv += ["-z", p.pad_mode]
    argv += ["-F", DIRECTION_FLAG[p.direction]]
    return argv


READERS = {"conv": read_conv}

"""``CBAInfer`` / ``CAInfer`` fusion plans <-> ``FusionProblem``.

The fusion mode is ``-F`` up to MIOpen 3.5.0 and ``-J`` in today's driver (``-F`` no longer
exists there); the 3.5 driver added 3-D plans, layouts and ``CAInfer`` (conv + activation).
MIOpen's own Command lines have known mistakes, corrected here with a warning each: bf16
plans logged as ``CBAInferfp16`` (6.x), the BN mode of a BN+activation plan printed as ``-m``
(3.3+), a depth printed as ``-D`` (the driver's ``-D`` is its dot-graph file).
"""

from __future__ import annotations

from typing import Optional, Sequence

from miotui.driver.commands.common import Context, ParsedCommand, base_for, dtype_of, fmt_float, make, read, require
from miotui.driver.commands.conv import conv_geometry_argv
from miotui.driver.flags import DriverCommandError
from miotui.driver.spec import Subcommand, parse_version
from miotui.driver.tables import fusion as fusion_table
from miotui.problems import FUSION_ACTIV_DEFAULTS, FUSION_ACTIV_MODES, FusionProblem, default_layout

#: CBAInfer's activation flags and the FusionProblem fields they set
_ACTIV_FLAGS = (("m", "activ_mode"), ("A", "activ_alpha"), ("B", "activ_beta"), ("G", "activ_gamma"))
#: the last driver that takes the fusion mode as -F (today's takes -J)
_LAST_F_VERSION = parse_version("3.5.0")


def read_fusion(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    warnings = f.warnings
    dtype = dtype_of(sub, base)[0]
    if f.has("J"):
        fusion_mode = f.int("J")
    elif base.startswith("CAInfer"):
        fusion_mode = 5
    else:
        fusion_mode = f.int("F", 0)
    if ctx.log_fn:
        require(f, "n c H W" if fusion_mode == 2 else "n c H W k y x p q u v l j", "this fusion Command line")
    if ctx.log_fn and not f.has("J") and base.startswith("CBAInfer"):
        if dtype == "fp16":
            dtype = "bf16"
            warnings.append("MIOpen 6.x logged bf16 fusion plans as CBAInferfp16; read as bf16")
        elif dtype == "fp32":
            warnings.append("MIOpen 6.x logged fp16 fusion plans as CBAInfer: the data type may be fp16")
    bn_key = "M"
    if fusion_mode == 2 and f.has("m") and not f.has("M") and ctx.log_fn:
        bn_key = "m"
        warnings.append("MIOpen 6.3+ logged the batch-norm mode of a BN+activation fusion as -m (the driver's "
                        "activation mode); read as the batch-norm mode -M")
    bn_mode = {0: "per_activation", 1: "spatial"}.get(f.int(bn_key, 0))
    if bn_mode is None:
        raise DriverCommandError("fusion batch-norm mode must be 0 or 1")
    nd = f.int("_", 2)
    if nd not in (2, 3):
        raise DriverCommandError("--spatial_dim must be 2 or 3")
    depth = f.raw.get("D", "") if ctx.log_fn else ""
    if depth.isascii() and depth.isdigit() and int(depth) > 0 and nd == 2:
        nd = 3
        warnings.append(f"MIOpen printed the plan's depth as -D {depth} (the driver's -D is its dot-graph file); "
                        f"read as the input depth")

    def sp(d_key: str, h_key: str, w_key: str) -> tuple[int, ...]:
        hw = (f.int(h_key), f.int(w_key))
        if nd == 2:
            return hw
        logged_depth = d_key == "!" and depth.isascii() and depth.isdigit() and not f.has("!")
        return ((int(depth) if logged_depth else f.int(d_key)),) + hw

    activ = {name: (f.int if flag == "m" else f.float)(flag, FUSION_ACTIV_DEFAULTS[name])
             for flag, name in _ACTIV_FLAGS}
    if bn_key == "m":   # -m was the batch-norm mode
        activ["activ_mode"] = int(FUSION_ACTIV_DEFAULTS["activ_mode"])
    pad_mode = f.choice("z", ("default", "same", "valid", "conv"), "conv")
    pad_mode = "default" if pad_mode == "conv" else pad_mode
    layout = f.layout("I", nd)
    n, c = f.int("n"), f.int("c")
    if fusion_mode in (0, 1, 3, 4, 5, 6):
        problem = make(lambda: FusionProblem(
            fusion_mode, dtype, n, c, sp("!", "H", "W"), k=f.int("k"), filter=sp("@", "y", "x"),
            pads=sp("$", "p", "q"), strides=sp("#", "u", "v"), dilations=sp("^", "l", "j"), groups=f.int("g", 1),
            bn_mode=bn_mode, layout=layout, pad_mode=pad_mode, **activ))
    else:
        problem = make(lambda: FusionProblem(fusion_mode, dtype, n, c, sp("!", "H", "W"), bn_mode=bn_mode,
                                             layout=layout, **activ))
    return ParsedCommand((problem,), tuple(warnings), base)


def write_fusion(p: FusionProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    newest = version is None or version > _LAST_F_VERSION
    if (p.ndim if hasattr(p, "ndim") else len(p.in_spatial)) == 3 or p.layout != default_layout(len(p.in_spatial)) \
            or p.pad_mode != "default":
        if not newest and version < parse_version("3.5"):
            raise DriverCommandError("MIOpenDriver before 3.5 runs only 2-D NCHW fusion plans with explicit pads")
    base = base_for(fusion_table.FUSION, p.dtype, version=version)
    argv: list = [base, "-J" if newest else "-F", p.fusion_mode]
    if p.has_conv:
        argv += conv_geometry_argv(p.conv) + ["-g", p.groups]
    else:
        argv += ["-n", p.n, "-c", p.c]
        if len(p.in_spatial) == 3:
            argv += ["--in_d", p.in_spatial[0], "--spatial_dim", 3]
        argv += ["-H", p.in_spatial[-2], "-W", p.in_spatial[-1]]
    if p.layout != default_layout(len(p.in_spatial)):
        argv += ["--in_layout", p.layout, "--fil_layout", p.layout, "--out_layout", p.layout]
    if p.pad_mode != "default":
        argv += ["-z", p.pad_mode]
    if p.fusion_mode in (0, 1, 2, 3):
        argv += ["-M", 1 if p.bn_mode == "spatial" else 0]
    if p.fusion_mode in FUSION_ACTIV_MODES:  # the activation, where it differs from the driver's default
        for flag, name in _ACTIV_FLAGS:
            value = getattr(p, name)
            if value != FUSION_ACTIV_DEFAULTS[name]:
                argv += ["-" + flag, value if flag == "m" else fmt_float(value)]
    return [str(a) for a in argv]


READERS = {"fusion": read_fusion}

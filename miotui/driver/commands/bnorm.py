"""``bnorm`` (and its fp16/bf16/mixed bases) <-> ``BatchNormProblem``.

MIOpen's logged batch-norm commands had a history of mistakes, each corrected here with a
warning: the mode printed as ``-M`` (6.0-6.2; the driver has no ``-M``), ``-s`` (saved mean)
and ``-r`` (running mean) swapped before the 2025 fix (lines with ``-I`` are after it).
"""

from __future__ import annotations

from typing import Optional, Sequence

from miotui.driver.commands.common import (
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
from miotui.driver.tables import bnorm as bnorm_table
from miotui.problems import BatchNormProblem, default_layout


def read_bnorm(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    args = list(args)
    warnings: list[str] = []
    if "-M" in args[::2] and "-m" not in args[::2] and ctx.logged:
        args[args.index("-M")] = "-m"
        warnings.append("MIOpen 6.0-6.2 logged the batch-norm mode as -M (the driver has no -M); corrected to -m")
    f = read(sub, base, args, ctx)
    f.warnings[:0] = warnings
    if ctx.logged:
        require(f, "n c H W m", "this batch-norm command line")
    dtype, param_dtype = _dtypes(base)
    d = f.int("D", 0)
    spatial = (d, f.int("H"), f.int("W")) if d > 0 else (f.int("H"), f.int("W"))
    mode = {0: "per_activation", 1: "spatial"}.get(f.int("m", 0))
    if mode is None:
        raise DriverCommandError(f"batch-norm -m must be 0 (per-activation) or 1 (spatial), got {f.raw['m']}")
    forw, back = f.int("F", 0), f.int("b", 0)
    if ctx.api_name and not f.has("F") and not f.has("b"):
        direction = direction_from_api(ctx.api_name) or "fwd_train"
        direction = "fwd_train" if direction == "fwd" else direction
        if "Backward" in ctx.api_name:
            direction = "bwd"
    elif forw == 2:
        direction = "fwd_infer"
    elif forw == 1:
        direction = "fwd_train"
    elif forw == 0 and back == 1:
        direction = "bwd"
    elif forw == 0:
        direction = "fwd_train"
    else:
        raise DriverCommandError(f"batch-norm --forw must be 0, 1 or 2, got {forw}")
    save, running = bool(f.int("s", 0)), bool(f.int("r", 0))
    if ctx.logged and not f.has("I") and save != running:
        save, running = running, save
        f.warnings.append("MIOpen before the 2025 fix logged -s (saved mean) and -r (running mean) swapped; "
                          "swapped back")
    layout = f.layout("L", len(spatial))
    problem = make(lambda: BatchNormProblem(direction, dtype, f.int("n"), f.int("c"), spatial, mode, layout, save,
                                            running, param_dtype))
    return ParsedCommand((problem,), tuple(f.warnings), base)


#: data type -> base-name suffix
_SUFFIX = {"fp32": "", "fp16": "fp16", "bf16": "bfp16"}


def _dtypes(base: str) -> tuple[str, str]:
    """(data, parameter) types by the base's name, as MIOpen's logging names it: the tensors'
    type, then ``fp32`` when scale, bias and statistics are float (what each driver version
    allocated for a name changed; the name is what the log says)."""
    rest = base[len("bnorm"):]
    mixed = rest.endswith("fp32") and rest != "fp32"
    rest = rest[:-4] if mixed else rest
    dtype = next((d for d, suffix in _SUFFIX.items() if suffix == rest), None)
    if dtype is None:
        return dtype_of(bnorm_table.BNORM, base)
    return dtype, "fp32" if mixed else dtype


def _base(p: BatchNormProblem, version: Optional[tuple[int, ...]]) -> str:
    from miotui.driver.tables import valid_bases
    suffix = _SUFFIX.get(p.dtype)
    if suffix is None:
        raise DriverCommandError(f"MIOpenDriver has no batch-norm driver for {p.dtype}")
    name = "bnorm" + suffix + ("fp32" if p.param_dtype == "fp32" and p.dtype != "fp32" else "")
    if name not in valid_bases(version):
        return base_for(bnorm_table.BNORM, p.dtype, p.param_dtype, version)
    return name


def write_bnorm(p: BatchNormProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    argv: list = [_base(p, version), "-n", p.n, "-c", p.c]
    if p.ndim == 3:
        argv += ["-D", p.in_spatial[0]]
    argv += ["-H", p.in_spatial[-2], "-W", p.in_spatial[-1], "-m", 1 if p.mode == "spatial" else 0]
    argv += {"fwd_train": ["--forw", 1, "-b", 0], "fwd_infer": ["--forw", 2, "-b", 0],
             "bwd": ["--forw", 0, "-b", 1]}[p.direction]
    if p.save:
        argv += ["-s", 1]
    if p.running:
        argv += ["-r", 1]
    if p.layout != default_layout(p.ndim):
        argv += ["--layout", p.layout]
    return [str(a) for a in argv]


READERS = {"bnorm": read_bnorm}

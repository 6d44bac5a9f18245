"""The optimizer steps: ``adam``/``adamw``/``ampadam``/``ampadamw`` (op ``adam``) and
``transformersadamw``/``transformersampadamw`` (op ``transformersadamw``) <-> ``OpProblem``.

MIOpen's Command lines for them (``LogCmdAdam``, ``LogCmdTransformersAdamW``) are runnable
as printed: every hyper-parameter is there, in C's ``%g`` form, which is also how the API
block prints them, so both forms of a call give the same values.  The base argument carries
two facts, kept as ``params`` ``adamw`` and ``amp``.  The AMP drivers' ``-s`` (gradient scale)
and ``-f`` (pretend an inf was found) are not logged and do not change the layer; a command
keeps the driver's defaults for them.
"""

from __future__ import annotations

from typing import Optional, Sequence

from miotui.driver.commands.common import Context, ParsedCommand, dtype_of, read, require
from miotui.driver.commands.support import canon_float, check_written, era_name, lengths_text, make_op
from miotui.driver.flags import DriverCommandError
from miotui.driver.spec import Subcommand
from miotui.driver.tables import adam as adam_table
from miotui.problems import OpProblem

#: the hyper-parameter flags of each kind, in the order the library prints them
_ADAM_FLAGS = ("l", "1", "2", "e", "W")
_BOOL_FLAGS = {"adam": ("a", "m"), "transformersadamw": ("c",)}
#: flags every LogCmdAdam / LogCmdTransformersAdamW line prints (a line without one was cut short)
LOGGED_REQUIRED = {family: "d " + " ".join(_ADAM_FLAGS + _BOOL_FLAGS[op]) for family, op in (
    ("adam", "adam"), ("ampadam", "adam"), ("transformersadamw", "transformersadamw"),
    ("transformersampadamw", "transformersadamw"))}


def read_adam(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    name = "transformersadamw" if sub.family.startswith("transformers") else "adam"
    bools = _BOOL_FLAGS[name]
    if ctx.log_fn:
        require(f, LOGGED_REQUIRED[sub.family], f"this {sub.family} Command line")
    lens, _ = f.dims("d")
    params: list[tuple[str, str]] = [(k, canon_float(f.float(k))) for k in _ADAM_FLAGS]
    params += [(k, "1" if f.int(k) else "0") for k in bools]
    if name == "adam" and base.startswith(("adamw", "ampadamw")):
        params.append(("adamw", "1"))
    if "amp" in sub.family:
        params.append(("amp", "1"))
    problem = make_op(lambda: OpProblem(name, "fwd", dtype_of(sub, base)[0], (("param", lens),), tuple(params)))
    return ParsedCommand((problem,), tuple(f.warnings), base)


def _base(p: OpProblem, amp: bool, adamw: bool) -> tuple[Subcommand, str]:
    """The family table and the base argument that runs this step (the base names the kind)."""
    if p.name == "transformersadamw":
        sub = adam_table.TRANSFORMERSAMPADAMW if amp else adam_table.TRANSFORMERSADAMW
        name = "transformersampadamw" if amp else "transformersadamw"
    else:
        sub = adam_table.AMPADAM if amp else adam_table.ADAM
        name = ("ampadam" if amp else "adam") + ("w" if adamw else "")
    if p.dtype == "fp16" and not amp:
        name += "fp16"
    if name not in sub.base_names() or dtype_of(sub, name)[0] != p.dtype:
        raise DriverCommandError(f"MIOpenDriver has no {name} driver for {p.dtype}")
    return sub, name


def write_adam(p: OpProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    from miotui.driver.tables import valid_bases
    params = dict(p.params)
    sub, base = _base(p, params.get("amp") == "1", params.get("adamw") == "1")
    if base not in valid_bases(version):
        raise DriverCommandError(f"{era_name(version)} has no {base} base argument")
    lens = dict(p.shapes).get("param")
    if lens is None:
        raise DriverCommandError(f"{p.name}: the parameter tensor's shape is not known")
    argv: list = [base, "-d", lengths_text(lens)]
    for k, v in p.params:
        if len(k) == 1:
            argv += [f"-{k}", v]
    return check_written(sub, [str(a) for a in argv], version)


READERS = {"adam": read_adam, "ampadam": read_adam, "transformersadamw": read_adam, "transformersampadamw": read_adam}
OP_WRITERS = {"adam": write_adam, "transformersadamw": write_adam}

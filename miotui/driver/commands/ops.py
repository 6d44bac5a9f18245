"""The 2024 tensor ops: ``cat``, ``getitem``, ``kthvalue``, ``prelu``, ``rope``, ``glu``,
``softmarginloss`` and ``multimarginloss`` <-> ``OpProblem``; and the one writer for every
``OpProblem`` (dispatched by op name to the module that knows its driver).

MIOpen's own Command lines for these ops are not runnable as printed.  What is repaired, and
what is kept with ``missing`` set (the layer then has no runnable command):

* ``cat``: ``LogCmdCat`` loops over the inputs and prints one ``catfp32|catfp16|catf16 -dims
  a,b,c -F 1`` line per input tensor, before the call runs; the concatenation dimension is
  never printed, and ``-dims`` reads as ``-d`` (the dimension!).  A line is one input of one
  call: it decodes to a cat layer of that one input with ``missing = ("dim", "inputs")``.
  ``join_cat_parts`` puts the consecutive lines of one call back together (the dimension is
  the one axis their lengths differ on).  ``catf16`` is MIOpen's name for bf16.
* ``getitem``: every length list is printed with the last two values glued together (an
  ``i != size - 2`` separator test) and ``-dims``/``-slice``/``-offset`` glued to their
  values: the index count, the dimensions (single digits) and the offset are read back; the
  tensors' shapes cannot be (``missing``).  MIOpen logs it as forward; the op is backward.
* ``kthvalue``: ``-n N -T {lens} -Si {strides}`` names none of the driver's flags; the shape
  and contiguity are read back, k, dim and keep-dim are never printed (``missing``).
* ``prelu``: ``--input {a,b} --weight {c}``: the input becomes ``-D AxB``, the weight count
  ``-P``.
* ``rope``: ``-input AxBxC`` (read by the driver as ``-i``) becomes ``-X``; backward calls
  are logged as forward (``LogCmdRoPE(dyDesc, true)``), which a warning says.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

from miotui.driver.commands.adam import OP_WRITERS as ADAM_WRITERS
from miotui.driver.commands.classic import OP_WRITERS as CLASSIC_WRITERS
from miotui.driver.commands.common import Context, ParsedCommand, base_for, dtype_of, read
from miotui.driver.commands.reduce import OP_WRITERS as REDUCE_WRITERS
from miotui.driver.commands.support import (
    braces_to_lengths,
    canon_int,
    check_written,
    input_repair,
    lengths_text,
    make_op,
    not_reproducible,
    plain_directions,
)
from miotui.driver.flags import DriverCommandError, FlagValues
from miotui.driver.spec import Subcommand
from miotui.driver.tables import cat as cat_table
from miotui.driver.tables import getitem as getitem_table
from miotui.driver.tables import glu as glu_table
from miotui.driver.tables import kthvalue as kthvalue_table
from miotui.driver.tables import marginloss as marginloss_table
from miotui.driver.tables import prelu as prelu_table
from miotui.driver.tables import rope as rope_table
from miotui.problems import OpProblem

_FP32 = "MIOpen logs fp32 {real} as {logged!r}, which no MIOpenDriver accepts; read as {real!r}"
LOGGED_BASES: dict[str, tuple[str, str]] = {
    logged: (real, _FP32.format(real=real, logged=logged))
    for logged, real in (("catfp32", "cat"), ("getitemfp32", "getitem"), ("kthvaluefp32", "kthvalue"),
                         ("prelufp32", "prelu"), ("ropefp32", "rope"))
}
for _op in ("cat", "getitem"):
    LOGGED_BASES[f"{_op}f16"] = (f"{_op}bfp16", f"MIOpen logs bf16 {_op} as '{_op}f16' (a typo for bfp16); read "
                                                f"as '{_op}bfp16'")

_REDUCTIONS = ("none", "mean", "sum")


def _pairs(args: Sequence[str], what: str) -> list[tuple[str, str]]:
    if len(args) % 2:
        raise DriverCommandError(f"{what} ends in a flag without a value (line cut short?)")
    return [(args[i], args[i + 1]) for i in range(0, len(args), 2)]


def _direction_of(text: str, what: str) -> str:
    if text not in ("1", "2"):
        raise DriverCommandError(f"{what}: -F must be 1 or 2, got {text!r}")
    return "fwd" if text == "1" else "bwd"


def _dim(f: FlagValues, key: str, rank: int) -> str:
    """A dimension flag; negative counts from the end (kthvalue's -d -1), read as its index."""
    text = f.text(key).strip()
    try:
        value = int(text)
    except ValueError:
        raise DriverCommandError(f"-{key} must be an integer, got {text!r}") from None
    if not -rank <= value < rank:
        raise DriverCommandError(f"-{key} {value} is not a dimension of a {rank}-D input")
    return canon_int(value % rank)


def _done(problems: tuple, f: Optional[FlagValues], base: str, warnings: Sequence[str] = ()) -> ParsedCommand:
    if f is None:
        return ParsedCommand(problems, tuple(warnings), base)
    return ParsedCommand(problems, tuple(warnings) + tuple(f.warnings), base)


# --------------------------------------------------------------------------- cat

def read_cat(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    dtype = dtype_of(sub, base)[0]
    if ctx.log_fn and "-dims" in args[::2]:
        pairs = dict(_pairs(args, "this cat Command line"))
        if "-F" not in pairs:
            raise DriverCommandError("this cat Command line lacks -F, which MIOpen always prints (line cut short?)")
        lens = tuple(int(v) for v in pairs["-dims"].split(",") if v.strip().isascii() and v.strip().isdigit())
        if not lens or len(lens) != len(pairs["-dims"].split(",")):
            raise DriverCommandError(f"cat -dims must be lengths a,b,c, got {pairs['-dims']!r}")
        problem = make_op(lambda: OpProblem("cat", _direction_of(pairs["-F"], "cat"), dtype, (("input1", lens),),
                                            (), ("dim", "inputs")))
        return _done((problem,), None, base, (
            "MIOpen logs one cat Command line per input tensor (-dims, which the driver would read as -d, the "
            "concatenation dimension): this line is one input of a cat call; the dimension and the other inputs "
            "are not on it",))
    f = read(sub, base, args, ctx)
    inputs = []
    for i in range(1, 9):
        key = str(i)
        if (f.has(key) or f.default(key)) and f.text(key).strip():
            inputs.append((f"input{i}", f.dims(key)[0]))
    if not inputs:
        raise DriverCommandError("a cat command needs input tensors (-1 ... -8)")
    ranks = {len(lens) for _, lens in inputs}
    if len(ranks) != 1:
        raise DriverCommandError("cat inputs must all have the same number of dimensions")
    dim = _dim(f, "d", ranks.pop())
    problem = make_op(lambda: OpProblem("cat", "fwd", dtype, tuple(inputs), (("d", dim),)))
    return _done((problem,), f, base)


def join_cat_parts(parts: Sequence[OpProblem], dim: Optional[int] = None) -> OpProblem:
    """One cat call from the Command lines MIOpen printed for it (one per input, in order):
    the concatenation dimension is ``dim`` when known (an API block prints it), else the one
    axis on which the inputs' lengths differ; left ``missing`` when none or several do."""
    if not parts or any(p.name != "cat" or len(p.shapes) != 1 for p in parts):
        raise DriverCommandError("join_cat_parts takes the one-input cat layers of MIOpen's Command lines")
    shapes = tuple((f"input{i + 1}", p.shapes[0][1]) for i, p in enumerate(parts))
    ranks = {len(lens) for _, lens in shapes}
    if len(ranks) != 1:
        raise DriverCommandError("the cat inputs have different numbers of dimensions")
    if dim is None:
        differ = [a for a in range(ranks.pop()) if len({lens[a] for _, lens in shapes}) > 1]
        dim = differ[0] if len(differ) == 1 else None
    params = (("d", canon_int(dim)),) if dim is not None else ()
    missing = () if dim is not None else ("dim",)
    return make_op(lambda: OpProblem("cat", parts[0].direction, parts[0].dtype, shapes, params, missing))


def write_cat(p: OpProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    sub = cat_table.CAT
    if p.missing:
        raise not_reproducible("cat", p.missing)
    if len(p.shapes) < 2 or len(p.shapes) > 8:
        raise DriverCommandError(f"the cat driver joins 2 to 8 inputs, not {len(p.shapes)}")
    argv: list = [base_for(sub, p.dtype, version=version)]
    for i, (_, lens) in enumerate(p.shapes, 1):
        argv += [f"-{i}", lengths_text(lens)]
    argv += ["-d", p.param("d")]
    return check_written(sub, [str(a) for a in argv], version)


# --------------------------------------------------------------------------- getitem

def _glued_digits(text: str) -> tuple[int, ...]:
    """getitem's -dims list: every dimension is one digit, so the glued ones split apart."""
    return tuple(int(ch) for ch in text if ch.isascii() and ch.isdigit())


def _read_logged_getitem(dtype: str, base: str, args: Sequence[str]) -> ParsedCommand:
    indexes = 0
    dims: tuple[int, ...] = ()
    offset = 0
    slices = ""
    i = 0
    while i < len(args):
        tok = args[i]
        if tok in ("-doutput", "-dx", "-F") or (tok.startswith("-index") and tok[6:].isdigit()):
            if i + 1 >= len(args):
                raise DriverCommandError(f"getitem Command line cut after {tok}")
            indexes += tok.startswith("-index")
            i += 2
            continue
        if tok.startswith("-dims"):
            dims = _glued_digits(tok[5:])
        elif tok.startswith("-slice"):
            slices = tok[6:]
        elif tok.startswith("-offset") and tok[7:].isdigit():
            offset = int(tok[7:])
        else:
            raise DriverCommandError(f"unexpected {tok!r} in a getitem Command line")
        i += 1
    params = [("1", canon_int(indexes)), ("2", canon_int(len(dims))), ("3", ",".join(map(str, dims)))]
    missing = ["doutput", "indexs", "dinput"]
    if slices.strip(","):
        missing.append("slices")
    else:
        params.append(("4", "0"))
    params.append(("6", canon_int(offset)))
    problem = make_op(lambda: OpProblem("getitem", "bwd", dtype, (), tuple(params), tuple(missing)))
    return _done((problem,), None, base, (
        "MIOpen's getitem Command line prints every length list with its last two values glued together, so the "
        "tensor shapes cannot be read back (the index count, dimensions and offset can); MIOpen logs it as -F 1 "
        "although getitem runs backward",))


def read_getitem(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    dtype = dtype_of(sub, base)[0]
    if ctx.log_fn and "-doutput" in args:
        return _read_logged_getitem(dtype, base, args)
    f = read(sub, base, args, ctx)
    shapes = tuple((name, f.dims(key)[0]) for name, key in (("doutput", "O"), ("indexs", "D"), ("dinput", "N")))
    dims = f.ints("3")
    params = [("1", canon_int(f.int("1"))), ("2", canon_int(f.int("2"))), ("3", ",".join(map(str, dims))),
              ("4", canon_int(f.int("4")))]
    slices = f.text("5").strip()
    if slices:
        params.append(("5", ",".join("x".join(str(int(v)) for v in group.split("x")) for group in slices.split(","))))
    params.append(("6", canon_int(f.int("6"))))
    problem = make_op(lambda: OpProblem("getitem", "bwd", dtype, shapes, tuple(params)))
    return _done((problem,), f, base)


def write_getitem(p: OpProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    sub = getitem_table.GETITEM
    if p.missing:
        raise not_reproducible("getitem", p.missing)
    shapes = dict(p.shapes)
    argv: list = [base_for(sub, p.dtype, version=version), "-O", lengths_text(shapes["doutput"]),
                  "-D", lengths_text(shapes["indexs"]), "-N", lengths_text(shapes["dinput"])]
    for k, v in p.params:
        argv += [f"-{k}", v]
    return check_written(sub, [str(a) for a in argv], version)


# --------------------------------------------------------------------------- kthvalue

def read_kthvalue(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    dtype = dtype_of(sub, base)[0]
    if ctx.log_fn and "-T" in args[::2]:
        pairs = dict(_pairs(args, "this kthvalue Command line"))
        lens = braces_to_lengths(pairs.get("-T", ""))
        strides = braces_to_lengths(pairs.get("-Si", ""))
        if lens is None or strides is None or len(lens) != len(strides) or "-F" not in pairs:
            raise DriverCommandError("this kthvalue Command line lacks -T {lengths}, -Si {strides} or -F (cut?)")
        packed = tuple(math.prod(lens[i + 1:]) for i in range(len(lens)))
        contiguous = "1" if strides == packed else "0"
        problem = make_op(lambda: OpProblem("kthvalue", _direction_of(pairs["-F"], "kthvalue"), dtype,
                                            (("dim-lengths", lens),), (("c", contiguous),), ("k", "dim", "keep-dim")))
        return _done((problem,), None, base, (
            "MIOpen's kthvalue Command line (-n -T {lengths} -Si {strides}) names none of the driver's flags: the "
            "input is read from -T and -Si; k, the dimension and keep-dim are not printed",))
    f = read(sub, base, args, ctx)
    lens, _ = f.dims("D")
    params = (("k", canon_int(f.int("k"))), ("d", _dim(f, "d", len(lens))), ("K", canon_int(f.int("K"))),
              ("c", canon_int(f.int("c"))))
    problem = make_op(lambda: OpProblem("kthvalue", "fwd", dtype, (("dim-lengths", lens),), params))
    return _done((problem,), f, base)


# --------------------------------------------------------------------------- prelu

def read_prelu(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    dtype = dtype_of(sub, base)[0]
    if ctx.log_fn and "--weight" in args[::2]:
        pairs = dict(_pairs(args, "this prelu Command line"))
        lens = braces_to_lengths(pairs.get("--input", ""))
        weight = braces_to_lengths(pairs.get("--weight", ""))
        if lens is None or weight is None or "-F" not in pairs:
            raise DriverCommandError("this prelu Command line lacks --input {..}, --weight {..} or -F (cut?)")
        problem = make_op(lambda: OpProblem("prelu", _direction_of(pairs["-F"], "prelu"), dtype,
                                            (("input", lens),), (("P", canon_int(math.prod(weight))),)))
        return _done((problem,), None, base, (
            "MIOpen logs prelu as --input {..} --weight {..}; read as -D (input lengths) and -P (weight count)",))
    f = read(sub, base, args, ctx)
    lens, _ = f.dims("D")
    problems = tuple(make_op(lambda d=d: OpProblem("prelu", d, dtype, (("input", lens),),
                                                   (("P", canon_int(f.int("P"))),)))
                     for d in plain_directions(f, ctx))
    return _done(problems, f, base)


# --------------------------------------------------------------------------- rope, glu, the margin losses

def read_rope(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    warnings: list[str] = []
    if ctx.log_fn:
        args = input_repair(list(args), warnings)
        warnings.append("MIOpen logs RoPE backward calls with -F 1 too: this line may be a backward call")
    f = read(sub, base, args, ctx)
    lens, _ = f.dims("X")
    dtype = dtype_of(sub, base)[0]
    problems = tuple(make_op(lambda d=d: OpProblem("rope", d, dtype, (("input", lens),)))
                     for d in plain_directions(f, ctx))
    return _done(problems, f, base, warnings)


def read_glu(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    lens, _ = f.dims("D")
    dim = _dim(f, "R", len(lens))
    if lens[int(dim)] % 2:
        raise DriverCommandError(f"GLU splits dimension {dim} in halves; its length {lens[int(dim)]} is odd")
    dtype = dtype_of(sub, base)[0]
    problems = tuple(make_op(lambda d=d: OpProblem("glu", d, dtype, (("dim_lengths", lens),), (("R", dim),)))
                     for d in plain_directions(f, ctx))
    return _done(problems, f, base)


def read_marginloss(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    lens, _ = f.dims("D")
    reduction = f.text("R")
    if reduction not in _REDUCTIONS:
        raise DriverCommandError(f"--reduce must be none, mean or sum, got {reduction!r}")
    params = [("C", canon_int(f.int("C"))), ("R", reduction)]
    if sub.family == "softmarginloss" and f.text("S").strip() not in ("", "-1"):
        strides, _ = f.dims("S")
        if len(strides) != len(lens):
            raise DriverCommandError("--stride must give one stride per input dimension")
        params.append(("S", lengths_text(strides)))
    dtype = dtype_of(sub, base)[0]
    dirs = plain_directions(f, ctx) if sub.family == "softmarginloss" else ("fwd",)
    problems = tuple(make_op(lambda d=d: OpProblem(sub.family, d, dtype, (("dim", lens),), tuple(params)))
                     for d in dirs)
    return _done(problems, f, base)


def _write_tensor_op(sub: Subcommand, tensor_flag: str) -> Callable[[OpProblem, Optional[tuple[int, ...]]], list[str]]:
    """A writer for ops that are one input tensor, some parameters and a direction."""
    def write(p: OpProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
        if p.missing:
            raise not_reproducible(p.name, p.missing)
        if not p.shapes:
            raise not_reproducible(p.name, ("input",))
        argv: list = [base_for(sub, p.dtype, version=version), tensor_flag, lengths_text(p.shapes[0][1])]
        for k, v in p.params:
            argv += [f"-{k}", v]
        if sub.family not in ("kthvalue", "multimarginloss"):
            argv += ["-F", 1 if p.direction == "fwd" else 2]
        return check_written(sub, [str(a) for a in argv], version)
    return write


_OP_WRITERS: dict[str, Callable[..., list[str]]] = {
    **ADAM_WRITERS, **CLASSIC_WRITERS, **REDUCE_WRITERS,
    "cat": write_cat, "getitem": write_getitem,
    "kthvalue": _write_tensor_op(kthvalue_table.KTHVALUE, "-D"),
    "prelu": _write_tensor_op(prelu_table.PRELU, "-D"),
    "rope": _write_tensor_op(rope_table.ROPE, "-X"),
    "glu": _write_tensor_op(glu_table.GLU, "-D"),
    "softmarginloss": _write_tensor_op(marginloss_table.SOFTMARGINLOSS, "-D"),
    "multimarginloss": _write_tensor_op(marginloss_table.MULTIMARGINLOSS, "-D"),
}


def write_op(p: OpProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    """The command for any generic op, by its name."""
    writer = _OP_WRITERS.get(p.name)
    if writer is None:
        raise DriverCommandError(f"no MIOpenDriver command for {p.name}")
    return writer(p, version)


READERS = {"cat": read_cat, "getitem": read_getitem, "kthvalue": read_kthvalue, "prelu": read_prelu,
           "rope": read_rope, "glu": read_glu, "softmarginloss": read_marginloss, "multimarginloss": read_marginloss}

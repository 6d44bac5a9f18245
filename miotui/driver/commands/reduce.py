"""The reductions: ``reduce`` <-> ``ReduceProblem``; ``reduceextreme``, ``reducecalculation``
and their 3.1-3.2 forerunners ``argmax`` and ``sum`` <-> ``OpProblem``.

MIOpen's Command lines for them need these repairs (each with a warning):

* ``reducefp`` (fp32) and the ``*fp32`` names of the others are no driver's base;
* ``reduceextreme`` logs its input as ``-input AxB`` (read by the driver as ``-i``, the
  iteration count; the tensor flag is ``-X``), and in 3.2 as ``-n -c [-D] -H -W`` (flags its
  driver never had);
* ``reducecalculation`` logs its NaN mode as ``-n`` (the flag is ``-N``) and never prints its
  input shape: the layer keeps ``missing = ("input",)``;
* ``sum`` prints ``-n`` twice (batch, then the NaN mode: the driver keeps the last) and,
  like ``argmax``, never the reduced dimension.
"""

from __future__ import annotations

from typing import Optional, Sequence

from miotui.driver.commands.common import Context, ParsedCommand, base_for, dtype_of, fmt_float, make, read, require
from miotui.driver.commands.support import (
    canon_int,
    check_written,
    input_repair,
    lengths_text,
    make_op,
    not_reproducible,
    take_nchw_flags,
)
from miotui.driver.flags import DriverCommandError, FlagValues
from miotui.driver.spec import Subcommand
from miotui.driver.tables import argmax as argmax_table
from miotui.driver.tables import reduce as reduce_table
from miotui.driver.tables import reducecalculation as reducecalculation_table
from miotui.driver.tables import reduceextreme as reduceextreme_table
from miotui.driver.tables import sum as sum_table
from miotui.problems import OpProblem, ReduceProblem

#: miopenDataType_t number <-> dtype (the reduce driver's -C)
COMP_TYPES = {0: "fp16", 1: "fp32", 2: "int32", 3: "int8", 5: "bf16", 6: "fp64", 7: "fp8", 8: "bf8"}
_COMP_NUMBERS = {v: k for k, v in COMP_TYPES.items()}

#: flags every LogCmdRedux line prints (a line without one was cut short)
LOGGED_REQUIRED = {"reduce": "A B C D I N O R"}
_FP32 = "MIOpen logs fp32 {real} as {logged!r}, which no MIOpenDriver accepts; read as {real!r}"
LOGGED_BASES: dict[str, tuple[str, str]] = {
    logged: (real, _FP32.format(real=real, logged=logged))
    for logged, real in (("reducefp", "reduce"), ("reduceextremefp32", "reduceextreme"),
                         ("reducecalculationfp32", "reducecalculation"), ("sumfp32", "sum"), ("argmaxfp32", "argmax"))
}


# --------------------------------------------------------------------------- reduce

def read_reduce(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    if ctx.log_fn:
        require(f, LOGGED_REQUIRED["reduce"], "this reduction Command line")
    dtype = dtype_of(sub, base)[0]
    shape = f.ints("D")
    dims = f.ints("R") if f.text("R").strip() else ()
    comp = f.int("C")
    comp_dtype = COMP_TYPES.get(comp)
    if comp_dtype is None:
        raise DriverCommandError(f"-C {comp} is not a miopenDataType_t MIOpen reduces in")
    problem = make(lambda: ReduceProblem("fwd", dtype, shape, dims, f.int("O"), comp_dtype, f.int("N") == 1,
                                         f.int("I") == 1, f.float("A"), f.float("B")))
    return ParsedCommand((problem,), tuple(f.warnings), base)


def write_reduce(p: ReduceProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    sub = reduce_table.REDUCE
    argv: list = [base_for(sub, p.dtype, version=version), "-D", lengths_text(p.shape, ","),
                  "-R", lengths_text(p.reduce_dims, ","), "-O", p.reduce_op, "-C", _COMP_NUMBERS[p.comp_dtype],
                  "-N", int(p.nan_propagation), "-I", int(p.indices), "-A", fmt_float(p.alpha),
                  "-B", fmt_float(p.beta)]
    if not p.reduce_dims:
        raise DriverCommandError("a reduction over no dimension has no driver command (-R would be empty)")
    return check_written(sub, [str(a) for a in argv], version)


# --------------------------------------------------------------------------- one-dimension reductions

def _nchw_repair(args: list[str], warnings: list[str]) -> list[str]:
    """3.2's ``-n -c [-D] -H -W`` (no such reduceextreme flags) -> ``-X``."""
    found, rest = take_nchw_flags(args)
    if not found:
        return args
    warnings.append("MIOpen 3.2 logs the input as -n/-c/-H/-W, which the reduceextreme driver does not have; "
                    "read as -X")
    return rest + ["-X", "x".join(found[k] for k in "ncDHW" if k in found)]


def _op(name: str, direction: str, dtype: str, shapes: tuple, params: tuple, missing: tuple = ()) -> OpProblem:
    return make_op(lambda: OpProblem(name, direction, dtype, shapes, params, missing))


def read_reduceextreme(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    warnings: list[str] = []
    args = _nchw_repair(input_repair(list(args), warnings), warnings) if ctx.log_fn else list(args)
    f = read(sub, base, args, ctx)
    f.warnings[:0] = warnings
    if ctx.log_fn:
        require(f, "X F R O", "this reduceextreme Command line")
    lens, _ = f.dims("X")
    dim = _dim(f, "R", len(lens))
    problem = _op("reduceextreme", "fwd", dtype_of(sub, base)[0], (("input", lens),),
                  (("O", canon_int(f.int("O"))), ("R", dim)))
    return ParsedCommand((problem,), tuple(f.warnings), base)


def _dim(f: FlagValues, key: str, rank: int) -> str:
    value = f.int(key)
    if value >= rank:
        raise DriverCommandError(f"-{key} {value} is not a dimension of a {rank}-D input")
    return canon_int(value)


def read_reducecalculation(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    warnings: list[str] = []
    args = list(args)
    missing: tuple[str, ...] = ()
    shapes: tuple = ()
    if ctx.log_fn:
        if "-n" in args[::2]:
            args[args.index("-n")] = "-N"
            warnings.append("MIOpen logs the NaN mode as -n; the driver's flag is -N")
        missing = ("input",)
        warnings.append("MIOpen's reducecalculation Command line does not print the input shape: not reproducible "
                        "from this line")
    f = read(sub, base, args, ctx)
    f.warnings[:0] = warnings
    if ctx.log_fn:
        require(f, "F N R O", "this reducecalculation Command line")
        dim = canon_int(f.int("R"))
    else:
        lens, _ = f.dims("X")
        shapes = (("input", lens),)
        dim = _dim(f, "R", len(lens))
    problem = _op("reducecalculation", "fwd", dtype_of(sub, base)[0], shapes,
                  (("N", canon_int(f.int("N"))), ("O", canon_int(f.int("O"))), ("R", dim)), missing)
    return ParsedCommand((problem,), tuple(f.warnings), base)


def _sum_shape(f: FlagValues, logged: bool) -> tuple[int, ...]:
    """-n -c [-D] [-H] -W; a depth or height of 0 (the defaults) is absent.  A logged line
    prints only the lengths there are."""
    if logged:
        return tuple(f.int(k) for k in "ncDHW" if f.has(k))
    lens = [f.int("n"), f.int("c")] + [v for v in (f.int("D"), f.int("H")) if v] + [f.int("W")]
    return tuple(v for v in lens if v)


def read_sum_or_argmax(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    warnings: list[str] = []
    args = list(args)
    is_sum = sub.family == "sum"
    if ctx.log_fn and is_sum:
        flags = args[::2]
        if flags.count("-n") == 2:  # LogCmdSum: "-n N ... -F 1 -n <nan>"
            second = 2 * (len(flags) - 1 - flags[::-1].index("-n"))
            args[second] = "-N"
            warnings.append("MIOpen logs sum's NaN mode as a second -n (the driver would take it as the batch "
                            "size); read as -N")
    f = read(sub, base, args, ctx)
    f.warnings[:0] = warnings
    params: list[tuple[str, str]] = []
    missing: tuple[str, ...] = ()
    if ctx.log_fn:
        require(f, "n F", f"this {sub.family} Command line")
        missing = ("DimToReduce",)
        f.warnings.append(f"MIOpen's {sub.family} Command line does not print the reduced dimension")
    shape = _sum_shape(f, bool(ctx.log_fn))
    if not ctx.log_fn:
        params.append(("R", _dim(f, "R", len(shape))))
    if is_sum:
        params.insert(0, ("N", canon_int(f.int("N"))))
    problem = _op(sub.family, "fwd", dtype_of(sub, base)[0], (("input", shape),), tuple(params), missing)
    return ParsedCommand((problem,), tuple(f.warnings), base)


def _write_one_dim(p: OpProblem, version: Optional[tuple[int, ...]], sub: Subcommand) -> list[str]:
    if p.missing:
        raise not_reproducible(p.name, p.missing)
    lens = dict(p.shapes).get("input")
    if lens is None:
        raise not_reproducible(p.name, ("input",))
    argv: list = [base_for(sub, p.dtype, version=version)]
    if p.name in ("sum", "argmax"):
        if not 3 <= len(lens) <= 5:
            # a 2-D input cannot be spelled: the driver's -W defaults to a length, never to "absent"
            raise DriverCommandError(f"the {p.name} driver takes 3-D to 5-D inputs, not {len(lens)}-D")
        names = {3: "ncW", 4: "ncHW", 5: "ncDHW"}[len(lens)]
        for k, v in zip(names, lens, strict=True):
            argv += [f"-{k}", v]
        argv += ["-D", 0] * (len(lens) < 5) + ["-H", 0] * (len(lens) == 3)
    else:
        argv += ["-X", lengths_text(lens)]
    for k, v in p.params:
        argv += [f"-{k}", v]
    return check_written(sub, [str(a) for a in argv], version)


OP_WRITERS = {
    "reduceextreme": lambda p, v: _write_one_dim(p, v, reduceextreme_table.REDUCEEXTREME),
    "reducecalculation": lambda p, v: _write_one_dim(p, v, reducecalculation_table.REDUCECALCULATION),
    "sum": lambda p, v: _write_one_dim(p, v, sum_table.SUM),
    "argmax": lambda p, v: _write_one_dim(p, v, argmax_table.ARGMAX),
}

READERS = {"reduce": read_reduce, "reduceextreme": read_reduceextreme, "reducecalculation": read_reducecalculation,
           "sum": read_sum_or_argmax, "argmax": read_sum_or_argmax}

__all__ = ["COMP_TYPES", "LOGGED_BASES", "OP_WRITERS", "READERS"]

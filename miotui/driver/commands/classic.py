"""The drivers older than the 2024 ops: ``tensorop``, ``dropout``, ``ctc`` and ``gemm`` <->
``OpProblem``.

MIOpen's Command lines for them: ``LogCmdTensorOp`` (OpTensor ``-o <op+2>`` with ``-A -B -G``,
SetTensor ``-o 0 -v``, ScaleTensor ``-o 1 -v``; TransformTensor is logged as an add) is
runnable, except that ``tensoropfp16`` left the driver's valid list in 3.3; ``LogCmdDropout``
prints the tensor's *rank* as ``-d``, where the driver wants the lengths, so a dropout layer
known only from its Command line keeps ``missing = ("input_dim",)``; the CTC line (logged from
inside ``miopenCTCLoss``, with spaces around its base argument) is runnable.  GEMM is never
logged by the library; its commands come from users and scripts.
"""

from __future__ import annotations

from typing import Optional, Sequence

from miotui.driver.commands.common import Context, ParsedCommand, base_for, dtype_of, read, require
from miotui.driver.commands.support import (
    canon_float,
    canon_int,
    check_written,
    make_op,
    not_reproducible,
    plain_directions,
)
from miotui.driver.flags import DriverCommandError, FlagValues
from miotui.driver.spec import Subcommand
from miotui.driver.tables import ctc as ctc_table
from miotui.driver.tables import dropout as dropout_table
from miotui.driver.tables import gemm as gemm_table
from miotui.driver.tables import tensorop as tensorop_table
from miotui.problems import OpProblem
from miotui.problems.limits import collapse_repeats

#: tensorop -o: 0 SetTensor, 1 ScaleTensor, 2..5 OpTensor add/mul/min/max (miopenTensorOp_t + 2)
TENSOR_OPS = ("set", "scale", "add", "mul", "min", "max")
#: flags every Command line of these prints (tensorop: -A -B -G for OpTensor, -v for Set/Scale; CTC's length
#: lists only when their pointers are not null): a line without one was cut short
LOGGED_REQUIRED = {"tensorop": "n c H W o", "dropout": "F d e l m p", "ctc": "a b c m n"}


def _done(problems: tuple, f: FlagValues, base: str) -> ParsedCommand:
    return ParsedCommand(problems, tuple(f.warnings), base)


# --------------------------------------------------------------------------- tensorop

def read_tensorop(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    op = f.int("o")
    if op >= len(TENSOR_OPS):
        raise DriverCommandError(f"tensorop -o must be 0..{len(TENSOR_OPS) - 1}, got {op}")
    if ctx.log_fn:
        require(f, LOGGED_REQUIRED["tensorop"] + (" v" if op < 2 else " A B G"), "this tensorop Command line")
    shape = (f.int("n"), f.int("c"), f.int("H"), f.int("W"))
    params = [("o", canon_int(op))]
    params += [("v", canon_float(f.float("v")))] if op < 2 else [(k, canon_float(f.float(k))) for k in "ABG"]
    problem = make_op(lambda: OpProblem("tensorop", "fwd", dtype_of(sub, base)[0], (("input", shape),),
                                        tuple(params)))
    return _done((problem,), f, base)


def write_tensorop(p: OpProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    sub = tensorop_table.TENSOROP
    lens = dict(p.shapes).get("input")
    if lens is None or len(lens) != 4:
        raise DriverCommandError("the tensorop driver takes 4-D tensors (-n -c -H -W)")
    argv: list = [base_for(sub, p.dtype, version=version), "-n", lens[0], "-c", lens[1], "-H", lens[2],
                  "-W", lens[3]]
    for k, v in p.params:
        argv += [f"-{k}", v]
    return check_written(sub, [str(a) for a in argv], version)


# --------------------------------------------------------------------------- dropout

def read_dropout(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    shapes: tuple = ()
    missing: tuple[str, ...] = ()
    if ctx.log_fn:
        require(f, LOGGED_REQUIRED["dropout"], "this dropout Command line")
        missing = ("input_dim",)
        f.warnings.append(f"MIOpen logs the dropout tensor's rank (-d {f.raw['d']}), not its lengths, which the "
                          f"driver's -d takes: not reproducible from this line")
    else:
        lens = f.ints("d")
        if not 1 <= len(lens) <= 5 or 0 in lens:
            raise DriverCommandError(f"dropout -d must be 1 to 5 positive lengths, got {f.text('d')!r}")
        shapes = (("input_dim", lens),)
    rate = f.float("p")
    if not 0.0 <= rate < 1.0:
        raise DriverCommandError(f"dropout rate -p must be in [0, 1), got {rate}")
    params = (("p", canon_float(rate)), ("e", canon_int(f.int("e"))))
    dtype = dtype_of(sub, base)[0]
    problems = tuple(make_op(lambda d=d: OpProblem("dropout", d, dtype, shapes, params, missing))
                     for d in plain_directions(f, ctx))
    return _done(problems, f, base)


def write_dropout(p: OpProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    sub = dropout_table.DROPOUT
    if p.missing:
        raise not_reproducible("dropout", p.missing)
    lens = dict(p.shapes)["input_dim"]
    argv: list = [base_for(sub, p.dtype, version=version), "-d", ",".join(map(str, lens))]
    for k, v in p.params:
        argv += [f"-{k}", v]
    argv += ["-F", 1 if p.direction == "fwd" else 2]
    return check_written(sub, [str(a) for a in argv], version)


# --------------------------------------------------------------------------- ctc

def _lengths(f: FlagValues, key: str, batch: int) -> tuple[int, ...]:
    """A per-sample length list in the compact form the driver expands (its last value
    repeats over the rest of the batch): a logged ``-n`` of ten million is ten million samples
    of the last length, never a list of ten million (``miotui.problems.limits``)."""
    return collapse_repeats(f.ints(key), batch)


def read_ctc(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    missing: list[str] = []
    if ctx.log_fn:
        require(f, LOGGED_REQUIRED["ctc"], "this CTC Command line")
    batch, classes = f.int("n"), f.int("c")
    if batch < 1:
        raise DriverCommandError(f"ctc -n (the batch) must be at least 1, got {batch}")
    params = [("a", canon_int(f.int("a"))), ("b", canon_int(f.int("b"))), ("c", canon_int(classes)),
              ("m", canon_int(f.int("m"))), ("n", canon_int(batch))]
    shapes: tuple = ()
    for key, what in (("k", "input_len"), ("l", "label_len")):
        if ctx.log_fn and not f.has(key):
            missing.append(what)  # the library prints a length list only when its pointer is not null
            continue
        lengths = _lengths(f, key, batch)
        if key == "k" and lengths:
            shapes = (("probs", (max(lengths), batch, classes + 1)),)
        params.append((key, ",".join(map(str, lengths))))
    problem = make_op(lambda: OpProblem("ctc", "fwd", dtype_of(sub, base)[0], shapes, tuple(params),
                                        tuple(missing)))
    return _done((problem,), f, base)


def write_ctc(p: OpProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    sub = ctc_table.CTC
    if p.missing:
        raise not_reproducible("ctc", p.missing)
    argv: list = [base_for(sub, p.dtype, version=version)]
    for k, v in p.params:
        argv += [f"-{k}", v]
    return check_written(sub, [str(a) for a in argv], version)


# --------------------------------------------------------------------------- gemm

def read_gemm(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    m, n, k, batch = f.int("m"), f.int("n"), f.int("k"), f.int("b")
    if 0 in (m, n, k, batch):
        raise DriverCommandError(f"gemm sizes must be positive: -m {m} -n {n} -k {k} -b {batch}")
    trans_a, trans_b = f.int("u") == 1, f.int("v") == 1
    lead = (batch,) if batch > 1 else ()
    shapes = (("a", lead + ((k, m) if trans_a else (m, k))), ("b", lead + ((n, k) if trans_b else (k, n))),
              ("c", lead + (m, n)))
    params = (("m", canon_int(m)), ("n", canon_int(n)), ("k", canon_int(k)), ("b", canon_int(batch)),
              ("C", canon_int(f.int("C", 0))), ("u", canon_int(int(trans_a))), ("v", canon_int(int(trans_b))),
              ("A", canon_float(f.float("A"))), ("B", canon_float(f.float("B"))))
    problem = make_op(lambda: OpProblem("gemm", "fwd", dtype_of(sub, base)[0], shapes, params))
    return _done((problem,), f, base)


def write_gemm(p: OpProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    sub = gemm_table.GEMM
    argv: list = [base_for(sub, p.dtype, version=version)]
    for k, v in p.params:
        if k == "C" and v == "0":
            continue  # row-major is every era's default; -C exists only from 1.5
        argv += [f"-{k}", v]
    return check_written(sub, [str(a) for a in argv], version)


READERS = {"tensorop": read_tensorop, "dropout": read_dropout, "ctc": read_ctc, "gemm": read_gemm}
OP_WRITERS = {"tensorop": write_tensorop, "dropout": write_dropout, "ctc": write_ctc, "gemm": write_gemm}

"""``rnn`` and ``rnn_seq`` (and their fp16 bases) <-> ``RNNProblem``.

``rnn`` is MIOpen's descriptor-array API (one tensor per time step; ``-n`` is one batch size
or one per step, the driver repeating the last over the remaining steps); ``rnn_seq`` is the
sequence-tensor API (``-n`` batch, ``-k`` longest sequence, ``-K`` each sample's length, ``-I``
the IO layout).  ``-F`` is a bit set: 1 forward, 2 backward data, 4 backward weights, 0 all
three.  ``-c 1`` makes the forward pass inference.

MIOpen's ``LogCmdRNN`` prints every flag it knows each call (``-n ... -k <steps> [-c] -F <1|2|4>
-t 1 -w 1 [-U 1 -P -L -M]``), so a line that lacks ``-w`` was cut; it also prints the same
text to stdout, which the scanner pairs with the Command line.  Lines of MIOpen 2.1-2.2 have
no ``-F``: their direction cannot be told.  The 3.3/3.4 drivers lack ``-t``, which the
library keeps logging (``Input Flag: t Not Found``): a written command never carries run
flags, so it runs on every era that has the flags the layer needs.
"""

from __future__ import annotations

from typing import Optional, Sequence

from miotui.driver.commands.common import (
    DIRECTION_FLAG,
    Context,
    ParsedCommand,
    base_for,
    dtype_of,
    make,
    read,
    require,
)
from miotui.driver.commands.support import bit_directions, canon_float, check_written
from miotui.driver.flags import DriverCommandError, FlagValues
from miotui.driver.spec import Subcommand
from miotui.driver.tables import rnn as rnn_table
from miotui.problems import RNN_MODES, ProblemError, RNNProblem
from miotui.problems.limits import check_listed, collapse_repeats

#: flags every LogCmdRNN line prints (from 2.3; -c only for forward, dropout flags only with dropout):
#: a line without one of them was cut short
LOGGED_REQUIRED = {"rnn": "n W H l b m p r k F w", "rnn_seq": "n W H l b m p r k K a I F w"}


def _batch(f: FlagValues, seq_len: int) -> tuple[int, ...]:
    """Per-step batch sizes as the driver builds them: a shorter list is padded with its last
    value, a longer one truncated; one value when every step has the same, however many steps.
    Differing sizes are listed one per step, so past ``MAX_LISTED`` steps (a logged ``-k`` of
    billions) the layer is refused, never expanded (``miotui.problems.limits``)."""
    if seq_len < 1:
        raise DriverCommandError(f"-k (the sequence length) must be at least 1, got {seq_len}")
    values = f.ints("n")
    if len(values) > seq_len:
        f.warnings.append(f"-n lists {len(values)} batch sizes for {seq_len} steps; the driver uses the first "
                          f"{seq_len}")
    values = collapse_repeats(values, seq_len)
    if len(values) == 1:   # the usual case: the same batch every step
        return values
    try:
        check_listed("per-step sizes", seq_len)
    except ProblemError as e:
        raise DriverCommandError(f"-n lists differing batch sizes: {e}") from None
    return values + (values[-1],) * (seq_len - len(values))


def _common(f: FlagValues) -> dict:
    mode = f.text("m")
    if mode not in RNN_MODES:
        raise DriverCommandError(f"RNN -m must be one of {', '.join(RNN_MODES)}, got {mode!r}")
    dropout = 0.0
    if f.int("U", 0):
        dropout = f.float("P", 0.0)
    return dict(mode=mode, in_size=f.int("W"), hidden=f.int("H"), layers=f.int("l"), bias=f.int("b", 0) == 1,
                input_mode="skip" if f.int("p", 0) == 1 else "linear", bidirectional=f.int("r", 0) == 1,
                algo=f.int("a", 0), dropout=dropout)


def _directions(f: FlagValues, ctx: Context) -> tuple[str, ...]:
    if ctx.log_fn:
        if not f.has("F"):
            raise DriverCommandError("MIOpen 2.1-2.2 logged RNN calls without -F: the direction cannot be told")
        forw = f.int("F")
        if forw not in (1, 2, 4):
            raise DriverCommandError(f"MIOpen logs an RNN call with -F 1, 2 or 4, got {forw}")
        return bit_directions(forw)
    return bit_directions(f.int("F", 0))


def _logged(f: FlagValues, ctx: Context, seq_api: bool) -> None:
    if not ctx.log_fn:
        return
    require(f, LOGGED_REQUIRED["rnn_seq" if seq_api else "rnn"], "this RNN Command line")
    if f.has("U"):
        require(f, "P L M", "this RNN Command line (with dropout)")


def read_rnn(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    _logged(f, ctx, seq_api=False)
    dtype = dtype_of(sub, base)[0]
    seq_len = f.int("k")
    batch = _batch(f, seq_len)
    fields = _common(f)
    inference = f.int("c", 0) == 1
    padded = f.int("q", 0) == 1
    problems = tuple(make(lambda d=d: RNNProblem(d, dtype, batch=batch, seq_len=seq_len, inference=inference and
                                                 d == "fwd", padded=padded, **fields))
                     for d in _directions(f, ctx))
    return ParsedCommand(problems, tuple(f.warnings), base)


def read_rnn_seq(sub: Subcommand, base: str, args: Sequence[str], ctx: Context) -> ParsedCommand:
    f = read(sub, base, args, ctx)
    _logged(f, ctx, seq_api=True)
    dtype = dtype_of(sub, base)[0]
    seq_lens = f.ints("K") if f.raw.get("K", "").strip() else ()
    io_layout = f.int("I", 1)
    inference = f.int("c", 0) == 1
    fields = _common(f)
    problems = tuple(make(lambda d=d: RNNProblem(d, dtype, batch=(f.int("n"),), seq_len=f.int("k"),
                                                 inference=inference and d == "fwd", api="rnn_seq",
                                                 seq_lens=seq_lens, io_layout=io_layout, **fields))
                     for d in _directions(f, ctx))
    return ParsedCommand(problems, tuple(f.warnings), base)


def _shared_flags(p: RNNProblem) -> list:
    return ["-H", p.hidden, "-l", p.layers, "-b", int(p.bias), "-m", p.mode, "-p", int(p.input_mode == "skip"),
            "-r", int(p.bidirectional)]


def _tail(p: RNNProblem) -> list:
    argv: list = []
    if p.algo:
        argv += ["-a", p.algo]
    if p.direction == "fwd":
        argv += ["-c", int(p.inference)]
    argv += ["-F", DIRECTION_FLAG[p.direction]]
    if p.dropout > 0:
        argv += ["-U", 1, "-P", canon_float(p.dropout)]
    return argv


def write_rnn(p: RNNProblem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    if p.api == "rnn_seq":
        sub = rnn_table.RNN_SEQ
        argv: list = [base_for(sub, p.dtype, version=version), "-n", p.n, "-W", p.in_size] + _shared_flags(p)
        argv += ["-k", p.seq_len]
        if p.seq_lens:
            argv += ["-K", ",".join(str(v) for v in p.seq_lens)]
        if p.io_layout:
            argv += ["-I", p.io_layout]
        argv += _tail(p)
    else:
        sub = rnn_table.RNN
        argv = [base_for(sub, p.dtype, version=version), "-n", ",".join(str(b) for b in p.listed_batch), "-W",
                p.in_size]
        argv += _shared_flags(p)
        if p.padded:
            argv += ["-q", 1]
        argv += ["-k", p.seq_len] + _tail(p)
    return check_written(sub, [str(a) for a in argv], version)


READERS = {"rnn": read_rnn, "rnn_seq": read_rnn_seq}

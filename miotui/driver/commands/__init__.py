"""MIOpenDriver commands <-> problems, for every subcommand miotui reads.

Reading: the base argument picks the driver family (``miotui.driver.tables``), whose reader
(one module per family here) reads the flags the way that driver does (``miotui.driver.flags``)
and builds the problems the command names (one per direction it runs).  Writing: one writer
per problem type, its family's ``driver_writer`` (``miotui.families``), spells the command for
a target driver version (today's when none is asked).

Log text is untrusted: every value read is validated (integers in range, whitelisted names),
and what is written is an argv list of validated values, never a shell string.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from typing import Optional, Sequence

from miotui.driver.commands import adam, basic, bnorm, classic, conv, fusion, norm, ops, pool, reduce, rnn
from miotui.driver.commands.common import Context, ParsedCommand, Reader
from miotui.driver.flags import DriverCommandError
from miotui.driver.shell import find_commands
from miotui.driver.tables import SUBCOMMANDS, subcommand_for_base
from miotui.families import UnknownFamily, family_of
from miotui.problems import Problem

#: the modules that read each driver family (each has READERS; a module may also have
#: LOGGED_BASES: base names MIOpen logs that no driver accepts -> (real base, why)).  The
#: writer of each problem type is its family's ``driver_writer`` (``miotui.families``).
FAMILY_MODULES = (conv, fusion, pool, bnorm, basic, rnn, norm, reduce, adam, classic, ops)

READERS: dict[str, Reader] = {}
LOGGED_BASES: dict[str, tuple[str, str]] = {}
for _module in FAMILY_MODULES:
    READERS.update(_module.READERS)
    LOGGED_BASES.update(getattr(_module, "LOGGED_BASES", {}))

#: every base argument any MIOpenDriver has had, and every misspelling MIOpen logs
KNOWN_BASES = frozenset(b.name for sub in SUBCOMMANDS for b in sub.bases) | frozenset(LOGGED_BASES)

__all__ = ["KNOWN_BASES", "DriverCommandError", "ParsedCommand", "parse_driver_args", "parse_driver_command",
           "split_command_text", "to_driver_argv", "to_driver_command"]


def parse_driver_args(args: Sequence[str], *, api_name: Optional[str] = None, log_fn: Optional[str] = None,
                      version: Optional[tuple[int, ...]] = None) -> ParsedCommand:
    """Decode MIOpenDriver arguments (the tokens after the executable).

    ``api_name`` marks a MIOpen <= 1.8 ``miopenX: ./bin/MIOpenDriver`` line (the API name gives
    the direction); ``log_fn`` marks a ``Command [LogCmd...]`` line, whose flags MIOpen always
    prints in full and whose known defects are corrected; ``version`` reads the command as
    that driver version would (None: any era, today's defaults).
    """
    if not args:
        raise DriverCommandError("empty MIOpenDriver command")
    ctx = Context(api_name, log_fn, version)
    base = args[0]
    if len(args) == 1 and ctx.logged:
        raise DriverCommandError(f"MIOpen logged {base!r} without any flags (MIOpen 1.x does this for batch-norm "
                                 f"backward); the layer is only in the API trace")
    notes: tuple[str, ...] = ()
    if base in LOGGED_BASES:
        base, why = LOGGED_BASES[base]
        notes = (why,)
    sub = subcommand_for_base(base)
    logged_dtype = None
    if sub is None and ctx.logged:
        logged_dtype = _driverless_dtype(base)
        if logged_dtype is not None:
            logged_dtype, base = logged_dtype
            sub = subcommand_for_base(base)
            notes += (f"MIOpen logged {args[0]!r}: no MIOpenDriver runs {logged_dtype} {base}; the layer is "
                      f"kept as {logged_dtype}, without a command that runs it",)
    if sub is None:
        raise DriverCommandError(f"{base!r} is not a MIOpenDriver base argument of any version")
    reader = READERS.get(sub.family)
    if reader is None:
        raise DriverCommandError(f"MIOpenDriver {base}: miotui does not read {sub.family} commands")
    parsed = reader(sub, base, list(args[1:]), ctx)
    if logged_dtype is not None:
        parsed = ParsedCommand(tuple(_with_dtype(p, logged_dtype) for p in parsed.problems), parsed.warnings,
                               parsed.base)
    if notes:
        parsed = ParsedCommand(parsed.problems, notes + parsed.warnings, parsed.base)
    return parsed


#: the data-type suffixes of MIOpen's LogCmd* base names, longest first
_DTYPE_SUFFIXES = (("bfp16", "bf16"), ("bf16", "bf16"), ("fp16", "fp16"), ("fp64", "fp64"), ("int8", "int8"),
                   ("fp8", "fp8"), ("bf8", "bf8"), ("fp32", "fp32"))


def _driverless_dtype(base: str) -> Optional[tuple[str, str]]:
    """(dtype, the driver's fp32 base) for a logged base that names a data type no driver of
    that family has (``reducebfp16``, ``groupnormfp64``: MIOpen names the base after the
    tensor's type whether or not a driver exists), else None."""
    for suffix, dtype in _DTYPE_SUFFIXES:
        if base.endswith(suffix) and len(base) > len(suffix):
            stem = base[:-len(suffix)]
            if subcommand_for_base(stem) is not None:
                return dtype, stem
    return None


def _with_dtype(problem: Problem, dtype: str) -> Problem:
    try:
        return dataclasses.replace(problem, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise DriverCommandError(f"{type(problem).__name__} cannot be {dtype}: {e}") from None


_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def split_command_text(text: str) -> list[str]:
    """Tokens after the MIOpenDriver executable in a pasted or logged command line (the first
    command in it: see ``miotui.driver.shell`` for the shapes understood), or a bare argument
    list that starts with a base argument."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ").strip()
    found = find_commands(text)
    if found:
        return list(found[0].args)
    try:
        tokens = shlex.split(text)
    except ValueError:
        tokens = text.split()
    while tokens and _ENV_RE.match(tokens[0]):
        tokens = tokens[1:]
    if tokens and tokens[0] in KNOWN_BASES:
        return tokens
    raise DriverCommandError("no MIOpenDriver command found")


def parse_driver_command(text: str, **kw) -> ParsedCommand:
    """Decode a whole command line as a user would paste it (prompt, env, exe, continuations)."""
    return parse_driver_args(split_command_text(text), **kw)


def to_driver_argv(problem: Problem, version: Optional[tuple[int, ...]] = None) -> list[str]:
    """MIOpenDriver argv (base argument first, no executable) that reproduces ``problem`` on
    the driver of ``version`` (today's when None).

    Raises DriverCommandError when that driver cannot express it (a data type it has no
    driver for, a parameter the log did not give); the value is otherwise always complete
    and paste-able.
    """
    try:
        writer = family_of(problem).driver_writer
    except UnknownFamily:
        raise DriverCommandError(f"no MIOpenDriver command for {type(problem).__name__}") from None
    if not writer.applies:
        raise DriverCommandError(f"no MIOpenDriver command for {type(problem).__name__}: {writer.why}")
    return writer(problem, version)


def to_driver_command(problem: Problem, executable: str = "MIOpenDriver",
                      version: Optional[tuple[int, ...]] = None) -> str:
    """A paste-able command line; every token is a validated number or whitelisted name (and
    quoted all the same when it holds anything but plain characters)."""
    argv = [executable] + to_driver_argv(problem, version)
    text = " ".join(argv)
    if _PLAIN_RE.match(text):   # the usual case: nothing to quote (one regex for the line)
        return text
    return " ".join(shlex.quote(a) for a in argv)


#: characters that never need shell quoting (every token is separated by one space)
_PLAIN_RE = re.compile(r"^[\w.,=+:/ -]*$")

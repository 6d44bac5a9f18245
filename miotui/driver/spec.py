"""MIOpenDriver's command-line grammar as data: the value types of ``miotui.driver.tables``.

Each MIOpenDriver subcommand family (``conv``, ``pool``, ``bnorm``, ``rnn``, ``layernorm``...)
declares its flags in its driver's ``AddCmdLineArgs`` through ``InputFlags::AddInputFlag(long
name, short letter, default, help, type)`` (newer drivers also ``AddTensorFlag``).  The tables
hold those declarations, read from MIOpen's source for every era, so that one generic parser
reads any command the way the driver of that era would, and one writer spells a command the
way a chosen driver version accepts.  Why data and not code: ~90 subcommands, each with 10-60
flags that changed over nine years, are a table to read and review, not logic.

Versions are MIOpen versions (what ``MIOpenDriver --version`` and the driver's system-info
line print, e.g. ``3.5.1``), compared as integer tuples; ``""`` means "as old as the table"
for ``since`` and "still there" for ``until``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

#: miotui's data type names (``miotui.problems.DTYPES``), what a base argument's suffix selects
DTYPE_NAMES = ("fp32", "fp16", "bf16", "int8", "fp64", "fp8", "bf8", "int32")

#: ``Flag.role``: ``problem`` flags describe the layer (shapes, geometry, mode, direction);
#: ``run`` flags only steer a run (iterations, verification, timing, dumps, input files).
ROLES = ("problem", "run")


def parse_version(text: str) -> tuple[int, ...]:
    """``"3.5.1"`` -> ``(3, 5, 1)``; trailing non-numeric parts (``2.19.0-abc``) are ignored."""
    parts = []
    for piece in text.strip().split("."):
        digits = ""
        for ch in piece:
            if not (ch.isascii() and ch.isdigit()):
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break
    if not parts:
        raise ValueError(f"not a version: {text!r}")
    return tuple(parts)


def in_era(version: Optional[tuple[int, ...]], since: str, until: str) -> bool:
    """Whether ``version`` (None: today's driver) lies in ``[since, until]``.

    ``until`` is the last version that had the thing, compared on as many parts as it
    gives (``until="3.2"`` includes ``3.2.1``)."""
    if version is None:
        return not until
    if since and version < parse_version(since):
        return False
    if until:
        last = parse_version(until)
        if version[:len(last)] > last:
            return False
    return True


@dataclass(frozen=True)
class Flag:
    """One ``AddInputFlag`` declaration."""

    long: str          #: long name, without ``--`` (``forw``)
    short: str         #: the one-character short name (``F``; some drivers use ``!``, ``@``, ``_``...)
    default: str       #: default value, as the driver's source writes it
    meaning: str       #: what it sets, in our words
    type: str = "int"  #: the driver's type string (``int``, ``float``, ``double``, ``string``, ``tensor``...)
    role: str = "problem"
    since: str = ""    #: first MIOpen version whose driver declares it
    until: str = ""    #: last MIOpen version whose driver declares it

    def __post_init__(self) -> None:
        if len(self.short) != 1:
            raise ValueError(f"flag --{self.long}: short name must be one character, got {self.short!r}")
        if self.role not in ROLES:
            raise ValueError(f"flag --{self.long}: role must be one of {ROLES}, got {self.role!r}")


@dataclass(frozen=True)
class Base:
    """A base argument (the driver's first argument) and the data type it selects."""

    name: str          #: ``convfp16``
    dtype: str         #: the tensors' data type (a mixed-precision base: see ``param_dtype``)
    param_dtype: str = ""  #: scale/bias/statistics type where it differs (``bnormfp16fp32``)
    since: str = ""    #: first MIOpen version whose driver accepts it as a base argument
    until: str = ""    #: last MIOpen version whose driver accepts it
    note: str = ""     #: e.g. registered but missing from the driver's valid list in some era

    def __post_init__(self) -> None:
        if self.dtype not in DTYPE_NAMES:
            raise ValueError(f"base {self.name}: unknown dtype {self.dtype!r}")


@dataclass(frozen=True)
class Subcommand:
    """One driver family: its base arguments and every flag it has declared in any era."""

    family: str                 #: ``conv``, ``pool``, ``bnorm``, ``rnn``, ``layernorm``...
    bases: tuple[Base, ...]
    flags: tuple[Flag, ...]
    source: str                 #: the file(s) and commit(s) the table was read from
    summary: str = ""           #: what the driver runs, in one line
    notes: str = ""             #: era differences and quirks worth knowing when parsing or writing

    def flags_in(self, version: Optional[tuple[int, ...]] = None) -> tuple[Flag, ...]:
        """The flags the driver of ``version`` (None: today's) declares."""
        return tuple(f for f in self.flags if in_era(version, f.since, f.until))

    def base_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.bases)

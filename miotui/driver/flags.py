"""Reading a command's flags the way MIOpenDriver's ``InputFlags::Parse`` does, from the tables.

One reader for every subcommand, so every family follows the driver's own rules (written up
in ``miotui.driver.tables``): ``--long value`` maps the long name to its letter; a single dash
keeps only the first letter (``-input`` is ``-i``); every flag takes the next token as its value,
even one that starts with ``-``; a flag given twice keeps the last value; integers are read
with C ``atoi`` (``1.`` is 1), reals with ``atof``.  Omitted flags take the table's default for
the driver version asked about (today's when none is).  Where the driver would stop (an
unknown flag, a flag with no value) the command cannot be reproduced as written, and the
reader raises ``DriverCommandError`` saying why: a decoder turns that into an undecoded
record, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from miotui.driver.spec import Flag, Subcommand, in_era

__all__ = ["DriverCommandError", "FlagValues", "ReadFlags", "read_flags", "LAYOUT_RE"]

#: the largest value any driver flag holds (MIOpen's types are 32-bit ints and size_t); a value
#: beyond it is not a real layer (and would overflow every computation made from it)
MAX_VALUE = 1 << 40
_INT_RE = re.compile(r"^[+]?\d{1,13}$", re.ASCII)
_LEADING_INT_RE = re.compile(r"^\s*([+-]?\d+)", re.ASCII)
_FLOAT_RE = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$", re.ASCII)
LAYOUT_RE = re.compile(r"^(NCHW|NHWC|NCDHW|NDHWC|CHWN|NCW|NWC|NC|CN)$")
_RUN_ONLY = "run"


class DriverCommandError(ValueError):
    """A command that does not describe a runnable layer (cut short, bad flag, bad value)."""


def _placeholder(key: str, value: str) -> None:
    """A value that is a shell variable or template (``$BATCH``, ``${N}``, ``<N>``, ``112${X}``)
    was never expanded: say so, rather than "not a number"."""
    if "$" in value or (value.startswith("<") and value.endswith(">")) or "{{" in value:
        raise DriverCommandError(f"-{key} is a placeholder ({value}), not a value: the command was pasted "
                                 f"before the shell expanded it")


@dataclass(frozen=True)
class ReadFlags:
    """A command's flags as the driver reads them: letter -> value, in the order given."""

    sub: Subcommand
    base: str
    values: dict
    #: each flag as it was written (``("-input", "i")``, ``("--forw", "F")``), for repairs
    spelled: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]
    version: Optional[tuple[int, ...]] = None


def _flag_maps(sub: Subcommand, version: Optional[tuple[int, ...]]) -> tuple[dict[str, str], dict[str, Flag]]:
    """(long name -> letter, letter -> Flag): the version's own declarations first, then any
    era's (a command may come from an older or newer driver than the one asked about)."""
    longs: dict[str, str] = {}
    shorts: dict[str, Flag] = {}
    ordered = list(sub.flags_in(version)) + [f for f in sub.flags if not in_era(version, f.since, f.until)]
    for f in ordered:
        longs.setdefault(f.long, f.short)
        shorts.setdefault(f.short, f)
    return longs, shorts


_MAPS: dict[tuple[str, Optional[tuple[int, ...]]], tuple[dict[str, str], dict[str, Flag]]] = {}


def flag_maps(sub: Subcommand, version: Optional[tuple[int, ...]] = None) -> tuple[dict[str, str], dict[str, Flag]]:
    key = (sub.family, version)
    hit = _MAPS.get(key)
    if hit is None:
        hit = _MAPS[key] = _flag_maps(sub, version)
    return hit


def read_flags(sub: Subcommand, base: str, args: Sequence[str], *, version: Optional[tuple[int, ...]] = None,
               logged: bool = False, extra_long: Optional[dict[str, str]] = None) -> ReadFlags:
    """Pair every flag of ``args`` (the tokens after the base argument) with its value.

    ``logged``: a line MIOpen wrote (a ``Command`` line, an old ``miopenX:`` line), which is
    complete unless cut: a flag with no value means the line was cut short.  A typed command
    (a user's paste, MITuna's lists) may end in a bare run-only flag such as ``-t``, which the
    driver would answer with its usage text; that flag is dropped with a warning.
    ``extra_long`` adds long spellings some family writes differently (a logging defect).
    """
    longs, shorts = flag_maps(sub, version)
    values: dict[str, str] = {}
    spelled: list[tuple[str, str]] = []
    warnings: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok in ("-", "--"):
            raise DriverCommandError(f"command cut short: it ends in a bare {tok!r}" if i == len(args) - 1 else
                                     f"a bare {tok!r} where a flag belongs")
        if tok.startswith("--") and len(tok) > 2:
            name = tok[2:]
            short = longs.get(name) or (extra_long or {}).get(name)
            if short is None:
                if "=" in name and longs.get(name.partition("=")[0]):
                    raise DriverCommandError(f"{tok}: MIOpenDriver reads no '--name=value' form (it would stop "
                                             f"with 'Long Name: {name} Not Found')")
                raise DriverCommandError(f"{sub.family} has no flag --{name} in any MIOpenDriver version")
        elif tok.startswith("-") and len(tok) >= 2:
            short = tok[1]
            if short not in shorts:
                raise DriverCommandError(f"{sub.family} has no flag -{short} in any MIOpenDriver version "
                                         f"(the driver stops with 'Input Flag: {short} Not Found')")
            if len(tok) > 2:
                warnings.append(f"{tok} is read as -{short}, as MIOpenDriver reads a single dash")
        else:
            if "$" in tok:
                raise DriverCommandError(f"a placeholder ({tok}) where a flag belongs: the command was pasted "
                                         f"before the shell expanded it")
            raise DriverCommandError(f"value {tok!r} without a flag")
        if i + 1 >= len(args):
            flag = shorts.get(short)
            if not logged and flag is not None and flag.role == _RUN_ONLY:
                warnings.append(f"trailing {tok} without a value ignored")
                break
            raise DriverCommandError(f"flag {tok} has no value (command cut short?)")
        value = args[i + 1]
        if short in values and values[short] != value:
            warnings.append(f"flag -{short} given twice; the last value ({value}) is used, as MIOpenDriver does")
        values[short] = value
        spelled.append((tok, short))
        i += 2
    return ReadFlags(sub, base, values, tuple(spelled), tuple(warnings), version)


class FlagValues:
    """Typed access to one command's flags, with the driver's defaults for omitted ones and
    its reading of each value (``atoi``/``atof``); notes on how a value was read go to
    ``warnings``."""

    def __init__(self, read: ReadFlags):
        self.read = read
        self.raw = read.values
        self.warnings: list[str] = list(read.warnings)
        self._shorts = flag_maps(read.sub, read.version)[1]

    def has(self, key: str) -> bool:
        return key in self.raw

    def default(self, key: str) -> str:
        flag = self._shorts.get(key)
        if flag is None:
            raise KeyError(f"{self.read.sub.family} declares no -{key}")
        return flag.default

    def text(self, key: str) -> str:
        return self.raw[key] if key in self.raw else self.default(key)

    def int(self, key: str, default: Optional[int] = None) -> int:
        """The driver's ``atoi``: the leading integer (``1.`` and ``1.5`` read 1); a value with
        none is refused (``atoi`` would read 0, which no layer has)."""
        v = self.raw.get(key)
        if v is None:
            if default is not None:
                return default
            text = self.default(key)
            return int(text) if _INT_RE.match(text) else 0
        if v.isascii() and v.isdigit() and len(v) <= 12:   # the common case, without a regex
            return int(v)
        if _INT_RE.match(v):
            out = int(v)
        else:
            m = _LEADING_INT_RE.match(v)
            if m is None or "$" in v:
                _placeholder(key, v)
                raise DriverCommandError(f"-{key} must be an integer, got {v!r}")
            out = int(m.group(1))
            self.warnings.append(f"-{key} {v} is read as {out}, as MIOpenDriver's atoi reads it")
        if out < 0:
            raise DriverCommandError(f"-{key} must not be negative, got {v!r}")
        if out > MAX_VALUE:
            raise DriverCommandError(f"-{key} {v} is out of range for MIOpen (at most {MAX_VALUE})")
        return out

    def float(self, key: str, default: Optional[float] = None) -> float:
        if key not in self.raw:
            if default is not None:
                return default
            text = self.default(key)
            return float(text) if _FLOAT_RE.match(text) else 0.0
        v = self.raw[key]
        if not _FLOAT_RE.match(v):
            _placeholder(key, v)
            raise DriverCommandError(f"-{key} must be a number, got {v!r}")
        out = float(v)
        if abs(out) > 1e30:
            raise DriverCommandError(f"-{key} {v} is out of range")
        return out

    def choice(self, key: str, allowed: Sequence[str], default: Optional[str] = None) -> str:
        v = self.raw.get(key, default if default is not None else self.default(key))
        if v not in allowed:
            _placeholder(key, v)
            raise DriverCommandError(f"-{key} must be one of {', '.join(allowed)}, got {v!r}")
        return v

    def layout(self, key: str, ndim: int) -> str:
        """A layout value, upper-cased as the driver does for long names (``nhwc`` -> ``NHWC``);
        the NC(D)HW default when omitted or empty."""
        v = self.raw.get(key, "").upper()
        if not v:
            return "NCHW" if ndim == 2 else "NCDHW"
        if not LAYOUT_RE.match(v):
            raise DriverCommandError(f"unsupported layout {v!r} for -{key}")
        return v

    def dims(self, key: str, default: Optional[str] = None) -> tuple[tuple[int, ...], str]:
        """A tensor flag: ``AxBxC[,LAYOUT|,S0xS1...]`` -> (lengths, layout or "") (strides, when
        given, say the layout when they are a known one's, else nothing)."""
        text = self.raw.get(key, default if default is not None else self.default(key))
        lens_text, _, extra = text.partition(",")
        parts = lens_text.lower().split("x")
        if not lens_text or not all(_LEADING_INT_RE.match(p) for p in parts):
            _placeholder(key, text)
            raise DriverCommandError(f"-{key} must be lengths such as 8x64x56x56, got {text!r}")
        lens = tuple(int(_LEADING_INT_RE.match(p).group(1)) for p in parts)  # type: ignore[union-attr]
        if any(v <= 0 or v > MAX_VALUE for v in lens):
            raise DriverCommandError(f"-{key} lengths must be positive and at most {MAX_VALUE}, got {text!r}")
        layout = ""
        if extra and not extra[0].isdigit():
            layout = extra.upper()
            if not LAYOUT_RE.match(layout):
                raise DriverCommandError(f"unsupported layout {extra!r} in -{key}")
        elif extra:
            strides = tuple(int(s) for s in extra.split("x") if s.isascii() and s.isdigit())
            if len(strides) == len(lens) and len(lens) >= 3 and strides[1] == 1 and strides[-1] != 1:
                layout = "NHWC" if len(lens) == 4 else "NDHWC"
        return lens, layout

    def ints(self, key: str, default: Optional[str] = None) -> tuple[int, ...]:
        """A vector flag: integers split by ``,`` (or spaces), as the driver's stream reads them."""
        text = self.raw.get(key, default if default is not None else self.default(key))
        parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
        if not parts or not all(_INT_RE.match(p) for p in parts):
            _placeholder(key, text)
            raise DriverCommandError(f"-{key} must be integers separated by commas, got {text!r}")
        out = tuple(int(p) for p in parts)
        if any(v > MAX_VALUE for v in out):
            raise DriverCommandError(f"-{key} values must be at most {MAX_VALUE}")
        return out

    def spelled_as(self, key: str) -> Optional[str]:
        """How ``-key`` was written (``-input`` for ``-i``), or None when not given."""
        for token, short in self.read.spelled:
            if short == key:
                return token
        return None

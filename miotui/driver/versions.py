"""Which MIOpenDriver a command is written for: ``--driver-version``, or what a driver says.

Commands are spelled for a target driver (the fusion mode is ``-F`` up to MIOpen 3.5.0 and
``-J`` after; each era accepts its own base names).  Users know their ROCm release more often
than their MIOpen version, so both are accepted: ``3.2.0`` (MIOpen), ``rocm-6.2`` / ``ROCm 6.2``
(mapped through the table read from MIOpen's tags).  A driver found on the machine says its
own version (``MIOpen (version: 2.9.0)`` for ``--version``; ``MIOpen Driver: 3.5.1`` in the
system line of ``-t 1``).
"""

from __future__ import annotations

import re
from typing import Optional

from miotui.driver.spec import parse_version
from miotui.driver.tables.bases import MIOPEN_FOR_ROCM

__all__ = ["DriverVersionError", "resolve_driver_version", "version_from_output", "version_text"]

_ROCM_RE = re.compile(r"^\s*rocm[-_ ]?v?(\d+(?:\.\d+){0,2})\s*$", re.I)
_MIOPEN_RE = re.compile(r"^\s*(?:miopen[-_ ]?)?v?(\d+(?:\.\d+){0,2})\s*$", re.I)
_OUTPUT_RES = (re.compile(r"MIOpen \(version: (\d+\.\d+(?:\.\d+)?)"),
               re.compile(r"MIOpen Driver: (\d+\.\d+(?:\.\d+)?)"),
               re.compile(r"MIOpen version (\d+\.\d+(?:\.\d+)?)"))


class DriverVersionError(ValueError):
    """A version text that names no MIOpen or ROCm release."""


def _rocm(text: str) -> tuple[int, ...]:
    v = parse_version(text)
    key = f"{v[0]}.{v[1] if len(v) > 1 else 0}"
    miopen = MIOPEN_FOR_ROCM.get(key)
    if miopen is None:
        known = ", ".join(sorted(MIOPEN_FOR_ROCM, key=parse_version))
        raise DriverVersionError(f"ROCm {text} is not a release miotui knows the MIOpen version of (known: {known})")
    return parse_version(miopen)


def resolve_driver_version(text: Optional[str]) -> Optional[tuple[int, ...]]:
    """``--driver-version`` -> a MIOpen version (None: today's driver).

    ``rocm-6.2`` is a ROCm release; ``3.2`` / ``3.2.0`` a MIOpen version; a bare number with a
    major of 4 or more can only be a ROCm release (MIOpen has had majors 1 to 3)."""
    if text is None or not text.strip() or text.strip().lower() in ("latest", "today", "newest"):
        return None
    m = _ROCM_RE.match(text)
    if m:
        return _rocm(m.group(1))
    m = _MIOPEN_RE.match(text)
    if m is None:
        raise DriverVersionError(f"{text!r} is not a version (give a MIOpen version such as 3.2.0, or rocm-6.2)")
    v = parse_version(m.group(1))
    return _rocm(m.group(1)) if v[0] >= 4 else v


def version_from_output(text: str) -> Optional[tuple[int, ...]]:
    """The version a driver printed (``--version``, its system-info line), or None."""
    for rx in _OUTPUT_RES:
        m = rx.search(text)
        if m:
            return parse_version(m.group(1))
    return None


def version_text(version: Optional[tuple[int, ...]]) -> str:
    return "today's MIOpenDriver" if version is None else "MIOpenDriver " + ".".join(map(str, version))

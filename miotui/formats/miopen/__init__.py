"""MIOpen's logs: API traces (``MIOPEN_ENABLE_LOGGING``), ``MIOpenDriver`` Command lines
(``MIOPEN_ENABLE_LOGGING_CMD``), level lines (``MIOPEN_LOG_LEVEL``), Find-Db and Perf-Db
records, MIOpenDriver commands and output pasted into a log, and the first iteration's
compile and search lines.  The forms of 2017-2026 are described in ``docs/formats.md``.

:class:`~miotui.formats.miopen.scan.LogScanner` turns a stream of such text into catalog
entries; the rest of the package are its parts, one kind of line each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from miotui.formats.format import Format, Role
from miotui.formats.miopen.hosts import host_label
from miotui.formats.miopen.lines import PREFIX_RE

if TYPE_CHECKING:
    from miotui.catalog import Catalog
    from miotui.formats.miopen.scan import LogScanner

NAME = "miopen"


def claims(text: bytes) -> bool:
    """Whether text names MIOpen (its log lines' prefix, its driver's name).  MIOpen is the
    default format, so this only decides early that a followed log is MIOpen's."""
    return b"MIOpen" in text


def make_scanner(catalog: "Catalog", file: str = "") -> "LogScanner":
    """The MIOpen scanner (imported when first made: the registry is read at start-up)."""
    from miotui.formats.miopen.scan import LogScanner
    return LogScanner(catalog, file)


#: a line MIOpen wrote: its prefix anywhere (other tools' text may come first), or a line
#: starting with its name (``MIOpenDriver``'s own lines)
LINE_PATTERN = r"^MIOpen|" + PREFIX_RE.pattern

FORMAT = Format(NAME, "MIOpen", Role.LOG, claims, make_scanner, host_label, line_pattern=LINE_PATTERN)

__all__ = ["FORMAT", "NAME", "claims", "make_scanner"]

"""Log formats, one package per format, and :data:`FORMATS`, the list of them.

Each package recognises its own text by content and turns it into the events the catalog
takes.  Adding a format is one new package that defines ``FORMAT`` (a
:class:`~miotui.formats.format.Format`) and one line in :data:`FORMATS`; nothing else
names formats.  Why choose by content and not by file name: users pipe, rename and
concatenate logs, and a cuDNN log is a ``.txt`` like any other.
"""

from __future__ import annotations

from miotui.formats import cudnn, miopen, rocprof, torch_profiler
from miotui.formats.format import Format, FormatRegistry, Role, Scanner

#: every format miotui reads; the first is the one a log is read as when no other claims it
FORMATS = FormatRegistry([
    miopen.FORMAT,
    cudnn.FORMAT,
    torch_profiler.FORMAT,
    rocprof.FORMAT,
])

#: the registry's questions, as functions (``decode``, ``diff`` and the tests ask them)
by_name = FORMATS.by_name
claimed = FORMATS.claimed
choose = FORMATS.choose
scanner_for = FORMATS.scanner_for

__all__ = ["FORMATS", "Format", "FormatRegistry", "Role", "Scanner", "by_name", "claimed", "choose", "scanner_for"]

"""Where log bytes come from, and the lines in them: files, ``.gz``, stdin, several files
followed like ``tail -F`` (rotation, truncation, deletion), the process writing them, and
the raw-log pane's view of a file.

Why a package that knows no log format: every format (MIOpen's, cuDNN's, a profiler's
trace) is read from the same kinds of places, and the hard parts of reading (a file
rotated under the reader, a UTF-16 log, a descriptor budget) must be solved once.  The
code that turns text into layers is handed in (``miotui.formats.FORMATS``); the
import contracts forbid this package to import any format.
"""

#: Longer lines are cut to this many characters before they are decoded or shown (a 1 MB
#: progress-bar line must not cost 1 MB per cache entry or per line of the raw pane).
MAX_LINE = 16_384

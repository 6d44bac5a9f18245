"""Untrusted text made safe to show: every path that prints text from a log, a driver,
a file name or the environment passes it through :func:`visible` first.

Why one function in the core: a log line can carry terminal escape sequences (OSC 52
writes the clipboard, OSC 0 sets the title, CSI clears the screen), and MIOpen logs are
pasted from bug reports and written by jobs we do not control.  Every output path
(``miotui decode`` in each format, ``miotui run``, exports, the app's screens) shows the
same visible marks, so a user can still see that a control byte was there.

What is replaced (nothing is dropped):

* C0 controls (``\\x00``-``\\x1f``, tab and optionally newline excepted) by their Unicode
  control pictures (ESC becomes ``␛``), DEL by ``␡``;
* C1 controls (``\\x80``-``\\x9f``: ``\\x9b`` is a one-byte CSI on some terminals) and
  lone surrogates (undecodable bytes of a file name) by ``\\xNN`` / ``\\udcNN`` text;
* invisible formatting and bidirectional overrides (``U+202E`` can make a command read
  differently from what runs) by ``<U+202E>``: every format character (Unicode category
  ``Cf``: the soft hyphen, zero-width marks, bidi controls, the BOM, the tag characters
  ``U+E0000``-``U+E007F`` that can smuggle a hidden ASCII text) and the line and paragraph
  separators ``U+2028``/``U+2029`` (``Zl``/``Zp``: some widgets break a line there).

This module knows nothing of Rich or Textual markup: the UI shows untrusted text as
``Text`` objects, never as markup, and the headless output is plain text.
"""

from __future__ import annotations

import functools
import unicodedata

_CONTROL_PICTURE_BASE = 0x2400

#: Unicode categories shown as ``<U+XXXX>``: format characters (invisible, or reordering
#: the text around them) and the line/paragraph separators
_INVISIBLE_CATEGORIES = frozenset(("Cf", "Zl", "Zp"))
#: the planes that hold any such character (the BMP, the SMP's few format controls, and
#: plane 14's tags); scanned once, the first time text that is not ASCII is shown (about
#: 10 ms), so the marks follow the running Python's Unicode version, not a list that ages
_PLANES = (range(0x0000, 0x20000), range(0xE0000, 0xE1000))
#: unassigned code points of the tag block and the bidi/invisible ranges, marked anyway
#: (a newer terminal may give them a meaning this Python does not know yet)
_ALWAYS = (range(0xE0000, 0xE0080), range(0x2060, 0x2070), range(0x200B, 0x2010), range(0x202A, 0x202F))


@functools.lru_cache(maxsize=1)
def _invisible() -> tuple[int, ...]:
    found = {i for plane in _PLANES for i in plane if unicodedata.category(chr(i)) in _INVISIBLE_CATEGORIES}
    found.update(i for r in _ALWAYS for i in r)
    return tuple(sorted(found))


def _ascii_table(keep_newlines: bool) -> dict[int, str]:
    table: dict[int, str] = {i: chr(_CONTROL_PICTURE_BASE + i) for i in range(32) if i != 9}
    if keep_newlines:
        del table[10]
    table[0x7F] = "\u2421"
    return table


@functools.lru_cache(maxsize=2)
def _full_table(keep_newlines: bool) -> dict[int, str]:
    table = _ascii_table(keep_newlines)
    for i in range(0x80, 0xA0):
        table[i] = f"\\x{i:02x}"
    for i in _invisible():
        table[i] = f"<U+{i:04X}>"
    for i in range(0xD800, 0xE000):   # lone surrogates cannot even be encoded for output
        table[i] = f"\\u{i:04x}"
    return table


#: for ASCII text (nearly every log line): only C0 and DEL can occur
_ASCII = {False: _ascii_table(False), True: _ascii_table(True)}


def visible(text: str, *, newlines: bool = False, tabsize: int = 0) -> str:
    """``text`` with every control, C1 and invisible formatting character shown as a
    visible mark.  ``newlines`` keeps ``\\n`` (multi-line text); ``tabsize`` > 0 expands
    tabs (a tab is kept otherwise: it moves the cursor but cannot drive the terminal)."""
    if tabsize:
        text = text.expandtabs(tabsize)
    return text.translate(_ASCII[bool(newlines)] if text.isascii() else _full_table(bool(newlines)))


def is_visible(text: str, *, newlines: bool = False) -> bool:
    """True when ``visible`` would leave ``text`` unchanged (for tests and assertions)."""
    return visible(text, newlines=newlines) == text

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
  differently from what runs) by ``<U+202E>``.

This module knows nothing of Rich or Textual markup: the UI shows untrusted text as
``Text`` objects, never as markup, and the headless output is plain text.
"""

from __future__ import annotations

_CONTROL_PICTURE_BASE = 0x2400

#: formatting characters that are invisible or reorder text (bidi embeddings, overrides,
#: isolates, zero-width marks, the BOM)
_INVISIBLE = (list(range(0x200B, 0x2010)) + list(range(0x202A, 0x202F)) + list(range(0x2060, 0x2065))
              + list(range(0x2066, 0x206A)) + [0x061C, 0xFEFF, 0x180E])


def _table(keep_newlines: bool) -> dict[int, str]:
    table: dict[int, str] = {i: chr(_CONTROL_PICTURE_BASE + i) for i in range(32) if i != 9}
    if keep_newlines:
        del table[10]
    table[0x7F] = "\u2421"
    for i in range(0x80, 0xA0):
        table[i] = f"\\x{i:02x}"
    for i in _INVISIBLE:
        table[i] = f"<U+{i:04X}>"
    for i in range(0xD800, 0xE000):   # lone surrogates cannot even be encoded for output
        table[i] = f"\\u{i:04x}"
    return table


_ONE_LINE = _table(keep_newlines=False)
_MULTI_LINE = _table(keep_newlines=True)


def visible(text: str, *, newlines: bool = False, tabsize: int = 0) -> str:
    """``text`` with every control, C1 and invisible formatting character shown as a
    visible mark.  ``newlines`` keeps ``\\n`` (multi-line text); ``tabsize`` > 0 expands
    tabs (a tab is kept otherwise: it moves the cursor but cannot drive the terminal)."""
    if tabsize:
        text = text.expandtabs(tabsize)
    return text.translate(_MULTI_LINE if newlines else _ONE_LINE)


def is_visible(text: str, *, newlines: bool = False) -> bool:
    """True when ``visible`` would leave ``text`` unchanged (for tests and assertions)."""
    return visible(text, newlines=newlines) == text

"""Rich renderables laid out to plain styled text in a worker thread.

Why: a Rich ``Table`` measures every cell of every column each time it is drawn, and the
detail screen holds a dozen of them; on a busy 2-core host drawing them took most of the
100-490 ms that ``enter`` took to show (issue 19 §6).  Laying them out once, at the
width they will be shown at, in a thread, leaves the UI thread a ``Text`` of styled lines:
Textual draws that without measuring anything.  A wrong width only crops (the screen
lays out again on a resize).
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.text import Text


def render_text(renderable: Any, width: int) -> Text:
    """``renderable`` as Rich draws it ``width`` cells wide, as styled text (one line per
    drawn line, never wrapped again)."""
    width = max(1, width)
    console = Console(width=width, file=io.StringIO(), color_system="truecolor", force_terminal=True,
                      legacy_windows=False, emoji=False, highlight=False, markup=False)
    lines = console.render_lines(renderable, console.options.update(width=width), pad=False, new_lines=False)
    while lines and not "".join(seg.text for seg in lines[-1]).strip():
        lines.pop()                       # a trailing blank line would be a blank row on screen
    text = Text(no_wrap=True, overflow="crop", end="")
    for i, line in enumerate(lines):
        if i:
            text.append("\n")
        for seg in line:
            if not seg.control and seg.text:
                text.append(seg.text, seg.style)
    return text

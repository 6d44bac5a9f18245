"""Plain-text tables for the headless commands (``decode --format table``, ``run``).

The core prints through this instead of Rich so that it never imports the UI stack (an
import-linter contract checks it) and so that its output is the same on a terminal, in a pipe
and in a CI log: columns padded with spaces, a dashed rule under the titles, no colour codes.
Cells are expected to be sanitised already (``safe_text.visible``).
"""

from __future__ import annotations

from typing import Sequence


def aligned(columns: Sequence[tuple[str, bool]], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a table; ``columns`` are (title, right-aligned) pairs, one per cell of a row."""
    widths = [max([len(title)] + [len(r[i]) for r in rows]) for i, (title, _right) in enumerate(columns)]
    out = []
    for cells in [[t for t, _ in columns]] + [list(r) for r in rows]:
        parts = [c.rjust(w) if right else c.ljust(w) for c, w, (_t, right) in zip(cells, widths, columns, strict=True)]
        out.append("  ".join(parts).rstrip())
    out.insert(1, "  ".join("-" * w for w in widths))
    return out

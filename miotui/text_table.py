"""Plain-text tables for the headless commands (``decode --format table``, ``run``).

The core prints through this instead of Rich so that it never imports the UI stack (an
import-linter contract checks it) and so that its output is the same on a terminal, in a pipe
and in a CI log: columns padded with spaces, a dashed rule under the titles, no colour codes.
Cells are expected to be sanitised already (``safe_text.visible``).
"""

from __future__ import annotations

from typing import Iterator, Sequence

#: between the cells of a kept row (cells are sanitised, so it never occurs in one)
_CELL_SEP = "\x1f"


class TextTable:
    """A table filled row by row and written line by line.  The column widths need every row,
    so rows are kept, each as one string (a table of 200,000 layers kept as lists of cells
    took about three times the memory), and the lines are made only as they are written."""

    def __init__(self, columns: Sequence[tuple[str, bool]]):
        """``columns``: (title, right-aligned) pairs, one per cell of a row."""
        self.columns = tuple(columns)
        self.widths = [len(title) for title, _right in self.columns]
        self._rows: list[str] = []

    def add(self, cells: Sequence[str]) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells for {len(self.columns)} columns")
        row = _CELL_SEP.join(cells)
        if row.count(_CELL_SEP) != len(cells) - 1:   # a cell that was not sanitised: show the byte
            cells = [c.replace(_CELL_SEP, "\u241f") for c in cells]
            row = _CELL_SEP.join(cells)
        self.widths = list(map(max, self.widths, map(len, cells)))
        self._rows.append(row)

    def lines(self) -> Iterator[str]:
        """The titles, a dashed rule, then a line per row, each without trailing spaces."""
        pads = [(w, right) for w, (_title, right) in zip(self.widths, self.columns, strict=True)]

        def line(cells: Sequence[str]) -> str:
            return "  ".join([c.rjust(w) if right else c.ljust(w)
                              for c, (w, right) in zip(cells, pads, strict=True)]).rstrip()

        yield line([title for title, _right in self.columns])
        yield "  ".join("-" * w for w in self.widths)
        for row in self._rows:
            yield line(row.split(_CELL_SEP))


def aligned(columns: Sequence[tuple[str, bool]], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a table; ``columns`` are (title, right-aligned) pairs, one per cell of a row."""
    table = TextTable(columns)
    for row in rows:
        table.add(row)
    return list(table.lines())

"""Where the MIOpen scanner's findings go: one object that hands them to the catalog.

Why a sink and not the catalog itself: the scanner's parts (the call tracker, the
first-iteration attributor, the replay of repeated lines) each write what they found, and a
range of a file decoded after a warm-up goes on into another catalog (``LogScanner.move_to``):
the parts hold this sink, and only the sink changes catalogs.  It adds what every finding
of one scanner shares (the file's name) and says what the scanner may do with a catalog:
tell it what it read, never set the catalog's counters or read its rows' fields itself.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional

from miotui.catalog import Catalog, LayerRow
from miotui.problems import Problem

RawLines = Optional[Callable[[], Iterable[tuple[int, str]]]]


class CatalogSink:
    """One scanner's writes into its catalog (see the module docstring)."""

    __slots__ = ("catalog", "file")

    def __init__(self, catalog: Catalog, file: str) -> None:
        self.catalog = catalog
        self.file = file

    def writing(self):
        """The context one chunk of input is read under (the catalog's writer lock)."""
        return self.catalog.writing()

    def sighting(self, problem: Problem, role: str, source: str, line: int, warnings: Iterable[str] = (),
                 annotations: Iterable[tuple[str, str]] = (), raw: RawLines = None, count: bool = True,
                 only_if_new: bool = False) -> LayerRow:
        """One sighting of a layer (``Catalog.add_sighting``); its row, the handle later
        findings of the same call use."""
        return self.catalog.add_sighting(problem, role, source, line, self.file, warnings, annotations, raw,
                                         count, only_if_new)

    def count_again_all(self, calls: Iterable[tuple[LayerRow, str, int, int]]) -> None:
        """``count_again`` for each (row, role, last line, times): the replayed calls of a
        stretch of lines, handed over at once."""
        count_again, file = self.catalog.count_again, self.file
        for row, role, line, times in calls:
            count_again(row, role, line, times, file)

    def row_for(self, problem: Problem, line: int) -> LayerRow:
        return self.catalog.row_for(problem, line, self.file)

    def existing_row(self, problem: Problem) -> Optional[LayerRow]:
        return self.catalog.existing_row(problem)

    def annotate(self, row: LayerRow, name: str, value: str) -> None:
        self.catalog.annotate(row, name, value)

    def has_latest(self, row: LayerRow, pairs: Iterable[tuple[str, str]]) -> bool:
        return self.catalog.has_latest(row, pairs)

    def annotation_changes(self) -> int:
        """The catalog's count of changed annotation values (``Catalog.annotation_changes``)."""
        return self.catalog.annotation_changes

    def problem_of(self, row: LayerRow) -> Problem:
        return self.catalog.problem_of(row)

    def layer_id(self, row: LayerRow) -> int:
        return self.catalog.layer_id(row)

    def touched_last(self, rows: dict[str, LayerRow]) -> str:
        return self.catalog.touched_last(rows)

    def undecoded(self, line: int, reason: str, text: str) -> None:
        self.catalog.add_undecoded(line, reason, text, self.file)

    def startup_fact(self, row: Optional[LayerRow], kind: str, ms: Optional[float], line: int,
                     clock_ms: Optional[float], name: str = "") -> None:
        self.catalog.record_startup(row, kind, ms, line, clock_ms, name)

    def setting(self, name: str, value: str) -> None:
        self.catalog.setting(name, value)

    def search_progress(self, progress, tid: str) -> None:
        self.catalog.search_progress(progress, tid)

    def unknown_find(self) -> None:
        self.catalog.unknown_find()

    def read_bytes(self, count: int) -> None:
        self.catalog.read_bytes(count)

    def read_lines(self, count: int) -> None:
        self.catalog.read_lines(count)

    def log_is_timed(self) -> None:
        self.catalog.log_is_timed()

    def input_ended(self) -> None:
        self.catalog.input_ended()

    def move_to(self, catalog: Catalog) -> dict[int, LayerRow]:
        """Go on into ``catalog``: the rows met so far are carried there (``Catalog.carry_rows``);
        returns old row id -> its row there."""
        made = catalog.carry_rows(self.catalog.rows_met())
        if self.catalog.timed:
            catalog.log_is_timed()
        self.catalog = catalog
        return made

"""The layers table's data: columns, cell text, filtering and sorting (no Textual here).

Why a model separate from the widget: the widget must answer a keypress in well under
100 ms with 10 000 layers while the log grows, so every cost is paid once and kept:

* a layer's *shape* cells never change (a row is keyed by its problem value), so they
  are formatted once, when the row first appears;
* a catalog update touches only the *counter* cells of the rows that changed;
* the visible order (``view``: filter + op tab + sort) is rebuilt only when a change
  can affect it, and otherwise new rows are appended (first-seen order is the default);
* column widths only grow, so the table does not jitter while counters climb.

The filter language (``/`` in the app)::

    conv 3x3              free text: every word must appear in the row
    op:conv dir:wrw       field:value (prefix match, case-insensitive)
    dtype:fp16,bf16       a comma means "any of"
    -op:pool  !dir:fwd    a leading - or ! negates
    n:>=64 exec:>100      numbers: = != > >= < <= and ranges 32..128
    filter:3              a dims field also matches when every dimension equals it (3x3, 3x3x3)

Rows are keyed by the layer's id (``LayerSnapshot.id``: its arrival order, from 1),
the number the ``#`` column shows and ``miotui run --log F --layer K`` takes.

Columns have a *priority*: a narrow terminal shows the most important ones (``# op dir
dtype``, the shape, executions, the share of the logged GPU time, a run's time and
verdict) and a wider one adds the rest in order, as htop's column setup and k9s's wide
view do (:func:`fit_columns`).  Columns that hold nothing yet (no time in the log, no run
yet) take no room (``optional``).

Time (``miotui.views.timing``): ``ms/call`` is MIOpen's logged GPU time per call (its source is
named in the detail), ``total ms`` that times the executions, ``share`` the total over the
sum of every timed layer's total.  A share changes whenever any layer runs again, so the
model keeps the sum (``time_total``) and the costliest total (``time_top``, the full bar)
and the cell is drawn from them when it is on screen (:func:`share_text`), never stored.
A time miotui measured itself is the separate ``run time`` column, never in these.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence

from miotui.export import layer_columns
from miotui.safe_text import visible
from miotui.views import units
from miotui.views.run_summary import RunSummary
from miotui.views.timing import per_call_time

#: Seconds a new row stays highlighted.
NEW_ROW_SECONDS = 2.0


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    numeric: bool = False
    dynamic: bool = False      # changes while the log grows (counters, results)
    max_width: int = 12
    optional: bool = False     # shown only when some row has a value (D, file)
    help: str = ""
    #: 0 always shown; higher numbers appear as the terminal gets wider
    priority: int = 5
    #: takes the width left over (the solver name)
    flex: bool = False
    #: stays on screen when the table scrolls right
    frozen: bool = False
    #: the narrowest it is drawn (room for the title and the sort arrow)
    min_width: int = 0


COLUMNS: tuple[Column, ...] = (
    Column("id", "#", numeric=True, max_width=6, help="the layer's id: its arrival order (miotui run --layer)",
           priority=0, frozen=True),
    Column("op", "op", max_width=9, priority=0, frozen=True),
    Column("dir", "dir", max_width=9, help="direction: fwd, bwd (data), wrw (weights), fwd_train ...",
           priority=0, frozen=True),
    Column("dtype", "dtype", max_width=7, priority=0, frozen=True),
    # after the frozen columns: the wide view scrolls it with the rest (frozen ones must lead)
    Column("file", "file", dynamic=True, max_width=22, optional=True, help="source file (several logs)",
           priority=2),
    Column("layout", "layout", max_width=6, priority=5),
    Column("n", "N", numeric=True, max_width=6, priority=1),
    Column("c", "C", numeric=True, max_width=6, priority=1),
    Column("d", "D", numeric=True, max_width=5, optional=True, priority=2),
    Column("h", "H", numeric=True, max_width=6, priority=1),
    Column("w", "W", numeric=True, max_width=6, priority=1),
    Column("k", "K", numeric=True, max_width=6, priority=1),
    Column("filter", "filter", max_width=8, help="filter / pooling window", priority=1),
    Column("pad", "pad", max_width=7, priority=2),
    Column("stride", "stride", max_width=7, priority=2),
    Column("dilation", "dil", max_width=7, priority=5),
    Column("groups", "g", numeric=True, max_width=5, priority=5),
    Column("mode", "mode", max_width=12, priority=5),
    Column("output", "output", max_width=16, priority=5),
    Column("executions", "exec", numeric=True, dynamic=True, max_width=13, priority=0),
    Column("call_ms", "ms/call", numeric=True, dynamic=True, max_width=9, optional=True,
           help="MIOpen's logged GPU time per call (perf log > execution log > find > driver)", priority=4,
           min_width=8),
    Column("total_ms", "total ms", numeric=True, dynamic=True, max_width=10, optional=True,
           help="logged GPU time: ms/call x executions", priority=3, min_width=9),
    Column("share", "share", numeric=True, dynamic=True, max_width=11, optional=True,
           help="share of the logged GPU time; the bar is relative to the costliest layer", priority=1),
    Column("finds", "find", numeric=True, dynamic=True, max_width=9, priority=4),
    Column("work", "work", numeric=True, max_width=11, help="FLOPs per call", priority=4),
    Column("solver", "solver", dynamic=True, max_width=20,
           help="the library's choice: MIOpen's solver/algorithm, cuDNN's engine and knobs or plan",
           priority=3, flex=True),
    Column("run_ms", "run time", numeric=True, dynamic=True, max_width=9, optional=True,
           help="last run in miotui: median time per call (its own figure, not the log's GPU time)", priority=0),
    Column("rate", "speed", numeric=True, dynamic=True, max_width=12, optional=True,
           help="last run: GFLOP/s for convolutions, GB/s for memory-bound layers", priority=2),
    Column("verdict", "verdict", dynamic=True, max_width=24, optional=True,
           help="the runs' verdict: of each backend's latest run, a failure before a pass, a pass before "
                "n/a or cancelled; the backend named, +N the other backends run", priority=0),
    Column("miopen", "MIOpen verdict", dynamic=True, max_width=20, optional=True,
           help="MIOpen's own verdict printed in the log (MIOpenDriver's FAILED / Verifies OK: error/tolerance)",
           priority=1),
)
COLUMN_BY_KEY = {c.key: c for c in COLUMNS}
#: the widest a flex column grows to
FLEX_MAX = 48
#: the share cell: ``100.0%`` and a bar of eighth blocks
SHARE_WIDTH = 11
_EIGHTHS = " ▏▎▍▌▋▊▉"

#: Filter field names -> column keys.
FIELD_ALIASES = {
    "#": "id", "index": "id", "id": "id", "file": "file", "op": "op", "dir": "dir",
    "direction": "dir", "dtype": "dtype", "type": "dtype", "layout": "layout", "n": "n", "c": "c", "d": "d",
    "h": "h", "w": "w", "k": "k", "filter": "filter", "fil": "filter", "window": "filter", "pad": "pad",
    "stride": "stride", "dil": "dilation", "dilation": "dilation", "g": "groups", "groups": "groups",
    "group": "groups", "mode": "mode", "out": "output", "output": "output", "exec": "executions",
    "executions": "executions", "find": "finds", "finds": "finds", "gflop": "work", "work": "work",
    "flop": "work", "solver": "solver", "algo": "solver", "ms": "call_ms", "total": "total_ms", "run": "run_ms",
    "runms": "run_ms",
    "time": "run_ms", "gflops": "rate", "speed": "rate", "rate": "rate", "verdict": "verdict", "src": "source",
    "miopen": "miopen", "logged": "miopen",
    "source": "source", "warn": "warnings", "warnings": "warnings",
}
DIMS_KEYS = frozenset({"filter", "pad", "stride", "dilation", "output"})


class Row:
    """One layer: its snapshot, its formatted cells and its search text."""

    __slots__ = ("id", "snapshot", "values", "cells", "added", "result", "_search", "version", "time_source",
                 "files_text")

    def __init__(self, snapshot: Any, now: float) -> None:
        self.id: int = snapshot.id
        self.snapshot = snapshot
        self.values: dict[str, Any] = {}
        self.cells: dict[str, str] = {}
        self.added = now
        self.result: Optional[RunSummary] = None
        self._search: Optional[str] = None
        self.version = 0
        self.time_source: Optional[str] = None
        p = snapshot.problem
        cols = layer_columns(p)
        v = self.values
        v["id"] = snapshot.id
        v["op"] = p.op
        v["dir"] = p.direction
        v["dtype"] = p.dtype
        v["layout"] = p.layout
        for key in ("n", "c", "d", "h", "w", "k", "filter", "pad", "stride", "dilation", "groups", "mode", "output"):
            v[key] = cols[key]
        v["work"] = p.flops
        for key in ("id", "op", "dir", "dtype", "layout", "n", "c", "d", "h", "w", "k", "filter", "pad",
                    "stride", "dilation", "groups", "mode", "output"):
            self.cells[key] = visible(str(v[key]))
        self.cells["work"] = units.flops(p.flops)
        self.set_snapshot(snapshot)

    def set_snapshot(self, snapshot: Any) -> None:
        self.snapshot = snapshot
        v, cells = self.values, self.cells
        v["executions"] = snapshot.executions
        v["finds"] = snapshot.finds
        cells["executions"] = f"{snapshot.executions:,}" if snapshot.executions else ""
        cells["finds"] = f"{snapshot.finds:,}" if snapshot.finds else ""
        files = tuple(getattr(snapshot, "files", ()))
        if files:
            name = visible(os.path.basename(files[0]))
            cells["file"] = name if len(files) == 1 else f"{name} +{len(files) - 1}"
        else:
            cells["file"] = ""
        v["file"] = cells["file"]
        #: every file the layer was seen in (``file:`` matches any of them, not only the shown one)
        self.files_text = " ".join(visible(os.path.basename(f)) for f in files).lower()
        ann = dict(snapshot.annotations)
        v["miopen"] = cells["miopen"] = logged_verdict(ann)
        solver = ann.get("solver", "")
        if not solver and ann.get("algorithm"):
            solver = f"algo {ann['algorithm']}"
        v["solver"] = cells["solver"] = visible(solver)
        ms, source = per_call_time(snapshot.annotations)
        total = ms * snapshot.executions if ms is not None and snapshot.executions else None
        v["call_ms"], v["total_ms"], v["share"] = ms, total, total   # a share sorts as its total
        self.time_source = source
        cells["call_ms"] = units.sig(ms) if ms is not None else ""
        cells["total_ms"] = units.sig(total) if total is not None else ""
        self._search = None
        self.version += 1

    def set_result(self, result: Optional[RunSummary]) -> None:
        self.result = result
        v, cells = self.values, self.cells
        v["run_ms"] = result.ms if result else None
        v["rate"] = result.rate if result else None
        v["verdict"] = result.verdict if result else ""
        cells["run_ms"] = units.time_ms(v["run_ms"]) if v["run_ms"] is not None else ""
        cells["rate"] = result.rate_text if result and result.rate is not None else ""
        cells["verdict"] = result.verdict_text if result else ""
        self._search = None
        self.version += 1

    @property
    def search_text(self) -> str:
        if self._search is None:
            s = self.snapshot
            parts = [c for c in self.cells.values() if c]
            parts += list(s.sources) + list(s.warnings) + [s.driver_command]
            self._search = " ".join(parts).lower()
        return self._search

    def field_text(self, key: str) -> str:
        if key == "file":
            return self.files_text
        if key == "verdict":     # ours and MIOpen's logged one: verdict:failed finds either
            return f"{self.cells.get('verdict', '')} | {self.cells.get('miopen', '')}".lower()
        if key == "source":
            return " ".join(self.snapshot.sources).lower()
        if key == "warnings":
            return " ".join(self.snapshot.warnings).lower()
        return self.cells.get(key, "").lower()

    def sort_value(self, key: str) -> tuple:
        col = COLUMN_BY_KEY[key]
        value = self.values.get(key)
        if col.numeric:
            if value is None or value == "":
                return (0, 0.0)
            return (1, float(value))
        text = str(value if value is not None else "").lower()
        return (1 if text else 0, text)


def logged_verdict(annotations: dict[str, str]) -> str:
    """MIOpen's own verdict printed in the log (MIOpenDriver's ``FAILED`` or ``Verifies OK``),
    with its error and tolerance where printed: ``FAILED 3.1e-02/1.5e-05``, ``ok 1.2e-07``;
    empty where the log holds none."""
    verdict = annotations.get("driver_verdict", "")
    if not verdict:
        return ""
    text = "FAILED" if verdict.upper().startswith("FAIL") else "ok"
    error, tolerance = annotations.get("driver_verify_error", ""), annotations.get("driver_tolerance", "")
    if error:
        text += " " + _sci(error) + ("/" + _sci(tolerance) if tolerance else "")
    return text


def _sci(text: str) -> str:
    try:
        return units.sci(float(text))
    except ValueError:
        return visible(text)


# ---------------------------------------------------------------------- filter

_NUM_RE = re.compile(r"^(>=|<=|!=|=|>|<)?\s*(-?\d+(?:\.\d*)?(?:e-?\d+)?)$", re.I)
_RANGE_RE = re.compile(r"^(-?\d+(?:\.\d*)?)\.\.(-?\d+(?:\.\d*)?)$")

Predicate = Callable[[Row], bool]


@dataclass(frozen=True)
class FilterSpec:
    text: str
    predicates: tuple[Predicate, ...]
    errors: tuple[str, ...]
    fields: frozenset[str]     # column keys the filter reads (to know when a change matters)

    def matches(self, row: Row) -> bool:
        for p in self.predicates:
            if not p(row):
                return False
        return True

    @property
    def active(self) -> bool:
        return bool(self.predicates)


def _number_predicate(key: str, value: str) -> Optional[Predicate]:
    m = _RANGE_RE.match(value)
    if m:
        lo, hi = float(m.group(1)), float(m.group(2))

        def in_range(row: Row) -> bool:
            v = row.values.get(key)
            return isinstance(v, (int, float)) and lo <= v <= hi
        return in_range
    m = _NUM_RE.match(value)
    if not m:
        return None
    op = m.group(1) or "="
    target = float(m.group(2))
    compare = {"=": lambda v: v == target, "!=": lambda v: v != target, ">": lambda v: v > target,
               ">=": lambda v: v >= target, "<": lambda v: v < target, "<=": lambda v: v <= target}[op]

    def num(row: Row) -> bool:
        v = row.values.get(key)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return op == "!="
        return compare(v)
    return num


def _text_predicate(key: str, value: str) -> Predicate:
    alternatives = [a for a in value.lower().split(",") if a]
    dims_key = key in DIMS_KEYS

    def text(row: Row) -> bool:
        cell = row.field_text(key)
        for a in alternatives:
            if cell.startswith(a):
                return True
            if dims_key and cell and all(part == a for part in cell.split("x")):
                return True
            if key in ("source", "warnings", "solver", "mode", "file", "verdict", "miopen") and a in cell:
                return True
        return False
    return text


def parse_filter(text: str) -> FilterSpec:
    """Compile a filter; unknown fields and bad numbers become errors (and are ignored)."""
    preds: list[Predicate] = []
    errors: list[str] = []
    fields: set[str] = set()
    for token in text.split():
        negate = False
        if token[0] in "-!" and len(token) > 1:
            negate, token = True, token[1:]
        name, sep, value = token.partition(":")
        pred: Optional[Predicate]
        if sep and name.lower() in FIELD_ALIASES:
            key = FIELD_ALIASES[name.lower()]
            if not value:
                errors.append(f"{name}: needs a value")
                continue
            col = COLUMN_BY_KEY.get(key)
            fields.add(key)
            if col is not None and col.numeric:
                pred = _number_predicate(key, value)
                if pred is None:
                    errors.append(f"{name}:{value}: not a number or comparison (e.g. {name}:>=64, {name}:32..128)")
                    continue
            else:
                pred = _text_predicate(key, value)
        elif sep and name and not value.startswith("/"):
            errors.append(f"unknown field {name!r}")
            continue
        else:
            needle = token.lower()
            fields.add("*")

            def pred(row: Row, needle: str = needle) -> bool:
                return needle in row.search_text
        if negate:
            inner = pred

            def pred(row: Row, inner: Predicate = inner) -> bool:  # type: ignore[no-redef]
                return not inner(row)
        preds.append(pred)
    return FilterSpec(text, tuple(preds), tuple(errors), frozenset(fields))


# ---------------------------------------------------------------------- the model

@dataclass(frozen=True)
class UpdateInfo:
    new: tuple[int, ...]
    changed: tuple[int, ...]
    view_changed: bool


class LayerTableModel:
    """Rows by layer id, plus the current view (the visible ids, in order)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.rows: dict[int, Row] = {}
        self.view: list[int] = []
        self._pos: Optional[dict[int, int]] = None
        self.sort_key = "id"
        self.sort_reverse = False
        self.filter = parse_filter("")
        self.op_kind: Optional[str] = None
        # room for the sort arrow next to a one-letter title ("#▲")
        self.widths: dict[str, int] = {c.key: max(2, len(c.title), c.min_width) for c in COLUMNS}
        #: the longest cell of each column, uncut (a flex column may grow to it)
        self.natural: dict[str, int] = dict(self.widths)
        self.has_value: set[str] = set()
        self.op_counts: dict[str, int] = {}
        self.clock = clock
        #: the sum of every layer's logged GPU total, the largest one, and a counter that
        #: moves when either does (share cells on screen are redrawn then)
        self.time_total = 0.0
        self.time_top = 0.0
        self.time_version = 0

    # ------------------------------------------------------------------ updates

    def update(self, snapshots: Iterable[Any]) -> UpdateInfo:
        now = self.clock()
        new: list[int] = []
        changed: list[int] = []
        total, top, recount = self.time_total, self.time_top, False
        for snap in snapshots:
            row = self.rows.get(snap.id)
            if row is None:
                row = Row(snap, now)
                self.rows[snap.id] = row
                self.op_counts[row.values["op"]] = self.op_counts.get(row.values["op"], 0) + 1
                new.append(snap.id)
                before = None
            else:
                before = row.values["total_ms"]
                row.set_snapshot(snap)
                changed.append(snap.id)
            after = row.values["total_ms"]
            if after != before:
                total += (after or 0.0) - (before or 0.0)
                if after is not None and after > top:
                    top = after
                elif before is not None and before >= top:
                    recount = True          # the costliest layer got cheaper (a better time source)
            self._grow_widths(row)
        if recount:
            top = max((r.values["total_ms"] or 0.0 for r in self.rows.values()), default=0.0)
        if (total, top) != (self.time_total, self.time_top):
            self.time_total, self.time_top = max(total, 0.0), top
            self.time_version += 1
        view_changed = self._after_change(new, changed)
        return UpdateInfo(tuple(new), tuple(changed), view_changed)

    def share_cell(self, row: Row, width: int = SHARE_WIDTH) -> str:
        """The share cell of ``row`` now (``""`` for a layer with no logged total)."""
        return share_text(row.values["total_ms"], self.time_total, self.time_top, width)

    def set_result(self, layer_id: int, result: Optional[RunSummary]) -> bool:
        row = self.rows.get(layer_id)
        if row is None:
            return False
        row.set_result(result)
        self._grow_widths(row)
        return self._after_change([], [layer_id])

    def _grow_widths(self, row: Row) -> None:
        widths = self.widths
        if row.values["total_ms"] is not None and "share" not in self.has_value:
            self.has_value.add("share")
            widths["share"] = self.natural["share"] = SHARE_WIDTH
        for key, text in row.cells.items():
            if text:
                self.has_value.add(key)
                n = len(text)
                if n > self.natural[key]:
                    self.natural[key] = n
                if n > widths[key]:
                    widths[key] = min(n, COLUMN_BY_KEY[key].max_width)

    def _after_change(self, new: list[int], changed: list[int]) -> bool:
        """Keep ``view`` right after rows changed; True when the visible order changed."""
        if not new and not changed:
            return False
        order_fields = {self.sort_key} | set(self.filter.fields)
        dynamic_matters = any(COLUMN_BY_KEY.get(k, Column(k, k, dynamic=True)).dynamic or k == "*"
                              or k in ("source", "warnings") for k in order_fields)
        if changed and dynamic_matters:
            self._rebuild()
            return True
        if not new:
            return False
        fast = self.sort_key == "id" and not self.sort_reverse
        accepted = [i for i in sorted(new) if self._accepts(self.rows[i])]
        if not accepted:
            return False
        if fast and (not self.view or accepted[0] > self.view[-1]):
            pos = self._pos
            for i in accepted:
                if pos is not None:
                    pos[i] = len(self.view)
                self.view.append(i)
            return True
        self._rebuild()
        return True

    def _accepts(self, row: Row) -> bool:
        if self.op_kind is not None and row.values["op"] != self.op_kind:
            return False
        return self.filter.matches(row)

    def _rebuild(self) -> None:
        # First-seen order first, then a stable sort: equal values keep that order both ways.
        rows = [r for _, r in sorted(self.rows.items()) if self._accepts(r)]
        key = self.sort_key
        rows.sort(key=lambda r: r.sort_value(key), reverse=self.sort_reverse)
        self.view = [r.id for r in rows]
        self._pos = None

    # ------------------------------------------------------------------ view controls

    def set_filter(self, text: str) -> FilterSpec:
        self.filter = parse_filter(text)
        self._rebuild()
        return self.filter

    def set_op_kind(self, op: Optional[str]) -> None:
        self.op_kind = op
        self._rebuild()

    def set_sort(self, key: str, reverse: Optional[bool] = None) -> None:
        if key not in COLUMN_BY_KEY:
            raise KeyError(key)
        if reverse is None:
            # Same column again flips the order; a new column starts with the useful order
            # (biggest first for numbers, A-Z for text).
            reverse = (not self.sort_reverse) if key == self.sort_key else COLUMN_BY_KEY[key].numeric
        self.sort_key, self.sort_reverse = key, reverse
        self._rebuild()

    def position(self, layer_id: int) -> Optional[int]:
        if self._pos is None:
            self._pos = {idx: i for i, idx in enumerate(self.view)}
        return self._pos.get(layer_id)

    def visible_columns(self) -> list[Column]:
        return [c for c in COLUMNS if not c.optional or c.key in self.has_value]

    def newest_id(self) -> Optional[int]:
        """The most recently first-seen layer that the view shows."""
        if not self.view:
            return None
        if self.sort_key == "id" and not self.sort_reverse:
            return self.view[-1]
        return max(self.view)

    def is_new(self, row: Row, now: Optional[float] = None) -> bool:
        return ((now if now is not None else self.clock()) - row.added) < NEW_ROW_SECONDS

    def row_at(self, position: int) -> Optional[Row]:
        if 0 <= position < len(self.view):
            return self.rows[self.view[position]]
        return None

    def snapshots_in_view(self) -> list[Any]:
        return [self.rows[i].snapshot for i in self.view]


def share_text(total: Optional[float], grand: float, top: float, width: int = SHARE_WIDTH) -> str:
    """``  3.8% █▌  ``: the share of the logged GPU time and a bar relative to the costliest
    layer (``top``), in ``width`` cells; only the number when there is no room for a bar."""
    if total is None or grand <= 0:
        return ""
    pct = 100.0 * total / grand
    number = f"{pct:.1f}%" if pct >= 0.05 or total == 0 else "<0.1%"
    room = width - 7
    if room <= 0:
        return number
    eighths = round(min(1.0, total / top) * room * 8) if top > 0 else 0
    bar = "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")
    return f"{number:>6} {bar:<{room}}"


def format_cell(text: str, width: int, numeric: bool) -> str:
    """Pad or cut ``text`` to ``width`` cells (numbers right-aligned; cut text ends in '…')."""
    if len(text) > width:
        text = text[:max(0, width - 1)] + "…" if width > 0 else ""
    return text.rjust(width) if numeric else text.ljust(width)


def columns_for_keys(keys: Sequence[str]) -> list[Column]:
    return [COLUMN_BY_KEY[k] for k in keys]


def fit_columns(candidates: Sequence[Column], widths: dict[str, int], width: int, wide: bool = False,
                natural: Optional[dict[str, int]] = None) -> tuple[list[Column], dict[str, int]]:
    """The columns to show in ``width`` cells, in table order, and their widths.

    Columns are taken by priority (table order within one priority) while they fit;
    the first that does not fit ends the choice, so what is shown is always "the most
    important ones", never a scattering of small columns.  Priority 0 is always shown.
    A ``flex`` column (the solver) asks for its longest value (up to ``FLEX_MAX``) before
    less important columns get the rest, and takes what is left over at the end.
    ``wide`` shows every column (the table scrolls sideways, the frozen columns stay)."""
    out = dict(widths)
    longest = dict(natural or widths)
    if wide:
        chosen = list(candidates)
    else:
        used = 1
        keep: set[str] = set()
        for col in sorted(candidates, key=lambda c: c.priority):
            need = widths[col.key] + 1
            if col.flex:
                full = max(widths[col.key], min(FLEX_MAX, longest.get(col.key, 0))) + 1
                if used + full <= width:
                    out[col.key] = full - 1
                    need = full
                elif col.priority > 0 and used + need <= width:
                    keep.add(col.key)          # squeezed: it takes whatever is left, nothing after it
                    break
            if col.priority > 0 and used + need > width:
                break
            keep.add(col.key)
            used += need
        chosen = [c for c in candidates if c.key in keep]
    used = 1 + sum(out[c.key] + 1 for c in chosen)
    for col in chosen:
        if col.flex and used < width:
            grow = min(width - used, min(FLEX_MAX, longest.get(col.key, out[col.key])) - out[col.key])
            if grow > 0:
                out[col.key] += grow
                used += grow
    return chosen, out

"""Two runs compared layer by layer: which layer got slower, changed solver, or came and went.

Users ask "it got slower after the ROCm upgrade", "why is it slower than on NVIDIA", "the
solver changed to the naive one"; the answer is a pairing of the two runs' unique layers and
the differences of each pair, ranked by what they cost the NEW run.  No UI and no I/O here:
``miotui diff`` (``miotui.diff_cli``) and the app's compare screen both call ``compare`` on
the two sides' catalog snapshots, so the CLI, its JSON and the screen say the same.

Identity.  Two layers are the same layer when their problems agree on everything but the
layout: op, direction, dtype, shapes, pads, strides, dilations, groups and the op's other
parameters (``ProblemBase`` fields).  Layout is left out so that a run in NHWC (or on another
vendor, whose decoder fills the same problem classes) still pairs with one in NCHW; a pair
whose layouts differ says so in its changes.  ``ignore_batch`` also leaves out the batch (N,
or a tensor's first length), for the same model at another batch.  Exact problem matches are
paired first, then the looser key pairs what is left in first-seen order, so a side holding
the same layer at two layouts or batches pairs each with its closest counterpart.

What counts as a change (a pair with none is ``same``): per-call time beyond
``TIME_TOLERANCE`` either way (a log against a rerun of itself differs by noise), a time on
one side only, executions or Finds, the solver, the driver's verdict, the first iteration's
Find-Db state, kernels compiled, or its time beyond ``FIRST_TOLERANCE``, the layout, and
(under ``ignore_batch``) the batch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence

from miotui.catalog import LayerSnapshot
from miotui.startup import LayerStartup, counted, seconds
from miotui.views.timing import NO_TIME, LayerTime, layer_times
from miotui.views.units import ms_text

Status = Literal["changed", "same", "added", "removed"]
#: the order the statuses are listed in
STATUS_ORDER: tuple[Status, ...] = ("changed", "added", "removed", "same")

#: a per-call time within this fraction of the other side's is the same time (run-to-run noise)
TIME_TOLERANCE = 0.05
#: the first iteration's time: a change beyond this fraction and ``FIRST_MIN_MS``
FIRST_TOLERANCE = 0.10
FIRST_MIN_MS = 1.0

#: annotations naming what ran, best first (MIOpen's solver; a cuDNN engine; an algorithm)
SOLVER_ANNOTATIONS = ("solver", "engine", "algorithm")
#: fields that are the layout (left out of a layer's identity)
LAYOUT_FIELDS = frozenset({"layout", "in_layout", "fil_layout", "out_layout"})


# ---------------------------------------------------------------------- one run


@dataclass(frozen=True)
class Side:
    """One run: its paths, its layers (most executed first), their logged times, and the
    stats ``decode --format json`` gives (``miotui.export.run_stats``)."""

    paths: tuple[str, ...]
    layers: tuple[LayerSnapshot, ...]
    times: Mapping[int, LayerTime]
    stats: Mapping[str, Any]
    settings: tuple[tuple[str, str], ...] = ()
    #: versions read from the log's head (``MIOpen``, ``HIP``: ``miotui.diff_pack.log_versions``)
    versions: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def of(paths: Sequence[str], layers: Sequence[LayerSnapshot], stats: Mapping[str, Any],
           settings: Iterable[tuple[str, str]] = (), versions: Iterable[tuple[str, str]] = ()) -> "Side":
        layers = tuple(layers)
        return Side(tuple(paths), layers, layer_times(layers), dict(stats), tuple(settings), tuple(versions))

    def version(self, name: str) -> str:
        return dict(self.versions).get(name, "")


@dataclass(frozen=True)
class LayerFacts:
    """One side of a pair: the layer and what the comparison reads of it."""

    layer: LayerSnapshot
    time: LayerTime
    solver: str
    verdict: str
    #: the first iteration's cost in ms (None: the log has no duration for it)
    first_ms: Optional[float]

    @staticmethod
    def of(layer: LayerSnapshot, time: LayerTime) -> "LayerFacts":
        return LayerFacts(layer, time, solver_of(layer), verdict_of(layer), first_iteration_ms(layer.startup))


def solver_of(layer: LayerSnapshot) -> str:
    """What ran: the solver (MIOpen), engine (cuDNN) or algorithm, as ``name value``
    for the last two; "" when the log does not say."""
    for name in SOLVER_ANNOTATIONS:
        value = layer.annotation(name)
        if value:
            return value if name == "solver" else f"{name} {value}"
    return ""


def verdict_of(layer: LayerSnapshot) -> str:
    """MIOpenDriver's verdict on the layer in the log (``OK``, ``FAILED``, an error), or ""."""
    verdict = layer.annotation("driver_verdict")
    error = layer.annotation("driver_error")
    if error:
        return f"{verdict} ({error})" if verdict else f"error: {error}"
    return verdict


def first_iteration_ms(s: LayerStartup) -> Optional[float]:
    """The first iteration's cost of a layer: its Finds' span, or its compiles and tuning
    where they are longer (a compile outside a Find, at the first execution, is not in the
    span); None when the log has no duration."""
    parts = [v for v in (s.compile_ms, s.tuning_ms) if v is not None]
    work = sum(parts) if parts else None
    if s.find_ms is None:
        return work
    return s.find_ms if work is None else max(s.find_ms, work)


# ---------------------------------------------------------------------- identity


def batch_of(problem: Any) -> Optional[int]:
    """The batch of a problem (N, or its tensor's first length); None where it has none."""
    n = getattr(problem, "n", None)
    if isinstance(n, int):
        return n
    shape = getattr(problem, "input_shape", ())
    return shape[0] if shape else None


def layer_key(problem: Any, ignore_batch: bool = False) -> tuple:
    """A problem's identity for pairing: its op and every field but the layout (and, with
    ``ignore_batch``, the batch: the field ``n``, a ``shape``'s first length, an RNN's
    per-step ``batch``, each named tensor's first length).  Works for any problem class,
    whichever decoder made it."""
    parts: list[Any] = [type(problem).__name__, problem.op]
    for name, value in problem.json_fields().items():
        if name in LAYOUT_FIELDS:
            continue
        if ignore_batch:
            if name in ("n", "batch", "seq_lens"):
                continue
            if name == "shape" and isinstance(value, tuple):
                value = value[1:]
            elif name == "shapes" and isinstance(value, tuple):
                value = tuple((t, s[1:]) for t, s in value)
        parts.append((name, value))
    return tuple(parts)


def layout_of(problem: Any) -> str:
    fields = problem.json_fields()
    found = [fields[name] for name in ("in_layout", "fil_layout", "out_layout") if fields.get(name)]
    if found and len(set(found)) > 1:
        return "/".join(found)
    return getattr(problem, "layout", "") or ""


# ---------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class Pair:
    """A layer of both runs, or of one (``added``: NEW only; ``removed``: OLD only)."""

    status: Status
    old: Optional[LayerFacts]
    new: Optional[LayerFacts]
    delta_total_ms: Optional[float]
    ratio_per_call: Optional[float]
    changes: tuple[str, ...]
    #: the change in first-iteration ms (a ranking key; None where a side has no duration)
    delta_first_ms: Optional[float] = None
    solver_changed: bool = False

    @property
    def either(self) -> LayerFacts:
        facts = self.new if self.new is not None else self.old
        assert facts is not None
        return facts

    def to_dict(self, layer_json: Any) -> dict[str, Any]:
        """The documented JSON shape; ``layer_json(facts)`` writes a side's layer."""
        return {"status": self.status, "old": None if self.old is None else layer_json(self.old),
                "new": None if self.new is None else layer_json(self.new),
                "delta_total_ms": _round(self.delta_total_ms), "ratio_per_call": _round(self.ratio_per_call),
                "changes": list(self.changes)}


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 6)


@dataclass(frozen=True)
class Comparison:
    old: Side
    new: Side
    pairs: tuple[Pair, ...]
    ignore_batch: bool

    def count(self, status: Status) -> int:
        return sum(1 for p in self.pairs if p.status == status)

    def counts_text(self) -> str:
        """``3 changed, 1 added, 0 removed, 120 same``."""
        return ", ".join(f"{self.count(s)} {s}" for s in STATUS_ORDER)


def compare(old: Side, new: Side, ignore_batch: bool = False) -> Comparison:
    """Pair the layers of ``old`` and ``new`` and rank the pairs (see the module's doc)."""
    matches = match_layers(old.layers, new.layers, ignore_batch)
    pairs = []
    for o, n in matches:
        of = None if o is None else LayerFacts.of(o, old.times.get(o.id, NO_TIME))
        nf = None if n is None else LayerFacts.of(n, new.times.get(n.id, NO_TIME))
        pairs.append(pair_of(of, nf, ignore_batch))
    return Comparison(old, new, tuple(rank(pairs)), ignore_batch)


def match_layers(old: Sequence[LayerSnapshot], new: Sequence[LayerSnapshot],
                 ignore_batch: bool) -> list[tuple[Optional[LayerSnapshot], Optional[LayerSnapshot]]]:
    """(old, new) matches, each layer in exactly one: equal problems first, then the same
    identity (``layer_key``) in first-seen order; the rest alone."""
    by_problem: dict[Any, LayerSnapshot] = {layer.problem: layer for layer in new}
    matched: list[tuple[Optional[LayerSnapshot], Optional[LayerSnapshot]]] = []
    taken: set[int] = set()
    rest_old = []
    for o in old:
        n = by_problem.get(o.problem)
        if n is not None and n.index not in taken:
            taken.add(n.index)
            matched.append((o, n))
        else:
            rest_old.append(o)
    loose: dict[tuple, list[LayerSnapshot]] = {}
    for n in sorted((n for n in new if n.index not in taken), key=lambda s: s.index):
        loose.setdefault(layer_key(n.problem, ignore_batch), []).append(n)
    for o in sorted(rest_old, key=lambda s: s.index):
        candidates = loose.get(layer_key(o.problem, ignore_batch))
        if candidates:
            n = candidates.pop(0)
            taken.add(n.index)
            matched.append((o, n))
        else:
            matched.append((o, None))
    matched.extend((None, n) for n in new if n.index not in taken)
    return matched


def pair_of(old: Optional[LayerFacts], new: Optional[LayerFacts], ignore_batch: bool = False) -> Pair:
    if old is None and new is None:
        raise ValueError("a pair needs a layer on at least one side")
    if old is None or new is None:
        facts = new if new is not None else old
        assert facts is not None
        where = "new" if new is not None else "old"
        total = facts.time.total_ms
        delta = None if total is None else (total if new is not None else -total)
        first = facts.first_ms
        return Pair("added" if new is not None else "removed", old, new, delta, None,
                    (f"only in {where}: {_side_text(facts)}",),
                    None if first is None else (first if new is not None else -first), False)
    changes: list[str] = []
    po, pn = old.layer.problem, new.layer.problem
    if ignore_batch and batch_of(po) != batch_of(pn):
        changes.append(f"batch {batch_of(po)} -> {batch_of(pn)}")
    if layout_of(po) != layout_of(pn):
        changes.append(f"layout {layout_of(po) or '?'} -> {layout_of(pn) or '?'}")
    solver_changed = old.solver != new.solver and bool(old.solver or new.solver)
    if solver_changed:
        changes.append(f"solver {old.solver or '(not logged)'} -> {new.solver or '(not logged)'}")
    ratio, time_changes = _time_changes(old, new)
    changes.extend(time_changes)
    for what, a, b in (("executions", old.layer.executions, new.layer.executions),
                       ("finds", old.layer.finds, new.layer.finds)):
        if a != b:
            changes.append(f"{what} {a} -> {b}")
    changes.extend(_first_changes(old, new))
    if old.verdict != new.verdict:
        changes.append(f"driver verdict {old.verdict or '(none)'} -> {new.verdict or '(none)'}")
    to, tn = old.time.total_ms, new.time.total_ms
    delta = tn - to if to is not None and tn is not None else None
    fo, fn = old.first_ms, new.first_ms
    return Pair("changed" if changes else "same", old, new, delta, ratio, tuple(changes),
                fn - fo if fo is not None and fn is not None else None, solver_changed)


def _side_text(f: LayerFacts) -> str:
    parts = [counted(f.layer.executions, "execution"), counted(f.layer.finds, "find")]
    if f.time.per_call_ms is not None:
        parts.append(f"{ms_text(f.time.per_call_ms)} ms per call ({f.time.source})")
    if f.solver:
        parts.append(f"solver {f.solver}")
    return ", ".join(parts)


def ratio_text(ratio: float) -> str:
    """``x10.0``, ``x0.52``."""
    return f"x{ratio:.1f}" if ratio >= 1 else f"x{ratio:.2f}"


def _time_changes(old: LayerFacts, new: LayerFacts) -> tuple[Optional[float], list[str]]:
    a, b = old.time.per_call_ms, new.time.per_call_ms
    if a is None and b is None:
        return None, []
    if a is None or b is None:
        which, t = ("new", new.time) if a is None else ("old", old.time)
        return None, [f"per call: timed in {which} only ({ms_text(t.per_call_ms or 0.0)} ms, {t.source})"]
    ratio = b / a if a > 0 else None
    changes = []
    if (ratio is None and b > 0) or (ratio is not None and abs(ratio - 1) > TIME_TOLERANCE):
        sources = "" if old.time.source == new.time.source else f"; {old.time.source} -> {new.time.source}"
        how = ratio_text(ratio) if ratio is not None else "from 0"
        changes.append(f"per call {ms_text(a)} -> {ms_text(b)} ms ({how}{sources})")
        to, tn = old.time.total_ms, new.time.total_ms
        if to is not None and tn is not None:
            sign = "+" if tn >= to else "-"
            changes.append(f"total {ms_text(to)} -> {ms_text(tn)} ms ({sign}{ms_text(abs(tn - to))} ms)")
    return ratio, changes


def _first_changes(old: LayerFacts, new: LayerFacts) -> list[str]:
    so, sn = old.layer.startup, new.layer.startup
    out = []
    if so.find_db != sn.find_db and "unknown" not in (so.find_db, sn.find_db):
        out.append(f"find-db {so.find_db} -> {sn.find_db}")
    if so.kernels_compiled != sn.kernels_compiled:
        out.append(f"kernels compiled {so.kernels_compiled} -> {sn.kernels_compiled}")
    if so.searched != sn.searched:
        out.append("tuned in new only" if sn.searched else "tuned in old only")
    fo, fn = old.first_ms, new.first_ms
    if fo is not None and fn is not None:
        if abs(fn - fo) > FIRST_MIN_MS and abs(fn - fo) > FIRST_TOLERANCE * max(fo, fn):
            out.append(f"first iteration {seconds(fo)} -> {seconds(fn)}")
    elif fo is not None or fn is not None:
        which, v = ("old", fo) if fo is not None else ("new", fn)
        out.append(f"first iteration timed in {which} only ({seconds(v or 0.0)})")
    return out


def rank(pairs: Iterable[Pair]) -> list[Pair]:
    """Changed, added, removed, same; within each, what costs the NEW run most first: the
    delta of total time, then of first-iteration time, then a solver change (what tells an
    untimed layer apart), then the layer's order in the NEW log (else OLD)."""
    group = {s: i for i, s in enumerate(STATUS_ORDER)}

    def key(p: Pair) -> tuple:
        facts = p.either
        total = p.either.time.total_ms or 0.0
        return (group[p.status], -(p.delta_total_ms or 0.0), -(p.delta_first_ms or 0.0),
                not p.solver_changed, -total if p.status == "same" else 0.0, facts.layer.index)

    return sorted(pairs, key=key)


def with_versions(side: Side, versions: Iterable[tuple[str, str]]) -> Side:
    return dataclasses.replace(side, versions=tuple(versions))

"""A trace's layer times given to the layers of a log of the same run
(``miotui decode train.log trace.json``).

The log says which layers ran and how often; the trace says what each cost on the GPU.  A
log layer and a trace layer are the same layer when their problems are equal, else when
they agree on everything but the layout (``miotui.diff.match_layers``, the pairing ``miotui
diff`` uses: a cuDNN or MIOpen log and a trace of one run describe a layer alike, but a
log may print a filter's layout where the trace's strides say otherwise).  The log's row
gets the trace's annotations (time source ``profiler``, first among the sources), so its
time per call is measured; its own logged time stays beside it.  Its total is that time
times the log's executions.  Trace layers the log does not have are counted, never added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from miotui.catalog import Catalog, LayerSnapshot
from miotui.diff import layout_of, match_layers
from miotui.formats.torch_profiler.scanner import FIRST_CALL, SOURCE
from miotui.views.timing import KernelTime

#: the annotations a trace layer gives the log's layer
CARRIED = ("profiler_time_ms", "profiler_total_ms", "profiler_kernels", "profiler_pair_ms", "profiler_pair_total_ms",
           "profiler_pair", FIRST_CALL)
#: the annotation naming the trace a joined layer's times came from (each trace has its own clock)
TRACE_FILE = "profiler_trace"


@dataclass(frozen=True)
class Joined:
    """What the join found: log layers given a time, trace layers with no log layer."""

    matched: int
    log_layers: int
    trace_layers: int
    unmatched_trace: int

    def line(self) -> str:
        return (f"trace: {self.matched} of {self.log_layers} logged layers matched; "
                f"{self.unmatched_trace} of the trace's {self.trace_layers} layers are not in the log")


class TraceJoin:
    """One trace's times given to a log's layers as they come: a followed log's new layers
    are joined when first seen (``miotui.views.poller``'s poller), a whole log's all at once
    (:func:`join_trace`).  Keeps what was matched so far, for the line that says so."""

    def __init__(self, trace: Catalog, file: str = "") -> None:
        self.trace = trace
        self.file = file
        self.trace_layers = trace.layers()
        self.seen: set[int] = set()          # log layer ids already offered to the join
        self.matched_trace: set[int] = set()  # trace layer indexes given to a log layer
        self.attributed_ms = 0.0
        self.matched = 0                      # log layers given a time

    def take_undecoded(self, log: Catalog) -> None:
        """The trace's undecoded records into ``log`` (once)."""
        with log.lock:
            records = self.trace.undecoded()
            for record in records:
                log.add_undecoded(record.line, record.reason, record.text, self.file)
            log.undecoded_count += self.trace.undecoded_count - len(records)   # counted beyond those kept

    def join(self, log: Catalog, layers: Sequence[LayerSnapshot]) -> int:
        """Give those of ``layers`` not offered before the times of the same trace layers;
        how many were given one."""
        new = [layer for layer in layers if layer.id not in self.seen]
        self.seen.update(layer.id for layer in new)
        matched = 0
        with log.lock:
            for mine, theirs in match_layers(new, self.trace_layers, ignore_batch=False):
                if mine is None or theirs is None:
                    continue
                notes = [(name, theirs.annotation(name)) for name in CARRIED if theirs.annotation(name)]
                if not notes:
                    continue
                matched += 1
                notes.append(("profiler_calls", f"{theirs.executions} calls in the trace"))
                if self.file:
                    notes.append((TRACE_FILE, self.file))
                if mine.problem != theirs.problem:
                    notes.append(("profiler_match",
                                  f"matched without the layout (the trace: {layout_of(theirs.problem)})"))
                if theirs.index not in self.matched_trace:   # a trace layer's time counted once
                    self.matched_trace.add(theirs.index)
                    self.attributed_ms += float(theirs.annotation("profiler_total_ms", "0"))
                    self.attributed_ms += float(theirs.annotation("profiler_pair_total_ms", "0")) / 2
                # no file: the row's files are the logs it was seen in (the file column), the
                # trace is named by the join's line
                log.add_sighting(mine.problem, "mention", SOURCE, 0, "", annotations=notes, count=False)
            total = self.trace.kernel_time.get("profiler")
            if total is not None:
                log.kernel_time["profiler"] = KernelTime(total.total_ms, self.attributed_ms, total.kernels)
        self.matched += matched
        return matched

    def joined(self, log_layers: int) -> Joined:
        """What matched so far, of ``log_layers`` logged layers."""
        timed = sum(1 for layer in self.trace_layers if layer.annotation("profiler_time_ms")
                    or layer.annotation("profiler_pair_ms"))
        unmatched = timed - len(self.matched_trace)
        return Joined(self.matched, log_layers, len(self.trace_layers), max(0, unmatched))


def join_trace(log: Catalog, trace: Catalog, file: str = "") -> Joined:
    """Give ``log``'s layers the times of the same layers in ``trace`` (see the module)."""
    join = TraceJoin(trace, file)
    log_layers = log.layers()
    join.join(log, log_layers)
    join.take_undecoded(log)
    return join.joined(len(log_layers))

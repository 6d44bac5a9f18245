"""A PyTorch profiler trace into the catalog: one execution per layer op call, and each
layer's GPU time from the kernels its calls launched (time source ``profiler``).

The events stream in (``reader``); the layer ops are counted as they come; the kernels are
joined to them when the trace ends (``attribution``), and each layer gets its time per call,
its total and what it was made of as annotations.  What is kept until then is a few numbers
per launch, kernel and layer-op call: the bound is the trace's event count, not its bytes.
"""

from __future__ import annotations

from collections import Counter
from typing import Optional

from miotui.catalog import Catalog
from miotui.formats.torch_profiler.attribution import kernel_side, split_backward
from miotui.formats.torch_profiler.ops import LAYER_OPS, OpError, op_layers
from miotui.formats.torch_profiler.reader import EventReader
from miotui.kernel_attribution import Attribution, OpCall
from miotui.views.timing import KernelTime

SOURCE = "torch-profiler"
#: the annotation that gives a layer's first call in the trace (``first_call_text``)
FIRST_CALL = "profiler_first_call"
#: launch and kernel events kept for the join (beyond this the trace is refused, saying so)
EVENTS_KEPT = 20_000_000
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver", "hip_runtime")
NO_SHAPES = ("the trace has layer ops but no shapes: record it with torch.profiler.profile(..., "
             "record_shapes=True) to have its layers")


class TraceStats:
    """What the trace says beside its layers."""

    def __init__(self) -> None:
        self.events = 0
        self.layer_calls = 0
        #: layer-op calls recorded without shapes, by op name
        self.without_shapes: Counter[str] = Counter()
        #: layer-op calls whose arguments made no layer (each listed as undecoded)
        self.unread: Counter[str] = Counter()
        self.kernels = 0
        self.kernel_us = 0.0
        #: kernel time under layer ops (split or as a pair), under no layer op, without a launch
        self.layer_us = 0.0
        self.pair_us = 0.0
        self.free_us = 0.0
        self.free_kernels = 0
        self.orphan_us = 0.0
        self.orphan_kernels = 0
        self.unread_us = 0.0
        self.backward_split = 0
        self.backward_pairs = 0
        self.between_us = 0.0
        self.record_shapes: Optional[bool] = None
        self.device = ""

    @property
    def attributed(self) -> float:
        """The share of the trace's kernel time that layers claim (0 with no kernels)."""
        return (self.layer_us + self.pair_us) / self.kernel_us if self.kernel_us > 0 else 0.0


class TraceScanner:
    """Feeds one trace (file, stdin) into a catalog: the MIOpen scanner's ``feed``/``finish``."""

    def __init__(self, catalog: Catalog, file: str = ""):
        self.catalog = catalog
        self.file = file
        self.stats = TraceStats()
        self.join = Attribution(kernel_side)
        self._reader = EventReader(self._event)
        self._lines_told = 0      # the lines the catalog was told of
        self._too_many = False
        #: the trace's earliest event time (µs): its clock's zero, for each layer's first call
        self._origin: Optional[float] = None

    @property
    def line_no(self) -> int:
        return self._reader.line_no

    def feed(self, data: bytes) -> None:
        if not data:
            return
        with self.catalog.writing():
            self.catalog.read_bytes(len(data))
            self._reader.feed(data)
            self._tell_lines()

    def _tell_lines(self) -> None:
        """The lines read since the catalog was last told (it counts every file's)."""
        now = self._reader.line_no
        self.catalog.read_lines(now - self._lines_told)
        self._lines_told = now

    def finish(self) -> None:
        with self.catalog.writing():
            self._reader.finish()
            reader = self._reader
            if reader.error is not None:
                self.catalog.add_undecoded(reader.error_line, f"PyTorch profiler trace: {reader.error}", "", self.file)
            self._header(reader.header)
            self._attribute()
            stats = self.stats
            if stats.without_shapes and not stats.layer_calls:
                ops = ", ".join(f"{name} x{n}" for name, n in stats.without_shapes.most_common(5))
                self.catalog.add_undecoded(1, f"{NO_SHAPES} ({ops})", "", self.file)
            self._tell_lines()
            self.catalog.input_ended()

    def _header(self, header: str) -> None:
        stats = self.stats
        if '"record_shapes"' in header:
            stats.record_shapes = '"record_shapes": 1' in header or '"record_shapes": true' in header
        at = header.find('"name":')
        if at >= 0:
            end = header.find('"', header.find('"', at + 7) + 1)
            stats.device = header[header.find('"', at + 7) + 1:end][:80]

    def _event(self, event: dict, line: int) -> None:
        self.stats.events += 1
        ts = event.get("ts")
        if _number(ts) and (self._origin is None or ts < self._origin):
            self._origin = float(ts)
        cat = event.get("cat")
        if cat == "kernel":
            args = event.get("args")
            dur = event.get("dur")
            if isinstance(args, dict) and _number(dur):
                self._keep()
                correlation = args.get("correlation")
                self.join.kernel(correlation if type(correlation) is int else None, float(dur),
                                 str(event.get("name", ""))[:4096])
                self.stats.kernels += 1
                self.stats.kernel_us += float(dur)
        elif cat in LAUNCH_CATEGORIES:
            args = event.get("args")
            ts = event.get("ts")
            if isinstance(args, dict) and type(args.get("correlation")) is int and _number(ts):
                self._keep()
                self.join.launch(args["correlation"], _thread(event), float(ts))
        elif cat == "cpu_op":
            name = event.get("name")
            if name in LAYER_OPS:
                self._layer_op(name, event, line)

    def _keep(self) -> None:
        join = self.join
        if len(join.kernels) + len(join.launches) >= EVENTS_KEPT and not self._too_many:
            self._too_many = True
            self.catalog.add_undecoded(self._reader.line_no, f"the trace has more than {EVENTS_KEPT:,} kernels "
                                       "and launches: times are from the part read so far", "", self.file)

    def _layer_op(self, name: str, event: dict, line: int) -> None:
        args = event.get("args")
        ts, dur = event.get("ts"), event.get("dur")
        if not isinstance(args, dict) or not _number(ts) or not _number(dur):
            self.catalog.add_undecoded(line, f"{name}: an op event without its time span or arguments",
                                       name, self.file)
            return
        thread = _thread(event)
        try:
            layers = op_layers(name, args)
        except (OpError, ValueError, TypeError, OverflowError) as e:   # hostile values: said, never a crash
            self.stats.unread[name] += 1
            self.join.calls.append(OpCall(thread, float(ts), float(ts + dur), []))
            self.catalog.add_undecoded(line, f"{name}: {e}", _op_text(name, args), self.file)
            return
        if layers is None:
            self.stats.without_shapes[name] += 1
            return
        self.stats.layer_calls += 1
        rows = [self.catalog.add_sighting(layer.problem, "execution", SOURCE, line, self.file, layer.warnings,
                                          raw=lambda: [(line, _op_text(name, args))])
                for layer in layers]
        self.join.calls.append(OpCall(thread, float(ts), float(ts + dur), rows))

    def _attribute(self) -> None:
        """The kernels to their op calls, and each layer's time to its row."""
        stats = self.stats
        stats.free_us, stats.free_kernels, stats.orphan_us, stats.orphan_kernels = self.join.attribute()
        per_row: dict[int, list] = {}   # row index -> [row, µs timed, calls timed, µs as a pair, pair calls, kernels]
        firsts: dict[int, tuple] = {}   # row index -> (row, its first call, GPU µs of it, as a pair)
        for call in self.join.calls:
            us = sum(k[1] for k in call.kernels)
            if not call.rows:
                stats.unread_us += us
                continue
            if len(call.rows) == 2:
                split = split_backward(call.kernels)
                if split.combined is not None:
                    stats.backward_pairs += 1
                    stats.pair_us += split.combined
                    for row in call.rows:
                        entry = per_row.setdefault(row.index, [row, 0.0, 0, 0.0, 0, 0])
                        entry[3] += split.combined
                        entry[4] += 1
                        _earliest(firsts, row, call, split.combined, True)
                    continue
                stats.backward_split += 1
                stats.between_us += split.between_us
                times = split.times
            else:
                times = (us,)
            stats.layer_us += us
            for row, t in zip(call.rows, times, strict=True):
                entry = per_row.setdefault(row.index, [row, 0.0, 0, 0.0, 0, 0])
                entry[1] += t
                entry[2] += 1
                entry[5] += len(call.kernels)
                _earliest(firsts, row, call, t, False)
        for row, us, calls, pair_us, pairs, kernels in per_row.values():
            notes = []
            if calls:
                notes += [("profiler_time_ms", f"{us / calls / 1000:.6g}"), ("profiler_total_ms", f"{us / 1000:.6g}"),
                          ("profiler_kernels", f"{kernels} kernels in {calls} calls")]
            if pairs:
                notes += [("profiler_pair_ms", f"{pair_us / pairs / 1000:.6g}"),
                          ("profiler_pair_total_ms", f"{pair_us / 1000:.6g}"),
                          ("profiler_pair", f"{pairs} calls timed as a pair: backward data and weights together "
                                            f"(the kernels' names do not say which is which)")]
            for name, value in notes:
                self.catalog.annotate(row, name, value)
        origin = self._origin if self._origin is not None else 0.0
        for row, call, us, paired in firsts.values():
            self.catalog.annotate(row, FIRST_CALL, first_call_text(call.start - origin, call.end - call.start, us,
                                                                   len(call.kernels), paired))
        self.catalog.kernel_time["profiler"] = KernelTime(
            stats.kernel_us / 1000, (stats.layer_us + stats.pair_us) / 1000, stats.kernels)


def _earliest(firsts: dict, row, call: OpCall, us: float, paired: bool) -> None:
    """Keep ``call`` as ``row``'s first call if none earlier was seen (calls come in the
    file's order, which need not be the clock's)."""
    held = firsts.get(row.index)
    if held is None or call.start < held[1].start:
        firsts[row.index] = (row, call, us, paired)


def first_call_text(at_us: float, cpu_us: float, gpu_us: float, kernels: int, paired: bool) -> str:
    """A layer's first call in the trace, as its annotation says it (read back by the
    first-iteration view, ``miotui.views.startup_model.trace_first``): when it began on the
    trace's clock (from the trace's first event), how long the op ran on the CPU (a first
    call's autotuning and plan building are in there), and its kernels' GPU time."""
    pair = " as a backward data+weights pair" if paired else ""
    return (f"at {at_us / 1000:.6g} ms into the trace; {cpu_us / 1000:.6g} ms CPU; "
            f"{gpu_us / 1000:.6g} ms GPU ({kernels} kernels in the call){pair}")


def _number(value: object) -> bool:
    """A finite JSON number (not a bool, which is an int to Python)."""
    return type(value) in (int, float) and value == value and abs(value) != float("inf")


def _thread(event: dict) -> tuple:
    """The (process, thread) an event ran on, as hashable text whatever JSON the trace put there."""
    pid, tid = event.get("pid"), event.get("tid")
    return (pid if type(pid) in (int, str) else str(pid)[:64], tid if type(tid) in (int, str) else str(tid)[:64])


def _op_text(name: str, args: dict) -> str:
    dims = args.get("Input Dims")
    concrete = args.get("Concrete Inputs")
    text = f"{name} Input Dims={dims}" + (f" Concrete Inputs={concrete}" if concrete else "")
    return text[:500]


def decode_trace_bytes(data: bytes, catalog: Optional[Catalog] = None, chunk: int = 1 << 20) -> TraceScanner:
    """Decode a whole trace held in memory (tests, benchmarks); the scanner keeps its stats."""
    scanner = TraceScanner(catalog if catalog is not None else Catalog())
    for i in range(0, len(data), chunk):
        scanner.feed(data[i:i + chunk])
    scanner.finish()
    return scanner

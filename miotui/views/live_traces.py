"""Profiler traces beside a log the app reads (``miotui train.log trace.json``, ``miotui
--follow train.log --trace trace.json``): each trace is decoded once, off the UI thread, and
its times given to the log's layers as they appear.

Why in the poller's thread: a followed log's layers come while the job runs, long after the
trace was read; the poller sees each new layer (``Catalog.changed_since``) and joins it there
(:class:`miotui.formats.torch_profiler.join.TraceJoin`, the join ``miotui decode`` does), so a
layer first logged an hour in gets its measured time like the first one did.
"""

from __future__ import annotations

from typing import Any, Sequence

from miotui.catalog import Catalog
from miotui.views.timing import measured_line

KERNEL_TRACE_IN_APP = ("a rocprofv3 trace is joined to a log's calls one for one, in order (through MIOpen's roctx "
                       "ranges or by the kernels' order), which a followed log does not settle: use `miotui decode "
                       "run.log results.db` (or kernel_trace.csv)")


class LiveTraces:
    """The traces given with the app's logs and their joins to its catalog."""

    def __init__(self, traces: Sequence[str], kernel_traces: Sequence[str] = ()) -> None:
        self.paths = tuple(traces)
        self.kernel_traces = tuple(kernel_traces)
        self._joins: list = []
        self._loaded = False

    def __bool__(self) -> bool:
        return bool(self.paths or self.kernel_traces)

    def _load(self, catalog: Catalog) -> None:
        """Decode each trace (once); one that cannot be read is an undecoded record saying why."""
        from miotui.decoding.whole import decode_path
        from miotui.formats.torch_profiler.join import TraceJoin
        self._loaded = True
        for path in self.paths:
            trace = Catalog()
            try:
                decode_path(trace, path, path)
            except OSError as e:
                with catalog.lock:
                    catalog.add_undecoded(1, f"profiler trace not read: {e.strerror or e}", "", path)
                continue
            join = TraceJoin(trace, path)
            join.take_undecoded(catalog)
            self._joins.append(join)
        with catalog.lock:
            for path in self.kernel_traces:
                catalog.add_undecoded(1, KERNEL_TRACE_IN_APP, "", path)

    def join(self, catalog: Catalog, changed: list) -> bool:
        """Join the layers in ``changed`` seen for the first time; True when one got a time
        (its snapshot in ``changed`` is then older than the catalog's)."""
        if not self._loaded:
            self._load(catalog)
        return sum(join.join(catalog, changed) for join in self._joins) > 0 if changed else False

    def lines(self, catalog: Any) -> tuple[str, ...]:
        """The lines over the table: where the measured times came from (``measured_line``),
        then what each trace matched of the logged layers."""
        if not self._joins:
            return ()
        layers = catalog.layers()
        joined = [f"{join.file}: {join.joined(len(layers)).line()}" for join in self._joins]
        return tuple(line for line in [measured_line(layers, catalog.kernel_time), *joined] if line)

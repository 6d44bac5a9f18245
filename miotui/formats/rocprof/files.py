"""A rocprofv3 output file joined to the MIOpen log beside it, whichever form it has: the rocpd
database (by MIOpen's roctx ranges where the run recorded them and the runtime calls that tie
kernels to them, else by the order of calls) or the kernel-trace CSV (by the order of calls: the
CSV has no ranges).  Which join was used, and why not the other, is in the line it returns."""

from __future__ import annotations

from miotui.formats.rocprof.join import CallOrder, join_kernel_trace
from miotui.formats.rocprof.kernel_trace import KernelTraceError, read_kernel_trace
from miotui.formats.rocprof.ranges import join_by_ranges, miopen_ranges
from miotui.formats.rocprof.rocpd import ROWS_KEPT, SQLITE_MAGIC, looks_like_rocpd, read_rocpd
from miotui.sources.files import open_source

#: the largest kernel-trace CSV joined (its rows are held to be sorted by time)
KERNEL_TRACE_BYTES = 256 << 20
#: why a rocpd database was joined by the order of calls
NO_RANGES = ("no MIOpen roctx ranges in it (MIOPEN_ENABLE_LOGGING_ROCTX=1 and rocprofv3 --marker-trace record "
             "them)")
NO_LAUNCHES = ("MIOpen's roctx ranges are in it but not the runtime calls that tie each kernel to one "
               "(rocprofv3 --hip-trace records them)")


def join_kernel_file(catalog: CallOrder, path: str, file: str = "") -> str:
    """Join the rocprofv3 output at ``path`` to ``catalog``'s log; the line saying what was
    joined and how.  Rows that do not read are undecoded records; KernelTraceError when the
    file cannot be joined at all."""
    if not isinstance(catalog, CallOrder):
        raise KernelTraceError("no MIOpen log beside it to join to")
    stream = open_source(path)
    try:
        head = stream.read(len(SQLITE_MAGIC) + 256 * 1024)
        if looks_like_rocpd(head):
            return _join_rocpd(catalog, path, file)
        text = head + stream.read(KERNEL_TRACE_BYTES + 1 - len(head))
    finally:
        stream.close()
    if len(text) > KERNEL_TRACE_BYTES:
        raise KernelTraceError(f"larger than {KERNEL_TRACE_BYTES >> 20} MiB: not joined")
    problems: list = []
    dispatches = list(read_kernel_trace(text.decode("utf-8", "replace"), problems))
    _undecoded(catalog, problems, path)
    return join_kernel_trace(catalog, dispatches, file).line()


def _join_rocpd(catalog: CallOrder, path: str, file: str) -> str:
    with open(path, "rb") as raw:
        if not raw.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC:
            raise KernelTraceError("a compressed rocpd database: decompress it first (SQLite reads files)")
    problems: list = []
    trace = read_rocpd(path, problems)
    _undecoded(catalog, problems, path)
    with catalog.writing():
        for table, n in trace.dropped:
            catalog.add_undecoded(1, f"rocpd database: {n:,} rows of {table} past the first {ROWS_KEPT:,} not "
                                  "read: not joined", "", path)
    ranges = miopen_ranges(trace.regions)
    launches = any(not r.marker and r.correlation is not None for r in trace.regions)
    if ranges and launches:
        return join_by_ranges(catalog, trace.dispatches, trace.regions, file).line()
    why = NO_RANGES if not ranges else NO_LAUNCHES
    return f"{join_kernel_trace(catalog, trace.dispatches, file).line()}; joined by the order of calls: {why}"


def _undecoded(catalog: CallOrder, problems: list, path: str) -> None:
    with catalog.writing():
        for line, reason in problems:
            catalog.add_undecoded(line, reason, "", path)

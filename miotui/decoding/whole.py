"""Whole files decoded into a catalog: each file's bytes (``miotui.sources.files``) read to
its end by the scanner of its format (``miotui.formats.scanner_for``), and profiler traces
among the files joined to the logs beside them.

Why the decode keeps going after a read error: a damaged input must lose as little as
possible; what was decoded before the break stays, and the break is an undecoded record
saying where.
"""

from __future__ import annotations

import zlib
from typing import Optional, Sequence

from miotui.catalog import Catalog
from miotui.formats import Role, claimed, scanner_for
from miotui.sources.encoding import TextBytes, record_warning
from miotui.sources.files import open_source

#: bytes read from a file to tell a profiler trace from a log
_TRACE_HEAD = 256 * 1024
NO_LOG_FOR_KERNEL_TRACE = ("a rocprofv3 kernel trace names no layers: decode it with the MIOpen log of the same "
                           "run (miotui decode run.log kernel_trace.csv)")


def decode_stream(catalog: Catalog, stream, file: str = "", chunk_size: int = 1 << 20) -> None:
    """Read a binary stream to its end into ``catalog``; a read error keeps what was decoded
    and is recorded as an undecoded record saying where the input broke."""
    scanner = None           # chosen by the first text (scanner_for)
    text = TextBytes()       # UTF-16 and byte order marks read as UTF-8 (miotui.sources.encoding)
    while True:
        try:
            data = stream.read(chunk_size)
        except (EOFError, zlib.error, OSError) as e:
            rest = text.flush()
            scanner = scanner or scanner_for(rest, catalog, file)
            scanner.feed(rest)
            scanner.finish()
            with catalog.writing():
                catalog.add_undecoded(scanner.line_no + 1, f"input could not be read further: {e}", "", file)
            return
        if not data:
            break
        converted = text.feed(data)
        if scanner is None and converted:
            scanner = scanner_for(converted, catalog, file)
        if scanner is not None:
            scanner.feed(converted)
        record_warning(catalog, text, file)
    rest = text.flush()
    scanner = scanner or scanner_for(rest, catalog, file)
    scanner.feed(rest)
    record_warning(catalog, text, file)
    scanner.finish()


def decode_path(catalog: Catalog, path: str, file: str) -> None:
    """Decode one whole file (or stdin, ``-``) into ``catalog``, its rows labelled ``file``;
    raises OSError for an unreadable path."""
    stream = open_source(path)
    try:
        decode_stream(catalog, stream, file)
    finally:
        if path != "-":
            stream.close()


def split_traces(paths: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(logs, PyTorch profiler traces, rocprofv3 kernel traces) among ``paths``, each told by
    its first bytes (stdin is a log; ``miotui.formats.claimed``): a trace beside a log gives
    the log's layers their times rather than layers of its own."""
    logs, traces, kernel_traces = [], [], []
    for path in paths:
        head = b""
        if path != "-":
            stream = open_source(path)
            try:
                head = stream.read(_TRACE_HEAD)
            except (EOFError, zlib.error, OSError):
                head = b""
            finally:
                stream.close()
        fmt = claimed(head)
        role = fmt.role if fmt is not None else Role.LOG
        {Role.LOG: logs, Role.TRACE: traces, Role.KERNEL_TRACE: kernel_traces}[role].append(path)
    return logs, traces, kernel_traces


def join_traces(catalog: Catalog, traces: list[str], kernel_traces: Sequence[str] = ()) -> list[str]:
    """Each trace decoded on its own and its layer times given to ``catalog``'s layers of the
    same identity (``miotui.formats.torch_profiler.join``); each rocprofv3 output (kernel-trace
    CSV or rocpd database) joined to the log's calls (``catalog`` a ``CallOrder``:
    ``miotui.formats.rocprof.files``); one line per trace saying what matched and how."""
    from miotui.formats.rocprof import KernelTraceError, join_kernel_file
    from miotui.formats.torch_profiler.join import join_trace
    lines = []
    for path in traces:
        trace = Catalog()
        decode_path(trace, path, path)
        lines.append(f"{path}: {join_trace(catalog, trace, path).line()}")
    for path in kernel_traces:
        try:
            lines.append(f"{path}: {join_kernel_file(catalog, path, path)}")
        except KernelTraceError as e:
            catalog.add_undecoded(1, f"rocprofv3 kernel trace: {e}", "", path)
    return lines


def decode_with_traces(paths: list[str]) -> Optional[Catalog]:
    """The catalog of logs decoded with the traces among ``paths`` joined to them; None when
    the paths are not logs and traces together (then they decode as they are)."""
    from miotui.formats.rocprof import CallOrder
    logs, traces, kernel_traces = split_traces(paths)
    if kernel_traces and not logs:   # nothing to join to: said, never an empty table without a word
        catalog = decode_paths(traces) if traces else Catalog()
        for path in kernel_traces:
            catalog.add_undecoded(1, NO_LOG_FOR_KERNEL_TRACE, "", path)
        return catalog
    if not logs or not (traces or kernel_traces):
        return None
    catalog = CallOrder() if kernel_traces else Catalog()
    for path in logs:
        decode_path(catalog, path, source_label(path, logs))
    catalog.note_joins(join_traces(catalog, traces, kernel_traces))
    return catalog


def source_label(path: str, paths: list[str]) -> str:
    """The file name rows are labelled with: none when there is one path."""
    return "" if len(paths) == 1 else path


def decode_paths(paths: list[str], catalog: Optional[Catalog] = None) -> Catalog:
    """Decode whole files (or stdin) into one catalog, one after the other; raises OSError
    for an unreadable path.  (``miotui.decoding.parallel`` decodes several files at once into
    the same catalog.)"""
    if catalog is None and paths != ["-"]:
        joined = decode_with_traces(paths)
        if joined is not None:
            return joined
    catalog = catalog if catalog is not None else Catalog()
    for path in paths:
        decode_path(catalog, path, source_label(path, paths))
    return catalog

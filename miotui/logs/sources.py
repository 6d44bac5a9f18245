"""Where log bytes come from for a whole-file decode: a file, stdin, or a ``.gz`` file.

Why a module: a damaged input must lose as little as possible.  A ``.gz`` whose bytes are
corrupt somewhere keeps everything decompressed before the damage (``gzip.GzipFile`` would
drop the whole chunk in flight), and the decode says where the stream broke; a gzip bomb
decompresses a bounded piece at a time; stdin that is closed is a clear error, not a crash.
(Following a growing log is ``miotui.logs.follow``'s job.)
"""

from __future__ import annotations

import os
import sys
import zlib
from typing import BinaryIO, Optional, Sequence

from miotui.catalog import Catalog
from miotui.logs.encoding import TextBytes, record_warning
from miotui.logs.scan import LogScanner

#: compressed bytes read at a time, and the most decompressed bytes one read returns
_GZ_IN = 64 * 1024
_GZ_OUT = 1 << 20
#: compressed bytes fed at a time when recovering the data before a damaged spot
_SALVAGE_STEP = 64
#: bytes read from a file to tell a profiler trace from a log
_TRACE_HEAD = 256 * 1024
NO_LOG_FOR_KERNEL_TRACE = ("a rocprofv3 kernel trace names no layers: decode it with the MIOpen log of the same "
                           "run (miotui decode run.log kernel_trace.csv)")
#: the largest kernel trace joined (its rows are held to be sorted by time)
KERNEL_TRACE_BYTES = 256 << 20


class GzipStream:
    """A ``.gz`` file decompressed as it is read, member after member (``cat a.gz b.gz`` is
    valid gzip).  ``read`` returns what was decompressed before a corrupt or truncated
    spot, and raises ``OSError`` saying where on the read after that."""

    def __init__(self, raw: BinaryIO, name: str = ""):
        self.raw = raw
        self.name = name
        self._d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        self._pending = b""          # compressed bytes not yet given to the decompressor
        self._error: Optional[str] = None
        self._eof = False
        self.compressed_read = 0

    def read(self, n: int = -1) -> bytes:
        limit = n if n and n > 0 else _GZ_OUT
        out = bytearray()
        while len(out) < limit:
            if self._error is not None:
                if out:
                    break
                error, self._error = self._error, "the stream ended at the damaged spot"
                raise OSError(error)
            if self._d.unconsumed_tail:
                data = self._d.unconsumed_tail
            elif self._d.eof:
                data = self._d.unused_data + self._pending
                self._pending = b""
                if not data:
                    data = self._fill()
                    if not data:
                        break
                self._d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)   # the next member
            else:
                data = self._pending or self._fill()
                self._pending = b""
                if not data:
                    if self.compressed_read == 0:   # an empty file: nothing to decompress
                        break
                    self._error = (f"the .gz file ends in the middle of its compressed data "
                                   f"(after {self.compressed_read:,} compressed bytes)")
                    continue
            backup = self._d.copy()
            try:
                out += self._d.decompress(data, limit - len(out))
            except zlib.error as e:
                kept, at = self._salvage(backup, data)
                out += kept
                where = self.compressed_read - len(self._pending) - len(data) + at
                self._error = f"the .gz file is damaged near compressed byte {where:,} ({e})"
        return bytes(out)

    @staticmethod
    def _salvage(d, data: bytes) -> tuple[bytes, int]:
        """What ``data`` decompresses to before its damaged spot, and that spot's offset in
        ``data``: zlib gives nothing from a call that fails, so the piece is fed again a few
        bytes at a time."""
        out = bytearray()
        for i in range(0, len(data), _SALVAGE_STEP):
            before = d.copy()
            try:
                out += d.decompress(data[i:i + _SALVAGE_STEP])
            except zlib.error:
                for j in range(i, min(i + _SALVAGE_STEP, len(data))):   # the failing piece, byte by byte
                    try:
                        out += before.decompress(data[j:j + 1])
                    except zlib.error:
                        return bytes(out), j
                return bytes(out), i
        return bytes(out), len(data)

    def _fill(self) -> bytes:
        data = self.raw.read(_GZ_IN)
        if not data:
            self._eof = True
        self.compressed_read += len(data)
        return data

    def close(self) -> None:
        self.raw.close()


def open_source(path: str) -> BinaryIO:
    """A binary stream for a path: ``-`` is stdin, ``.gz`` is decompressed as it is read.
    Raises ``OSError`` for an unreadable path or a closed stdin."""
    if path == "-":
        stdin = sys.stdin
        if stdin is None:
            raise OSError(0, "standard input is closed", "-")
        try:
            os.fstat(stdin.fileno())
        except (OSError, ValueError) as e:
            raise OSError(0, "standard input is closed", "-") from e
        return stdin.buffer
    if path.endswith(".gz"):
        return GzipStream(open(path, "rb"), path)  # type: ignore[return-value]
    return open(path, "rb")


def decode_stream(catalog: Catalog, stream, file: str = "", chunk_size: int = 1 << 20) -> None:
    """Read a binary stream to its end into ``catalog``; a read error keeps what was decoded
    and is recorded as an undecoded record saying where the input broke."""
    scanner = None           # chosen by the first text (scanner_for)
    text = TextBytes()       # UTF-16 and byte order marks read as UTF-8 (miotui.logs.encoding)
    while True:
        try:
            data = stream.read(chunk_size)
        except (EOFError, zlib.error, OSError) as e:
            rest = text.flush()
            scanner = scanner or scanner_for(rest, catalog, file)
            scanner.feed(rest)
            scanner.finish()
            with catalog.lock:
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


def scanner_for(head: bytes, catalog: Catalog, file: str = ""):
    """The scanner of the log format ``head`` (a log's first bytes) is in: a PyTorch profiler
    trace's where it is a Chrome trace, cuDNN's where it holds a cuDNN record or
    cudnn-frontend line, else MIOpen's; the catalog notes the format's name
    (``Catalog.formats``: the status bar shows it).
    FORMAT DISPATCH (issue 21): the one place a format is chosen, until issue 20's
    ``miotui.formats.FORMATS`` registry replaces this function."""
    from miotui.formats.cudnn import CudnnScanner, looks_like_cudnn
    from miotui.formats.torch_profiler import TraceScanner, looks_like_trace
    if looks_like_trace(head):   # first: a trace's kernel names can look like a cuDNN log's text
        catalog.formats.setdefault("PyTorch profiler")
        return TraceScanner(catalog, file)
    if looks_like_cudnn(head):
        if head:
            catalog.formats.setdefault("cuDNN")
        return CudnnScanner(catalog, file)
    if head:
        catalog.formats.setdefault("MIOpen")
    return LogScanner(catalog, file)


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
    its first bytes (stdin is a log).  FORMAT DISPATCH (issue 23): a trace beside a log gives
    the log's layers their times rather than layers of its own."""
    from miotui.formats.rocprof import looks_like_kernel_trace
    from miotui.formats.torch_profiler import looks_like_trace
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
        kind = traces if looks_like_trace(head) else kernel_traces if looks_like_kernel_trace(head) else logs
        kind.append(path)
    return logs, traces, kernel_traces


def join_traces(catalog: Catalog, traces: list[str], kernel_traces: Sequence[str] = ()) -> list[str]:
    """Each trace decoded on its own and its layer times given to ``catalog``'s layers of the
    same identity (``miotui.formats.torch_profiler.join``); each rocprofv3 kernel trace joined
    by the order of calls (``catalog`` a ``CallOrder``: ``miotui.formats.rocprof.join``); one
    line per trace saying what matched."""
    from miotui.formats.rocprof import CallOrder, KernelTraceError, join_kernel_trace, read_kernel_trace
    from miotui.formats.torch_profiler.join import join_trace
    lines = []
    for path in traces:
        trace = Catalog()
        decode_path(trace, path, path)
        lines.append(f"{path}: {join_trace(catalog, trace, path).line()}")
    for path in kernel_traces:
        stream = open_source(path)
        try:
            text = stream.read(KERNEL_TRACE_BYTES + 1)
        finally:
            stream.close()
        problems: list = []
        try:
            if len(text) > KERNEL_TRACE_BYTES:
                raise KernelTraceError(f"larger than {KERNEL_TRACE_BYTES >> 20} MiB: not joined")
            if not isinstance(catalog, CallOrder):
                raise KernelTraceError("no MIOpen log beside it to join to")
            dispatches = list(read_kernel_trace(text.decode("utf-8", "replace"), problems))
        except KernelTraceError as e:
            catalog.add_undecoded(1, f"rocprofv3 kernel trace: {e}", "", path)
            continue
        for line, reason in problems:
            catalog.add_undecoded(line, reason, "", path)
        lines.append(f"{path}: {join_kernel_trace(catalog, dispatches, path).line()}")
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
    catalog.joined = join_traces(catalog, traces, kernel_traces)
    return catalog


def source_label(path: str, paths: list[str]) -> str:
    """The file name rows are labelled with: none when there is one path."""
    return "" if len(paths) == 1 else path


def decode_paths(paths: list[str], catalog: Optional[Catalog] = None) -> Catalog:
    """Decode whole files (or stdin) into one catalog, one after the other; raises OSError
    for an unreadable path.  (``miotui.logs.parallel`` decodes several files at once into
    the same catalog.)"""
    if catalog is None and paths != ["-"]:
        joined = decode_with_traces(paths)
        if joined is not None:
            return joined
    catalog = catalog if catalog is not None else Catalog()
    for path in paths:
        decode_path(catalog, path, source_label(path, paths))
    return catalog

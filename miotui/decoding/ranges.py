"""One big file decoded in byte ranges at once, merged into exactly the serial result.

Why: a training job's log is gigabytes and the scan is pure Python, one core.  The file is
cut into ranges at line starts, one worker process per range.  The hard part is the state
a scanner carries from line to line (an API block cut in two, a Find whose result lines come
later, a thread's current call, a driver command waiting for its output, the clock, the
trace decoder's descriptors): a range that starts with a fresh scanner would read its first
lines differently from the serial run.

So each range but the first begins with a warm-up: its worker reads the file's first
``LOOKBACK`` bytes (what a log sets once at its start: the data types of its tensor
descriptors, its settings) and the ``LOOKBACK`` bytes before the range (a training log
repeats itself every iteration) into a scratch catalog, which re-establishes the carried
state, then goes on into the range's own catalog (``LogScanner.move_to``: rows it met are
carried over without counts).  Nothing is taken on trust: each worker reports its scanner's
carried state where its range ends (``LogScanner.carried_state``) and the next worker its
state where its range begins, after the warm-up; the merge checks that the two are equal
(then the next range reads every line as the serial run does, by induction from the first
range, which starts where the serial run starts) and that every row a worker carried over
is one the ranges before it made.  A timed log's clock is the sum of every time field
before, which a worker does not know: it is left out of the comparison, and a range where a
fact asked for it (a compile, a search: the first iteration's) is not trusted.  Where a check
fails (a tuning search running across a seam, a log that never repeats, a fact asking for
the clock after a seam), or where the MIOpenDriver output tracker answered a line (which
lines it skips depends on the line cache's whole history), the file is decoded serially: the output is the same
either way, falling back costs only time, and a probe of one early seam before the workers
start (``seams_likely``) makes that cost a few MB for a log that cannot be split.  The
ranges' catalogs are merged in file order by ``Catalog.merge``, as whole files are.  Line
numbers are the file's: each worker counts the line ends before its warm-up.

Serial stays the way for stdin, a followed log and a ``.gz`` file (a compressed stream
cannot be entered in the middle).
"""

from __future__ import annotations

import collections
import os
import types
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, fields, is_dataclass
from typing import Optional

from miotui.catalog import Catalog, LayerRow
from miotui.formats import miopen
from miotui.formats.miopen.scan import LogScanner

#: bytes read before a range to re-establish the scanner's state (a few iterations of a
#: training log; an API trace iteration of ResNet-50 is about 1 MB)
LOOKBACK = 4 << 20
#: the least bytes per range: the probe, the warm-ups, counting the lines before a range and
#: starting the workers cost about 0.3-0.5 s (on 2 x 50 MB, 2 workers took 0.48 s where one
#: took 0.36 s; on 2 x 512 MB, 2.8-3.6 s where one took 3.4-5.0 s: bench_decode_ranges.py)
MIN_RANGE_BYTES = 128 << 20
_READ = 1 << 20


@dataclass(frozen=True)
class Range:
    """One worker's part of the file: it reads ``[warm, start)`` to warm up and decodes
    ``[start, end)`` (all three line starts)."""

    warm: int
    start: int
    end: int


@dataclass
class RangeResult:
    """What a worker sends back: its range's catalog and its scanner's carried state (as a
    comparable key) where the range begins (after its warm-up; None for the first range)
    and where it ends (None for the last, which the worker finished)."""

    catalog: Catalog
    entry: Optional[tuple]
    exit: Optional[tuple]
    #: the driver tracker answered a line in the warm-up or the range (``LogScanner.driver_answered``)
    driver_answered: bool = False
    #: a fact in the range asked for the clock, which the worker did not know (a timed log)
    clock_asked: bool = False


def line_start_at_or_after(fh, pos: int) -> int:
    """The first line start at or after byte ``pos`` (a position just after a "\\n")."""
    if pos <= 0:
        return 0
    fh.seek(pos - 1)
    skipped = 0
    while True:
        data = fh.read(1 << 16)
        if not data:
            return pos - 1 + skipped
        k = data.find(b"\n")
        if k >= 0:
            return pos - 1 + skipped + k + 1
        skipped += len(data)


def count_line_ends(fh, start: int, end: int, chunk: int = 8 << 20, few_cr: int = 1024) -> int:
    """Lines that end in ``[start, end)`` as the scanner counts them: "\\n", "\\r" and
    "\\r\\n" each end one (``start`` and ``end`` are line starts).

    A "\\r" is rare but for progress bars (a few per MB) and CRLF logs (one per line): a
    chunk's first ``few_cr`` are each looked at (is a "\\n" next?) and only the rest
    counted, where counting the two-byte "\\r\\n" over every chunk that has one took as long
    as the rest of the count (CPU for the first half of a 1 GB Command-line log with progress
    bars: 0.22 s, 0.35-0.8 s before).  numpy's compare-and-count is no faster than
    ``bytes.count`` of one byte here, and a worker that imported it peaked at 89 MB, not 37."""
    fh.seek(start)
    n = 0
    left = end - start
    last_cr = False
    buf = bytearray(min(chunk, max(left, 0)))
    view = memoryview(buf)
    while left > 0:
        got = fh.readinto(view[:min(chunk, left)])
        if not got:
            break
        left -= got
        n += buf.count(b"\n", 0, got)
        cr = buf.find(b"\r", 0, got)
        seen = 0
        while cr >= 0 and seen < few_cr:   # each "\\r" a line end, but for one a "\\n" follows
            n += cr + 1 == got or buf[cr + 1] != 10
            seen += 1
            cr = buf.find(b"\r", cr + 1, got)
        if cr >= 0:   # many: the rest counted in two passes
            n += buf.count(b"\r", cr, got) - buf.count(b"\r\n", cr, got)
        if last_cr and buf[0] == 10:
            n -= 1
        last_cr = buf[got - 1] == 13
    return n


#: counting a byte's line ends costs about this share of decoding it (CPU seconds for 530 MB of
#: 1 GB logs: 0.21-0.22 s against 1.8-1.9 s of Command lines with progress bars, 2.1-2.2 s of an
#: API trace)
COUNT_SHARE = 0.1
#: a later range's fixed cost, in ``lookback``s decoded: its warm-up reads two (the file's
#: head and the bytes before the range), and the rest (the count's start, a colder cache) about as much
WARM_COST = 4


def plan_ranges(path: str, parts: int, lookback: int = LOOKBACK) -> list[Range]:
    """``parts`` ranges that should take about equally long (fewer where the file has fewer
    lines): a later range's worker first warms up and counts the lines before it, so it
    gets fewer bytes."""
    size = os.path.getsize(path)

    def lengths(first: float) -> list[float]:
        out, before = [], 0.0
        for i in range(parts):   # each worker's time = its warm-up + COUNT_SHARE * bytes before + its bytes
            out.append(first if i == 0 else max(0.05 * first, first - WARM_COST * lookback - COUNT_SHARE * before))
            before += out[-1]
        return out

    low, high = 0.0, float(size)
    for _ in range(60):   # the first range's length at which the lengths add up to the file
        middle = (low + high) / 2
        low, high = (middle, high) if sum(lengths(middle)) < size else (low, middle)
    cuts, at = [], 0.0
    for length in lengths(high):
        cuts.append(int(at))
        at += length
    return ranges_at(path, cuts, lookback)


def ranges_at(path: str, cuts: list[int], lookback: int = LOOKBACK) -> list[Range]:
    """Ranges that begin at the first line start at or after each of ``cuts`` (the first
    at 0), each warmed up over about ``lookback`` bytes before it (from a line start)."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        starts = sorted({0} | {line_start_at_or_after(fh, cut) for cut in cuts})
        starts = [s for s in starts if s < size] or [0]
        ranges = []
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else size
            warm = min(start, line_start_at_or_after(fh, max(0, start - lookback))) if start else 0
            ranges.append(Range(warm, start, end))
    return ranges


def decode_range(path: str, rng: Range, last: bool) -> RangeResult:
    """A worker's job: count the lines before the warm-up, warm up, decode the range."""
    catalog = Catalog()
    with open(path, "rb") as fh:
        lines_before = count_line_ends(fh, 0, rng.warm)
        if rng.start == 0:
            scanner = LogScanner(catalog)
            if rng.end:
                catalog.formats.setdefault(miopen.FORMAT.label)   # as ``FormatRegistry.scanner_for`` notes it
            entry = None
        else:
            scanner = LogScanner(Catalog())
            head = line_start_at_or_after(fh, min(rng.warm, rng.start - rng.warm))
            if head:   # what a log sets once at its start (descriptors' data types, its settings)
                _feed(scanner, fh, 0, head)
            scanner.line_no = lines_before
            _feed(scanner, fh, rng.warm, rng.start)
            scanner.move_to(catalog)
            entry = state_key(scanner.carried_state())
        _feed(scanner, fh, rng.start, rng.end)
    if last:
        scanner.finish()
        return RangeResult(catalog, entry, None, scanner.driver_answered, scanner.clock_asked_unknown)
    return RangeResult(catalog, entry, state_key(scanner.carried_state()), scanner.driver_answered,
                       scanner.clock_asked_unknown)


def _feed(scanner: LogScanner, fh, start: int, end: int) -> None:
    fh.seek(start)
    left = end - start
    while left > 0:
        data = fh.read(min(_READ, left))
        if not data:
            break
        left -= len(data)
        scanner.feed(data)


class StateKeyError(ValueError):
    """A scanner state that ``state_key`` cannot compare (the ranges are then not trusted)."""


def state_key(value: object, depth: int = 0) -> tuple:
    """A comparable, picklable image of a scanner's carried state: values as they are,
    containers element by element in their order, a catalog row as its layer, an object as
    its type and attributes except the caches of ``_SPEED_ONLY_PARTS``, a zero-argument lambda
    as what it returns (the lines of a held block), other functions left out."""
    if depth > 40:
        raise StateKeyError("scanner state nested too deeply to compare")
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return ("v", value)
    if isinstance(value, LayerRow):
        return ("row", value.problem)
    if is_dataclass(value) and getattr(type(value), "__hash__", None) is not None \
            and type(value).__dataclass_params__.frozen:
        return ("v", value)
    deeper = depth + 1
    if isinstance(value, dict):
        return ("dict",) + tuple((state_key(k, deeper), state_key(v, deeper)) for k, v in value.items())
    if isinstance(value, (list, tuple, collections.deque)):
        return (type(value).__name__,) + tuple(state_key(v, deeper) for v in value)
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(state_key(v, deeper) for v in value))
    if isinstance(value, memoryview):
        return ("v", value.tobytes())
    if isinstance(value, types.FunctionType):
        if value.__name__ == "<lambda>" and value.__code__.co_argcount == 0:
            return ("fn", state_key(value(), deeper))
        return ("fn", value.__qualname__)
    if isinstance(value, (types.MethodType, types.BuiltinFunctionType, type, types.ModuleType)):
        return ("fn", getattr(value, "__qualname__", ""))
    if is_dataclass(value):
        items = [(f.name, getattr(value, f.name)) for f in fields(value)]
    else:
        names = list(getattr(value, "__dict__", {}))
        for klass in type(value).__mro__:
            names += [n for n in getattr(klass, "__slots__", ()) if hasattr(value, n)]
        items = [(n, getattr(value, n)) for n in names]
    return (type(value).__qualname__,) + tuple(
        (name, state_key(v, deeper)) for name, v in items if name not in _SPEED_ONLY_PARTS)


#: caches and counters of the scanner's decoders (their other state is compared), and the level
#: decoder's recent convolutions, which only the driver tracker reads (to name a ``stats:``
#: line's layer, an answer: ranges are then not trusted) and which depend on which lines
#: were replayed from the cache (a level-6 log's seams differ there)
_SPEED_ONLY_PARTS = frozenset({"_cache", "stats", "state_version", "_handlers", "_by_func", "_cacheable",
                               "_recent_keys", "_cache_limit", "_dtype_limit", "recent_convs", "recent_im2col"})


def range_workers(path: str, jobs: Optional[int] = None) -> int:
    """Ranges to decode ``path`` in: at most the cores and ``jobs``, at least
    ``MIN_RANGE_BYTES`` each; 1 for a ``.gz`` file and for a file that is not a plain
    UTF-8 MIOpen log (``miotui_log``)."""
    if path.endswith(".gz"):
        return 1
    cores = os.cpu_count() or 1
    limit = cores if jobs is None else min(cores, jobs)
    parts = max(1, min(limit, os.path.getsize(path) // MIN_RANGE_BYTES))
    return parts if parts > 1 and miopen_log(path) else 1


def miopen_log(path: str) -> bool:
    """Whether the serial decode reads ``path`` as a MIOpen log in UTF-8 as it is: the
    format its first chunk is told by (``miotui.formats.choose``: a cuDNN log or a profiler
    trace has scanners of its own) and the encoding its first bytes are told by (a UTF-16
    or byte-order-marked file is converted, so its byte offsets are not the text's)."""
    from miotui.formats import choose
    from miotui.sources.encoding import SNIFF_BYTES, binary_warning, sniff
    with open(path, "rb") as fh:
        head = fh.read(_READ)
    if sniff(head[:SNIFF_BYTES]) != (0, "", "UTF-8") or binary_warning(head[:SNIFF_BYTES]):
        return False
    return choose(head) is miopen.FORMAT


def merge_ranges(results: list[RangeResult], catalog: Catalog) -> bool:
    """Merge the ranges' catalogs into ``catalog`` in file order; False (``catalog`` then
    unusable) where a seam's states differ, a carried row was not made before, or a driver
    tracker answered lines (MIOpenDriver's typed commands and output: whether a line is
    skipped as one the tracker ignored before depends on the line cache's whole history)."""
    if any(result.driver_answered or result.clock_asked for result in results):
        return False
    for i, result in enumerate(results):
        if i and (result.entry is None or result.entry != results[i - 1].exit):
            return False
        if any(not catalog.has_row(problem) for problem in result.catalog.carried):
            return False
        catalog.merge(result.catalog)
    return True


def decode_file_in_ranges(path: str, workers: int, lookback: int = LOOKBACK,
                          pool_context=None) -> Optional[Catalog]:
    """``path`` decoded in ``workers`` ranges at once; the catalog ``decode_paths([path])``
    gives, or None where the seams did not agree or the processes could not start or died
    (the caller decodes serially then)."""
    catalog = Catalog()
    ranges = plan_ranges(path, workers, lookback)
    if len(ranges) < 2 or not seams_likely(path, ranges[1].start, lookback):
        return None
    try:
        pool = ProcessPoolExecutor(max_workers=len(ranges), mp_context=pool_context)
    except (OSError, ImportError, NotImplementedError, ValueError, RuntimeError):
        return None
    try:
        try:
            futures = [pool.submit(decode_range, path, rng, i == len(ranges) - 1) for i, rng in enumerate(ranges)]
            results = [future.result() for future in futures]
        except (BrokenProcessPool, OSError, RuntimeError, StateKeyError):
            return None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if not merge_ranges(results, catalog):
        return None
    catalog.input_ended()
    return catalog


def seams_likely(path: str, before: int, lookback: int = LOOKBACK) -> bool:
    """Whether a seam early in the file agrees (the state after the first ``2 * lookback``
    bytes, and after a warm-up over the last ``lookback`` of them), decided here before any
    worker starts: a log whose state a warm-up cannot re-establish (a log of MIOpenDriver
    runs, one that does not repeat) then costs a probe of a few MB instead of a parallel decode
    thrown away.  Only a hint: the merge still
    checks every seam."""
    with open(path, "rb") as fh:
        at = line_start_at_or_after(fh, min(2 * lookback, before))
    if at <= 0 or at >= os.path.getsize(path):
        return True
    with open(path, "rb") as fh:
        warm = min(at, line_start_at_or_after(fh, at - lookback))
    probe = Range(warm, at, at)
    try:
        first = decode_range(path, Range(0, 0, at), False)
        second = decode_range(path, probe, False)
    except StateKeyError:
        return False
    return merge_ranges([first, second], Catalog())


def decode_ranges_here(path: str, ranges: list[Range]) -> Optional[Catalog]:
    """The same decode and merge in this process, one range after the other (for tests and
    to see what a split does without worker processes)."""
    catalog = Catalog()
    results = [decode_range(path, rng, i == len(ranges) - 1) for i, rng in enumerate(ranges)]
    if not merge_ranges(results, catalog):
        return None
    catalog.input_ended()
    return catalog

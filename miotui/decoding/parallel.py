"""Several whole files decoded at once: one worker process per file, merged in path order
(one big file: in ranges at once, ``miotui.decoding.ranges``).

Why processes: decoding is pure-Python work (one thread at a time holds the interpreter),
and the files are independent: each file has a ``LogScanner`` of its own that keeps its
state to itself, so a file can be decoded into a catalog of its own in another process and
merged afterwards.  ``Catalog.merge`` says why merging in the order of the paths gives the
catalog the serial run gives, to the last count, line and annotation; the tests compare
every output format both ways.  A worker's catalog grows with its file's unique layers (its
undecoded records and startup timeline are capped), not with the file's size, so what comes
back from a worker is small.

Serial (``sources.decode_paths``) stays the way for one file, for stdin and for anything a
fresh process cannot open by its name (``-``, the ``/dev/fd/N`` of a shell's ``<(...)``, a
fifo, a missing or unreadable path, whose error the serial run then reports), for one job,
and wherever worker processes cannot start or die: the output is the same either way, so
falling back costs only time.  A file that turns unreadable between the check and its
worker raises the worker's ``OSError``, for the first such path in path order, as the
serial run would.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Optional, Sequence

from miotui.catalog import Catalog
from miotui.decoding.ranges import decode_file_in_ranges, range_workers
from miotui.decoding.whole import (
    decode_path,
    decode_paths,
    decode_with_traces,
    join_traces,
    source_label,
    split_traces,
)


def worker_count(paths: Sequence[str], jobs: Optional[int] = None) -> int:
    """Processes to use: one per file, at most the cores and at most ``jobs`` (None: the cores)."""
    cores = os.cpu_count() or 1
    return max(1, min(len(paths), cores, cores if jobs is None else jobs))


def separable(paths: Sequence[str]) -> bool:
    """Whether every path is a regular file that another process can open and read by its
    name (not stdin, nothing under ``/dev`` or ``/proc``, whose names mean this process's
    descriptors)."""
    for path in paths:
        if path == "-" or os.path.abspath(path).startswith(("/dev/", "/proc/")):
            return False
        if not (os.path.isfile(path) and os.access(path, os.R_OK)):
            return False
    return True


def decode_one(path: str, file: str) -> Catalog:
    """A worker's job: one file into a fresh catalog (pickled back to the parent)."""
    catalog = Catalog()
    decode_path(catalog, path, file)
    return catalog


def decode_files(paths: list[str], jobs: Optional[int] = None) -> Catalog:
    """Decode whole files (or stdin) into one catalog, several files at once when there are
    several files and cores (``jobs``: at most this many processes; None: the cores); the
    catalog is the one ``decode_paths`` gives.  Raises OSError for an unreadable path."""
    if len(paths) > 1:
        logs, traces, kernel_traces = split_traces(paths)
        if kernel_traces:   # joined by the order of calls: decoded in order, keeping it
            return decode_with_traces(paths)
        if logs and traces:   # the trace's times go to the logs' layers
            catalog = decode_files(logs, jobs)
            catalog.note_joins(join_traces(catalog, traces))
            return catalog
    if len(paths) == 1 and separable(paths):
        parts = range_workers(paths[0], jobs)
        if parts > 1:
            catalog = decode_file_in_ranges(paths[0], parts, pool_context=_context())
            if catalog is not None:
                return catalog
    workers = worker_count(paths, jobs)
    if workers > 1 and separable(paths):
        catalog = _decode_apart(paths, workers)
        if catalog is not None:
            return catalog
    return decode_paths(paths)


def _context():
    """``forkserver`` where there is one (workers forked from a server that has imported
    the decoder: a fast start, and no copy of this process's threads or open files), else
    ``spawn``."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        return context
    return multiprocessing.get_context("spawn")


def _decode_apart(paths: list[str], workers: int) -> Optional[Catalog]:
    """The files decoded in ``workers`` processes and merged in path order; None when the
    processes could not start or one died (the caller decodes serially then)."""
    catalogs = _decode_groups_apart([paths], workers)
    return None if catalogs is None else catalogs[0]


#: below this many bytes in all, groups are decoded one after the other: starting the worker
#: processes costs about what a second core saves on two 50 MB logs (bench_diff.py)
GROUPS_APART_MIN_BYTES = 128 << 20


def decode_file_groups(groups: Sequence[Sequence[str]], jobs: Optional[int] = None,
                       min_bytes: int = GROUPS_APART_MIN_BYTES) -> list[Catalog]:
    """Each group of paths decoded into a catalog of its own (``miotui diff``: the OLD run's
    files and the NEW run's), every file of every group at once where they can be and hold
    ``min_bytes`` or more in all, so two one-file runs take two processes; each catalog is the
    one ``decode_files`` gives for its group.  Raises OSError for an unreadable path."""
    flat = [path for group in groups for path in group]
    workers = worker_count(flat, jobs)
    if workers > 1 and len(groups) > 1 and separable(flat) and sum(map(os.path.getsize, flat)) >= min_bytes \
            and not any(len(group) > 1 and any(split_traces(list(group))[1:]) for group in groups):
        # (a group with a trace beside its logs is joined by decode_files, not merged file by file)
        catalogs = _decode_groups_apart([list(g) for g in groups], workers)
        if catalogs is not None:
            return catalogs
    return [decode_files(list(group), jobs) for group in groups]


def _decode_groups_apart(groups: list[list[str]], workers: int) -> Optional[list[Catalog]]:
    """Each group's files decoded in one pool of ``workers`` processes and merged in path
    order, a catalog per group; None when the processes could not start or one died (the
    caller decodes serially then)."""
    out = [Catalog() for _ in groups]   # made now: a catalog's seconds count from its start
    try:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=_context())
    except (OSError, ImportError, NotImplementedError, ValueError, RuntimeError):
        return None
    try:
        try:
            futures = [[pool.submit(decode_one, path, source_label(path, group)) for path in group]
                       for group in groups]
        except (OSError, RuntimeError):
            return None
        for catalog, group_futures in zip(out, futures, strict=True):
            for future in group_futures:
                try:
                    catalog.merge(future.result())
                except BrokenProcessPool:
                    return None
            catalog.input_ended()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return out

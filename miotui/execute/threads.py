"""Threads, cancellation and scratch memory shared by the reference and the numba kernels.

The reference's heavy parts are numpy copies and adds or nogil numba kernels, which
release the GIL, so splitting them over plain Python threads really runs them in
parallel.  This module owns everything about that, so that the conv reference, the
other layer kinds and the numba kernels need not import each other for it:

* :data:`THREADS` (how many; read at call time, so a test or the snapshot set-up can
  pin it) and :func:`run_parallel`;
* :class:`Cancelled` and :func:`check_cancel` (``cancel`` is anything with ``is_set()``);
* persistent worker pools: the batch split's (:func:`split_pool`) and the depthwise
  kernels' (:func:`kernel_pool`); :func:`shutdown_threads` lets them end when the app
  quits;
* per-thread scratch buffers (:data:`workspace`), reused across runs.

A thread of a persistent pool is marked (:func:`in_worker`): work it is given runs in
that thread alone, so nested splitting cannot oversubscribe the cores.
"""

from __future__ import annotations

import math
import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

#: Threads for the memory-bound parts (im2col copy, col2im adds, numba kernels).
try:
    THREADS = max(1, min(8, len(os.sched_getaffinity(0))))
except (AttributeError, OSError):  # pragma: no cover - non-Linux
    THREADS = max(1, min(8, os.cpu_count() or 1))

#: Below this many bytes a copy is not worth splitting over threads.
PARALLEL_MIN_BYTES = 1 << 20

#: Scratch kept per thread between runs (bytes; the reference's chunk budget);
#: larger buffers are freed after use.
WORKSPACE_KEEP_BYTES = 128 << 20


class CancelFlag(Protocol):
    """What every ``cancel`` argument is: a threading.Event, or the runner's deadline
    (an Event that the clock also sets)."""

    def is_set(self) -> bool: ...


class Cancelled(Exception):
    """The caller set ``cancel`` while the reference was running."""


def check_cancel(cancel: Optional[CancelFlag]) -> None:
    """Raise :class:`Cancelled` when ``cancel`` (an Event, or anything with ``is_set``) is set."""
    if cancel is not None and cancel.is_set():
        raise Cancelled("reference run cancelled")


_tls = threading.local()


def in_worker() -> bool:
    """Whether this thread belongs to a persistent pool (its work is not split again)."""
    return getattr(_tls, "single", False)


def _mark_worker() -> None:
    _tls.single = True


def run_parallel(fn: Callable[[int, int], None], length: int, nbytes: int) -> None:
    """Run ``fn(start, stop)`` over [0, length) split across THREADS Python threads.

    The first part runs in the calling thread; work under ``PARALLEL_MIN_BYTES`` (or
    inside a pool worker) runs there alone.  The first exception of any part is
    re-raised after every part has ended.
    """
    threads = 1 if in_worker() else THREADS
    parts = min(threads, length) if nbytes >= PARALLEL_MIN_BYTES else 1
    if parts <= 1:
        fn(0, length)
        return
    bounds = [length * i // parts for i in range(parts + 1)]
    errors: list[BaseException] = []

    def guarded(a: int, b: int) -> None:
        try:
            fn(a, b)
        except BaseException as exc:  # re-raised in the caller
            errors.append(exc)

    workers = [threading.Thread(target=guarded, args=(bounds[i], bounds[i + 1]), daemon=True)
               for i in range(1, parts)]
    for t in workers:
        t.start()
    guarded(bounds[0], bounds[1])
    for t in workers:
        t.join()
    if errors:
        raise errors[0]


# ----------------------------------------------------------------------------- pools

_pool_lock = threading.Lock()
_split_pool: "Optional[ThreadPoolExecutor]" = None
_kernel_pool: "Optional[ThreadPoolExecutor]" = None


def split_pool() -> "ThreadPoolExecutor":
    """Persistent workers for the batch split (their scratch buffers survive between runs)."""
    from concurrent.futures import ThreadPoolExecutor
    global _split_pool
    with _pool_lock:
        if _split_pool is None:
            _split_pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="miotui-ref",
                                             initializer=_mark_worker)
        return _split_pool


def pool_shut_down(pool: "ThreadPoolExecutor") -> bool:
    """Whether ``pool`` has been replaced by :func:`shutdown_threads` since it was handed out."""
    with _pool_lock:
        return pool is not _split_pool


def kernel_pool(workers: int) -> "ThreadPoolExecutor":
    """Persistent workers for the depthwise kernels (created on first use): their calls
    take 0.2-1 ms on small layers, so a thread per call (~0.1 ms) would cost too much."""
    from concurrent.futures import ThreadPoolExecutor
    global _kernel_pool
    with _pool_lock:
        if _kernel_pool is None:
            _kernel_pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="miotui-numba")
        return _kernel_pool


def shutdown_threads() -> None:
    """Let the batch split's persistent worker threads end (an app that quits leaves none behind).

    Queued chunks are dropped (their run has been cancelled by then); a chunk already
    running finishes on its own, then its thread exits.  A later run starts a new pool; a
    run handing out its parts at that very moment ends as cancelled (the app calls this
    only when it quits).  The cached scratch buffers go too.
    """
    global _split_pool
    with _pool_lock:
        pool, _split_pool = _split_pool, None
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
    release_workspace()


# ----------------------------------------------------------------------------- scratch

_workspaces_lock = threading.Lock()
#: every thread's scratch buffers (for :func:`release_workspace` and tests)
all_workspaces: "list[dict[str, np.ndarray]]" = []


class Workspace(threading.local):
    """Per-thread scratch buffers reused across runs.

    A fresh 60 MB column buffer costs as much in page faults (the kernel zeroes every
    page on first touch) as the im2col copy itself, so repeated runs of a layer (the
    timing loop) reuse one.  At most ``WORKSPACE_KEEP_BYTES`` stay allocated per thread
    between runs; :func:`release_workspace` frees them.
    """

    def __init__(self) -> None:
        self.buffers: "dict[str, np.ndarray]" = {}
        with _workspaces_lock:
            all_workspaces.append(self.buffers)

    def get(self, name: str, shape: tuple[int, ...], dtype: Any, zero: bool = False) -> "np.ndarray":
        import numpy as np  # here, not at the top: the app imports this module at start-up
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        buf = self.buffers.get(name)
        if buf is None or buf.nbytes < nbytes:
            self.buffers.pop(name, None)
            buf = np.empty(max(nbytes, 64), dtype=np.uint8)
            if nbytes <= WORKSPACE_KEEP_BYTES - sum(b.nbytes for b in self.buffers.values()):
                self.buffers[name] = buf
        # align the view to the dtype: the uint8 buffer is allocated 64-byte aligned by numpy
        arr = buf[:nbytes].view(dtype).reshape(shape)
        if zero:
            arr.fill(0)
        return arr


#: The scratch buffers of the calling thread.
workspace = Workspace()


def release_workspace() -> None:
    """Free the cached scratch buffers of every thread (a buffer a running computation
    still uses stays alive until it is done with it: numpy views hold their base)."""
    with _workspaces_lock:
        for buffers in all_workspaces:
            buffers.clear()

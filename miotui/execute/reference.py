"""A CPU reference for every layer kind a log can show, convolution first.

This is the math behind the ``numpy`` (and ``numba``) backends and the float64
reference every other backend is verified against.  It mirrors what MIOpenDriver's
own host reference computes (``driver/conv_driver.hpp``, ``mlo*Host.hpp``):

* Arrays are **logical** N,C,(D,)H,W whatever the problem's layout.  NHWC/NDHWC only
  changes how MIOpen stores a tensor, not the numbers, so the reference computes in
  NCHW (an NHWC-strided input is made contiguous first).
* fp32, fp16 and bf16 inputs are computed in float32 (fp16 is upcast first: numpy's
  fp16 matmul is ~400x slower than its fp32 one), int8 in exact integer arithmetic
  (float32 GEMM when every partial sum stays below 2**24, else float64; results are
  int32, as MIOpen's int8 reference), and ``precision="fp64"`` computes everything in
  float64: that is the verification reference.

Convolution (``_conv_*``) is im2col + one GEMM, written so the cost is the GEMM:

* forward: pad, ``sliding_window_view``, slice for stride and dilation, one copy of
  the window view into the column buffer (split over threads: numpy releases the
  GIL), one GEMM per group.  The column buffer is laid out either per image
  ``(n, C*R*S, Ho*Wo)`` so the batched GEMM writes NCHW directly, or as
  ``(C*R*S, n*Ho*Wo)`` (one long GEMM, then one small transposing copy of the output)
  when the spatial size is small and per-image GEMMs would be too thin to run fast
  (below 28x28; below 12x12 for 1x1 filters, whose per-image GEMM is the whole
  layer).  A 1x1, stride-1, pad-0 convolution needs no columns at all.  With many
  filter taps per stride step along the row (a 7x7 stride-2 stem), the padded rows
  are first split into their stride phases so that every tap copies contiguous runs.
* backward data: one GEMM ``W^T . dy`` into columns, then col2im: one strided add per
  filter tap into a padded dx, then a crop.  Never the "flipped convolution of a
  zero-inserted dy" form, which costs stride**2 more memory and time.
* backward weights: one GEMM per group over the ``(C*R*S, n*Ho*Wo)`` layout: the
  reduction over the batch and the image happens inside BLAS, which measured at least
  as fast as per-image GEMMs summed, and much faster when K/G > Ho*Wo.  1x1 filters
  (any stride) with Ho*Wo >= 128 are the exception: one GEMM per image straight from
  dy and the (subsampled) x, with no transposing copies.
* The batch is processed in chunks whose column buffer fits ``chunk_bytes``; when one
  image alone does not fit, the chunk also splits the first output spatial axis, so a
  layer whose full im2col would not fit in memory still runs.  ``cancel`` is checked
  between chunks.  :func:`peak_bytes` replays the same plan to say what a run needs.

A transposed convolution is run as its underlying convolution (MIOpen's
definition): transposed forward = backward data of the convolution whose input is
y and whose output is x, transposed backward data = that convolution's forward, and
transposed backward weights = its weight gradient with x and dy swapped.  The
tensors keep ConvProblem's names and shapes (x: ``input_shape``, y: ``output_shape``,
w: ``weight_shape``).

The other layer kinds live in :mod:`miotui.execute.reference_ops`; the numba direct
kernels (depthwise / small-group convolution, pooling) in
:mod:`miotui.execute.numba_kernels`.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import zlib
from concurrent.futures import CancelledError, Future, wait
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence


def _prefer_avx512_openblas() -> Optional[str]:
    """Ask numpy's OpenBLAS for its AVX-512 kernels on CPUs it does not recognise.

    OpenBLAS 0.3.31 (numpy 2.4's wheel) does not know AMD family 26 (Zen 5) and falls
    back to its Haswell (AVX2) kernels: sgemm runs at ~130-210 GFLOP/s on two Zen 5
    cores instead of ~420 with the SkylakeX kernels (measured on this project's
    machines).  ``OPENBLAS_CORETYPE`` is OpenBLAS's documented override; it is read
    when the library loads, so this only helps if numpy has not been imported yet, and
    is only set when the user has not set it and the CPU reports every AVX-512 subset
    the SkylakeX kernels use.  Returns the value set, or None.
    """
    if "numpy" in sys.modules or "OPENBLAS_CORETYPE" in os.environ or sys.platform != "linux":
        return None
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            head = fh.read(16384)
    except OSError:
        return None
    vendor = family = ""
    flags: set[str] = set()
    for line in head.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "vendor_id" and not vendor:
            vendor = value.strip()
        elif key == "cpu family" and not family:
            family = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    needed = {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"}
    if vendor == "AuthenticAMD" and family.isdigit() and int(family) >= 26 and needed <= flags:
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
        return "SkylakeX"
    return None


BLAS_CORETYPE_SET = _prefer_avx512_openblas()

import numpy as np  # noqa: E402  (after the OpenBLAS hint on purpose)
from numpy.lib.stride_tricks import sliding_window_view  # noqa: E402

from miotui.problems import (ConvProblem, FusionProblem, Problem)  # noqa: E402

__all__ = [
    "Cancelled", "ReferenceUnsupported", "make_inputs", "run_reference", "peak_bytes",
    "tensor_names", "engine_used", "compute_dtype", "round_to_dtype", "blas_info",
    "CHUNK_BYTES", "THREADS",
]

#: Column-buffer budget per chunk (bytes).  The whole-batch im2col of ResNet-50's
#: largest layers at batch 8 is ~60 MB, so typical layers run in one chunk.
CHUNK_BYTES = 128 << 20

#: Threads for the memory-bound parts (im2col copy, col2im adds, numba kernels).
try:
    THREADS = max(1, min(8, len(os.sched_getaffinity(0))))
except (AttributeError, OSError):  # pragma: no cover - non-Linux
    THREADS = max(1, min(8, os.cpu_count() or 1))

#: Below this many bytes a copy is not worth splitting over threads.
_PARALLEL_MIN_BYTES = 1 << 20

#: Per-image GEMMs are used when a chunk's output spatial size is at least this;
#: below it one long GEMM over (C*R*S, n*Ho*Wo) runs faster (thin GEMMs are slow).
#: The long GEMM costs a transposing copy of the output (and, for 1x1 layers, of the
#: input); measured on ResNet-50's layers at batch 8 (2 cores, OpenBLAS Haswell
#: kernels), per-image GEMMs were 5-15% faster from 28x28 (784) up and within noise
#: at 14x14.
_BATCHED_MIN_SPATIAL = 784

#: The same threshold for 1x1 filters (any stride): their per-image GEMM is the whole
#: convolution (stride 1 reads x in place), and it beat the long GEMM by 15-35% at
#: 14x14 and 28x28 (forward and backward data); at 7x7 the long GEMM still wins.
_BATCHED_MIN_SPATIAL_1X1 = 128

#: Gather strided convolutions through a phase split of the last axis (see
#: :func:`_uses_phases`) when output rows are at least this long and the filter has at
#: least this many taps per stride step along the row.
_PHASE_GATHER = True
_PHASE_MIN_ROW = 8
_PHASE_MIN_TAPS_PER_STRIDE = 2


class Cancelled(Exception):
    """The caller set ``cancel`` while the reference was running."""


class ReferenceUnsupported(NotImplementedError):
    """A layer the reference cannot compute; the message says why (the backend turns it
    into a result rather than a crash)."""


# ----------------------------------------------------------------------------- dtypes

def compute_dtype(problem: Problem, precision: str = "fp32") -> np.dtype:
    """The float type the reference computes in for this problem and precision."""
    if precision not in ("fp32", "fp64"):
        raise ValueError(f"precision must be fp32 or fp64, got {precision!r}")
    if precision == "fp64" or problem.dtype == "fp64":
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def storage_dtype(dtype: str) -> np.dtype:
    """numpy type that holds a tensor of this MIOpen dtype (bf16/fp8/bf8: rounded float32)."""
    return np.dtype({"fp16": np.float16, "int8": np.int8, "fp64": np.float64}.get(dtype, np.float32))


def _round_bf16(a: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), kept as float32."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(a), out, a)


def _round_minifloat(a: np.ndarray, mantissa_bits: int, min_exp: int, max_value: float) -> np.ndarray:
    """Round to a small float format (fp8 e4m3 / bf8 e5m2, FNUZ ranges), subnormals included."""
    a = np.asarray(a, dtype=np.float64)
    mag = np.abs(a)
    exp = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    exp = np.maximum(exp, min_exp)
    ulp = np.exp2(exp - mantissa_bits)
    out = np.clip(np.rint(a / ulp) * ulp, -max_value, max_value)
    return out.astype(np.float32)


def round_to_dtype(a: np.ndarray, dtype: str) -> np.ndarray:
    """Values of ``a`` as a tensor of MIOpen ``dtype`` would hold them, in :func:`storage_dtype`."""
    if dtype == "fp16":
        return np.asarray(a).astype(np.float16)
    if dtype == "bf16":
        return _round_bf16(np.asarray(a, dtype=np.float32))
    if dtype == "fp8":   # e4m3 FNUZ (MIOpen's fp8 on gfx94x): 3 mantissa bits, max 240
        return _round_minifloat(a, 3, -7, 240.0)
    if dtype == "bf8":   # e5m2 FNUZ: 2 mantissa bits, max 57344
        return _round_minifloat(a, 2, -15, 57344.0)
    if dtype == "int8":
        return np.clip(np.rint(a), -128, 127).astype(np.int8)
    return np.asarray(a).astype(storage_dtype(dtype))


def _rng(seed: int, name: str) -> np.random.Generator:
    """One independent stream per (seed, tensor name): x is the same in fwd and wrw."""
    return np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(name.encode())])


def uniform(seed: int, name: str, shape: Sequence[int], low: float, high: float, dtype: str) -> np.ndarray:
    """Uniform values in [low, high) rounded to ``dtype`` (int8: integers in [low, high])."""
    rng = _rng(seed, name)
    if dtype == "int8":
        return rng.integers(int(low), int(high) + 1, size=tuple(shape), dtype=np.int64).astype(np.int8)
    vals = rng.random(size=tuple(shape), dtype=np.float64) * (high - low) + low
    return round_to_dtype(vals, dtype)


def blas_info() -> dict[str, Any]:
    """Which BLAS numpy uses and which kernels it picked (for benchmark reports)."""
    info: dict[str, Any] = {"coretype_set_by_miotui": BLAS_CORETYPE_SET,
                            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}
    try:
        import ctypes
        import glob
        libdir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
        for path in glob.glob(os.path.join(libdir, "*openblas*.so*")):
            lib = ctypes.CDLL(path)
            for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_",
                         "openblas_get_corename"):
                if hasattr(lib, name):
                    fn = getattr(lib, name)
                    fn.restype = ctypes.c_char_p
                    info["corename"] = fn().decode()
                    break
    except Exception as exc:  # pragma: no cover - informative only
        info["corename_error"] = str(exc)
    return info


# ----------------------------------------------------------------------------- threads

def _run_parallel(fn: Callable[[int, int], None], length: int, nbytes: int) -> None:
    """Run ``fn(start, stop)`` over [0, length) split across THREADS Python threads.

    The work is numpy copies/adds or nogil numba kernels, which release the GIL, so
    the threads really run in parallel; the first part runs in the calling thread.
    """
    threads = 1 if getattr(_tls, "single", False) else THREADS
    parts = min(threads, length) if nbytes >= _PARALLEL_MIN_BYTES else 1
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

    threads = [threading.Thread(target=guarded, args=(bounds[i], bounds[i + 1]), daemon=True)
               for i in range(1, parts)]
    for t in threads:
        t.start()
    guarded(bounds[0], bounds[1])
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


_workspaces_lock = threading.Lock()
_all_workspaces: list[dict[str, np.ndarray]] = []


class _Workspace(threading.local):
    """Per-thread scratch buffers reused across runs.

    A fresh 60 MB column buffer costs as much in page faults (the kernel zeroes every
    page on first touch) as the im2col copy itself, so repeated runs of a layer (the
    timing loop) reuse one.  At most ``WORKSPACE_KEEP_BYTES`` stay allocated per thread
    between runs; :func:`release_workspace` frees them.
    """

    def __init__(self) -> None:
        self.buffers: dict[str, np.ndarray] = {}
        with _workspaces_lock:
            _all_workspaces.append(self.buffers)

    def get(self, name: str, shape: tuple[int, ...], dtype: np.dtype, zero: bool = False) -> np.ndarray:
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


#: Scratch kept per thread between runs (bytes); larger buffers are freed after use.
WORKSPACE_KEEP_BYTES = CHUNK_BYTES

_workspace = _Workspace()


def release_workspace() -> None:
    """Free the cached scratch buffers of every thread (a buffer a running computation
    still uses stays alive until it is done with it: numpy views hold their base)."""
    with _workspaces_lock:
        for buffers in _all_workspaces:
            buffers.clear()


_tls = threading.local()


class _BlasThreads:
    """Set numpy's OpenBLAS thread count through its C API (for the batch split).

    ``openblas_set_num_threads_local`` turned out to change the process-wide count
    too, so the split pins BLAS to one thread for the duration of one run, under a
    lock (a second concurrent run simply does not split), and restores it after.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._set: Optional[Callable[[int], None]] = None
        self._get: Optional[Callable[[], int]] = None
        self.reason: Optional[str] = None
        try:
            import ctypes
            import glob
            libdir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
            paths = glob.glob(os.path.join(libdir, "*openblas*.so*"))
            if not paths:
                self.reason = "numpy's OpenBLAS library not found"
                return
            lib = ctypes.CDLL(paths[0])
            for setter, getter in (("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
                                   ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
                                   ("openblas_set_num_threads", "openblas_get_num_threads")):
                if hasattr(lib, setter) and hasattr(lib, getter):
                    fset, fget = getattr(lib, setter), getattr(lib, getter)
                    fset.argtypes = [ctypes.c_int]
                    fset.restype = None
                    fget.restype = ctypes.c_int
                    self._set, self._get = fset, fget
                    return
            self.reason = "OpenBLAS exposes no thread-count API"
        except Exception as exc:  # pragma: no cover - depends on the numpy build
            self.reason = f"cannot load OpenBLAS: {exc}"

    @property
    def usable(self) -> bool:
        return self._set is not None

    def pin_one(self) -> Optional[int]:
        """Pin BLAS to one thread if no other run holds it; returns the old count or None."""
        if self._set is None or self._get is None or not self.lock.acquire(blocking=False):
            return None
        old = int(self._get())
        self._set(1)
        return old

    def restore(self, old: int) -> None:
        assert self._set is not None
        self._set(old)
        self.lock.release()


_blas_threads: Optional[_BlasThreads] = None
_split_pool: Optional[Any] = None
_pool_lock = threading.Lock()


def _get_blas_threads() -> _BlasThreads:
    global _blas_threads
    with _pool_lock:
        if _blas_threads is None:
            _blas_threads = _BlasThreads()
        return _blas_threads


def _get_split_pool() -> Any:
    """Persistent worker threads (their scratch buffers survive between runs)."""
    global _split_pool
    with _pool_lock:
        if _split_pool is None:
            from concurrent.futures import ThreadPoolExecutor

            def init() -> None:
                _tls.single = True

            _split_pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="miotui-ref",
                                             initializer=init)
        return _split_pool


def shutdown_threads() -> None:
    """Let the persistent worker threads end (an app that quits leaves none behind).

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


def _pool_shut_down(pool: Any) -> bool:
    with _pool_lock:
        return pool is not _split_pool


def _check_cancel(cancel: Optional[threading.Event]) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled("reference run cancelled")


# ----------------------------------------------------------------------------- conv geometry

@dataclass(frozen=True)
class ConvGeometry:
    """The underlying (non-transposed) convolution a ConvProblem runs.

    ``cu``/``ku`` are the underlying convolution's input/output channels, ``in_sp`` its
    input (for a transposed problem: y's spatial size), ``out_sp`` its output.  The input
    is padded by ``pad_before`` and to ``padded`` per axis; only the first ``needed``
    positions take part (``(out-1)*stride + dilation*(filter-1) + 1``).
    """

    n: int
    cu: int
    ku: int
    groups: int
    in_sp: tuple[int, ...]
    out_sp: tuple[int, ...]
    filt: tuple[int, ...]
    strides: tuple[int, ...]
    dils: tuple[int, ...]
    pad_before: tuple[int, ...]

    @property
    def nd(self) -> int:
        return len(self.in_sp)

    @property
    def cg(self) -> int:
        return self.cu // self.groups

    @property
    def kg(self) -> int:
        return self.ku // self.groups

    @property
    def eff(self) -> tuple[int, ...]:
        return tuple(d * (f - 1) + 1 for f, d in zip(self.filt, self.dils))

    @property
    def needed(self) -> tuple[int, ...]:
        return tuple((o - 1) * s + e for o, s, e in zip(self.out_sp, self.strides, self.eff))

    @property
    def padded(self) -> tuple[int, ...]:
        return tuple(max(nd, p + i) for nd, p, i in zip(self.needed, self.pad_before, self.in_sp))

    @property
    def taps(self) -> int:
        return math.prod(self.filt)

    @property
    def q(self) -> int:
        """GEMM reduction length of the forward pass: C/G * prod(filter)."""
        return self.cg * self.taps

    @property
    def out_elems(self) -> int:
        return math.prod(self.out_sp)

    @property
    def is_pointwise(self) -> bool:
        """1x1, stride 1, no padding: the input already is the column matrix."""
        return (all(f == 1 for f in self.filt) and all(s == 1 for s in self.strides)
                and all(p == 0 for p in self.pad_before) and self.in_sp == self.out_sp)

    @property
    def needs_pad(self) -> bool:
        return any(p != 0 for p in self.pad_before) or self.padded != self.in_sp


def conv_geometry(problem: ConvProblem) -> ConvGeometry:
    """Map a ConvProblem (normal or transposed, any pad mode) to its underlying convolution."""
    nd = problem.ndim
    if problem.mode == "trans":
        pads = problem.pads
        return ConvGeometry(problem.n, problem.k, problem.c, problem.groups, problem.out_spatial,
                            problem.in_spatial, problem.filter, problem.strides, problem.dilations, pads)
    out_sp = problem.out_spatial
    if problem.pad_mode == "same":
        # TF/MIOpen "same": total padding so that out = ceil(in/stride); the odd pixel
        # goes after (MIOpenDriver's -z same puts floor(total/2) before).
        pads = []
        for i in range(nd):
            eff = problem.dilations[i] * (problem.filter[i] - 1) + 1
            total = max((out_sp[i] - 1) * problem.strides[i] + eff - problem.in_spatial[i], 0)
            pads.append(total // 2)
        pads_t = tuple(pads)
    elif problem.pad_mode == "valid":
        pads_t = (0,) * nd
    else:
        pads_t = problem.pads
    return ConvGeometry(problem.n, problem.c, problem.k, problem.groups, problem.in_spatial,
                        out_sp, problem.filter, problem.strides, problem.dilations, pads_t)


# ----------------------------------------------------------------------------- conv plan

@dataclass(frozen=True)
class ConvPlan:
    """How a run is chunked: ``images`` per chunk, and ``rows`` of the first output
    spatial axis per chunk (all rows unless a single image's columns exceed the budget)."""

    images: int
    rows: int
    batched: bool
    col_bytes: int
    budget: int

    def chunks(self, g: ConvGeometry) -> list[tuple[int, int, int, int]]:
        out0 = g.out_sp[0]
        return [(n0, min(n0 + self.images, g.n), h0, min(h0 + self.rows, out0))
                for n0 in range(0, g.n, self.images) for h0 in range(0, out0, self.rows)]


def _conv_plan(g: ConvGeometry, itemsize: int, chunk_bytes: int) -> ConvPlan:
    per_image = g.cu * g.taps * g.out_elems * itemsize
    if g.is_pointwise:
        per_image = 0  # no column buffer (forward/backward data); wrw copies x per chunk
        per_image_wrw = g.cu * g.out_elems * itemsize
        images = max(1, min(g.n, chunk_bytes // max(per_image_wrw, 1)))
        return ConvPlan(images, g.out_sp[0], g.out_elems >= _BATCHED_MIN_SPATIAL_1X1, images * per_image_wrw,
                        chunk_bytes)
    if per_image <= chunk_bytes:
        images = max(1, min(g.n, chunk_bytes // per_image))
        rows = g.out_sp[0]
    else:
        images = 1
        per_row = max(per_image // g.out_sp[0], 1)
        rows = max(1, min(g.out_sp[0], chunk_bytes // per_row))
    chunk_spatial = rows * (g.out_elems // g.out_sp[0])
    one_by_one = all(f == 1 for f in g.filt)
    batched = chunk_spatial >= (_BATCHED_MIN_SPATIAL_1X1 if one_by_one else _BATCHED_MIN_SPATIAL)
    col_bytes = images * g.cu * g.taps * chunk_spatial * itemsize
    return ConvPlan(images, rows, batched, col_bytes, chunk_bytes)


# ----------------------------------------------------------------------------- conv pieces

def _pad_images(x: np.ndarray, g: ConvGeometry) -> np.ndarray:
    """Zero-pad (or crop) images to ``g.padded`` in a scratch buffer; no copy when nothing changes."""
    if not g.needs_pad:
        return x
    buf = _workspace.get("xp", x.shape[:2] + g.padded, x.dtype)
    inner = tuple(slice(p, p + i) for p, i in zip(g.pad_before, g.in_sp))
    # zero only the border, then copy the interior
    for axis in range(g.nd):
        lo = (slice(None), slice(None)) + tuple(slice(None) if a != axis else slice(0, g.pad_before[a])
                                                for a in range(g.nd))
        hi = (slice(None), slice(None)) + tuple(slice(None) if a != axis else
                                                slice(g.pad_before[a] + g.in_sp[a], None)
                                                for a in range(g.nd))
        buf[lo] = 0
        buf[hi] = 0
    dst = (slice(None), slice(None)) + inner

    def copy(a: int, b: int) -> None:
        buf[(slice(a, b),) + dst[1:]] = x[a:b]

    _run_parallel(copy, x.shape[0], x.nbytes)
    return buf


def _window_view(xp: np.ndarray, g: ConvGeometry, h0: int, h1: int) -> np.ndarray:
    """View (n, C, *filter, *out_rows) of the padded input: the im2col matrix, not copied."""
    nd = g.nd
    s0, e0 = g.strides[0], g.eff[0]
    region = [slice(h0 * s0, (h1 - 1) * s0 + e0)]
    region += [slice(0, g.needed[i]) for i in range(1, nd)]
    v = xp[(slice(None), slice(None)) + tuple(region)]
    win = sliding_window_view(v, g.eff, axis=tuple(range(2, 2 + nd)))
    sel = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in g.strides) \
        + tuple(slice(None, None, d) for d in g.dils)
    win = win[sel]  # (n, C, *out_rows, *filter)
    perm = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    return win.transpose(perm)


def _uses_phases(g: ConvGeometry) -> bool:
    """Whether the im2col gather goes through a phase split of the last spatial axis.

    With a stride along the last (contiguous) axis, the window view reads every
    stride-th element, and numpy copies such a view one element at a time (measured
    2-6 GB/s).  Splitting each padded row into its ``stride`` phases first (one strided
    copy of the input) turns every filter tap's read into a contiguous run of Wo
    elements.  It pays where the row has many taps per stride step, so that the columns
    are several times the input: ResNet-50's 7x7 stride-2 stem ran ~9% faster forward.
    On 3x3 stride-2 layers the extra copy cost more than it saved (10-15% slower), and
    a 1x1 filter has one tap: those keep the direct gather.
    """
    return (_PHASE_GATHER and g.nd >= 2 and g.strides[-1] > 1 and g.filt[-1] > 1
            and g.filt[-1] >= _PHASE_MIN_TAPS_PER_STRIDE * g.strides[-1]
            and g.out_sp[-1] >= _PHASE_MIN_ROW)


def _phase_planes(xp: np.ndarray, g: ConvGeometry) -> np.ndarray:
    """(sw, n, C, *padded[:-1], ceil(Wp/sw)): plane k holds columns k, k+sw, k+2sw, ...

    Only the phases a filter tap reads are filled; entries past a phase's last column
    are never read (every tap of every output column lies inside ``needed``).
    """
    sw, d, wp = g.strides[-1], g.dils[-1], xp.shape[-1]
    wq = -(-wp // sw)
    xq = _workspace.get("xq", (sw,) + xp.shape[:-1] + (wq,), xp.dtype)
    phases = sorted({(t * d) % sw for t in range(g.filt[-1])})

    def copy(a: int, b: int) -> None:
        for k in phases:
            cnt = len(range(k, wp, sw))
            xq[k, a:b, ..., :cnt] = xp[a:b, ..., k::sw]

    _run_parallel(copy, xp.shape[0], xp.nbytes)
    return xq


def _phase_tap_view(plane: np.ndarray, g: ConvGeometry, h0: int, h1: int, shift: int) -> np.ndarray:
    """View (n, C, *filter[:-1], *out_rows) of one phase plane for one tap along the last
    axis (the window over the other axes as in :func:`_window_view`)."""
    nd = g.nd
    s0, e0 = g.strides[0], g.eff[0]
    region = [slice(h0 * s0, (h1 - 1) * s0 + e0)]
    region += [slice(0, g.needed[i]) for i in range(1, nd - 1)]
    region.append(slice(shift, shift + g.out_sp[-1]))
    v = plane[(slice(None), slice(None)) + tuple(region)]
    win = sliding_window_view(v, g.eff[:-1], axis=tuple(range(2, 1 + nd)))
    sel = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in g.strides[:-1]) \
        + (slice(None),) + tuple(slice(None, None, d) for d in g.dils[:-1])
    win = win[sel]  # (n, C, *out_rows, *filter[:-1])
    perm = (0, 1) + tuple(range(2 + nd, 1 + 2 * nd)) + tuple(range(2, 2 + nd))
    return win.transpose(perm)


def _gather(xp: np.ndarray, g: ConvGeometry, h0: int, h1: int, batched: bool) -> np.ndarray:
    """Copy the im2col view into a contiguous column buffer (threads split the copy).

    batched: (n, C, *filter, *out_rows) -> reshapes to (n, G, Q, P);
    otherwise (C, *filter, n, *out_rows) -> reshapes to (G, Q, n*P).
    """
    nd = g.nd
    to_unbatched = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
    if _uses_phases(g):
        xq = _phase_planes(xp, g)
        rows = (h1 - h0,) + g.out_sp[1:]
        shape = (xp.shape[0], xp.shape[1]) + g.filt + rows
        if not batched:
            shape = tuple(shape[i] for i in to_unbatched)
        cols = _workspace.get("cols", shape, xp.dtype)
        sw, d = g.strides[-1], g.dils[-1]
        pairs = []
        for t in range(g.filt[-1]):
            view = _phase_tap_view(xq[(t * d) % sw], g, h0, h1, (t * d) // sw)
            if not batched:   # (n, C, *f[:-1], *rows) -> (C, *f[:-1], n, *rows)
                view = view.transpose((1,) + tuple(range(2, 1 + nd)) + (0,) + tuple(range(1 + nd, 1 + 2 * nd)))
            lead = 2 if batched else 1
            dest = cols[(slice(None),) * (lead + nd - 1) + (t,)]
            pairs.append((dest, view))
    else:
        view = _window_view(xp, g, h0, h1)
        if not batched:
            view = view.transpose(to_unbatched)
        cols = _workspace.get("cols", view.shape, xp.dtype)
        pairs = [(cols, view)]
    axis = 0 if cols.shape[0] >= cols.shape[1] or cols.shape[0] >= THREADS else 1

    def copy(a: int, b: int) -> None:
        idx = (slice(a, b),) if axis == 0 else (slice(None), slice(a, b))
        for dest, src in pairs:
            dest[idx] = src[idx]

    _run_parallel(copy, cols.shape[axis], cols.nbytes)
    return cols


def _tap_slices(g: ConvGeometry, tap: tuple[int, ...], h0: int, rows: int) -> tuple[slice, ...]:
    """Where filter tap ``tap`` of output rows [h0, h0+rows) reads in the padded input."""
    out = []
    for i, t in enumerate(tap):
        start = t * g.dils[i] + (h0 * g.strides[0] if i == 0 else 0)
        count = rows if i == 0 else g.out_sp[i]
        out.append(slice(start, start + (count - 1) * g.strides[i] + 1, g.strides[i]))
    return tuple(out)


def _col2im(dcols: np.ndarray, dxp: np.ndarray, g: ConvGeometry, h0: int, h1: int, batched: bool) -> None:
    """Add the column gradients back into the padded dx, one strided add per filter tap.

    dcols: batched (n, C, *filter, *rows) with dxp (n, C, *padded); otherwise
    (C, *filter, n, *rows) with dxp viewed as (C, n, *padded).  Threads split the first
    axis, so no two threads touch the same dx element.
    """
    target = dxp if batched else dxp.swapaxes(0, 1)
    taps = list(np.ndindex(*g.filt))

    def work(a: int, b: int) -> None:
        for tap in taps:
            src = dcols[(slice(a, b), slice(None)) + tap] if batched else dcols[(slice(a, b),) + tap]
            view = target[(slice(a, b), slice(None)) + _tap_slices(g, tap, h0, h1 - h0)]
            view += src

    _run_parallel(work, dcols.shape[0], dcols.nbytes)


def _weights_gemm(w: np.ndarray, g: ConvGeometry) -> np.ndarray:
    """(Ku, Cg, *filter) -> (G, Kg, Q) view."""
    return w.reshape(g.groups, g.kg, g.q)


def _conv_forward(x: np.ndarray, w: np.ndarray, g: ConvGeometry, plan: ConvPlan,
                  cancel: Optional[threading.Event], out: Optional[np.ndarray] = None) -> np.ndarray:
    """y = conv(x, w) on the underlying geometry; x (N, Cu, *in), w (Ku, Cg, *f).
    ``out``: a C-contiguous array to write y into (the batch split's slices)."""
    dt = x.dtype
    y = out if out is not None else np.empty((g.n, g.ku) + g.out_sp, dtype=dt)
    wg = _weights_gemm(w, g)
    P = g.out_elems
    rest = P // g.out_sp[0]
    for n0, n1, h0, h1 in plan.chunks(g):
        _check_cancel(cancel)
        n = n1 - n0
        ps = (h1 - h0) * rest
        whole = h0 == 0 and h1 == g.out_sp[0]
        if g.is_pointwise:
            xs = x[n0:n1].reshape(n, g.groups, g.cg, P)
            if not plan.batched:
                cols = _workspace.get("cols", (g.groups, g.cg, n, P), dt)
                cols[...] = xs.transpose(1, 2, 0, 3)
        else:
            xp = _pad_images(x[n0:n1], g)
            cols = _gather(xp, g, h0, h1, plan.batched)
            del xp
            if plan.batched:
                xs = cols.reshape(n, g.groups, g.q, ps)
        if plan.batched:
            if whole:
                np.matmul(wg, xs, out=y[n0:n1].reshape(n, g.groups, g.kg, P))
            else:
                res = np.matmul(wg, xs)  # (n, G, Kg, ps)
                y[n0:n1, :, h0:h1] = res.reshape((n, g.ku, h1 - h0) + g.out_sp[1:])
        else:
            res = _workspace.get("gemm", (g.groups, g.kg, n * ps), dt)
            np.matmul(wg, cols.reshape(g.groups, -1, n * ps), out=res)
            y[n0:n1, :, h0:h1] = res.reshape((g.ku, n, h1 - h0) + g.out_sp[1:]).swapaxes(0, 1)
    return y


def _flipped_geometry(g: ConvGeometry) -> Optional[ConvGeometry]:
    """Backward data at stride 1 as a forward convolution, or None where that does not apply.

    With stride 1 there is nothing to zero-insert: dx is the correlation of dy, padded by
    ``dilation*(filter-1) - pad``, with the filter flipped and its channel axes swapped.
    Its im2col gather runs at copy speed, while col2im's one strided add per tap is ~2x
    slower (measured: 7 ms vs 3 ms on a 64-channel 56x56 layer).  For stride > 1 the
    equivalent forward form would need a zero-inserted dy (stride**2 the work and
    memory), so col2im is used there.
    """
    if g.is_pointwise or any(s != 1 for s in g.strides):
        return None
    pads = tuple(e - 1 - p for e, p in zip(g.eff, g.pad_before))
    if any(p < 0 for p in pads):
        return None
    return ConvGeometry(g.n, g.ku, g.cu, g.groups, g.out_sp, g.in_sp, g.filt, g.strides, g.dils, pads)


def _flip_weights(w: np.ndarray, g: ConvGeometry) -> np.ndarray:
    """(Ku, Cg, *f) -> (Cu, Kg, *f) with every spatial axis reversed, per group."""
    nd = g.nd
    wg = w.reshape((g.groups, g.kg, g.cg) + g.filt)
    flip = (slice(None),) * 3 + (slice(None, None, -1),) * nd
    out = wg[flip].swapaxes(1, 2)
    return np.ascontiguousarray(out).reshape((g.cu, g.kg) + g.filt)


def _conv_backward_data(dy: np.ndarray, w: np.ndarray, g: ConvGeometry, plan: ConvPlan,
                        cancel: Optional[threading.Event], out: Optional[np.ndarray] = None) -> np.ndarray:
    """dx of the underlying convolution; dy (N, Ku, *out), w (Ku, Cg, *f)."""
    dt = dy.dtype
    flipped = _flipped_geometry(g)
    if flipped is not None:
        fplan = _conv_plan(flipped, dt.itemsize, plan.budget)
        return _conv_forward(dy, _flip_weights(w, g), flipped, fplan, cancel, out)
    wt = _weights_gemm(w, g).transpose(0, 2, 1)  # (G, Q, Kg), BLAS takes the transpose
    P = g.out_elems
    rest = P // g.out_sp[0]
    dx = out if out is not None else np.empty((g.n, g.cu) + g.in_sp, dtype=dt)
    crop = (slice(None), slice(None)) + tuple(slice(p, p + i) for p, i in zip(g.pad_before, g.in_sp))
    for n0 in range(0, g.n, plan.images):
        n1 = min(n0 + plan.images, g.n)
        n = n1 - n0
        if g.is_pointwise:
            _check_cancel(cancel)
            dys = dy[n0:n1].reshape(n, g.groups, g.kg, P)
            if plan.batched:
                np.matmul(wt, dys, out=dx[n0:n1].reshape(n, g.groups, g.cg, P))
            else:
                dyt = _workspace.get("dyt", (g.groups, g.kg, n, P), dt)
                dyt[...] = dys.transpose(1, 2, 0, 3)
                res = _workspace.get("gemm", (g.groups, g.cg, n * P), dt)
                np.matmul(wt, dyt.reshape(g.groups, g.kg, n * P), out=res)
                dx[n0:n1].reshape(n, g.cu, P)[...] = res.reshape(g.cu, n, P).transpose(1, 0, 2)
            continue
        dxp = _workspace.get("dxp", (n, g.cu) + g.padded, dt, zero=True)
        for h0 in range(0, g.out_sp[0], plan.rows):
            _check_cancel(cancel)
            h1 = min(h0 + plan.rows, g.out_sp[0])
            ps = (h1 - h0) * rest
            dys = dy[n0:n1, :, h0:h1]
            if plan.batched:
                dcols = _workspace.get("cols", (n, g.groups, g.q, ps), dt)
                np.matmul(wt, dys.reshape(n, g.groups, g.kg, ps), out=dcols)
                dcols = dcols.reshape((n, g.cu) + g.filt + (h1 - h0,) + g.out_sp[1:])
            else:
                dyt = _workspace.get("dyt", (g.ku, n, h1 - h0) + g.out_sp[1:], dt)
                dyt[...] = dys.swapaxes(0, 1)
                dcols = _workspace.get("cols", (g.groups, g.q, n * ps), dt)
                np.matmul(wt, dyt.reshape(g.groups, g.kg, n * ps), out=dcols)
                dcols = dcols.reshape((g.cu,) + g.filt + (n, h1 - h0) + g.out_sp[1:])
            _col2im(dcols, dxp, g, h0, h1, plan.batched)
        if g.needs_pad:
            dx[n0:n1] = dxp[crop]
        else:
            dx[n0:n1] = dxp
    return dx


def _conv_backward_weights(x: np.ndarray, dy: np.ndarray, g: ConvGeometry, plan: ConvPlan,
                           cancel: Optional[threading.Event]) -> np.ndarray:
    """dw of the underlying convolution: one GEMM per group over (Q, n*Ho*Wo) per chunk,
    so BLAS does the reduction over images and pixels (fast even when K/G > Ho*Wo)."""
    dt = x.dtype
    dw = np.zeros((g.groups, g.kg, g.q), dtype=dt)
    P = g.out_elems
    rest = P // g.out_sp[0]
    if all(f == 1 for f in g.filt) and P >= _BATCHED_MIN_SPATIAL_1X1 and plan.rows == g.out_sp[0]:
        # 1x1 filter: x (after the stride's subsample, if any) is the column matrix, so
        # one GEMM per image straight from dy and x (no transposing copies) beat the
        # one-long-GEMM layout once Ho*Wo >= 128 (ResNet-50's stride-2 1x1 layers:
        # 135 -> 170 GFLOP/s at 28x28).
        tmp = np.empty_like(dw)
        for n0, n1, _, _ in plan.chunks(g):
            _check_cancel(cancel)
            if g.is_pointwise:
                xs = x[n0:n1].reshape(n1 - n0, g.groups, g.cg, P)
            else:
                xp = _pad_images(x[n0:n1], g)
                xs = _gather(xp, g, 0, g.out_sp[0], batched=True).reshape(n1 - n0, g.groups, g.cg, P)
                del xp
            for i in range(n0, n1):
                if i > n0 and (i - n0) % 4 == 0:
                    _check_cancel(cancel)
                np.matmul(dy[i].reshape(g.groups, g.kg, P), xs[i - n0].transpose(0, 2, 1), out=tmp if i else dw)
                if i:
                    dw += tmp
        return dw.reshape((g.ku, g.cg) + g.filt)
    part = np.empty_like(dw) if len(plan.chunks(g)) > 1 else None
    for n0, n1, h0, h1 in plan.chunks(g):
        _check_cancel(cancel)
        n = n1 - n0
        ps = (h1 - h0) * rest
        if g.is_pointwise:
            cols = _workspace.get("cols", (g.cu, n, h1 - h0) + g.out_sp[1:], dt)
            cols[...] = x[n0:n1, :, h0:h1].swapaxes(0, 1)
        else:
            xp = _pad_images(x[n0:n1], g)
            cols = _gather(xp, g, h0, h1, batched=False)
            del xp
        cols = cols.reshape(g.groups, g.q, n * ps)
        dyt = _workspace.get("dyt", (g.ku, n, h1 - h0) + g.out_sp[1:], dt)
        dyt[...] = dy[n0:n1, :, h0:h1].swapaxes(0, 1)
        dyt = dyt.reshape(g.groups, g.kg, n * ps)
        if part is None:
            np.matmul(dyt, cols.transpose(0, 2, 1), out=dw)
        else:
            np.matmul(dyt, cols.transpose(0, 2, 1), out=part)
            dw += part
    return dw.reshape((g.ku, g.cg) + g.filt)


# ----------------------------------------------------------------------------- conv entry

def _conv_inputs_compute(problem: ConvProblem, inputs: dict[str, np.ndarray], names: Sequence[str],
                         precision: str) -> tuple[list[np.ndarray], np.dtype, bool]:
    """Arrays in the compute type; int8 picks float32 when that is exact, else float64."""
    arrays = []
    for name in names:
        if name not in inputs:
            raise KeyError(f"conv {problem.direction} needs input {name!r} (got {sorted(inputs)})")
        arrays.append(np.asarray(inputs[name]))
    is_int = problem.dtype == "int8"
    if is_int and precision == "fp32":
        g = conv_geometry(problem)
        bound = 1.0
        for a in arrays:
            bound *= float(np.max(np.abs(a.astype(np.int32)))) if a.size else 0.0
        # longest reduction: forward Q, backward data Kg*taps, weights N*Ho*Wo
        length = max(g.q, g.kg * g.taps, g.n * g.out_elems)
        dt = np.dtype(np.float32) if bound * length < 2.0 ** 24 else np.dtype(np.float64)
    else:
        dt = compute_dtype(problem, precision)
    return [np.ascontiguousarray(a, dtype=dt) for a in arrays], dt, is_int


def _check_shape(name: str, a: np.ndarray, shape: tuple[int, ...]) -> None:
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"input {name!r} has shape {tuple(a.shape)}, the problem needs {tuple(shape)}")


def _split_parts(g: ConvGeometry, use_numba: bool) -> int:
    """How many batch parts to run in parallel threads (1 = no split).

    Splitting pays where an im2col gather or col2im add (single-threaded copies) can
    overlap another thread's GEMM: 10-30% faster on 3x3 and strided layers (measured
    on 2 cores), but slower on 1x1 stride-1 layers, which have no gather.
    """
    if use_numba or THREADS < 2 or g.n < 2 or g.is_pointwise or getattr(_tls, "single", False):
        return 1
    if not _get_blas_threads().usable:
        return 1
    return min(THREADS, g.n)


def _conv_direction(direction: str, trans: bool, arrays: list[np.ndarray], g: ConvGeometry,
                    budget: int, cancel: Optional[threading.Event], use_numba: bool,
                    out: Optional[np.ndarray] = None) -> np.ndarray:
    """One direction on the underlying geometry (arrays already in the compute type);
    ``out`` (numpy path, fwd/bwd) receives the result in place."""
    plan = _conv_plan(g, arrays[0].dtype.itemsize, budget)
    if direction == "fwd":
        x, w = arrays
        if trans:   # y = backward data of the conv whose input is y and output is x
            return _nb_bwd(x, w, g, cancel) if use_numba else _conv_backward_data(x, w, g, plan, cancel, out)
        return _nb_fwd(x, w, g, cancel) if use_numba else _conv_forward(x, w, g, plan, cancel, out)
    if direction == "bwd":
        dy, w = arrays
        if trans:
            return _nb_fwd(dy, w, g, cancel) if use_numba else _conv_forward(dy, w, g, plan, cancel, out)
        return _nb_bwd(dy, w, g, cancel) if use_numba else _conv_backward_data(dy, w, g, plan, cancel, out)
    x, dy = arrays
    xu, dyu = (dy, x) if trans else (x, dy)
    return _nb_wrw(xu, dyu, g, cancel) if use_numba else _conv_backward_weights(xu, dyu, g, plan, cancel)


def _conv_split(direction: str, trans: bool, arrays: list[np.ndarray], g: ConvGeometry, budget: int,
                cancel: Optional[threading.Event], parts: int) -> Optional[np.ndarray]:
    """Run batch parts in worker threads with BLAS pinned to one thread; None if BLAS is busy."""
    blas = _get_blas_threads()
    old = blas.pin_one()
    if old is None:
        return None
    try:
        bounds = [g.n * i // parts for i in range(parts + 1)]
        batch_args = {"fwd": (0,), "bwd": (0,), "wrw": (0, 1)}[direction]
        result: Optional[np.ndarray] = None
        if direction != "wrw":   # the parts write their slices of the one result array
            shape = (g.ku,) + g.out_sp if (direction == "fwd") != trans else (g.cu,) + g.in_sp
            result = np.empty((g.n,) + shape, dtype=arrays[0].dtype)
        pool = _get_split_pool()
        futures: list[Future] = []
        try:
            for a, b in zip(bounds[:-1], bounds[1:]):
                sub = [arr[a:b] if i in batch_args else arr for i, arr in enumerate(arrays)]
                sub_g = ConvGeometry(b - a, g.cu, g.ku, g.groups, g.in_sp, g.out_sp, g.filt, g.strides,
                                     g.dils, g.pad_before)
                futures.append(pool.submit(_conv_direction, direction, trans, sub, sub_g,
                                           max(budget // parts, 1), cancel, False,
                                           None if result is None else result[a:b]))
            results = [f.result() for f in futures]
        except (RuntimeError, CancelledError):
            # shutdown_threads() ran meanwhile (the app is quitting): submit refuses new
            # parts, queued ones are cancelled.  Anything else a part raises is its own.
            if not _pool_shut_down(pool):
                raise
            for f in futures:
                f.cancel()
            # a part that was running finishes first (it writes into ``result``); a
            # cancelled one never reaches "done" for wait(): a dropped queue item is not notified
            wait([f for f in futures if not f.cancelled()])
            raise Cancelled("reference run cancelled: its worker threads were shut down") from None
    finally:
        blas.restore(old)
    if result is not None:
        return result
    total = results[0]
    for r in results[1:]:
        total += r
    return total


def run_conv(problem: ConvProblem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
             cancel: Optional[threading.Event] = None, engine: str = "numpy",
             chunk_bytes: Optional[int] = None) -> dict[str, np.ndarray]:
    """Run one convolution direction; see :func:`run_reference`."""
    g = conv_geometry(problem)
    direction = problem.direction
    trans = problem.mode == "trans"
    names = tensor_names(problem)[0]
    shapes = {"x": problem.input_shape, "dy": problem.output_shape, "w": problem.weight_shape}
    for name in names:
        if name in inputs:
            _check_shape(name, np.asarray(inputs[name]), shapes[name])
    arrays, dt, is_int = _conv_inputs_compute(problem, inputs, names, precision)
    budget = chunk_bytes or CHUNK_BYTES
    use_numba = engine == "numba" and _numba_applies(g, problem)
    _check_cancel(cancel)
    out: Optional[np.ndarray] = None
    parts = _split_parts(g, use_numba)
    if parts > 1:
        out = _conv_split(direction, trans, arrays, g, budget, cancel, parts)
    if out is None:
        out = _conv_direction(direction, trans, arrays, g, budget, cancel, use_numba)
    if is_int and precision == "fp32":
        out = np.rint(out).astype(np.int32)
    return {{"fwd": "y", "bwd": "dx", "wrw": "dw"}[direction]: out}


def _numba_applies(g: ConvGeometry, problem: ConvProblem) -> bool:
    from miotui.execute import numba_kernels
    return (numba_kernels.available() is None
            and numba_kernels.conv_applies(g, numba_kernels._kernel_of(problem)))


def _nb_fwd(x: np.ndarray, w: np.ndarray, g: ConvGeometry, cancel: Optional[threading.Event]) -> np.ndarray:
    from miotui.execute import numba_kernels
    return numba_kernels.conv_forward(x, w, g, cancel)


def _nb_bwd(dy: np.ndarray, w: np.ndarray, g: ConvGeometry, cancel: Optional[threading.Event]) -> np.ndarray:
    from miotui.execute import numba_kernels
    return numba_kernels.conv_backward_data(dy, w, g, cancel)


def _nb_wrw(x: np.ndarray, dy: np.ndarray, g: ConvGeometry, cancel: Optional[threading.Event]) -> np.ndarray:
    from miotui.execute import numba_kernels
    return numba_kernels.conv_backward_weights(x, dy, g, cancel)


#: operands of col2im's strided ``view += src``; numpy's ufunc iterator may buffer each
#: one (``np.getbufsize()`` elements): measured 193 KB per worker at fp64, i.e. 3 x 8192 x 8.
_COL2IM_UFUNC_OPERANDS = 3


def _conv_temp_bytes(direction: str, g: ConvGeometry, it: int, budget: int, weight_elems: int,
                     workers: int = 1) -> int:
    """Scratch one worker allocates at its peak (padded chunk, columns, GEMM result...).

    ``workers``: threads that may run col2im's adds at once inside this call (the batch
    split gives each part one; an unsplit run fans col2im out over THREADS).  Without
    their ufunc buffers the estimate fell 15% short on a 16-core machine (bwd, stride 2).
    """
    plan = _conv_plan(g, it, budget)
    n = plan.images
    rows_elems = plan.rows * (g.out_elems // g.out_sp[0])
    in_chunk = n * g.cu * math.prod(g.padded) * it if g.needs_pad else 0
    if direction != "bwd" and _uses_phases(g):   # the phase planes of the padded chunk
        sw = g.strides[-1]
        in_chunk += n * g.cu * math.prod(g.padded[:-1]) * sw * (-(-g.padded[-1] // sw)) * it
    out_chunk = n * g.ku * rows_elems * it
    if direction == "fwd":
        return in_chunk + plan.col_bytes + out_chunk
    if direction == "bwd":
        flipped = _flipped_geometry(g)
        if flipped is not None:
            return _conv_temp_bytes("fwd", flipped, it, budget, weight_elems) + weight_elems * it
        dxp = n * g.cu * math.prod(g.padded) * it
        ufunc_buffers = workers * _COL2IM_UFUNC_OPERANDS * np.getbufsize() * it
        return dxp + plan.col_bytes + out_chunk + ufunc_buffers
    return in_chunk + plan.col_bytes + out_chunk + 2 * g.ku * g.q * it


def conv_peak_bytes(problem: ConvProblem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """Bytes a conv reference run allocates at its peak: the inputs, their compute-type
    copies, the output, and every worker's scratch for one chunk (see the run's plan)."""
    g = conv_geometry(problem)
    dt = compute_dtype(problem, precision)
    if problem.dtype == "int8" and precision == "fp32":
        dt = np.dtype(np.float64)  # worst case of the exactness choice
    it = dt.itemsize
    sizes = {"x": math.prod(problem.input_shape), "y": math.prod(problem.output_shape),
             "w": math.prod(problem.weight_shape)}
    sizes["dy"] = sizes["y"]
    ins, outs = tensor_names(problem)
    stored = storage_dtype(problem.dtype).itemsize
    total = sum(sizes[n] for n in ins) * stored
    if stored != it or problem.dtype in ("bf16", "fp8", "bf8"):
        total += sum(sizes[n] for n in ins) * it  # compute-type copies
    out_name = {"y": "y", "dx": "x", "dw": "w"}[outs[0]]
    total += sizes[out_name] * it
    direction = problem.direction
    if problem.mode == "trans":
        direction = {"fwd": "bwd", "bwd": "fwd", "wrw": "wrw"}[direction]
    budget = chunk_bytes or CHUNK_BYTES
    parts = _split_parts(g, False)
    if parts > 1:
        for i in range(parts):
            nb = g.n * (i + 1) // parts - g.n * i // parts
            sub = ConvGeometry(nb, g.cu, g.ku, g.groups, g.in_sp, g.out_sp, g.filt, g.strides,
                               g.dils, g.pad_before)
            total += _conv_temp_bytes(direction, sub, it, max(budget // parts, 1), sizes["w"])
        if direction == "wrw":
            total += (parts - 1) * sizes["w"] * it  # the parts' weight gradients before the sum
    else:
        total += _conv_temp_bytes(direction, g, it, budget, sizes["w"], workers=THREADS)
    # the numba engine's depthwise kernels, where they apply (peak_bytes does not know the engine)
    from miotui.execute import numba_kernels
    total += numba_kernels.scratch_bytes(g, it, THREADS)
    return int(total)


# ----------------------------------------------------------------------------- public API

def tensor_names(problem: Problem) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(input names, output names) of a problem, in MIOpen's naming.

    conv: fwd x,w -> y; bwd dy,w -> dx; wrw x,dy -> dw.  The other kinds are listed in
    :func:`miotui.execute.reference_ops.tensor_names`.
    """
    if isinstance(problem, ConvProblem):
        return {"fwd": (("x", "w"), ("y",)), "bwd": (("dy", "w"), ("dx",)),
                "wrw": (("x", "dy"), ("dw",))}[problem.direction]
    from miotui.execute import reference_ops
    return reference_ops.tensor_names(problem)


def make_inputs(problem: Problem, seed: int = 0) -> dict[str, np.ndarray]:
    """Random inputs for a problem, as MIOpen tensors of its dtype would hold them.

    Logical N,C,(D,)H,W arrays: fp16 -> float16, bf16/fp8/bf8 -> float32 holding values
    rounded to that type, int8 -> int8.  Each tensor draws from its own stream keyed by
    (seed, name), so x is identical for the fwd and wrw problems of one layer.
    Conv data is uniform in [-1, 1) (int8: integers in [-32, 32]).
    """
    if isinstance(problem, ConvProblem):
        shapes = {"x": problem.input_shape, "dy": problem.output_shape, "w": problem.weight_shape}
        lo, hi = (-32, 32) if problem.dtype == "int8" else (-1.0, 1.0)
        dtype = "fp32" if problem.dtype == "unknown" else problem.dtype
        return {name: uniform(seed, name, shapes[name], lo, hi, dtype)
                for name in tensor_names(problem)[0]}
    from miotui.execute import reference_ops
    return reference_ops.make_inputs(problem, seed)


def run_reference(problem: Problem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
                  cancel: Optional[threading.Event] = None, engine: str = "numpy",
                  chunk_bytes: Optional[int] = None) -> dict[str, np.ndarray]:
    """Compute a problem's outputs from ``inputs`` (see :func:`tensor_names`).

    precision: ``"fp32"`` computes as MIOpenDriver does (float32; int8 conv exactly,
    returned as int32); ``"fp64"`` computes everything in float64 (the verification
    reference).  engine: ``"numpy"``, or ``"numba"`` to use the direct kernels where
    they apply (depthwise/small-group conv, pooling) and numpy elsewhere; without numba
    installed it is numpy throughout.  Raises :class:`Cancelled` when ``cancel`` is set
    (checked between chunks) and :class:`ReferenceUnsupported` for what it cannot run.
    """
    if engine not in ("numpy", "numba"):
        raise ValueError(f"engine must be numpy or numba, got {engine!r}")
    compute_dtype(problem, precision)  # validates precision
    if isinstance(problem, ConvProblem):
        return run_conv(problem, inputs, precision=precision, cancel=cancel, engine=engine,
                        chunk_bytes=chunk_bytes)
    from miotui.execute import reference_ops
    return reference_ops.run_op(problem, inputs, precision=precision, cancel=cancel, engine=engine,
                                chunk_bytes=chunk_bytes)


def peak_bytes(problem: Problem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """Memory (bytes) one :func:`run_reference` call needs, inputs included.

    Conv replays the chunk plan of the run (so it is bounded by ``chunk_bytes`` plus
    the tensors themselves); the other kinds count their tensors and temporaries.
    """
    if isinstance(problem, ConvProblem):
        return conv_peak_bytes(problem, precision, chunk_bytes)
    from miotui.execute import reference_ops
    return reference_ops.peak_bytes(problem, precision, chunk_bytes)


def engine_used(problem: Problem, engine: str = "numpy") -> str:
    """A short description of the code path :func:`run_reference` takes (for reports)."""
    if isinstance(problem, ConvProblem):
        g = conv_geometry(problem)
        if engine == "numba":
            from miotui.execute import numba_kernels
            why = numba_kernels.available()
            if why is None and numba_kernels.conv_applies(g, numba_kernels._kernel_of(problem)):
                return "numba direct convolution (depthwise/small-group)"
            if why is not None:
                return f"numpy im2col+GEMM (numba unavailable: {why})"
        if g.is_pointwise:
            return "numpy 1x1 GEMM (no im2col)"
        return "numpy im2col+GEMM"
    if isinstance(problem, FusionProblem):
        return "numpy, fusion run as its parts"
    from miotui.execute import reference_ops
    return reference_ops.engine_used(problem, engine)

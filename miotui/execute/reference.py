"""A CPU reference for every layer kind a log can show: the public entry points.

This is the math behind the ``numpy`` (and ``numba``) backends.  It is *not* what
verdicts compare against: that is :mod:`miotui.execute.oracle`, float64 code sharing
none of this (a bug here must fail numpy's verdict, not be reproduced by it).  It
mirrors what MIOpenDriver's own host reference computes (``driver/conv_driver.hpp``,
``mlo*Host.hpp``):

* Arrays are **logical** N,C,(D,)H,W whatever the problem's layout.  NHWC/NDHWC only
  changes how MIOpen stores a tensor, not the numbers, so the reference computes in
  NCHW (an NHWC-strided input is made contiguous first).
* fp32, fp16 and bf16 inputs are computed in float32, int8 in exact integer arithmetic
  (float32 GEMM when every partial sum stays below 2**24, else float64; results are
  int32, as MIOpen's int8 reference), and ``precision="fp64"`` computes everything in
  float64 (the numpy backend's own code in float64: the RNN verdict's reference for
  torch and MIOpenDriver, :mod:`miotui.execute.oracle`).

Where the code lives:

* convolution: :mod:`conv` (inputs, dispatch, batch split, memory) on the underlying
  geometry of :mod:`conv_geometry`, with :mod:`conv_forward` (im2col + GEMM),
  :mod:`conv_backward_data` (GEMM + col2im) and :mod:`conv_backward_weights`;
* RNNs, layer / group norm and reductions: :mod:`reference_rnn`, :mod:`reference_norm`,
  :mod:`reference_reduce` (tensor tables in :mod:`layer_shapes`, what they share in
  :mod:`reference_tables`);
* pooling, batch norm, activation, LRN, softmax and fusion: :mod:`reference_basic` and
  :mod:`reference_pool`;
* which of these a problem takes: its family's record (:mod:`miotui.families`);
* numba's direct kernels (depthwise / small-group convolution, pooling):
  :mod:`numba_kernels`;
* threads, cancellation and scratch buffers: :mod:`threads`; numpy's BLAS: :mod:`blas`.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from miotui.execute.blas import BLAS_CORETYPE_SET, BlasThreads, blas_info
from miotui.execute.conv import conv_peak_bytes, run_conv
from miotui.execute.conv_geometry import CHUNK_BYTES, ConvGeometry, conv_geometry
from miotui.execute.tensors import ReferenceUnsupported, compute_dtype, round_to_dtype, storage_dtype, uniform
from miotui.execute.threads import THREADS, CancelFlag, Cancelled, release_workspace, shutdown_threads
from miotui.families import Ref, UnknownFamily, family_of
from miotui.problems import Problem

__all__ = [
    "Cancelled", "ReferenceUnsupported", "make_inputs", "run_reference", "prepare", "peak_bytes",
    "tensor_names", "engine_used", "compute_dtype", "round_to_dtype", "storage_dtype", "uniform", "blas_info",
    "BLAS_CORETYPE_SET", "CHUNK_BYTES", "THREADS", "ConvGeometry", "conv_geometry", "run_conv", "conv_peak_bytes",
    "shutdown_threads", "release_workspace",
]

#: The class behind the batch split's BLAS thread pinning, under the name
#: tests/app/test_app_snapshots.py patches (it lives in :mod:`miotui.execute.blas`).
_BlasThreads = BlasThreads


def _entry(problem: Problem, name: str) -> Ref:
    """The reference entry ``name`` of ``problem``'s family; ReferenceUnsupported where the
    family has none (an op miotui does not run) or ``problem`` is no layer at all."""
    try:
        entry = getattr(family_of(problem), name)
    except UnknownFamily:
        entry = None
    if entry is None or not entry.applies:
        raise ReferenceUnsupported(f"no reference for {type(problem).__name__}")
    return entry


def tensor_names(problem: Problem) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(input names, output names) of a problem, in MIOpen's naming.

    conv: fwd x,w -> y; bwd dy,w -> dx; wrw x,dy -> dw.  The basic kinds are listed in
    :mod:`miotui.execute.reference_basic`, the others in :mod:`miotui.execute.layer_shapes`.
    """
    return _entry(problem, "tensor_names")(problem)


def make_inputs(problem: Problem, seed: int = 0) -> dict[str, np.ndarray]:
    """Random inputs for a problem, as MIOpen tensors of its dtype would hold them.

    Logical N,C,(D,)H,W arrays: fp16 -> float16, bf16/fp8/bf8 -> float32 holding values
    rounded to that type, int8 -> int8.  Each tensor draws from its own stream keyed by
    (seed, name), so x is identical for the fwd and wrw problems of one layer.
    Conv data is uniform in [-1, 1) (int8: integers in [-32, 32]).
    """
    return _entry(problem, "make_inputs")(problem, seed)


def prepare(problem: Problem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
            cancel: Optional[CancelFlag] = None) -> Optional[Any]:
    """Untimed work a backend's timed calls may start from (pass it to :func:`run_reference`
    as ``saved``): an RNN backward pass's forward, kept as MIOpen keeps its reserve space.
    None for the other layers (their family's ``prepare`` does not apply)."""
    entry = family_of(problem).prepare
    return entry(problem, inputs, precision, cancel) if entry.applies else None


def run_reference(problem: Problem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
                  cancel: Optional[CancelFlag] = None, engine: str = "numpy",
                  chunk_bytes: Optional[int] = None, saved: Optional[Any] = None) -> dict[str, np.ndarray]:
    """Compute a problem's outputs from ``inputs`` (see :func:`tensor_names`).

    precision: ``"fp32"`` computes as MIOpenDriver does (float32; int8 conv exactly,
    returned as int32); ``"fp64"`` computes everything in float64 (the verification
    reference).  engine: ``"numpy"``, or ``"numba"`` to use the direct kernels where
    they apply (depthwise/small-group conv, pooling) and numpy elsewhere; without numba
    installed it is numpy throughout.  ``saved``: what :func:`prepare` returned for these
    inputs in this precision.  Raises :class:`Cancelled` when ``cancel`` is set (checked
    between chunks) and :class:`ReferenceUnsupported` for what it cannot run.
    """
    if engine not in ("numpy", "numba"):
        raise ValueError(f"engine must be numpy or numba, got {engine!r}")
    compute_dtype(problem, precision)  # validates precision
    return _entry(problem, "reference")(problem, inputs, precision=precision, cancel=cancel, engine=engine,
                                        chunk_bytes=chunk_bytes, saved=saved)


def peak_bytes(problem: Problem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """Memory (bytes) one :func:`run_reference` call needs, inputs included.

    Conv replays the chunk plan of the run (so it is bounded by ``chunk_bytes`` plus
    the tensors themselves); the other kinds count their tensors and temporaries.
    """
    return _entry(problem, "reference_bytes")(problem, precision, chunk_bytes)


def engine_used(problem: Problem, engine: str = "numpy") -> str:
    """A short description of the code path :func:`run_reference` takes (for reports)."""
    return _entry(problem, "reference_engine")(problem, engine)

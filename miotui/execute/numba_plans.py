"""Geometry the numba kernels read, computed in numpy (no numba needed to import this).

:class:`PhaseLayout` for the phase-plane kernels of grouped convolutions, :class:`DwPlan`
for the plane-stacked depthwise kernels (see the notes in
:mod:`miotui.execute.numba_depthwise_jit`), and the depthwise kernels' memory needs.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Optional

import numpy as np


def _as3d(values: Any, fill: int, nd: int) -> tuple[int, ...]:
    """A 2-D geometry's per-axis values with a depth axis of ``fill`` in front (3-D kept)."""
    return tuple(values) if nd == 3 else (fill,) + tuple(values)


class PhaseLayout:
    """Phase-plane geometry of one convolution (see the notes in :mod:`miotui.execute.numba_conv_jit`)."""

    def __init__(self, g: Any) -> None:
        self.strides = _as3d(g.strides, 1, g.nd)
        self.dils = _as3d(g.dils, 1, g.nd)
        self.filt = _as3d(g.filt, 1, g.nd)
        self.out = _as3d(g.out_sp, 1, g.nd)
        self.padded = _as3d(g.padded, 1, g.nd)
        self.phases = self.strides
        # extra plane room for the largest tap offset, per axis
        max_off = tuple(((f - 1) * d) // s for f, d, s in zip(self.filt, self.dils, self.strides, strict=True))
        self.q = tuple(o + m for o, m in zip(self.out, max_off, strict=True))
        dq, hq, wq = self.q
        self.plane = dq * hq * wq
        do_, ho, wo = self.out
        self.length = ((do_ - 1) * hq + (ho - 1)) * wq + wo
        ph, off = [], []
        for t in range(self.filt[0]):
            for r in range(self.filt[1]):
                for s in range(self.filt[2]):
                    pos = (t * self.dils[0], r * self.dils[1], s * self.dils[2])
                    a, b, c = (p % st for p, st in zip(pos, self.strides, strict=True))
                    o = tuple(p // st for p, st in zip(pos, self.strides, strict=True))
                    ph.append((a * self.strides[1] + b) * self.strides[2] + c)
                    off.append((o[0] * hq + o[1]) * wq + o[2])
        self.ph = np.array(ph, dtype=np.int64)
        self.off = np.array(off, dtype=np.int64)
        self.nphase = self.strides[0] * self.strides[1] * self.strides[2]


def to5d(a: np.ndarray) -> np.ndarray:
    """(N, C, H, W) as (N, C, 1, H, W): the kernels are 3-D."""
    return a if a.ndim == 5 else a[:, :, None]


def taps_weights(w: np.ndarray, g: Any) -> np.ndarray:
    """(K, C/G, *filter) as (K, C/G, taps), contiguous."""
    return np.ascontiguousarray(w.reshape(g.ku, g.cg, g.taps))


def geometry_args(g: Any, lay: PhaseLayout) -> tuple[int, ...]:
    """The phase-plane kernels' geometry arguments: strides, pads, phase-plane size (3-D)."""
    pads = tuple(g.pad_before) if g.nd == 3 else (0,) + tuple(g.pad_before)
    return tuple(lay.strides) + pads + tuple(lay.q)


#: Values per depthwise block (channels x output plane): the weight tile (taps x this)
#: stays in L2, and the block is long enough for a fast vector loop.
DW_BLOCK = 4096


class DwPlan:
    """Geometry of the plane-stacked depthwise kernels for one convolution (see the
    notes in numba_depthwise_jit): per-tap flat offsets, padding masks, phases and the channel block."""

    def __init__(self, g: Any) -> None:
        self.strides = _as3d(g.strides, 1, g.nd)
        ins, outs, filt, dils, pads = (_as3d(g.in_sp, 1, g.nd), _as3d(g.out_sp, 1, g.nd), _as3d(g.filt, 1, g.nd),
                                       _as3d(g.dils, 1, g.nd), _as3d(g.pad_before, 0, g.nd))
        self.nph = math.prod(self.strides)
        self.plane = math.prod(outs)
        self.cb = max(1, min(g.cu, DW_BLOCK // self.plane))
        self.blocks = -(-g.cu // self.cb)
        # per tap and axis: input position k*dil - pad = phase + rel*stride
        taps = [(t, r, s) for t in range(filt[0]) for r in range(filt[1]) for s in range(filt[2])]
        pos = np.array([[k * d - p for k, d, p in zip(tap, dils, pads, strict=True)] for tap in taps], dtype=np.int64)
        st = np.array(self.strides, dtype=np.int64)
        phase = pos % st
        rel = (pos - phase) // st
        ph = (phase[:, 0] * st[1] + phase[:, 1]) * st[2] + phase[:, 2]
        rel_flat = (rel[:, 0] * outs[1] + rel[:, 1]) * outs[2] + rel[:, 2]
        grid = np.indices(outs).reshape(3, -1)                          # (axis, position)
        lens = -(-(np.array(ins)[None, :] - phase) // st)               # (tap, axis) phase lengths
        q = grid[None, :, :] + rel[:, :, None]
        self.fwd_mask = np.all((q >= 0) & (q < lens[:, :, None]), axis=1)   # (tap, position)
        self.fwd_off = rel_flat + (ph * self.cb * self.plane if self.nph > 1 else 0)
        self.margin = int(np.max(np.abs(rel_flat))) if len(taps) else 0
        # backward data: dx phase p gathers dy at -rel over the taps that read phase p
        self.order = np.argsort(ph, kind="stable")
        back = grid[None, :, :] - rel[:, :, None]
        ok = np.all((back >= 0) & (back < np.array(outs)[None, :, None]), axis=1)
        self.bwd_mask = ok[self.order]
        self.bwd_off = np.ascontiguousarray(-rel_flat[self.order])
        self.tstart = np.searchsorted(ph[self.order], np.arange(self.nph + 1)).astype(np.int64)
        # stride > 1: gather indices of the phase split (phase position -> input offset in
        # its block; past a phase's end: 0, masked) and of the merge (input -> phase position)
        self.gidx = self.ridx = np.zeros(1, dtype=np.int32)
        if self.nph > 1:
            vol = math.prod(ins)
            ph_axes = np.indices(self.strides).reshape(3, -1)           # (axis, phase)
            src = ph_axes[:, :, None] + grid[:, None, :] * st[:, None, None]   # (axis, phase, pos)
            exists = np.all(src < np.array(ins)[:, None, None], axis=0)
            flat = (src[0] * ins[1] + src[1]) * ins[2] + src[2]
            flat = np.where(exists, flat, 0)
            itype = np.int32 if self.nph * self.cb * max(vol, self.plane) < 2 ** 31 else np.int64
            chan = np.arange(self.cb)[None, :, None]
            self.gidx = (flat[:, None, :] + chan * vol).astype(itype).reshape(-1)
            pos = np.indices(ins).reshape(3, -1)                         # (axis, input position)
            p_of = ((pos[0] % st[0]) * st[1] + pos[1] % st[1]) * st[2] + pos[2] % st[2]
            j_of = ((pos[0] // st[0]) * outs[1] + pos[1] // st[1]) * outs[2] + pos[2] // st[2]
            chan = np.arange(self.cb)[:, None]
            self.ridx = ((p_of[None, :] * self.cb + chan) * self.plane + j_of[None, :]).astype(itype).reshape(-1)
        self._typed: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def masks(self, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        """(forward, backward-data) masks as 0/1 values of ``dtype`` (cached per dtype)."""
        key = np.dtype(dtype).name
        if key not in self._typed:
            self._typed[key] = (self.fwd_mask.astype(dtype), self.bwd_mask.astype(dtype))
        return self._typed[key]


#: Largest weight tile (taps x output plane values) of the depthwise kernels: every
#: thread holds one tile and one accumulator that size (32 MiB each in float64);
#: bigger (3-D) planes run on the phase-plane kernels, whose scratch is a few planes.
DW_MAX_TILE = 1 << 22


def dw_shape_ok(g: Any) -> bool:
    """Depthwise (one input and one output channel per group) with out == ceil(in / stride),
    and a weight tile within DW_MAX_TILE."""
    return (g.cg == 1 and g.kg == 1 and g.taps * g.out_elems <= DW_MAX_TILE
            and all(-(-i // s) == o for i, s, o in zip(g.in_sp, g.strides, g.out_sp, strict=True)))


def scratch_bytes(g: Any, itemsize: int, threads: int) -> int:
    """Scratch the plane-stacked depthwise kernels allocate for ``g`` (0 where they do
    not apply), for the memory guard: per thread a weight tile and, for the weight
    gradient, an accumulator of taps x channel-block values, plus the block's
    stride-phase copy and its gather indices."""
    if not dw_shape_ok(g):
        return 0
    block = max(1, min(g.cu, DW_BLOCK // g.out_elems)) * g.out_elems
    phases = math.prod(g.strides)
    per_thread = (2 * g.taps * block + phases * block) * itemsize
    return threads * per_thread + 2 * phases * block * 8


@functools.lru_cache(maxsize=32)
def dw_plan(g: Any) -> Optional[DwPlan]:
    """The plane-stacked plan of ``g`` (cached: a geometry runs many times), or None
    when the kernels do not apply."""
    return DwPlan(g) if dw_shape_ok(g) else None


"""Direct numba kernels for the layers im2col + BLAS handles badly.

Depthwise and small-group convolutions (C/G <= 8, G > 1) and pooling are memory- and
overhead-bound: numpy's im2col runs them at 3-5x torch's time, because every tiny
per-group GEMM pays call overhead and the column copy moves filter-size times the data.

Depthwise layers (one input and one output channel per group) whose output is the
input's stride-phase grid (out == ceil(in / stride) per axis: "same" padding, all of
MobileNet's) run the plane-stacked kernels (see the notes above ``_py_dw_tiles``): a
block of channels' planes lies back to back in NCHW memory, so every filter tap is one
long unit-stride loop over the whole block at a constant offset, with a per-block
weight tile that zeroes the reads falling in the padding.  Measured on the project's
2-core Zen 5 machine at batch 8 (benchmarks/bench_reference.py --sections depthwise),
geomean time vs torch 2.13 CPU: forward 0.8-0.9, backward data 0.5, backward weights
0.8-0.9 (the old kernels: 3.3, 1.6, 2.9); stride-2 layers on 7x7-28x28 outputs remain
the slowest (1.2-1.8x), their stride-phase split being a scalar gather.

Other grouped convolutions work one (image, group) at a time on "phase planes" (see
the notes above ``_py_conv_fwd``): the group's padded input planes are built in a
small per-thread scratch, split into stride phases so every filter tap is a
unit-stride read, and each tap runs as one contiguous loop over the flattened output
plane (at par with torch on 56x56-112x112 planes, 3-10x slower on small ones, where
per-plane overhead dominates).

* numba is optional: this module imports without it, :func:`available` says why it
  cannot be used, and :mod:`miotui.execute.reference` falls back to numpy.
* ``import numba`` (0.2-0.3 s) and compilation (several seconds for all kernels and
  both dtypes) happen on first use; :func:`warmup` does both ahead of a timed run and
  returns the seconds it took, so a backend reports JIT time apart from run time.
  ``cache=True`` keeps the machine code on disk (``__pycache__`` next to this file, or
  numba's user cache dir when that is read-only), so a later process loads it in <1 s.
* Every kernel is ``nogil=True``: work is split over threads by group, channel range
  or (channel block, image) items (no two threads write the same element), and a
  worker thread never freezes the UI.

Arrays are 3-D (N, C, D, H, W) inside the kernels; 2-D problems get a depth axis of 1
(filter 1, stride 1, pad 0), which halves the number of kernels to compile.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from typing import Any, Callable, Optional

import numpy as np

__all__ = ["available", "conv_applies", "conv_forward", "conv_backward_data", "conv_backward_weights",
           "pool_forward", "pool_backward", "warmup", "MAX_GROUP_CHANNELS"]

#: numba runs a grouped convolution when C/G is at most this (and G > 1).
MAX_GROUP_CHANNELS = 8

_lock = threading.Lock()
_kernels: Optional[dict[str, Callable[..., Any]]] = None
_unavailable: Optional[str] = None
_checked = False


def available() -> Optional[str]:
    """None when numba can be used, else why not (checked once, without compiling)."""
    global _checked, _unavailable
    if not _checked:
        import importlib.util
        if importlib.util.find_spec("numba") is None:
            _unavailable = "numba is not installed (pip install numba)"
        _checked = True
    return _unavailable


# ----------------------------------------------------------------------------- kernel bodies
# Plain Python functions at module level: numba compiles them on first use (cache=True
# needs a module-level function to key its on-disk cache).

# Layout of the conv kernels ("phase planes").
#
# A row-by-row loop vectorises badly: LLVM's vector body is 64 floats wide (4 x 16
# lanes), so rows of 7-56 outputs run almost entirely in the scalar remainder.  The
# kernels therefore run every filter tap over a whole flattened output plane:
#
# * the padded input is split into stride phases, plane (a, b, c) holding
#   xp[a + i*sd, b + j*sh, c + l*sw]; in its phase plane a strided tap is a unit-stride
#   one, at a flat offset;
# * outputs live on the phase plane's (Dq, Hq, Wq) grid: output (od, oh, ow) is flat
#   index (od*Hq + oh)*Wq + ow, and tap j reads index ``off[j] + that`` of phase
#   ``ph[j]``.  The grid's extra columns are computed and thrown away (or, for dy, held
#   at zero so they add nothing), which buys one contiguous loop of length
#   L = ((Do-1)*Hq + Ho-1)*Wq + Wo per tap and channel.
#
# Indexing note: numba wraps negative indices, so ``row[off + i]`` carries a sign check
# that stops vectorisation; the kernels slice at the offset first and index the slice
# with the bare loop counter.

def _py_fill_phases(x, n, c, xq, sd, sh, sw, pd, ph_, pw, dq, hq, wq):  # pragma: no cover - jitted
    """Phase planes of image n, channel c, padding included: xq (phases, dq*hq*wq)."""
    d_in, h_in, w_in = x.shape[2], x.shape[3], x.shape[4]
    for a in range(sd):
        for b in range(sh):
            for cc in range(sw):
                p = (a * sh + b) * sw + cc
                plane = xq[p]
                # valid l range: 0 <= cc + l*sw - pw < w_in
                lo = 0
                if pw > cc:
                    lo = (pw - cc + sw - 1) // sw
                hi = (w_in - 1 + pw - cc) // sw + 1 if w_in - 1 + pw - cc >= 0 else 0
                if hi > wq:
                    hi = wq
                if lo > hi:
                    lo = hi
                for i in range(dq):
                    d = a + i * sd - pd
                    for j in range(hq):
                        h = b + j * sh - ph_
                        row = plane[(i * hq + j) * wq:(i * hq + j + 1) * wq]
                        if d < 0 or d >= d_in or h < 0 or h >= h_in:
                            for l in range(wq):
                                row[l] = 0.0
                            continue
                        for l in range(lo):
                            row[l] = 0.0
                        for l in range(hi, wq):
                            row[l] = 0.0
                        start = cc + lo * sw - pw
                        if sw == 1:
                            src = x[n, c, d, h, start:start + (hi - lo)]
                            dst = row[lo:hi]
                            for l in range(hi - lo):
                                dst[l] = src[l]
                        elif sw == 2:   # constant stride: LLVM vectorises the deinterleave
                            src = x[n, c, d, h, start:start + 2 * (hi - lo) - 1]
                            dst = row[lo:hi]
                            for l in range(hi - lo):
                                dst[l] = src[2 * l]
                        else:
                            src = x[n, c, d, h, start:start + (hi - lo - 1) * sw + 1:sw]
                            dst = row[lo:hi]
                            for l in range(hi - lo):
                                dst[l] = src[l]


def _py_conv_fwd(x, wt, ph, off, y, sd, sh, sw, pd, ph_, pw, dq, hq, wq, kg, cg, g0, g1):  # pragma: no cover
    n_img = y.shape[0]
    do_, ho, wo = y.shape[2], y.shape[3], y.shape[4]
    ntaps = wt.shape[2]
    nphase = sd * sh * sw
    plane = dq * hq * wq
    length = ((do_ - 1) * hq + (ho - 1)) * wq + wo
    xq = np.empty((cg, nphase, plane), dtype=x.dtype)
    acc = np.empty(plane, dtype=x.dtype)
    for n in range(n_img):
        for g in range(g0, g1):
            for ci in range(cg):
                _fill_phases(x, n, g * cg + ci, xq[ci], sd, sh, sw, pd, ph_, pw, dq, hq, wq)
            for kk in range(kg):
                k = g * kg + kk
                for i in range(length):
                    acc[i] = 0.0
                for ci in range(cg):
                    j = 0
                    while j + 3 <= ntaps:   # three taps per pass: a third of the acc traffic
                        s0 = xq[ci, ph[j], off[j]:off[j] + length]
                        s1 = xq[ci, ph[j + 1], off[j + 1]:off[j + 1] + length]
                        s2 = xq[ci, ph[j + 2], off[j + 2]:off[j + 2] + length]
                        w0 = wt[k, ci, j]
                        w1 = wt[k, ci, j + 1]
                        w2 = wt[k, ci, j + 2]
                        for i in range(length):
                            acc[i] += w0 * s0[i] + w1 * s1[i] + w2 * s2[i]
                        j += 3
                    while j < ntaps:
                        s0 = xq[ci, ph[j], off[j]:off[j] + length]
                        w0 = wt[k, ci, j]
                        for i in range(length):
                            acc[i] += w0 * s0[i]
                        j += 1
                for od in range(do_):
                    for oh in range(ho):
                        src = acc[(od * hq + oh) * wq:(od * hq + oh) * wq + wo]
                        dst = y[n, k, od, oh]
                        for ow in range(wo):
                            dst[ow] = src[ow]


def _py_conv_bwd(dy, wt, ph, off, dx, sd, sh, sw, pd, ph_, pw, dq, hq, wq, kg, cg, g0, g1):  # pragma: no cover
    n_img = dy.shape[0]
    do_, ho, wo = dy.shape[2], dy.shape[3], dy.shape[4]
    d_in, h_in, w_in = dx.shape[2], dx.shape[3], dx.shape[4]
    ntaps = wt.shape[2]
    nphase = sd * sh * sw
    plane = dq * hq * wq
    length = ((do_ - 1) * hq + (ho - 1)) * wq + wo
    dyq = np.zeros((kg, plane), dtype=dy.dtype)   # garbage columns stay zero
    dxq = np.empty((nphase, plane), dtype=dy.dtype)
    for n in range(n_img):
        for g in range(g0, g1):
            for kk in range(kg):
                for od in range(do_):
                    for oh in range(ho):
                        src = dy[n, g * kg + kk, od, oh]
                        dst = dyq[kk, (od * hq + oh) * wq:(od * hq + oh) * wq + wo]
                        for ow in range(wo):
                            dst[ow] = src[ow]
            for ci in range(cg):
                c = g * cg + ci
                dxq[:, :] = 0.0
                for kk in range(kg):
                    k = g * kg + kk
                    d = dyq[kk, :length]
                    for j in range(ntaps):
                        dst = dxq[ph[j], off[j]:off[j] + length]
                        w0 = wt[k, ci, j]
                        for i in range(length):
                            dst[i] += w0 * d[i]
                # merge the phase planes back into dx (the padding is dropped); input
                # positions past the grid are never read by the convolution: zero gradient
                for z in range(d_in):
                    pz = z + pd
                    a = pz % sd
                    i = pz // sd
                    for h in range(h_in):
                        py = h + ph_
                        b = py % sh
                        jj = py // sh
                        row = dx[n, c, z, h]
                        if i >= dq or jj >= hq:
                            for w in range(w_in):
                                row[w] = 0.0
                            continue
                        if sw == 1:   # one phase along W: a contiguous copy
                            p = a * sh + b
                            base = (i * hq + jj) * wq + pw
                            n_ok = max(0, min(w_in, wq - pw))
                            src = dxq[p, base:base + n_ok]
                            for w in range(n_ok):
                                row[w] = src[w]
                            for w in range(n_ok, w_in):
                                row[w] = 0.0
                            continue
                        for w in range(w_in):
                            px = w + pw
                            cc = px % sw
                            l = px // sw
                            if l < wq:
                                row[w] = dxq[(a * sh + b) * sw + cc, (i * hq + jj) * wq + l]
                            else:
                                row[w] = 0.0


def _py_conv_wrw(x, dy, ph, off, dwt, sd, sh, sw, pd, ph_, pw, dq, hq, wq, kg, cg, g0, g1):  # pragma: no cover
    n_img = dy.shape[0]
    do_, ho, wo = dy.shape[2], dy.shape[3], dy.shape[4]
    ntaps = dwt.shape[2]
    nphase = sd * sh * sw
    plane = dq * hq * wq
    length = ((do_ - 1) * hq + (ho - 1)) * wq + wo
    xq = np.empty((cg, nphase, plane), dtype=x.dtype)
    dyq = np.zeros((kg, plane), dtype=dy.dtype)
    acc = np.zeros((kg, cg, ntaps), dtype=np.float64)
    for g in range(g0, g1):
        acc[:, :, :] = 0.0
        for n in range(n_img):
            for ci in range(cg):
                _fill_phases(x, n, g * cg + ci, xq[ci], sd, sh, sw, pd, ph_, pw, dq, hq, wq)
            for kk in range(kg):
                for od in range(do_):
                    for oh in range(ho):
                        src = dy[n, g * kg + kk, od, oh]
                        dst = dyq[kk, (od * hq + oh) * wq:(od * hq + oh) * wq + wo]
                        for ow in range(wo):
                            dst[ow] = src[ow]
            for kk in range(kg):
                d = dyq[kk, :length]
                for ci in range(cg):
                    for j in range(ntaps):
                        src = xq[ci, ph[j], off[j]:off[j] + length]
                        part = d[0] * 0   # the input type: float32 sums vectorise
                        for i in range(length):
                            part += d[i] * src[i]
                        acc[kk, ci, j] += part   # images summed in float64
        for kk in range(kg):
            for ci in range(cg):
                for j in range(ntaps):
                    dwt[g * kg + kk, ci, j] = acc[kk, ci, j]


# Plane-stacked depthwise kernels (C/G = 1, K/G = 1: MobileNet's depthwise layers).
#
# The phase-plane kernels above run one loop per channel over its output plane; on
# 7x7-28x28 planes that loop is short and per-plane overhead dominates (3-8x torch's
# time).  These kernels make the loop long without transposing anything: the planes of
# a block of channels lie back to back in NCHW memory, and for a geometry whose output
# grid is the input's stride-phase grid (out == ceil(in / stride) on every axis: "same"
# padding, as in MobileNet) every filter tap reads, for the whole block, one contiguous
# run at a constant flat offset from the output.  Reads that cross a row, plane or
# channel edge are the padding: a per-block weight tile ``tile[t, c*P + p] =
# w[c, t] * valid_t(p)`` zeroes them (built once per block, reused for every image).
# Each tap is then one unit-stride loop of block*plane values, which LLVM vectorises.
# Stride 1 reads x and writes y in place; stride > 1 first splits the block's input
# into stride phases (each the size of the output plane), so taps stay unit-stride.
# Backward data gathers: dx phase p sums the taps reading phase p, from dy at the
# negated offsets (a stride-1 layer writes dx in place; otherwise the phases are merged
# back).  Backward weights accumulates dy * shifted x per (tap, position) over images,
# and applies the mask when it folds a block's positions (in float64).  Slices are
# indexed with the bare loop counter: numba wraps negative indices, and that sign check
# on a computed index stops vectorisation.
#
# Tried and dropped: a channels-last variant (blocks of 32 channels transposed into a
# cache-resident scratch, vectorised across channels as oneDNN does).  A 32-lane loop
# is fully unrolled and numba's possibly-aliased arrays then keep LLVM's SLP vectoriser
# off it (it ran scalar); with rows of lanes vectorised instead, the two transposes
# alone (scalar, ~1.5 values/ns) cost more than torch's whole layer on 7x7-14x14 planes.

def _py_dw_tiles(w2, c0, cn, mask, tile, plane):  # pragma: no cover - jitted
    """tile[t, c*plane + p] = w2[c0 + c, t] * mask[t, p] for the block's channels."""
    for t in range(tile.shape[0]):
        m = mask[t]
        row = tile[t]
        for c in range(cn):
            wv = w2[c0 + c, t]
            seg = row[c * plane:(c + 1) * plane]
            for p in range(plane):
                seg[p] = wv * m[p]


def _py_dw_apply(y, tile, t0, t1, src, sbase, off):  # pragma: no cover - jitted
    """y[i] = sum over taps t0 <= t < t1 of tile[t, i] * src[sbase + i + off[t]].

    Reads outside src are skipped (they are padding: their tile entries are 0); only
    the first and last items of an array have any, so those few run scalar."""
    length = y.shape[0]
    if t1 <= t0:
        for i in range(length):
            y[i] = 0.0
        return
    omin = off[t0]
    omax = off[t0]
    for t in range(t0 + 1, t1):
        omin = min(omin, off[t])
        omax = max(omax, off[t])
    lo = min(length, max(0, -(sbase + omin)))
    hi = max(lo, min(length, src.shape[0] - sbase - omax))
    span = hi - lo
    yy = y[lo:]
    t = t0
    while t < t1:   # three taps per pass: a third of the output traffic
        if t + 3 <= t1:
            x0 = src[sbase + off[t] + lo:]
            x1 = src[sbase + off[t + 1] + lo:]
            x2 = src[sbase + off[t + 2] + lo:]
            w0 = tile[t, lo:]
            w1 = tile[t + 1, lo:]
            w2 = tile[t + 2, lo:]
            if t == t0:
                for i in range(span):
                    yy[i] = w0[i] * x0[i] + w1[i] * x1[i] + w2[i] * x2[i]
            else:
                for i in range(span):
                    yy[i] += w0[i] * x0[i] + w1[i] * x1[i] + w2[i] * x2[i]
            t += 3
        else:
            x0 = src[sbase + off[t] + lo:]
            w0 = tile[t, lo:]
            if t == t0:
                for i in range(span):
                    yy[i] = w0[i] * x0[i]
            else:
                for i in range(span):
                    yy[i] += w0[i] * x0[i]
            t += 1
    _dw_edge(y, tile, t0, t1, src, sbase, off, 0, lo)
    _dw_edge(y, tile, t0, t1, src, sbase, off, hi, length)


def _py_dw_apply2(ya, yb, tile, t0, t1, srca, sa, srcb, sb, off):  # pragma: no cover - jitted
    """_py_dw_apply for two images of one block at once: each tile value loaded feeds
    both (about a fifth fewer loads per multiply-add, which bound these loops)."""
    length = ya.shape[0]
    omin = off[t0] if t1 > t0 else 0
    omax = omin
    for t in range(t0 + 1, t1):
        omin = min(omin, off[t])
        omax = max(omax, off[t])
    if (t1 - t0 < 3 or sa + omin < 0 or sb + omin < 0 or sa + omax + length > srca.shape[0]
            or sb + omax + length > srcb.shape[0]):   # edges of the array, or a short tap list
        _dw_apply(ya, tile, t0, t1, srca, sa, off)
        _dw_apply(yb, tile, t0, t1, srcb, sb, off)
        return
    t = t0
    while t < t1:
        if t + 3 <= t1:
            a0 = srca[sa + off[t]:]
            a1 = srca[sa + off[t + 1]:]
            a2 = srca[sa + off[t + 2]:]
            b0 = srcb[sb + off[t]:]
            b1 = srcb[sb + off[t + 1]:]
            b2 = srcb[sb + off[t + 2]:]
            w0, w1, w2 = tile[t], tile[t + 1], tile[t + 2]
            if t == t0:
                for i in range(length):
                    ya[i] = w0[i] * a0[i] + w1[i] * a1[i] + w2[i] * a2[i]
                    yb[i] = w0[i] * b0[i] + w1[i] * b1[i] + w2[i] * b2[i]
            else:
                for i in range(length):
                    ya[i] += w0[i] * a0[i] + w1[i] * a1[i] + w2[i] * a2[i]
                    yb[i] += w0[i] * b0[i] + w1[i] * b1[i] + w2[i] * b2[i]
            t += 3
        else:
            a0 = srca[sa + off[t]:]
            b0 = srcb[sb + off[t]:]
            w0 = tile[t]
            for i in range(length):
                ya[i] += w0[i] * a0[i]
                yb[i] += w0[i] * b0[i]
            t += 1


def _py_dw_edge(y, tile, t0, t1, src, sbase, off, a, b):  # pragma: no cover - jitted
    """_py_dw_apply for outputs a <= i < b, checking every read against src's bounds."""
    for i in range(a, b):
        acc = 0.0   # a few edge values: summed in float64
        for t in range(t0, t1):
            q = sbase + i + off[t]
            if 0 <= q < src.shape[0]:
                acc += tile[t, i] * src[q]
        y[i] = acc


def _py_dw_finite(v):  # pragma: no cover - jitted
    """Whether every value of v is finite.  A masked read still multiplies a 0 weight by
    the value it lands on, so an inf or NaN input spreads NaN to outputs that do not
    depend on it; the wrappers then rerun the layer on the zero-padding kernels."""
    z = 0.0
    for i in range(v.shape[0]):
        z += v[i] * 0.0
    return z == 0.0


def _py_dw_split(xf, xbase, cn, xq, qbase, cb, plane, nph, gidx):  # pragma: no cover - jitted
    """Stride phases of a block's input: phase p of channel c at qbase + (p*cb + c)*plane,
    gathered from xf[xbase + gidx[...]] (an index per phase position, precomputed per
    geometry: one long gather loop instead of thousands of short strided row copies).
    Positions past a phase's end read the block's first value: the masks zero them."""
    src = xf[xbase:]
    for p in range(nph):
        dst = xq[qbase + p * cb * plane:qbase + p * cb * plane + cn * plane]
        g = gidx[p * cb * plane:]
        for m in range(cn * plane):
            dst[m] = src[g[m]]


def _py_dw_merge(dxq, dxf, dbase, length, ridx):  # pragma: no cover - jitted
    """The inverse of _py_dw_split: dxf[dbase + v] = dxq[ridx[v]] for the block's
    ``length`` input positions (every input position lies in exactly one phase)."""
    dst = dxf[dbase:dbase + length]
    for v in range(length):
        dst[v] = dxq[ridx[v]]


def _py_dw_fwd(x, w2, mask, off, gidx, y, cb, nph, margin, i0, i1):  # pragma: no cover
    """y of work items [i0, i1): item = block * images + image (blocks of cb channels).
    ``off`` (taps): flat offset of each tap from the output, into x itself (stride 1)
    or into the ``nph`` split phases (stride > 1, with ``margin`` zeros on either side).
    Two images of a block run together (see _py_dw_apply2).  Returns whether every
    output is finite (see _py_dw_finite)."""
    n_img, n_c = y.shape[0], y.shape[1]
    plane = y.shape[2] * y.shape[3] * y.shape[4]
    vol = x.shape[2] * x.shape[3] * x.shape[4]
    ntaps = w2.shape[1]
    xf = x.reshape(x.size)
    yf = y.reshape(y.size)
    tile = np.empty((ntaps, cb * plane), dtype=x.dtype)
    if nph > 1:
        srca = np.zeros(nph * cb * plane + 2 * margin, dtype=x.dtype)
        srcb = np.zeros(nph * cb * plane + 2 * margin, dtype=x.dtype)
    else:
        srca = xf
        srcb = xf
    finite = True
    cur = -1
    it = i0
    while it < i1:
        blk = it // n_img
        n = it - blk * n_img
        c0 = blk * cb
        cn = min(cb, n_c - c0)
        if blk != cur:
            _dw_tiles(w2, c0, cn, mask, tile, plane)
            cur = blk
        pair = it + 1 < i1 and n + 1 < n_img
        base = (n * n_c + c0) * plane
        base2 = base + n_c * plane
        sa, sb = base, base2
        if nph > 1:
            _dw_split(xf, (n * n_c + c0) * vol, cn, srca, margin, cb, plane, nph, gidx)
            if pair:
                _dw_split(xf, ((n + 1) * n_c + c0) * vol, cn, srcb, margin, cb, plane, nph, gidx)
            sa, sb = margin, margin
        length = cn * plane
        if pair:
            _dw_apply2(yf[base:base + length], yf[base2:base2 + length], tile, 0, ntaps, srca, sa, srcb, sb, off)
            finite = _dw_finite(yf[base2:base2 + length]) and finite
        else:
            _dw_apply(yf[base:base + length], tile, 0, ntaps, srca, sa, off)
        finite = _dw_finite(yf[base:base + length]) and finite
        it += 2 if pair else 1
    return finite


def _py_dw_bwd(dy, w2, mask, off, tstart, ridx, dx, cb, nph, i0, i1):  # pragma: no cover
    """dx of work items [i0, i1) (as _py_dw_fwd).  Taps are grouped by the input stride
    phase they touch (phase p: taps tstart[p] to tstart[p+1]); each phase of dx gathers
    from dy at offsets ``off`` (the negated forward offsets), masked by ``mask``.  Stride 1
    writes dx in place; otherwise the phases are merged into dx.  Returns whether every
    value is finite."""
    n_img, n_c = dy.shape[0], dy.shape[1]
    plane = dy.shape[2] * dy.shape[3] * dy.shape[4]
    vol = dx.shape[2] * dx.shape[3] * dx.shape[4]
    ntaps = w2.shape[1]
    tile = np.empty((ntaps, cb * plane), dtype=dy.dtype)
    qsize = nph * cb * plane if nph > 1 else 1
    dxqa = np.empty(qsize, dtype=dy.dtype)
    dxqb = np.empty(qsize, dtype=dy.dtype)
    dyf = dy.reshape(dy.size)
    dxf = dx.reshape(dx.size)
    finite = True
    cur = -1
    it = i0
    while it < i1:
        blk = it // n_img
        n = it - blk * n_img
        c0 = blk * cb
        cn = min(cb, n_c - c0)
        if blk != cur:
            _dw_tiles(w2, c0, cn, mask, tile, plane)
            cur = blk
        pair = it + 1 < i1 and n + 1 < n_img
        base = (n * n_c + c0) * plane
        base2 = base + n_c * plane
        length = cn * plane
        if nph == 1:
            if pair:
                _dw_apply2(dxf[base:base + length], dxf[base2:base2 + length], tile, 0, ntaps,
                           dyf, base, dyf, base2, off)
            else:
                _dw_apply(dxf[base:base + length], tile, 0, ntaps, dyf, base, off)
        else:
            for p in range(nph):
                qa = dxqa[p * cb * plane:p * cb * plane + length]
                if pair:
                    qb = dxqb[p * cb * plane:p * cb * plane + length]
                    _dw_apply2(qa, qb, tile, tstart[p], tstart[p + 1], dyf, base, dyf, base2, off)
                else:
                    _dw_apply(qa, tile, tstart[p], tstart[p + 1], dyf, base, off)
            _dw_merge(dxqa, dxf, (n * n_c + c0) * vol, cn * vol, ridx)
            if pair:
                _dw_merge(dxqb, dxf, ((n + 1) * n_c + c0) * vol, cn * vol, ridx)
        finite = _dw_finite(dxf[(n * n_c + c0) * vol:(n * n_c + c0 + cn) * vol]) and finite
        if pair:
            finite = _dw_finite(dxf[((n + 1) * n_c + c0) * vol:((n + 1) * n_c + c0 + cn) * vol]) and finite
        it += 2 if pair else 1
    return finite


def _py_dw_acc(acc, d, src, sbase, off, length):  # pragma: no cover - jitted
    """acc[t, i] += d[i] * src[sbase + off[t] + i] for i < length, skipping reads
    outside src (padding: masked when the block is folded)."""
    size = src.shape[0]
    for t in range(acc.shape[0]):
        o = sbase + off[t]
        lo = min(length, max(0, -o))
        hi = max(lo, min(length, size - o))
        xr = src[o + lo:]
        dr = d[lo:]
        ar = acc[t, lo:]
        for i in range(hi - lo):
            ar[i] += dr[i] * xr[i]


def _py_dw_wrw(x, dy, mask, off, gidx, acc64, cb, nph, margin, i0, i1):  # pragma: no cover
    """Adds the weight gradient of work items [i0, i1) into acc64 (C, taps).  Every
    (tap, channel, position) sums its images in the input type (a few terms); the
    positions are then summed in float64, masked (the tap's padding reads drop out)."""
    n_img, n_c = dy.shape[0], dy.shape[1]
    plane = dy.shape[2] * dy.shape[3] * dy.shape[4]
    vol = x.shape[2] * x.shape[3] * x.shape[4]
    ntaps = acc64.shape[1]
    xf = x.reshape(x.size)
    dyf = dy.reshape(dy.size)
    acc = np.zeros((ntaps, cb * plane), dtype=x.dtype)
    if nph > 1:
        srca = np.zeros(nph * cb * plane + 2 * margin, dtype=x.dtype)
        srcb = np.zeros(nph * cb * plane + 2 * margin, dtype=x.dtype)
    else:
        srca = xf
        srcb = xf
    omin = 0
    omax = 0
    for t in range(ntaps):
        omin = min(omin, off[t])
        omax = max(omax, off[t])
    it = i0
    while it < i1:
        blk = it // n_img
        n = it - blk * n_img
        c0 = blk * cb
        cn = min(cb, n_c - c0)
        pair = it + 1 < i1 and n + 1 < n_img
        base = (n * n_c + c0) * plane
        base2 = base + n_c * plane
        sa, sb = base, base2
        if nph > 1:
            _dw_split(xf, (n * n_c + c0) * vol, cn, srca, margin, cb, plane, nph, gidx)
            if pair:
                _dw_split(xf, ((n + 1) * n_c + c0) * vol, cn, srcb, margin, cb, plane, nph, gidx)
            sa, sb = margin, margin
        length = cn * plane
        da = dyf[base:base + length]
        inside = (min(sa, sb) + omin >= 0 and sa + omax + length <= srca.shape[0]
                  and sb + omax + length <= srcb.shape[0])
        if pair and inside:
            db = dyf[base2:base2 + length]   # two images and three taps per pass: fewer loads
            t = 0
            while t + 3 <= ntaps:
                xa0, xa1, xa2 = srca[sa + off[t]:], srca[sa + off[t + 1]:], srca[sa + off[t + 2]:]
                xb0, xb1, xb2 = srcb[sb + off[t]:], srcb[sb + off[t + 1]:], srcb[sb + off[t + 2]:]
                ar0, ar1, ar2 = acc[t], acc[t + 1], acc[t + 2]
                for i in range(length):
                    ar0[i] += da[i] * xa0[i] + db[i] * xb0[i]
                    ar1[i] += da[i] * xa1[i] + db[i] * xb1[i]
                    ar2[i] += da[i] * xa2[i] + db[i] * xb2[i]
                t += 3
            while t < ntaps:
                xa = srca[sa + off[t]:]
                xb = srcb[sb + off[t]:]
                ar = acc[t]
                for i in range(length):
                    ar[i] += da[i] * xa[i] + db[i] * xb[i]
                t += 1
        else:
            _dw_acc(acc, da, srca, sa, off, length)
            if pair:
                _dw_acc(acc, dyf[base2:base2 + length], srcb, sb, off, length)
        it += 2 if pair else 1
        if it >= i1 or it // n_img != blk:   # fold the finished block, masked, in float64
            for t in range(ntaps):
                m = mask[t]
                row = acc[t]
                for c in range(cn):
                    seg = row[c * plane:(c + 1) * plane]
                    s = 0.0
                    for p in range(plane):
                        s += m[p] * seg[p]
                        seg[p] = 0.0
                    acc64[c0 + c, t] += s

def _py_pool_fwd(x, y, idx, mode, kd, kh, kw, sd, sh, sw, pd, ph, pw, c0, c1):  # pragma: no cover
    n_img = x.shape[0]
    d_in, h_in, w_in = x.shape[2], x.shape[3], x.shape[4]
    do_, ho, wo = y.shape[2], y.shape[3], y.shape[4]
    for n in range(n_img):
        for c in range(c0, c1):
            for od in range(do_):
                d0 = od * sd - pd
                d1 = min(d0 + kd, d_in)
                d0 = max(d0, 0)
                for oh in range(ho):
                    h0 = oh * sh - ph
                    h1 = min(h0 + kh, h_in)
                    h0 = max(h0, 0)
                    for ow in range(wo):
                        w0 = ow * sw - pw
                        w1 = min(w0 + kw, w_in)
                        w0 = max(w0, 0)
                        if mode == 0:
                            best = -1
                            m = -np.inf
                            for d in range(d0, d1):
                                for h in range(h0, h1):
                                    for ww in range(w0, w1):
                                        v = x[n, c, d, h, ww]
                                        if v > m:   # strict: the first maximum wins, as MIOpen
                                            m = v
                                            best = (d * h_in + h) * w_in + ww
                            y[n, c, od, oh, ow] = m if best >= 0 else 0.0
                            idx[n, c, od, oh, ow] = best
                        else:
                            acc = 0.0
                            for d in range(d0, d1):
                                for h in range(h0, h1):
                                    for ww in range(w0, w1):
                                        acc += x[n, c, d, h, ww]
                            if mode == 1:
                                cnt = (d1 - d0) * (h1 - h0) * (w1 - w0)
                            else:
                                cnt = kd * kh * kw
                            y[n, c, od, oh, ow] = acc / max(cnt, 1)


def _py_pool_bwd(dy, idx, dx, mode, kd, kh, kw, sd, sh, sw, pd, ph, pw, c0, c1):  # pragma: no cover
    n_img = dx.shape[0]
    d_in, h_in, w_in = dx.shape[2], dx.shape[3], dx.shape[4]
    do_, ho, wo = dy.shape[2], dy.shape[3], dy.shape[4]
    for n in range(n_img):
        for c in range(c0, c1):
            for od in range(do_):
                d0 = od * sd - pd
                d1 = min(d0 + kd, d_in)
                d0 = max(d0, 0)
                for oh in range(ho):
                    h0 = oh * sh - ph
                    h1 = min(h0 + kh, h_in)
                    h0 = max(h0, 0)
                    for ow in range(wo):
                        g = dy[n, c, od, oh, ow]
                        if mode == 0:
                            b = idx[n, c, od, oh, ow]
                            if b >= 0:
                                ww = b % w_in
                                h = (b // w_in) % h_in
                                d = b // (w_in * h_in)
                                dx[n, c, d, h, ww] += g
                            continue
                        w0 = ow * sw - pw
                        w1 = min(w0 + kw, w_in)
                        w0 = max(w0, 0)
                        if mode == 1:
                            cnt = (d1 - d0) * (h1 - h0) * (w1 - w0)
                        else:
                            cnt = kd * kh * kw
                        v = g / max(cnt, 1)
                        for d in range(d0, d1):
                            for h in range(h0, h1):
                                for ww in range(w0, w1):
                                    dx[n, c, d, h, ww] += v


def _get_kernels() -> dict[str, Callable[..., Any]]:
    """Import numba and wrap the kernel bodies (compilation itself happens on first call)."""
    global _kernels, _unavailable
    with _lock:
        if _kernels is not None:
            return _kernels
        why = available()
        if why is not None:
            raise RuntimeError(why)
        try:
            import numba
        except Exception as exc:  # broken install: remember and fall back
            _unavailable = f"numba failed to import: {exc}"
            raise RuntimeError(_unavailable) from exc
        fast = {"reassoc", "contract", "nsz"}
        jit = numba.njit(nogil=True, cache=True, fastmath=fast, boundscheck=False, error_model="numpy")
        # the kernels call the phase-plane filler through this module global
        globals()["_fill_phases"] = jit(_py_fill_phases)
        for helper in ("tiles", "apply", "apply2", "edge", "finite", "acc", "split", "merge"):
            globals()[f"_dw_{helper}"] = jit(globals()[f"_py_dw_{helper}"])
        _kernels = {
            "conv_fwd": jit(_py_conv_fwd),
            "conv_bwd": jit(_py_conv_bwd),
            "conv_wrw": jit(_py_conv_wrw),
            "dw_fwd": jit(_py_dw_fwd),
            "dw_bwd": jit(_py_dw_bwd),
            "dw_wrw": jit(_py_dw_wrw),
            # pooling compares values: keep IEEE semantics (no fastmath)
            "pool_fwd": numba.njit(nogil=True, cache=True, boundscheck=False)(_py_pool_fwd),
            "pool_bwd": numba.njit(nogil=True, cache=True, boundscheck=False)(_py_pool_bwd),
        }
        return _kernels


# ----------------------------------------------------------------------------- conv wrappers

def conv_applies(g: Any, kernel: Optional[str] = None) -> bool:
    """Whether the direct kernels beat im2col for this geometry (depthwise/small groups).

    ``kernel`` ("fwd", "bwd" data, "wrw") of the underlying convolution.  Depthwise
    layers whose output is the input's stride-phase grid (out == ceil(in / stride):
    MobileNet's) run the plane-stacked kernels, faster than numpy in every direction
    (stride 2: 576 channels 14x14 fwd 1.7 vs 2.3 ms, 192 channels 28x28 wrw 2.0 vs
    4.7 ms).  Otherwise, with a stride above 1 and an output plane under 56x56, the
    phase-plane forward and weight kernels measured slower than numpy (576 channels
    14x14 stride 2: 5.2 ms vs 2.1 ms), so numpy keeps those; backward data stays in numba.
    """
    if not (g.groups > 1 and g.cg <= MAX_GROUP_CHANNELS):
        return False
    if _dw_shape_ok(g):
        return True
    if kernel in ("fwd", "wrw") and any(s > 1 for s in g.strides) and g.out_elems < 56 * 56:
        return False
    return True


class _PhaseLayout:
    """Phase-plane geometry of one convolution (see the kernel notes above)."""

    def __init__(self, g: Any) -> None:
        pad3 = (lambda t, v: tuple(t) if g.nd == 3 else (v,) + tuple(t))
        self.strides = pad3(g.strides, 1)
        self.dils = pad3(g.dils, 1)
        self.filt = pad3(g.filt, 1)
        self.out = pad3(g.out_sp, 1)
        self.padded = pad3(g.padded, 1)
        self.phases = self.strides
        # extra plane room for the largest tap offset, per axis
        max_off = tuple(((f - 1) * d) // s for f, d, s in zip(self.filt, self.dils, self.strides))
        self.q = tuple(o + m for o, m in zip(self.out, max_off))
        dq, hq, wq = self.q
        self.plane = dq * hq * wq
        do_, ho, wo = self.out
        self.length = ((do_ - 1) * hq + (ho - 1)) * wq + wo
        ph, off = [], []
        for t in range(self.filt[0]):
            for r in range(self.filt[1]):
                for s in range(self.filt[2]):
                    pos = (t * self.dils[0], r * self.dils[1], s * self.dils[2])
                    a, b, c = (p % st for p, st in zip(pos, self.strides))
                    o = tuple(p // st for p, st in zip(pos, self.strides))
                    ph.append((a * self.strides[1] + b) * self.strides[2] + c)
                    off.append((o[0] * hq + o[1]) * wq + o[2])
        self.ph = np.array(ph, dtype=np.int64)
        self.off = np.array(off, dtype=np.int64)
        self.nphase = self.strides[0] * self.strides[1] * self.strides[2]

    def _phase_slices(self) -> list[tuple[int, tuple[slice, ...], tuple[slice, ...]]]:
        """(phase, slice in the padded input, slice in the phase plane) per phase."""
        out = []
        for a in range(self.strides[0]):
            for b in range(self.strides[1]):
                for c in range(self.strides[2]):
                    src, dst = [], []
                    for start, st, size, q in zip((a, b, c), self.strides, self.padded, self.q):
                        count = min(q, max(0, -(-(size - start) // st)))
                        src.append(slice(start, start + (count - 1) * st + 1 if count else start, st))
                        dst.append(slice(0, count))
                    out.append(((a * self.strides[1] + b) * self.strides[2] + c, tuple(src), tuple(dst)))
        return out

    def split(self, xp5: np.ndarray) -> np.ndarray:
        """Padded input (n, C, D, H, W) -> phase planes (n, C, phases, Dq*Hq*Wq)."""
        n, c = xp5.shape[:2]
        xq = np.zeros((n, c, self.nphase) + self.q, dtype=xp5.dtype)
        for p, src, dst in self._phase_slices():
            xq[(slice(None), slice(None), p) + dst] = xp5[(slice(None), slice(None)) + src]
        return xq.reshape(n, c, self.nphase, self.plane)

    def merge(self, dxq: np.ndarray) -> np.ndarray:
        """Phase planes (n, C, phases, plane) -> padded (n, C, D, H, W) (inverse of split)."""
        n, c = dxq.shape[:2]
        dxq = dxq.reshape((n, c, self.nphase) + self.q)
        dxp = np.zeros((n, c) + self.padded, dtype=dxq.dtype)
        for p, src, dst in self._phase_slices():
            dxp[(slice(None), slice(None)) + src] = dxq[(slice(None), slice(None), p) + dst]
        return dxp

    def embed(self, dy5: np.ndarray) -> np.ndarray:
        """(n, K, Do, Ho, Wo) -> (n, K, Dq*Hq*Wq) on the output grid, zeros elsewhere."""
        n, k = dy5.shape[:2]
        buf = np.zeros((n, k) + self.q, dtype=dy5.dtype)
        buf[(slice(None), slice(None)) + tuple(slice(0, o) for o in self.out)] = dy5
        return buf.reshape(n, k, self.plane)

    def extract(self, yq: np.ndarray) -> np.ndarray:
        """(n, K, Dq*Hq*Wq) -> (n, K, Do, Ho, Wo)."""
        n, k = yq.shape[:2]
        return yq.reshape((n, k) + self.q)[(slice(None), slice(None)) + tuple(slice(0, o) for o in self.out)]


def _to5d(a: np.ndarray) -> np.ndarray:
    return a if a.ndim == 5 else a[:, :, None]


def _padded(x: np.ndarray, g: Any) -> np.ndarray:
    if not g.needs_pad:
        return x
    buf = np.zeros(x.shape[:2] + g.padded, dtype=x.dtype)
    buf[(slice(None), slice(None)) + tuple(slice(p, p + i) for p, i in zip(g.pad_before, g.in_sp))] = x
    return buf


def _batch_chunks(n: int, per_image_bytes: int) -> list[tuple[int, int]]:
    """Batch chunks of ~64 MB of input, so ``cancel`` is checked every so often."""
    step = max(1, min(n, (64 << 20) // max(per_image_bytes, 1)))
    return [(a, min(a + step, n)) for a in range(0, n, step)]


def _parallel(fn: Callable[[int, int], None], length: int) -> None:
    from miotui.execute.reference import _run_parallel
    _run_parallel(fn, length, 1 << 30)


def _check(cancel: Optional[threading.Event]) -> None:
    from miotui.execute.reference import _check_cancel
    _check_cancel(cancel)


def _taps_weights(w: np.ndarray, g: Any) -> np.ndarray:
    return np.ascontiguousarray(w.reshape(g.ku, g.cg, g.taps))


def _geometry_args(g: Any, lay: "_PhaseLayout") -> tuple[int, ...]:
    pads = tuple(g.pad_before) if g.nd == 3 else (0,) + tuple(g.pad_before)
    return tuple(lay.strides) + pads + tuple(lay.q)


#: Values per depthwise block (channels x output plane): the weight tile (taps x this)
#: stays in L2, and the block is long enough for a fast vector loop.
_DW_BLOCK = 4096


class _DwPlan:
    """Geometry of the plane-stacked depthwise kernels for one convolution (see the
    kernel notes): per-tap flat offsets, padding masks, phases and the channel block."""

    def __init__(self, g: Any) -> None:
        pad3 = (lambda t, v: tuple(t) if g.nd == 3 else (v,) + tuple(t))
        self.strides = pad3(g.strides, 1)
        ins, outs, filt, dils, pads = (pad3(g.in_sp, 1), pad3(g.out_sp, 1), pad3(g.filt, 1),
                                       pad3(g.dils, 1), pad3(g.pad_before, 0))
        self.nph = math.prod(self.strides)
        self.plane = math.prod(outs)
        self.cb = max(1, min(g.cu, _DW_BLOCK // self.plane))
        self.blocks = -(-g.cu // self.cb)
        # per tap and axis: input position k*dil - pad = phase + rel*stride
        taps = [(t, r, s) for t in range(filt[0]) for r in range(filt[1]) for s in range(filt[2])]
        pos = np.array([[k * d - p for k, d, p in zip(tap, dils, pads)] for tap in taps], dtype=np.int64)
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
_DW_MAX_TILE = 1 << 22


def _dw_shape_ok(g: Any) -> bool:
    """Depthwise (one input and one output channel per group) with out == ceil(in / stride),
    and a weight tile within _DW_MAX_TILE."""
    return (g.cg == 1 and g.kg == 1 and g.taps * g.out_elems <= _DW_MAX_TILE
            and all(-(-i // s) == o for i, s, o in zip(g.in_sp, g.strides, g.out_sp)))


def scratch_bytes(g: Any, itemsize: int, threads: int) -> int:
    """Scratch the plane-stacked depthwise kernels allocate for ``g`` (0 where they do
    not apply), for the memory guard: per thread a weight tile and, for the weight
    gradient, an accumulator of taps x channel-block values, plus the block's
    stride-phase copy and its gather indices."""
    if not _dw_shape_ok(g):
        return 0
    block = max(1, min(g.cu, _DW_BLOCK // g.out_elems)) * g.out_elems
    phases = math.prod(g.strides)
    per_thread = (2 * g.taps * block + phases * block) * itemsize
    return threads * per_thread + 2 * phases * block * 8


@functools.lru_cache(maxsize=32)
def _dw_plan(g: Any) -> Optional[_DwPlan]:
    """The plane-stacked plan of ``g`` (cached: a geometry runs many times), or None
    when the kernels do not apply."""
    return _DwPlan(g) if _dw_shape_ok(g) else None


def _dw_parallel(fn: Callable[[int, int], None], items: int, elems: int) -> None:
    """Run ``fn(i0, i1)`` over [0, items) split over the threads; the caller runs the
    first part.  Work under ``_DW_SERIAL_ELEMS`` values runs in the caller alone.

    The depthwise kernels take 0.2-1 ms on MobileNet's small layers, so starting a
    thread per call (~0.1 ms) costs a large share: the other parts go to persistent
    workers (a hand-off is ~0.05 ms)."""
    from miotui.execute import reference
    threads = reference.THREADS
    if getattr(getattr(reference, "_tls", None), "single", False):   # inside a reference worker
        threads = 1
    parts = min(threads, items)
    if parts <= 1 or elems < _DW_SERIAL_ELEMS:
        fn(0, items)
        return
    bounds = [items * i // parts for i in range(parts + 1)]
    pool = _worker_pool(threads - 1)
    futures = [pool.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, parts)]
    try:
        fn(bounds[0], bounds[1])
    finally:
        errors = [f.exception() for f in futures]   # waits for every part
    for exc in errors:
        if exc is not None:
            raise exc


#: Below this many input+output values one thread beats two (a hand-off costs ~0.05 ms).
_DW_SERIAL_ELEMS = 1 << 16

_pool: Any = None


def _worker_pool(workers: int) -> Any:
    """Persistent worker threads for the depthwise kernels (created on first use)."""
    global _pool
    with _lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor
            _pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="miotui-numba")
        return _pool


def conv_forward(x: np.ndarray, w: np.ndarray, g: Any, cancel: Optional[threading.Event] = None) -> np.ndarray:
    """y of the underlying convolution ``g`` (see reference.ConvGeometry)."""
    x = np.ascontiguousarray(x)
    y = np.empty((g.n, g.ku) + g.out_sp, dtype=x.dtype)
    plan = _dw_plan(g)
    if plan is not None:
        kern = _get_kernels()["dw_fwd"]
        w2 = np.ascontiguousarray(w.reshape(g.cu, g.taps))
        mask = plan.masks(x.dtype)[0]
        finite: list[bool] = []
        for a, b in _batch_chunks(g.n, x[0].nbytes):
            _check(cancel)
            x5, y5 = _to5d(x[a:b]), _to5d(y[a:b])
            _dw_parallel(lambda i0, i1: finite.append(kern(x5, w2, mask, plan.fwd_off, plan.gidx, y5, plan.cb,
                                                           plan.nph, plan.margin, i0, i1)),
                         plan.blocks * (b - a), x5.size + y5.size)
        if all(finite):
            return y
    kern = _get_kernels()["conv_fwd"]
    lay = _PhaseLayout(g)
    args = _geometry_args(g, lay)
    wt = _taps_weights(w, g)
    for a, b in _batch_chunks(g.n, x[0].nbytes):
        _check(cancel)
        x5, y5 = _to5d(x[a:b]), _to5d(y[a:b])
        _parallel(lambda g0, g1: kern(x5, wt, lay.ph, lay.off, y5, *args, g.kg, g.cg, g0, g1), g.groups)
    return y


def conv_backward_data(dy: np.ndarray, w: np.ndarray, g: Any,
                       cancel: Optional[threading.Event] = None) -> np.ndarray:
    """dx of the underlying convolution ``g``."""
    dy = np.ascontiguousarray(dy)
    dx = np.empty((g.n, g.cu) + g.in_sp, dtype=dy.dtype)
    plan = _dw_plan(g)
    if plan is not None:
        kern = _get_kernels()["dw_bwd"]
        w2 = np.ascontiguousarray(w.reshape(g.cu, g.taps)[:, plan.order])
        mask = plan.masks(dy.dtype)[1]
        finite: list[bool] = []
        for a, b in _batch_chunks(g.n, dy[0].nbytes):
            _check(cancel)
            dy5, dx5 = _to5d(dy[a:b]), _to5d(dx[a:b])
            _dw_parallel(lambda i0, i1: finite.append(kern(dy5, w2, mask, plan.bwd_off, plan.tstart, plan.ridx,
                                                           dx5, plan.cb, plan.nph, i0, i1)),
                         plan.blocks * (b - a), dy5.size + dx5.size)
        if all(finite):
            return dx
    kern = _get_kernels()["conv_bwd"]
    lay = _PhaseLayout(g)
    args = _geometry_args(g, lay)
    wt = _taps_weights(w, g)
    for a, b in _batch_chunks(g.n, dy[0].nbytes):
        _check(cancel)
        dy5, dx5 = _to5d(dy[a:b]), _to5d(dx[a:b])
        _parallel(lambda g0, g1: kern(dy5, wt, lay.ph, lay.off, dx5, *args, g.kg, g.cg, g0, g1), g.groups)
    return dx


def conv_backward_weights(x: np.ndarray, dy: np.ndarray, g: Any,
                          cancel: Optional[threading.Event] = None) -> np.ndarray:
    """dw of the underlying convolution ``g``; per-image sums in the input type, images in float64."""
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy)
    plan = _dw_plan(g)
    if plan is not None:
        dw = _dw_wrw(x, dy, g, plan, cancel)
        if np.isfinite(dw).all():   # else an inf/NaN input may have spread: see _py_dw_finite
            return dw
    kern = _get_kernels()["conv_wrw"]
    lay = _PhaseLayout(g)
    args = _geometry_args(g, lay)
    total = np.zeros((g.ku, g.cg, g.taps), dtype=np.float64)
    part = np.empty_like(total)
    for a, b in _batch_chunks(g.n, x[0].nbytes):
        _check(cancel)
        x5, dy5 = _to5d(x[a:b]), _to5d(dy[a:b])
        _parallel(lambda g0, g1: kern(x5, dy5, lay.ph, lay.off, part, *args, g.kg, g.cg, g0, g1), g.groups)
        total += part
    return total.reshape((g.ku, g.cg) + g.filt).astype(x.dtype)


def _dw_wrw(x: np.ndarray, dy: np.ndarray, g: Any, plan: _DwPlan,
            cancel: Optional[threading.Event]) -> np.ndarray:
    """Depthwise weight gradient: every thread sums its items into its own float64
    (C, taps) array (no two threads write one element); the parts are added."""
    kern = _get_kernels()["dw_wrw"]
    mask = plan.masks(x.dtype)[0]
    total = np.zeros((g.cu, g.taps), dtype=np.float64)
    parts: list[np.ndarray] = []

    def run(i0: int, i1: int) -> None:
        acc = np.zeros((g.cu, g.taps), dtype=np.float64)
        kern(x5, dy5, mask, plan.fwd_off, plan.gidx, acc, plan.cb, plan.nph, plan.margin, i0, i1)
        parts.append(acc)   # list.append is atomic

    for a, b in _batch_chunks(g.n, x[0].nbytes):
        _check(cancel)
        x5, dy5 = _to5d(x[a:b]), _to5d(dy[a:b])
        _dw_parallel(run, plan.blocks * (b - a), x5.size + dy5.size)
        for p in parts:
            total += p
        parts.clear()
    return total.reshape((g.ku, g.cg) + g.filt).astype(x.dtype)


# ----------------------------------------------------------------------------- pooling wrappers

_POOL_MODES = {"max": 0, "avg": 1, "avg_in": 2}


def _pool_args(window: tuple[int, ...], strides: tuple[int, ...], pads: tuple[int, ...]) -> tuple[int, ...]:
    if len(window) == 2:
        window, strides, pads = (1,) + window, (1,) + strides, (0,) + pads
    return tuple(window) + tuple(strides) + tuple(pads)


def pool_forward(x: np.ndarray, mode: str, window: tuple[int, ...], strides: tuple[int, ...],
                 pads: tuple[int, ...], out_sp: tuple[int, ...],
                 cancel: Optional[threading.Event] = None) -> tuple[np.ndarray, np.ndarray]:
    """Pooling forward: (y, argmax) where argmax is the flat spatial index of each
    window's first maximum (-1 for a window wholly in the padding; max mode only)."""
    kern = _get_kernels()["pool_fwd"]
    args = _pool_args(window, strides, pads)
    n, c = x.shape[:2]
    y = np.empty((n, c) + tuple(out_sp), dtype=x.dtype)
    idx = np.full((n, c) + tuple(out_sp), -1, dtype=np.int64)
    xc = np.ascontiguousarray(x)
    for a, b in _batch_chunks(n, xc[0].nbytes):
        _check(cancel)
        x5, y5, i5 = _to5d(xc[a:b]), _to5d(y[a:b]), _to5d(idx[a:b])
        _parallel(lambda c0, c1: kern(x5, y5, i5, _POOL_MODES[mode], *args, c0, c1), c)
    return y, idx


def pool_backward(dy: np.ndarray, idx: Optional[np.ndarray], in_shape: tuple[int, ...], mode: str,
                  window: tuple[int, ...], strides: tuple[int, ...], pads: tuple[int, ...],
                  cancel: Optional[threading.Event] = None) -> np.ndarray:
    """Pooling backward: dx from dy (and the forward argmax for max pooling; None for average)."""
    kern = _get_kernels()["pool_bwd"]
    args = _pool_args(window, strides, pads)
    dx = np.zeros(tuple(in_shape), dtype=dy.dtype)
    dyc = np.ascontiguousarray(dy)
    if idx is None:   # average pooling reads no argmax; any int64 array of dy's shape types it
        idx = np.empty((dy.shape[0], 1) + (1,) * (dy.ndim - 2), dtype=np.int64)
    n, c = dx.shape[:2]
    for a, b in _batch_chunks(n, dx[0].nbytes):
        _check(cancel)
        d5, i5, x5 = _to5d(dyc[a:b]), _to5d(idx[a:b]), _to5d(dx[a:b])
        _parallel(lambda c0, c1: kern(d5, i5, x5, _POOL_MODES[mode], *args, c0, c1), c)
    return dx


# ----------------------------------------------------------------------------- warm-up

_compiled: set[tuple[str, str]] = set()


def _kernel_of(problem: Any) -> str:
    """Which kernel (of the underlying convolution) a conv problem's direction runs."""
    if problem.direction == "wrw":
        return "wrw"
    return "bwd" if (problem.direction == "fwd") == (problem.mode == "trans") else "fwd"


def _tiny_conv(dtype: np.dtype, kernel: str, depthwise: bool) -> dict[str, Callable[[], Any]]:
    """A tiny run of the one conv kernel a problem uses: the plane-stacked depthwise
    kernels or the phase-plane ones (each compiles once per dtype: 1.5-2.5 s)."""
    from miotui.execute.reference import ConvGeometry
    c = 2 if depthwise else 4
    g = ConvGeometry(1, c, c, 2, (3, 3), (3, 3), (3, 3), (1, 1), (1, 1), (1, 1))
    x = np.zeros((1, c, 3, 3), dtype)
    w = np.zeros((c, c // 2, 3, 3), dtype)
    run = {"fwd": lambda: conv_forward(x, w, g), "bwd": lambda: conv_backward_data(x, w, g),
           "wrw": lambda: conv_backward_weights(x, x, g)}[kernel]
    return {("dw_" if depthwise else "conv_") + kernel: run}


def _tiny_pool(dtype: np.dtype) -> dict[str, Callable[[], Any]]:
    x = np.zeros((1, 1, 3, 3), dtype)

    def both() -> None:
        y, idx = pool_forward(x, "max", (2, 2), (1, 1), (0, 0), (2, 2))
        pool_backward(y, idx, x.shape, "max", (2, 2), (1, 1), (0, 0))

    return {"pool_fwd+bwd": both}


def warmup(problem: Any, precisions: tuple[str, ...] = ("fp32", "fp64")) -> float:
    """Import numba and compile (or load from cache) the kernels ``problem`` would use,
    for each compute precision; returns the seconds spent (0.0 when nothing was left to
    compile or numba does not apply).  Call it before timing a run."""
    from miotui.execute.reference import compute_dtype, conv_geometry
    from miotui.problems import ConvProblem, PoolProblem
    if available() is not None:
        return 0.0
    maker: Callable[[np.dtype], dict[str, Callable[[], Any]]]
    if isinstance(problem, ConvProblem):
        g, kernel = conv_geometry(problem), _kernel_of(problem)
        if not conv_applies(g, kernel):
            return 0.0
        maker = functools.partial(_tiny_conv, kernel=kernel, depthwise=_dw_shape_ok(g))
    elif isinstance(problem, PoolProblem):
        maker = _tiny_pool
    else:
        return 0.0
    start = time.perf_counter()
    try:
        _get_kernels()
    except RuntimeError:
        return 0.0
    for precision in precisions:
        dt = compute_dtype(problem, precision)
        for name, run in maker(dt).items():
            if (name, dt.name) not in _compiled:
                run()
                _compiled.add((name, dt.name))
    return time.perf_counter() - start

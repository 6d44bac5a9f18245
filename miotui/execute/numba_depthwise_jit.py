"""numba's plane-stacked depthwise kernels (C/G = 1, K/G = 1), jitted on import.

Imported only by :mod:`miotui.execute.numba_kernels`, when numba is installed and a run
needs it (see :mod:`miotui.execute.numba_conv_jit`).  The plans these kernels read
(offsets, masks, gather indices) are built by :mod:`miotui.execute.numba_plans`.
"""

from __future__ import annotations

import numba
import numpy as np

#: nogil: the wrappers split the work over threads; cache: machine code kept on disk
#: (``__pycache__`` next to this file, or numba's user cache dir when that is read-only).
jit = numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract", "nsz"}, boundscheck=False,
                 error_model="numpy")


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

@jit
def dw_tiles(w2, c0, cn, mask, tile, plane):
    """tile[t, c*plane + p] = w2[c0 + c, t] * mask[t, p] for the block's channels."""
    for t in range(tile.shape[0]):
        m = mask[t]
        row = tile[t]
        for c in range(cn):
            wv = w2[c0 + c, t]
            seg = row[c * plane:(c + 1) * plane]
            for p in range(plane):
                seg[p] = wv * m[p]


@jit
def dw_apply(y, tile, t0, t1, src, sbase, off):
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
    dw_edge(y, tile, t0, t1, src, sbase, off, 0, lo)
    dw_edge(y, tile, t0, t1, src, sbase, off, hi, length)


@jit
def dw_apply2(ya, yb, tile, t0, t1, srca, sa, srcb, sb, off):
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
        dw_apply(ya, tile, t0, t1, srca, sa, off)
        dw_apply(yb, tile, t0, t1, srcb, sb, off)
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


@jit
def dw_edge(y, tile, t0, t1, src, sbase, off, a, b):
    """_py_dw_apply for outputs a <= i < b, checking every read against src's bounds."""
    for i in range(a, b):
        acc = 0.0   # a few edge values: summed in float64
        for t in range(t0, t1):
            q = sbase + i + off[t]
            if 0 <= q < src.shape[0]:
                acc += tile[t, i] * src[q]
        y[i] = acc


@jit
def dw_finite(v):
    """Whether every value of v is finite.  A masked read still multiplies a 0 weight by
    the value it lands on, so an inf or NaN input spreads NaN to outputs that do not
    depend on it; the wrappers then rerun the layer on the zero-padding kernels."""
    z = 0.0
    for i in range(v.shape[0]):
        z += v[i] * 0.0
    return z == 0.0


@jit
def dw_split(xf, xbase, cn, xq, qbase, cb, plane, nph, gidx):
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


@jit
def dw_merge(dxq, dxf, dbase, length, ridx):
    """The inverse of _py_dw_split: dxf[dbase + v] = dxq[ridx[v]] for the block's
    ``length`` input positions (every input position lies in exactly one phase)."""
    dst = dxf[dbase:dbase + length]
    for v in range(length):
        dst[v] = dxq[ridx[v]]


@jit
def dw_fwd(x, w2, mask, off, gidx, y, cb, nph, margin, i0, i1):
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
            dw_tiles(w2, c0, cn, mask, tile, plane)
            cur = blk
        pair = it + 1 < i1 and n + 1 < n_img
        base = (n * n_c + c0) * plane
        base2 = base + n_c * plane
        sa, sb = base, base2
        if nph > 1:
            dw_split(xf, (n * n_c + c0) * vol, cn, srca, margin, cb, plane, nph, gidx)
            if pair:
                dw_split(xf, ((n + 1) * n_c + c0) * vol, cn, srcb, margin, cb, plane, nph, gidx)
            sa, sb = margin, margin
        length = cn * plane
        if pair:
            dw_apply2(yf[base:base + length], yf[base2:base2 + length], tile, 0, ntaps, srca, sa, srcb, sb, off)
            finite = dw_finite(yf[base2:base2 + length]) and finite
        else:
            dw_apply(yf[base:base + length], tile, 0, ntaps, srca, sa, off)
        finite = dw_finite(yf[base:base + length]) and finite
        it += 2 if pair else 1
    return finite


@jit
def dw_bwd(dy, w2, mask, off, tstart, ridx, dx, cb, nph, i0, i1):
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
            dw_tiles(w2, c0, cn, mask, tile, plane)
            cur = blk
        pair = it + 1 < i1 and n + 1 < n_img
        base = (n * n_c + c0) * plane
        base2 = base + n_c * plane
        length = cn * plane
        if nph == 1:
            if pair:
                dw_apply2(dxf[base:base + length], dxf[base2:base2 + length], tile, 0, ntaps,
                           dyf, base, dyf, base2, off)
            else:
                dw_apply(dxf[base:base + length], tile, 0, ntaps, dyf, base, off)
        else:
            for p in range(nph):
                qa = dxqa[p * cb * plane:p * cb * plane + length]
                if pair:
                    qb = dxqb[p * cb * plane:p * cb * plane + length]
                    dw_apply2(qa, qb, tile, tstart[p], tstart[p + 1], dyf, base, dyf, base2, off)
                else:
                    dw_apply(qa, tile, tstart[p], tstart[p + 1], dyf, base, off)
            dw_merge(dxqa, dxf, (n * n_c + c0) * vol, cn * vol, ridx)
            if pair:
                dw_merge(dxqb, dxf, ((n + 1) * n_c + c0) * vol, cn * vol, ridx)
        finite = dw_finite(dxf[(n * n_c + c0) * vol:(n * n_c + c0 + cn) * vol]) and finite
        if pair:
            finite = dw_finite(dxf[((n + 1) * n_c + c0) * vol:((n + 1) * n_c + c0 + cn) * vol]) and finite
        it += 2 if pair else 1
    return finite


@jit
def dw_acc(acc, d, src, sbase, off, length):
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


@jit
def dw_wrw(x, dy, mask, off, gidx, acc64, cb, nph, margin, i0, i1):
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
            dw_split(xf, (n * n_c + c0) * vol, cn, srca, margin, cb, plane, nph, gidx)
            if pair:
                dw_split(xf, ((n + 1) * n_c + c0) * vol, cn, srcb, margin, cb, plane, nph, gidx)
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
            dw_acc(acc, da, srca, sa, off, length)
            if pair:
                dw_acc(acc, dyf[base2:base2 + length], srcb, sb, off, length)
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

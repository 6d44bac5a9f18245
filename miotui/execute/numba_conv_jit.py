"""numba's phase-plane kernels for grouped convolutions (C/G <= 8), jitted on import.

Only :mod:`miotui.execute.numba_kernels` imports this module, and only when numba is
installed and a run needs it: importing it imports numba (0.2-0.3 s); each kernel
compiles on its first call (or loads from numba's on-disk cache).  Arrays are 3-D
(N, C, D, H, W); 2-D problems get a depth axis of 1.
"""

from __future__ import annotations

import numba
import numpy as np

#: nogil: the wrappers split the work over threads; cache: machine code kept on disk
#: (``__pycache__`` next to this file, or numba's user cache dir when that is read-only).
jit = numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract", "nsz"}, boundscheck=False,
                 error_model="numpy")


# Layout of the conv kernels ("phase planes").
#
# A row-by-row loop vectorises badly: LLVM's vector body is 64 floats wide (4 x 16
# lanes), so rows of 7-56 outputs run almost entirely in the scalar remainder.  The
# kernels therefore run every filter tap over a whole flattened output plane:
#
# * the padded input is split into stride phases, plane (a, b, c) holding
#   xp[a + i*sd, b + j*sh, c + q*sw]; in its phase plane a strided tap is a unit-stride
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

@jit
def fill_phases(x, n, c, xq, sd, sh, sw, pd, ph_, pw, dq, hq, wq):
    """Phase planes of image n, channel c, padding included: xq (phases, dq*hq*wq)."""
    d_in, h_in, w_in = x.shape[2], x.shape[3], x.shape[4]
    for a in range(sd):
        for b in range(sh):
            for cc in range(sw):
                p = (a * sh + b) * sw + cc
                plane = xq[p]
                # valid q range: 0 <= cc + q*sw - pw < w_in
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
                            for q in range(wq):
                                row[q] = 0.0
                            continue
                        for q in range(lo):
                            row[q] = 0.0
                        for q in range(hi, wq):
                            row[q] = 0.0
                        start = cc + lo * sw - pw
                        if sw == 1:
                            src = x[n, c, d, h, start:start + (hi - lo)]
                            dst = row[lo:hi]
                            for q in range(hi - lo):
                                dst[q] = src[q]
                        elif sw == 2:   # constant stride: LLVM vectorises the deinterleave
                            src = x[n, c, d, h, start:start + 2 * (hi - lo) - 1]
                            dst = row[lo:hi]
                            for q in range(hi - lo):
                                dst[q] = src[2 * q]
                        else:
                            src = x[n, c, d, h, start:start + (hi - lo - 1) * sw + 1:sw]
                            dst = row[lo:hi]
                            for q in range(hi - lo):
                                dst[q] = src[q]


@jit
def conv_fwd(x, wt, ph, off, y, sd, sh, sw, pd, ph_, pw, dq, hq, wq, kg, cg, g0, g1):
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
                fill_phases(x, n, g * cg + ci, xq[ci], sd, sh, sw, pd, ph_, pw, dq, hq, wq)
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


@jit
def conv_bwd(dy, wt, ph, off, dx, sd, sh, sw, pd, ph_, pw, dq, hq, wq, kg, cg, g0, g1):
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
                            q = px // sw
                            if q < wq:
                                row[w] = dxq[(a * sh + b) * sw + cc, (i * hq + jj) * wq + q]
                            else:
                                row[w] = 0.0


@jit
def conv_wrw(x, dy, ph, off, dwt, sd, sh, sw, pd, ph_, pw, dq, hq, wq, kg, cg, g0, g1):
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
                fill_phases(x, n, g * cg + ci, xq[ci], sd, sh, sw, pd, ph_, pw, dq, hq, wq)
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

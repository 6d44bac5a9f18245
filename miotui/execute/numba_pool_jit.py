"""numba's pooling kernels (max with the first maximum's index, average), jitted on import.

Pooling compares values, so these keep IEEE semantics (no fastmath).  Imported only by
:mod:`miotui.execute.numba_kernels` (see :mod:`miotui.execute.numba_conv_jit`).
"""

from __future__ import annotations

import numba
import numpy as np

exact = numba.njit(nogil=True, cache=True, boundscheck=False)


@exact
def pool_fwd(x, y, idx, mode, kd, kh, kw, sd, sh, sw, pd, ph, pw, c0, c1):
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


@exact
def pool_bwd(dy, idx, dx, mode, kd, kh, kw, sd, sh, sw, pd, ph, pw, c0, c1):
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

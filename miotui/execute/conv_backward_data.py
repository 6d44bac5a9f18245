"""Convolution backward data: one GEMM ``W^T . dy`` into columns, then col2im.

col2im is one strided add per filter tap into a padded dx, then a crop: never the
"flipped convolution of a zero-inserted dy" form, which costs stride**2 more memory and
time.  At stride 1 there is nothing to zero-insert, and the flipped convolution (a
forward pass, see :func:`miotui.execute.conv_geometry.flipped_geometry`) is faster.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from miotui.execute.conv_forward import conv_forward, weights_gemm
from miotui.execute.conv_geometry import ConvGeometry, ConvPlan, conv_plan, flipped_geometry
from miotui.execute.threads import CancelFlag, check_cancel, run_parallel, workspace


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

    run_parallel(work, dcols.shape[0], dcols.nbytes)


def _flip_weights(w: np.ndarray, g: ConvGeometry) -> np.ndarray:
    """(Ku, Cg, *f) -> (Cu, Kg, *f) with every spatial axis reversed, per group."""
    nd = g.nd
    wg = w.reshape((g.groups, g.kg, g.cg) + g.filt)
    flip = (slice(None),) * 3 + (slice(None, None, -1),) * nd
    out = wg[flip].swapaxes(1, 2)
    return np.ascontiguousarray(out).reshape((g.cu, g.kg) + g.filt)


def conv_backward_data(dy: np.ndarray, w: np.ndarray, g: ConvGeometry, plan: ConvPlan,
                        cancel: Optional[CancelFlag], out: Optional[np.ndarray] = None) -> np.ndarray:
    """dx of the underlying convolution; dy (N, Ku, *out), w (Ku, Cg, *f)."""
    dt = dy.dtype
    flipped = flipped_geometry(g)
    if flipped is not None:
        fplan = conv_plan(flipped, dt.itemsize, plan.budget)
        return conv_forward(dy, _flip_weights(w, g), flipped, fplan, cancel, out)
    wt = weights_gemm(w, g).transpose(0, 2, 1)  # (G, Q, Kg), BLAS takes the transpose
    P = g.out_elems
    rest = P // g.out_sp[0]
    dx = out if out is not None else np.empty((g.n, g.cu) + g.in_sp, dtype=dt)
    crop = (slice(None), slice(None)) + tuple(slice(p, p + i) for p, i in zip(g.pad_before, g.in_sp, strict=True))
    for n0 in range(0, g.n, plan.images):
        n1 = min(n0 + plan.images, g.n)
        n = n1 - n0
        if g.is_pointwise:
            check_cancel(cancel)
            dys = dy[n0:n1].reshape(n, g.groups, g.kg, P)
            if plan.batched:
                np.matmul(wt, dys, out=dx[n0:n1].reshape(n, g.groups, g.cg, P))
            else:
                dyt = workspace.get("dyt", (g.groups, g.kg, n, P), dt)
                dyt[...] = dys.transpose(1, 2, 0, 3)
                res = workspace.get("gemm", (g.groups, g.cg, n * P), dt)
                np.matmul(wt, dyt.reshape(g.groups, g.kg, n * P), out=res)
                dx[n0:n1].reshape(n, g.cu, P)[...] = res.reshape(g.cu, n, P).transpose(1, 0, 2)
            continue
        dxp = workspace.get("dxp", (n, g.cu) + g.padded, dt, zero=True)
        for h0 in range(0, g.out_sp[0], plan.rows):
            check_cancel(cancel)
            h1 = min(h0 + plan.rows, g.out_sp[0])
            ps = (h1 - h0) * rest
            dys = dy[n0:n1, :, h0:h1]
            if plan.batched:
                dcols = workspace.get("cols", (n, g.groups, g.q, ps), dt)
                np.matmul(wt, dys.reshape(n, g.groups, g.kg, ps), out=dcols)
                dcols = dcols.reshape((n, g.cu) + g.filt + (h1 - h0,) + g.out_sp[1:])
            else:
                dyt = workspace.get("dyt", (g.ku, n, h1 - h0) + g.out_sp[1:], dt)
                dyt[...] = dys.swapaxes(0, 1)
                dcols = workspace.get("cols", (g.groups, g.q, n * ps), dt)
                np.matmul(wt, dyt.reshape(g.groups, g.kg, n * ps), out=dcols)
                dcols = dcols.reshape((g.cu,) + g.filt + (n, h1 - h0) + g.out_sp[1:])
            _col2im(dcols, dxp, g, h0, h1, plan.batched)
        if g.needs_pad:
            dx[n0:n1] = dxp[crop]
        else:
            dx[n0:n1] = dxp
    return dx

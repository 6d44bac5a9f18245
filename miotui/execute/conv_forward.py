"""Convolution forward: im2col + one GEMM per group, written so the cost is the GEMM.

Pad, ``sliding_window_view``, slice for stride and dilation, one copy of the window
view into the column buffer (split over threads: numpy releases the GIL), one GEMM per
group.  The column buffer is laid out either per image ``(n, C*R*S, Ho*Wo)`` so the
batched GEMM writes NCHW directly, or as ``(C*R*S, n*Ho*Wo)`` (one long GEMM, then one
small transposing copy of the output) when the spatial size is small and per-image
GEMMs would be too thin to run fast (below 28x28; below 12x12 for 1x1 filters, whose
per-image GEMM is the whole layer).  A 1x1, stride-1, pad-0 convolution needs no
columns at all.  With many filter taps per stride step along the row (a 7x7 stride-2
stem), the padded rows are first split into their stride phases so that every tap
copies contiguous runs.  The gather pieces are shared with the weight gradient.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from miotui.execute import threads
from miotui.execute.conv_geometry import ConvGeometry, ConvPlan, uses_phases
from miotui.execute.threads import CancelFlag, check_cancel, run_parallel, workspace


def pad_images(x: np.ndarray, g: ConvGeometry) -> np.ndarray:
    """Zero-pad (or crop) images to ``g.padded`` in a scratch buffer; no copy when nothing changes."""
    if not g.needs_pad:
        return x
    buf = workspace.get("xp", x.shape[:2] + g.padded, x.dtype)
    inner = tuple(slice(p, p + i) for p, i in zip(g.pad_before, g.in_sp, strict=True))
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

    run_parallel(copy, x.shape[0], x.nbytes)
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


def _phase_planes(xp: np.ndarray, g: ConvGeometry) -> np.ndarray:
    """(sw, n, C, *padded[:-1], ceil(Wp/sw)): plane k holds columns k, k+sw, k+2sw, ...

    Only the phases a filter tap reads are filled; entries past a phase's last column
    are never read (every tap of every output column lies inside ``needed``).
    """
    sw, d, wp = g.strides[-1], g.dils[-1], xp.shape[-1]
    wq = -(-wp // sw)
    xq = workspace.get("xq", (sw,) + xp.shape[:-1] + (wq,), xp.dtype)
    phases = sorted({(t * d) % sw for t in range(g.filt[-1])})

    def copy(a: int, b: int) -> None:
        for k in phases:
            cnt = len(range(k, wp, sw))
            xq[k, a:b, ..., :cnt] = xp[a:b, ..., k::sw]

    run_parallel(copy, xp.shape[0], xp.nbytes)
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


def gather(xp: np.ndarray, g: ConvGeometry, h0: int, h1: int, batched: bool) -> np.ndarray:
    """Copy the im2col view into a contiguous column buffer (threads split the copy).

    batched: (n, C, *filter, *out_rows) -> reshapes to (n, G, Q, P);
    otherwise (C, *filter, n, *out_rows) -> reshapes to (G, Q, n*P).
    """
    nd = g.nd
    to_unbatched = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
    if uses_phases(g):
        xq = _phase_planes(xp, g)
        rows = (h1 - h0,) + g.out_sp[1:]
        shape = (xp.shape[0], xp.shape[1]) + g.filt + rows
        if not batched:
            shape = tuple(shape[i] for i in to_unbatched)
        cols = workspace.get("cols", shape, xp.dtype)
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
        cols = workspace.get("cols", view.shape, xp.dtype)
        pairs = [(cols, view)]
    axis = 0 if cols.shape[0] >= cols.shape[1] or cols.shape[0] >= threads.THREADS else 1

    def copy(a: int, b: int) -> None:
        idx = (slice(a, b),) if axis == 0 else (slice(None), slice(a, b))
        for dest, src in pairs:
            dest[idx] = src[idx]

    run_parallel(copy, cols.shape[axis], cols.nbytes)
    return cols


def weights_gemm(w: np.ndarray, g: ConvGeometry) -> np.ndarray:
    """(Ku, Cg, *filter) -> (G, Kg, Q) view."""
    return w.reshape(g.groups, g.kg, g.q)


def conv_forward(x: np.ndarray, w: np.ndarray, g: ConvGeometry, plan: ConvPlan,
                  cancel: Optional[CancelFlag], out: Optional[np.ndarray] = None) -> np.ndarray:
    """y = conv(x, w) on the underlying geometry; x (N, Cu, *in), w (Ku, Cg, *f).
    ``out``: a C-contiguous array to write y into (the batch split's slices)."""
    dt = x.dtype
    y = out if out is not None else np.empty((g.n, g.ku) + g.out_sp, dtype=dt)
    wg = weights_gemm(w, g)
    P = g.out_elems
    rest = P // g.out_sp[0]
    for n0, n1, h0, h1 in plan.chunks(g):
        check_cancel(cancel)
        n = n1 - n0
        ps = (h1 - h0) * rest
        whole = h0 == 0 and h1 == g.out_sp[0]
        if g.is_pointwise:
            xs = x[n0:n1].reshape(n, g.groups, g.cg, P)
            if not plan.batched:
                cols = workspace.get("cols", (g.groups, g.cg, n, P), dt)
                cols[...] = xs.transpose(1, 2, 0, 3)
        else:
            xp = pad_images(x[n0:n1], g)
            cols = gather(xp, g, h0, h1, plan.batched)
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
            res = workspace.get("gemm", (g.groups, g.kg, n * ps), dt)
            np.matmul(wg, cols.reshape(g.groups, -1, n * ps), out=res)
            y[n0:n1, :, h0:h1] = res.reshape((g.ku, n, h1 - h0) + g.out_sp[1:]).swapaxes(0, 1)
    return y

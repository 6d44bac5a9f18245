"""Convolution backward weights: one GEMM per group over the ``(C*R*S, n*Ho*Wo)`` layout.

The reduction over the batch and the image happens inside BLAS, which measured at least
as fast as per-image GEMMs summed, and much faster when K/G > Ho*Wo.  1x1 filters (any
stride) with Ho*Wo >= 128 are the exception: one GEMM per image straight from dy and
the (subsampled) x, with no transposing copies.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from miotui.execute import conv_geometry as geometry
from miotui.execute.conv_forward import gather, pad_images
from miotui.execute.conv_geometry import ConvGeometry, ConvPlan
from miotui.execute.threads import CancelFlag, check_cancel, workspace


def conv_backward_weights(x: np.ndarray, dy: np.ndarray, g: ConvGeometry, plan: ConvPlan,
                           cancel: Optional[CancelFlag]) -> np.ndarray:
    """dw of the underlying convolution: one GEMM per group over (Q, n*Ho*Wo) per chunk,
    so BLAS does the reduction over images and pixels (fast even when K/G > Ho*Wo)."""
    dt = x.dtype
    dw = np.zeros((g.groups, g.kg, g.q), dtype=dt)
    P = g.out_elems
    rest = P // g.out_sp[0]
    if all(f == 1 for f in g.filt) and P >= geometry.BATCHED_MIN_SPATIAL_1X1 and plan.rows == g.out_sp[0]:
        # 1x1 filter: x (after the stride's subsample, if any) is the column matrix, so
        # one GEMM per image straight from dy and x (no transposing copies) beat the
        # one-long-GEMM layout once Ho*Wo >= 128 (ResNet-50's stride-2 1x1 layers:
        # 135 -> 170 GFLOP/s at 28x28).
        tmp = np.empty_like(dw)
        for n0, n1, _, _ in plan.chunks(g):
            check_cancel(cancel)
            if g.is_pointwise:
                xs = x[n0:n1].reshape(n1 - n0, g.groups, g.cg, P)
            else:
                xp = pad_images(x[n0:n1], g)
                xs = gather(xp, g, 0, g.out_sp[0], batched=True).reshape(n1 - n0, g.groups, g.cg, P)
                del xp
            for i in range(n0, n1):
                if i > n0 and (i - n0) % 4 == 0:
                    check_cancel(cancel)
                np.matmul(dy[i].reshape(g.groups, g.kg, P), xs[i - n0].transpose(0, 2, 1), out=tmp if i else dw)
                if i:
                    dw += tmp
        return dw.reshape((g.ku, g.cg) + g.filt)
    part = np.empty_like(dw) if len(plan.chunks(g)) > 1 else None
    for n0, n1, h0, h1 in plan.chunks(g):
        check_cancel(cancel)
        n = n1 - n0
        ps = (h1 - h0) * rest
        if g.is_pointwise:
            cols = workspace.get("cols", (g.cu, n, h1 - h0) + g.out_sp[1:], dt)
            cols[...] = x[n0:n1, :, h0:h1].swapaxes(0, 1)
        else:
            xp = pad_images(x[n0:n1], g)
            cols = gather(xp, g, h0, h1, batched=False)
            del xp
        cols = cols.reshape(g.groups, g.q, n * ps)
        dyt = workspace.get("dyt", (g.ku, n, h1 - h0) + g.out_sp[1:], dt)
        dyt[...] = dy[n0:n1, :, h0:h1].swapaxes(0, 1)
        dyt = dyt.reshape(g.groups, g.kg, n * ps)
        if part is None:
            np.matmul(dyt, cols.transpose(0, 2, 1), out=dw)
        else:
            np.matmul(dyt, cols.transpose(0, 2, 1), out=part)
            dw += part
    return dw.reshape((g.ku, g.cg) + g.filt)

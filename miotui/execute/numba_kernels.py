"""Direct numba kernels for the layers im2col + BLAS handles badly.

Depthwise and small-group convolutions (C/G <= 8, G > 1) and pooling are memory- and
overhead-bound: numpy's im2col runs them at 3-5x torch's time, because every tiny
per-group GEMM pays call overhead and the column copy moves filter-size times the data.

The convolution kernels work one (image, group) at a time on "phase planes" (see the
notes above ``_py_conv_fwd``): the group's padded input planes are built in a small
per-thread scratch, split into stride phases so every filter tap is a unit-stride
read, and each tap then runs as one long contiguous loop over the whole flattened
output plane, which LLVM vectorises (a loop per output row would spend most of its
time in the scalar remainder: LLVM's vector body is 64 floats wide).  Measured on two
Zen 5 cores against torch 2.13 (oneDNN): at par or faster on 56x56-112x112 planes,
3-10x slower on 7x7-28x28 planes and stride-2 layers, where per-plane overhead
dominates and only vectorising across channels (which numba cannot express without
its loads and stores being treated as possibly aliased) would help.

* numba is optional: this module imports without it, :func:`available` says why it
  cannot be used, and :mod:`miotui.execute.reference` falls back to numpy.
* ``import numba`` (0.2-0.3 s) and compilation (several seconds for all kernels and
  both dtypes) happen on first use; :func:`warmup` does both ahead of a timed run and
  returns the seconds it took, so a backend reports JIT time apart from run time.
  ``cache=True`` keeps the machine code on disk (``__pycache__`` next to this file, or
  numba's user cache dir when that is read-only), so a later process loads it in <1 s.
* Every kernel is ``nogil=True``: work is split over threads by group or channel range
  (no two threads write the same element), and a worker thread never freezes the UI.

Arrays are 3-D (N, C, D, H, W) inside the kernels; 2-D problems get a depth axis of 1
(filter 1, stride 1, pad 0), which halves the number of kernels to compile.
"""

from __future__ import annotations

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
        _kernels = {
            "conv_fwd": jit(_py_conv_fwd),
            "conv_bwd": jit(_py_conv_bwd),
            "conv_wrw": jit(_py_conv_wrw),
            # pooling compares values: keep IEEE semantics (no fastmath)
            "pool_fwd": numba.njit(nogil=True, cache=True, boundscheck=False)(_py_pool_fwd),
            "pool_bwd": numba.njit(nogil=True, cache=True, boundscheck=False)(_py_pool_bwd),
        }
        return _kernels


# ----------------------------------------------------------------------------- conv wrappers

def conv_applies(g: Any, kernel: Optional[str] = None) -> bool:
    """Whether the direct kernels beat im2col for this geometry (depthwise/small groups).

    ``kernel`` ("fwd", "bwd" data, "wrw") of the underlying convolution: with a stride
    above 1 and an output plane under 56x56, the forward and weight kernels measured
    slower than numpy (their phase planes are tiny; e.g. 576 channels 14x14 stride 2:
    5.2 ms vs 2.1 ms), so numpy keeps those; backward data stays faster in numba.
    """
    if not (g.groups > 1 and g.cg <= MAX_GROUP_CHANNELS):
        return False
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


def conv_forward(x: np.ndarray, w: np.ndarray, g: Any, cancel: Optional[threading.Event] = None) -> np.ndarray:
    """y of the underlying convolution ``g`` (see reference.ConvGeometry)."""
    kern = _get_kernels()["conv_fwd"]
    lay = _PhaseLayout(g)
    args = _geometry_args(g, lay)
    wt = _taps_weights(w, g)
    x = np.ascontiguousarray(x)
    y = np.empty((g.n, g.ku) + g.out_sp, dtype=x.dtype)
    for a, b in _batch_chunks(g.n, x[0].nbytes):
        _check(cancel)
        x5, y5 = _to5d(x[a:b]), _to5d(y[a:b])
        _parallel(lambda g0, g1: kern(x5, wt, lay.ph, lay.off, y5, *args, g.kg, g.cg, g0, g1), g.groups)
    return y


def conv_backward_data(dy: np.ndarray, w: np.ndarray, g: Any,
                       cancel: Optional[threading.Event] = None) -> np.ndarray:
    """dx of the underlying convolution ``g``: scatter-adds into phase planes, merged into dx."""
    kern = _get_kernels()["conv_bwd"]
    lay = _PhaseLayout(g)
    args = _geometry_args(g, lay)
    wt = _taps_weights(w, g)
    dy = np.ascontiguousarray(dy)
    dx = np.empty((g.n, g.cu) + g.in_sp, dtype=dy.dtype)
    for a, b in _batch_chunks(g.n, dy[0].nbytes):
        _check(cancel)
        dy5, dx5 = _to5d(dy[a:b]), _to5d(dx[a:b])
        _parallel(lambda g0, g1: kern(dy5, wt, lay.ph, lay.off, dx5, *args, g.kg, g.cg, g0, g1), g.groups)
    return dx


def conv_backward_weights(x: np.ndarray, dy: np.ndarray, g: Any,
                          cancel: Optional[threading.Event] = None) -> np.ndarray:
    """dw of the underlying convolution ``g``; per-image sums in the input type, images in float64."""
    kern = _get_kernels()["conv_wrw"]
    lay = _PhaseLayout(g)
    args = _geometry_args(g, lay)
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy)
    total = np.zeros((g.ku, g.cg, g.taps), dtype=np.float64)
    part = np.empty_like(total)
    for a, b in _batch_chunks(g.n, x[0].nbytes):
        _check(cancel)
        x5, dy5 = _to5d(x[a:b]), _to5d(dy[a:b])
        _parallel(lambda g0, g1: kern(x5, dy5, lay.ph, lay.off, part, *args, g.kg, g.cg, g0, g1), g.groups)
        total += part
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


def _tiny_conv(dtype: np.dtype) -> dict[str, Callable[[], Any]]:
    from miotui.execute.reference import ConvGeometry
    g = ConvGeometry(1, 2, 2, 2, (3, 3), (3, 3), (3, 3), (1, 1), (1, 1), (1, 1))
    x = np.zeros((1, 2, 3, 3), dtype)
    w = np.zeros((2, 1, 3, 3), dtype)
    return {"conv_fwd": lambda: conv_forward(x, w, g), "conv_bwd": lambda: conv_backward_data(x, w, g),
            "conv_wrw": lambda: conv_backward_weights(x, x, g)}


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
    if isinstance(problem, ConvProblem):
        if not conv_applies(conv_geometry(problem), _kernel_of(problem)):
            return 0.0
        maker = _tiny_conv
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

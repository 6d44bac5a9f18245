"""The verdict's convolution reference: a direct float64 sum over filter taps.

Every backend's convolution is checked against this, so it shares no code with any of
them: no im2col, no column buffer, no GEMM helper, none of their chunk plans, not even the mapping
of a problem to its geometry (:mod:`conv_geometry`).  It is the definition, written out:

    y[n, k, o] = sum over the channels c of k's group and the taps t of
                 w[k, c, t] * x[n, c, o*stride + t*dilation - pad]     (0 outside x)

computed one tap at a time: for each tap, one strided slice of the zero-padded input
(every output position's input for that tap) is contracted over the group's channels
(``np.matmul`` per tap, or a multiply-add where a group has only a channel or two).
Backward data scatters each tap's contribution back through the same strided slice;
backward weights contracts each tap's slice with dy over the batch and the image.
A transposed convolution is MIOpen's: its forward is the backward data of the
convolution whose input is y and output is x, its backward data that convolution's
forward, its weight gradient that convolution's with x and dy swapped.

float64 throughout (int8 sums are exact in float64).  The batch is cut into blocks whose
output fits near a core's cache (:func:`_blocks`); ``cancel`` is checked between taps.
The per-tap products are many thin GEMMs: OpenBLAS's own threads spent more time
synchronising on them than computing (40-100x slower on a loaded 2-core host), so BLAS
is pinned to one thread (:mod:`miotui.execute.blas`: the thread count only) and the
batch is split over one thread per core instead.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Optional

import numpy as np

from miotui.execute.blas import blas_threads
from miotui.execute.threads import Cancelled
from miotui.problems import ConvProblem

__all__ = ["CONV_REFERENCE", "conv_oracle", "PlainConv", "plain_conv"]

#: What the verdict of a convolution compares against (``verification.reference``).
CONV_REFERENCE = "direct float64 tap sum"
#: The padded input of a block's images stays within this (bytes).
CHUNK_BYTES = 64 << 20
#: A block's output (and its per-tap part) stays within this: near a core's L2 cache
#: (1-4 MiB ran the per-tap accumulation 1.5-3x faster than whole-batch blocks).
BLOCK_BYTES = 1 << 20
#: Groups with at most this many (output x input) channel pairs multiply-add per pair:
#: a matmul of 1x1 matrices per image and group would be all call overhead (depthwise).
_SMALL_GROUP = 4


@dataclass(frozen=True)
class PlainConv:
    """The non-transposed convolution a problem runs: ``cin`` -> ``cout`` channels,
    input ``in_sp``, output ``out_sp``, zero padding ``pads`` before each axis (after
    it: whatever the output size needs)."""

    n: int
    cin: int
    cout: int
    groups: int
    in_sp: tuple[int, ...]
    out_sp: tuple[int, ...]
    filt: tuple[int, ...]
    strides: tuple[int, ...]
    dils: tuple[int, ...]
    pads: tuple[int, ...]

    @property
    def padded(self) -> tuple[int, ...]:
        """Padded input size: room for every tap of every output position, and the input."""
        return tuple(max(p + i, (o - 1) * s + d * (f - 1) + 1)
                     for p, i, o, s, d, f in zip(self.pads, self.in_sp, self.out_sp, self.strides, self.dils,
                                                 self.filt, strict=True))

    def inner(self) -> tuple[slice, ...]:
        """Where the input lies in the padded input."""
        return tuple(slice(p, p + i) for p, i in zip(self.pads, self.in_sp, strict=True))

    def tap_slices(self, tap: tuple[int, ...]) -> tuple[slice, ...]:
        """Where tap ``tap`` reads, in the padded input, for every output position."""
        return tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                     for t, d, o, s in zip(tap, self.dils, self.out_sp, self.strides, strict=True))


def _same_pads(p: ConvProblem) -> tuple[int, ...]:
    """MIOpen's "same" padding: total = (out-1)*stride + extent - in, floor half before."""
    pads = []
    for i, f, s, d, o in zip(p.in_spatial, p.filter, p.strides, p.dilations, p.out_spatial, strict=True):
        total = (o - 1) * s + d * (f - 1) + 1 - i
        pads.append(max(total, 0) // 2)
    return tuple(pads)


def plain_conv(p: ConvProblem) -> PlainConv:
    """The convolution underlying ``p`` (for a transposed one: y -> x, MIOpen's definition)."""
    if p.mode == "trans":
        return PlainConv(p.n, p.k, p.c, p.groups, p.out_spatial, p.in_spatial, p.filter, p.strides,
                         p.dilations, p.pads)
    pads = {"same": _same_pads(p), "valid": (0,) * p.ndim}.get(p.pad_mode, p.pads)
    return PlainConv(p.n, p.c, p.k, p.groups, p.in_spatial, p.out_spatial, p.filter, p.strides,
                     p.dilations, pads)


def _stop(cancel: Any) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled("verification reference cancelled")


def _blocks(c: PlainConv) -> list[tuple[int, int, int, int]]:
    """(n0, n1, h0, h1): images and rows of the first output axis per block.

    A block's output stays within :data:`BLOCK_BYTES`, so that the per-tap accumulation
    (the output read and written once per tap) runs in cache rather than in memory; the
    padded input of a block's images within :data:`CHUNK_BYTES`.
    """
    rest = math.prod(c.out_sp[1:])
    per_image = 8 * max(c.cin, c.cout) * rest * c.out_sp[0]
    padded_image = 8 * c.cin * math.prod(c.padded)
    if per_image <= BLOCK_BYTES:
        images = max(1, min(c.n, BLOCK_BYTES // per_image, CHUNK_BYTES // max(padded_image, 1)))
        rows = c.out_sp[0]
    else:
        images = 1
        rows = max(1, min(c.out_sp[0], BLOCK_BYTES // max(8 * max(c.cin, c.cout) * rest, 1)))
    return [(n0, min(n0 + images, c.n), h0, min(h0 + rows, c.out_sp[0]))
            for n0 in range(0, c.n, images) for h0 in range(0, c.out_sp[0], rows)]


def _pad(x: np.ndarray, c: PlainConv) -> np.ndarray:
    """The images zero-padded to ``c.padded`` (themselves when no padding is needed)."""
    if tuple(x.shape[2:]) == c.padded and not any(c.pads):
        return x
    xp = np.zeros(x.shape[:2] + c.padded)
    xp[(slice(None), slice(None)) + c.inner()] = x
    return xp


def _taps(c: PlainConv) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in t) for t in np.ndindex(*c.filt)]


def _rows(c: PlainConv, tap: tuple[int, ...], h0: int, h1: int) -> tuple[slice, ...]:
    """The tap's strided slice for output rows [h0, h1) (all of the other axes)."""
    first = slice(tap[0] * c.dils[0] + h0 * c.strides[0], tap[0] * c.dils[0] + (h1 - 1) * c.strides[0] + 1,
                  c.strides[0])
    return (slice(None), slice(None), first) + c.tap_slices(tap)[1:]


def _tap_operand(view: np.ndarray, g: int, buf: np.ndarray) -> np.ndarray:
    """One tap's strided slice (n, C, rows, ...) as a (G, C/G, n*P) matrix, copied into ``buf``:
    every image of the block in one product."""
    n, ch = view.shape[:2]
    split = view.reshape((n, g, ch // g) + view.shape[2:])     # splitting an axis: still a view
    buf[...] = np.moveaxis(split, 0, 2)
    return buf.reshape(g, ch // g, -1)


def _to_images(m: np.ndarray, n: int, shape: tuple[int, ...]) -> np.ndarray:
    """(G, C/G, n*P) back to an (n, C, *shape) view."""
    return np.moveaxis(m.reshape((-1, n) + shape), 1, 0)


def _contract(wt: np.ndarray, xs: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out = (G, A, B) x (G, B, M) -> (G, A, M), summed over B."""
    g, a, b = wt.shape
    if a * b > _SMALL_GROUP:
        return np.matmul(wt, xs, out=out)
    out[...] = 0.0
    for i in range(a):
        for j in range(b):
            out[:, i] += wt[:, i, j, None] * xs[:, j]
    return out


def _padded_blocks(x: np.ndarray, c: PlainConv) -> Iterator[tuple[int, int, int, int, np.ndarray]]:
    """(n0, n1, h0, h1, images n0:n1 padded) per block: each chunk of images padded once."""
    xp, padded_for = x, (-1, -1)
    for n0, n1, h0, h1 in _blocks(c):
        if padded_for != (n0, n1):
            xp, padded_for = _pad(x[n0:n1], c), (n0, n1)
        yield n0, n1, h0, h1, xp


def _forward(x: np.ndarray, w: np.ndarray, c: PlainConv, cancel: Any, y: np.ndarray) -> np.ndarray:
    g, cg, kg = c.groups, c.cin // c.groups, c.cout // c.groups
    rest = c.out_sp[1:]
    wg = w.reshape((g, kg, cg) + c.filt)
    for n0, n1, h0, h1, xp in _padded_blocks(x, c):
        n, rows = n1 - n0, (h1 - h0,) + rest
        m = n * math.prod(rows)
        buf = np.empty((g, cg, n) + rows)
        acc, part = np.zeros((g, kg, m)), np.empty((g, kg, m))
        for tap in _taps(c):
            _stop(cancel)
            xs = _tap_operand(xp[_rows(c, tap, h0, h1)], g, buf)
            acc += _contract(wg[(Ellipsis,) + tap], xs, part)
        y[n0:n1, :, h0:h1] = _to_images(acc, n, rows)
    return y


def _backward_data(dy: np.ndarray, w: np.ndarray, c: PlainConv, cancel: Any, dx: np.ndarray) -> np.ndarray:
    g, cg, kg = c.groups, c.cin // c.groups, c.cout // c.groups
    rest = c.out_sp[1:]
    wt = w.reshape((g, kg, cg) + c.filt).swapaxes(1, 2)   # (G, Cg, Kg, *f)
    dxp, padded_for = None, (-1, -1)
    for n0, n1, h0, h1 in _blocks(c):
        if padded_for != (n0, n1):
            if dxp is not None:
                dx[padded_for[0]:padded_for[1]] = dxp[(slice(None), slice(None)) + c.inner()]
            dxp, padded_for = np.zeros((n1 - n0, c.cin) + c.padded), (n0, n1)
        n, rows = n1 - n0, (h1 - h0,) + rest
        dys = _tap_operand(dy[n0:n1, :, h0:h1], g, np.empty((g, kg, n) + rows))
        part = np.empty((g, cg, dys.shape[-1]))
        for tap in _taps(c):
            _stop(cancel)
            _contract(wt[(Ellipsis,) + tap], dys, part)
            dxp[_rows(c, tap, h0, h1)] += _to_images(part, n, rows)
    if dxp is not None:
        dx[padded_for[0]:padded_for[1]] = dxp[(slice(None), slice(None)) + c.inner()]
    return dx


def _backward_weights(x: np.ndarray, dy: np.ndarray, c: PlainConv, cancel: Any) -> np.ndarray:
    g, cg, kg = c.groups, c.cin // c.groups, c.cout // c.groups
    rest = c.out_sp[1:]
    dw = np.zeros((g, kg, cg) + c.filt)
    for n0, n1, h0, h1, xp in _padded_blocks(x, c):
        n, rows = n1 - n0, (h1 - h0,) + rest
        # (G, Kg, n*P) and, per tap, (G, Cg, n*P): the product sums over images and pixels
        dyg = _tap_operand(dy[n0:n1, :, h0:h1], g, np.empty((g, kg, n) + rows))
        buf = np.empty((g, cg, n) + rows)
        for tap in _taps(c):
            _stop(cancel)
            xs = _tap_operand(xp[_rows(c, tap, h0, h1)], g, buf)
            dw[(Ellipsis,) + tap] += np.matmul(dyg, xs.transpose(0, 2, 1))
    return dw.reshape((c.cout, cg) + c.filt)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _split(fn: Callable[..., np.ndarray], a: np.ndarray, b: np.ndarray, c: PlainConv, cancel: Any,
           out: Optional[np.ndarray]) -> np.ndarray:
    """``fn(a, b, c, cancel[, out])`` with the batch split over one thread per core and BLAS
    on one thread.  ``out`` (forward, backward data) receives each part's images; without
    it (weight gradients: both inputs batched) the parts' results are summed.  Sequential
    where there is one image or one core, or BLAS's count cannot be pinned."""
    parts = min(_cores(), c.n)
    blas = blas_threads()
    old = blas.pin_one() if parts > 1 else None
    if old is None:
        return fn(a, b, c, cancel) if out is None else fn(a, b, c, cancel, out)
    try:
        bounds = [c.n * i // parts for i in range(parts + 1)]
        with ThreadPoolExecutor(parts, thread_name_prefix="miotui-oracle") as pool:
            futures = [pool.submit(fn, a[lo:hi], b[lo:hi], replace(c, n=hi - lo), cancel) if out is None else
                       pool.submit(fn, a[lo:hi], b, replace(c, n=hi - lo), cancel, out[lo:hi])
                       for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
            results = [f.result() for f in futures]
    finally:
        blas.restore(old)
    if out is not None:
        return out
    total = results[0]
    for r in results[1:]:
        total += r
    return total


def conv_oracle(p: ConvProblem, inputs: dict[str, Any], cancel: Optional[Any] = None) -> dict[str, np.ndarray]:
    """The problem's output in float64 from MIOpen-named inputs (fwd x,w -> y; bwd
    dy,w -> dx; wrw x,dy -> dw)."""
    c = plain_conv(p)
    shapes = {"x": p.input_shape, "w": p.weight_shape, "dy": p.output_shape}
    needs = {"fwd": ("x", "w"), "bwd": ("dy", "w"), "wrw": ("x", "dy")}[p.direction]
    t = {}
    for name in needs:
        if name not in inputs:
            raise KeyError(f"conv {p.direction} needs input {name!r} (got {sorted(inputs)})")
        a = np.asarray(inputs[name], dtype=np.float64)
        if a.shape != tuple(shapes[name]):
            raise ValueError(f"input {name!r} has shape {a.shape}, the problem needs {tuple(shapes[name])}")
        t[name] = a
    trans = p.mode == "trans"
    if p.direction == "fwd":
        fn = _backward_data if trans else _forward
        return {"y": _split(fn, t["x"], t["w"], c, cancel, np.empty(p.output_shape))}
    if p.direction == "bwd":
        fn = _forward if trans else _backward_data
        return {"dx": _split(fn, t["dy"], t["w"], c, cancel, np.empty(p.input_shape))}
    xu, dyu = (t["dy"], t["x"]) if trans else (t["x"], t["dy"])
    return {"dw": _split(_backward_weights, xu, dyu, c, cancel, None)}

"""The RNN reference: vanilla (ReLU / tanh), LSTM and GRU, stacked, bidirectional, linear or
skip input, with or without bias, over packed variable-length sequences; forward (training
and inference: the same numbers), backward data and backward weights.

The cells are MIOpenDriver's host reference's (``driver/*_verify_gemm.hpp``,
``test/rnn_util.hpp``), with gates in MIOpen's order (:mod:`rnn_layout`):

* vanilla: ``h' = act(W x + b_W + R h + b_R)``, act ReLU or tanh;
* LSTM: ``[i, f, o, g] = [sig, sig, sig, tanh](W x + b_W + R h + b_R)``,
  ``c' = f c + i g``, ``h' = o tanh(c')``;
* GRU: ``z, r = sig(W_{z,r} x + b_W + R_{z,r} h + b_R)``,
  ``c = tanh(W_c x + b_Wc + r * (R_c h + b_Rc))``, ``h' = (1 - z) c + z h``.
  The reset gate multiplies the hidden product *after* its bias, as cuDNN's GRU and
  torch's do (not before the matrix product, as the original GRU paper does); only the
  gate order differs from torch (z r c against torch's r z n).

Skip input adds ``x`` itself to every gate of the first layer instead of ``W x`` (the
input bias is still added).  The reverse direction runs the steps backwards; a sample
alive for L steps starts it at step L-1 from its ``hx``.  ``hy``/``cy`` are each
sample's state after its last step (the reverse direction's after step 0).

MIOpen's RNN algorithms (default, fundamental, rounded dynamic) schedule the same
arithmetic differently, so ``algo`` does not change the reference.

Backward data and weights are the exact gradients of that forward pass (back-propagation
through time, written out per cell), given ``dy``, ``dhy`` and ``dcy``: what the driver's
``RunRNNBackward*`` host code computes.  Dropout between layers uses MIOpen's GPU random
generator, which cannot be reproduced: a stacked RNN with dropout is not run
(:func:`miotui.execute.guard.not_modelled`); with one layer dropout has nothing to act on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np

from miotui.execute.layer_shapes import elems, rnn_rows, rnn_saved_elems, rnn_shapes
from miotui.execute.reference_tables import check_dtype
from miotui.execute.rnn_layout import LayerWeights, SeqPacking, seq_packing, weight_views
from miotui.execute.tensors import ReferenceUnsupported, compute_dtype, storage_dtype, uniform
from miotui.execute.threads import CancelFlag, check_cancel
from miotui.problems import RNNProblem

__all__ = ["rnn_make_inputs", "run_rnn", "rnn_forward", "RNNForward", "rnn_peak_bytes", "RNN_INPUT_SCALE"]

#: MIOpenDriver's scale for RNN data: x, hx, cx, dy, dhy, dcy uniform in [0, 0.01), the
#: weights in 0.01 x [-0.5, 0.5) (``RNNDriver::AllocateBuffersAndCopy``).  Its tolerance
#: (rms_range 1e-6 in fp32) was set for such inputs.
RNN_INPUT_SCALE = 0.01

#: cancel checks between time steps
_CHECK_EVERY = 64


def rnn_make_inputs(p: RNNProblem, seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs at MIOpenDriver's scale (:data:`RNN_INPUT_SCALE`), padding positions 0."""
    dtype = "fp32" if p.dtype == "unknown" else p.dtype
    ins, _ = rnn_shapes(p)
    pk = seq_packing(p)
    out: dict[str, np.ndarray] = {}
    for name, shape in ins.items():
        if name == "w":
            out[name] = uniform(seed, name, shape, -0.5 * RNN_INPUT_SCALE, 0.5 * RNN_INPUT_SCALE, dtype)
            continue
        a = uniform(seed, name, shape, 0.0, RNN_INPUT_SCALE, dtype)
        if name in ("x", "dy") and pk.layout != "packed":
            a = pk.unpack(pk.pack(a), shape)
        out[name] = a
    return out


def _sigmoid(a: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-a))


@dataclass
class _Saved:
    """What one layer-direction keeps for the backward pass, per packed row."""

    acts: np.ndarray            # gate activations (vanilla: h itself)
    h_prev: np.ndarray
    c_prev: Optional[np.ndarray] = None
    c: Optional[np.ndarray] = None
    ah_c: Optional[np.ndarray] = None   # GRU: R_c h + b_Rc, before the reset gate


def _step_rows(pk: SeqPacking, reverse: bool, cancel: Optional[CancelFlag]) -> Iterator[tuple[int, slice]]:
    """(samples alive, their packed rows) for each time step that has any, in time order
    or reversed; checks ``cancel`` every few steps."""
    steps = range(pk.steps - 1, -1, -1) if reverse else range(pk.steps)
    for k, t in enumerate(steps):
        if k % _CHECK_EVERY == 0:
            check_cancel(cancel)
        b = pk.batches[t]
        if b:
            yield b, slice(pk.offsets[t], pk.offsets[t] + b)


def _input_product(lw: LayerWeights, d: int, inp: np.ndarray, gates: int) -> np.ndarray:
    """W x + b_W for every row (skip input: x itself for every gate)."""
    ax = np.tile(inp, (1, gates)) if lw.w_in is None else inp @ lw.w_in[d].T
    if lw.b_w is not None:
        ax += lw.b_w[d]
    return ax


def _forward_direction(p: RNNProblem, pk: SeqPacking, lw: LayerWeights, d: int, inp: np.ndarray,
                       h: np.ndarray, c: Optional[np.ndarray], out: np.ndarray, keep: bool,
                       cancel: Optional[CancelFlag]) -> Optional[_Saved]:
    """One direction of one layer: writes its hidden states into ``out``'s columns; ``h``
    (and ``c``) start as hx (cx) and end as hy (cy).  Returns what backward needs."""
    hs = p.hidden
    ax = _input_product(lw, d, inp, p.gates)
    rows, dt = pk.rows, inp.dtype
    saved = _Saved(np.empty((rows, p.gates * hs), dt) if keep else np.empty((0, 0), dt),
                   np.empty((rows, hs), dt) if keep else np.empty((0, 0), dt))
    if keep and p.mode == "lstm":
        saved.c_prev, saved.c = np.empty((rows, hs), dt), np.empty((rows, hs), dt)
    if keep and p.mode == "gru":
        saved.ah_c = np.empty((rows, hs), dt)
    r_t = lw.r[d].T
    b_r = lw.b_r[d] if lw.b_r is not None else None
    cols = slice(d * hs, (d + 1) * hs)
    for b, sl in _step_rows(pk, d == 1, cancel):
        hp = h[:b]
        ah = hp @ r_t
        if b_r is not None:
            ah += b_r
        if keep:
            saved.h_prev[sl] = hp
        if p.mode in ("relu", "tanh"):
            a = ax[sl] + ah
            hn = np.maximum(a, 0) if p.mode == "relu" else np.tanh(a)
            acts = hn
        elif p.mode == "lstm":
            a = ax[sl] + ah
            acts = np.empty_like(a)
            acts[:, :3 * hs] = _sigmoid(a[:, :3 * hs])
            acts[:, 3 * hs:] = np.tanh(a[:, 3 * hs:])
            i, f, o, g = (acts[:, k2 * hs:(k2 + 1) * hs] for k2 in range(4))
            assert c is not None
            cn = f * c[:b] + i * g
            if keep:
                assert saved.c_prev is not None and saved.c is not None
                saved.c_prev[sl] = c[:b]
                saved.c[sl] = cn
            c[:b] = cn
            hn = o * np.tanh(cn)
        else:   # gru
            zr = _sigmoid(ax[sl, :2 * hs] + ah[:, :2 * hs])
            z, r = zr[:, :hs], zr[:, hs:]
            n = np.tanh(ax[sl, 2 * hs:] + r * ah[:, 2 * hs:])
            hn = (1 - z) * n + z * hp
            acts = np.concatenate([zr, n], axis=1)
            if keep:
                assert saved.ah_c is not None
                saved.ah_c[sl] = ah[:, 2 * hs:]
        if keep:
            saved.acts[sl] = acts
        h[:b] = hn
        out[sl, cols] = hn
    return saved if keep else None


def _backward_direction(p: RNNProblem, pk: SeqPacking, lw: LayerWeights, d: int, s: _Saved,
                        dout: np.ndarray, dh: np.ndarray, dc: Optional[np.ndarray],
                        cancel: Optional[CancelFlag]) -> tuple[np.ndarray, np.ndarray]:
    """Back-propagation through one direction of one layer, steps in reverse order of the
    forward's.  ``dh``/``dc`` start as dhy/dcy and end as dhx/dcx.  Returns the gradients
    of the gate pre-activations: (from the input product, from the hidden product); the
    same array twice except for the GRU, whose candidate's hidden part is scaled by r."""
    hs = p.hidden
    rows, dt = pk.rows, dout.dtype
    dax = np.empty((rows, p.gates * hs), dt)
    dah = np.empty_like(dax) if p.mode == "gru" else dax
    r_mat = lw.r[d]
    cols = slice(d * hs, (d + 1) * hs)
    for b, sl in _step_rows(pk, d == 0, cancel):
        g = dh[:b] + dout[sl, cols]
        acts = s.acts[sl]
        if p.mode in ("relu", "tanh"):
            da = g * (acts > 0) if p.mode == "relu" else g * (1 - acts * acts)
            dax[sl] = da
            dh[:b] = da @ r_mat
            continue
        if p.mode == "lstm":
            assert dc is not None and s.c is not None and s.c_prev is not None
            i, f, o, gg = (acts[:, k2 * hs:(k2 + 1) * hs] for k2 in range(4))
            tc = np.tanh(s.c[sl])
            dct = dc[:b] + g * o * (1 - tc * tc)
            da = dax[sl]
            da[:, :hs] = dct * gg * i * (1 - i)
            da[:, hs:2 * hs] = dct * s.c_prev[sl] * f * (1 - f)
            da[:, 2 * hs:3 * hs] = g * tc * o * (1 - o)
            da[:, 3 * hs:] = dct * i * (1 - gg * gg)
            dc[:b] = dct * f
            dh[:b] = da @ r_mat
            continue
        assert s.ah_c is not None
        z, r, n = acts[:, :hs], acts[:, hs:2 * hs], acts[:, 2 * hs:]
        dan = g * (1 - z) * (1 - n * n)
        dz = g * (s.h_prev[sl] - n) * z * (1 - z)
        dr = dan * s.ah_c[sl] * r * (1 - r)
        dax[sl, :hs] = dz
        dax[sl, hs:2 * hs] = dr
        dax[sl, 2 * hs:] = dan
        dah[sl, :2 * hs] = dax[sl, :2 * hs]
        dah[sl, 2 * hs:] = dan * r
        dh[:b] = g * z + dah[sl] @ r_mat
    return dax, dah


@dataclass
class RNNForward:
    """A forward pass in the packed, sorted form: the final states and, when ``keep``,
    what the backward pass reads (it never writes into any of it, so one forward serves
    any number of backward calls, as MIOpen's reserve space does)."""

    pk: SeqPacking
    dtype: np.dtype
    y: np.ndarray                       # the last layer's output, packed
    h: np.ndarray                       # (L*D, N, H) final hidden state, sorted
    c: Optional[np.ndarray]
    layer_inputs: list[np.ndarray]
    saved: list[list[Optional[_Saved]]]


def _checked(p: RNNProblem, inputs: dict[str, np.ndarray], dt: np.dtype) -> dict[str, np.ndarray]:
    if p.dropout > 0 and p.layers > 1:
        raise ReferenceUnsupported("dropout between stacked layers uses MIOpen's GPU random generator")
    t = {}
    for name, shape in rnn_shapes(p)[0].items():
        if name not in inputs:
            raise KeyError(f"rnn {p.direction} needs inputs {sorted(rnn_shapes(p)[0])} (got {sorted(inputs)})")
        if tuple(inputs[name].shape) != shape:
            raise ValueError(f"input {name!r} has shape {tuple(inputs[name].shape)}, the problem needs {shape}")
        t[name] = np.ascontiguousarray(inputs[name], dtype=dt)
    return t


def rnn_forward(p: RNNProblem, inputs: dict[str, np.ndarray], precision: str = "fp32",
                cancel: Optional[CancelFlag] = None) -> RNNForward:
    """The forward pass of ``p`` (keeping what backward needs when ``p`` is a backward pass)."""
    dt = compute_dtype(p, precision)
    t = _checked(p, inputs, dt)
    pk = seq_packing(p)
    lw = weight_views(p, t["w"])
    h = pk.sort_hidden(t["hx"])
    c = pk.sort_hidden(t["cx"]) if p.mode == "lstm" else None
    keep = p.direction != "fwd"
    fw = RNNForward(pk, dt, pk.pack(t["x"]), h, c, [], [])
    nd, hs = p.directions, p.hidden
    for li in range(p.layers):
        out = np.zeros((pk.rows, nd * hs), dt)
        per_dir = [_forward_direction(p, pk, lw[li], d, fw.y, h[li * nd + d],
                                      c[li * nd + d] if c is not None else None, out, keep, cancel)
                   for d in range(nd)]
        if keep:
            fw.layer_inputs.append(fw.y)
            fw.saved.append(per_dir)
        fw.y = out
    return fw


def run_rnn(p: RNNProblem, inputs: dict[str, np.ndarray], precision: str = "fp32",
            cancel: Optional[CancelFlag] = None, forward: Optional[RNNForward] = None) -> dict[str, np.ndarray]:
    """One pass of ``p`` on ``inputs`` (see :mod:`layer_shapes` for the names).  A backward
    pass starts from ``forward`` when given (the same inputs' :func:`rnn_forward`, in this
    precision), else runs the forward first."""
    _, outs = rnn_shapes(p)
    if forward is None or p.direction == "fwd":
        forward = rnn_forward(p, inputs, precision, cancel)
    fw = forward
    pk = fw.pk
    lstm = p.mode == "lstm"
    if p.direction == "fwd":
        res = {"y": pk.unpack(fw.y, outs["y"]), "hy": pk.unsort_hidden(fw.h)}
        if fw.c is not None:
            res["cy"] = pk.unsort_hidden(fw.c)
        return res
    dt = fw.dtype
    t = _checked(p, inputs, dt)
    lw = weight_views(p, t["w"])
    wrw = p.direction == "wrw"
    dw = np.zeros(p.weight_count, dt) if wrw else None
    dwv = weight_views(p, dw) if dw is not None else None
    dh = pk.sort_hidden(t["dhy"])
    dc = pk.sort_hidden(t["dcy"]) if lstm else None
    dout = pk.pack(t["dy"])
    nd, hs = p.directions, p.hidden
    for li in reversed(range(p.layers)):
        x_l = fw.layer_inputs[li]
        dinp = np.zeros_like(x_l) if li > 0 or not wrw else None
        for d in range(nd):
            k = li * nd + d
            s = fw.saved[li][d]
            assert s is not None
            dax, dah = _backward_direction(p, pk, lw[li], d, s, dout, dh[k], dc[k] if dc is not None else None,
                                           cancel)
            if dinp is not None:
                if lw[li].w_in is None:
                    dinp += dax.reshape(pk.rows, p.gates, hs).sum(axis=1)
                else:
                    dinp += dax @ lw[li].w_in[d]
            if dwv is not None:
                g = dwv[li]
                if g.w_in is not None:
                    g.w_in[d] += dax.T @ x_l
                g.r[d] += dah.T @ s.h_prev
                if g.b_w is not None and g.b_r is not None:
                    g.b_w[d] += dax.sum(axis=0)
                    g.b_r[d] += dah.sum(axis=0)
        check_cancel(cancel)
        if dinp is not None:
            dout = dinp
    if wrw:
        assert dw is not None
        return {"dw": dw}
    res = {"dx": pk.unpack(dout, outs["dx"]), "dhx": pk.unsort_hidden(dh)}
    if dc is not None:
        res["dcx"] = pk.unsort_hidden(dc)
    return res


def rnn_peak_bytes(p: RNNProblem, precision: str = "fp32") -> int:
    """Memory of one :func:`run_rnn` call: the stored inputs and their compute copies, the
    outputs, every layer's packed input and output, the saved activations (backward), the
    input products, one time step's temporaries and, backward, the gate gradients."""
    it = compute_dtype(p, precision).itemsize
    stored = storage_dtype(p.dtype).itemsize
    ins, outs = rnn_shapes(p)
    rows = rnn_rows(p)
    gh = p.gates * p.hidden
    total = elems(ins) * (stored + it) + elems(outs) * it
    total += rows * (p.in_size + p.layers * p.directions * p.hidden) * it
    total += rows * gh * it * 2 + 8 * p.batch[0] * gh * it      # input products; one step's temporaries
    if p.direction != "fwd":
        total += rnn_saved_elems(p) * it + rows * gh * it * 2 + rows * max(p.in_size, p.directions * p.hidden) * it
    return int(total + (1 << 16))


# ----------------------------------------------------------------------------- the rnn family's entries

def rnn_inputs(p: RNNProblem, seed: int = 0) -> dict[str, np.ndarray]:
    check_dtype(p)
    return rnn_make_inputs(p, seed)


def rnn_prepare(p: RNNProblem, inputs: dict[str, np.ndarray], precision: str = "fp32",
                cancel: Optional[CancelFlag] = None) -> Optional[RNNForward]:
    """What a timed call may start from: a backward pass's forward (MIOpen's backward calls
    read the reserve space a forward call filled; torch's the graph of one).  None forward."""
    if p.direction == "fwd":
        return None
    check_dtype(p)
    return rnn_forward(p, inputs, precision, cancel)


def rnn_reference(p: RNNProblem, inputs: dict[str, np.ndarray], *, precision: str = "fp32",
                  cancel: Optional[CancelFlag] = None, engine: str = "numpy", chunk_bytes: Optional[int] = None,
                  saved: object = None) -> dict[str, np.ndarray]:
    check_cancel(cancel)
    check_dtype(p)
    out = run_rnn(p, inputs, precision, cancel, saved if isinstance(saved, RNNForward) else None)
    check_cancel(cancel)
    return out


def rnn_reference_bytes(p: RNNProblem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """:func:`rnn_peak_bytes` (the saved activations counted; no chunk plan)."""
    return rnn_peak_bytes(p, precision)


def rnn_engine(p: RNNProblem, engine: str = "numpy") -> str:
    how = "; backward timed from a forward pass kept before timing" if p.direction != "fwd" else ""
    return f"numpy {p.mode} (packed time steps, a BLAS product per step{how})"

"""MIOpen's RNN memory layouts: the flat parameter buffer and the packed sequences.

**Parameters** (``w``), as MIOpenDriver's host reference reads them
(``driver/rnn_verify_gemm.hpp``, ``lstm_verify_gemm.hpp``, ``gru_verify_gemm.hpp``): first
every weight matrix, then every bias.  With ``D`` directions and ``G`` gates, each matrix
has ``D * G * H`` rows (direction-major: the forward direction's ``G`` gate blocks of ``H``
rows, then the reverse direction's) and is stored row-major:

* layer 0: the input matrix (``in_size`` columns; absent with skip input), then the
  hidden matrix (``H`` columns);
* each further layer: its input matrix (``D * H`` columns: the layer below's output),
  then its hidden matrix;
* then per layer the input bias and the hidden bias, ``D * G * H`` values each (with
  skip input, layer 0 keeps its input bias).

Gate order inside a block: LSTM ``i, f, o, g`` (input, forget, output, cell candidate),
GRU ``z, r, c`` (update, reset, candidate).  torch orders them ``i, f, g, o`` and
``r, z, n``: :data:`TORCH_FROM_MIOPEN` maps one to the other.

**Sequences**: MIOpen runs samples sorted by length, longest first, so the samples alive
at a time step are a prefix of the batch; the packed form holds, for each step, the rows
of those samples.  The reference computes in that packed, sorted form;
:class:`SeqPacking` gathers it from the stored layout (packed, or padded time- or
batch-major) and scatters results back (padding positions are 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from miotui.execute.layer_shapes import rnn_io_layout, rnn_sample_lengths, rnn_step_batches
from miotui.execute.tensors import ReferenceUnsupported
from miotui.problems import RNNProblem

#: gate names in MIOpen's order within a block of rows
MIOPEN_GATES = {"lstm": ("i", "f", "o", "g"), "gru": ("z", "r", "c"), "relu": ("h",), "tanh": ("h",)}
#: for each gate in torch's order (LSTM i f g o, GRU r z n), the MIOpen gate it is
TORCH_FROM_MIOPEN = {"lstm": (0, 1, 3, 2), "gru": (1, 0, 2), "relu": (0,), "tanh": (0,)}


@dataclass(frozen=True)
class LayerWeights:
    """One layer's parameters as views into the flat buffer, direction first:
    ``w_in`` (D, G*H, in) or None (skip input), ``r`` (D, G*H, H), biases (D, G*H) or None."""

    w_in: Optional[np.ndarray]
    r: np.ndarray
    b_w: Optional[np.ndarray]
    b_r: Optional[np.ndarray]


def weight_views(p: RNNProblem, w: np.ndarray) -> list[LayerWeights]:
    """Views of ``w`` (flat, ``p.weight_count`` values) per layer; writing into a view
    writes ``w`` (the backward-weights pass accumulates that way)."""
    if w.shape != (p.weight_count,):
        raise ValueError(f"w has shape {w.shape}, the RNN has {p.weight_count} parameters")
    d, h = p.directions, p.hidden
    rows = d * p.gates * h
    pos = 0

    def take(cols: int) -> np.ndarray:
        nonlocal pos
        view = w[pos:pos + rows * cols].reshape(d, p.gates * h, cols)
        pos += rows * cols
        return view

    mats = []
    for layer in range(p.layers):
        cols = p.layer_in(layer)
        w_in = take(cols) if cols else None
        mats.append((w_in, take(h)))
    out = []
    for w_in, r in mats:
        if p.bias:
            b_w = w[pos:pos + rows].reshape(d, p.gates * h)
            b_r = w[pos + rows:pos + 2 * rows].reshape(d, p.gates * h)
            pos += 2 * rows
        else:
            b_w = b_r = None
        out.append(LayerWeights(w_in, r, b_w, b_r))
    assert pos == p.weight_count, (pos, p.weight_count)
    return out


def torch_gate_rows(mode: str, hidden: int) -> np.ndarray:
    """Row indices that reorder one direction's ``G*H`` MIOpen rows into torch's gate order."""
    return np.concatenate([np.arange(g * hidden, (g + 1) * hidden) for g in TORCH_FROM_MIOPEN[mode]])


@dataclass(frozen=True)
class SeqPacking:
    """Where each packed row lives in the stored sequence tensors.

    ``order[i]`` is the sample at sorted position i (longest first, ties in sample
    order: MIOpen's stable sort); ``batches[t]`` the samples alive at step t; rows of step
    t are ``offsets[t]:offsets[t+1]``; ``index[r]`` the vector of packed row r in the
    stored tensor seen as (vectors, width).
    """

    layout: str
    n: int
    steps: int
    order: np.ndarray
    batches: tuple[int, ...]
    offsets: tuple[int, ...]
    index: np.ndarray

    @property
    def rows(self) -> int:
        return self.offsets[-1]

    def pack(self, a: np.ndarray) -> np.ndarray:
        """The stored sequence tensor ``a`` as packed rows (rows, width)."""
        flat = a.reshape(-1, a.shape[-1])
        if self.layout == "packed":
            return flat
        return flat[self.index]

    def unpack(self, packed: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Packed rows back in the stored ``shape`` (padding positions 0)."""
        if self.layout == "packed":
            return packed.reshape(shape)
        out = np.zeros(shape, dtype=packed.dtype)
        out.reshape(-1, shape[-1])[self.index] = packed
        return out

    def sort_hidden(self, a: np.ndarray) -> np.ndarray:
        """(L*D, N, H) in sample order -> sorted order."""
        return a[:, self.order]

    def unsort_hidden(self, a: np.ndarray) -> np.ndarray:
        out = np.empty_like(a)
        out[:, self.order] = a
        return out


def seq_packing(p: RNNProblem) -> SeqPacking:
    """The packing of ``p``'s sequences.  Raises ReferenceUnsupported for a packed layout
    whose sample lengths increase (MIOpen refuses it too)."""
    lens = np.asarray(rnn_sample_lengths(p), dtype=np.int64)
    layout = rnn_io_layout(p)
    order = np.argsort(-lens, kind="stable")
    if layout == "packed" and np.any(order != np.arange(lens.size)):
        raise ReferenceUnsupported("a packed (seq-major, not padded) RNN needs non-increasing sequence lengths "
                                   f"(got {tuple(int(v) for v in lens)})")
    batches = rnn_step_batches(p)
    offsets = (0,) + tuple(int(v) for v in np.cumsum(batches))
    n, steps = lens.size, p.seq_len
    parts = []
    for t, b in enumerate(batches):
        samples = order[:b]
        if layout == "seq_padded":
            parts.append(t * n + samples)
        elif layout == "batch_padded":
            parts.append(samples * steps + t)
        else:
            parts.append(np.arange(offsets[t], offsets[t] + b))
    index = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return SeqPacking(layout, n, steps, order, batches, offsets, index.astype(np.int64))

"""The tensors of an RNN, layer-norm, group-norm or reduce run: names and shapes, from the
problem alone.

One table serves the reference's inputs (:mod:`reference_rnn`, :mod:`reference_norm`,
:mod:`reference_reduce`), the torch backend and the memory guard, which must count the
tensors before anything is allocated, so this module is plain arithmetic: it imports
neither numpy nor torch.  Names are MIOpen's (its API arguments and driver buffers):

==========================  ====================================================  =====================
rnn fwd                     x, hx, [cx], w                                        y, hy, [cy]
rnn bwd (backward data)     x, hx, [cx], w, dy, dhy, [dcy]                        dx, dhx, [dcx]
rnn wrw (backward weights)  x, hx, [cx], w, dy, dhy, [dcy]                        dw
layernorm / addlayernorm    x, [x2], weight, bias                                 y, mean, rstd
layernorm bwd               dy, x, weight, mean, rstd                             dx, dw, db
t5layernorm fwd / bwd       x, weight / dy, x, weight, rstd                       y, rstd / dx, dw
groupnorm                   x, weight, bias                                       y, mean, rstd
reduce                      x [, y: the prior output, when beta != 0]             y [, indices]
==========================  ====================================================  =====================

RNN tensors as MIOpen holds them: ``w`` is the flat parameter buffer (every weight
matrix, then every bias: :mod:`rnn_layout`); ``hx``/``hy``/... are (layers x
directions, batch, hidden); the sequences ``x``/``y``/``dy``/``dx`` are packed (the
rows of each time step one after another: MIOpen's descriptor-array form) or padded,
time-major (T, N, C) or batch-major (N, T, C), as the problem's API and layout say.
The backward passes take ``x`` rather than MIOpen's reserve space: the forward pass that
filled it is recomputed (untimed).
"""

from __future__ import annotations

import math

from miotui.families import family_of
from miotui.problems import GroupNormProblem, LayerNormProblem, Problem, ReduceProblem, RNNProblem

Shape = tuple[int, ...]

#: the storage forms of an RNN's sequence tensors
RNN_IO_LAYOUTS = ("packed", "seq_padded", "batch_padded")


# ----------------------------------------------------------------------------- RNN

def rnn_sample_lengths(p: RNNProblem) -> tuple[int, ...]:
    """Time steps of each sample, in the problem's sample order.

    ``rnn``: from the per-step batch sizes (sample i runs while the step's batch exceeds
    i; one batch size = every sample runs all ``seq_len`` steps).  ``rnn_seq``: the
    per-sample ``seq_lens``; a shorter list is padded with its last value, as
    MIOpenDriver's ``-K`` is; none = every sample ``seq_len`` steps.
    """
    n = p.batch[0]
    if p.api == "rnn_seq":
        lens = list(p.seq_lens[:n]) or [p.seq_len] * n
        lens += [lens[-1]] * (n - len(lens))
        return tuple(lens)
    if len(p.batch) == 1:
        return (p.seq_len,) * n
    return tuple(sum(1 for b in p.batch if b > i) for i in range(n))


def rnn_rows(p: RNNProblem) -> int:
    """``sum(rnn_sample_lengths(p))`` in closed form: the rows of the packed sequence.  The
    memory guard asks this of layers whose batch is a logged number up to 2**31 - 1, before
    anything may be allocated, so it never builds the per-sample list (issue 26)."""
    n = p.batch[0]
    if p.api == "rnn_seq":
        lens = p.seq_lens[:n] or (p.seq_len,)
        return sum(lens) + (n - len(lens)) * lens[-1]
    if len(p.batch) == 1:
        return p.seq_len * n
    return sum(p.batch)   # sample i runs while a step's batch exceeds i: each step's batch counted once


def rnn_step_batches(p: RNNProblem) -> tuple[int, ...]:
    """Samples that run at each time step (non-increasing; what MIOpen's packed form holds)."""
    lens = rnn_sample_lengths(p)
    return tuple(sum(1 for n in lens if n > t) for t in range(p.seq_len))


def rnn_io_layout(p: RNNProblem) -> str:
    """How x/y/dy/dx are stored: ``packed`` (the rows of each step in turn), ``seq_padded``
    (T, N, C) or ``batch_padded`` (N, T, C).  ``rnn``: packed, or padded with ``-q 1``;
    ``rnn_seq``: its io layout (1 packed, 2 seq-major padded, 3 batch-major padded)."""
    if p.api == "rnn_seq":
        return {2: "seq_padded", 3: "batch_padded"}.get(p.io_layout, "packed")
    return "seq_padded" if p.padded else "packed"


def rnn_seq_shape(p: RNNProblem, width: int) -> Shape:
    """Shape of a sequence tensor whose vectors have ``width`` values, as stored."""
    layout = rnn_io_layout(p)
    n, t = p.batch[0], p.seq_len
    if layout == "seq_padded":
        return (t, n, width)
    if layout == "batch_padded":
        return (n, t, width)
    return (rnn_rows(p), width)


def rnn_hidden_shape(p: RNNProblem) -> Shape:
    return (p.layers * p.directions, p.batch[0], p.hidden)


def rnn_shapes(p: RNNProblem) -> tuple[dict[str, Shape], dict[str, Shape]]:
    """(inputs, outputs) of one pass, name -> shape (see the module table)."""
    lstm = p.mode == "lstm"
    x, y, h = rnn_seq_shape(p, p.in_size), rnn_seq_shape(p, p.hidden * p.directions), rnn_hidden_shape(p)
    ins: dict[str, Shape] = {"x": x, "hx": h}
    if lstm:
        ins["cx"] = h
    ins["w"] = (p.weight_count,)
    if p.direction == "fwd":
        outs = {"y": y, "hy": h}
        if lstm:
            outs["cy"] = h
        return ins, outs
    ins.update({"dy": y, "dhy": h})
    if lstm:
        ins["dcy"] = h
    if p.direction == "bwd":
        outs = {"dx": x, "dhx": h}
        if lstm:
            outs["dcx"] = h
        return ins, outs
    return ins, {"dw": (p.weight_count,)}


def rnn_saved_elems(p: RNNProblem) -> int:
    """Values a pass keeps per row between its forward and its backward, summed over the
    layers and directions: the gate activations, the previous hidden (and cell) state, the
    layer's output.  What autograd (or cuDNN/MIOpen's reserve space) also holds."""
    rows = rnn_rows(p)
    per_dir = p.gates + 1 + (3 if p.mode == "lstm" else 1 if p.mode == "gru" else 0)
    return rows * p.hidden * p.layers * p.directions * (per_dir + 1)


# ----------------------------------------------------------------------------- norms

def t5_inner(p: LayerNormProblem) -> int:
    """MIOpen's T5 layer norm always normalises the last dimension (its driver has no
    normalized_dim)."""
    return p.shape[-1]


def norm_stat_shape(p: LayerNormProblem) -> Shape:
    """mean / rstd: one value per normalised group, shaped as the outer dimensions
    (MIOpen: ``{1}`` when every dimension is normalised)."""
    outer = p.shape[:-1] if p.variant == "t5layernorm" else p.shape[:p.normalized_dim]
    return outer or (1,)


def norm_param_shape(p: LayerNormProblem) -> Shape:
    return p.shape[-1:] if p.variant == "t5layernorm" else p.shape[p.normalized_dim:]


def layernorm_shapes(p: LayerNormProblem) -> tuple[dict[str, Shape], dict[str, Shape]]:
    x, w, s = p.shape, norm_param_shape(p), norm_stat_shape(p)
    t5 = p.variant == "t5layernorm"
    if p.direction == "fwd":
        ins = {"x": x}
        if p.variant == "addlayernorm":
            ins["x2"] = x
        ins["weight"] = w
        if not t5:
            ins["bias"] = w
        outs = {"y": x, "rstd": s} if t5 else {"y": x, "mean": s, "rstd": s}
        return ins, outs
    if t5:
        return {"dy": x, "x": x, "weight": w, "rstd": s}, {"dx": x, "dw": w}
    return {"dy": x, "x": x, "weight": w, "mean": s, "rstd": s}, {"dx": x, "dw": w, "db": w}


def groupnorm_shapes(p: GroupNormProblem) -> tuple[dict[str, Shape], dict[str, Shape]]:
    c = (p.shape[1],)
    stat = (p.shape[0], p.num_groups)
    return {"x": p.shape, "weight": c, "bias": c}, {"y": p.shape, "mean": stat, "rstd": stat}


# ----------------------------------------------------------------------------- reduce

def reduce_uses_beta(p: ReduceProblem) -> bool:
    """Whether the prior output counts: beta != 0, and no indices (MIOpenDriver runs an
    indexed reduction with alpha 1 and beta 0, whatever its flags say)."""
    return p.beta != 0 and not p.indices


def reduce_shapes(p: ReduceProblem) -> tuple[dict[str, Shape], dict[str, Shape]]:
    ins = {"x": p.shape}
    if reduce_uses_beta(p):
        ins["y"] = p.output_shape
    outs = {"y": p.output_shape}
    if p.indices:
        outs["indices"] = p.output_shape
    return ins, outs


# ----------------------------------------------------------------------------- all

def layer_shapes(problem: Problem) -> tuple[dict[str, Shape], dict[str, Shape]]:
    """(inputs, outputs), name -> shape: the tensor table of ``problem``'s family (rnn,
    layernorm, groupnorm, reduce); TypeError for a family without one."""
    table = family_of(problem).tensor_table
    if not table.applies:
        raise TypeError(f"no tensor table for {type(problem).__name__}")
    return table(problem)


def table_names(problem: Problem) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(input names, output names) of a tensor-table family, in the table's order."""
    ins, outs = layer_shapes(problem)
    return tuple(ins), tuple(outs)


def elems(shapes: dict[str, Shape]) -> int:
    return sum(math.prod(s) for s in shapes.values())

"""The reference's entry points for RNNs, layer / group norm and reductions.

:mod:`miotui.execute.reference` hands these kinds here; the math is in
:mod:`reference_rnn`, :mod:`reference_norm` and :mod:`reference_reduce`, the tensor
table in :mod:`layer_shapes`.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from miotui.execute.layer_shapes import LAYER_TYPES, elems, layer_shapes
from miotui.execute.reference_norm import norm_make_inputs, run_norm
from miotui.execute.reference_reduce import reduce_dtype, reduce_make_inputs, run_reduce
from miotui.execute.reference_rnn import RNNForward, rnn_forward, rnn_make_inputs, rnn_peak_bytes, run_rnn
from miotui.execute.tensors import ReferenceUnsupported, compute_dtype, storage_dtype
from miotui.execute.threads import CancelFlag, check_cancel
from miotui.problems import GroupNormProblem, LayerNormProblem, Problem, ReduceProblem, RNNProblem

__all__ = ["LAYER_TYPES", "layer_tensor_names", "layer_make_inputs", "run_layer_reference", "layer_peak_bytes",
           "layer_engine", "prepare_layer"]


def _check_dtype(problem: Problem) -> None:
    if problem.dtype in ("int8", "int32"):
        raise ReferenceUnsupported(f"{problem.op} has no {problem.dtype} reference in MIOpenDriver")


def layer_tensor_names(problem: Problem) -> tuple[tuple[str, ...], tuple[str, ...]]:
    ins, outs = layer_shapes(problem)
    return tuple(ins), tuple(outs)


def layer_make_inputs(problem: Problem, seed: int = 0) -> dict[str, np.ndarray]:
    _check_dtype(problem)
    if isinstance(problem, RNNProblem):
        return rnn_make_inputs(problem, seed)
    if isinstance(problem, (LayerNormProblem, GroupNormProblem)):
        return norm_make_inputs(problem, seed)
    if isinstance(problem, ReduceProblem):
        return reduce_make_inputs(problem, seed)
    raise ReferenceUnsupported(f"no reference for {type(problem).__name__}")


def prepare_layer(problem: Problem, inputs: dict[str, np.ndarray], precision: str = "fp32",
                  cancel: Optional[CancelFlag] = None) -> Optional[Any]:
    """What a timed call may start from: an RNN backward pass's forward (MIOpen's backward
    calls read the reserve space a forward call filled; torch's the graph of one).  None
    for everything else."""
    if isinstance(problem, RNNProblem) and problem.direction != "fwd":
        _check_dtype(problem)
        return rnn_forward(problem, inputs, precision, cancel)
    return None


def run_layer_reference(problem: Problem, inputs: dict[str, np.ndarray], precision: str = "fp32",
                        cancel: Optional[CancelFlag] = None, saved: Optional[Any] = None) -> dict[str, np.ndarray]:
    check_cancel(cancel)
    _check_dtype(problem)
    if isinstance(problem, RNNProblem):
        out = run_rnn(problem, inputs, precision, cancel, saved if isinstance(saved, RNNForward) else None)
    elif isinstance(problem, (LayerNormProblem, GroupNormProblem)):
        out = run_norm(problem, inputs, precision)
    elif isinstance(problem, ReduceProblem):
        out = run_reduce(problem, inputs, precision)
    else:
        raise ReferenceUnsupported(f"no reference for {type(problem).__name__}")
    check_cancel(cancel)
    return out


def layer_peak_bytes(problem: Problem, precision: str = "fp32") -> int:
    """Memory of one run: RNNs count their saved activations (:func:`rnn_peak_bytes`);
    the others their stored inputs, compute copies, outputs and a few temporaries the
    size of the largest tensor."""
    if isinstance(problem, RNNProblem):
        return rnn_peak_bytes(problem, precision)
    it = (reduce_dtype(problem, precision) if isinstance(problem, ReduceProblem)
          else compute_dtype(problem, precision)).itemsize
    ins, outs = layer_shapes(problem)
    big = max(math.prod(s) for s in list(ins.values()) + list(outs.values()))
    stored = storage_dtype(problem.dtype).itemsize
    return int(elems(ins) * (stored + it) + elems(outs) * it + 4 * big * it + (1 << 16))


def layer_engine(problem: Problem) -> str:
    if isinstance(problem, RNNProblem):
        how = "; backward timed from a forward pass kept before timing" if problem.direction != "fwd" else ""
        return f"numpy {problem.mode} (packed time steps, a BLAS product per step{how})"
    return f"numpy {problem.op}"

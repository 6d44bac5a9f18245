"""What the references of the tensor-table families (rnn, layernorm, groupnorm, reduce) share.

Their tensors are listed by :mod:`layer_shapes` rather than being a problem's
``input_shape``/``output_shape``; each family's entry points are in its own module
(:mod:`reference_rnn`, :mod:`reference_norm`, :mod:`reference_reduce`), found through
:mod:`miotui.families`.  Here: the data types none of them has a reference for, and the
memory model of a run that holds its table's tensors and a few temporaries.
"""

from __future__ import annotations

import math
from typing import Optional

from miotui.execute.layer_shapes import elems, layer_shapes
from miotui.execute.tensors import ReferenceUnsupported, compute_dtype, storage_dtype
from miotui.problems import Problem

__all__ = ["check_dtype", "table_bytes", "table_peak_bytes", "table_engine"]


def check_dtype(problem: Problem) -> None:
    """int8 and int32 data: MIOpenDriver has no reference for these kinds, nor has miotui."""
    if problem.dtype in ("int8", "int32"):
        raise ReferenceUnsupported(f"{problem.op} has no {problem.dtype} reference in MIOpenDriver")


def table_bytes(problem: Problem, itemsize: int) -> int:
    """Memory of one run computing in ``itemsize``-byte numbers: the stored inputs, their
    compute copies, the outputs and four temporaries the size of the largest tensor."""
    ins, outs = layer_shapes(problem)
    big = max(math.prod(s) for s in list(ins.values()) + list(outs.values()))
    stored = storage_dtype(problem.dtype).itemsize
    return int(elems(ins) * (stored + itemsize) + elems(outs) * itemsize + 4 * big * itemsize + (1 << 16))


def table_peak_bytes(problem: Problem, precision: str = "fp32", chunk_bytes: Optional[int] = None) -> int:
    """:func:`table_bytes` in the precision's compute type (layer / group norm)."""
    return table_bytes(problem, compute_dtype(problem, precision).itemsize)


def table_engine(problem: Problem, engine: str = "numpy") -> str:
    return f"numpy {problem.op}"

"""What a verdict compares a backend's outputs against: the verification reference.

A backend is checked against float64 code that shares none of its own: convolutions
against a direct sum over filter taps (:mod:`oracle_conv`), the other layer kinds
against formulations of their own (:mod:`oracle_ops`, :mod:`oracle_layers`).  Those
modules import no backend code (tests/test_oracle_independent.py checks it), so a
bug in a backend's im2col, GEMM, chunking, kernel or constant fails its verdict
instead of being reproduced by the reference.

The one exception is the RNN: its verdict still runs the numpy backend's RNN code in
float64 (:mod:`reference_rnn`).  That checks torch and MIOpenDriver independently,
but for the numpy backend it measures rounding only; :func:`reference_name` says so,
and the name travels with every verdict (``verification.reference``).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from miotui.execute.oracle_conv import CONV_REFERENCE, conv_oracle
from miotui.execute.oracle_layers import norm_oracle, reduce_oracle
from miotui.execute.oracle_ops import OPS_REFERENCE, ops_oracle
from miotui.problems import ConvProblem, GroupNormProblem, LayerNormProblem, Problem, ReduceProblem, RNNProblem

__all__ = ["reference_name", "reference_outputs", "RNN_REFERENCE"]

#: The RNN's verdict reference (see the module docstring: not independent of numpy's).
RNN_REFERENCE = "numpy backend's RNN code in float64 (not independent of the numpy backend)"


def reference_name(problem: Problem) -> str:
    """A short name of what a verdict on ``problem`` compares against."""
    if isinstance(problem, ConvProblem):
        return CONV_REFERENCE
    if isinstance(problem, RNNProblem):
        return RNN_REFERENCE
    if isinstance(problem, ReduceProblem):
        return "float64 reduction by dot products"
    if isinstance(problem, (LayerNormProblem, GroupNormProblem)):
        return f"float64 {problem.op} from sums (chain-rule backward)"
    return OPS_REFERENCE.get(problem.op, f"float64 {problem.op}")


def reference_outputs(problem: Problem, inputs: dict[str, Any],
                      cancel: Optional[Any] = None) -> dict[str, np.ndarray]:
    """Every output of ``problem`` computed by its verification reference from ``inputs``.

    Raises ``Cancelled`` when ``cancel`` is set, ``ReferenceUnsupported`` for a problem
    the reference does not model (as the backends do)."""
    if isinstance(problem, ConvProblem):
        return conv_oracle(problem, inputs, cancel)
    if isinstance(problem, ReduceProblem):
        return reduce_oracle(problem, inputs)
    if isinstance(problem, (LayerNormProblem, GroupNormProblem)):
        return norm_oracle(problem, inputs)
    if isinstance(problem, RNNProblem):
        from miotui.execute import reference
        return reference.run_reference(problem, inputs, precision="fp64", cancel=cancel)
    return ops_oracle(problem, inputs, cancel)

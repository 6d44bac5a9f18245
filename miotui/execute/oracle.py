"""What a verdict compares a backend's outputs against: the verification reference.

A backend is checked against float64 code that shares none of its own: convolutions
against a direct sum over filter taps (:mod:`oracle_conv`), the other layer kinds
against formulations of their own (:mod:`oracle_basic`, :mod:`oracle_layers`; which one is
the family's ``oracle`` entry in :mod:`miotui.families`).  Those
modules import no backend code (tests/unit/test_oracle.py checks it), so a bug in a
backend's im2col, GEMM, chunking, kernel or constant fails its verdict instead of
being reproduced by the reference.

RNNs are cross-checked instead: the numpy backend against torch's float64 RNN on the
CPU (ATen's kernels), torch and MIOpenDriver against numpy's RNN code in float64.  The
two share only the table of where each weight lies in MIOpen's flat buffer
(:mod:`rnn_layout`).  Without torch installed the numpy backend's RNN verdict runs its
own code in float64, which measures rounding only: its reference name says so.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Optional

import numpy as np

from miotui.execute.oracle_conv import CONV_REFERENCE, conv_oracle
from miotui.execute.oracle_layers import groupnorm_oracle, layernorm_oracle, reduce_oracle
from miotui.execute.tensors import ReferenceUnsupported
from miotui.families import Family, UnknownFamily, family_of
from miotui.problems import ConvProblem, GroupNormProblem, LayerNormProblem, Problem, ReduceProblem, RNNProblem

__all__ = ["reference_name", "reference_outputs", "RNN_NUMPY", "RNN_TORCH", "RNN_SELF"]

#: the RNN references (see the module docstring)
RNN_NUMPY = "numpy float64 RNN (a BLAS product per step)"
RNN_TORCH = "torch float64 RNN on the CPU (ATen)"
RNN_SELF = "numpy backend's own RNN code in float64 (not independent: torch is not installed)"


def _torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


def _oracle(problem: Problem) -> Family:
    try:
        return family_of(problem)
    except UnknownFamily:
        raise ReferenceUnsupported(f"no verification reference for {type(problem).__name__}") from None


def reference_name(problem: Problem, backend: str = "numpy") -> str:
    """A short name of what a verdict on ``problem`` run by ``backend`` compares against."""
    return _oracle(problem).oracle_name(problem, backend)


def reference_outputs(problem: Problem, inputs: dict[str, Any], backend: str = "numpy",
                      cancel: Optional[Any] = None) -> tuple[dict[str, np.ndarray], str]:
    """(every output of ``problem`` from its verification reference, that reference's name).

    ``backend``: the backend being checked (it picks the RNN's reference).  Raises
    ``Cancelled`` when ``cancel`` is set, ``ReferenceUnsupported`` for a problem the
    reference does not model (as the backends do)."""
    entry = _oracle(problem).oracle
    if not entry.applies:
        raise ReferenceUnsupported(f"no verification reference for {type(problem).__name__}")
    return entry(problem, inputs, backend, cancel)


# ----------------------------------------------------------------------------- the families' entries

def conv_reference_name(problem: ConvProblem, backend: str = "numpy") -> str:
    return CONV_REFERENCE


def conv_outputs(problem: ConvProblem, inputs: dict[str, Any], backend: str = "numpy",
                 cancel: Optional[Any] = None) -> tuple[dict[str, np.ndarray], str]:
    return conv_oracle(problem, inputs, cancel), CONV_REFERENCE


def reduce_reference_name(problem: ReduceProblem, backend: str = "numpy") -> str:
    return "float64 reduction by dot products"


def reduce_outputs(problem: ReduceProblem, inputs: dict[str, Any], backend: str = "numpy",
                   cancel: Optional[Any] = None) -> tuple[dict[str, np.ndarray], str]:
    return reduce_oracle(problem, inputs), reduce_reference_name(problem)


def norm_reference_name(problem: LayerNormProblem | GroupNormProblem, backend: str = "numpy") -> str:
    return f"float64 {problem.op} from sums (chain-rule backward)"


def layernorm_outputs(problem: LayerNormProblem, inputs: dict[str, Any], backend: str = "numpy",
                      cancel: Optional[Any] = None) -> tuple[dict[str, np.ndarray], str]:
    return layernorm_oracle(problem, inputs), norm_reference_name(problem)


def groupnorm_outputs(problem: GroupNormProblem, inputs: dict[str, Any], backend: str = "numpy",
                      cancel: Optional[Any] = None) -> tuple[dict[str, np.ndarray], str]:
    return groupnorm_oracle(problem, inputs), norm_reference_name(problem)


def rnn_reference_name(problem: RNNProblem, backend: str = "numpy") -> str:
    """numpy's float64 RNN for torch and MIOpenDriver; torch's for the numpy backend (its
    own code when torch is not installed)."""
    if backend not in ("numpy", "numba"):
        return RNN_NUMPY
    return RNN_TORCH if _torch_installed() else RNN_SELF


def _torch_rnn64(problem: RNNProblem, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    import torch

    from miotui.execute.torch_rnn import torch_rnn
    t = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in inputs.items()}
    return {k: v.detach().cpu().numpy() for k, v in torch_rnn(problem, t).items()}


def rnn_outputs(problem: RNNProblem, inputs: dict[str, Any], backend: str = "numpy",
                cancel: Optional[Any] = None) -> tuple[dict[str, np.ndarray], str]:
    name = rnn_reference_name(problem, backend)
    if name == RNN_TORCH:
        try:
            return _torch_rnn64(problem, inputs), name
        except (ImportError, OSError):   # installed but not loadable: say what ran instead
            name = RNN_SELF.replace("torch is not installed", "torch does not load")
    from miotui.execute import reference
    return reference.run_reference(problem, inputs, precision="fp64", cancel=cancel), name

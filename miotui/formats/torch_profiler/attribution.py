"""How a convolution backward op's kernels split between its two layers.

Which kernels ran under which op is :mod:`miotui.kernel_attribution` (shared with the torch
backend's own timing).  A convolution's backward op computes both gradients, data first, then weights (PyTorch's
order).  Its kernels are split between the two where the vendor's kernel names say which
(cuDNN's ``dgrad``/``wgrad``, CUTLASS's ``Dgrad``/``Wgrad``, MIOpen's ``bwd``/``wrw`` and
``backward_data``/``backward_weights``): every kernel up to the last one named for the data
gradient is the data gradient's, the rest the weights'.  Helper kernels between the two
(layout transforms) cannot be told apart; their time is reported.  Where the names do not
say (cuBLAS GEMMs, Winograd kernels) or contradict that order, the pair keeps its combined
time and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

_WEIGHTS = re.compile(r"wgrad|wrw|backward_?weight", re.IGNORECASE)
_DATA = re.compile(r"dgrad|bwd|backward_?data", re.IGNORECASE)


def kernel_side(name: str) -> Optional[str]:
    """``"weights"``, ``"data"`` or None: which gradient a backward kernel's name says it
    computes (weights first: MIOpen's ``ConvBwdWrW`` names both words)."""
    if _WEIGHTS.search(name):
        return "weights"
    if _DATA.search(name):
        return "data"
    return None


@dataclass(frozen=True)
class Split:
    """An op call's kernel time per layer (µs), or the combined time where it cannot be split."""

    times: tuple[float, ...]
    combined: Optional[float] = None
    between_us: float = 0.0
    why: str = ""


def split_backward(kernels: list) -> Split:
    """A backward op's kernels (in launch order) shared out between its data and weights
    gradients (see the module's docstring)."""
    kernels = sorted(kernels, key=lambda k: k[0])
    sides = [side for _, _, side in kernels]
    total = sum(us for _, us, _ in kernels)
    if "data" not in sides or "weights" not in sides:
        return Split((), total, why="the kernels' names do not say which gradient each computes")
    last_data = max(i for i, s in enumerate(sides) if s == "data")
    first_weights = sides.index("weights")
    if first_weights < last_data:
        return Split((), total, why="kernels named for the two gradients interleave")
    data = sum(us for _, us, _ in kernels[:last_data + 1])
    between = sum(us for _, us, _ in kernels[last_data + 1:first_weights])
    return Split((data, total - data), between_us=between)

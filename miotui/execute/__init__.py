"""Running a layer: the CPU reference, numba kernels, torch, MIOpenDriver; verification and the memory guard.

Importing the package first sets two hints that only work before a library loads:
numpy's OpenBLAS kernels (:func:`miotui.execute.blas.prefer_avx512_openblas`) and
torch's OpenMP wait policy (below).  The public entry points are
:func:`miotui.execute.runner.run_layer` and the names in :mod:`miotui.execute.backends`.
"""

import os

from miotui.execute.blas import BLAS_CORETYPE_SET  # the OpenBLAS hint is set when blas is imported

__all__ = ["BLAS_CORETYPE_SET"]

# torch's OpenMP threads spin after each op by default; with numpy runs alternating in the
# same process that idle spinning slowed numpy up to 17x here. Must be set before torch
# is imported (a user's own setting wins).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

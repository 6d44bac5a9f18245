"""Running a layer: the CPU reference, numba kernels, torch, MIOpenDriver; verification and the memory guard.

Importing the package first gives numpy's OpenBLAS its kernel hint
(:func:`miotui.execute.blas.prefer_avx512_openblas`), which only works before numpy is
loaded.  The public entry points are :func:`miotui.execute.runner.run_layer` and the
names in :mod:`miotui.execute.backends`.
"""

import miotui.execute.blas  # noqa: F401  (the OpenBLAS hint, before anything imports numpy)

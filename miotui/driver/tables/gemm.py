"""``gemm``: ``GemmDriver::AddCmdLineArgs`` in every era.

Why a table: the batch flag kept its letter ``-b`` but changed its long name in 1.5, and the
driver vanished in 1.1.  The library never logs a gemm command.  Sources: ROCm/MIOpen
``driver/gemm_driver.hpp`` at tags 1.0.0, v1.2.0 ... rocm-6.2.2, rocm-test-09212024, develop
2d1fd997 (absent in 1.1.0); ``main.cpp``/``dm_gemm.cpp``; ROCm/rocm-libraries
``projects/miopen/driver/gemm_driver.hpp`` @07647551.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

GEMM = Subcommand(
    family="gemm",
    bases=(
        Base("gemm", "fp32", until="1.0"),
        Base("gemm", "fp32", since="1.2", note="absent from 1.1 (no driver, not in the valid list)"),
        Base("gemmfp16", "fp16", since="3.1"),
    ),
    flags=(
        Flag("forw", "F", "1", "direction (only forward exists)", "int", _P),
        Flag("batchsize", "b", "1", "batch count", "int", _P, until="1.4"),
        Flag("batch_count", "b", "1", "batch count (strided batched GEMM when > 1)", "int", _P, since="1.5"),
        Flag("isColMajor", "C", "0", "1 = matrices are column major", "int", _P, since="1.5"),
        Flag("a_h", "m", "256", "M, rows of A", "int", _P),
        Flag("a_w", "k", "256", "K, columns of A", "int", _P),
        Flag("b_w", "n", "256", "N, columns of B", "int", _P),
        Flag("alpha", "A", "1.0", "alpha", "double", _P, until="1.2"),
        Flag("alpha", "A", "1.0", "alpha", "float", _P, since="1.3"),
        Flag("beta", "B", "0.0", "beta", "double", _P, until="1.2"),
        Flag("beta", "B", "0.0", "beta", "float", _P, since="1.3"),
        Flag("transA", "u", "0", "1 = transpose A", "int", _P),
        Flag("transB", "v", "0", "1 = transpose B", "int", _P),
        Flag("iter", "i", "10", "timed iterations", "int", _R),
        Flag("verify", "V", "0", "1 = check against a CPU reference", "int", _R),
        Flag("time", "t", "0", "1 = print kernel time", "int", _R),
        Flag("parallel", "p", "0", "1 = parallel CPU reference", "int", _R, since="3.5"),
    ),
    source=("ROCm/MIOpen driver/gemm_driver.hpp, main.cpp, dm_gemm.cpp at tags 1.0.0, v1.2.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/gemm_driver.hpp "
            "@07647551"),
    summary="MIOpen's internal GEMM wrapper (rocBLAS/MIOpenGEMM), forward only",
    notes="No wall flag in any era. -p/--parallel is newest-only (3.5 assumed). Never logged by the library.",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = ()
LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = ()

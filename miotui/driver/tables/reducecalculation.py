"""``reducecalculation``: ``ReduceCalculationDriver::AddCmdLineArgs`` (MIOpen 3.3+).

Why a table: it replaced ``sum`` (3.1-3.2) and its logged line never prints the input shape.
Sources: ROCm/MIOpen ``driver/reducecalculation_driver.hpp`` at rocm-test-09212024 and develop
2d1fd997; ``dm_reducecalculation.cpp``; ROCm/rocm-libraries
``projects/miopen/driver/reducecalculation_driver.hpp`` @07647551.  Logging:
``src/reducecalculation_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

REDUCECALCULATION = Subcommand(
    family="reducecalculation",
    bases=(
        Base("reducecalculation", "fp32", since="3.3"),
        Base("reducecalculationfp16", "fp16", since="3.3"),
        Base("reducecalculationbfp16", "bf16", since="3.3"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward (only forward exists)", "int", _P, since="3.3"),
        Flag("input", "X", "256x4x8732", "input tensor", "tensor descriptor", _P, since="3.3"),
        Flag("DimToReduce", "R", "1", "dimension to reduce", "int", _P, since="3.3"),
        Flag("NanPropagation", "N", "0", "0 no NaN propagation, 1 propagate", "int", _P, since="3.3"),
        Flag("ReduceCalculationOp", "O", "2", "1 product, 2 sum (miopenReduceCalculationOp_t)", "int", _P,
             since="3.3"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.3"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.3"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.3"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.3"),
    ),
    source=("ROCm/MIOpen driver/reducecalculation_driver.hpp, dm_reducecalculation.cpp at rocm-test-09212024 and "
            "develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/reducecalculation_driver.hpp @07647551"),
    summary="sum or product along one dimension, forward only",
    notes="Unchanged from 3.3 to the newest driver.",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.3", "", ("LogCmdReduceCalculation: reducecalculationfp16|fp32|bfp16 -F -n <nan> -R -O (input shape "
     "computed but never printed)"), ("-F", "-n", "-R", "-O")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("3.3", "", "-n", "the NaN mode is printed as -n; the driver's flag is -N (no -n exists)"),
)

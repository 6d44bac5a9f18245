"""``reduceextreme``: ``ReduceExtremeDriver::AddCmdLineArgs`` (MIOpen 3.2+).

Why a table: its logged line changed from ``-n -c -D -H -W`` (3.2, flags the driver never had)
to ``-input`` (3.3+, read as ``-i``).  Sources: ROCm/MIOpen ``driver/reduceextreme_driver.hpp``
at rocm-6.2.0 ... rocm-6.2.2, rocm-test-09212024, develop 2d1fd997; ``dm_reduceextreme.cpp``;
ROCm/rocm-libraries ``projects/miopen/driver/reduceextreme_driver.hpp`` @07647551 (unchanged).
Logging:
``src/reduceextreme_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

REDUCEEXTREME = Subcommand(
    family="reduceextreme",
    bases=(
        Base("reduceextreme", "fp32", since="3.2"),
        Base("reduceextremefp16", "fp16", since="3.2"),
        Base("reduceextremebfp16", "bf16", since="3.2"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward (only forward exists)", "int", _P, since="3.2"),
        Flag("input", "X", "21x500x375", "input tensor", "tensor descriptor", _P, since="3.2"),
        Flag("DimToReduce", "R", "0", "dimension to reduce", "int", _P, since="3.2"),
        Flag("ReduceExtremeOp", "O", "1", "1 argmin, 2 argmax, 3 min, 4 max (miopenReduceExtremeOp_t)", "int", _P,
             since="3.2"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.2"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.2"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.2"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.2"),
    ),
    source=("ROCm/MIOpen driver/reduceextreme_driver.hpp, dm_reduceextreme.cpp at rocm-6.2.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "reduceextreme_driver.hpp @07647551"),
    summary="arg-min/arg-max/min/max along one dimension, forward only",
    notes="Replaced argmax (3.1 only).",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.2", "3.2", "LogCmdReduceExtreme: reduceextremefp16|fp32|bfp16 -n -c [-D] -H -W -F -R -O",
     ("-n", "-c", "-D", "-H", "-W", "-F", "-R", "-O")),
    ("3.3", "", "reduceextremefp16|fp32|bfp16 -input AxB -F -R -O", ("-input", "-F", "-R", "-O")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = tuple(
    ("3.2", "3.2", t, "no such reduceextreme flag (the shape belongs in -X)") for t in ("-n", "-c", "-D", "-H", "-W")
) + (("3.3", "", "-input", "reads as -i (iterations); the shape belongs in -X"),)

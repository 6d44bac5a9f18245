"""``glu``: ``GLUDriver::AddCmdLineArgs`` (develop Sep 2024, MIOpen 3.3 / ROCm 6.3 changelog).

Why a table: a base in today's valid list needs its flags even though the library never logs a
GLU command.  Sources: ROCm/MIOpen ``driver/glu_driver.hpp`` and ``dm_glu.cpp`` at develop
2d1fd997 (added by 93cfc7b29, 2024-09-27; the 3.3.0/ROCm 6.3 changelog lists GLU);
ROCm/rocm-libraries ``projects/miopen/driver/glu_driver.hpp`` @07647551 (unchanged).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

GLU = Subcommand(
    family="glu",
    bases=(
        Base("glu", "fp32", since="3.3"),
        Base("glufp16", "fp16", since="3.3"),
        Base("glubfp16", "bf16", since="3.3"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward only, 0 forward and backward", "int", _P, since="3.3"),
        Flag("dim_lengths", "D", "256x512", "input tensor lengths", "tensor descriptor", _P, since="3.3"),
        Flag("dim_to_split", "R", "0", "dimension halved into value and gate", "int", _P, since="3.3"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.3"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.3"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.3"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.3"),
    ),
    source=("ROCm/MIOpen driver/glu_driver.hpp, dm_glu.cpp at develop 2d1fd997; ROCm/rocm-libraries "
            "projects/miopen/driver/glu_driver.hpp @07647551"),
    summary="gated linear unit along one dimension",
    notes="Not in rocm-test-09212024; in the 3.3.0 changelog (experimental).",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = ()
LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = ()

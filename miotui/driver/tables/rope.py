"""``rope``: ``RoPEDriver::AddCmdLineArgs`` (MIOpen 3.3+).

Why a table: the library logs ``-input``, which the driver reads as ``-i`` (iterations).
Sources: ROCm/MIOpen ``driver/rope_driver.hpp`` at rocm-test-09212024 and develop 2d1fd997;
``dm_rope.cpp``; ROCm/rocm-libraries ``projects/miopen/driver/rope_driver.hpp`` @07647551, @04c27099.
Logging: ``src/rope_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

ROPE = Subcommand(
    family="rope",
    bases=(
        Base("rope", "fp32", since="3.3"),
        Base("ropefp16", "fp16", since="3.3"),
        Base("ropebfp16", "bf16", since="3.3"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward only, 2 backward only, 0 both", "int", _P, since="3.3"),
        Flag("input", "X", "100x3x32x32", "input tensor (cos/sin take its last three lengths)",
             "tensor descriptor", _P, since="3.3"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.3"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.3"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.3"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.3"),
    ),
    source=("ROCm/MIOpen driver/rope_driver.hpp, dm_rope.cpp at rocm-test-09212024 and develop 2d1fd997; "
            "ROCm/rocm-libraries projects/miopen/driver/rope_driver.hpp @07647551, @04c27099"),
    summary="rotary position embedding, forward and backward",
    notes="Unchanged from 3.3 to the newest driver read.",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.3", "", "LogCmdRoPE: ropefp16|fp32|bfp16 -input AxBxC -F 1|2", ("-input", "-F")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("3.3", "", "-input", "reads as -i (iterations); the shape belongs in -X"),
    ("3.3", "", "-F", "backward calls are logged as forward"),
)

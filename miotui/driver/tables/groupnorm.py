"""``groupnorm``: ``GroupNormDriver::AddCmdLineArgs`` (MIOpen 3.1+).

Why a table: the defaults changed in 3.3 (a 5-D 32x32x14x14x14 problem by default), and the
library logs base names the driver does not know.  Sources: ROCm/MIOpen
``driver/groupnorm_driver.hpp`` at tags rocm-6.1.0 ... rocm-6.2.2, rocm-test-09212024, develop
2d1fd997; ``main.cpp``/``dm_groupnorm.cpp``; ROCm/rocm-libraries
``projects/miopen/driver/groupnorm_driver.hpp`` @07647551.  Logging: ``src/groupnorm_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

GROUPNORM = Subcommand(
    family="groupnorm",
    bases=(
        Base("groupnorm", "fp32", since="3.1"),
        Base("groupnormfp16", "fp16", since="3.1"),
        Base("groupnormbfp16", "bf16", since="3.1"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward (only forward exists)", "int", _P, since="3.1"),
        Flag("batchsize", "n", "100", "N", "int", _P, since="3.1", until="3.2"),
        Flag("batchsize", "n", "32", "N", "int", _P, since="3.3"),
        Flag("in_channels", "c", "6", "C", "int", _P, since="3.1", until="3.2"),
        Flag("in_channels", "c", "32", "C", "int", _P, since="3.3"),
        Flag("in_d", "D", "0", "depth; non-zero makes the input 5-D", "int", _P, since="3.1", until="3.2"),
        Flag("in_d", "D", "14", "depth; 0 drops it (4-D, or 3-D when H is 0 too)", "int", _P, since="3.3"),
        Flag("in_h", "H", "32", "height", "int", _P, since="3.1", until="3.2"),
        Flag("in_h", "H", "14", "height", "int", _P, since="3.3"),
        Flag("in_w", "W", "32", "width", "int", _P, since="3.1", until="3.2"),
        Flag("in_w", "W", "14", "width", "int", _P, since="3.3"),
        Flag("eps", "e", "0.00001", "epsilon", "double", _P, since="3.1"),
        Flag("num_groups", "g", "3", "number of groups", "int", _P, since="3.1", until="3.2"),
        Flag("num_groups", "g", "4", "number of groups", "int", _P, since="3.3"),
        Flag("mode", "m", "0", "0 element-wise affine, 1 weight and bias", "int", _P, since="3.1"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.1"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.1"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.1"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.1"),
        Flag("mt", "u", "0", "1 = multithreaded CPU reference", "int", _R, since="3.5"),
    ),
    source=("ROCm/MIOpen driver/groupnorm_driver.hpp, main.cpp, dm_groupnorm.cpp at tags rocm-6.1.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "groupnorm_driver.hpp @07647551"),
    summary="group normalization, forward only",
    notes="A writer must always spell -D (0 for 4-D) because the 3.3+ default depth is 14.",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.1", "", "LogCmdGroupNorm: groupnormfp32|fp16|bfp16|fp64 -n -c [-D] -H -W -g -m -F",
     ("-n", "-c", "-D", "-H", "-W", "-g", "-m", "-F")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("3.1", "", "-D", "omitted for 4-D inputs; from 3.3 the driver's default depth (14) then makes it 5-D"),
)

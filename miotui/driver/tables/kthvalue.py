"""``kthvalue``: ``KthvalueDriver::AddCmdLineArgs`` (develop Oct 2024, MIOpen 3.3.0 onwards).

Why a table: its long names contain dashes (``--dim-lengths``, ``--keep-dim``), and the logged
line (``-n N -T {...} -Si {...}``) matches none of its flags.  Sources: ROCm/MIOpen
``driver/kthvalue_driver.hpp`` at develop 2d1fd997 (not at rocm-test-09212024);
``dm_kthvalue.cpp``; ROCm/rocm-libraries ``projects/miopen/driver/kthvalue_driver.hpp`` @04b1f920
(and @07647551, whose file was only read past its flag list).
Logging: ``src/kthvalue_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

KTHVALUE = Subcommand(
    family="kthvalue",
    bases=(
        Base("kthvalue", "fp32", since="3.3", note="added to develop 2024-10-01 (f0384a506); may be absent "
                                                   "from the ROCm 6.3.0 build"),
        Base("kthvaluefp16", "fp16", since="3.3"),
        Base("kthvaluebfp16", "bf16", since="3.3"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward (only forward exists)", "int", _P, since="3.3"),
        Flag("dim-lengths", "D", "256x4x2", "input tensor lengths", "tensor descriptor", _P, since="3.3"),
        Flag("k", "k", "1", "k (1-based rank of the value)", "int", _P, since="3.3"),
        Flag("dim", "d", "-1", "dimension to search; negative counts from the end", "int", _P, since="3.3"),
        Flag("keep-dim", "K", "0", "1 = keep the reduced dimension with length 1", "int", _P, since="3.3"),
        Flag("is-contiguous", "c", "1", "0 = use a transposed-stride (non-contiguous) input", "int", _P,
             since="3.3"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.3"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.3"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.3"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.3"),
    ),
    source=("ROCm/MIOpen driver/kthvalue_driver.hpp, dm_kthvalue.cpp at develop 2d1fd997; ROCm/rocm-libraries "
            "projects/miopen/driver/kthvalue_driver.hpp @04b1f920"),
    summary="k-th smallest value (and its index) along one dimension, forward only",
    notes="MIOpen#3824 (2025-06) reports the default 'kthvalue' run ends with 'solver not found'.",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.3", "", "LogCmdKthvalue: kthvaluefp16|fp32|bfp16 -n N -T {lens} -Si {strides} -F", ("-n", "-T", "-Si", "-F")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("3.3", "", "-n", "not a kthvalue flag"),
    ("3.3", "", "-T", "not a kthvalue flag (the lengths belong in -D AxBxC)"),
    ("3.3", "", "-Si", "reads as -S, not a kthvalue flag; k, dim and keep-dim are never logged"),
)

"""``softmarginloss`` and ``multimarginloss`` (develop Oct 2024, MIOpen 3.3.0 onwards).

Why a table: both use the older ``"tensor"`` type string (parsed like tensor descriptors) and
neither is ever logged as a command.  Sources: ROCm/MIOpen ``driver/softmarginloss_driver.hpp``,
``multimarginloss_driver.hpp``, ``dm_*marginloss.cpp`` at develop 2d1fd997 (5c7d495ed
2024-10-06, a88d7d8f8 2024-10-07); ROCm/rocm-libraries ``projects/miopen/driver/``
``softmarginloss_driver.hpp`` and ``multimarginloss_driver.hpp`` @07647551 (unchanged).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

_RUN = (
    Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.3"),
    Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.3"),
    Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.3"),
    Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.3"),
)

SOFTMARGINLOSS = Subcommand(
    family="softmarginloss",
    bases=(
        Base("softmarginloss", "fp32", since="3.3", note="added to develop 2024-10-06; may be absent from the "
                                                         "ROCm 6.3.0 build"),
        Base("softmarginlossfp16", "fp16", since="3.3"),
        Base("softmarginlossbfp16", "bf16", since="3.3"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward only, 2 backward only, 0 both", "int", _P, since="3.3"),
        Flag("dim", "D", "4x25x4x25", "input tensor lengths", "tensor", _P, since="3.3"),
        Flag("stride", "S", "-1", "input strides AxBx...; -1 = derive from --contiguous", "tensor", _P,
             since="3.3"),
        Flag("contiguous", "C", "1", "0 = a strided (non-contiguous) input", "int", _P, since="3.3"),
        Flag("reduce", "R", "none", "reduction: none, mean or sum", "string", _P, since="3.3"),
    ) + _RUN,
    source=("ROCm/MIOpen driver/softmarginloss_driver.hpp, dm_softmarginloss.cpp at develop 2d1fd997; "
            "ROCm/rocm-libraries projects/miopen/driver/softmarginloss_driver.hpp @07647551"),
    summary="soft margin loss, forward and backward",
    notes="Any --reduce value other than none/mean/sum makes ParseCmdLineArgs fail.",
)

MULTIMARGINLOSS = Subcommand(
    family="multimarginloss",
    bases=(
        Base("multimarginloss", "fp32", since="3.3", note="added to develop 2024-10-07; may be absent from the "
                                                          "ROCm 6.3.0 build"),
        Base("multimarginlossfp16", "fp16", since="3.3"),
        Base("multimarginlossbfp16", "bf16", since="3.3"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward (backward is not implemented)", "int", _P, since="3.3"),
        Flag("dim", "D", "41x4", "input tensor lengths NxC", "tensor", _P, since="3.3"),
        Flag("contiguous", "C", "1", "0 = a strided (non-contiguous) input", "int", _P, since="3.3"),
        Flag("reduce", "R", "none", "reduction: none, mean or sum", "str", _P, since="3.3"),
    ) + _RUN,
    source=("ROCm/MIOpen driver/multimarginloss_driver.hpp, dm_multimarginloss.cpp at develop 2d1fd997; "
            "ROCm/rocm-libraries projects/miopen/driver/multimarginloss_driver.hpp @07647551"),
    summary="multi-class margin loss, forward only (p and margin are drawn at random by the driver)",
    notes="-F 2 fails with 'MultiMarginLoss backward is not implemented.'",
)

LOGGED_FLAGS: dict[str, tuple[tuple[str, str, str, tuple[str, ...]], ...]] = {}
LOGGING_DEFECTS: dict[str, tuple[tuple[str, str, str, str], ...]] = {}

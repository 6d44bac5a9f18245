"""``prelu``: ``PReLUDriver::AddCmdLineArgs`` (MIOpen 3.3+, backward only).

Why a table: the logged line uses ``{a,b}`` braces and a ``--weight`` flag that do not exist in
the driver.  Sources: ROCm/MIOpen ``driver/prelu_driver.hpp`` at rocm-test-09212024 and
develop 2d1fd997; ``dm_prelu.cpp``; ROCm/rocm-libraries ``projects/miopen/driver/prelu_driver.hpp``
@07647551.  Logging: ``src/prelu_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

PRELU = Subcommand(
    family="prelu",
    bases=(
        Base("prelu", "fp32", since="3.3"),
        Base("prelufp16", "fp16", since="3.3"),
        Base("prelubfp16", "bf16", since="3.3"),
    ),
    flags=(
        Flag("forw", "F", "1", "direction; forward is not implemented (use 2)", "int", _P, since="3.3"),
        Flag("input", "D", "256x4x1x1x8723", "input tensor", "tensor descriptor", _P, since="3.3"),
        Flag("NumParameters", "P", "1", "learned weights: 1 or the channel count", "int", _P, since="3.3"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.3"),
        Flag("verify", "V", "0", "1 = check against a CPU reference", "int", _R, since="3.3"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.3"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.3"),
    ),
    source=("ROCm/MIOpen driver/prelu_driver.hpp, dm_prelu.cpp at rocm-test-09212024 and develop 2d1fd997; "
            "ROCm/rocm-libraries projects/miopen/driver/prelu_driver.hpp @07647551"),
    summary="parametric ReLU, backward only (the forward run returns 'not implemented')",
    notes="The default -F 1 fails (rc 0x6, MIOpen#3824); -F 2 runs the backward pass.",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.3", "", "LogCmdPReLU: prelufp16|fp32|bfp16 --input {a,b,...} --weight {c} -F", ("--input", "--weight", "-F")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("3.3", "", "--input", "value printed as {a,b,...}; the tensor parser wants AxBx..."),
    ("3.3", "", "--weight", "not a driver flag ('Long Name: weight Not Found'); the weight count is -P"),
)

"""``tensorop``: ``TensorOpDriver::AddCmdLineArgs`` (MIOpen 2.3+).

Why a table: ``tensoropfp16`` is still made by the driver but left the valid list in 3.3,
and the logged op number is offset by two from the API enum.  Sources: ROCm/MIOpen
``driver/tensorop_driver.hpp`` at tags 2.3.0 ... rocm-6.2.2, rocm-test-09212024, develop
2d1fd997; ``main.cpp``/``dm_tensorop.cpp``; ROCm/rocm-libraries
``projects/miopen/driver/tensorop_driver.hpp`` @07647551.  Logging: ``src/tensor_api.cpp`` (2.3+).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

TENSOROP = Subcommand(
    family="tensorop",
    bases=(
        Base("tensorop", "fp32", since="2.3"),
        Base("tensoropfp16", "fp16", since="2.3", until="3.2",
             note="dm_tensorop.cpp still makes it after 3.2, but the valid list rejects it (MIOpen#3824)"),
    ),
    flags=(
        Flag("forw", "F", "1", "direction (not used)", "int", _P, since="2.3"),
        Flag("batchsize", "n", "64", "N", "int", _P, since="2.3"),
        Flag("in_channels", "c", "3", "C", "int", _P, since="2.3"),
        Flag("in_h", "H", "32", "height", "int", _P, since="2.3"),
        Flag("in_w", "W", "32", "width", "int", _P, since="2.3"),
        Flag("alpha1", "A", "1", "scale of A", "double", _P, since="2.3"),
        Flag("alpha2", "B", "1", "scale of B", "double", _P, since="2.3"),
        Flag("beta", "G", "0", "scale of the prior C", "double", _P, since="2.3"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="2.3"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="2.3"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="2.3"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="2.3"),
        Flag("tensor_op", "o", "0", "0 SetTensor, 1 ScaleTensor, 2 add, 3 mul, 4 min, 5 max", "int", _P,
             since="2.3"),
        Flag("tensor_val", "v", "1", "scalar for SetTensor/ScaleTensor", "double", _P, since="2.3"),
    ),
    source=("ROCm/MIOpen driver/tensorop_driver.hpp, main.cpp, dm_tensorop.cpp at tags 2.3.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "tensorop_driver.hpp @07647551"),
    summary="SetTensor, ScaleTensor and OpTensor (add/mul/min/max) on 4-D tensors",
    notes="An op number past the enum prints the usage text and exits (exit 1 in the newest driver).",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("2.3", "", "LogCmdTensorOp: tensorop|tensoropfp16 [-A -B -G] -n -c -H -W -o <op> [-v]",
     ("-A", "-B", "-G", "-n", "-c", "-H", "-W", "-o", "-v")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = ()

"""``cat``: ``CatDriver::AddCmdLineArgs`` (MIOpen 3.1+).

Why a table: the library logs concatenation as one ``-dims`` line per input, which the driver
reads as ``-d`` (the concat dimension); the driver wants ``-1 ... -8`` tensors.  Sources:
ROCm/MIOpen ``driver/cat_driver.hpp`` at tags rocm-6.1.0 ... rocm-6.2.2, rocm-test-09212024,
develop 2d1fd997; ``main.cpp``/``dm_cat.cpp``; ROCm/rocm-libraries
``projects/miopen/driver/cat_driver.hpp`` @07647551.  Logging: ``src/cat_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

CAT = Subcommand(
    family="cat",
    bases=(
        Base("cat", "fp32", since="3.1"),
        Base("catfp16", "fp16", since="3.1"),
        Base("catbfp16", "bf16", since="3.1"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward (only forward exists)", "int", _P, since="3.1"),
        Flag("input1", "1", "", "first input tensor AxBx...", "tensor descriptor", _P, since="3.1", until="3.2"),
        Flag("input1", "1", "2x32x128x128x128", "first input tensor", "tensor descriptor", _P, since="3.3"),
        Flag("input2", "2", "", "second input tensor", "tensor descriptor", _P, since="3.1", until="3.2"),
        Flag("input2", "2", "2x32x128x128x128", "second input tensor", "tensor descriptor", _P, since="3.3"),
        Flag("input3", "3", "", "third input tensor (empty = unused)", "tensor descriptor", _P, since="3.1"),
        Flag("input4", "4", "", "fourth input tensor", "tensor descriptor", _P, since="3.1"),
        Flag("input5", "5", "", "fifth input tensor", "tensor descriptor", _P, since="3.1"),
        Flag("input6", "6", "", "sixth input tensor", "tensor descriptor", _P, since="3.1"),
        Flag("input7", "7", "", "seventh input tensor", "tensor descriptor", _P, since="3.1"),
        Flag("input8", "8", "", "eighth input tensor", "tensor descriptor", _P, since="3.1"),
        Flag("dim", "d", "0", "concatenation dimension", "int", _P, since="3.1"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.1"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.1"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.1"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.1"),
        Flag("mt", "M", "0", "1 = multithreaded CPU reference", "int", _R, since="3.5"),
    ),
    source=("ROCm/MIOpen driver/cat_driver.hpp, main.cpp, dm_cat.cpp at tags rocm-6.1.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/cat_driver.hpp "
            "@07647551"),
    summary="concatenation of up to 8 tensors along one dimension, forward only",
    notes=("From 3.3 inputs 1 and 2 default to 2x32x128x128x128: a writer must always spell both. "
           "The newest drivers' CPU-reference thread switch has no common letter: --mt is -M here and in lrn "
           "and the adam drivers, -u in dropout and the norm drivers, -U in pool; reduce has "
           "-m/--multithreaded, gemm and ctc -p/--parallel."),
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.1", "", "LogCmdCat: one line per input, catfp16|catfp32|catf16 (bf16) -dims a,b,c -F 1", ("-dims", "-F")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("3.1", "", "-dims", ("a single dash takes only 'd': the driver sets the concat dimension from 'a,b,c' (atoi "
     "= a); the inputs (-1..-8) and the real dimension are never logged")),
)

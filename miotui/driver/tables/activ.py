"""``activ``: ``ActivationDriver::AddCmdLineArgs`` in every era.

Why a table: alpha/beta changed meaning and defaults in 1.4 (power became gamma), and the
newest driver adds a HIP-graph flag.  Sources: ROCm/MIOpen ``driver/activ_driver.hpp`` at tags
1.0.0 ... rocm-6.2.2, rocm-test-09212024, develop 2d1fd997; ``main.cpp``/``dm_activ.cpp``;
ROCm/rocm-libraries ``projects/miopen/driver/activ_driver.hpp`` @07647551, ``driver.cpp``
@5fae43a4.  Logging: ``src/activ_api.cpp`` (2.3+).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

ACTIV = Subcommand(
    family="activ",
    bases=(
        Base("activ", "fp32"),
        Base("activfp16", "fp16", since="1.3"),
    ),
    flags=(
        Flag("forw", "F", "0", "1 forward only, 2 backward only, 0 both", "int", _P),
        Flag("batchsize", "n", "100", "N", "int", _P),
        Flag("in_channels", "c", "3", "C", "int", _P),
        Flag("in_h", "H", "32", "input height", "int", _P),
        Flag("in_w", "W", "32", "input width", "int", _P),
        Flag("mode", "m", "3", "activation mode number (miopenActivationMode_t; 3 = relu)", "int", _P),
        Flag("alpha", "A", "0.0", "activation alpha", "double", _P, until="1.3"),
        Flag("beta", "B", "0.0", "activation beta", "double", _P, until="1.3"),
        Flag("power", "P", "1.0", "activation power (became gamma in 1.4)", "double", _P, until="1.3"),
        Flag("alpha", "A", "1", "activation alpha", "double", _P, since="1.4"),
        Flag("beta", "B", "1", "activation beta", "double", _P, since="1.4"),
        Flag("gamma", "G", "1", "activation gamma", "double", _P, since="1.4"),
        Flag("iter", "i", "10", "timed iterations", "int", _R),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="2.0"),
        Flag("use_hip_graph", "Q", "0", "1 = replay iterations from a HIP graph (HIP builds only)", "int", _R,
             since="3.5.1"),
    ),
    source=("ROCm/MIOpen driver/activ_driver.hpp, main.cpp, dm_activ.cpp at tags 1.0.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/activ_driver.hpp "
            "@07647551, driver.cpp @5fae43a4"),
    summary="element-wise activation (relu, tanh, ... by enum number), forward and backward, 4-D NCHW",
    notes=("Only 4-D NCHW inputs. No activbfp16 base in any era (the library returns NotImplemented for bf16 "
           "before logging). -Q is declared only in HIP builds of the newest driver."),
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("2.3", "", "LogCmdActivation: activ|activfp16 -n -c -H -W -m <int> --forw 1|2 -A -B -G",
     ("-n", "-c", "-H", "-W", "-m", "--forw", "-A", "-B", "-G")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("2.3", "", "-n", "tensor lengths are read as 4-D; 2-D/5-D tensors print wrong dimensions"),
)

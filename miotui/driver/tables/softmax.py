"""``softmax``: ``SoftmaxDriver::AddCmdLineArgs`` in every era.

Why a table: alpha/beta changed type (double -> float) in 1.3, algorithm/mode appeared in 2.0,
and the newest driver adds a layout flag and a bf16 base.  Sources: ROCm/MIOpen
``driver/softmax_driver.hpp`` at tags 1.0.0 ... rocm-6.2.2, rocm-test-09212024, develop
2d1fd997; ``main.cpp``/``dm_softmax.cpp``; ROCm/rocm-libraries
``projects/miopen/driver/softmax_driver.hpp`` @07647551.  Logging: ``src/softmax_api.cpp`` (2.3+).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

SOFTMAX = Subcommand(
    family="softmax",
    bases=(
        Base("softmax", "fp32"),
        Base("softmaxfp16", "fp16", since="1.3"),
        Base("softmaxbfp16", "bf16", since="3.5", note="newest valid list; maker not read"),
    ),
    flags=(
        Flag("forw", "F", "0", "1 forward only, 2 backward only, 0 both", "int", _P),
        Flag("batchsize", "n", "100", "N", "int", _P),
        Flag("in_channels", "c", "3", "C", "int", _P),
        Flag("in_h", "H", "32", "input height", "int", _P),
        Flag("in_w", "W", "32", "input width", "int", _P),
        Flag("alpha", "A", "0.0", "scale of the result", "double", _P, until="1.0"),
        Flag("alpha", "A", "1.0", "scale of the result", "double", _P, since="1.1", until="1.2"),
        Flag("alpha", "A", "1.0", "scale of the result", "float", _P, since="1.3"),
        Flag("beta", "B", "0.0", "scale of the prior output", "double", _P, until="1.2"),
        Flag("beta", "B", "0.0", "scale of the prior output", "float", _P, since="1.3"),
        Flag("iter", "i", "10", "timed iterations", "int", _R),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R),
        Flag("algorithm", "a", "1", "0 fast, 1 accurate, 2 log-softmax", "int", _P, since="2.0"),
        Flag("mode", "m", "1", "0 per instance, 1 per channel", "int", _P, since="2.0"),
        Flag("layout", "L", "", "NCHW or NHWC; empty = NCHW; upper-cased via --layout", "string", _P,
             since="3.5"),
    ),
    source=("ROCm/MIOpen driver/softmax_driver.hpp, main.cpp, dm_softmax.cpp at tags 1.0.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "softmax_driver.hpp @07647551"),
    summary="softmax / log-softmax over channels or instances, forward and backward, 4-D",
    notes="-L/--layout is newest-only (after Oct 2024; 3.5 assumed).",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("2.3", "", "LogCmdSoftmax: softmax|softmaxfp16 (newest also softmaxbfp16) -n -c -H -W -F 1|2 -a -m -A -B",
     ("-n", "-c", "-H", "-W", "-F", "-a", "-m", "-A", "-B")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = ()

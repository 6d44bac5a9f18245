"""``argmax``: ``ArgmaxDriver::AddCmdLineArgs`` (MIOpen 3.1 only; historic).

Why keep it: ROCm 6.1 logs may hold ``argmax*`` commands; in 3.2 the op moved into
``reduceextreme``.  Sources: ROCm/MIOpen ``driver/argmax_driver.hpp`` and ``main.cpp`` at
rocm-6.1.0.  Logging: ``src/argmax_api.cpp`` (3.1).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

ARGMAX = Subcommand(
    family="argmax",
    bases=(
        Base("argmax", "fp32", since="3.1", until="3.1"),
        Base("argmaxfp16", "fp16", since="3.1", until="3.1"),
        Base("argmaxbfp16", "bf16", since="3.1", until="3.1"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward (only forward exists)", "int", _P, since="3.1", until="3.1"),
        Flag("batchsize", "n", "21", "N", "int", _P, since="3.1", until="3.1"),
        Flag("in_channels", "c", "500", "C", "int", _P, since="3.1", until="3.1"),
        Flag("in_d", "D", "0", "depth (0 = absent)", "int", _P, since="3.1", until="3.1"),
        Flag("in_h", "H", "0", "height (0 = absent)", "int", _P, since="3.1", until="3.1"),
        Flag("in_w", "W", "375", "width", "int", _P, since="3.1", until="3.1"),
        Flag("DimToReduce", "R", "0", "dimension to reduce", "int", _P, since="3.1", until="3.1"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.1", until="3.1"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.1", until="3.1"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.1", until="3.1"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.1", until="3.1"),
    ),
    source="ROCm/MIOpen driver/argmax_driver.hpp, main.cpp at rocm-6.1.0",
    summary="arg-max along one dimension (became reduceextreme in 3.2)",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.1", "3.1", "LogCmdArgmax: argmaxfp16|fp32|bfp16 -n -c [-D] -H -W -F (the dimension is not printed)",
     ("-n", "-c", "-D", "-H", "-W", "-F")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = ()

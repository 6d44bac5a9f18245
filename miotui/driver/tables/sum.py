"""``sum``: ``SumDriver::AddCmdLineArgs`` (MIOpen 3.1-3.2; historic).

Why keep it: logs from ROCm 6.1/6.2 contain ``sum*`` commands, and the valid list kept the
names until MIOpen#3824 (2025-06) although the maker was deleted when ``reducecalculation``
replaced it (3.3).  Sources: ROCm/MIOpen ``driver/sum_driver.hpp`` at rocm-6.1.0 ... rocm-6.2.2;
``main.cpp``/``dm_sum.cpp``.  Logging: ``src/sum_api.cpp`` (3.1-3.2).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

_NOTE = "3.3-3.4: still in the valid list but no maker ('Incorrect BaseArg')"

SUM = Subcommand(
    family="sum",
    bases=(
        Base("sum", "fp32", since="3.1", until="3.4", note=_NOTE),
        Base("sumfp16", "fp16", since="3.1", until="3.4", note=_NOTE),
        Base("sumbfp16", "bf16", since="3.1", until="3.4", note=_NOTE),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward (only forward exists)", "int", _P, since="3.1", until="3.2"),
        Flag("batchsize", "n", "256", "N", "int", _P, since="3.1", until="3.2"),
        Flag("in_channels", "c", "4", "C", "int", _P, since="3.1", until="3.2"),
        Flag("in_d", "D", "0", "depth (0 = absent)", "int", _P, since="3.1", until="3.2"),
        Flag("in_h", "H", "0", "height (0 = absent)", "int", _P, since="3.1", until="3.2"),
        Flag("in_w", "W", "8732", "width", "int", _P, since="3.1", until="3.2"),
        Flag("DimToReduce", "R", "1", "dimension to reduce", "int", _P, since="3.1", until="3.2"),
        Flag("NanPropagation", "N", "0", "0 no NaN propagation, 1 propagate", "int", _P, since="3.1", until="3.2"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.1", until="3.2"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.1", until="3.2"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.1", until="3.2"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="3.1", until="3.2"),
    ),
    source="ROCm/MIOpen driver/sum_driver.hpp, main.cpp, dm_sum.cpp at rocm-6.1.0..rocm-6.2.2",
    summary="sum along one dimension (replaced by reducecalculation in 3.3)",
    notes="The flags exist only where a maker does (3.1-3.2); the bases stay valid to 3.4.",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.1", "3.2", "LogCmdSum: sumfp16|sumfp32|sumbfp16 -n -c [-D] -H -W -F (the reduced dimension is not printed)",
     ("-n", "-c", "-D", "-H", "-W", "-F")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = ()

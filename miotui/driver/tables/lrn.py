"""``lrn``: ``LRNDriver::AddCmdLineArgs`` in every era.

Why a table: the flag set has not changed since 1.0, but the library logs the mode as a number
while the driver wants a word, so the mismatch must be written down somewhere.  ``back``
appears in the source only inside a comment: it was never a flag.  Sources: ROCm/MIOpen
``driver/lrn_driver.hpp`` at tags 1.0.0 ... rocm-6.2.2, rocm-test-09212024, develop 2d1fd997;
``main.cpp``/``dm_lrn.cpp``; ROCm/rocm-libraries ``projects/miopen/driver/lrn_driver.hpp``
@07647551 (and @001d50d4, an earlier state without ``-M``).  Logging: ``src/lrn_api.cpp`` (2.3+).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

LRN = Subcommand(
    family="lrn",
    bases=(
        Base("lrn", "fp32"),
        Base("lrnfp16", "fp16", since="1.3"),
    ),
    flags=(
        Flag("forw", "F", "0", "1 forward only, 2 backward only, 0 both", "int", _P),
        Flag("batchsize", "n", "100", "N", "int", _P),
        Flag("in_channels", "c", "3", "C", "int", _P),
        Flag("in_h", "H", "32", "input height", "int", _P),
        Flag("in_w", "W", "32", "input width", "int", _P),
        Flag("lrnN", "N", "5", "window size n", "int", _P),
        Flag("alpha", "A", "0.001", "LRN alpha", "double", _P),
        Flag("beta", "B", "0.75", "LRN beta", "double", _P),
        Flag("lrnK", "K", "1.0", "LRN k", "double", _P),
        Flag("iter", "i", "10", "timed iterations", "int", _R),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R),
        Flag("printconv", "P", "1", "print the dimensions", "int", _R),
        Flag("mode", "m", "within", "within (channel) or cross (channel); anything else is an error", "str",
             _P),
        Flag("mt", "M", "0", "1 = multithreaded CPU reference", "int", _R, since="3.5"),
    ),
    source=("ROCm/MIOpen driver/lrn_driver.hpp, main.cpp, dm_lrn.cpp at tags 1.0.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/lrn_driver.hpp "
            "@07647551 and @001d50d4"),
    summary="local response normalization (within or across channels), forward and backward",
    notes="The same 15 flags from 1.0 to Oct 2024; the newest driver adds -M/--mt (3.5 assumed).",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("2.3", "", "LogCmdLRN: lrn|lrnfp16 -A -B -F 1|2 -H -K -N -W -c -m 0|1 -n",
     ("-A", "-B", "-F", "-H", "-K", "-N", "-W", "-c", "-m", "-n")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("2.3", "", "-m", "printed as 0|1; the driver wants 'within'|'cross' (0 -> within, 1 -> cross)"),
)

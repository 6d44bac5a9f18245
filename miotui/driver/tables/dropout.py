"""``dropout``: ``DropoutDriver::AddCmdLineArgs`` (MIOpen 2.1+).

Why a table: the logged dropout command carries only the tensor rank, not its shape, so a
reader must know the flag set to say what is missing.  Sources: ROCm/MIOpen
``driver/dropout_driver.hpp`` at tags 2.1.0 ... rocm-6.2.2, rocm-test-09212024, develop
2d1fd997; ``main.cpp``/``dm_dropout.cpp``; ROCm/rocm-libraries
``projects/miopen/driver/dropout_driver.hpp`` @07647551.  Logging: ``src/dropout_api.cpp`` (2.3+).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

DROPOUT = Subcommand(
    family="dropout",
    bases=(
        Base("dropout", "fp32", since="2.1"),
        Base("dropoutfp16", "fp16", since="2.1"),
    ),
    flags=(
        Flag("forw", "F", "1", "direction", "int", _P, since="2.1", until="2.2"),
        Flag("forw", "F", "0", "1 forward, 2 backward, 0 both", "int", _P, since="2.3"),
        Flag("input_dim", "d", "4", "input lengths, comma list, up to 5-D", "vector", _P, since="2.1"),
        Flag("dropout", "p", "0.5", "dropout rate", "float", _P, since="2.1"),
        Flag("seed_low", "l", "0", "seed, low 32 bits", "int", _P, since="2.1"),
        Flag("seed_high", "m", "0", "seed, high 32 bits", "int", _P, since="2.1"),
        Flag("use_mask", "e", "0", "1 = reuse a mask already in the reserve space", "int", _P, since="2.1"),
        Flag("gen_file", "f", "0", "1 = write PRNG skip-ahead files", "int", _R, since="2.1"),
        Flag("iter", "i", "1", "timed iterations", "int", _R, since="2.1"),
        Flag("verify", "V", "1", "1 = check against a CPU emulation", "int", _R, since="2.1"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="2.1"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="2.1"),
        Flag("dump_output", "o", "0", "write buffers to files", "int", _R, since="2.1"),
        Flag("mt", "u", "0", "1 = multithreaded CPU reference", "int", _R, since="3.5"),
    ),
    source=("ROCm/MIOpen driver/dropout_driver.hpp, main.cpp, dm_dropout.cpp at tags 2.1.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "dropout_driver.hpp @07647551"),
    summary="dropout forward and backward with MIOpen's XORWOW generator",
    notes="--input_dim takes the lengths themselves ('4,32,28,28'), despite its name. -u/--mt is newest-only.",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("2.3", "", "LogCmdDropout: dropout|dropoutfp16 -F 1|2 -d <rank> -e -l -m -p",
     ("-F", "-d", "-e", "-l", "-m", "-p")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("2.3", "", "-d", "printed as the tensor's rank; the driver reads -d as the list of lengths"),
)

"""``ctc``: ``CTCDriver::AddCmdLineArgs`` (MIOpen 2.0+).

Why a table: the CTC command is logged from inside ``miopenCTCLoss`` with a space-padded base
argument and comma lists, and the newest driver adds one flag.  Sources: ROCm/MIOpen
``driver/ctc_driver.hpp`` at tags 2.0.0 ... rocm-6.2.2, rocm-test-09212024, develop 2d1fd997;
``main.cpp``/``dm_rnn.cpp`` (which makes ``ctc``); ROCm/rocm-libraries
``projects/miopen/driver/ctc_driver.hpp`` @07647551.  Logging: ``src/ctc_api.cpp`` (2.3+).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

CTC = Subcommand(
    family="ctc",
    bases=(Base("ctc", "fp32", since="2.0"),),
    flags=(
        Flag("forw", "F", "1", "direction (forward loss and gradients)", "int", _P, since="2.0"),
        Flag("apply_softmax_layer", "m", "1", "1 = apply softmax to the input first", "int", _P, since="2.0"),
        Flag("blank_label_id", "b", "0", "index of the blank label", "int", _P, since="2.0"),
        Flag("input_len", "k", "20", "time steps per sample, comma list (last value repeats)", "vector", _P,
             since="2.0"),
        Flag("label_len", "l", "5", "labels per sample, comma list (last value repeats)", "vector", _P,
             since="2.0"),
        Flag("num_class", "c", "9", "number of classes without the blank", "int", _P, since="2.0"),
        Flag("batchsize", "n", "4", "batch size", "int", _P, since="2.0"),
        Flag("iter", "i", "1", "timed iterations", "int", _R, since="2.0"),
        Flag("verify", "V", "1", "1 = check losses and gradients against a CPU reference", "int", _R,
             since="2.0"),
        Flag("verify_path", "v", "1", "CPU reference: 1 fast path, 0 regular", "int", _R, since="2.0"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="2.0"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="2.0"),
        Flag("dump_output", "o", "0", "write buffers to files", "int", _R, since="2.0"),
        Flag("ctcalgo", "a", "0", "0 deterministic, 1 non-deterministic", "int", _P, since="2.0"),
        Flag("parallel", "p", "0", "1 = parallel CPU reference", "int", _R, since="3.5"),
    ),
    source=("ROCm/MIOpen driver/ctc_driver.hpp, main.cpp, dm_rnn.cpp at tags 2.0.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/ctc_driver.hpp "
            "@07647551"),
    summary="connectionist temporal classification loss and gradients, fp32 only",
    notes="-p/--parallel is newest-only (3.5 assumed).",
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("2.3", "", ("Command [miopenCTCLoss]:  ctc  -a -b -c <classes-1> -m -n [-l lens,...] [-k lens,...] "
     "(base argument padded with spaces)"), ("-a", "-b", "-c", "-m", "-n", "-l", "-k")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = ()

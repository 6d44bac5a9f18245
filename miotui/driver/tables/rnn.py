"""``rnn`` and ``rnn_seq``: the two RNN drivers (``RNNDriver``, ``RNNSeqDriver``).

Why a table: the RNN driver lost ``-t`` in 3.3 (the wall-clock rework, b07705f10) while the
library kept logging ``-t 1``, and got it back in the newest driver together with a new
``-w`` default; ``rnn_seq`` (3.0+) spells batch and input size differently from ``rnn``.

Sources: ROCm/MIOpen ``driver/rnn_driver.hpp`` (1.2+) and ``driver/rnn_seq_driver.hpp`` (3.0+)
at tags v1.2.0 ... rocm-6.2.2, rocm-test-09212024, develop 2d1fd997; ``main.cpp``/``dm_rnn.cpp``;
ROCm/rocm-libraries ``projects/miopen/driver/rnn_driver.hpp`` and ``rnn_seq_driver.hpp``
@07647551.  Logging: ``src/rnn_api.cpp`` (2.1+).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

RNN = Subcommand(
    family="rnn",
    bases=(
        Base("rnn", "fp32", since="1.2"),
        Base("rnnfp16", "fp16", since="1.8"),
    ),
    flags=(
        Flag("forw", "F", "0", "1 forward, 2 backward data, 4 backward weights, 0 all", "int", _P, since="1.2"),
        Flag("num_layer", "l", "1", "number of stacked layers", "int", _P, since="1.2"),
        Flag("seq_len", "k", "1", "sequence length (time steps unrolled)", "int", _P, since="1.2"),
        Flag("bidirection", "r", "0", "0 unidirectional, 1 bidirectional", "int", _P, since="1.2"),
        Flag("batchsize", "n", "4", "batch size per time step, comma list (non-increasing)", "vector", _P,
             since="1.2"),
        Flag("hid_h", "H", "32", "hidden state size", "int", _P, since="1.2"),
        Flag("in_h", "W", "32", "input vector size", "int", _P, since="1.2"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="1.2", until="1.2.0"),
        Flag("iter", "i", "1", "timed iterations", "int", _R, since="1.2.1"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="1.2"),
        Flag("verification_cache", "C", "", "directory caching reference results", "string", _R, since="1.2",
             until="1.2"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="1.2", until="3.2"),
        Flag("time", "t", "0", "1 = print kernel times (and, newest, system info)", "int", _R, since="3.5"),
        Flag("wall", "w", "0", "wall-clock timing; from 3.3 a clock mode number", "int", _R, since="1.2",
             until="3.4"),
        Flag("wall", "w", "1", "wall-clock mode: 1 old single clock, 2 separate synced, 3 separate unsynced",
             "int", _R, since="3.5"),
        Flag("search", "s", "0", "search kernel configurations", "int", _R, since="1.2", until="1.2"),
        Flag("printconv", "P", "1", "print the dimensions", "int", _R, since="1.2", until="1.2"),
        Flag("dump_output", "o", "0", "write output buffers to files", "int", _R, since="1.2"),
        Flag("in_data", "d", "", "file with input data", "string", _R, since="1.2", until="1.2"),
        Flag("weights", "e", "", "file with weights", "string", _R, since="1.2", until="1.2"),
        Flag("bias", "b", "", "1 = with bias", "int", _P, since="1.2"),
        Flag("mode", "m", "tanh", "relu, tanh, lstm or gru", "str", _P, since="1.2"),
        Flag("inputmode", "p", "0", "0 linear input, 1 skip input", "int", _P, since="1.2"),
        Flag("rnnalgo", "a", "0", "0 default, 1 fundamental (newest: 2 rounded dynamic)", "int", _P, since="1.2"),
        Flag("fwdtype", "c", "0", "0 training, 1 inference", "int", _P, since="1.2"),
        Flag("datatype", "f", "1", "16- or 32-bit data (the base argument decides the type)", "int", _P,
             since="1.2"),
        Flag("use_dropout", "U", "0", "1 = dropout between layers", "int", _P, since="2.4"),
        Flag("dropout", "P", "0.0", "dropout rate", "float", _P, since="2.4"),
        Flag("seed_low", "L", "0", "dropout seed, low 32 bits", "int", _P, since="2.4"),
        Flag("seed_high", "M", "0", "dropout seed, high 32 bits", "int", _P, since="2.4"),
        Flag("use_padding", "q", "0", "0 packed, 1 padded input/output", "int", _P, since="3.0"),
    ),
    source=("ROCm/MIOpen driver/rnn_driver.hpp, main.cpp, dm_rnn.cpp at tags v1.2.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/rnn_driver.hpp "
            "@07647551"),
    summary="vanilla RNN / LSTM / GRU over descriptor arrays, forward, backward data, backward weights",
    notes=("-t is absent in 3.3-3.4 (dropped by b07705f10, 'RNN wall clock timer update', 2024-08); a logged "
           "'... -t 1 -w 1' then stops at 'Input Flag: t Not Found !'. It is back in the newest driver, "
           "which also reads --time for the system-info line. The 3.3/3.4 -w is a clock-mode number "
           "(default 0 = off); the newest default is 1."),
)

RNN_SEQ = Subcommand(
    family="rnn_seq",
    bases=(
        Base("rnn_seq", "fp32", since="3.0"),
        Base("rnn_seqfp16", "fp16", since="3.0"),
    ),
    flags=(
        Flag("forw", "F", "0", "1 forward, 2 backward data, 4 backward weights, 0 all", "int", _P, since="3.0"),
        Flag("fwdtype", "c", "0", "0 training, 1 inference", "int", _P, since="3.0"),
        Flag("mode", "m", "tanh", "relu, tanh, lstm or gru", "str", _P, since="3.0"),
        Flag("datatype", "f", "1", "16- or 32-bit data (the base argument decides the type)", "int", _P,
             since="3.0"),
        Flag("io_layout", "I", "1", "1 seq-major packed, 2 seq-major padded, 3 batch-major padded", "int", _P,
             since="3.0"),
        Flag("num_layer", "l", "1", "number of stacked layers", "int", _P, since="3.0"),
        Flag("batch_size", "n", "4", "batch size", "int", _P, since="3.0"),
        Flag("seq_len", "k", "10", "maximum sequence length", "int", _P, since="3.0"),
        Flag("seq_len_array", "K", "", "sequence length of each sample, comma list", "vector", _P, since="3.0"),
        Flag("hid_h", "H", "32", "hidden state size", "int", _P, since="3.0"),
        Flag("in_vec", "W", "32", "input vector size", "int", _P, since="3.0"),
        Flag("bidirection", "r", "0", "0 unidirectional, 1 bidirectional", "int", _P, since="3.0"),
        Flag("bias", "b", "", "1 = with bias", "int", _P, since="3.0"),
        Flag("inputmode", "p", "0", "0 linear input, 1 skip input", "int", _P, since="3.0"),
        Flag("rnnalgo", "a", "0", "0 default, 1 fundamental, 2 rounded dynamic (newest)", "int", _P,
             since="3.0"),
        Flag("use_dropout", "U", "0", "1 = dropout between layers", "int", _P, since="3.0"),
        Flag("dropout", "P", "0.0", "dropout rate", "float", _P, since="3.0"),
        Flag("seed_low", "L", "0", "dropout seed, low 32 bits", "int", _P, since="3.0"),
        Flag("seed_high", "M", "0", "dropout seed, high 32 bits", "int", _P, since="3.0"),
        Flag("iter", "i", "1", "timed iterations", "int", _R, since="3.0"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="3.0"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="3.0", until="3.2"),
        Flag("time", "t", "0", "1 = print kernel times (and system info)", "int", _R, since="3.5"),
        Flag("wall", "w", "0", "wall-clock timing; from 3.3 a clock mode number", "int", _R, since="3.0",
             until="3.4"),
        Flag("wall", "w", "1", "wall-clock mode: 1 old single clock, 2 separate synced, 3 separate unsynced",
             "int", _R, since="3.5"),
        Flag("dump_output", "o", "0", "write output buffers to files", "int", _R, since="3.0"),
    ),
    source=("ROCm/MIOpen driver/rnn_seq_driver.hpp, main.cpp, dm_rnn.cpp at tags rocm-6.0.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "rnn_seq_driver.hpp @07647551"),
    summary="RNN through the sequence-tensor API (miopenRNNForward with SeqTensorDescriptor), padded or packed",
    notes="Same -t gap as rnn (3.3-3.4).",
)

_RNN_TOKENS = ("-n", "-W", "-H", "-l", "-b", "-m", "-p", "-r", "-k", "-c", "-t", "-w")

#: Keyed by family: the rnn_api.cpp producers for each driver.  Printed to stdout as well as to the log.
LOGGED_FLAGS: dict[str, tuple[tuple[str, str, str, tuple[str, ...]], ...]] = {
    "rnn": (
        ("2.1", "2.2", "LogCmdRNN: rnn -n -W -H -l -b -m -p -r -k -c -t 1 -w 1", _RNN_TOKENS),
        ("2.3", "2.3", "adds -F 1|2|4", _RNN_TOKENS + ("-F",)),
        ("2.4", "2.20", "adds rnnfp16 and -U 1 -P -L -M for dropout", _RNN_TOKENS + ("-F", "-U", "-P", "-L", "-M")),
        ("3.0", "", "adds -q (padding)", _RNN_TOKENS + ("-q", "-F", "-U", "-P", "-L", "-M")),
    ),
    "rnn_seq": (
        ("3.0", "", ("LogCmdRNN (seq overload): rnn_seq|rnn_seqfp16 -n -W -H -l -b -m -p -r -k -K -a -I -c -F "
         "-t 1 -w 1 [-U 1 -P -L -M]"),
         ("-n", "-W", "-H", "-l", "-b", "-m", "-p", "-r", "-k", "-K", "-a", "-I", "-c", "-F", "-t", "-w", "-U",
          "-P", "-L", "-M")),
    ),
}

LOGGING_DEFECTS: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    "rnn": (
        ("3.3", "3.4", "-t", "the 3.3 rnn driver has no -t: 'Input Flag: t Not Found !'"),
    ),
    "rnn_seq": (
        ("3.3", "3.4", "-t", "the 3.3 rnn_seq driver has no -t: 'Input Flag: t Not Found !'"),
    ),
}

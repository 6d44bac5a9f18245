"""``pool``: ``PoolDriver::AddCmdLineArgs`` in every era.

Why a table: pooling changed shape twice.  In 2.3 (3-D pooling) the stride letters were
reassigned (``-u`` became stride W and ``-v`` stride H, the opposite of conv) and depth flags
appeared; in 2.16 (ROCm 5.1) ``-n -c -H -W -D -d`` were replaced by tensor flags (``-W`` is now
the whole input tensor ``NxCx[D]xHxW``).  The same letters mean different things per era.

Sources: ROCm/MIOpen ``driver/pool_driver.hpp`` at tags 1.0.0 ... rocm-6.2.2,
rocm-test-09212024, develop 2d1fd997; ``main.cpp``/``dm_pool.cpp``; ROCm/rocm-libraries
``projects/miopen/driver/pool_driver.hpp`` @07647551.  Logging: ``src/pooling_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

POOL = Subcommand(
    family="pool",
    bases=(
        Base("pool", "fp32"),
        Base("poolfp16", "fp16", since="1.3"),
        Base("poolbfp16", "bf16", since="3.5", note="newest valid list; its maker was not read"),
    ),
    flags=(
        Flag("forw", "F", "0", "1 = forward only; 0 = forward and backward; 2 = backward only (main.cpp)",
             "int", _P),
        Flag("batchsize", "n", "100", "N", "int", _P, until="2.15"),
        Flag("in_channels", "c", "3", "C", "int", _P, until="2.15"),
        Flag("in_h", "H", "32", "input height", "int", _P, until="2.15"),
        Flag("in_w", "W", "32", "input width", "int", _P, until="2.15"),
        Flag("out_channels", "k", "32", "declared but unused by pooling", "int", _P, until="1.1"),
        Flag("win_h", "y", "3", "window height", "int", _P),
        Flag("win_w", "x", "3", "window width", "int", _P),
        Flag("pool_stride_0", "u", "1", "vertical (H) stride", "int", _P, until="2.2"),
        Flag("pool_stride_1", "v", "1", "horizontal (W) stride", "int", _P, until="2.2"),
        Flag("pad_h", "p", "0", "padding along H", "int", _P),
        Flag("pad_w", "q", "0", "padding along W", "int", _P),
        Flag("pad_val", "r", "0", "padding value", "int", _P),
        Flag("iter", "i", "10", "timed iterations", "int", _R),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R),
        Flag("print", "P", "1", "print the pooling dimensions", "int", _R),
        Flag("mode", "m", "max", "max, avg or (from 2.3) avg_in", "str", _P),
        Flag("pad_mode", "z", "default", "padding mode: default, same or valid", "str", _P, since="1.2"),
        Flag("index_type", "I", "miopenIndexUint8", "index type: miopenIndexUint8/16/32/64", "str", _P,
             since="1.8"),
        Flag("spatial_dim", "d", "2", "2 = 2-D, 3 = 3-D pooling", "int", _P, since="2.3", until="2.15"),
        Flag("in_d", "D", "32", "input depth (3-D)", "int", _P, since="2.3", until="2.15"),
        Flag("win_d", "Z", "3", "window depth (3-D)", "int", _P, since="2.3"),
        Flag("pool_stride_d", "s", "1", "stride along D (3-D)", "int", _P, since="2.3"),
        Flag("pool_stride_h", "v", "1", "stride along H (note: -v, unlike conv)", "int", _P, since="2.3"),
        Flag("pool_stride_w", "u", "1", "stride along W (note: -u, unlike conv)", "int", _P, since="2.3"),
        Flag("pad_d", "o", "0", "padding along D (3-D)", "int", _P, since="2.3"),
        Flag("index_position", "M", "0", "workspace index mode: 0 mask, 1 image index (3-D always 1)", "int",
             _P, since="2.3"),
        Flag("input", "W", "100x3x32x32,NCHW", "input tensor NxCx[D]xHxW[,layout|strides]; rank sets 2-D/3-D",
             "tensor descriptor", _P, since="2.16"),
        Flag("dinput", "D", "", "input-gradient tensor; empty = like the input", "tensor descriptor", _P,
             since="2.16"),
        Flag("output", "O", "", "output tensor; empty = computed from the input", "tensor descriptor", _P,
             since="2.16"),
        Flag("doutput", "H", "", "output-gradient tensor; empty = like the output", "tensor descriptor", _P,
             since="2.16"),
        Flag("in_data", "j", "", "file with input data", "str", _R, since="2.19"),
        Flag("out_data", "k", "", "file with output-gradient data for backward", "str", _R, since="2.19"),
        Flag("dump_root", "l", "", "directory to dump buffers into", "str", _R, since="2.19"),
        Flag("mt", "U", "0", "1 = multithreaded CPU reference", "int", _R, since="3.5"),
    ),
    source=("ROCm/MIOpen driver/pool_driver.hpp, main.cpp, dm_pool.cpp at tags 1.0.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/pool_driver.hpp "
            "@07647551"),
    summary="max / average pooling, 2-D and 3-D, forward and backward",
    notes=(
        "Letters reassigned: -u/-v are H/W strides up to 2.2 but W/H from 2.3; -W is the input width up to "
        "2.15 and the whole input tensor from 2.16; -D is the input depth 2.3-2.15 and the input-gradient "
        "tensor from 2.16; -H is the input height up to 2.15 and the output-gradient tensor from 2.16. "
        "The tensor flags take 'NxCxHxW' or 'NxCxDxHxW', optionally ',NCHW'-style layout or ',s0xs1x...' "
        "strides. -mt (U) is only in the newest driver (3.5 assumed)."
    ),
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("1.7", "2.2", "miopenPoolingForward/Backward: ./bin/MIOpenDriver pool|poolfp16 (2.0+: Command prefix)",
     ("-n", "-c", "-H", "-W", "-y", "-x", "-p", "-q", "-u", "-v", "-m", "-t")),
    ("2.3", "2.17", ("Pooling_logging_cmd: pool|poolfp16 [-d 3] -M -n -c [-D] -H -W [-Z] -y -x [-o] -p -q [-s] "
     "-v -u -m -F 1|2 -t 1"),
     ("-d", "-M", "-n", "-c", "-D", "-H", "-W", "-Z", "-y", "-x", "-o", "-p", "-q", "-s", "-v", "-u", "-m",
      "-F", "-t")),
    ("2.18", "", ("pool|poolfp16 (newest also poolbfp16) -M --input NxCx[D]xHxW,strides [-Z] -y -x [-o] -p -q "
     "[-s] -v -u -m -F 1|0 -t 1"),
     ("-M", "--input", "-Z", "-y", "-x", "-o", "-p", "-q", "-s", "-v", "-u", "-m", "-F", "-t")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("2.16", "2.17", "-n", ("the 5.1/5.2 driver has no -n/-c (tensor flags instead): 'Input Flag: n Not Found' "
     "(MIOpen#1647)")),
    ("2.16", "2.17", "-c", "as -n"),
    ("2.16", "2.17", "-d", "-d was dropped with the tensor flags"),
    ("2.16", "2.17", "-D", "now the input-gradient tensor, not the depth"),
    ("2.16", "2.17", "-H", "now the output-gradient tensor, not the height"),
    ("2.16", "2.17", "-W", "now the whole input tensor, not the width"),
    ("2.18", "", "-F", "backward is logged as -F 0 (forward+backward), not -F 2"),
)

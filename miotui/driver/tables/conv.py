"""``conv`` and its typed variants: ``ConvDriver::AddCmdLineArgs`` in every era.

Why a table: the convolution driver is the one every log decodes to, and its letters moved
(``-u/-v`` were ``conv_stride_0/1`` until 1.7, ``-S`` became a string in 2.10, layouts got
upper-cased values in 2.16, newest builds add ``-~``, ``-N``, ``-&``, ``-M``, ``-Q``), so a
command is only read right against the flags of its own era.

Sources: ROCm/MIOpen ``driver/conv_driver.hpp`` at tags 1.0.0 ... rocm-6.2.2,
rocm-test-09212024 and develop 2d1fd997 (2024-10-24); ``driver/main.cpp`` (to 3.1) and
``driver/dm_conv*.cpp`` (3.2+) for the base -> type map; ROCm/rocm-libraries
``projects/miopen/driver/conv_driver.hpp`` @07647551 and @b84207f2, ``driver.cpp`` @5fae43a4,
``dm_convfp32.cpp`` @7bac9fe4 for the newest.  Logging: ``src/convolution_api.cpp`` (1.2 ...
2.20) and ``src/driver_arguments.cpp`` (3.0+).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

CONV = Subcommand(
    family="conv",
    bases=(
        Base("conv", "fp32"),
        Base("convfp16", "fp16", since="1.3"),
        Base("convint8", "int8", since="1.8",
             note="host reference type float up to 2.17, int32 from 2.18 (ROCm 5.3)"),
        Base("convbfp16", "bf16", since="2.0"),
        Base("convfp8", "fp8", since="3.0", until="3.2",
             note="still made by dm_convfp8.cpp after 3.2 but no longer in the valid list"),
        Base("convbfp8", "bf8", since="3.0", until="3.2",
             note="still made by dm_convbfp8.cpp after 3.2 but no longer in the valid list"),
        Base("convfp32", "fp32", since="3.5", note="alias of conv (ConvDriver<float, float>); newest only"),
    ),
    flags=(
        Flag("forw", "F", "0", "directions to run: bit 1 fwd, 2 bwd-data, 4 wrw; 0 = all", "int", _P),
        Flag("batchsize", "n", "100", "N, batch size", "int", _P),
        Flag("in_channels", "c", "3", "C, input channels", "int", _P),
        Flag("in_h", "H", "32", "input height", "int", _P),
        Flag("in_w", "W", "32", "input width", "int", _P),
        Flag("out_channels", "k", "32", "K, output channels (total, also for transposed)", "int", _P),
        Flag("fil_h", "y", "3", "filter height", "int", _P),
        Flag("fil_w", "x", "3", "filter width", "int", _P),
        Flag("conv_stride_0", "u", "1", "vertical (H) stride", "int", _P, until="1.7"),
        Flag("conv_stride_1", "v", "1", "horizontal (W) stride", "int", _P, until="1.7"),
        Flag("conv_stride_h", "u", "1", "stride along H", "int", _P, since="1.8"),
        Flag("conv_stride_w", "v", "1", "stride along W", "int", _P, since="1.8"),
        Flag("pad_h", "p", "0", "zero padding along H", "int", _P),
        Flag("pad_w", "q", "0", "zero padding along W", "int", _P),
        Flag("pad_val", "r", "0", "value used for padding", "int", _P),
        Flag("iter", "i", "10", "timed iterations", "int", _R),
        Flag("verify", "V", "1", "1 = check results against a reference", "int", _R),
        Flag("verification_cache", "C", "", "directory caching reference results", "string", _R),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1); 2 also warms the library first", "int", _R),
        Flag("search", "s", "0", "1 = exhaustive search (tuning) in Find", "int", _R),
        Flag("printconv", "P", "1", "print the problem dimensions", "int", _R),
        Flag("dump_output", "o", "0", "write output buffers to files", "int", _R),
        Flag("in_data", "d", "", "file with input data", "string", _R),
        Flag("weights", "e", "", "file with weights", "string", _R),
        Flag("bias", "b", "", "1 = add a bias after the convolution", "int", _P),
        Flag("mode", "m", "conv", "conv or trans; up to 1.7 also group and dw", "str", _P),
        Flag("dilation_h", "l", "1", "dilation along H", "int", _P, since="1.1"),
        Flag("dilation_w", "j", "1", "dilation along W", "int", _P, since="1.1"),
        Flag("pad_mode", "z", "conv", "padding mode (conv, same, valid)", "str", _P, since="1.2", until="1.4"),
        Flag("pad_mode", "z", "default", "padding mode: default, same or valid", "str", _P, since="1.5"),
        Flag("in_bias", "a", "", "file with bias data", "string", _R, since="1.2"),
        Flag("group_count", "g", "1", "G, number of groups", "int", _P, since="1.5"),
        Flag("dout_data", "D", "", "file with dy for backward weights", "string", _R, since="1.7"),
        Flag("spatial_dim", "_", "2", "2 = 2-D, 3 = 3-D convolution", "int", _P, since="1.8"),
        Flag("in_d", "!", "32", "input depth (3-D)", "int", _P, since="1.8"),
        Flag("fil_d", "@", "3", "filter depth (3-D)", "int", _P, since="1.8"),
        Flag("conv_stride_d", "#", "1", "stride along D (3-D)", "int", _P, since="1.8"),
        Flag("pad_d", "$", "0", "zero padding along D (3-D)", "int", _P, since="1.8"),
        Flag("trans_output_pad_d", "%", "0", "transposed-conv output padding along D", "int", _P, since="1.8"),
        Flag("trans_output_pad_h", "Y", "0", "transposed-conv output padding along H", "int", _P, since="1.8"),
        Flag("trans_output_pad_w", "X", "0", "transposed-conv output padding along W", "int", _P, since="1.8"),
        Flag("tensor_vect", "Z", "0", "vectorised tensor layout (1 was used for int8x4)", "int", _P, since="1.8"),
        Flag("dilation_d", "^", "1", "dilation along D (3-D)", "int", _P, since="1.8"),
        Flag("solution", "S", "-1", "<0 Find API; 0 immediate mode fastest; >0 immediate with this "
             "solver id", "int", _R, since="2.0", until="2.9"),
        Flag("solution", "S", "-1", "as before, or a solver name; <0 or an unknown name = Find API",
             "string", _R, since="2.10"),
        Flag("in_layout", "I", "NCHW", "input tensor layout", "string", _P, since="2.10", until="2.11"),
        Flag("out_layout", "O", "NCHW", "output tensor layout", "string", _P, since="2.10", until="2.11"),
        Flag("fil_layout", "f", "NCHW", "filter tensor layout", "string", _P, since="2.10", until="2.11"),
        Flag("in_layout", "I", "", "input layout; empty = NCHW (2-D) / NCDHW (3-D); upper-cased when "
             "given as --in_layout from 2.16", "string", _P, since="2.12"),
        Flag("out_layout", "O", "", "output layout; empty = default for the rank", "string", _P, since="2.12"),
        Flag("fil_layout", "f", "", "filter layout; empty = default for the rank", "string", _P, since="2.12"),
        Flag("vector_length", "L", "1", "vector length of a vectorised layout", "int", _P, since="2.18"),
        Flag("in_cast_type", "U", "-1", "type the input is cast to (fp8/bf8); -1 = none", "string", _P,
             since="3.0"),
        Flag("out_cast_type", "T", "-1", "type the output is cast to; -1 = none", "string", _P, since="3.0"),
        Flag("wei_cast_type", "R", "-1", "type the weights are cast to; -1 = none", "string", _P, since="3.0"),
        Flag("gpualloc", "G", "0", "1 = allocate and fill buffers on the GPU (no verification)", "int", _R,
             since="3.2"),
        Flag("gpubuffer_check", "~", "0", "1/2 = place buffers to catch out-of-bounds reads before/after",
             "int", _R, since="3.5"),
        Flag("init_output_nan", "N", "0", "1 = fill output buffers with NaN first", "int", _R, since="3.5"),
        Flag("tuning_policy", "&", "0", "handle tuning policy (miopenSetTuningPolicy); 0 = not set", "int",
             _R, since="3.5"),
        Flag("math_type", "M", "1", "convolution math-type attribute (TF32 etc.)", "int", _P, since="3.5.1"),
        Flag("use_hip_graph", "Q", "0", "1 = replay steady-state iterations from a HIP graph (HIP builds "
             "only)", "int", _R, since="3.5.1"),
    ),
    source=("ROCm/MIOpen driver/conv_driver.hpp, main.cpp, dm_conv*.cpp at tags 1.0.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "conv_driver.hpp @07647551 and @b84207f2, driver.cpp @5fae43a4, dm_convfp32.cpp @7bac9fe4"),
    summary="convolution forward, backward-data and backward-weights (2-D and 3-D, grouped, transposed)",
    notes=(
        "-u/-v keep their letters through the 1.8 rename (conv_stride_0/1 -> conv_stride_h/w). "
        "-m dw and -m group (1.5-1.7) were dropped in 1.8; use -g. "
        "Newest-only flags (-~ -N -& -M -Q) come from rocm-libraries @07647551; their first release is "
        "inferred: gpubuffer_check from MIOpen#3666 (merged 2025-04-01, after the 6.4 branch), math_type "
        "from the TF32 work (rocm-libraries#1414, 2025-10), use_hip_graph from driver.cpp; init_output_nan "
        "and tuning_policy dates were not found (3.5 assumed). use_hip_graph is only declared in HIP builds. "
        "-b/--bias is read with GetValueInt, so its empty default means 0. "
        "Logged lines before 2.0 carry no -F, so a logged backward-data or WrW call replays as all three "
        "directions; the API name before ':' tells the direction."
    ),
)

#: What MIOpen's own ``Command`` line prints for a convolution, per era:
#: (first version, last version, producer and base names, flag tokens that may appear).
LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("1.2", "1.6", "miopenConvolution*: ./bin/MIOpenDriver conv|convfp16 (convolution_api.cpp, no prefix)",
     ("-n", "-c", "-H", "-W", "-k", "-y", "-x", "-p", "-q", "-u", "-v", "-l", "-j", "-t")),
    ("1.7", "1.7", "same form; adds -m conv|trans|group|dw and -g",
     ("-n", "-c", "-H", "-W", "-k", "-y", "-x", "-p", "-q", "-u", "-v", "-l", "-j", "-m", "-g", "-t")),
    ("1.8", "1.8", "same form, base convint8 added; -Z 1 for int8x4",
     ("-n", "-c", "-H", "-W", "-k", "-y", "-x", "-p", "-q", "-u", "-v", "-l", "-j", "-m", "-g", "-t", "-Z")),
    ("2.0", "2.2", "Command [LogCmdConvolution] (and WrW Find); -F direction; -S 0 for immediate calls",
     ("-n", "-c", "-H", "-W", "-k", "-y", "-x", "-p", "-q", "-u", "-v", "-l", "-j", "-m", "-g", "-F", "-t",
      "-Z", "-S")),
    ("2.3", "2.11", "adds the 3-D form",
     ("-n", "-c", "-H", "-W", "-k", "-y", "-x", "-p", "-q", "-u", "-v", "-l", "-j", "--in_d", "--fil_d",
      "--pad_d", "--conv_stride_d", "--dilation_d", "--spatial_dim", "-m", "-g", "-F", "-t", "-Z", "-S")),
    ("2.12", "3.0", "adds --in_layout/--fil_layout/--out_layout when not the default",
     ("-n", "-c", "-H", "-W", "-k", "-y", "-x", "-p", "-q", "-u", "-v", "-l", "-j", "--in_layout",
      "--fil_layout", "--out_layout", "--in_d", "--fil_d", "--pad_d", "--conv_stride_d", "--dilation_d",
      "--spatial_dim", "-m", "-g", "-F", "-t", "-Z", "-S")),
    ("3.1", "", "driver_arguments.cpp ConvArgsForMIOpenDriver; -Z gone with int8x4; Find-2.0 logs -S <id>",
     ("-n", "-c", "-H", "-W", "-k", "-y", "-x", "-p", "-q", "-u", "-v", "-l", "-j", "--in_layout",
      "--fil_layout", "--out_layout", "--in_d", "--fil_d", "--pad_d", "--conv_stride_d", "--dilation_d",
      "--spatial_dim", "-m", "-g", "-F", "-t", "-S")),
)

#: Printed tokens that do not mean what the driver of the same era reads.
LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("2.0", "", "-S", "immediate-mode calls print -S 0 (run fastest), not the solver that ran"),
)

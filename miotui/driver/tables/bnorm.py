"""``bnorm``: ``BatchNormDriver::AddCmdLineArgs`` in every era.

Why a table: batch-norm commands are the most often mis-logged ones (``-M`` in 3.0-3.2,
``-s``/``-r`` swapped until the newest library, ``-z`` that no driver has), and the newest
driver lets its HIP-graph flag take the letter its ping-pong flag asked for.

Sources: ROCm/MIOpen ``driver/bn_driver.hpp`` at tags 1.0.0 ... rocm-6.2.2,
rocm-test-09212024, develop 2d1fd997; ``main.cpp``/``dm_bnorm.cpp`` (and ROCm/MIOpen
``dm_bnorm.cpp`` @13c64c16, 2025); ROCm/rocm-libraries ``projects/miopen/driver/bn_driver.hpp``
@07647551 (newest) and @43658b94 (an earlier 2025 state without ``-Q``), ``driver.cpp``
@5fae43a4.  Logging: ``src/batch_norm_api.cpp`` (1.2-2.20), ``src/driver_arguments.cpp`` (3.0+).
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

BNORM = Subcommand(
    family="bnorm",
    bases=(
        Base("bnorm", "fp32"),
        Base("bnormfp16", "fp16", since="1.3", until="1.5", note="all buffers fp16 (no mixed type yet)"),
        Base("bnormfp16", "fp16", param_dtype="fp32", since="1.6", until="3.2",
             note="BatchNormDriver<float16, double, float>: fp32 scale/bias/statistics"),
        Base("bnormfp16", "fp16", since="3.3", until="3.4",
             note="develop 2024-10 made it all-fp16 (BatchNormDriver<float16, double, float16>); "
                  "rocm-test-09212024 still had fp32 statistics"),
        Base("bnormfp16", "fp16", param_dtype="fp32", since="3.5",
             note="2025 makers: fp16 in/out, fp32 scale/bias and accumulation"),
        Base("bnormfp16fp32", "fp16", param_dtype="fp32", since="3.3",
             note="named for fp16 data with fp32 parameters; the 2025 maker gives it fp16 scale/bias and "
                  "an fp32 output"),
        Base("bnormbfp16fp32", "bf16", param_dtype="fp32", since="3.3"),
        Base("bnormbfp16", "bf16", since="3.5", note="newest valid list (logged by the library since 3.3); "
                                                     "maker not read"),
    ),
    flags=(
        Flag("forw", "F", "0", "0 off, 1 forward training, 2 forward inference (0 with -b 0 = training)",
             "int", _P),
        Flag("back", "b", "0", "1 = backward (only when --forw is 0)", "int", _P),
        Flag("batchsize", "n", "100", "N", "int", _P, until="1.0"),
        Flag("batchsize", "n", "32", "N", "int", _P, since="1.1"),
        Flag("in_channels", "c", "3", "C", "int", _P),
        Flag("in_h", "H", "32", "input height", "int", _P),
        Flag("in_w", "W", "32", "input width", "int", _P),
        Flag("alpha", "A", "0.001", "alpha scale (1.0 copied LRN's defaults)", "double", _P, until="1.0"),
        Flag("alpha", "A", "1.0", "alpha scale", "double", _P, since="1.1", until="1.2"),
        Flag("alpha", "A", "1.0", "alpha scale", "float", _P, since="1.3"),
        Flag("beta", "B", "0.75", "beta scale (1.0 copied LRN's defaults)", "double", _P, until="1.0"),
        Flag("beta", "B", "0.", "beta scale", "double", _P, since="1.1", until="1.2"),
        Flag("beta", "B", "0.", "beta scale", "float", _P, since="1.3"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, until="1.0"),
        Flag("iter", "i", "1", "timed iterations", "int", _R, since="1.1", until="3.4"),
        Flag("iter", "i", "10", "timed iterations", "int", _R, since="3.5"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R),
        Flag("printconv", "P", "1", "print the dimensions", "int", _R),
        Flag("mode", "m", "0", "0 per-activation, 1 spatial", "int", _P),
        Flag("save", "s", "0", "1 = save mean and inverse variance (training) / use them (backward)", "int",
             _P),
        Flag("run", "r", "0", "1 = keep running mean/variance (training) / use them (inference)", "int", _P),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="1.1"),
        Flag("in_d", "D", "0", "input depth; >0 makes the tensor 5-D", "int", _P, since="1.5"),
        Flag("layout", "L", "", "NCHW, NHWC, NCDHW or NDHWC; empty = NCHW/NCDHW; upper-cased via --layout",
             "string", _P, since="3.3"),
        Flag("activ_mode", "f", "0", "fused activation mode (0..9)", "int", _P, since="3.5"),
        Flag("activ_alpha", "x", "1.0", "fused activation alpha", "float", _P, since="3.5"),
        Flag("activ_beta", "y", "1.0", "fused activation beta", "float", _P, since="3.5"),
        Flag("gpubuffer_check", "~", "0", "1/2 = place buffers to catch out-of-bounds reads before/after",
             "int", _R, since="3.5"),
        Flag("tuning_policy", "&", "0", "handle tuning policy (miopenSetTuningPolicy); 0 = not set", "int",
             _R, since="3.5.1"),
        Flag("use_hip_graph", "Q", "0", "1 = replay iterations from a HIP graph (HIP builds only)", "int", _R,
             since="3.5.1"),
        Flag("inverse_variance", "I", "0", "1 = inference takes an inverse variance (needs --forw 2)", "int",
             _P, since="3.5.1"),
    ),
    source=("ROCm/MIOpen driver/bn_driver.hpp, main.cpp, dm_bnorm.cpp at tags 1.0.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/MIOpen dm_bnorm.cpp @13c64c16; ROCm/rocm-libraries "
            "projects/miopen/driver/bn_driver.hpp @07647551 and @43658b94, driver.cpp @5fae43a4"),
    summary="batch normalization: forward training, forward inference, backward (2-D and 3-D)",
    notes=(
        "main.cpp runs forward when --forw is 2 for bnorm (bnFwdInVer), so '-F 2' is inference, not "
        "backward as for other drivers. The 3.5 flags (-f -x -y -~) are 2025 ROCm/MIOpen work; -& follows "
        "the 3.5.1 changelog ('[BatchNorm] Enabled tuning using miopenSetTuningPolicy', ROCm 7.1); -I follows "
        "the 3.5.1/ROCm 7.11 changelog (InvVariance entry points); -Q and ping_pong_buffers appear only at "
        "rocm-libraries @07647551. iter's default went 1 -> 10 after Oct 2024 (3.5 assumed). The library "
        "logs -z (activation gamma) that no driver declares."
    ),
)

#: Declared by the driver's source but dropped by InputFlags (first registration of a letter wins):
#: at @07647551 AddHipGraphFlag registers 'Q' (HIP builds) before ping_pong_buffers asks for 'Q', so
#: '--ping_pong_buffers' is 'Long Name ... Not Found' and every bnorm run that reads it fails there.
SHADOWED_FLAGS: tuple[Flag, ...] = (
    Flag("ping_pong_buffers", "Q", "0", "1 = separate previous/next running statistics buffers (training)",
         "int", _P, since="3.5.1"),
)

LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("1.2", "2.2", "miopenBatchNormalization*: ./bin/MIOpenDriver bnorm|bnormfp16 (1.5+; 2.0+ Command prefix)",
     ("-n", "-c", "-H", "-W", "-m", "-s", "-r")),
    ("2.3", "2.20", "LogCmdBNorm: adds -D for 5-D and --forw/-b for the direction",
     ("-n", "-c", "-D", "-H", "-W", "-m", "--forw", "-b", "-s", "-r")),
    ("3.0", "3.2", "BnormArgsForMIOpenDriver: the mode is printed as -M",
     ("-n", "-c", "-D", "-H", "-W", "-M", "--forw", "-b", "-s", "-r")),
    ("3.3", "3.4", "-m again; develop 2024-10 adds --layout and bnormbfp16/bnormfp16fp32/bnormbfp16fp32 names",
     ("-n", "-c", "-D", "-H", "-W", "-m", "--forw", "-b", "-s", "-r", "--layout")),
    ("3.5", "", "newest: [-f -x -y -z] before -m, -I after it; -s/-r no longer swapped",
     ("-n", "-c", "-D", "-H", "-W", "-f", "-x", "-y", "-z", "-m", "-I", "--forw", "-b", "-r", "-s",
      "--layout")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("1.2", "3.4", "-s", ("printed when *running* mean/variance are given; the driver's -s means saved "
     "mean/inverse variance (the library and driver meanings of -s and -r are swapped)")),
    ("1.2", "3.4", "-r", "printed when *saved* mean/inverse variance are given; the driver's -r means running"),
    ("3.0", "3.2", "-M", "bnorm has no -M: 'Input Flag: M Not Found !'"),
    ("3.5", "", "-z", "fused activation gamma; no bnorm driver declares -z"),
    ("3.5", "", "-I", "always printed (-I 0|1); drivers before 3.5.1 have no -I"),
)

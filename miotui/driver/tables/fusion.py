"""``CBAInfer`` / ``CAInfer``: the inference-fusion driver (``CBAInferFusionDriver``).

Why it matters: the fusion mode moved from ``-F`` to ``-J`` in the newest driver, and the
library logs fusion plans with flags (layouts, 3-D, ``-D``, ``-m``) that the driver of the same
era reads differently or not at all.  A reader must pick the letter by era; a writer must
never send ``-F`` to a newest driver (it has no ``-F``; ``main.cpp`` forces the direction to
forward for every ``CBAInfer*``/``CAInfer*`` base).

Sources: ROCm/MIOpen ``driver/CBAInferFusion_driver.hpp`` at tags 1.5.0 ... rocm-6.2.2,
rocm-test-09212024, develop 2d1fd997; ``main.cpp``/``dm_fusion.cpp`` for makers (ROCm/MIOpen
``dm_fusion.cpp`` @355f7fe0, 2025, for CAInfer); ROCm/rocm-libraries
``projects/miopen/driver/CBAInferFusion_driver.hpp`` @07647551.  ``printconv`` and ``search``
appear in the source only inside comments: they were never flags of this driver.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

FUSION = Subcommand(
    family="fusion",
    bases=(
        Base("CBAInfer", "fp32", since="1.5", until="3.2"),
        Base("CBAInfer", "fp32", since="3.5", note="back in the valid list in the newest driver"),
        Base("CBAInferfp16", "fp16", since="1.5", until="3.2",
             note="1.5: valid, but main.cpp made 'CBAInfer16' instead, so it printed 'Incorrect BaseArg'"),
        Base("CBAInferfp16", "fp16", since="3.5"),
        Base("CBAInferbfp16", "bf16", since="3.5"),
        Base("CAInfer", "fp32", since="3.5", note="same driver as CBAInfer (conv + activation plans)"),
        Base("CAInferfp16", "fp16", since="3.5"),
        Base("CAInferbfp16", "bf16", since="3.5"),
    ),
    flags=(
        Flag("batchsize", "n", "32", "N, batch size", "int", _P, since="1.5"),
        Flag("in_channels", "c", "3", "C, input channels", "int", _P, since="1.5"),
        Flag("in_h", "H", "32", "input height", "int", _P, since="1.5"),
        Flag("in_w", "W", "32", "input width", "int", _P, since="1.5"),
        Flag("out_channels", "k", "32", "K, output channels", "int", _P, since="1.5"),
        Flag("fil_h", "y", "3", "filter height", "int", _P, since="1.5"),
        Flag("fil_w", "x", "3", "filter width", "int", _P, since="1.5"),
        Flag("conv_stride_0", "u", "1", "vertical stride", "int", _P, since="1.5", until="1.7"),
        Flag("conv_stride_1", "v", "1", "horizontal stride", "int", _P, since="1.5", until="1.7"),
        Flag("conv_stride_h", "u", "1", "stride along H", "int", _P, since="1.8"),
        Flag("conv_stride_w", "v", "1", "stride along W", "int", _P, since="1.8"),
        Flag("pad_h", "p", "0", "zero padding along H", "int", _P, since="1.5"),
        Flag("pad_w", "q", "0", "zero padding along W", "int", _P, since="1.5"),
        Flag("pad_val", "r", "0", "padding value", "int", _P, since="1.5"),
        Flag("alpha", "A", "1.0", "activation alpha", "float", _P, since="1.5"),
        Flag("beta", "B", "0.", "activation beta", "float", _P, since="1.5"),
        Flag("gamma", "G", "1", "activation gamma", "double", _P, since="1.5"),
        Flag("iter", "i", "1", "timed iterations", "int", _R, since="1.5"),
        Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since="1.5"),
        Flag("time", "t", "0", "1 = print kernel times", "int", _R, since="1.5"),
        Flag("activMode", "m", "3", "activation mode (miopenActivationMode_t number; 3 = relu)", "int", _P,
             since="1.5"),
        Flag("bnMode", "M", "0", "batch-norm mode: 0 per-activation, 1 spatial", "int", _P, since="1.5"),
        Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since="1.5"),
        Flag("dilation_h", "l", "1", "dilation along H", "int", _P, since="1.5"),
        Flag("dilation_w", "j", "1", "dilation along W", "int", _P, since="1.5"),
        Flag("pad_mode", "z", "conv", "padding mode: same, valid, anything else = explicit pads", "str", _P,
             since="1.5"),
        Flag("fusion_mode", "F", "0", "plan: 0 conv+bias+bn+activ, 1 conv+bn+activ, 2 bn+activ, 3 conv+bn, "
             "4 conv+bias+activ, 5 conv+activ, 6 conv+bias", "int", _P, since="1.5", until="3.5.0"),
        Flag("fusion_mode", "J", "0", "fusion plan number, same values as the older -F", "int", _P,
             since="3.5.1"),
        Flag("dot_graph", "D", "", "write the fusion metadata graph of this operator", "str", _R, since="1.7"),
        Flag("group_count", "g", "1", "G, convolution groups", "int", _P, since="2.2"),
        Flag("spatial_dim", "_", "2", "2 = 2-D, 3 = 3-D convolution", "int", _P, since="3.5"),
        Flag("in_layout", "I", "", "input layout (NCHW, NHWC, NCDHW, NDHWC); upper-cased via --in_layout",
             "string", _P, since="3.5"),
        Flag("out_layout", "O", "", "output layout", "string", _P, since="3.5"),
        Flag("fil_layout", "f", "", "filter layout", "string", _P, since="3.5"),
        Flag("in_d", "!", "1", "input depth (3-D)", "int", _P, since="3.5"),
        Flag("fil_d", "@", "3", "filter depth (3-D)", "int", _P, since="3.5"),
        Flag("conv_stride_d", "#", "1", "stride along D (3-D)", "int", _P, since="3.5"),
        Flag("pad_d", "$", "0", "padding along D (3-D)", "int", _P, since="3.5"),
        Flag("dilation_d", "^", "1", "dilation along D (3-D)", "int", _P, since="3.5"),
    ),
    source=("ROCm/MIOpen driver/CBAInferFusion_driver.hpp, main.cpp, dm_fusion.cpp at tags 1.5.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/MIOpen dm_fusion.cpp @355f7fe0 (2025); "
            "ROCm/rocm-libraries projects/miopen/driver/CBAInferFusion_driver.hpp @07647551"),
    summary="inference fusion plans: conv/bias/batch-norm/activation combinations, forward only",
    notes=(
        "-F -> -J: the fusion mode is -F up to 3.5.0 and -J in the newest driver, which declares no -F at "
        "all (an old command fails there with 'Input Flag: F Not Found'). Boundary inferred: ROCm/MIOpen "
        "PRs #3802/#3833 (June 2025, ROCm 7.0 work) still run 'CBAInferbfp16 ... -F 4'; rocm-libraries#3365 "
        "(2025-12) runs 'CBAInfer ... -J 4'. The 3-D/layout flags and the bf16/CAInfer bases are the June "
        "2025 work (3.5). In 3.3-3.4 CBAInfer/CBAInferfp16 are made by dm_fusion.cpp but rejected by the "
        "valid list (FAILED: Invalid Base Input Argument). main.cpp never reads --forw for these bases."
    ),
)

_CONV_ARGS = ("-n", "-c", "-H", "-W", "-k", "-y", "-x", "-p", "-q", "-u", "-v", "-l", "-j", "--in_layout",
              "--fil_layout", "--out_layout", "--in_d", "--fil_d", "--pad_d", "--conv_stride_d",
              "--dilation_d", "--spatial_dim", "-g")

#: What MIOpen's own ``Command [LogCmdFusion]`` line prints (src/fusion.cpp, driver_arguments.cpp).
#: Nothing before 3.0: fusion plans were not logged as commands.
LOGGED_FLAGS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("3.0", "3.2", ("CBAInfer (CBAInferfp16 for bf16 plans) -F <mode> + conv args; mode 2 prints BN args "
     "-n -c [-D] -H -W -M <bn mode>"), ("-F",) + _CONV_ARGS + ("-D", "-M")),
    ("3.3", "3.5.0", "same, but mode 2 prints -m <bn mode>", ("-F",) + _CONV_ARGS + ("-D", "-m")),
    ("3.5.1", "", ("CBAInfer[fp16|bfp16] (mode 4) / CAInfer[...] (mode 5) -J <mode> + conv args; modes 0,1,3,6 "
     "print no base argument; mode 2 CBAInfer -J 2 + BN args"), ("-J",) + _CONV_ARGS + ("-D", "-m")),
)

LOGGING_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    ("3.0", "3.4", "--in_layout", "printed for non-default layouts; this driver has no layout flags before 3.5"),
    ("3.0", "3.4", "--fil_layout", "as --in_layout"),
    ("3.0", "3.4", "--out_layout", "as --in_layout"),
    ("3.0", "3.4", "--in_d", "3-D plans print 3-D flags the driver lacks before 3.5"),
    ("3.0", "3.4", "--fil_d", "as --in_d"),
    ("3.0", "3.4", "--pad_d", "as --in_d"),
    ("3.0", "3.4", "--conv_stride_d", "as --in_d"),
    ("3.0", "3.4", "--dilation_d", "as --in_d"),
    ("3.0", "3.4", "--spatial_dim", "as --in_d"),
    ("3.0", "", "-D", "BN+activ plans print -D <depth> for 5-D input; the driver's -D is dot_graph"),
    ("3.3", "", "-m", "mode-2 plans print the BN mode as -m, which the driver reads as the activation mode"),
)

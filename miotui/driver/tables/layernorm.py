"""``layernorm``, ``addlayernorm`` and ``t5layernorm`` (MIOpen 3.0+ / 3.2+).

Why a table: the layer-norm driver changed its input spelling three times (``-n -c -D -H -W``
in 3.0-3.1, one tensor ``-X NxCxHxW`` in 3.2-3.4, ``-N -C -D -H -W`` plus ``-L`` layout in the
newest driver) while the library kept logging ``-n -c -H -W``; the add/T5 variants never had
shape flags other than ``-X``.  ``nomalized_dim`` (sic) is the 3.0 long name.

Sources: ROCm/MIOpen ``driver/layernorm_driver.hpp`` (3.0+), ``addlayernorm_driver.hpp`` and
``t5layernorm_driver.hpp`` (3.2+) at tags rocm-6.0.0 ... rocm-6.2.2, rocm-test-09212024, develop
2d1fd997; ``main.cpp``/``dm_*layernorm.cpp``; ROCm/rocm-libraries ``projects/miopen/driver/``
``layernorm_driver.hpp``, ``addlayernorm_driver.hpp``, ``t5layernorm_driver.hpp`` @07647551.
Logging: ``src/layernorm_api.cpp``, ``addlayernorm_api.cpp``, ``t5layernorm_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"

_COMMON_RUN = (
    Flag("iter", "i", "10", "timed iterations", "int", _R),
    Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R),
    Flag("time", "t", "0", "1 = print kernel times", "int", _R),
    Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R),
)


def _since(flags: tuple[Flag, ...], version: str) -> tuple[Flag, ...]:
    """The shared run flags, dated from the family's first version."""
    return tuple(Flag(f.long, f.short, f.default, f.meaning, f.type, f.role, version, f.until) for f in flags)


LAYERNORM = Subcommand(
    family="layernorm",
    bases=(
        Base("layernorm", "fp32", since="3.0"),
        Base("layernormfp16", "fp16", since="3.0"),
        Base("layernormbfp16", "bf16", since="3.0"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward only, 0 forward and backward", "int", _P, since="3.0", until="3.4"),
        Flag("forw", "F", "0", "1 forward only, 2 backward only, 0 both", "int", _P, since="3.5"),
        Flag("batchsize", "n", "100", "N", "int", _P, since="3.0", until="3.1"),
        Flag("in_channels", "c", "3", "C", "int", _P, since="3.0", until="3.1"),
        Flag("in_d", "D", "0", "depth; >0 makes the input 5-D", "int", _P, since="3.0", until="3.1"),
        Flag("in_h", "H", "32", "height", "int", _P, since="3.0", until="3.1"),
        Flag("in_w", "W", "32", "width", "int", _P, since="3.0", until="3.1"),
        Flag("eps", "e", "0.00001", "epsilon", "double", _P, since="3.0"),
        Flag("nomalized_dim", "o", "3", "first normalized dimension (the 3.0 spelling)", "int", _P, since="3.0",
             until="3.0"),
        Flag("normalized_dim", "o", "3", "first normalized dimension (counted in NC(D)HW order)", "int", _P,
             since="3.1"),
        Flag("mode", "m", "0", "0 element-wise affine, 1 weight and bias", "int", _P, since="3.0"),
        Flag("input", "X", "100x3x32x32", "input tensor NxC[xD]xHxW", "tensor descriptor", _P, since="3.2",
             until="3.4"),
        Flag("layout", "L", "", "NCHW, NHWC, NCDHW, NDHWC or NW; upper-cased via --layout", "string", _P,
             since="3.5"),
        Flag("in_n", "N", "100", "N", "int", _P, since="3.5"),
        Flag("in_c", "C", "3", "C", "int", _P, since="3.5"),
        Flag("in_h", "H", "32", "height", "int", _P, since="3.5"),
        Flag("in_w", "W", "32", "width", "int", _P, since="3.5"),
        Flag("in_d", "D", "0", "depth; >0 makes the input 5-D", "int", _P, since="3.5"),
        Flag("mt", "u", "0", "1 = multithreaded CPU reference", "int", _R, since="3.5"),
    ) + _since(_COMMON_RUN, "3.0"),
    source=("ROCm/MIOpen driver/layernorm_driver.hpp, main.cpp, dm_layernorm.cpp at tags rocm-6.0.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "layernorm_driver.hpp @07647551"),
    summary="layer normalization over the trailing dimensions from normalized_dim, forward and backward",
    notes=("Shape flags by era: 3.0-3.1 -n -c -D -H -W; 3.2-3.4 -X only; newest -N -C -D -H -W and -L (the "
           "boundary is after Oct 2024; 3.5 assumed). -H/-W/-D keep their letters across the gap, -n/-c do not. "
           "eps (-e) and normalized_dim (-o) are never logged, so the driver defaults (1e-5, 3) apply on replay."),
)

ADDLAYERNORM = Subcommand(
    family="addlayernorm",
    bases=(
        Base("addlayernorm", "fp32", since="3.2"),
        Base("addlayernormfp16", "fp16", since="3.2"),
        Base("addlayernormbfp16", "bf16", since="3.2"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward (only forward exists)", "int", _P, since="3.2"),
        Flag("input", "X", "100x3x32x32", "input tensor (both addends have this shape)", "tensor descriptor", _P,
             since="3.2"),
        Flag("eps", "e", "0.00001", "epsilon", "double", _P, since="3.2"),
        Flag("normalized_dim", "o", "3", "first normalized dimension", "int", _P, since="3.2"),
        Flag("mode", "m", "0", "norm mode number", "int", _P, since="3.2", until="3.2"),
        Flag("mode", "m", "2", "norm mode: 2 element-wise affine + add, 3 weight and bias + add", "int", _P,
             since="3.3"),
        Flag("mt", "u", "0", "1 = multithreaded CPU reference", "int", _R, since="3.5"),
    ) + _since(_COMMON_RUN, "3.2"),
    source=("ROCm/MIOpen driver/addlayernorm_driver.hpp, dm_addlayernorm.cpp at tags rocm-6.2.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "addlayernorm_driver.hpp @07647551"),
    summary="layer normalization of the sum of two tensors, forward only",
    notes="Default -m changed 0 -> 2 in 3.3 (the add modes are numbered 2/3 in miopenNormMode_t).",
)

T5LAYERNORM = Subcommand(
    family="t5layernorm",
    bases=(
        Base("t5layernorm", "fp32", since="3.2"),
        Base("t5layernormfp16", "fp16", since="3.2"),
        Base("t5layernormbfp16", "bf16", since="3.2"),
    ),
    flags=(
        Flag("forw", "F", "1", "1 forward only, 0 both", "int", _P, since="3.2", until="3.2"),
        Flag("forw", "F", "0", "1 forward only, 2 backward only, 0 both", "int", _P, since="3.3"),
        Flag("input", "X", "100x3x32x32", "input tensor", "tensor descriptor", _P, since="3.2"),
        Flag("eps", "e", "0.00001", "epsilon", "double", _P, since="3.2"),
        Flag("mode", "m", "0", "norm mode number", "int", _P, since="3.2", until="3.2"),
        Flag("mode", "m", "5", "miopenNormMode_t number: 4 T5 element-wise affine, 5 T5 with weight (the "
             "driver's help text says 5/6)", "int", _P, since="3.3"),
        Flag("mt", "u", "0", "1 = multithreaded CPU reference", "int", _R, since="3.5"),
    ) + _since(_COMMON_RUN, "3.2"),
    source=("ROCm/MIOpen driver/t5layernorm_driver.hpp, dm_t5layernorm.cpp at tags rocm-6.2.0..rocm-6.2.2, "
            "rocm-test-09212024, develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
            "t5layernorm_driver.hpp @07647551"),
    summary="T5-style RMS layer normalization (no mean), forward and backward",
    notes="Normalizes over the last dimension only (no normalized_dim flag).",
)

_SHAPE = ("-n", "-c", "-D", "-H", "-W", "-F", "-m")

LOGGED_FLAGS: dict[str, tuple[tuple[str, str, str, tuple[str, ...]], ...]] = {
    "layernorm": (
        ("3.0", "3.0", ("LogCmdLayerNorm: layernormfp32|layernormfp16|layernormbf16|layernormfp64 -n -c [-D] -H -W "
         "-F 1|2 -m"), _SHAPE),
        ("3.1", "", "same flags; names layernormfp32|layernormfp16|layernormbfp16", _SHAPE),
    ),
    "addlayernorm": (
        ("3.2", "", "LogCmdAddLayerNorm: addlayernormfp32|fp16|bfp16 -n -c [-D] -H -W -F -m", _SHAPE),
    ),
    "t5layernorm": (
        ("3.2", "", ("LogCmdT5LayerNorm: t5layernormfp32|fp16|bfp16 -n -c [-D] -H -W -F -m (backward logged "
         "as forward)"), _SHAPE),
    ),
}

_NO_SHAPE = "the driver of this era has no such shape flag (it takes -X NxCxHxW or, newest, -N/-C)"

LOGGING_DEFECTS: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    "layernorm": (
        ("3.2", "", "-n", _NO_SHAPE),
        ("3.2", "", "-c", _NO_SHAPE),
        ("3.2", "3.4", "-D", _NO_SHAPE),
        ("3.2", "3.4", "-H", _NO_SHAPE),
        ("3.2", "3.4", "-W", _NO_SHAPE),
    ),
    "addlayernorm": tuple(("3.2", "", t, _NO_SHAPE) for t in ("-n", "-c", "-D", "-H", "-W")),
    "t5layernorm": tuple(("3.2", "", t, _NO_SHAPE) for t in ("-n", "-c", "-D", "-H", "-W"))
    + (("3.2", "", "-F", "backward calls are logged with the forward flag"),),
}

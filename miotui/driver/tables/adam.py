"""The Adam optimizer drivers: ``adam``/``adamw``, their AMP forms, and ``transformersadamw``.

Why four subcommands: the AMP bases are made with ``is_amp`` set, and only then does the driver
declare ``-s`` (grad scale) and ``-f`` (found inf).  Splitting by base keeps "which flags does
this base accept" answerable from the table.

Sources: ROCm/MIOpen ``driver/adam_driver.hpp`` (3.2+) and ``transformers_adam_w_driver.hpp``
(3.3+) at rocm-6.2.0 ... rocm-6.2.2, rocm-test-09212024, develop 2d1fd997; ``dm_adam.cpp``,
``dm_transformers_adam_w.cpp``; ROCm/rocm-libraries ``projects/miopen/driver/adam_driver.hpp``
and ``transformers_adam_w_driver.hpp`` @07647551 (adam also @0096658f, a state without ``-M``).  Logging:
``src/adam_api.cpp``, ``src/transformers_adam_w_api.cpp``.
"""

from __future__ import annotations

from miotui.driver.spec import Base, Flag, Subcommand

_P, _R = "problem", "run"


def _adam_flags(since: str, with_amp: bool, transformers: bool) -> tuple[Flag, ...]:
    """Adam's flag list; the AMP pair only for AMP bases, amsgrad/maximize or correct_bias by kind."""
    flags = [
        Flag("forw", "F", "1", "1 forward (one optimizer step)", "int", _P, since),
        Flag("dims", "d", "64x32x128", "parameter tensor lengths", "tensor descriptor", _P, since),
        Flag("lr", "l", "0.001", "learning rate", "float", _P, since),
        Flag("beta1", "1", "0.9", "beta1", "float", _P, since),
        Flag("beta2", "2", "0.999", "beta2", "float", _P, since),
        Flag("eps", "e", "0.00000001", "epsilon", "float", _P, since),
        Flag("weight_decay", "W", "0", "weight decay", "float", _P, since),
    ]
    if transformers:
        flags.append(Flag("correct_bias", "c", "1", "1 = bias-corrected moments", "int", _P, since))
    else:
        flags += [Flag("amsgrad", "a", "0", "1 = AMSGrad", "int", _P, since),
                  Flag("maximize", "m", "0", "1 = maximize the objective", "int", _P, since)]
    if with_amp:
        flags += [Flag("scale", "s", "65536", "gradient scale", "int", _P, since),
                  Flag("found_inf", "f", "0", "1 = pretend an inf was found in the gradients", "int", _P, since)]
    flags += [Flag("iter", "i", "10", "iterations (optimizer steps)", "int", _R, since),
              Flag("verify", "V", "1", "1 = check against a CPU reference", "int", _R, since),
              Flag("time", "t", "0", "1 = print kernel times", "int", _R, since),
              Flag("wall", "w", "0", "wall-clock timing (needs -t 1)", "int", _R, since),
              Flag("mt", "M", "0", "1 = multithreaded CPU reference", "int", _R, "3.5")]
    return tuple(flags)


_SRC_ADAM = ("ROCm/MIOpen driver/adam_driver.hpp, dm_adam.cpp at rocm-6.2.0..rocm-6.2.2, rocm-test-09212024, "
             "develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/adam_driver.hpp @07647551, @0096658f")
_SRC_TADAMW = ("ROCm/MIOpen driver/transformers_adam_w_driver.hpp, dm_transformers_adam_w.cpp at "
               "rocm-test-09212024 and develop 2d1fd997; ROCm/rocm-libraries projects/miopen/driver/"
               "transformers_adam_w_driver.hpp @07647551")

ADAM = Subcommand(
    family="adam",
    bases=(
        Base("adam", "fp32", since="3.2"),
        Base("adamfp16", "fp16", since="3.2"),
        Base("adamw", "fp32", since="3.3"),
        Base("adamwfp16", "fp16", since="3.3"),
    ),
    flags=_adam_flags("3.2", with_amp=False, transformers=False),
    source=_SRC_ADAM,
    summary="fused Adam / AdamW step (adamw bases set the decoupled weight-decay form)",
    notes="adam and adamw share one driver class; the base argument selects AdamW.",
)

AMPADAM = Subcommand(
    family="ampadam",
    bases=(
        Base("ampadam", "fp32", param_dtype="fp16", since="3.2", note="fp32 parameters, fp16 gradients"),
        Base("ampadamw", "fp32", param_dtype="fp16", since="3.3", note="fp32 parameters, fp16 gradients"),
    ),
    flags=_adam_flags("3.2", with_amp=True, transformers=False),
    source=_SRC_ADAM,
    summary="mixed-precision (AMP) Adam / AdamW step with gradient scaling",
    notes="Only these bases declare -s/--scale and -f/--found_inf.",
)

TRANSFORMERSADAMW = Subcommand(
    family="transformersadamw",
    bases=(
        Base("transformersadamw", "fp32", since="3.3"),
        Base("transformersadamwfp16", "fp16", since="3.3"),
    ),
    flags=_adam_flags("3.3", with_amp=False, transformers=True),
    source=_SRC_TADAMW,
    summary="Hugging Face Transformers-style AdamW step",
)

TRANSFORMERSAMPADAMW = Subcommand(
    family="transformersampadamw",
    bases=(Base("transformersampadamw", "fp32", param_dtype="fp16", since="3.3",
                note="fp32 parameters, fp16 gradients"),),
    flags=_adam_flags("3.3", with_amp=True, transformers=True),
    source=_SRC_TADAMW,
    summary="mixed-precision Transformers-style AdamW step",
)

_ADAM_TOKENS = ("-d", "-l", "-1", "-2", "-e", "-W", "-a", "-m")
_TADAMW_TOKENS = ("-d", "-l", "-1", "-2", "-e", "-W", "-c")

LOGGED_FLAGS: dict[str, tuple[tuple[str, str, str, tuple[str, ...]], ...]] = {
    "adam": (("3.2", "", "LogCmdAdam: adam|adamw[fp16] -d AxB -l -1 -2 -e -W -a -m", _ADAM_TOKENS),),
    "ampadam": (("3.2", "", "LogCmdAdam: ampadam|ampadamw (scale/found_inf not logged)", _ADAM_TOKENS),),
    "transformersadamw": (("3.3", "", "LogCmdTransformersAdamW: transformersadamw[fp16] -d -l -1 -2 -e -W -c",
                           _TADAMW_TOKENS),),
    "transformersampadamw": (("3.3", "", "LogCmdTransformersAdamW: transformersampadamw", _TADAMW_TOKENS),),
}

LOGGING_DEFECTS: dict[str, tuple[tuple[str, str, str, str], ...]] = {}

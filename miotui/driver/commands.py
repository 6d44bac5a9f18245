"""MIOpenDriver command lines <-> problems, both ways.

The command we write is what today's MIOpenDriver accepts, with every flag spelled
out (so a user can paste it and see exactly what runs).  The command we read may come
from any MIOpen version's log (``Command [LogCmd...]`` lines, the old
``miopenX: ./bin/MIOpenDriver`` lines), from a user's shell history, or from MITuna's
lists; MIOpenDriver's own defaults fill omitted flags, and MIOpen's known logging bugs
(``miopen_formats.md`` §3) are corrected with a warning that says what changed.

Log text is untrusted: every value read is validated (integers, whitelisted names),
and what we emit is an argv list built only from validated values, never a shell string.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from miotui.driver.shell import find_commands
from miotui.problems import (FUSION_ACTIV_DEFAULTS, FUSION_ACTIV_MODES, ActivationProblem, BatchNormProblem,
                             ConvProblem, FusionProblem, LRNProblem, PoolProblem, Problem, ProblemError,
                             SoftmaxProblem, default_layout)


class DriverCommandError(ValueError):
    """A command that does not describe a runnable layer (cut short, bad flag, bad value)."""


@dataclass(frozen=True)
class ParsedCommand:
    problems: tuple[Problem, ...]
    warnings: tuple[str, ...] = ()
    base: str = ""
    flags: dict = field(default_factory=dict, compare=False, hash=False)


# ----------------------------------------------------------------------------- base args

CONV_BASES = {"conv": "fp32", "convfp32": "fp32", "convfp16": "fp16", "convbfp16": "bf16",
              "convint8": "int8", "convfp8": "fp8", "convbfp8": "bf8"}
BNORM_BASES = {"bnorm": ("fp32", "fp32"), "bnormfp16": ("fp16", "fp16"), "bnormbfp16": ("bf16", "bf16"),
               "bnormfp16fp32": ("fp16", "fp32"), "bnormbfp16fp32": ("bf16", "fp32")}
POOL_BASES = {"pool": "fp32", "poolfp16": "fp16", "poolbfp16": "bf16"}
ACTIV_BASES = {"activ": "fp32", "activfp16": "fp16"}
LRN_BASES = {"lrn": "fp32", "lrnfp16": "fp16"}
SOFTMAX_BASES = {"softmax": "fp32", "softmaxfp16": "fp16", "softmaxbfp16": "bf16"}
FUSION_BASES = {"CBAInfer": "fp32", "CBAInferfp16": "fp16", "CBAInferbfp16": "bf16",
                "CAInfer": "fp32", "CAInferfp16": "fp16", "CAInferbfp16": "bf16"}
KNOWN_BASES = (set(CONV_BASES) | set(BNORM_BASES) | set(POOL_BASES) | set(ACTIV_BASES)
               | set(LRN_BASES) | set(SOFTMAX_BASES) | set(FUSION_BASES))

_DTYPE_SUFFIX = {"fp32": "", "fp16": "fp16", "bf16": "bfp16", "int8": "int8", "fp8": "fp8", "bf8": "bfp8"}

# Long flag names -> short letters, per driver (driver/*_driver.hpp, §5).
CONV_LONG = {
    "forw": "F", "batchsize": "n", "in_channels": "c", "in_d": "!", "in_h": "H", "in_w": "W",
    "out_channels": "k", "fil_d": "@", "fil_h": "y", "fil_w": "x", "conv_stride_d": "#",
    "conv_stride_h": "u", "conv_stride_w": "v", "conv_stride_0": "u", "conv_stride_1": "v",
    "pad_d": "$", "pad_h": "p", "pad_w": "q", "pad_val": "r", "trans_output_pad_d": "%",
    "trans_output_pad_h": "Y", "trans_output_pad_w": "X", "dilation_d": "^", "dilation_h": "l",
    "dilation_w": "j", "group_count": "g", "mode": "m", "pad_mode": "z", "iter": "i", "verify": "V",
    "time": "t", "wall": "w", "search": "s", "printconv": "P", "solution": "S", "in_layout": "I",
    "out_layout": "O", "fil_layout": "f", "spatial_dim": "_", "bias": "b", "gpualloc": "G",
    "tensor_vect": "Z", "vector_length": "L", "dump_output": "o", "in_data": "d", "weights": "e",
    "dout_data": "D", "in_bias": "a", "verification_cache": "C", "in_cast_type": "U",
    "out_cast_type": "T", "wei_cast_type": "R",
}
POOL_LONG = {
    "input": "W", "forw": "F", "win_d": "Z", "win_h": "y", "win_w": "x", "pool_stride_d": "s",
    "pool_stride_h": "v", "pool_stride_w": "u", "pad_d": "o", "pad_h": "p", "pad_w": "q",
    "pad_val": "r", "index_position": "M", "iter": "i", "verify": "V", "time": "t", "wall": "w",
    "print": "P", "mode": "m", "pad_mode": "z", "index_type": "I", "batchsize": "n",
    "in_channels": "c", "in_d": "D", "in_h": "H", "in_w": "W", "spatial_dim": "d",
}
BNORM_LONG = {
    "forw": "F", "back": "b", "batchsize": "n", "in_channels": "c", "in_h": "H", "in_w": "W",
    "in_d": "D", "layout": "L", "alpha": "A", "beta": "B", "iter": "i", "verify": "V", "time": "t",
    "printconv": "P", "wall": "w", "mode": "m", "save": "s", "run": "r", "inverse_variance": "I",
}
SIMPLE_LONG = {"forw": "F", "batchsize": "n", "in_channels": "c", "in_h": "H", "in_w": "W",
               "mode": "m", "alpha": "A", "beta": "B", "gamma": "G", "iter": "i", "verify": "V",
               "time": "t", "wall": "w", "lrnN": "N", "lrnK": "K", "back": "b", "printconv": "P",
               "algorithm": "a"}
FUSION_LONG = {"batchsize": "n", "in_channels": "c", "in_h": "H", "in_w": "W", "out_channels": "k",
               "group_count": "g", "fil_h": "y", "fil_w": "x", "conv_stride_h": "u",
               "conv_stride_w": "v", "pad_h": "p", "pad_w": "q", "pad_val": "r", "alpha": "A",
               "beta": "B", "gamma": "G", "iter": "i", "verify": "V", "time": "t", "printconv": "P",
               "activMode": "m", "bnMode": "M", "wall": "w", "dilation_h": "l", "dilation_w": "j",
               "search": "s", "pad_mode": "z", "fusion_mode": "F", "dot_graph": "D"}

_INT_RE = re.compile(r"^[+]?\d{1,12}$")
_FLOAT_RE = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
_LAYOUT_RE = re.compile(r"^(NCHW|NHWC|NCDHW|NDHWC)$")


# ----------------------------------------------------------------------------- tokenising

# Flags that only steer a run (time, verify, iterations...): a typed command cut right
# after one of them still describes its layer completely.
_RUN_ONLY_FLAGS = frozenset("tViwPsSob")


def _split_flags(args: Sequence[str], long_names: dict[str, str],
                 strict: bool = True) -> tuple[dict[str, str], list[str]]:
    """Pair every flag with its value, as MIOpenDriver does (every flag takes a value).

    ``strict`` (log lines): a flag without a value means the line was cut short.  A
    typed command (a user's or MITuna's list) may end in a bare run-only flag such as
    ``-t``; that is dropped with a warning.
    """
    flags: dict[str, str] = {}
    warnings: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok.startswith("--") and len(tok) > 2:
            name, eq, inline = tok[2:].partition("=")
            if name not in long_names:
                raise DriverCommandError(f"unknown flag --{name}")
            short = long_names[name]
        elif tok.startswith("-") and len(tok) == 2:
            short, eq, inline = tok[1], "", ""
        else:
            raise DriverCommandError(f"value {tok!r} without a flag")
        if eq:
            value = inline
            i += 1
        else:
            if i + 1 >= len(args):
                if not strict and short in _RUN_ONLY_FLAGS:
                    warnings.append(f"trailing {tok} without a value ignored")
                    break
                raise DriverCommandError(f"flag {tok} has no value (command cut short?)")
            value = args[i + 1]
            i += 2
        if short in flags and flags[short] != value:
            warnings.append(f"flag -{short} given twice; the last value ({value}) is used")
        flags[short] = value
    return flags, warnings


def _not_a_placeholder(key: str, value: str) -> None:
    """A value that is a shell variable or template (``$BATCH``, ``${N}``, ``<N>``) was never
    expanded: say so, rather than "not a number"."""
    if value.startswith("$") or (value.startswith("<") and value.endswith(">")) or "{{" in value:
        raise DriverCommandError(f"-{key} is a placeholder ({value}), not a value: the command was "
                                 f"pasted before the shell expanded it")


class _Flags:
    """Typed, validated access to one command's flags with MIOpenDriver's defaults."""

    def __init__(self, flags: dict[str, str]):
        self.raw = flags

    def has(self, key: str) -> bool:
        return key in self.raw

    def int(self, key: str, default: int) -> int:
        if key not in self.raw:
            return default
        v = self.raw[key]
        if not _INT_RE.match(v):
            _not_a_placeholder(key, v)
            raise DriverCommandError(f"-{key} must be a non-negative integer, got {v!r}")
        return int(v)

    def float(self, key: str, default: float) -> float:
        if key not in self.raw:
            return default
        v = self.raw[key]
        if not _FLOAT_RE.match(v):
            _not_a_placeholder(key, v)
            raise DriverCommandError(f"-{key} must be a number, got {v!r}")
        return float(v)

    def choice(self, key: str, default: str, allowed: Sequence[str]) -> str:
        v = self.raw.get(key, default)
        if v not in allowed:
            raise DriverCommandError(f"-{key} must be one of {', '.join(allowed)}, got {v!r}")
        return v

    def layout(self, key: str, ndim: int) -> str:
        v = self.raw.get(key, "").upper()
        if not v:
            return default_layout(ndim)
        if not _LAYOUT_RE.match(v):
            raise DriverCommandError(f"unsupported layout {v!r} for -{key}")
        return v


def _require(flags: dict[str, str], required: str, what: str) -> None:
    missing = [f for f in required.split() if f not in flags]
    if missing:
        raise DriverCommandError(f"{what} lacks {' '.join('-' + m for m in missing)}, which MIOpen "
                                 f"always prints (line cut short?)")


def _fmt_float(v: float) -> str:
    return format(v, "g")


# ----------------------------------------------------------------------------- conv

_CONV_DIRS = {1: ("fwd",), 2: ("bwd",), 4: ("wrw",), 3: ("fwd", "bwd"), 5: ("fwd", "wrw"),
              6: ("bwd", "wrw"), 0: ("fwd", "bwd", "wrw"), 7: ("fwd", "bwd", "wrw")}
_API_DIRECTION = [("BackwardWeights", "wrw"), ("BackwardData", "bwd"), ("Backward", "bwd"),
                  ("Inference", "fwd_infer"), ("Training", "fwd_train"), ("Forward", "fwd")]


def _direction_from_api(api_name: str) -> Optional[str]:
    for needle, direction in _API_DIRECTION:
        if needle in api_name:
            return direction
    return None


def _parse_conv(base: str, args: Sequence[str], api_name: Optional[str], log_fn: Optional[str]) -> ParsedCommand:
    raw, warnings = _split_flags(args, CONV_LONG, strict=bool(log_fn or api_name))
    f = _Flags(raw)
    if log_fn:
        _require(raw, "n c H W k y x p q u v l j m g F t", "this Command line")
    elif api_name:
        _require(raw, "n c H W k y x p q u v l j m t", "this command line")
    dtype = CONV_BASES[base]
    if raw.get("Z", "0") not in ("0", ""):
        warnings.append("vectorised int8x4 tensors (-Z) are not modelled; run as plain int8")
    nd = f.int("_", 2)  # MIOpenDriver ignores --in_d & co. unless --spatial_dim 3
    if nd not in (2, 3):
        raise DriverCommandError("--spatial_dim must be 2 or 3")

    def sp(d_key: str, h_key: str, w_key: str, default: int) -> tuple[int, ...]:
        hw = (f.int(h_key, default), f.int(w_key, default))
        return ((f.int(d_key, default),) + hw) if nd == 3 else hw

    n, c, k, g = f.int("n", 100), f.int("c", 3), f.int("k", 32), f.int("g", 1)
    mode = f.choice("m", "conv", ("conv", "trans", "group", "dw"))
    if mode in ("group", "dw"):
        warnings.append(f"legacy -m {mode} is written as -m conv with -g")
        if mode == "dw" and "g" not in raw:
            g = c
        mode = "conv"
    if mode == "trans" and log_fn:
        if g > 1:
            warnings.append(f"MIOpen logs K/G as -k for a grouped transposed convolution; "
                            f"corrected -k {k} to {k * g}")
            k *= g
        elif k == c:
            warnings.append("MIOpen before ROCm 6.1 logged C as -k for transposed convolutions: "
                            "if this log is that old, K may differ from -k")
    pad_mode = f.choice("z", "default", ("default", "same", "valid", "conv"))
    if pad_mode == "conv":
        pad_mode = "default"
    fwd_flag = f.int("F", 0)
    if api_name:
        direction = _direction_from_api(api_name) or "fwd"
        directions: tuple[str, ...] = (direction,)
    else:
        if fwd_flag not in _CONV_DIRS:
            raise DriverCommandError(f"-F {fwd_flag} is not a convolution direction (0-7)")
        directions = _CONV_DIRS[fwd_flag]
    if log_fn and raw.get("S") == "0":
        warnings.append("-S 0 (immediate mode 'fastest', not a solver id) dropped")
    try:
        problems = tuple(ConvProblem(
            direction=d, dtype=dtype, n=n, c=c, k=k, in_spatial=sp("!", "H", "W", 32),
            filter=sp("@", "y", "x", 3), pads=sp("$", "p", "q", 0), strides=sp("#", "u", "v", 1),
            dilations=sp("^", "l", "j", 1), groups=g, mode=mode,
            trans_output_pads=sp("%", "Y", "X", 0), pad_mode=pad_mode,
            in_layout=f.layout("I", nd), fil_layout=f.layout("f", nd), out_layout=f.layout("O", nd),
        ) for d in directions)
    except ProblemError as e:
        raise DriverCommandError(str(e)) from e
    return ParsedCommand(problems, tuple(warnings), base, raw)


def _conv_argv(p: ConvProblem) -> list[str]:
    suffix = _DTYPE_SUFFIX.get(p.dtype)
    if suffix is None:
        raise DriverCommandError(f"MIOpenDriver has no convolution driver for {p.dtype}")
    argv = ["conv" + suffix]
    if p.ndim == 2:
        (h, w), (y, x), (ph, pw), (sh, sw), (dh, dw) = p.in_spatial, p.filter, p.pads, p.strides, p.dilations
        argv += ["-n", p.n, "-c", p.c, "-H", h, "-W", w, "-k", p.k, "-y", y, "-x", x, "-p", ph, "-q", pw,
                 "-u", sh, "-v", sw, "-l", dh, "-j", dw]
    else:
        (d, h, w), (z, y, x) = p.in_spatial, p.filter
        (pd, ph, pw), (sd, sh, sw), (dd, dh, dw) = p.pads, p.strides, p.dilations
        argv += ["-n", p.n, "-c", p.c, "--in_d", d, "-H", h, "-W", w, "-k", p.k, "--fil_d", z, "-y", y,
                 "-x", x, "--pad_d", pd, "-p", ph, "-q", pw, "--conv_stride_d", sd, "-u", sh, "-v", sw,
                 "--dilation_d", dd, "-l", dh, "-j", dw, "--spatial_dim", 3]
    default = default_layout(p.ndim)
    for flag, value in (("--in_layout", p.in_layout), ("--fil_layout", p.fil_layout),
                        ("--out_layout", p.out_layout)):
        if value != default:
            argv += [flag, value]
    argv += ["-m", p.mode, "-g", p.groups]
    if any(p.trans_output_pads):
        if p.ndim == 3:
            argv += ["--trans_output_pad_d", p.trans_output_pads[0]]
        argv += ["-Y", p.trans_output_pads[-2], "-X", p.trans_output_pads[-1]]
    if p.pad_mode != "default":
        argv += ["-z", p.pad_mode]
    argv += ["-F", {"fwd": 1, "bwd": 2, "wrw": 4}[p.direction]]
    return [str(a) for a in argv]


# ----------------------------------------------------------------------------- batch norm

def _parse_bnorm(base: str, args: Sequence[str], api_name: Optional[str], log_fn: Optional[str]) -> ParsedCommand:
    raw, warnings = _split_flags(args, BNORM_LONG, strict=bool(log_fn or api_name))
    if "M" in raw:
        if "m" not in raw:
            raw["m"] = raw["M"]
            warnings.append("MIOpen 6.0-6.2 logged the batch-norm mode as -M (the driver has no -M); "
                            "corrected to -m")
        del raw["M"]
    if log_fn or api_name:
        _require(raw, "n c H W m", "this batch-norm command line")
    f = _Flags(raw)
    dtype, param_dtype = BNORM_BASES[base]
    d = f.int("D", 0)
    spatial = (d, f.int("H", 32), f.int("W", 32)) if d > 0 else (f.int("H", 32), f.int("W", 32))
    mode = {0: "per_activation", 1: "spatial"}.get(f.int("m", 0))
    if mode is None:
        raise DriverCommandError(f"batch-norm -m must be 0 (per-activation) or 1 (spatial), got {raw['m']}")
    forw, back = f.int("F", 0), f.int("b", 0)
    if api_name and "F" not in raw and "b" not in raw:
        direction = _direction_from_api(api_name) or "fwd_train"
        if direction == "fwd":
            direction = "fwd_train"
        if direction == "bwd" or "Backward" in api_name:
            direction = "bwd"
    elif forw == 2:
        direction = "fwd_infer"
    elif forw == 1:
        direction = "fwd_train"
    elif forw == 0 and back == 1:
        direction = "bwd"
    elif forw == 0:
        direction = "fwd_train"
    else:
        raise DriverCommandError(f"batch-norm --forw must be 0, 1 or 2, got {forw}")
    save, running = bool(f.int("s", 0)), bool(f.int("r", 0))
    if (log_fn or api_name) and "I" not in raw and save != running:
        save, running = running, save
        warnings.append("MIOpen before the 2025 fix logged -s (saved mean) and -r (running mean) "
                        "swapped; swapped back")
    nd = len(spatial)
    layout = f.layout("L", nd)
    try:
        problem = BatchNormProblem(direction, dtype, f.int("n", 32), f.int("c", 3), spatial, mode,
                                   layout, save, running, param_dtype)
    except ProblemError as e:
        raise DriverCommandError(str(e)) from e
    return ParsedCommand((problem,), tuple(warnings), base, raw)


def _bnorm_argv(p: BatchNormProblem) -> list[str]:
    suffix = {"fp32": "", "fp16": "fp16", "bf16": "bfp16"}.get(p.dtype)
    if suffix is None:
        raise DriverCommandError(f"MIOpenDriver has no batch-norm driver for {p.dtype}")
    base = "bnorm" + suffix
    if p.dtype != "fp32" and p.param_dtype == "fp32":
        base += "fp32"
    argv: list = [base, "-n", p.n, "-c", p.c]
    if p.ndim == 3:
        argv += ["-D", p.in_spatial[0]]
    argv += ["-H", p.in_spatial[-2], "-W", p.in_spatial[-1], "-m", 1 if p.mode == "spatial" else 0]
    argv += {"fwd_train": ["--forw", 1, "-b", 0], "fwd_infer": ["--forw", 2, "-b", 0],
             "bwd": ["--forw", 0, "-b", 1]}[p.direction]
    if p.save:
        argv += ["-s", 1]
    if p.running:
        argv += ["-r", 1]
    if p.layout != default_layout(p.ndim):
        argv += ["--layout", p.layout]
    return [str(a) for a in argv]


# ----------------------------------------------------------------------------- pooling

_POOL_MODES = {"max": "max", "avg": "avg", "avg_in": "avg_in", "0": "max", "1": "avg", "2": "avg_in"}


def _parse_pool(base: str, args: Sequence[str], api_name: Optional[str], log_fn: Optional[str]) -> ParsedCommand:
    raw, warnings = _split_flags(args, POOL_LONG, strict=bool(log_fn or api_name))
    if log_fn or api_name:
        _require(raw, "y x p q u v m", "this pooling command line")
        if "x" not in raw.get("W", ""):
            _require(raw, "n c H W", "this pooling command line")
    f = _Flags(raw)
    dtype = POOL_BASES[base]
    tensor = raw.get("W", "")
    layout = ""
    if "x" in tensor:  # new --input NxCx[D]xHxW[,layout|strides]
        dims_text, _, extra = tensor.partition(",")
        dims = dims_text.split("x")
        if len(dims) not in (4, 5) or not all(_INT_RE.match(d) for d in dims):
            raise DriverCommandError(f"--input must be NxCxHxW or NxCxDxHxW, got {tensor!r}")
        n, c, *spatial_list = (int(d) for d in dims)
        spatial = tuple(spatial_list)
        if extra and not extra[0].isdigit():
            layout = extra.upper()
            if not _LAYOUT_RE.match(layout):
                raise DriverCommandError(f"unsupported pooling layout {extra!r}")
        elif extra:
            strides = [int(s) for s in extra.split("x") if _INT_RE.match(s)]
            if len(strides) == len(dims) and strides[1] == 1 and strides[-1] != 1:
                layout = "NHWC" if len(dims) == 4 else "NDHWC"
    else:
        if log_fn or api_name or "n" in raw:
            if log_fn:
                warnings.append("this MIOpen logged pooling with -n/-c/-H/-W, which MIOpenDriver "
                                "from ROCm 5.1 rejects; written as --input")
        n, c = f.int("n", 100), f.int("c", 3)
        d = f.int("D", 0)
        spatial = (d, f.int("H", 32), f.int("W", 32)) if (d > 0 or f.int("d", 2) == 3) else \
            (f.int("H", 32), f.int("W", 32))
        if spatial[0] == 0:
            spatial = (32,) + spatial[1:]
    nd = len(spatial)
    win = (f.int("Z", 3),) * (nd == 3) + (f.int("y", 3), f.int("x", 3))
    pads = (f.int("o", 0),) * (nd == 3) + (f.int("p", 0), f.int("q", 0))
    if api_name:  # MIOpen <= 1.8: -u vertical (H), -v horizontal (W)
        strides_hw = (f.int("u", 1), f.int("v", 1))
    else:
        strides_hw = (f.int("v", 1), f.int("u", 1))
    strides = (f.int("s", 1),) * (nd == 3) + strides_hw
    mode = _POOL_MODES.get(raw.get("m", "max"))
    if mode is None:
        raise DriverCommandError(f"pooling -m must be max, avg or avg_in, got {raw['m']!r}")
    if api_name:
        dirs: tuple[str, ...] = ("bwd",) if "Backward" in api_name else ("fwd",)
    elif log_fn:
        dirs = ("fwd",) if f.int("F", 1) == 1 else ("bwd",)
    else:
        fwd_flag = f.int("F", 0)
        dirs = {1: ("fwd",), 2: ("bwd",)}.get(fwd_flag, ("fwd", "bwd"))
    index_mode = f.int("M", 0)
    try:
        problems = tuple(PoolProblem(dd, dtype, n, c, spatial, win, pads, strides, mode,
                                     layout, 1 if index_mode else 0) for dd in dirs)
    except ProblemError as e:
        raise DriverCommandError(str(e)) from e
    return ParsedCommand(problems, tuple(warnings), base, raw)


def _pool_argv(p: PoolProblem) -> list[str]:
    suffix = {"fp32": "", "fp16": "fp16", "bf16": "bfp16"}.get(p.dtype)
    if suffix is None:
        raise DriverCommandError(f"MIOpenDriver has no pooling driver for {p.dtype}")
    tensor = "x".join(str(v) for v in (p.n, p.c) + p.in_spatial)
    if p.layout != default_layout(p.ndim):
        tensor += "," + p.layout
    argv: list = ["pool" + suffix, "-M", p.index_mode, "--input", tensor]
    if p.ndim == 3:
        argv += ["-Z", p.window[0]]
    argv += ["-y", p.window[-2], "-x", p.window[-1]]
    if p.ndim == 3:
        argv += ["-o", p.pads[0]]
    argv += ["-p", p.pads[-2], "-q", p.pads[-1]]
    if p.ndim == 3:
        argv += ["-s", p.strides[0]]
    argv += ["-v", p.strides[-2], "-u", p.strides[-1], "-m", p.mode, "-F", 1 if p.direction == "fwd" else 2]
    return [str(a) for a in argv]


# ----------------------------------------------------------------------------- activation / lrn / softmax

def _plain_dirs(f: _Flags, log_fn: Optional[str], api_name: Optional[str]) -> tuple[str, ...]:
    if api_name:
        return ("bwd",) if "Backward" in api_name else ("fwd",)
    fwd_flag = f.int("F", 0)
    return {1: ("fwd",), 2: ("bwd",)}.get(fwd_flag, ("fwd",) if log_fn else ("fwd", "bwd"))


def _parse_activ(base: str, args: Sequence[str], api_name: Optional[str], log_fn: Optional[str]) -> ParsedCommand:
    raw, warnings = _split_flags(args, SIMPLE_LONG, strict=bool(log_fn or api_name))
    if log_fn:
        _require(raw, "n c H W m F A B G", "this activation Command line")
    f = _Flags(raw)
    try:
        problems = tuple(ActivationProblem(d, ACTIV_BASES[base], f.int("n", 100), f.int("c", 3),
                                           (f.int("H", 32), f.int("W", 32)), f.int("m", 3),
                                           f.float("A", 1.0), f.float("B", 1.0), f.float("G", 1.0))
                         for d in _plain_dirs(f, log_fn, api_name))
    except ProblemError as e:
        raise DriverCommandError(str(e)) from e
    return ParsedCommand(problems, tuple(warnings), base, raw)


def _activ_argv(p: ActivationProblem) -> list[str]:
    base = {"fp32": "activ", "fp16": "activfp16"}.get(p.dtype)
    if base is None:
        raise DriverCommandError(f"MIOpenDriver has no activation driver for {p.dtype}")
    return [base, "-n", str(p.n), "-c", str(p.c), "-H", str(p.in_spatial[0]), "-W", str(p.in_spatial[1]),
            "-m", str(p.mode), "--forw", "1" if p.direction == "fwd" else "2",
            "-A", _fmt_float(p.alpha), "-B", _fmt_float(p.beta), "-G", _fmt_float(p.gamma)]


def _parse_lrn(base: str, args: Sequence[str], api_name: Optional[str], log_fn: Optional[str]) -> ParsedCommand:
    raw, warnings = _split_flags(args, SIMPLE_LONG, strict=bool(log_fn or api_name))
    if log_fn:
        _require(raw, "A B F H K N W c m n", "this LRN Command line")
    f = _Flags(raw)
    mode_text = raw.get("m", "within")
    if mode_text in ("0", "1"):
        warnings.append(f"MIOpen logs the LRN mode as a number (-m {mode_text}), which MIOpenDriver "
                        f"rejects; corrected to {'within' if mode_text == '0' else 'cross'}")
        mode_text = "within" if mode_text == "0" else "cross"
    if mode_text not in ("within", "cross"):
        raise DriverCommandError(f"LRN -m must be within or cross, got {mode_text!r}")
    try:
        problems = tuple(LRNProblem(d, LRN_BASES[base], f.int("n", 100), f.int("c", 3),
                                    (f.int("H", 32), f.int("W", 32)), mode_text, f.int("N", 5),
                                    f.float("A", 0.001), f.float("B", 0.75), f.float("K", 1.0))
                         for d in _plain_dirs(f, log_fn, api_name))
    except ProblemError as e:
        raise DriverCommandError(str(e)) from e
    return ParsedCommand(problems, tuple(warnings), base, raw)


def _lrn_argv(p: LRNProblem) -> list[str]:
    base = {"fp32": "lrn", "fp16": "lrnfp16"}.get(p.dtype)
    if base is None:
        raise DriverCommandError(f"MIOpenDriver has no LRN driver for {p.dtype}")
    return [base, "-n", str(p.n), "-c", str(p.c), "-H", str(p.in_spatial[0]), "-W", str(p.in_spatial[1]),
            "-m", p.mode, "-N", str(p.lrn_n), "-A", _fmt_float(p.alpha), "-B", _fmt_float(p.beta),
            "-K", _fmt_float(p.k), "-F", "1" if p.direction == "fwd" else "2"]


def _parse_softmax(base: str, args: Sequence[str], api_name: Optional[str], log_fn: Optional[str]) -> ParsedCommand:
    raw, warnings = _split_flags(args, SIMPLE_LONG, strict=bool(log_fn or api_name))
    if log_fn:
        _require(raw, "n c H W F a m A B", "this softmax Command line")
    f = _Flags(raw)
    try:
        problems = tuple(SoftmaxProblem(d, SOFTMAX_BASES[base], f.int("n", 100), f.int("c", 3),
                                        (f.int("H", 32), f.int("W", 32)), f.int("a", 1), f.int("m", 1),
                                        f.float("A", 1.0), f.float("B", 0.0))
                         for d in _plain_dirs(f, log_fn, api_name))
    except ProblemError as e:
        raise DriverCommandError(str(e)) from e
    return ParsedCommand(problems, tuple(warnings), base, raw)


def _softmax_argv(p: SoftmaxProblem) -> list[str]:
    base = {"fp32": "softmax", "fp16": "softmaxfp16", "bf16": "softmaxbfp16"}.get(p.dtype)
    if base is None:
        raise DriverCommandError(f"MIOpenDriver has no softmax driver for {p.dtype}")
    return [base, "-n", str(p.n), "-c", str(p.c), "-H", str(p.in_spatial[0]), "-W", str(p.in_spatial[1]),
            "-F", "1" if p.direction == "fwd" else "2", "-a", str(p.algorithm), "-m", str(p.mode),
            "-A", _fmt_float(p.alpha), "-B", _fmt_float(p.beta)]


# ----------------------------------------------------------------------------- fusion

#: CBAInfer's activation flags and the FusionProblem fields they set
_FUSION_ACTIV_FLAGS = (("m", "activ_mode"), ("A", "activ_alpha"), ("B", "activ_beta"), ("G", "activ_gamma"))


def _parse_fusion(base: str, args: Sequence[str], api_name: Optional[str], log_fn: Optional[str]) -> ParsedCommand:
    raw, warnings = _split_flags(args, FUSION_LONG, strict=bool(log_fn or api_name))
    f = _Flags(raw)
    dtype = FUSION_BASES[base]
    if "J" in raw:
        fusion_mode = f.int("J", 0)
    elif base.startswith("CAInfer"):
        fusion_mode = 5
    else:
        fusion_mode = f.int("F", 0)
    if log_fn:
        _require(raw, "n c H W" if fusion_mode == 2 else "n c H W k y x p q u v l j", "this fusion Command line")
    if log_fn and "J" not in raw and base.startswith("CBAInfer"):
        if dtype == "fp16":
            dtype = "bf16"
            warnings.append("MIOpen 6.x logged bf16 fusion plans as CBAInferfp16; read as bf16")
        elif dtype == "fp32":
            warnings.append("MIOpen 6.x logged fp16 fusion plans as CBAInfer: the data type may be fp16")
    bn_key = "M"
    if fusion_mode == 2 and "m" in raw and "M" not in raw and log_fn:
        bn_key = "m"
        warnings.append("MIOpen 6.3+ logged the batch-norm mode of a BN+activation fusion as -m "
                        "(the driver's activation mode); read as the batch-norm mode -M")
    bn_mode = {0: "per_activation", 1: "spatial"}.get(f.int(bn_key, 0))
    if bn_mode is None:
        raise DriverCommandError("fusion batch-norm mode must be 0 or 1")
    spatial = (f.int("H", 32), f.int("W", 32))
    # the driver's activation flags (MIOpen's Command lines carry none: CBAInfer's defaults)
    activ = {name: (f.int if flag == "m" else f.float)(flag, FUSION_ACTIV_DEFAULTS[name])
             for flag, name in _FUSION_ACTIV_FLAGS}
    if bn_key == "m":   # -m was the batch-norm mode
        activ["activ_mode"] = FUSION_ACTIV_DEFAULTS["activ_mode"]
    try:
        if fusion_mode in (0, 1, 3, 4, 5, 6):
            problem = FusionProblem(fusion_mode, dtype, f.int("n", 32), f.int("c", 3), spatial,
                                    k=f.int("k", 32), filter=(f.int("y", 3), f.int("x", 3)),
                                    pads=(f.int("p", 0), f.int("q", 0)), strides=(f.int("u", 1), f.int("v", 1)),
                                    dilations=(f.int("l", 1), f.int("j", 1)), groups=f.int("g", 1),
                                    bn_mode=bn_mode, **activ)
        else:
            problem = FusionProblem(fusion_mode, dtype, f.int("n", 32), f.int("c", 3), spatial, bn_mode=bn_mode,
                                    **activ)
    except ProblemError as e:
        raise DriverCommandError(str(e)) from e
    return ParsedCommand((problem,), tuple(warnings), base, raw)


def _fusion_argv(p: FusionProblem) -> list[str]:
    suffix = {"fp32": "", "fp16": "fp16", "bf16": "bfp16"}.get(p.dtype)
    if suffix is None:
        raise DriverCommandError(f"MIOpenDriver has no fusion driver for {p.dtype}")
    argv: list = ["CBAInfer" + suffix, "-F", p.fusion_mode, "-n", p.n, "-c", p.c,
                  "-H", p.in_spatial[0], "-W", p.in_spatial[1]]
    if p.has_conv:
        argv += ["-k", p.k, "-y", p.filter[0], "-x", p.filter[1], "-p", p.pads[0], "-q", p.pads[1],
                 "-u", p.strides[0], "-v", p.strides[1], "-l", p.dilations[0], "-j", p.dilations[1],
                 "-g", p.groups]
    if p.fusion_mode in (0, 1, 2, 3):
        argv += ["-M", 1 if p.bn_mode == "spatial" else 0]
    if p.fusion_mode in FUSION_ACTIV_MODES:  # the activation, where it differs from the driver's default
        for flag, name in _FUSION_ACTIV_FLAGS:
            value = getattr(p, name)
            if value != FUSION_ACTIV_DEFAULTS[name]:
                argv += ["-" + flag, value if flag == "m" else _fmt_float(value)]
    return [str(a) for a in argv]


# ----------------------------------------------------------------------------- public API

_PARSERS: list[tuple[dict, Callable[..., ParsedCommand]]] = [
    (CONV_BASES, _parse_conv), (BNORM_BASES, _parse_bnorm), (POOL_BASES, _parse_pool),
    (ACTIV_BASES, _parse_activ), (LRN_BASES, _parse_lrn), (SOFTMAX_BASES, _parse_softmax),
    (FUSION_BASES, _parse_fusion),
]


def parse_driver_args(args: Sequence[str], *, api_name: Optional[str] = None,
                      log_fn: Optional[str] = None) -> ParsedCommand:
    """Decode MIOpenDriver arguments (the tokens after the executable).

    ``api_name`` marks a MIOpen <= 1.8 ``miopenX: ./bin/MIOpenDriver`` line (the API
    name gives the direction); ``log_fn`` marks a ``Command [LogCmd...]`` line, whose
    flags MIOpen always prints in full and whose known bugs are corrected.
    """
    if not args:
        raise DriverCommandError("empty MIOpenDriver command")
    base = args[0]
    if len(args) == 1 and (api_name or log_fn):
        raise DriverCommandError(f"MIOpen logged {base!r} without any flags (MIOpen 1.x does this for "
                                 f"batch-norm backward); the layer is only in the API trace")
    for bases, parser in _PARSERS:
        if base in bases:
            return parser(base, list(args[1:]), api_name, log_fn)
    raise DriverCommandError(f"MIOpenDriver base argument {base!r} is not a layer miotui models")


_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def split_command_text(text: str) -> list[str]:
    """Tokens after the MIOpenDriver executable in a pasted or logged command line (the
    first command in it: see ``miotui.driver.shell`` for the shapes understood), or a
    bare argument list that starts with a base argument."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ").strip()
    found = find_commands(text)
    if found:
        return list(found[0].args)
    try:
        tokens = shlex.split(text)
    except ValueError:
        tokens = text.split()
    while tokens and _ENV_RE.match(tokens[0]):
        tokens = tokens[1:]
    if tokens and tokens[0] in KNOWN_BASES:
        return tokens
    raise DriverCommandError("no MIOpenDriver command found")


def parse_driver_command(text: str, **kw) -> ParsedCommand:
    """Decode a whole command line as a user would paste it (prompt, env, exe, continuations)."""
    return parse_driver_args(split_command_text(text), **kw)


_ARGV_BUILDERS: dict[type, Callable] = {
    ConvProblem: _conv_argv, BatchNormProblem: _bnorm_argv, PoolProblem: _pool_argv,
    ActivationProblem: _activ_argv, LRNProblem: _lrn_argv, SoftmaxProblem: _softmax_argv,
    FusionProblem: _fusion_argv,
}


def to_driver_argv(problem: Problem) -> list[str]:
    """MIOpenDriver argv (base argument first, no executable) that reproduces ``problem``.

    Raises DriverCommandError when MIOpenDriver cannot express it (e.g. a dtype it has
    no driver for); the value is otherwise always complete and paste-able.
    """
    builder = _ARGV_BUILDERS.get(type(problem))
    if builder is None:
        raise DriverCommandError(f"no MIOpenDriver command for {type(problem).__name__}")
    return builder(problem)


def to_driver_command(problem: Problem, executable: str = "MIOpenDriver") -> str:
    """A paste-able command line; every token is a validated number or whitelisted name."""
    return " ".join([executable] + [shlex.quote(a) for a in to_driver_argv(problem)])

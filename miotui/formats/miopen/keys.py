"""Problem identities MIOpen prints in compact form -> ConvProblem values.

MIOpen names a convolution problem three ways besides its API trace and driver
commands, and each shows up in logs and database files:

* the **Find-Db / Perf-Db key** (``docs/formats.md`` §7.1), e.g.
  ``576-4-4-1x1-192-4-4-8-1x1-2x2-3x3-0-NCHW-FP32-F_g2``: the key of every record in a
  ``*.fdb.txt``/``*.pdb.txt``/``*.udb.txt`` file and of ``Looking for key`` /
  ``SetValues`` level lines;
* the **network config** (§7.2), e.g.
  ``64x256x256x3x3x64x256x256x32xNHWCxNHWCxNHWCxFP32x1x1x1x1x1x1x1xFxDefault``: the
  kernel-cache and invoker key of ``Returning an invoker for problem ...`` lines.  Its
  shape changed four times (2017: no geometry; 2019: a trailing ``x1``/``x0`` for
  forward/backward (§7.2); 2020: ``xF``/``xB``/``xW``; ROCm 6: ``xDefault``);
* the **problem string** of ``Info [LogConvolutionExecution]`` (2026), which is just
  MIOpenDriver arguments (``conv -n 100 -c 3 ...``) and is read by ``miotui.driver``.

The key and the network config store a backward problem with the tensors swapped
(first block = dy, second block = dx/x, §7.3), and a transposed convolution's forward
pass is stored as a backward-data problem of the equivalent normal convolution (§7.3):
the key alone cannot tell the two apart, so decoding a ``B`` key says so in a warning.

All three decoders return a ``DecodedKey`` (problems + warnings) or raise
``ProblemKeyError``, which callers turn into ``Undecoded``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Optional

from miotui.problems import ConvProblem, ProblemError, default_layout


class ProblemKeyError(ValueError):
    """Text that looks like a MIOpen problem key but does not describe a layer."""


@dataclass(frozen=True)
class DecodedKey:
    """What a key-like string says: the problem(s) and any doubt about them."""

    problems: tuple[ConvProblem, ...]
    warnings: tuple[str, ...] = ()


# ----------------------------------------------------------------------------- shared pieces

#: ``GetDataTypeName`` spellings -> miotui dtypes (None: MIOpen type miotui cannot run).
_TYPE_NAMES: dict[str, Optional[str]] = {
    "FP32": "fp32", "FP16": "fp16", "BF16": "bf16", "INT8": "int8", "FP64": "fp64",
    "FP8": "fp8", "BF8": "bf8", "INT32": None, "INT64": None, "INT8x4": "int8",
}
# Longest names first so "INT8x4" wins over "INT8" and "FP16" is not read as "FP1"+...
_TYPE_RE = re.compile("|".join(sorted((re.escape(t) for t in _TYPE_NAMES), key=len, reverse=True)))
_LAYOUTS = {"NCHW", "NHWC", "NCDHW", "NDHWC"}
_VECTOR_LAYOUTS = {"NCHWc", "CHWNc"}
_DIRECTIONS = {"F": "fwd", "B": "bwd", "W": "wrw"}
_INT_RE = re.compile(r"^\d{1,9}$")


def split_type_names(types: str) -> list[str]:
    """``EncodeDataTypesForKey`` output -> one or three type names.

    ``FP32`` -> ["FP32"]; ``INT8INT8INT32`` -> ["INT8", "INT8", "INT32"].  The names are
    concatenated without a separator, so they are matched greedily from the left.
    """
    names: list[str] = []
    pos = 0
    while pos < len(types):
        m = _TYPE_RE.match(types, pos)
        if m is None:
            raise ProblemKeyError(f"unknown data type {types[pos:]!r} in {types!r}")
        names.append(m.group(0))
        pos = m.end()
    if len(names) not in (1, 3):
        raise ProblemKeyError(f"data types {types!r} name {len(names)} tensors; expected 1 or 3")
    return names


def _dtype_from_types(types: str, direction: str, warnings: list[str]) -> str:
    """The driver's data type: x's type (the key's *out* tensor for B/W, §7.3)."""
    names = split_type_names(types)
    if len(names) == 1:
        names = names * 3
    x_name = names[0] if direction == "fwd" else names[2]
    if "INT8x4" in names:
        warnings.append("INT8x4 (vectorised int8, removed in ROCm 6.1) is modelled as plain int8")
    dtype = _TYPE_NAMES[x_name]
    if dtype is None:
        raise ProblemKeyError(f"convolution input of type {x_name} is not a layer MIOpenDriver runs")
    plain_int8 = names[0] in ("INT8", "INT8x4") and names[1] in ("INT8", "INT8x4") and \
        names[2] in ("INT8", "INT8x4", "INT32", "FP32")  # MIOpen's usual int8 conv (convint8)
    if len(set(names)) > 1 and not plain_int8:
        warnings.append(f"tensor types differ (in {names[0]}, weights {names[1]}, out {names[2]}); "
                        f"modelled as {dtype} throughout")
    return dtype


def _layouts(tokens: list[str], direction: str, ndim: int) -> tuple[str, str, str]:
    """(x, w, y) layouts from one or three layout tokens (in, weights, out order)."""
    for t in tokens:
        if t in _VECTOR_LAYOUTS:
            raise ProblemKeyError(f"vectorised layout {t} is not modelled")
        if t not in _LAYOUTS:
            raise ProblemKeyError(f"unknown tensor layout {t!r}")
        if len(t) != ndim + 2:
            raise ProblemKeyError(f"layout {t} does not fit a {ndim}-D convolution")
    if len(tokens) == 1:
        tokens = tokens * 3
    key_in, key_w, key_out = tokens
    if direction == "fwd":
        return key_in, key_w, key_out
    return key_out, key_w, key_in  # B/W keys store in = dy, out = dx (§7.3)


def _int(token: str, what: str) -> int:
    if not _INT_RE.match(token):
        raise ProblemKeyError(f"{what} must be a non-negative integer, got {token!r}")
    return int(token)


def _dims(token: str, ndim: int, what: str) -> tuple[int, ...]:
    parts = token.split("x")
    if len(parts) != ndim:
        raise ProblemKeyError(f"{what} {token!r} should have {ndim} values")
    return tuple(_int(p, what) for p in parts)


@dataclass(frozen=True)
class _Geometry:
    """A key's numbers in MIOpen's in/out order, before the B/W swap."""

    ndim: int
    in_c: int
    in_spatial: tuple[int, ...]
    filter: tuple[int, ...]
    out_c: int
    out_spatial: tuple[int, ...]
    n: int
    pads: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    groups: int


def _build(geo: _Geometry, direction: str, dtype: str, layouts: tuple[str, str, str],
           warnings: list[str]) -> ConvProblem:
    """A ConvProblem from key geometry, checked against the key's own output size."""
    if direction == "fwd":
        c, k, x_sp, y_sp = geo.in_c, geo.out_c, geo.in_spatial, geo.out_spatial
    else:
        c, k, x_sp, y_sp = geo.out_c, geo.in_c, geo.out_spatial, geo.in_spatial
    x_layout, w_layout, y_layout = layouts
    last_error: Optional[Exception] = None
    for pad_mode in ("default", "same", "valid"):
        try:
            p = ConvProblem(direction=direction, dtype=dtype, n=geo.n, c=c, k=k, in_spatial=x_sp,
                            filter=geo.filter, pads=geo.pads, strides=geo.strides,
                            dilations=geo.dilations, groups=geo.groups, pad_mode=pad_mode,
                            in_layout=x_layout, fil_layout=w_layout, out_layout=y_layout)
        except ProblemError as e:
            last_error = e
            continue
        if p.out_spatial == y_sp:
            if pad_mode != "default":
                warnings.append(f"output size fits only padding mode '{pad_mode}'")
            return p
        last_error = ProblemKeyError(
            f"output size {'x'.join(map(str, y_sp))} does not follow from input "
            f"{'x'.join(map(str, x_sp))}, filter {'x'.join(map(str, geo.filter))}, pads "
            f"{'x'.join(map(str, geo.pads))}, strides {'x'.join(map(str, geo.strides))}, "
            f"dilations {'x'.join(map(str, geo.dilations))}")
    raise ProblemKeyError(str(last_error))


def _transposed_alternative(p: ConvProblem) -> Optional[ConvProblem]:
    """The transposed forward convolution that MIOpen would store under the same B key.

    MIOpen runs a transposed forward as the backward-data pass of the normal
    convolution with x and y swapped; so for ``p`` (a backward-data problem with
    input x = dx of C channels, output dy of K channels) the transposed reading has
    input dy (K channels, ``p.out_spatial``) and output dx (C channels).
    """
    adj = []
    for i, o, f, pd, s, d in zip(p.out_spatial, p.in_spatial, p.filter, p.pads, p.strides, p.dilations, strict=True):
        a = o - ((i - 1) * s - 2 * pd + d * (f - 1) + 1)
        if a < 0 or a >= max(s, d):
            return None
        adj.append(a)
    try:
        return ConvProblem(direction="fwd", dtype=p.dtype, n=p.n, c=p.k, k=p.c, in_spatial=p.out_spatial,
                           filter=p.filter, pads=p.pads, strides=p.strides, dilations=p.dilations,
                           groups=p.groups, mode="trans", trans_output_pads=tuple(adj),
                           in_layout=p.out_layout, fil_layout=p.fil_layout, out_layout=p.in_layout)
    except ProblemError:
        return None


def _b_key_warning(p: ConvProblem) -> str:
    alt = _transposed_alternative(p)
    if alt is None:
        return ("a B key may also hold a transposed convolution's forward pass (MIOpen stores "
                "both alike); read as backward data")
    from miotui.driver import DriverCommandError, to_driver_command
    try:
        cmd = to_driver_command(alt)
    except DriverCommandError:
        cmd = "-m trans -F 1"
    return ("a B key may also hold a transposed convolution's forward pass (MIOpen stores both "
            f"alike); read as backward data, the other reading is: {cmd}")


# ----------------------------------------------------------------------------- Find-Db / Perf-Db key

_SUFFIX_RE = re.compile(r"_(g|ci|cw|co)([A-Za-z0-9]+)")


def decode_db_key(key: str) -> DecodedKey:
    """A Find-Db / Perf-Db problem key (§7.1) -> one ConvProblem.

    Accepts 2-D and 3-D keys, one or three layouts, one or three type names, and the
    ``_g<G>``/``_ci<T>``/``_cw<T>``/``_co<T>`` suffixes.
    """
    text = key.strip()
    if not text:
        raise ProblemKeyError("empty problem key")
    main, us, suffix_text = text.partition("_")
    tokens = main.split("-")
    if len(tokens) < 13:
        raise ProblemKeyError(f"problem key {text!r} is too short (cut?)")
    first_x = next((i for i, t in enumerate(tokens) if "x" in t), -1)
    if first_x not in (3, 4):
        raise ProblemKeyError(f"problem key {text!r} has no filter size in the 4th or 5th field")
    ndim = first_x - 1
    # fixed part: C, spatial(nd), filter, K, spatial(nd), N, pads, strides, dils, bias
    fixed = 1 + ndim + 1 + 1 + ndim + 1 + 3 + 1
    tail = tokens[fixed:]
    if len(tail) not in (3, 5):
        raise ProblemKeyError(f"problem key {text!r}: expected <layout>-<types>-<dir> or "
                              f"<in>-<w>-<out>-<types>-<dir> after the geometry, got {'-'.join(tail)!r}")
    warnings: list[str] = []
    direction = _DIRECTIONS.get(tail[-1])
    if direction is None:
        raise ProblemKeyError(f"direction must be F, B or W, got {tail[-1]!r}")
    in_c = _int(tokens[0], "C")
    in_sp = tuple(_int(t, "input size") for t in tokens[1:1 + ndim])
    i = 1 + ndim
    filt = _dims(tokens[i], ndim, "filter")
    out_c = _int(tokens[i + 1], "K")
    out_sp = tuple(_int(t, "output size") for t in tokens[i + 2:i + 2 + ndim])
    i += 2 + ndim
    n = _int(tokens[i], "N")
    pads = _dims(tokens[i + 1], ndim, "pads")
    strides = _dims(tokens[i + 2], ndim, "strides")
    dils = _dims(tokens[i + 3], ndim, "dilations")
    i += 4
    bias = tokens[i]
    if bias not in ("0", "1"):
        raise ProblemKeyError(f"bias field must be 0 or 1, got {bias!r}")
    if bias == "1":
        warnings.append("the key marks a bias; the bias is not part of the modelled problem")
    groups = 1
    if us:
        pos = 0
        suffix = us + suffix_text
        for m in _SUFFIX_RE.finditer(suffix):
            if m.start() != pos:
                break
            pos = m.end()
            kind, value = m.group(1), m.group(2)
            if kind == "g":
                groups = _int(value, "group count")
            else:
                split_type_names(value)  # validates the type name
                tensor = {"ci": "input", "cw": "weights", "co": "output"}[kind]
                warnings.append(f"cast type {kind}{value} (casting of the {tensor} tensor) is not "
                                f"modelled; the problem runs without it")
        if pos != len(suffix):
            warnings.append(f"unknown key suffix {suffix[pos:]!r} ignored")
    dtype = _dtype_from_types(tail[-2], direction, warnings)
    layouts = _layouts(tail[:-2], direction, ndim)
    geo = _Geometry(ndim, in_c, in_sp, filt, out_c, out_sp, n, pads, strides, dils, groups)
    problem = _build(geo, direction, dtype, layouts, warnings)
    if direction == "bwd":
        warnings.append(_b_key_warning(problem))
    return DecodedKey((problem,), tuple(warnings))


# ----------------------------------------------------------------------------- network config

def decode_network_config(text: str, direction_hint: Optional[str] = None) -> DecodedKey:
    """A kernel-cache / invoker network config (§7.2) of any era -> one ConvProblem.

    ``direction_hint`` (``fwd``/``bwd``/``wrw``, e.g. from the algorithm name on the
    same line) settles the 2019 form's ``x0`` ("backward data or weights", §7.2).
    """
    s = text.strip()
    if not s:
        raise ProblemKeyError("empty network config")
    # "INT8x4" contains the separator; protect it before splitting.
    tokens = s.replace("INT8x4", "INT8X4").split("x")
    tokens = [t.replace("INT8X4", "INT8x4") for t in tokens]
    lead = 0
    while lead < len(tokens) and _INT_RE.match(tokens[lead]):
        lead += 1
    if lead == 9:
        ndim = 2
    elif lead == 12:
        ndim = 3
    else:
        raise ProblemKeyError(f"network config {s!r}: expected 9 (2-D) or 12 (3-D) sizes before "
                              f"the layout, found {lead}")
    nums = [int(t) for t in tokens[:lead]]
    rest = tokens[lead:]
    layouts_tok: list[str] = []
    while rest and (rest[0] in _LAYOUTS or rest[0] in _VECTOR_LAYOUTS):
        layouts_tok.append(rest.pop(0))
    if len(layouts_tok) not in (1, 3):
        raise ProblemKeyError(f"network config {s!r}: expected 1 or 3 layouts, got {len(layouts_tok)}")
    if not rest:
        raise ProblemKeyError(f"network config {s!r} ends before its data type (cut?)")
    types = rest.pop(0)
    warnings: list[str] = []
    if rest and rest[0][:2] in ("ci", "cw", "co"):
        casts = rest.pop(0)
        warnings.append(f"cast types {casts} are not modelled; the problem runs without them")
    tail_nums: list[int] = []
    while rest and _INT_RE.match(rest[0]):
        tail_nums.append(int(rest.pop(0)))
    per = 3 * ndim  # pads, strides, dilations
    if rest:
        direction = _DIRECTIONS.get(rest.pop(0))
        if direction is None:
            raise ProblemKeyError(f"network config {s!r}: direction must be F, B or W")
        if len(tail_nums) != per + 1:
            raise ProblemKeyError(f"network config {s!r}: expected {per + 1} numbers (pads, strides, "
                                  f"dilations, groups) before the direction, got {len(tail_nums)}")
        groups = tail_nums[-1]
        if rest:
            case = rest.pop(0)
            if case != "Default":
                warnings.append(f"alpha/beta case {case} (non-default scaling) is not modelled")
        if rest:
            raise ProblemKeyError(f"network config {s!r}: unexpected trailing {'x'.join(rest)!r}")
    else:
        if len(tail_nums) == 1:
            raise ProblemKeyError(f"network config {s!r} is the pre-2019 form, which has no padding or "
                                  f"stride: it cannot describe a layer")
        if len(tail_nums) != per + 2:
            raise ProblemKeyError(f"network config {s!r}: expected {per + 2} numbers after the data type, "
                                  f"got {len(tail_nums)} (cut?)")
        groups = tail_nums[-2]
        bit = tail_nums[-1]
        if bit == 1:
            direction = "fwd"
        elif bit == 0:
            if direction_hint in ("bwd", "wrw"):
                direction = direction_hint
            else:
                direction = "bwd"
                warnings.append("this 2019-era config ends in x0, which means backward data or "
                                "backward weights; read as backward data")
        else:
            raise ProblemKeyError(f"network config {s!r}: direction flag must be 1 or 0, got {bit}")
    if groups < 1:
        raise ProblemKeyError("group count must be positive")
    in_c = nums[0]
    in_sp = tuple(nums[1:1 + ndim])
    filt = tuple(nums[1 + ndim:1 + 2 * ndim])
    out_c = nums[1 + 2 * ndim]
    out_sp = tuple(nums[2 + 2 * ndim:2 + 3 * ndim])
    n = nums[2 + 3 * ndim]
    pads = tuple(tail_nums[0:ndim])
    strides = tuple(tail_nums[ndim:2 * ndim])
    dils = tuple(tail_nums[2 * ndim:3 * ndim])
    dtype = _dtype_from_types(types, direction, warnings)
    layouts = _layouts(layouts_tok, direction, ndim)
    geo = _Geometry(ndim, in_c, in_sp, filt, out_c, out_sp, n, pads, strides, dils, groups)
    problem = _build(geo, direction, dtype, layouts, warnings)
    if direction == "bwd":
        warnings.append(_b_key_warning(problem))
    return DecodedKey((problem,), tuple(warnings))


# ----------------------------------------------------------------------------- problem string

def decode_problem_string(text: str, log_fn: Optional[str] = "LogConvolutionExecution") -> DecodedKey:
    """``conv -n 100 -c 3 ... -F 1 -t 1`` (LogConvolutionExecution's ``Problem=``) -> problems.

    The string is MIOpenDriver arguments as the library's own command logger writes
    them, so ``log_fn`` marks it as library output: MIOpen's known logging bugs
    (transposed ``-k``) are corrected the same way as for ``Command`` lines.
    """
    from miotui.driver import DriverCommandError, parse_driver_args
    tokens = text.split()
    if not tokens:
        raise ProblemKeyError("empty problem string")
    try:
        parsed = parse_driver_args(tokens, log_fn=log_fn)
    except DriverCommandError as e:
        raise ProblemKeyError(f"problem string: {e}") from e
    problems = tuple(p for p in parsed.problems if isinstance(p, ConvProblem))
    if len(problems) != len(parsed.problems):
        raise ProblemKeyError(f"problem string {text[:40]!r} is not a convolution")
    return DecodedKey(problems, parsed.warnings)


def db_key_for(problem: ConvProblem) -> str:
    """The Find-Db key MIOpen would write for ``problem`` (the inverse of ``decode_db_key``).

    Used by tests and by anyone who wants to look a layer up in a db file.  The
    transposed forward is written as MIOpen stores it: as a B key of the normal
    convolution with x and y swapped.
    """
    p = problem
    if p.mode == "trans":
        if p.direction != "fwd":
            raise ProblemKeyError("only a transposed forward convolution has a known key form")
        # stored as backward data: dy = the transposed input, dx = its output
        first_c, first_sp, second_c, second_sp, letter = p.c, p.in_spatial, p.k, p.out_spatial, "B"
        in_l, out_l = p.in_layout, p.out_layout
    elif p.direction == "fwd":
        first_c, first_sp, second_c, second_sp, letter = p.c, p.in_spatial, p.k, p.out_spatial, "F"
        in_l, out_l = p.in_layout, p.out_layout
    else:
        first_c, first_sp, second_c, second_sp = p.k, p.out_spatial, p.c, p.in_spatial
        letter = "B" if p.direction == "bwd" else "W"
        in_l, out_l = p.out_layout, p.in_layout
    names = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "int8": "INT8", "fp64": "FP64",
             "fp8": "FP8", "bf8": "BF8"}
    if p.dtype not in names:
        raise ProblemKeyError(f"no key type name for {p.dtype}")
    x = "x".join
    parts = [str(first_c), *map(str, first_sp), x(map(str, p.filter)), str(second_c),
             *map(str, second_sp), str(p.n), x(map(str, p.pads)), x(map(str, p.strides)),
             x(map(str, p.dilations)), "0"]
    default = default_layout(p.ndim)
    if in_l == default and p.fil_layout == default and out_l == default:
        parts.append(default)
    else:
        parts += [in_l, p.fil_layout, out_l]
    parts += [names[p.dtype], letter]
    key = "-".join(parts)
    if p.groups != 1:
        key += f"_g{p.groups}"
    return key


# ----------------------------------------------------------------------------- im2col kernel key + driver stats

#: the im2col kernel's network config, as level-6 lines print it (``GetKernels ... key: miopenIm2d2Col
#: "c3i8_8w3_3p0_0s1_1d1_1t1"``: channels, input H_W, filter, pads, strides, dilations, miopenDataType_t)
_IM2COL_RE = re.compile(r'miopenIm2(?:d2)?Col "c(\d+)i(\d+)_(\d+)w(\d+)_(\d+)p(\d+)_(\d+)s(\d+)_(\d+)'
                        r'd(\d+)_(\d+)t(\d+)"')
#: miopenDataType_t values the im2col key carries
_IM2COL_TYPES = {0: "fp16", 1: "fp32", 3: "int8", 5: "bf16", 6: "fp64"}


@dataclass(frozen=True)
class Im2ColGeometry:
    """The geometry an im2col kernel key names: everything of a 2-D convolution but the
    batch and the output channels (which a driver's ``stats:`` line gives)."""

    c: int
    in_spatial: tuple[int, int]
    filter: tuple[int, int]
    pads: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    dtype: str


def read_im2col_key(message: str) -> Optional[Im2ColGeometry]:
    """The geometry of an im2col kernel key quoted in ``message``, or None."""
    m = _IM2COL_RE.search(message)
    if m is None:
        return None
    v = [int(g) for g in m.groups()]
    return Im2ColGeometry(v[0], (v[1], v[2]), (v[3], v[4]), (v[5], v[6]), (v[7], v[8]), (v[9], v[10]),
                          _IM2COL_TYPES.get(v[11], ""))


def conv_from_stats(direction: str, n: int, c: int, k: int, filter: tuple[int, ...], out_spatial: tuple[int, ...],
                    decoded: tuple[ConvProblem, ...], im2col: tuple[Im2ColGeometry, ...]
                    ) -> Optional[tuple[ConvProblem, str, bool]]:
    """The layer a MIOpenDriver ``stats:`` line ran, when its command is not in the log
    (a paste from the middle of a run): the stats line gives the direction, batch,
    channels, output channels, filter and output size; a problem key MIOpen logged just
    before names the rest.  A key decoded to a whole convolution (an invoker's network
    config, a Find-Db key) must agree on all of those; an im2col kernel key gives the input
    size, pads, strides and dilations, which must reproduce the output size.  Returns the
    problem, which key named it and whether that key was already a layer of its own (a
    decoded key is: its line counted the call), or None (the latest agreeing key wins)."""
    for p in reversed(decoded):
        if (p.ndim == len(filter) and (p.n, p.c, p.k, p.filter, p.out_spatial) == (n, c, k, filter, out_spatial)):
            return dataclasses.replace(p, direction=direction), "the problem key MIOpen logged before it", True
    for g in reversed(im2col):
        if g.c != c or g.filter != filter:
            continue
        try:
            p = ConvProblem(direction, g.dtype or "fp32", n, c, k, g.in_spatial, g.filter, g.pads, g.strides,
                            g.dilations)
        except ProblemError:
            continue
        if p.out_spatial == out_spatial:
            how = "the im2col kernel key MIOpen logged before it" + ("" if g.dtype else " (data type guessed fp32)")
            return p, how, False
    return None

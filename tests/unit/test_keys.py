"""Find-Db keys, network configs and problem strings -> ConvProblem (docs/formats.md §7.1-7.3)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from miotui.formats.miopen.keys import (
    DecodedKey,
    ProblemKeyError,
    db_key_for,
    decode_db_key,
    decode_network_config,
    decode_problem_string,
    split_type_names,
)
from miotui.problems import ConvProblem, ProblemError

# ---------------------------------------------------------------- real keys (§7.1, shipped dbs, real logs)

def test_forward_key_2d():
    d = decode_db_key("192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-F")
    (p,) = d.problems
    assert (p.direction, p.dtype, p.n, p.c, p.k) == ("fwd", "fp32", 16, 192, 32)
    assert p.in_spatial == (28, 28) and p.filter == (5, 5) and p.pads == (1, 1)
    assert p.out_spatial == (26, 26)
    assert d.warnings == ()


def test_backward_key_swaps_tensors_and_warns_about_transposed_forward():
    # §7.3, verified against the shipped db: dy 1x1x1, dx 512x4x4, filter 4x4
    d = decode_db_key("1-1-1-4x4-512-4-4-128-0x0-1x1-1x1-0-NCHW-FP32-B")
    (p,) = d.problems
    assert (p.direction, p.n, p.c, p.k, p.in_spatial, p.out_spatial) == ("bwd", 128, 512, 1, (4, 4), (1, 1))
    assert len(d.warnings) == 1 and "transposed" in d.warnings[0]
    # the other reading is spelled out as a runnable command
    assert "-m trans" in d.warnings[0] and "-c 1 -H 1 -W 1 -k 512" in d.warnings[0]


def test_weights_key_swaps_tensors_without_transposed_warning():
    d = decode_db_key("1-19-19-1x1-64-19-19-1024-0x0-1x1-1x1-0-NCHW-FP32-W")
    (p,) = d.problems
    assert (p.direction, p.n, p.c, p.k, p.in_spatial) == ("wrw", 1024, 64, 1, (19, 19))
    assert d.warnings == ()


def test_group_suffix_and_three_layouts():
    (p,) = decode_db_key("1024-111-111-3x3-1024-56-56-1-1x1-2x2-1x1-0-NCHW-FP32-F_g32").problems
    assert p.groups == 32 and p.strides == (2, 2)
    (q,) = decode_db_key("1024-14-14-1x1-2048-7-7-256-0x0-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-F").problems
    assert (q.in_layout, q.fil_layout, q.out_layout, q.dtype) == ("NHWC", "NHWC", "NHWC", "fp16")


def test_three_layout_backward_key_maps_in_and_out_layouts_to_dy_and_x():
    # in = dy (NHWC), out = dx (NCHW): x's layout is the key's *out* layout
    (p,) = decode_db_key("32-7-7-1x1-16-7-7-8-0x0-1x1-1x1-0-NHWC-NCHW-NCHW-FP32-B").problems
    assert (p.in_layout, p.fil_layout, p.out_layout) == ("NCHW", "NCHW", "NHWC")


def test_3d_key():
    (p,) = decode_db_key("1024-4-14-14-1x1x1-2048-2-7-7-4-0x0x0-2x2x2-1x1x1-0-NCDHW-FP32-F").problems
    assert p.ndim == 3 and p.in_spatial == (4, 14, 14) and p.out_spatial == (2, 7, 7)
    assert p.in_layout == "NCDHW"


def test_int8_types_and_cast_suffixes():
    d = decode_db_key("256-14-14-3x3-256-14-14-256-1x1-1x1-1x1-0-NCHW-INT8INT8INT32-F")
    assert d.problems[0].dtype == "int8" and d.warnings == ()  # MIOpen's usual int8 conv
    d = decode_db_key("64-8-8-3x3-64-8-8-2-1x1-1x1-1x1-0-NCHW-FP16FP16FP32-F")
    assert d.problems[0].dtype == "fp16" and any("types differ" in w for w in d.warnings)
    d = decode_db_key("64-8-8-3x3-64-8-8-2-1x1-1x1-1x1-0-NCHW-FP16-F_g2_ciFP8_cwBF8")
    assert d.problems[0].groups == 2
    assert sum("cast type" in w for w in d.warnings) == 2


def test_backward_key_dtype_comes_from_out_tensor():
    # B keys store in = dy; x's type is the third name
    d = decode_db_key("64-8-8-3x3-32-8-8-2-1x1-1x1-1x1-0-NCHW-FP32FP32FP16-B")
    assert d.problems[0].dtype == "fp16"


def test_split_type_names():
    assert split_type_names("FP32") == ["FP32"]
    assert split_type_names("INT8INT8INT32") == ["INT8", "INT8", "INT32"]
    assert split_type_names("INT8x4") == ["INT8x4"]
    with pytest.raises(ProblemKeyError):
        split_type_names("FP32FP16")  # two tensors: neither one nor three
    with pytest.raises(ProblemKeyError):
        split_type_names("FP33")


@pytest.mark.parametrize("key, why", [
    ("", "empty"),
    ("384-152-104-3x3-384-76", "too short"),                               # cut (real_logs/55)
    ("192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-X", "direction"),
    ("192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP99-F", "data type"),
    ("192-28-28-5x5-32-99-99-16-1x1-1x1-1x1-0-NCHW-FP32-F", "output size"),
    ("192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHWc-FP32-F", "vectorised"),
    ("192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCDHW-FP32-F", "3-D"),       # layout of the wrong rank
    ("192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-7-NCHW-FP32-F", "bias"),
    ("192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-INT32-F", "not a layer"),
    ("3-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-F_g2", "groups"),      # 2 does not divide C=3
])
def test_malformed_keys_raise_a_clear_value_error(key, why):
    with pytest.raises(ProblemKeyError) as e:
        decode_db_key(key)
    assert isinstance(e.value, ValueError)
    assert str(e.value)


# ---------------------------------------------------------------- network configs, every era (§7.2)

def test_network_config_newest_with_alpha_beta_case():
    d = decode_network_config("64x256x256x3x3x64x256x256x32xNHWCxNHWCxNHWCxBF16x1x1x1x1x1x1x1xFxDefault")
    (p,) = d.problems
    assert (p.dtype, p.n, p.c, p.k, p.in_layout, p.pads) == ("bf16", 32, 64, 64, "NHWC", (1, 1))
    assert d.warnings == ()
    d = decode_network_config("64x8x8x3x3x64x8x8x2xNCHWxFP32x1x1x1x1x1x1x1xFxBilinear")
    assert any("alpha/beta" in w for w in d.warnings)


def test_network_config_2020_and_int8():
    (p,) = decode_network_config("96x35x35x1x1x384x35x35x64xNCHWxFP32x0x0x1x1x1x1x1xB").problems
    assert (p.direction, p.c, p.k, p.n) == ("bwd", 384, 96, 64)
    (q,) = decode_network_config("256x14x14x3x3x256x14x14x256xNCHWxINT8INT8INT32x1x1x1x1x1x1x1xF").problems
    assert q.dtype == "int8" and q.k == 256


def test_network_config_2019_direction_bit():
    # §7.2: x1 = forward; x0 = backward data or weights
    (p,) = decode_network_config("32x32x32x3x3x32x30x30x100xNCHWxFP32x0x0x1x1x1x1x1x1").problems
    assert (p.direction, p.n, p.c, p.k, p.in_spatial) == ("fwd", 100, 32, 32, (32, 32))
    d = decode_network_config("32x30x30x3x3x32x32x32x100xNCHWxFP32x0x0x1x1x1x1x1x0")
    assert d.problems[0].direction == "bwd" and any("x0" in w for w in d.warnings)
    d = decode_network_config("32x30x30x3x3x32x32x32x100xNCHWxFP32x0x0x1x1x1x1x1x0", direction_hint="wrw")
    assert d.problems[0].direction == "wrw" and not any("x0" in w for w in d.warnings)


def test_network_config_casts_and_int8x4():
    d = decode_network_config("64x8x8x3x3x64x8x8x2xNCHWxFP16xciFP8cwFP8x1x1x1x1x1x1x1xFxDefault")
    assert d.problems[0].dtype == "fp16" and any("cast" in w for w in d.warnings)
    d = decode_network_config("64x8x8x3x3x64x8x8x2xNCHWxINT8x4x1x1x1x1x1x1x1xF")
    assert d.problems[0].dtype == "int8" and any("INT8x4" in w for w in d.warnings)


@pytest.mark.parametrize("text", [
    "32x32x32x3x3x32x30x30x100xNCHWxFP32x1",            # pre-2019: no padding or stride
    "32x32x32x3x3x32x30x30x100xNCHWxFP32x0x0x1",         # cut
    "32x32x32x3x3x32x30x30xNCHWxFP32x0x0x1x1x1x1x1xF",   # N missing
    "64x256x256x3x3x64x256x256x32xNHWCxNHWCxFP32x1x1x1x1x1x1x1xF",  # two layouts
    "64x8x8x3x3x64x8x8x2xNCHWxFP32x1x1x1x1x1x1x1xQ",
    "c3i8_8w3_3p0_0s1_1d1_1t1",                          # an im2col kernel key, not a config
])
def test_malformed_network_configs(text):
    with pytest.raises(ProblemKeyError):
        decode_network_config(text)


# ---------------------------------------------------------------- problem strings (LogConvolutionExecution)

def test_problem_string():
    d = decode_problem_string("conv -n 100 -c 32 -H 30 -W 30 -k 32 -y 3 -x 3 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 "
                              "-m conv -g 1 -F 4 -t 1")
    (p,) = d.problems
    assert (p.direction, p.n, p.c, p.in_spatial) == ("wrw", 100, 32, (30, 30))
    with pytest.raises(ProblemKeyError):
        decode_problem_string("conv -n 100 -c")          # cut
    with pytest.raises(ProblemKeyError):
        decode_problem_string("bnorm -n 1 -c 2 -H 3 -W 3 -m 1 --forw 1 -b 0")  # not a convolution
    with pytest.raises(ProblemKeyError):
        decode_problem_string("")


# ---------------------------------------------------------------- round trips (property tests)

small = st.integers(1, 6)


@st.composite
def conv_problems(draw, transposed: bool = False):
    nd = draw(st.sampled_from([2, 3]))
    g = draw(st.sampled_from([1, 1, 2, 3]))
    c, k = g * draw(small), g * draw(small)
    filt = tuple(draw(st.integers(1, 4)) for _ in range(nd))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(nd))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dils = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    spatial = tuple(draw(st.integers(1, 20)) for _ in range(nd))
    layouts = ("NCHW", "NHWC") if nd == 2 else ("NCDHW", "NDHWC")
    lay = [draw(st.sampled_from(layouts)) for _ in range(3)]
    direction = "fwd" if transposed else draw(st.sampled_from(["fwd", "bwd", "wrw"]))
    try:
        p = ConvProblem(direction=direction, dtype=draw(st.sampled_from(["fp32", "fp16", "bf16", "int8"])),
                        n=draw(small), c=c, k=k, in_spatial=spatial, filter=filt, pads=pads, strides=strides,
                        dilations=dils, groups=g, mode="trans" if transposed else "conv",
                        in_layout=lay[0], fil_layout=lay[1], out_layout=lay[2])
    except ProblemError:
        assume(False)
    # a key holds the output size, which MIOpen's clamp to 1 makes ambiguous: not round-trippable
    assume(not p.output_clamped)
    return p


@settings(max_examples=150, deadline=None)
@given(conv_problems())
def test_db_key_round_trip(p):
    key = db_key_for(p)
    d = decode_db_key(key)
    assert isinstance(d, DecodedKey)
    assert d.problems == (p,)
    assert any("transposed" in w for w in d.warnings) == (p.direction == "bwd")


@settings(max_examples=60, deadline=None)
@given(conv_problems(transposed=True))
def test_transposed_forward_key_reads_as_backward_data_and_names_the_other_reading(p):
    assume(p.fil_layout == p.in_layout == p.out_layout)
    assume(all(a < s for a, s in zip(p.trans_output_pads, p.strides, strict=True)))
    d = decode_db_key(db_key_for(p))
    (q,) = d.problems
    # same arithmetic: MIOpen runs a transposed forward as this backward-data problem
    assert q.direction == "bwd" and q.c == p.k and q.k == p.c and q.in_spatial == p.out_spatial
    assert q.out_spatial == p.in_spatial
    assert any("transposed" in w for w in d.warnings)


def _config_for(p: ConvProblem, era: str) -> str:
    """The network config MIOpen of ``era`` would print (written from §7.2, independently of keys.py)."""
    if p.direction == "fwd":
        first, second = (p.c,) + p.in_spatial, (p.k,) + p.out_spatial
        layouts = (p.in_layout, p.fil_layout, p.out_layout)
    else:
        first, second = (p.k,) + p.out_spatial, (p.c,) + p.in_spatial
        layouts = (p.out_layout, p.fil_layout, p.in_layout)
    names = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "int8": "INT8"}
    parts = [first[0], *first[1:], *p.filter, second[0], *second[1:], p.n]
    lay = [layouts[0]] if len(set(layouts)) == 1 and layouts[0] in ("NCHW", "NCDHW") else list(layouts)
    if era == "2019":
        lay = [layouts[0]]
    parts += lay + [names[p.dtype], *p.pads, *p.strides, *p.dilations, p.groups]
    if era == "2019":
        parts.append(1 if p.direction == "fwd" else 0)
    else:
        parts.append({"fwd": "F", "bwd": "B", "wrw": "W"}[p.direction])
        if era == "newest":
            parts.append("Default")
    return "x".join(map(str, parts))


@settings(max_examples=150, deadline=None)
@given(conv_problems(), st.sampled_from(["2020", "newest", "2019"]))
def test_network_config_round_trip(p, era):
    if era == "2019":
        assume(p.in_layout == p.fil_layout == p.out_layout)
    hint = p.direction if era == "2019" else None
    d = decode_network_config(_config_for(p, era), direction_hint=hint)
    assert d.problems == (p,)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789x-_NCHWDFBPI", max_size=80))
def test_garbage_never_raises_anything_but_problem_key_error(text):
    for fn in (decode_db_key, decode_network_config):
        try:
            fn(text)
        except ProblemKeyError:
            pass

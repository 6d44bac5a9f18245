"""The layer model: output shapes, FLOPs, validation messages, keys."""

from __future__ import annotations

import pytest
import torch

from miotui.problems import ActivationProblem, BatchNormProblem, ConvProblem, FusionProblem, PoolProblem, ProblemError


def conv(**kw):
    base = dict(direction="fwd", dtype="fp32", n=2, c=4, k=6, in_spatial=(9, 11), filter=(3, 2),
                pads=(1, 0), strides=(2, 1), dilations=(1, 2))
    base.update(kw)
    return ConvProblem(**base)


@pytest.mark.parametrize("kw", [
    {}, {"groups": 2}, {"in_spatial": (5, 6, 7), "filter": (3, 3, 3), "pads": (1, 1, 1),
                        "strides": (2, 2, 1), "dilations": (1, 1, 2)},
    {"mode": "trans", "trans_output_pads": (1, 0)}, {"mode": "trans", "groups": 2},
])
def test_output_shape_matches_torch(kw):
    p = conv(**kw)
    nd = p.ndim
    x = torch.zeros(p.input_shape)
    w = torch.zeros(p.weight_shape)
    if p.mode == "trans":
        fn = torch.nn.functional.conv_transpose2d if nd == 2 else torch.nn.functional.conv_transpose3d
        y = fn(x, w, stride=p.strides, padding=p.pads, dilation=p.dilations, groups=p.groups,
               output_padding=p.trans_output_pads)
    else:
        fn = torch.nn.functional.conv2d if nd == 2 else torch.nn.functional.conv3d
        y = fn(x, w, stride=p.strides, padding=p.pads, dilation=p.dilations, groups=p.groups)
    assert tuple(y.shape) == p.output_shape


def test_flops_formula():
    p = ConvProblem("wrw", "fp16", 8, 64, 128, (56, 56), (3, 3), (1, 1), (1, 1), (1, 1), groups=2)
    assert p.flops == 2 * 8 * 128 * 56 * 56 * 32 * 9
    assert p.bytes_moved == (8 * 64 * 56 * 56 + 128 * 32 * 9 + 8 * 128 * 56 * 56) * 2


def test_same_and_valid_padding():
    assert conv(pad_mode="same", strides=(2, 2)).out_spatial == (5, 6)
    assert conv(pad_mode="valid", strides=(1, 1), dilations=(1, 1)).out_spatial == (7, 10)


@pytest.mark.parametrize("kw, message", [
    ({"c": 0}, "c must be a positive integer"),
    ({"groups": 3}, "groups (3) must divide input channels"),
    ({"c": 6, "groups": 3, "k": 4}, "must divide output channels"),
    ({"in_spatial": (2, 2), "filter": (5, 5), "pads": (0, 0), "pad_mode": "valid"}, "at least as large as its filter"),
    ({"direction": "sideways"}, "direction must be one of"),
    ({"dtype": "fp128"}, "dtype must be one of"),
    ({"trans_output_pads": (1, 0)}, "output padding only applies"),
    ({"in_layout": "NCDHW"}, "in_layout must be one of"),
    ({"filter": (3,)}, "filter must have 2 values"),
])
def test_invalid_values_rejected_with_a_message(kw, message):
    with pytest.raises(ProblemError, match=message.replace("(", r"\(").replace(")", r"\)")):
        conv(**kw)


def test_output_sizes_are_clamped_to_one_as_miopen_does():
    """MIOpen's GetForwardOutputTensor / GetForwardOutputDim never give a size below 1 (for
    transposed convolutions too), so such a layer is a real layer, not an error."""
    assert conv(in_spatial=(2, 2), filter=(5, 5), pads=(0, 0)).out_spatial == (1, 1)
    assert conv(mode="trans", in_spatial=(1, 1), filter=(1, 1), pads=(3, 3), strides=(1, 1)).out_spatial == (1, 1)
    assert PoolProblem("fwd", "fp32", 1, 1, (2, 2), (5, 5), (0, 0), (1, 1)).out_spatial == (1, 1)


def test_other_ops_validate():
    with pytest.raises(ProblemError, match="activation mode"):
        ActivationProblem("fwd", "fp32", 1, 1, (2, 2), mode=11)
    with pytest.raises(ProblemError, match="bnorm direction"):
        BatchNormProblem("fwd", "fp32", 1, 1, (2, 2))
    assert PoolProblem("fwd", "fp32", 1, 3, (7, 7), (3, 3), (1, 1), (2, 2)).output_shape == (1, 3, 4, 4)
    f = FusionProblem(4, "fp32", 1, 3, (8, 8), k=4, filter=(3, 3), pads=(1, 1), strides=(1, 1), dilations=(1, 1))
    assert f.output_shape == (1, 4, 8, 8) and f.bn_mode == "none"


def test_key_and_dict_are_complete_and_distinct():
    a, b = conv(), conv(dtype="fp16")
    assert a.key != b.key and a != b
    d = a.to_dict()
    assert d["in_spatial"] == [9, 11] and d["in_layout"] == "NCHW" and d["groups"] == 1
    assert conv() == conv() and conv().key == conv().key


def test_rnn_seq_flops_count_the_samples_real_lengths():
    from miotui.problems import RNNProblem
    base = dict(direction="fwd", dtype="fp32", mode="lstm", batch=(4,), seq_len=10, in_size=8, hidden=16, layers=1)
    padded = RNNProblem(**base)
    short = RNNProblem(**base, api="rnn_seq", seq_lens=(10, 5, 5, 2))
    assert padded.rows == 40 and short.rows == 22
    assert short.flops * 40 == padded.flops * 22


# ---------------------------------------------------------------- the quick check of the usual convolution

_ODD_NUMBERS = [0, -1, 1, 3, 5, 2**31, True, 1.0, None, "1"]
_ODD_PAIRS = [(3,), [3, 3], (1, 1, 1), (), (0, 0), (1, 0), (0, 1), (0, False), (True, 1), (2**31, 1), (3, -1), (1.0, 1)]
#: per field, values of the wrong kind or range (or right only with other values): each must be
#: refused, or pass only when the full checks pass it
_ODD_VALUES = {"direction": ["x", "fwd_train", ""], "dtype": ["nope", "int8", ""], "n": _ODD_NUMBERS,
               "c": _ODD_NUMBERS, "k": _ODD_NUMBERS, "groups": _ODD_NUMBERS, "in_spatial": _ODD_PAIRS,
               "filter": _ODD_PAIRS, "pads": _ODD_PAIRS, "strides": _ODD_PAIRS, "dilations": _ODD_PAIRS,
               "trans_output_pads": _ODD_PAIRS, "mode": ["trans", "x", ""], "pad_mode": ["same", "valid", "x"],
               "in_layout": ["NCDHW", "", "x"], "fil_layout": ["NCDHW", "", "NHWC"], "out_layout": ["NCDHW", "", "x"]}


def test_the_quick_check_never_passes_what_the_full_checks_refuse():
    """``plainly_valid_2d`` lets the usual 2-D convolution skip ``validate``: whatever it passes,
    ``validate`` passes too (and every value the full checks refuse is still refused)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @st.composite
    def problems(draw):
        g = draw(st.sampled_from([1, 1, 2, 4]))
        ints = st.integers
        kw = dict(direction=draw(st.sampled_from(["fwd", "bwd", "wrw"])), dtype=draw(st.sampled_from(["fp32", "fp16"])),
                  n=draw(ints(1, 64)), c=g * draw(ints(1, 8)), k=g * draw(ints(1, 8)),
                  in_spatial=(draw(ints(1, 64)), draw(ints(1, 64))), filter=(draw(ints(1, 7)), draw(ints(1, 7))),
                  pads=(draw(ints(0, 3)), draw(ints(0, 3))), strides=(draw(ints(1, 3)), draw(ints(1, 3))),
                  dilations=(draw(ints(1, 3)), draw(ints(1, 3))), groups=g, mode="conv", trans_output_pads=(0, 0),
                  pad_mode="default", in_layout=draw(st.sampled_from(["NCHW", "NHWC"])), fil_layout="NCHW",
                  out_layout=draw(st.sampled_from(["NCHW", "NHWC"])))
        for _ in range(draw(ints(0, 2))):   # break up to two fields
            name = draw(st.sampled_from(sorted(kw)))
            kw[name] = draw(st.sampled_from(_ODD_VALUES[name]))
        return kw

    quick = []

    @settings(max_examples=2500, deadline=None)
    @given(problems())
    def check(kw):
        try:
            p = ConvProblem(**kw)
        except ProblemError:
            return
        if p.plainly_valid_2d():
            quick.append(p)
            p.validate()   # must not raise

    check()
    assert len(quick) > 100   # the property above was exercised


def test_a_problem_from_another_process_hashes_and_compares_as_ours():
    """A decode worker pickles its problems after hashing them; string hashes differ between
    processes, so a hash cached there must not come along (it would file an equal problem
    apart from ours and, with the quick equality, make equal problems unequal)."""
    import os
    import pickle
    import subprocess
    import sys
    code = ("import pickle, sys\n"
            "from miotui.problems import ConvProblem\n"
            "p = ConvProblem('fwd', 'fp32', 2, 3, 4, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1))\n"
            "hash(p)\n"
            "sys.stdout.buffer.write(pickle.dumps(p))\n")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    theirs = pickle.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, env=env,
                                         check=True).stdout)
    ours = ConvProblem("fwd", "fp32", 2, 3, 4, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1))
    assert hash(theirs) == hash(ours) and theirs == ours and {ours: 1}[theirs] == 1

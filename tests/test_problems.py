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

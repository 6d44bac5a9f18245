"""The bundled ResNet-50 samples, every format, decode through the whole pipeline to the
generator's ground truth: the same executions and finds per operation and direction."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from miotui.decoding.whole import decode_paths
from miotui.samplegen import FORMATS, SampleSpec, ground_truth

SAMPLES = Path(__file__).parents[2] / "sample_logs"


@pytest.mark.parametrize("fmt", FORMATS)
def test_sample_decodes_to_ground_truth(fmt):
    catalog = decode_paths([str(SAMPLES / f"resnet50_{fmt}.log")])
    truth = ground_truth(SampleSpec(format=fmt))
    got_exec, got_find = Counter(), Counter()
    for layer in catalog.layers():
        got_exec[(layer.problem.op, layer.problem.direction)] += layer.executions
        got_find[(layer.problem.op, layer.problem.direction)] += layer.finds
    want_exec, want_find = Counter(), Counter()
    for op, n in truth.executions.items():
        want_exec[(op.op, op.direction)] += n
    for op, n in truth.finds.items():
        want_find[(op.op, op.direction)] += n
    assert +got_exec == +want_exec
    if fmt != "command" and fmt != "info":
        assert +got_find == +want_find
    # (MIOpen 1.7's bare "bnorm" Command line after each BN-backward API block is that call)
    assert catalog.undecoded_count == 0, catalog.undecoded()[:3]
    conv_layers = {(ln.problem.direction, ln.problem.key) for ln in catalog.layers() if ln.problem.op == "conv"}
    want_conv = {op for op in set(truth.executions) | set(truth.finds) if op.op == "conv"}
    assert len(conv_layers) == len(want_conv)

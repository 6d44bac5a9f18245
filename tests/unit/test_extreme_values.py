"""Every quantity miotui computes from logged numbers is closed-form or bounded (issue 27:
``rnn -l 2147483647`` looped once per layer in ``flops`` and ``weight_count``, 35 minutes a
call; issue 26: the memory guard built a list of every sample's length before it answered).

Each problem family is built at the 32-bit extremes MIOpen accepts (every count and length
2**31 - 1 where the family allows it), and every derived value is taken: each property of the
problem, its key and JSON fields, its driver command, and the memory guard's estimate for
each in-process backend.  An interval timer cuts a runaway so the test fails in seconds
instead of hanging; the bound is generous (the bug is minutes, the values microseconds).
"""

from __future__ import annotations

import inspect
import signal
import time

import pytest

from miotui.problems import (
    PROBLEM_TYPES,
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    FusionProblem,
    GroupNormProblem,
    LayerNormProblem,
    LRNProblem,
    OpProblem,
    PoolProblem,
    ProblemError,
    ReduceProblem,
    RNNProblem,
    SoftmaxProblem,
)

BIG = 2**31 - 1
#: the most any family's derived values may take, all of them together (they take microseconds)
BOUND_SECONDS = 1.0

EXTREMES = {
    "conv": ConvProblem("fwd", "fp32", BIG, BIG, BIG, (BIG, BIG), (1, 1), (0, 0), (1, 1), (1, 1)),
    "conv3d-wrw": ConvProblem("wrw", "fp16", BIG, BIG, BIG, (BIG, BIG, BIG), (BIG, 1, 1), (0, 0, 0), (BIG, 1, 1),
                              (1, 1, 1)),
    "pool": PoolProblem("fwd", "fp32", BIG, BIG, (BIG, BIG), (BIG, BIG), (0, 0), (BIG, BIG)),
    "bnorm": BatchNormProblem("fwd_train", "fp32", BIG, BIG, (BIG, BIG), mode="per_activation"),
    "activ": ActivationProblem("fwd", "fp32", BIG, BIG, (BIG, BIG)),
    "lrn": LRNProblem("fwd", "fp32", BIG, BIG, (BIG, BIG)),
    "softmax": SoftmaxProblem("fwd", "fp32", BIG, BIG, (BIG, BIG)),
    "fusion": FusionProblem(fusion_mode=0, dtype="fp32", n=BIG, c=BIG, in_spatial=(BIG, BIG), k=BIG, filter=(1, 1),
                            pads=(0, 0), strides=(1, 1), dilations=(1, 1)),
    "rnn": RNNProblem("fwd", "fp32", "lstm", (BIG,), BIG, BIG, BIG, layers=BIG, bidirectional=True),
    "rnn-steps": RNNProblem("wrw", "fp32", "gru", (BIG, 1), 2, BIG, BIG, layers=BIG),
    "rnn_seq": RNNProblem("bwd", "fp32", "lstm", (BIG,), BIG, BIG, BIG, layers=BIG, api="rnn_seq",
                          seq_lens=(BIG, 1), io_layout=1),
    "layernorm": LayerNormProblem("fwd", "fp32", (BIG, BIG, BIG), normalized_dim=1),
    "groupnorm": GroupNormProblem("fwd", "fp32", (BIG, BIG, BIG), num_groups=1),
    "reduce": ReduceProblem("fwd", "fp32", (BIG, BIG, BIG, BIG), (1, 2)),
    "ctc": OpProblem("ctc", "fwd", "fp32", (("probs", (BIG, BIG, BIG)),),
                     (("a", "0"), ("b", "0"), ("c", str(BIG - 1)), ("m", "1"), ("n", str(BIG)), ("k", str(BIG)),
                      ("l", str(BIG)))),
    "gemm": OpProblem("gemm", "fwd", "fp32", (("a", (BIG, BIG)), ("b", (BIG, BIG)), ("c", (BIG, BIG))),
                      (("m", str(BIG)), ("n", str(BIG)), ("k", str(BIG)), ("b", "1"))),
    "cat": OpProblem("cat", "fwd", "fp32", tuple((f"input{i}", (BIG,) * 8) for i in range(1, 9)), (("d", "0"),)),
}


def test_every_problem_family_has_an_extreme():
    assert {type(p) for p in EXTREMES.values()} == set(PROBLEM_TYPES)


class _Cut(Exception):
    pass


def _cut(signum, frame):  # noqa: ARG001
    raise _Cut(f"derived values still running after {10 * BOUND_SECONDS:.0f} s")


def _derived(problem) -> list[str]:
    """Take every derived value; return the names of those that raised anything but a
    ProblemError (a refusal is fine: the value says why)."""
    from miotui.driver.commands import to_driver_argv
    from miotui.driver.flags import DriverCommandError
    from miotui.execute import guard
    from miotui.execute.backends import get_backend
    names = [n for n, v in inspect.getmembers(type(problem)) if isinstance(v, property)]
    for name in names:
        getattr(problem, name)
    problem.key  # noqa: B018
    problem.to_dict()
    hash(problem)
    try:
        to_driver_argv(problem)
    except DriverCommandError:
        pass
    for backend in ("numpy", "numba", "torch"):
        try:
            check = guard.check_memory(problem, get_backend(backend), available=64 << 30)
            assert not check.ok, (backend, check)    # nothing of 2**31 on every axis fits in 64 GiB
        except ProblemError:
            pass
    return names


@pytest.mark.parametrize("name", sorted(EXTREMES))
def test_derived_values_at_32_bit_extremes_are_immediate(name):
    problem = EXTREMES[name]
    old = signal.signal(signal.SIGALRM, _cut)
    signal.setitimer(signal.ITIMER_REAL, 10 * BOUND_SECONDS)
    try:
        start = time.perf_counter()
        _derived(problem)
        seconds = time.perf_counter() - start
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert seconds < BOUND_SECONDS, f"{name}: {seconds:.2f} s"


@pytest.mark.parametrize("layers", [1, 2, 5])
@pytest.mark.parametrize("kw", [dict(mode="lstm"), dict(mode="gru", bidirectional=True),
                                dict(mode="relu", bias=False, input_mode="skip", in_size=16),
                                dict(mode="tanh", batch=(4, 3, 1), seq_len=3)])
def test_rnn_closed_forms_equal_the_per_layer_sums(layers, kw):
    """The closed forms count what the per-layer loop they replaced counted."""
    base = dict(direction="fwd", dtype="fp32", mode="lstm", batch=(4,), seq_len=7, in_size=10, hidden=16)
    base.update(kw)
    p = RNNProblem(layers=layers, **base)
    weights = flops = 0
    for layer in range(layers):
        width = p.layer_in(layer)
        per_dir = p.gates * p.hidden * (width + p.hidden) + (2 * p.gates * p.hidden if p.bias else 0)
        weights += per_dir * p.directions
        flops += 2 * p.rows * p.gates * p.hidden * (width + p.hidden) * p.directions
    assert (p.weight_count, p.flops) == (weights, flops)


@pytest.mark.parametrize("kw", [dict(batch=(4,), seq_len=7), dict(batch=(4, 3, 3, 1), seq_len=4),
                                dict(batch=(5,), seq_len=6, api="rnn_seq", seq_lens=(6, 2)),
                                dict(batch=(3,), seq_len=6, api="rnn_seq", seq_lens=(6, 5, 4, 2)),
                                dict(batch=(3,), seq_len=6, api="rnn_seq")])
def test_rnn_rows_closed_form_equals_the_per_sample_sum(kw):
    """The guard's closed form and the problem's row count are the sum of the per-sample
    lengths the reference builds (a -K list shorter than the batch repeats its last length)."""
    from miotui.execute.layer_shapes import rnn_rows, rnn_sample_lengths
    p = RNNProblem("fwd", "fp32", "gru", in_size=8, hidden=8, **kw)
    assert rnn_rows(p) == sum(rnn_sample_lengths(p)) == p.rows

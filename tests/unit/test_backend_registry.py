"""The backend registry: every backend answers the same questions (label, device, memory
estimate, why not) for every problem family, a name finds its backend in one place, and
the memory guard asks the backend instead of switching on its name."""

from __future__ import annotations

import pytest
from problem_values import make_conv

from miotui.execute import guard
from miotui.execute.backends import (
    BACKENDS,
    InProcessBackend,
    MemoryEstimate,
    NumpyBackend,
    RunSettings,
    UnknownBackend,
    all_backends,
    available_backends,
    get_backend,
)
from miotui.problems import (
    PROBLEM_TYPES,
    ActivationProblem,
    BatchNormProblem,
    FusionProblem,
    GroupNormProblem,
    LayerNormProblem,
    LRNProblem,
    OpProblem,
    PoolProblem,
    ReduceProblem,
    RNNProblem,
    SoftmaxProblem,
)

GiB = 1 << 30

#: one small layer of each problem family
ONE_PER_FAMILY = {
    "conv": make_conv(),
    "pool": PoolProblem("fwd", "fp32", 2, 3, (9, 8), (3, 2), (1, 0), (2, 2), mode="max"),
    "bnorm": BatchNormProblem("fwd_train", "fp32", 2, 3, (8, 8)),
    "activ": ActivationProblem("fwd", "fp32", 2, 3, (5, 6), mode=3),
    "lrn": LRNProblem("fwd", "fp32", 2, 6, (5, 5), mode="cross", lrn_n=5),
    "softmax": SoftmaxProblem("fwd", "fp32", 2, 5, (3, 4)),
    "fusion": FusionProblem(1, "fp32", 2, 4, (7, 6), k=6, filter=(3, 3), pads=(1, 1), strides=(1, 1),
                            dilations=(1, 1)),
    "rnn": RNNProblem("fwd", "fp32", "lstm", (2,), 3, 8, 8),
    "layernorm": LayerNormProblem("fwd", "fp32", (4, 8, 16), 1),
    "groupnorm": GroupNormProblem("fwd", "fp32", (2, 8, 5, 5), 4),
    "reduce": ReduceProblem("fwd", "fp32", (4, 3, 5, 6), (0, 1), 1),
    "op": OpProblem("cat", "fwd", "fp32", (("input1", (2, 3)), ("input2", (2, 3))), (("d", "0"),)),
}


def test_every_problem_family_has_an_example():
    assert {type(p) for p in ONE_PER_FAMILY.values()} == set(PROBLEM_TYPES)


def test_the_registry_lists_every_backend_once_in_table_order():
    from miotui.export import RUN_BACKENDS  # named there too, so that an export stays light
    assert BACKENDS == ("numpy", "numba", "torch", "miopen-driver") == RUN_BACKENDS
    assert tuple(b.name for b in all_backends()) == BACKENDS
    assert all(get_backend(name).name == name for name in BACKENDS)
    assert set(available_backends()) == set(BACKENDS)


@pytest.mark.parametrize("backend", all_backends(), ids=lambda b: b.name)
@pytest.mark.parametrize("problem", ONE_PER_FAMILY.values(), ids=list(ONE_PER_FAMILY))
def test_every_backend_answers_every_question_for_every_family(backend, problem):
    settings = RunSettings(backend=backend.name)
    assert isinstance(backend.label, str) and backend.label.strip()
    assert isinstance(backend.device, str) and backend.device.strip()
    why = backend.why_not(problem, settings)
    assert why is None or (isinstance(why, str) and why.strip()), why
    # the guard's question (what the runner and the app ask), for every layer
    assert guard.estimate_bytes(problem, backend) >= 0
    if backend.in_process and guard.not_modelled(problem):
        return   # no in-process backend computes it: the guard answers from its tensors alone (above)
    estimate = backend.memory_estimate(problem, settings)
    assert isinstance(estimate, MemoryEstimate)
    assert isinstance(estimate.host, int) and isinstance(estimate.device, int)
    assert estimate.host >= 0 and estimate.device >= 0
    if backend.in_process:
        assert estimate.host + estimate.device > 0   # it holds at least its inputs and outputs


def test_an_unknown_backend_name_says_which_ones_exist():
    """Before: get_backend named only the in-process backends, and the guard raised its own
    ValueError for a name it did not switch on."""
    with pytest.raises(UnknownBackend) as err:
        get_backend("cudnn")
    assert isinstance(err.value, KeyError)   # callers that caught get_backend's KeyError still do
    assert str(err.value) == "unknown backend 'cudnn': miotui's backends are numpy, numba, torch, miopen-driver"


def test_the_driver_is_a_backend_like_the_others():
    """Before: get_backend("miopen-driver") raised KeyError (only in-process backends had objects)."""
    driver = get_backend("miopen-driver")
    assert not driver.in_process and driver.device == "child process"
    assert driver.memory_estimate(make_conv(), RunSettings()) == MemoryEstimate(0, 0)
    missing = RunSettings(driver_path="/nonexistent/MIOpenDriver")
    assert "does not exist" in driver.why_not(make_conv(), missing)


class _WideBackend(InProcessBackend):
    """A backend the guard has never heard of: 1 GiB of host memory per image, and 2 GiB of
    device memory per image on a device with 4 GiB free."""

    name = "wide"
    label = "a backend added after the guard was written"

    @property
    def device(self) -> str:
        return "accelerator"

    def memory_estimate(self, problem, settings, device=None):
        return MemoryEstimate(problem.n * GiB, 2 * problem.n * GiB)

    def free_device_bytes(self):
        return 4 * GiB


def test_the_guard_asks_a_backend_it_does_not_know_for_its_estimate():
    """Before: estimate_bytes raised ValueError("unknown backend ...") for any name but
    numpy, numba, torch and miopen-driver."""
    wide, problem = _WideBackend(), make_conv(n=8)
    assert guard.estimate_bytes(problem, wide, verify=False) == 8 * GiB
    with_reference = guard.reference_bytes(problem, "fp64")
    assert guard.estimate_bytes(problem, wide) >= 8 * GiB + with_reference   # verified here in float64


def test_the_guard_checks_a_backends_device_memory_from_its_estimate():
    """Before: only torch on a GPU had its device memory checked."""
    check = guard.check_memory(make_conv(n=8), _WideBackend(), verify=False, available=1 << 50)
    assert not check.ok and check.where == "device"
    budget = guard.budget_for(4 * GiB)
    assert check.suggested_batch == budget // (2 * GiB)
    assert check.message.startswith("not run: wide would need about 16.0 GiB")
    assert "GPU memory" in check.message


def test_a_backend_on_the_host_has_no_device_check():
    check = guard.check_memory(make_conv(), NumpyBackend(), available=1 << 50)
    assert check.ok and check.where == "host"

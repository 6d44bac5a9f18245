"""Checks made before a layer runs: is it runnable, and will it fit in memory?

A log can name a layer far larger than the machine reading it (batch 256 of a 3-D
segmentation network, say), and numpy allocates without asking: an out-of-memory kill
would take the whole app with it.  So before anything is allocated the runner asks
:func:`check_memory`, which adds up what the run will hold at its peak (the backend's
run, the float64 verification reference, the tensors compared) from the shapes alone,
compares it with what the process can still allocate (the machine's free memory, or
less when a cgroup limit binds: :mod:`miotui.execute.host_memory`), less headroom for
everything else, and, when it does not fit, says so and suggests the
largest batch that would: the same layer with fewer images is usually what a user
wants to look at anyway (``--batch N``).

Nothing here imports numpy or torch at module level; estimates are arithmetic on the
problem's shapes (the reference's :func:`peak_bytes` replays its chunk plan without
allocating).
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Callable, Optional

from miotui.execute.host_memory import cgroup_memory
from miotui.execute.layer_shapes import elems, layer_shapes, rnn_saved_elems
from miotui.execute.protocol import Backend, RunSettings
from miotui.families import UnknownFamily, family_of
from miotui.problems import (
    DTYPE_BYTES,
    BatchNormProblem,
    ConvProblem,
    FusionProblem,
    GroupNormProblem,
    LayerNormProblem,
    OpProblem,
    Problem,
    ProblemError,
    ReduceProblem,
    RNNProblem,
)
from miotui.problems.limits import check_listed

#: Fraction of the available memory a run may plan to use; the rest is left to the
#: app, the OS page cache and estimation error.
HEADROOM_FRACTION = 0.75
#: Bytes always left free on top of the fraction.
RESERVE_BYTES = 256 << 20


@dataclass(frozen=True)
class MemoryCheck:
    """The guard's answer.  ``ok`` False means do not run; ``message`` says why and
    what to do; ``suggested_batch`` is the largest N that fits (0: not even one image)."""

    ok: bool
    needed_bytes: int
    available_bytes: int
    budget_bytes: int
    message: str = ""
    suggested_batch: Optional[int] = None
    where: str = "host"


def fmt_bytes(n: float) -> str:
    """Human-readable size (binary units, as `free -h` prints)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def with_batch(problem: Problem, n: int) -> Problem:
    """The same layer with ``n`` images (samples, rows of the first dimension): the family's
    ``with_batch`` entry.

    Most kinds have a batch field ``n`` (:func:`batch_field`); layer / group norm and
    reductions take the first dimension of their shape (:func:`batch_first_dim`); an RNN
    scales its per-step batch sizes (:func:`rnn_with_batch`).  An op miotui does not model
    (``OpProblem``) has no batch it knows of.  Raises ProblemError for a non-positive batch
    (the problem re-validates itself).
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ProblemError(f"batch must be a positive integer, got {n!r}")
    return family_of(problem).with_batch(problem, n)


def batch_field(problem: Problem, n: int) -> Problem:
    return dataclasses.replace(problem, n=n)  # type: ignore[type-var]


def batch_first_dim(problem: LayerNormProblem | GroupNormProblem | ReduceProblem, n: int) -> Problem:
    return dataclasses.replace(problem, shape=(n,) + problem.shape[1:])


def op_with_batch(problem: OpProblem, n: int) -> Problem:
    raise ProblemError(f"miotui does not know which dimension of {problem.name}'s tensors is a batch")


def rnn_with_batch(p: RNNProblem, n: int) -> RNNProblem:
    """The RNN with ``n`` samples: every per-step batch size scaled by n / N (rounded, at
    least 1, so the sizes stay non-increasing and the first is n); per-sample sequence
    lengths (``rnn_seq``) resampled in order, so the mix of lengths is kept.  The batch
    may be any C int (the guard's search for the largest that fits asks for up to 2**31 - 1),
    so one length for every sample stays one value, and differing lengths are listed only up
    to ``MAX_LISTED`` samples (past it: ProblemError, which the search reads as "does not
    fit")."""
    n0 = p.batch[0]
    batch = tuple(max(1, (b * n + n0 // 2) // n0) for b in p.batch)
    lens = p.seq_lens
    if len(set(lens)) == 1:
        lens = lens[:1]   # the last length stands for every sample after it
    elif lens:
        check_listed("per-sample sequence lengths", n)
        lens = tuple(lens[i * len(lens) // n] for i in range(n))
    return dataclasses.replace(p, batch=batch, seq_lens=lens)


def batch_override(problem: Problem, batch: Optional[int]) -> tuple[Problem, str]:
    """The layer with ``batch`` images (None: as logged), and the note that says so.

    Raises ProblemError for a batch that is not a positive integer."""
    if batch is None or batch == problem.n:
        return problem, ""
    return with_batch(problem, batch), f"batch overridden: N={batch} (the log's layer has N={problem.n})"


def validate(problem: object) -> Optional[str]:
    """Why ``problem`` cannot be run at all, or None.

    Problems are validated when built, so this catches what construction allows but no
    backend can run: an unknown dtype is run as fp32 (said in the result's note), so only
    a value that is not a problem at all is refused here.
    """
    try:
        family_of(problem)
    except UnknownFamily:
        return f"not a layer miotui can run: {type(problem).__name__}"
    return None


def not_modelled(problem: object) -> Optional[str]:
    """Why no in-process backend computes ``problem`` the way MIOpen does, or None (the
    layer is real; only MIOpenDriver can run it): the family's ``not_modelled`` entry."""
    try:
        entry = family_of(problem).not_modelled
    except UnknownFamily:
        return None   # validate() says what is wrong with it
    return entry(problem) if entry.applies else None


def op_not_modelled(problem: OpProblem) -> Optional[str]:
    if problem.missing:
        return (f"miotui does not run {problem.name}; its MIOpenDriver command cannot be written either "
                f"(the log did not say {', '.join(problem.missing)})")
    return f"miotui does not run {problem.name}; `d` launches its MIOpenDriver command"


def rnn_not_modelled(problem: RNNProblem) -> Optional[str]:
    if problem.dropout > 0 and problem.layers > 1:
        return (f"dropout {problem.dropout:g} between the stacked layers draws from MIOpen's own GPU random "
                "generator (rocrand XORWOW states), which cannot be reproduced here; `d` launches its "
                "MIOpenDriver command")
    return None


def groupnorm_not_modelled(problem: GroupNormProblem) -> Optional[str]:
    if problem.direction != "fwd":
        return "MIOpen has no group-norm backward (only miopenGroupNormForward): there is nothing to compare with"
    return None


def layernorm_not_modelled(problem: LayerNormProblem) -> Optional[str]:
    if problem.variant == "addlayernorm" and problem.direction != "fwd":
        return ("MIOpen has no add-layer-norm backward (only miopenAddLayerNormForward): there is nothing to "
                "compare with")
    return None


def conv_not_modelled(problem: ConvProblem) -> Optional[str]:
    if problem.output_clamped:
        return ("MIOpen clamps this layer's output to 1 pixel (its filter reaches past the padded input); "
                "the reference and torch do not model that clamp")
    return None


def fusion_not_modelled(problem: FusionProblem) -> Optional[str]:
    """A fusion plan's convolution, clamped as :func:`conv_not_modelled` says."""
    return conv_not_modelled(problem.conv) if problem.has_conv else None


# ----------------------------------------------------------------------------- estimates

def _elems(shape: tuple[int, ...]) -> int:
    return math.prod(shape) if shape else 1


def tensor_elems(problem: Problem) -> tuple[int, int]:
    """(input elements, output elements) of one run, from shapes alone: the family's
    ``tensor_elems`` entry.

    Conv by direction (fwd x,w -> y; bwd dy,w -> dx; wrw x,dy -> dw); RNNs, layer / group
    norm and reductions from their tensor table (:mod:`layer_shapes`); batch norm counts
    x (and dy) plus per-channel parameters; the rest x (and y, dy) -> y or dx.
    """
    return family_of(problem).tensor_elems(problem)


def conv_tensor_elems(problem: ConvProblem) -> tuple[int, int]:
    x, y, w = _elems(problem.input_shape), _elems(problem.output_shape), _elems(problem.weight_shape)
    return {"fwd": (x + w, y), "bwd": (y + w, x), "wrw": (x + y, w)}[problem.direction]


def table_tensor_elems(problem: Problem) -> tuple[int, int]:
    ins, outs = layer_shapes(problem)
    return elems(ins), elems(outs)


def fusion_tensor_elems(problem: FusionProblem) -> tuple[int, int]:
    x, y = _elems(problem.input_shape), _elems(problem.output_shape)
    w = _elems(problem.conv.weight_shape) if problem.has_conv else 0
    return x + w + 8 * max(problem.k, problem.c), y


def bnorm_tensor_elems(problem: BatchNormProblem) -> tuple[int, int]:
    x, y = _elems(problem.input_shape), _elems(problem.output_shape)
    params = 6 * (x if problem.mode == "per_activation" else problem.c)
    if problem.direction == "bwd":
        return 2 * x + params, x + params
    return x + params, y + params


def plain_tensor_elems(problem: Problem) -> tuple[int, int]:
    """x -> y forward; x, y, dy -> dx backward."""
    x = _elems(problem.input_shape)
    y = _elems(problem.output_shape)
    if problem.direction == "bwd":
        return x + 2 * y, x
    return x, y


def _storage_bytes(problem: Problem) -> int:
    return {"fp16": 2, "int8": 1, "fp64": 8}.get(problem.dtype, 4)


def reference_bytes(problem: Problem, precision: str) -> int:
    """The reference helper's own peak estimate (its chunk plan replayed)."""
    from miotui.execute.reference import peak_bytes
    return int(peak_bytes(problem, precision))


def _compare_bytes(problem: Problem) -> int:
    """verify.compare's temporaries: a few float64 arrays the size of the outputs."""
    return 3 * 8 * tensor_elems(problem)[1]


def torch_bytes(problem: Problem, device: str = "cpu") -> tuple[int, int]:
    """(host bytes, device bytes) of a torch run.

    Host: the numpy inputs, their torch copies and the output brought back.  Device (or
    host again on CPU): inputs and output in torch, plus for a convolution the columns
    of one image per thread (what ATen's CPU fallback allocates; cuDNN/MIOpen limit
    their workspace themselves).
    """
    ins, outs = tensor_elems(problem)
    item = DTYPE_BYTES.get(problem.dtype, 4)
    host = (ins + outs) * _storage_bytes(problem) + outs * 4
    dev = (ins + outs) * max(item, 2) + outs * 4
    extra = family_of(problem).torch_device_bytes
    if extra.applies:
        dev += extra(problem, device, ins)
    if device == "cpu":
        return host + dev, 0
    return host, dev


def conv_torch_device_bytes(problem: ConvProblem, device: str, ins: int) -> int:
    """The columns of one image per thread (what ATen's CPU fallback allocates; cuDNN/MIOpen
    limit their workspace themselves), and an explicitly padded copy for a pad mode."""
    cg = problem.c // problem.groups if problem.mode != "trans" else problem.k // problem.groups
    small = problem.in_spatial if problem.mode == "trans" else problem.out_spatial
    cols = cg * problem.groups * _elems(problem.filter) * _elems(small) * 4
    threads = 1 if device != "cpu" else min(problem.n, os.cpu_count() or 1)
    extra = cols * threads
    if problem.pad_mode != "default":
        extra += ins * 4   # explicitly padded copy
    return extra


def rnn_torch_device_bytes(problem: RNNProblem, device: str, ins: int) -> int:
    """The module's parameters, and for backward (or training) the forward graph autograd keeps."""
    item = DTYPE_BYTES.get(problem.dtype, 4)
    extra = problem.weight_count * 2 * item
    if problem.direction != "fwd" or not problem.inference:
        extra += rnn_saved_elems(problem) * 2 * max(item, 2)
    return extra


def batch_unit(problem: Problem) -> str:
    """What a batch of ``problem`` counts (images, samples, rows of the first dimension)."""
    return family_of(problem).batch_unit


def reference_modelled(problem: Problem) -> bool:
    """Whether the reference has a memory model of ``problem`` (an op miotui does not run has not)."""
    return family_of(problem).reference_bytes.applies


def estimate_bytes(problem: Problem, backend: Backend, *, verify: bool = True,
                   device: Optional[str] = None) -> int:
    """Host bytes a run of ``problem`` on ``backend`` holds at its peak, verification included.

    The backend's own run is its :meth:`~miotui.execute.protocol.Backend.memory_estimate`
    (numpy/numba: the reference's fp32 run; torch: :func:`torch_bytes`; MIOpenDriver: 0,
    as it allocates its own buffers, maybe on another machine).  An in-process backend is
    then verified here: the fp64 reference and the comparison are added (both runs count
    their inputs, so the sum is conservative by one copy of them).  ``device``: plan for
    this device instead of the backend's own.
    """
    if backend.in_process and not reference_modelled(problem):
        return _unmodelled_bytes(problem, verify)
    total = backend.memory_estimate(problem, RunSettings(backend=backend.name, verify=verify), device).host
    if verify and backend.in_process:
        total += reference_bytes(problem, "fp64") + _compare_bytes(problem)
    return int(total)


def _unmodelled_bytes(problem: OpProblem, verify: bool) -> int:
    """An op no in-process backend computes (CTC, cat, the margin losses...): the runner
    refuses it before the guard, but the guard still answers for it from its tensors alone
    (every tensor held once as stored and, when verifying, once in float64), so no caller
    gets an exception or an allocation from a logged size."""
    stored = sum(_elems(shape) for _, shape in problem.shapes) * _storage_bytes(problem)
    return stored + (sum(_elems(shape) for _, shape in problem.shapes) * 8 if verify else 0)


def available_memory() -> int:
    """Bytes this process can allocate without swapping or meeting its cgroup's limit:
    the smaller of the machine's free memory and what the tightest cgroup limit leaves
    (:mod:`miotui.execute.host_memory`)."""
    import psutil
    free = int(psutil.virtual_memory().available)
    cgroup = cgroup_memory()
    return free if cgroup is None else min(free, cgroup.available)


def _limit_note(avail: int) -> str:
    """What bounds ``avail``, when it is a cgroup limit (a container's, a job's)."""
    cgroup = cgroup_memory()
    if cgroup is None or cgroup.available > avail:
        return ""
    return (f" (the cgroup v{cgroup.version} memory limit on this process, {fmt_bytes(cgroup.limit)} set in "
            f"{cgroup.path}, of which {fmt_bytes(cgroup.usage)} is in use)")


def budget_for(available: int) -> int:
    return max(0, int(available * HEADROOM_FRACTION) - RESERVE_BYTES)


def largest_batch(problem: Problem, fits: Callable[[Problem], bool]) -> int:
    """The largest N <= problem.n for which ``fits(problem with N images)``, 0 if none.

    Memory grows with N, so a binary search; each probe is arithmetic only.
    """
    lo, hi = 0, problem.n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            ok = fits(with_batch(problem, mid))
        except ProblemError:
            ok = False
        if ok:
            lo = mid
        else:
            hi = mid - 1
    return lo


def check_memory(problem: Problem, backend: Backend, *, verify: bool = True,
                 available: Optional[int] = None, device: Optional[str] = None,
                 device_available: Optional[int] = None) -> MemoryCheck:
    """Will this run fit?  If not: a message naming the need, the free memory, and the
    largest batch that fits.  Host memory first, then the backend's device where its
    estimate puts bytes there (a GPU).  ``available``/``device_available`` override the
    measured free memory (tests, or a caller that knows better); ``device`` plans for that
    device instead of the backend's own."""
    avail = available_memory() if available is None else int(available)
    budget = budget_for(avail)
    need = estimate_bytes(problem, backend, verify=verify, device=device)
    if need > budget:
        def fits(p: Problem) -> bool:
            return estimate_bytes(p, backend, verify=verify, device=device) <= budget
        n = largest_batch(problem, fits)
        what = "memory" + (_limit_note(avail) if available is None else "")
        return MemoryCheck(False, need, avail, budget, _refusal(problem, backend, need, avail, n, what, verify),
                           n, "host")
    settings = RunSettings(backend=backend.name, verify=verify)
    dev_need = backend.memory_estimate(problem, settings, device).device
    if dev_need > 0:
        dev_avail = device_available if device_available is not None else backend.free_device_bytes()
        if dev_avail is not None and dev_need > budget_for(dev_avail):
            dbudget = budget_for(dev_avail)
            n = largest_batch(problem, lambda p: backend.memory_estimate(p, settings, device).device <= dbudget)
            return MemoryCheck(False, dev_need, dev_avail, dbudget,
                               _refusal(problem, backend, dev_need, dev_avail, n, "GPU memory", verify), n, "device")
    return MemoryCheck(True, need, avail, budget)


def _refusal(problem: Problem, backend: Backend, need: int, avail: int, n: int, what: str,
             verify: bool = True) -> str:
    head = (f"not run: {backend.name} would need about {fmt_bytes(need)} "
            f"{'(with the float64 verification reference) ' if verify else ''}"
            f"but only {fmt_bytes(avail)} of {what} is free (keeping {int((1 - HEADROOM_FRACTION) * 100)}% "
            f"+ {fmt_bytes(RESERVE_BYTES)} headroom)")
    unit = batch_unit(problem)
    if n >= 1:
        return (f"{head}; the largest batch that fits is {n} {unit} (run it with --batch {n}; "
                f"the log's layer has N={problem.n})")
    one = {"samples": "one sample", "images": "one image"}.get(unit, "a first dimension of 1")
    return f"{head}; even {one} does not fit"

"""One record per problem family: everything miotui does differently for one kind of layer.

A problem *family* is one problem type (``ConvProblem``, ``PoolProblem``, ...): its record,
:class:`Family`, names the code that computes its reference, its verification reference, its
torch op, its tolerance, its tensor table, its memory model, its MIOpenDriver writer and its
table columns.  Code that behaves per family looks the record up by the problem's type
(:func:`family_of`) instead of asking ``isinstance`` one type after another; a new problem type
is one new record in :data:`FAMILIES` (``tests/unit/test_families.py`` fails until every entry
of it is given, or said not to apply and why).

Why the entries are :class:`Ref` (a module and a function name) and not the functions: the
app imports this module at start-up, and the references bring numpy, numba and torch; a Ref
imports its module when first called.  It also looks the function up on each call, so a test
that replaces a module's function (to check that a comparison can fail) replaces it here too.
An entry that does not apply to a family is :class:`NotApplicable` with the reason, never a
missing key; the caller decides what that means (no reference: ``ReferenceUnsupported``; no
preparation: nothing to prepare).

Each family's ``name`` is what every package calls it: the problem's ``op`` (``conv``,
``pool``, ``bnorm``, ``activ``, ``lrn``, ``softmax``, ``fusion``, ``rnn``, ``layernorm``,
``groupnorm``, ``reduce``) and ``op`` for ``OpProblem``, the many operations miotui decodes
but does not run.  Modules that serve several families are named after the group they
serve, the same group in every package:

* ``basic`` = pool, bnorm, activ, lrn, softmax (``problems/basic.py``); the references of
  these and of fusion, which is built from them, are ``execute/reference_basic.py`` and
  ``execute/oracle_basic.py`` (they were ``reference_ops``/``oracle_ops``, which named a
  different set than ``problems/ops.py``); the driver's ``commands/basic.py`` reads and
  writes activ, lrn and softmax (pool and bnorm have modules of their own there).
* ``norm`` = layernorm, groupnorm (``problems/norm.py``, ``execute/reference_norm.py``,
  ``execute/torch_norm.py``, which also holds reduce's torch op; ``driver/commands/norm.py``,
  which was ``norms.py``).
* ``ops`` = reduce and op (``problems/ops.py``); in ``driver/commands`` the generic op's
  drivers are split by era: ``ops.py`` (the 2024 tensor ops and the one ``OpProblem``
  writer), ``classic.py`` (tensorop, dropout, ctc, gemm), ``adam.py`` and ``reduce.py``.
* the *tensor-table* families = rnn, layernorm, groupnorm, reduce: their tensors are listed
  by ``execute/layer_shapes.py``, and what their references share is
  ``execute/reference_tables.py`` (it was ``reference_layers``, though every kind is a layer);
  ``execute/oracle_layers.py`` keeps its name for the norm and reduce verification references.
* ``execute/torch_ops.py`` is the torch backend's math for conv, basic and fusion (its
  name is kept: the backend modules, another seam's, import it by that name).

Entry signatures (every Ref of one entry takes the same arguments):

=================  ===========================================================================
tensor_names       (problem) -> (input names, output names)
tensor_table       (problem) -> ({input name: shape}, {output name: shape})
make_inputs        (problem, seed) -> {name: array}
reference          (problem, inputs, *, precision, cancel, engine, chunk_bytes, saved) -> outputs
prepare            (problem, inputs, precision, cancel) -> what ``reference`` may start from
reference_bytes    (problem, precision, chunk_bytes) -> peak bytes of one reference run
reference_engine   (problem, engine) -> the code path in words
numba_kernels      (problem) -> why numba's direct kernels do not run it, or None
numba_warmup       (problem) -> the tiny kernels to compile before timing (a function of
                   the compute dtype), or None
oracle             (problem, inputs, backend, cancel) -> (float64 outputs, reference name)
oracle_name        (problem, backend) -> reference name
torch_op           (problem, tensors) -> outputs; (problem, tensors, state) for a family
                   with torch_prepare (state: what it set up)
torch_prepare      (problem, tensors, state) -> None (untimed set-up, into ``state``)
torch_describe     (problem) -> what the engine text adds
tolerance          (problem, algorithm) -> (tolerance, why)
metric             (problem) -> "rms_range" | "max_abs" | "rms" | "elementwise"
exact_outputs      (problem) -> names of the outputs that must match exactly
underflow_floor    (problem) -> magnitude below which values compare as 0, or None
tensor_elems       (problem) -> (input elements, output elements)
torch_device_bytes (problem, device, input elements) -> bytes torch adds on the device
with_batch         (problem, n) -> the problem with n images
batch_unit         a value: what the batch counts ("images", "samples", ...)
not_modelled       (problem) -> why no in-process backend runs it, or None
driver_writer      (problem, version) -> MIOpenDriver argv
columns            (problem) -> the table's shape columns this family fills
=================  ===========================================================================
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields
from importlib import import_module
from typing import Any, Callable, ClassVar, Union

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
    ReduceProblem,
    RNNProblem,
    SoftmaxProblem,
)

__all__ = ["Family", "Ref", "NotApplicable", "FAMILIES", "family_of", "ENTRIES", "UnknownFamily"]


class UnknownFamily(TypeError):
    """A value that is no problem type miotui has a record for."""


@dataclass(frozen=True)
class Ref:
    """A function by module and name, imported when first called and looked up on every call."""

    module: str
    name: str
    applies: ClassVar[bool] = True

    def resolve(self) -> Callable[..., Any]:
        module = sys.modules.get(self.module)
        if module is None:
            module = import_module(self.module)
        return getattr(module, self.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)


@dataclass(frozen=True)
class NotApplicable:
    """An entry a family does not have, and why (a record never just lacks an entry)."""

    why: str
    applies: ClassVar[bool] = False


Entry = Union[Ref, NotApplicable]


@dataclass(frozen=True)
class Family:
    """What miotui does for one problem type (the entries are described in the module docstring)."""

    name: str
    problem_type: type
    tensor_names: Entry
    tensor_table: Entry
    make_inputs: Entry
    reference: Entry
    prepare: Entry
    reference_bytes: Entry
    reference_engine: Entry
    numba_kernels: Entry
    numba_warmup: Entry
    oracle: Entry
    oracle_name: Entry
    torch_op: Entry
    torch_prepare: Entry
    torch_describe: Entry
    tolerance: Entry
    metric: Entry
    exact_outputs: Entry
    underflow_floor: Entry
    tensor_elems: Entry
    torch_device_bytes: Entry
    with_batch: Entry
    batch_unit: str
    not_modelled: Entry
    driver_writer: Entry
    columns: Entry


#: every entry a record must give (the completeness test walks these)
ENTRIES = tuple(f.name for f in fields(Family) if f.name not in ("name", "problem_type"))

_X = "miotui.execute"
_RB = f"{_X}.reference_basic"
_OR = f"{_X}.oracle"
_OB = f"{_X}.oracle_basic"
_RT = f"{_X}.reference_tables"
_T = f"{_X}.torch_ops"
_TN = f"{_X}.torch_norm"
_V = f"{_X}.verify"
_G = f"{_X}.guard"
_LS = f"{_X}.layer_shapes"
_C = "miotui.driver.commands"
_E = "miotui.export"

_NO_PREPARE = NotApplicable("the reference's timed calls start from the inputs alone")
_NO_TABLE = NotApplicable("its tensors' shapes are the problem's own input_shape/output_shape properties")
_NO_TORCH_PREPARE = NotApplicable("torch's timed calls need no set-up beyond the inputs")
_NO_TORCH_TEXT = NotApplicable("torch runs it as the op's one function; nothing to add")
_NO_TORCH_EXTRA = NotApplicable("torch holds only the tensors on the device")
_NO_NUMBA = NotApplicable("numba's direct kernels are for convolutions and pooling; numpy runs the rest")
_NO_EXACT = NotApplicable("MIOpenDriver compares every output with a tolerance")
_NO_FLOOR = NotApplicable("no output is a long product of numbers below 1 that underflows")
_ALL_MODELLED = NotApplicable("every problem of this family is run as MIOpen runs it")
_NO_REFERENCE = "miotui decodes it but does not run it: its arithmetic is not modelled"


def _basic(name: str, problem_type: type, torch: str, **entries: Any) -> Family:
    """A family of ``problems/basic.py`` (pool, bnorm, activ, lrn, softmax): references in
    reference_basic / oracle_basic, torch op ``torch`` in torch_ops, N images as the batch; ``entries``
    gives what differs from the group's shared ones."""
    shared: dict[str, Any] = dict(
        tensor_names=Ref(_RB, "plain_tensor_names"), tensor_table=_NO_TABLE, make_inputs=Ref(_RB, f"{name}_inputs"),
        reference=Ref(_RB, f"{name}_reference"), prepare=_NO_PREPARE, reference_bytes=Ref(_RB, "basic_peak_bytes"),
        reference_engine=Ref(_RB, "basic_engine"), numba_kernels=_NO_NUMBA, numba_warmup=_NO_NUMBA,
        oracle=Ref(_OB, f"{name}_outputs"),
        oracle_name=Ref(_OB, "basic_reference_name"), torch_op=Ref(_T, torch),
        torch_prepare=_NO_TORCH_PREPARE, torch_describe=_NO_TORCH_TEXT, tolerance=Ref(_V, f"{name}_tolerance"),
        metric=Ref(_V, "rms_range_metric"), exact_outputs=_NO_EXACT, underflow_floor=_NO_FLOOR,
        tensor_elems=Ref(_G, "plain_tensor_elems"),
        torch_device_bytes=_NO_TORCH_EXTRA, with_batch=Ref(_G, "batch_field"), batch_unit="images",
        not_modelled=_ALL_MODELLED, driver_writer=Ref(f"{_C}.basic", f"write_{name}"),
        columns=Ref(_E, f"{name}_columns"))
    shared.update(entries)
    return Family(name=name, problem_type=problem_type, **shared)


def _table(name: str, problem_type: type, module: str, **entries: Any) -> Family:
    """rnn, layernorm, groupnorm and reduce: tensor tables in layer_shapes, references in
    ``module`` (reference_rnn / reference_norm / reference_reduce), the first dimension of the
    shape as the batch; ``entries`` gives what differs."""
    shared: dict[str, Any] = dict(
        tensor_names=Ref(_LS, "table_names"), tensor_table=Ref(_LS, f"{name}_shapes"),
        make_inputs=Ref(module, f"{name}_inputs"), reference=Ref(module, f"{name}_reference"), prepare=_NO_PREPARE,
        reference_bytes=Ref(_RT, "table_peak_bytes"), reference_engine=Ref(_RT, "table_engine"),
        numba_kernels=_NO_NUMBA, numba_warmup=_NO_NUMBA,
        oracle=Ref(_OR, f"{name}_outputs"), oracle_name=Ref(_OR, "norm_reference_name"),
        torch_op=Ref(_TN, f"torch_{name}"), torch_prepare=_NO_TORCH_PREPARE, torch_describe=_NO_TORCH_TEXT,
        tolerance=Ref(_V, "norm_tolerance"), metric=Ref(_V, "rms_range_metric"), exact_outputs=_NO_EXACT,
        underflow_floor=_NO_FLOOR,
        tensor_elems=Ref(_G, "table_tensor_elems"), torch_device_bytes=_NO_TORCH_EXTRA,
        with_batch=Ref(_G, "batch_first_dim"), batch_unit="along the first dimension",
        not_modelled=Ref(_G, f"{name}_not_modelled"), driver_writer=Ref(f"{_C}.norm", f"write_{name}"),
        columns=NotApplicable(f"{name} fills only the columns every layer has (n c h w, output)"))
    shared.update(entries)
    return Family(name=name, problem_type=problem_type, **shared)


FAMILIES: tuple[Family, ...] = (
    Family(
        name="conv", problem_type=ConvProblem,
        tensor_names=Ref(f"{_X}.conv", "conv_tensor_names"), tensor_table=_NO_TABLE,
        make_inputs=Ref(f"{_X}.conv", "conv_make_inputs"),
        reference=Ref(f"{_X}.conv", "conv_reference"), prepare=_NO_PREPARE,
        reference_bytes=Ref(f"{_X}.conv", "conv_peak_bytes"), reference_engine=Ref(f"{_X}.conv", "conv_engine"),
        numba_kernels=Ref(f"{_X}.numba_kernels", "conv_not_applicable"),
        numba_warmup=Ref(f"{_X}.numba_kernels", "conv_warmup_kernels"),
        oracle=Ref(_OR, "conv_outputs"), oracle_name=Ref(_OR, "conv_reference_name"),
        torch_op=Ref(_T, "torch_conv"), torch_prepare=_NO_TORCH_PREPARE, torch_describe=_NO_TORCH_TEXT,
        tolerance=Ref(_V, "conv_tolerance"), metric=Ref(_V, "rms_range_metric"), exact_outputs=_NO_EXACT,
        underflow_floor=_NO_FLOOR,
        tensor_elems=Ref(_G, "conv_tensor_elems"), torch_device_bytes=Ref(_G, "conv_torch_device_bytes"),
        with_batch=Ref(_G, "batch_field"), batch_unit="images", not_modelled=Ref(_G, "conv_not_modelled"),
        driver_writer=Ref(f"{_C}.conv", "write_conv"), columns=Ref(_E, "conv_columns")),
    _basic("pool", PoolProblem, "torch_pool", reference_engine=Ref(_RB, "pool_engine"),
           numba_kernels=Ref(f"{_X}.numba_kernels", "pool_not_applicable"),
           numba_warmup=Ref(f"{_X}.numba_kernels", "pool_warmup_kernels"),
           reference_bytes=Ref(_RB, "pool_peak_bytes"), metric=Ref(_V, "pool_metric"),
           driver_writer=Ref(f"{_C}.pool", "write_pool")),
    _basic("bnorm", BatchNormProblem, "torch_batchnorm", tensor_names=Ref(_RB, "bnorm_tensor_names"),
           tensor_elems=Ref(_G, "bnorm_tensor_elems"), driver_writer=Ref(f"{_C}.bnorm", "write_bnorm")),
    _basic("activ", ActivationProblem, "torch_activation", metric=Ref(_V, "elementwise_metric")),
    _basic("lrn", LRNProblem, "torch_lrn", reference_bytes=Ref(_RB, "lrn_peak_bytes")),
    _basic("softmax", SoftmaxProblem, "torch_softmax"),
    Family(
        name="fusion", problem_type=FusionProblem,
        tensor_names=Ref(_RB, "fusion_tensor_names"), tensor_table=_NO_TABLE, make_inputs=Ref(_RB, "fusion_inputs"),
        reference=Ref(_RB, "fusion_reference"), prepare=_NO_PREPARE,
        reference_bytes=Ref(_RB, "fusion_peak_bytes"), reference_engine=Ref(_RB, "fusion_engine"),
        numba_kernels=_NO_NUMBA, numba_warmup=_NO_NUMBA,
        oracle=Ref(_OB, "fusion_outputs"), oracle_name=Ref(_OB, "basic_reference_name"),
        torch_op=Ref(_T, "torch_fusion"), torch_prepare=_NO_TORCH_PREPARE, torch_describe=_NO_TORCH_TEXT,
        tolerance=Ref(_V, "fusion_tolerance"), metric=Ref(_V, "elementwise_metric"), exact_outputs=_NO_EXACT,
        underflow_floor=_NO_FLOOR,
        tensor_elems=Ref(_G, "fusion_tensor_elems"), torch_device_bytes=_NO_TORCH_EXTRA,
        with_batch=Ref(_G, "batch_field"), batch_unit="images", not_modelled=Ref(_G, "fusion_not_modelled"),
        driver_writer=Ref(f"{_C}.fusion", "write_fusion"), columns=Ref(_E, "fusion_columns")),
    _table("rnn", RNNProblem, f"{_X}.reference_rnn",
           prepare=Ref(f"{_X}.reference_rnn", "rnn_prepare"),
           reference_bytes=Ref(f"{_X}.reference_rnn", "rnn_reference_bytes"),
           reference_engine=Ref(f"{_X}.reference_rnn", "rnn_engine"),
           oracle_name=Ref(_OR, "rnn_reference_name"),
           torch_op=Ref(f"{_X}.torch_rnn", "torch_rnn"), torch_prepare=Ref(f"{_X}.torch_rnn", "torch_rnn_prepare"),
           torch_describe=Ref(_T, "torch_rnn_describe"), tolerance=Ref(_V, "rnn_tolerance"),
           torch_device_bytes=Ref(_G, "rnn_torch_device_bytes"), with_batch=Ref(_G, "rnn_with_batch"),
           batch_unit="samples", driver_writer=Ref(f"{_C}.rnn", "write_rnn")),
    _table("layernorm", LayerNormProblem, f"{_X}.reference_norm"),
    _table("groupnorm", GroupNormProblem, f"{_X}.reference_norm"),
    _table("reduce", ReduceProblem, f"{_X}.reference_reduce",
           oracle_name=Ref(_OR, "reduce_reference_name"),
           reference_bytes=Ref(f"{_X}.reference_reduce", "reduce_peak_bytes"),
           tolerance=Ref(_V, "reduce_tolerance"), not_modelled=_ALL_MODELLED,
           exact_outputs=Ref(_V, "reduce_exact_outputs"), underflow_floor=Ref(_V, "reduce_underflow_floor"),
           driver_writer=Ref(f"{_C}.reduce", "write_reduce")),
    Family(
        name="op", problem_type=OpProblem,
        tensor_names=NotApplicable(_NO_REFERENCE), tensor_table=NotApplicable(_NO_REFERENCE),
        make_inputs=NotApplicable(_NO_REFERENCE),
        reference=NotApplicable(_NO_REFERENCE), prepare=NotApplicable(_NO_REFERENCE),
        reference_bytes=NotApplicable(_NO_REFERENCE), reference_engine=Ref(_RB, "basic_engine"),
        numba_kernels=_NO_NUMBA, numba_warmup=_NO_NUMBA, oracle=NotApplicable(_NO_REFERENCE),
        oracle_name=Ref(_OB, "basic_reference_name"),
        torch_op=NotApplicable(_NO_REFERENCE), torch_prepare=NotApplicable(_NO_REFERENCE),
        torch_describe=_NO_TORCH_TEXT, tolerance=NotApplicable(_NO_REFERENCE), metric=NotApplicable(_NO_REFERENCE),
        exact_outputs=NotApplicable(_NO_REFERENCE), underflow_floor=NotApplicable(_NO_REFERENCE),
        tensor_elems=Ref(_G, "plain_tensor_elems"), torch_device_bytes=_NO_TORCH_EXTRA,
        with_batch=Ref(_G, "op_with_batch"), batch_unit="images", not_modelled=Ref(_G, "op_not_modelled"),
        driver_writer=Ref(f"{_C}.ops", "write_op"),
        columns=NotApplicable("a generic op fills only the columns every layer has (n c h w, output)")),
)

_BY_TYPE: dict[type, Family] = {f.problem_type: f for f in FAMILIES}


def family_of(problem: object) -> Family:
    """The record of ``problem``'s type; UnknownFamily (a TypeError) for anything else."""
    family = _BY_TYPE.get(type(problem))
    if family is None:
        raise UnknownFamily(f"not a layer miotui knows: {type(problem).__name__}")
    return family


def families_cover(types: tuple[type, ...] = PROBLEM_TYPES) -> tuple[type, ...]:
    """The problem types among ``types`` that have no record (empty when every one has)."""
    return tuple(t for t in types if t not in _BY_TYPE)

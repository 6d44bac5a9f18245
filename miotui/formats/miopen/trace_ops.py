"""API-trace blocks of every primitive beyond conv/pool/bnorm/activ/lrn/softmax/fusion: RNNs
(``miotui.formats.miopen.trace_rnn``), layer/add/T5/group norm, tensor reduction, cat, getitem,
kthvalue, PReLU, RoPE, reduceextreme, reducecalculation, the Adam family, tensor ops,
dropout, CTC, GLU, the margin losses and the 3.1-3.2 sum/argmax.

Each block decodes to the problem its own ``Command`` line (``miotui.driver.commands``) gives
for the same call, field for field where both print a value (parameters in the same canonical
text), so the scanner counts the two forms as one call.  What only one form prints is the
problem's ``lossy_fields``: a block prints alpha/beta as addresses, and the arrays of
descriptor handles (cat's inputs, getitem's index tensors) as one address; a pointer to
integers prints its first integer (getitem's dims and slices, CTC's length lists); the Command
lines lack eps, normalized dims and several parameters.  What the block lacks and the driver
needs is the problem's ``missing``.

Descriptor set-up is remembered like the pooling and activation descriptors are: the last
``miopenSetReduceTensorDescriptor`` (whose own print-out spans lines the block may not keep),
``miopenSetDropoutDescriptor`` (rate, mask) and ``miopenSetCTCLossDescriptor`` (blank label,
softmax); ``miopenSetRNNDescriptor*`` in ``trace_rnn``.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Callable, Optional, Sequence

from miotui.driver.commands.reduce import COMP_TYPES
from miotui.driver.commands.support import canon_float, canon_int
from miotui.events import Event, Sighting
from miotui.formats.miopen.grammar import TensorDesc, packed_strides
from miotui.formats.miopen.trace_params import BlockError, BlockParams, make_problem, need_tensor, opt_tensor
from miotui.formats.miopen.trace_rnn import RNNTrace
from miotui.problems import GroupNormProblem, LayerNormProblem, OpProblem, ReduceProblem

__all__ = ["OpTrace", "op_handlers"]

SOURCE = "api-trace"
Handler = Callable[[str, BlockParams], list[Event]]

_LAYERNORM_APIS = {"miopenLayerNormForward": ("layernorm", "fwd"), "miopenLayerNormBackward": ("layernorm", "bwd"),
                   "miopenAddLayerNormForward": ("addlayernorm", "fwd"),
                   "miopenT5LayerNormForward": ("t5layernorm", "fwd"),
                   "miopenT5LayerNormBackward": ("t5layernorm", "bwd")}
#: miopenLossReductionMode_t -> the driver's --reduce word
_LOSS_REDUCTIONS = {0: "none", 1: "sum", 2: "mean"}
#: workspace-size queries: a mention of the layer the call they size would run (the contract's
#: "workspace-size queries"), decoded as that call; the ones that carry too little to name it
#: (RNN, getitem, sum, reducecalculation: their op or shapes are not printed) are not listed
_MENTIONS = {"miopenGetLayerNormBackwardWorkspaceSize": "miopenLayerNormBackward",
             "miopenGetT5LayerNormBackwardWorkspaceSize": "miopenT5LayerNormBackward",
             "miopenGetPReLUBackwardWorkspaceSize": "miopenPReLUBackward",
             "miopenGetReductionWorkspaceSize": "miopenReduceTensor",
             "miopenGetReductionIndicesSize": "miopenReduceTensor",
             "miopenGetSoftMarginLossForwardWorkspaceSize": "miopenSoftMarginLossForward",
             "miopenGetMultiMarginLossForwardWorkspaceSize": "miopenMultiMarginLossForward",
             "miopenGetCTCLossWorkspaceSize": "miopenCTCLoss"}
_REDUX_LINE_RE = re.compile(r"(Reduction Operation Type|Reduction CompType|NanPropagation Option|Indices Option)"
                            r"\s*:\s*(-?\d+)")


def _flag(p: BlockParams, name: str) -> bool:
    """A bool as the logger prints one (``1``/``0``; ``true``/``false`` defensively)."""
    text = p.need(name, name).strip().lower()
    if text in ("1", "true"):
        return True
    if text in ("0", "false"):
        return False
    raise BlockError(f"{name} {text[:20]!r} is not a bool")


def _layout(t: TensorDesc) -> str:
    """NHWC/NDHWC when the strides say so (the newer drivers' layout flag), else ""."""
    order = t.storage_order if t.rank in (4, 5) else None
    return order if order in ("NHWC", "NDHWC") else ""


def _contiguous(t: TensorDesc) -> str:
    return "1" if t.strides is None or tuple(t.strides) == packed_strides(t.lens) else "0"


def _dim(value: int, rank: int, what: str = "dim") -> str:
    if not -rank <= value < rank:
        raise BlockError(f"{what} {value} is not a dimension of a {rank}-D tensor")
    return canon_int(value % rank)


class OpTrace:
    """The newer ops' handlers for one ``TraceDecoder`` (its data-type memory is theirs too)."""

    def __init__(self, decoder) -> None:
        self._infer = decoder.infer_dtype
        self._reduce_desc: Optional[tuple[int, int, int, int]] = None
        self._dropout: Optional[tuple[float, int]] = None
        self._ctc: Optional[tuple[int, int]] = None
        self.rnn = RNNTrace(decoder.infer_dtype, lambda: self._dropout[0] if self._dropout else 0.0)

    def handlers(self) -> dict[str, Handler]:
        h: dict[str, Handler] = dict(self.rnn.handlers())
        for name in _LAYERNORM_APIS:
            h[name] = self.layernorm
        h.update({
            "miopenGroupNormForward": self.groupnorm,
            "miopenSetReduceTensorDescriptor": self.set_reduce, "miopenReduceTensor": self.reduce,
            "miopenCatForward": self.cat, "miopenGetitemBackward": self.getitem,
            "miopenKthvalueForward": self.kthvalue, "miopenPReLUBackward": self.prelu,
            "miopenRoPEForward": self.rope, "miopenRoPEBackward": self.rope,
            "miopenReduceExtremeForward": self.reduceextreme,
            "miopenReduceCalculationForward": self.reducecalculation,
            "miopenSumForward": self.sum_or_argmax, "miopenArgmaxForward": self.sum_or_argmax,
            "miopenFusedAdam": self.adam, "miopenFusedAdamWithOutput": self.adam,
            "miopenTransformersAdamW": self.adam, "miopenTransformersAdamWWithOutput": self.adam,
            "miopenOpTensor": self.tensorop, "miopenSetTensor": self.tensorop, "miopenScaleTensor": self.tensorop,
            "miopenTransformTensor": self.tensorop,
            "miopenSetDropoutDescriptor": self.set_dropout, "miopenRestoreDropoutDescriptor": self.set_dropout,
            "miopenDropoutForward": self.dropout, "miopenDropoutBackward": self.dropout,
            "miopenSetCTCLossDescriptor": self.set_ctc, "miopenCTCLoss": self.ctc,
            "miopenGLUForward": self.glu, "miopenGLUBackward": self.glu,
            "miopenSoftMarginLossForward": self.marginloss, "miopenSoftMarginLossBackward": self.marginloss,
            "miopenMultiMarginLossForward": self.marginloss,
        })
        for query, call in _MENTIONS.items():
            h[query] = self._mention(h[call], call)
        return h

    @staticmethod
    def _mention(handler: Handler, call: str) -> Handler:
        """A workspace query: the sized call's layer, as a mention; nothing when the query
        prints too little to name it (never an undecoded line for a query)."""
        def decode(name: str, p: BlockParams) -> list[Event]:
            try:
                events = handler(call, p)
            except BlockError:
                return []
            return [replace(e, role="mention") for e in events if isinstance(e, Sighting)]
        return decode

    # ------------------------------------------------------------------ shared

    def _op(self, name: str, direction: str, primary: TensorDesc, others: Sequence[Optional[TensorDesc]],
            shapes: tuple, params: tuple = (), missing: tuple = (), warnings: Optional[list[str]] = None
            ) -> list[Event]:
        warnings = [] if warnings is None else warnings
        dtype = self._infer(primary, others, warnings)
        problem = make_problem(lambda: OpProblem(name, direction, dtype, shapes, params, missing))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]

    # ------------------------------------------------------------------ norms

    def layernorm(self, name: str, p: BlockParams) -> list[Event]:
        variant, direction = _LAYERNORM_APIS[name]
        x = need_tensor(p, "xDesc", "xDesc")
        warnings: list[str] = []
        eps = p.float("epsilon", "epsilon") if direction == "fwd" else 1e-5
        nd = x.rank - 1 if variant == "t5layernorm" else p.int("normalized_dim", "normalized_dim")
        dtype = self._infer(x, [opt_tensor(p, "yDesc"), opt_tensor(p, "dyDesc")], warnings)
        problem = make_problem(lambda: LayerNormProblem(direction, dtype, x.lens, nd, eps, p.int("mode", "mode"),
                                                        variant, _layout(x)))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]

    def groupnorm(self, name: str, p: BlockParams) -> list[Event]:
        x = need_tensor(p, "xDesc", "xDesc")
        warnings: list[str] = []
        dtype = self._infer(x, [opt_tensor(p, "yDesc")], warnings)
        problem = make_problem(lambda: GroupNormProblem("fwd", dtype, x.lens, p.int("num_groups", "num_groups"),
                                                        p.float("epsilon", "epsilon"), p.int("mode", "mode"),
                                                        _layout(x)))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]

    # ------------------------------------------------------------------ reductions

    def set_reduce(self, name: str, p: BlockParams) -> list[Event]:
        try:
            self._reduce_desc = (p.int("op", "reduceTensorOp"), p.int("comp type", "reduceTensorCompType"),
                                 p.int("NaN option", "reduceTensorNanOpt"), p.int("indices", "reduceTensorIndices"))
        except BlockError:
            pass
        return []

    def reduce(self, name: str, p: BlockParams) -> list[Event]:
        warnings = ["alpha and beta are printed as addresses in the trace: 1 and 0 assumed"]
        found = dict(_REDUX_LINE_RE.findall(p.get("reduceTensorDesc") or ""))
        if len(found) == 4:
            op, comp, nan, indices = (int(found[k]) for k in ("Reduction Operation Type", "Reduction CompType",
                                                               "NanPropagation Option", "Indices Option"))
        elif self._reduce_desc is not None:
            op, comp, nan, indices = self._reduce_desc
            warnings.append("reduction descriptor taken from the last miopenSetReduceTensorDescriptor")
        else:
            raise BlockError("the reduction descriptor is not readable and no miopenSetReduceTensorDescriptor "
                             "came before")
        a, c = need_tensor(p, "aDesc", "aDesc"), need_tensor(p, "cDesc", "cDesc")
        if a.rank != c.rank:
            raise BlockError(f"aDesc is {a.rank}-D but cDesc {c.rank}-D")
        dims = tuple(i for i, n in enumerate(c.lens) if n == 1)  # as LogCmdRedux derives -R
        comp_dtype = COMP_TYPES.get(comp)
        if comp_dtype is None:
            raise BlockError(f"reduction comp type {comp} is not a miopenDataType_t")
        dtype = self._infer(a, [c], warnings)
        problem = make_problem(lambda: ReduceProblem("fwd", dtype, a.lens, dims, op, comp_dtype, nan == 1,
                                                     indices == 1))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]

    def reduceextreme(self, name: str, p: BlockParams) -> list[Event]:
        x = need_tensor(p, "xDesc", "xDesc")
        params = (("O", canon_int(p.int("op", "reduceExtremeOp"))), ("R", _dim(p.int("dim", "dim"), x.rank)))
        return self._op("reduceextreme", "fwd", x, [opt_tensor(p, "yDesc")], (("input", x.lens),), params)

    def reducecalculation(self, name: str, p: BlockParams) -> list[Event]:
        x = need_tensor(p, "xDesc", "xDesc")
        params = [("N", canon_int(p.int("NaN mode", "nanPropagation"))), ("R", _dim(p.int("dim", "dim"), x.rank))]
        op = p.opt_int("reduceCalculationOp")
        missing: tuple[str, ...] = ()
        warnings: list[str] = []
        if op is None:
            missing = ("ReduceCalculationOp",)
            warnings.append("MIOpen's trace of miopenReduceCalculationForward leaves out its op (sum or product)")
        else:
            params.insert(1, ("O", canon_int(op)))
        return self._op("reducecalculation", "fwd", x, [opt_tensor(p, "reduceDesc")], (("input", x.lens),),
                        tuple(params), missing, warnings)

    def sum_or_argmax(self, name: str, p: BlockParams) -> list[Event]:
        x = need_tensor(p, "xDesc", "xDesc")
        params = (("R", _dim(p.int("dim", "dim"), x.rank)),)
        if name == "miopenSumForward":
            params = (("N", canon_int(p.int("NaN mode", "nanPropagation"))),) + params
        return self._op("sum" if name == "miopenSumForward" else "argmax", "fwd", x, [opt_tensor(p, "yDesc")],
                        (("input", x.lens),), params)

    # ------------------------------------------------------------------ tensor ops

    def cat(self, name: str, p: BlockParams) -> list[Event]:
        y = need_tensor(p, "yDesc", "yDesc")
        dim = _dim(p.int("dim", "dim"), y.rank)
        return self._op("cat", "fwd", y, [], (("output", y.lens),), (("d", dim),), ("inputs",), [
            "MIOpen's trace prints the cat inputs (xDescs) as one address and not their count: only the output "
            "and the dimension are known (its Command lines name the inputs)"])

    def getitem(self, name: str, p: BlockParams) -> list[Event]:
        dy, dx = need_tensor(p, "dyDesc", "dyDesc"), need_tensor(p, "dxDesc", "dxDesc")
        index = opt_tensor(p, "indexDescs")
        dims, slices = p.int("dimCount", "dimCount"), p.int("sliceCount", "sliceCount")
        shapes = [("doutput", dy.lens)] + ([("indexs", index.lens)] if index is not None else []) + \
            [("dinput", dx.lens)]
        params = [("1", canon_int(p.int("indexCount", "indexCount"))), ("2", canon_int(dims))]
        missing = [] if index is not None else ["indexs"]
        if dims == 1 and p.opt_int("dims") is not None:
            params.append(("3", canon_int(p.opt_int("dims"))))  # a pointer to ints prints its first
        else:
            missing.append("dims")
        params.append(("4", canon_int(slices)))
        if slices:
            missing.append("slices")
        params.append(("6", canon_int(p.int("offset", "offset"))))
        return self._op("getitem", "bwd", dy, [dx], tuple(shapes), tuple(params), tuple(missing))

    def kthvalue(self, name: str, p: BlockParams) -> list[Event]:
        x = need_tensor(p, "inputDesc", "inputDesc")
        params = (("k", canon_int(p.int("k", "k"))), ("d", _dim(p.int("dim", "dim"), x.rank)),
                  ("K", "1" if _flag(p, "keepDim") else "0"), ("c", _contiguous(x)))
        return self._op("kthvalue", "fwd", x, [opt_tensor(p, "outputDesc")], (("dim-lengths", x.lens),), params)

    def prelu(self, name: str, p: BlockParams) -> list[Event]:
        x, w = need_tensor(p, "inputDesc", "inputDesc"), need_tensor(p, "weightDesc", "weightDesc")
        return self._op("prelu", "bwd", x, [w], (("input", x.lens),), (("P", canon_int(math.prod(w.lens))),))

    def rope(self, name: str, p: BlockParams) -> list[Event]:
        backward = name.endswith("Backward")
        x = need_tensor(p, "dyDesc" if backward else "xDesc", "dyDesc" if backward else "xDesc")
        return self._op("rope", "bwd" if backward else "fwd", x, [opt_tensor(p, "cosDesc")], (("input", x.lens),))

    def glu(self, name: str, p: BlockParams) -> list[Event]:
        x = need_tensor(p, "inputDesc", "inputDesc")
        return self._op("glu", "bwd" if name.endswith("Backward") else "fwd", x, [],
                        (("dim_lengths", x.lens),), (("R", _dim(p.int("dim", "dim"), x.rank)),))

    def marginloss(self, name: str, p: BlockParams) -> list[Event]:
        x = need_tensor(p, "inputDesc", "inputDesc")
        reduction = _LOSS_REDUCTIONS.get(p.int("reduction", "reduction"))
        if reduction is None:
            raise BlockError(f"loss reduction {p.get('reduction')} is not none, sum or mean")
        op = "softmarginloss" if "SoftMargin" in name else "multimarginloss"
        params = [("C", _contiguous(x)), ("R", reduction)]
        if op == "softmarginloss" and _contiguous(x) == "0":
            params.append(("S", "x".join(map(str, x.effective_strides))))
        return self._op(op, "bwd" if name.endswith("Backward") else "fwd", x, [opt_tensor(p, "targetDesc")],
                        (("dim", x.lens),), tuple(params))

    # ------------------------------------------------------------------ optimizers

    def adam(self, name: str, p: BlockParams) -> list[Event]:
        x = need_tensor(p, "paramDesc", "paramDesc", "paramInDesc")
        params = [(k, canon_float(p.float(what, what))) for k, what in (
            ("l", "lr"), ("1", "beta1"), ("2", "beta2"), ("e", "eps"), ("W", "weight_decay"))]
        transformers = name.startswith("miopenTransformers")
        if transformers:
            params.append(("c", "1" if _flag(p, "correct_bias") else "0"))
        else:
            params += [("a", "1" if _flag(p, "amsgrad") else "0"), ("m", "1" if _flag(p, "maximize") else "0")]
            if _flag(p, "adamw"):
                params.append(("adamw", "1"))
        if p.nonnull("gradScaleDesc") or p.nonnull("foundInfDesc"):
            params.append(("amp", "1"))
        return self._op("transformersadamw" if transformers else "adam", "fwd", x, [opt_tensor(p, "gradDesc")],
                        (("param", x.lens),), tuple(params))

    # ------------------------------------------------------------------ tensorop, dropout, ctc

    def tensorop(self, name: str, p: BlockParams) -> list[Event]:
        if name == "miopenOpTensor":
            x = need_tensor(p, "aDesc", "aDesc")
            op = p.int("tensorOp", "tensorOp")
            if not 0 <= op <= 3:
                raise BlockError(f"tensorOp {op} is not add, mul, min or max")
            params: tuple = (("o", canon_int(op + 2)),)
        elif name == "miopenTransformTensor":  # logged by MIOpen as an add of x and the prior y
            x = need_tensor(p, "xDesc", "xDesc")
            params = (("o", "2"),)
        else:
            x = need_tensor(p, "yDesc", "yDesc")
            params = (("o", "0" if name == "miopenSetTensor" else "1"),)
        return self._op("tensorop", "fwd", x, [], (("input", x.lens),), params, (), [
            "the scaling factors are printed as addresses in the trace: the driver's defaults stand"])

    def set_dropout(self, name: str, p: BlockParams) -> list[Event]:
        try:
            self._dropout = (p.float("dropout", "dropout"), 1 if _flag(p, "use_mask") else 0)
        except BlockError:
            pass
        return []

    def dropout(self, name: str, p: BlockParams) -> list[Event]:
        backward = name.endswith("Backward")
        x = need_tensor(p, "dxDesc" if backward else "xDesc", "dxDesc" if backward else "xDesc")
        warnings: list[str] = []
        if self._dropout is None:
            params: tuple = ()
            missing: tuple = ("dropout",)
            warnings.append("no miopenSetDropoutDescriptor in the trace: the rate is not known")
        else:
            params, missing = (("p", canon_float(self._dropout[0])), ("e", canon_int(self._dropout[1]))), ()
            warnings.append("dropout rate taken from the last miopenSetDropoutDescriptor")
        return self._op("dropout", "bwd" if backward else "fwd", x, [], (("input_dim", x.lens),), params, missing,
                        warnings)

    def set_ctc(self, name: str, p: BlockParams) -> list[Event]:
        try:
            self._ctc = (p.int("blank", "blank_label_id"), 1 if _flag(p, "apply_softmax_layer") else 0)
        except BlockError:
            pass
        return []

    def ctc(self, name: str, p: BlockParams) -> list[Event]:
        probs = need_tensor(p, "probsDesc", "probsDesc")
        if probs.rank != 3:
            raise BlockError(f"probsDesc has {probs.rank} dimensions, not (steps, batch, classes)")
        steps, batch, classes = probs.lens
        warnings: list[str] = []
        blank, softmax = self._ctc if self._ctc is not None else (0, 1)
        if self._ctc is None:
            warnings.append("no miopenSetCTCLossDescriptor in the trace: blank label 0 and softmax assumed")
        params = [("a", canon_int(p.int("algo", "algo"))), ("b", canon_int(blank)), ("c", canon_int(classes - 1)),
                  ("m", canon_int(softmax)), ("n", canon_int(batch))]
        missing: list[str] = []
        for key, what, arg in (("k", "input_len", "inputLengths"), ("l", "label_len", "labelLengths")):
            first = p.opt_int(arg)   # a pointer to ints prints its first
            if batch == 1 and first is not None:
                params.append((key, canon_int(first)))
            else:
                missing.append(what)
        return self._op("ctc", "fwd", probs, [opt_tensor(p, "gradientsDesc")], (("probs", probs.lens),),
                        tuple(params), tuple(missing), warnings)


def op_handlers(decoder) -> dict[str, Handler]:
    """The handlers for ``decoder`` (a ``TraceDecoder``): API name -> handler."""
    return OpTrace(decoder).handlers()

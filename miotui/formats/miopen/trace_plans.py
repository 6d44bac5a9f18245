"""Fusion plans and Find-2.0 problems in an API trace: calls that build an object across
several blocks (``miopenCreateFusionPlan``, ``miopenCreateOp*``, ``miopenCompileFusionPlan``,
``miopenExecuteFusionPlan``; ``miopenCreateConvProblem``, ``miopenSetProblemTensorDescriptor``,
``miopenFindSolutions``, ``miopenRunSolution``), remembered by the address MIOpen prints
for them.

``FusionPlans`` and ``Find2Problems`` are parts ``TraceDecoder`` owns, each with the state of
its objects; the decoder gives them what of its own they use (its data-type memory and its
convolution and activation decoding) as functions, and registers their handlers.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

from miotui.events import Event, Sighting
from miotui.formats.miopen.grammar import (
    ACTIVATION_NAMES,
    ActivDesc,
    ConvDesc,
    DescriptorError,
    TensorArg,
    TensorDesc,
    parse_activ,
    parse_conv,
    parse_tensor_args,
)
from miotui.formats.miopen.trace_params import BlockError, BlockParams, make_problem, nchw_2d, need_tensor, opt_tensor
from miotui.problems import FUSION_ACTIV_DEFAULTS, ActivationProblem, FusionProblem

SOURCE = "api-trace"
#: miopenProblemDirection_t
PROBLEM_DIRECTIONS = {0: "fwd", 1: "bwd", 2: "wrw"}

FUSION_KINDS = {
    "miopenCreateOpConvForward": "conv", "miopenCreateOpBiasForward": "bias",
    "miopenCreateOpActivationForward": "activ", "miopenCreateOpBatchNormInference": "bn_infer",
    "miopenCreateOpActivationBackward": "activ_bwd", "miopenCreateOpBatchNormForward": "bn_train",
    "miopenCreateOpBatchNormBackward": "bn_bwd",
}
#: GetFusionMode (driver_arguments.cpp): op sequence -> CBAInfer mode.
FUSION_PLAN_MODES = {("conv", "bias", "bn_infer", "activ"): 0, ("conv", "bn_infer", "activ"): 1,
                 ("bn_infer", "activ"): 2, ("conv", "bn_infer"): 3, ("conv", "bias", "activ"): 4,
                 ("conv", "activ"): 5, ("conv", "bias"): 6}
TENSOR_ARG_IDS = {1: "ConvX", 2: "ConvW", 3: "ConvY", 37: "ActivX", 38: "ActivY", 39: "ActivDX",
                   40: "ActivDY"}


def _activ_fields(a: ActivDesc) -> dict[str, Any]:
    return {"activ_mode": a.mode, "activ_alpha": a.alpha, "activ_beta": a.beta, "activ_gamma": a.gamma}


@dataclass
class FusionPlan:
    """A fusion plan being assembled from miopenCreateFusionPlan / miopenCreateOp* blocks."""

    input: Optional[TensorDesc]
    ops: list[str] = field(default_factory=list)
    conv: Optional[ConvDesc] = None
    weights: Optional[TensorDesc] = None
    bn_mode: str = "spatial"
    #: activation mode (miopenCreateOpActivationForward) and coefficients (miopenSetOpArgsActivForward)
    activ: ActivDesc = ActivDesc(**{k.removeprefix("activ_"): v for k, v in FUSION_ACTIV_DEFAULTS.items()})


@dataclass
class Find2Problem:
    """A Find-2.0 problem: operator descriptor, direction and tensors by argument id."""

    kind: str                      # conv | activ
    desc: object                   # ConvDesc | ActivDesc | None
    direction: int
    tensors: dict[str, TensorDesc] = field(default_factory=dict)



class TraceDecoding:
    """What of ``TraceDecoder`` the plan handlers use, as its bound methods: a tensor's data
    type from the decoder's memory, a convolution descriptor of a block, a convolution's
    problem, an activation descriptor of a block."""

    __slots__ = ("infer_dtype", "conv_desc", "conv_problem", "activ_desc")

    def __init__(self, infer_dtype: Callable, conv_desc: Callable, conv_problem: Callable,
                 activ_desc: Callable) -> None:
        self.infer_dtype, self.conv_desc, self.conv_problem, self.activ_desc = (
            infer_dtype, conv_desc, conv_problem, activ_desc)


class FusionPlans:
    """Fusion plans being built (``miopenCreateFusionPlan``, ``miopenCreateOp*``), the last
    64 kept, and the blocks that compile or execute one; plus the one-call
    ``miopenConvolutionBiasActivationForward``, the same fusion."""

    def __init__(self, decoding: TraceDecoding) -> None:
        self._decoding = decoding
        self._plan: Optional[FusionPlan] = None
        self._plans: deque[FusionPlan] = deque(maxlen=64)

    def handlers(self) -> dict[str, Callable[[str, BlockParams], list[Event]]]:
        h = {"miopenCreateFusionPlan": self._fusion_create, "miopenCompileFusionPlan": self._fusion_compile,
             "miopenExecuteFusionPlan": self._fusion_execute,
             "miopenConvolutionBiasActivationForward": self._cba,
             "miopenSetOpArgsActivForward": self._fusion_activ_args}
        for n in FUSION_KINDS:
            h[n] = self._fusion_op
        return h

    def _fusion_create(self, name: str, p: BlockParams) -> list[Event]:
        self._plan = FusionPlan(opt_tensor(p, "inputDesc"))
        self._plans.append(self._plan)
        return []

    def _fusion_op(self, name: str, p: BlockParams) -> list[Event]:
        plan = self._plan
        if plan is None:
            plan = self._plan = FusionPlan(None)
            self._plans.append(plan)
        kind = FUSION_KINDS[name]
        plan.ops.append(kind)
        if kind == "conv":
            try:
                plan.conv = self._decoding.conv_desc(p)
            except BlockError:
                plan.conv = None
            plan.weights = opt_tensor(p, "wDesc")
        elif kind.startswith("bn"):
            m = p.opt_int("bn_mode")
            if m in (0, 1):
                plan.bn_mode = "spatial" if m == 1 else "per_activation"
        elif kind == "activ":
            m = p.opt_int("mode")
            if m is None:  # printed as its enum name
                name = (p.get("mode") or "").strip()
                m = ACTIVATION_NAMES.index(name) if name in ACTIVATION_NAMES else None
            if m is not None:
                plan.activ = replace(plan.activ, mode=m)
        return []

    def _fusion_activ_args(self, name: str, p: BlockParams) -> list[Event]:
        """miopenSetOpArgsActivForward: the coefficients of the plan's activation.  The
        op handle is not tied to a plan in the log; the latest plan with an activation
        is the one being set up (MIOpen's own tests and drivers do one plan at a time)."""
        plan = next((pl for pl in reversed(self._plans) if "activ" in pl.ops), None)
        if plan is None:
            return []
        try:
            plan.activ = replace(plan.activ, alpha=p.float("activAlpha", "activAlpha"),
                                 beta=p.float("activBeta", "activBeta"), gamma=p.float("activGamma", "activGamma"))
        except BlockError:
            pass
        return []

    def _fusion_problem(self, plan: FusionPlan, x: TensorDesc, warnings: list[str],
                        y: Optional[TensorDesc] = None) -> FusionProblem:
        mode = FUSION_PLAN_MODES.get(tuple(plan.ops))
        if mode is None:
            raise BlockError(f"fusion plan {'+'.join(plan.ops) or '(empty)'} is not a CBAInfer mode")
        if x.rank != 4:
            raise BlockError(f"fusion input has {x.rank} dimensions; CBAInfer is 2-D only")
        n, c, hw = x.lens[0], x.lens[1], x.lens[2:]
        dtype = self._decoding.infer_dtype(x, [y, plan.weights], warnings)
        if mode in (0, 1, 3, 4, 5, 6):
            if plan.conv is None or plan.weights is None:
                raise BlockError("fusion plan's convolution descriptor or weights were not readable")
            cp = self._decoding.conv_problem("fwd", x, plan.weights, plan.conv, y, warnings, dtype)
            if cp.mode != "conv" or cp.ndim != 2:
                raise BlockError("CBAInfer fusion needs a plain 2-D convolution")
            return make_problem(lambda: FusionProblem(mode, dtype, n, c, hw, k=cp.k, filter=cp.filter,
                                                  pads=cp.pads, strides=cp.strides, dilations=cp.dilations,
                                                  groups=cp.groups, bn_mode=plan.bn_mode,
                                                  **_activ_fields(plan.activ)))  # type: ignore
        return make_problem(lambda: FusionProblem(mode, dtype, n, c, hw, bn_mode=plan.bn_mode,
                                              **_activ_fields(plan.activ)))  # type: ignore

    def _fusion_compile(self, name: str, p: BlockParams) -> list[Event]:
        plan = self._plan
        if plan is None or plan.input is None:
            return []
        warnings: list[str] = []
        try:
            problem = self._fusion_problem(plan, plan.input, warnings)
        except BlockError:
            return []  # compiling an unsupported plan is not a layer we can describe
        return [Sighting(problem, "mention", SOURCE, tuple(warnings))]

    def _fusion_execute(self, name: str, p: BlockParams) -> list[Event]:
        x = need_tensor(p, "inputDesc", "inputDesc")
        y = opt_tensor(p, "outputDesc")
        warnings: list[str] = []
        # Plans print as nothing, so pick the most recent plan built for this input;
        # among several, prefer one whose output matches outputDesc.
        candidates = [pl for pl in reversed(self._plans) if pl.input is not None and pl.input.lens == x.lens]
        if not candidates:
            if self._plan is None:
                raise BlockError("no miopenCreateFusionPlan seen for this input")
            candidates = [self._plan]
            warnings.append("fusion plan input differs from inputDesc; used the last plan")
        failure = ""
        for plan in candidates:
            w: list[str] = []
            try:
                problem = self._fusion_problem(plan, x, w, y)
            except BlockError as e:
                failure = failure or str(e)
                continue
            if y is None or problem.output_shape == y.lens or plan is candidates[-1]:
                return [Sighting(problem, "execution", SOURCE, tuple(warnings + w))]
        raise BlockError(failure or "no matching fusion plan")

    def _cba(self, name: str, p: BlockParams) -> list[Event]:
        """miopenConvolutionBiasActivationForward: a conv+bias+activation fusion (-F 4)."""
        x, w = need_tensor(p, "xDesc", "xDesc"), need_tensor(p, "wDesc", "wDesc")
        conv = self._decoding.conv_desc(p)
        y = opt_tensor(p, "yDesc", "ydesc")
        if x.rank != 4:
            raise BlockError(f"xDesc has {x.rank} dimensions; CBAInfer is 2-D only")
        warnings: list[str] = []
        plan = FusionPlan(x, ["conv", "bias", "activ"], conv, w)
        if p.get("activationDesc", "activDesc") is not None:
            plan.activ = self._decoding.activ_desc(p, warnings)
        problem = self._fusion_problem(plan, x, warnings, y)
        annotations = []
        algo = p.opt_int("algo")
        if algo is not None:
            annotations.append(("algorithm", str(algo)))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings), tuple(annotations))]


class Find2Problems:
    """Find-2.0 problems (``miopenCreate*Problem``, ``miopenSetProblemTensorDescriptor``) and
    solutions by the address MIOpen prints for them, and the blocks that find or run one."""

    def __init__(self, decoding: TraceDecoding) -> None:
        self._decoding = decoding
        self._f2_problems: "OrderedDict[str, Find2Problem]" = OrderedDict()
        self._f2_pending: deque[Find2Problem] = deque(maxlen=64)
        self._f2_solutions: "OrderedDict[str, Find2Problem]" = OrderedDict()
        self._f2_last_found: Optional[Find2Problem] = None

    def handlers(self) -> dict[str, Callable[[str, BlockParams], list[Event]]]:
        return {
            "miopenCreateConvProblem": self._f2_create,
            "miopenCreateActivationProblem": self._f2_create,
            "miopenSetProblemTensorDescriptor": self._f2_set_tensor,
            "miopenFindSolutions": self._f2_find,
            "miopenGetSolutionTime": self._f2_solution_seen,
            "miopenGetSolutionWorkspaceSize": self._f2_solution_seen,
            "miopenGetSolutionSolverId": self._f2_solution_seen,
            "miopenGetSolutionSize": self._f2_solution_seen,
            "miopenSaveSolution": self._f2_solution_seen,
            "miopenRunSolution": self._f2_run,
            "miopenDestroyProblem": self._f2_destroy,
        }

    def _f2_create(self, name: str, p: BlockParams) -> list[Event]:
        """miopenCreate*Problem prints the *old* value of the output handle, so the new
        problem's address is learnt from the next miopenSetProblemTensorDescriptor."""
        direction = p.opt_int("direction")
        if direction is None:
            direction = 0
        desc: object = None
        text = p.get("operatorDesc")
        kind = "conv" if name == "miopenCreateConvProblem" else "activ"
        if text is not None:
            try:
                desc = parse_conv(text) if kind == "conv" else parse_activ(text)
            except DescriptorError:
                desc = None
        self._f2_pending.append(Find2Problem(kind, desc, direction))
        return []

    def _f2_lookup(self, addr: Optional[str], create: bool) -> Optional[Find2Problem]:
        if not addr:
            return None
        prob = self._f2_problems.get(addr)
        if prob is None and create:
            prob = self._f2_pending.popleft() if self._f2_pending else Find2Problem("conv", None, 0)
            if len(self._f2_problems) >= 1024:
                self._f2_problems.popitem(last=False)
            self._f2_problems[addr] = prob
        return prob

    def _f2_set_tensor(self, name: str, p: BlockParams) -> list[Event]:
        prob = self._f2_lookup(p.get("problem"), create=True)
        tag = TENSOR_ARG_IDS.get(p.opt_int("id") if p.get("id") else -1)
        desc = opt_tensor(p, "descriptor")
        if prob is not None and tag and desc is not None:
            prob.tensors[tag] = desc
        return []

    def _f2_destroy(self, name: str, p: BlockParams) -> list[Event]:
        addr = p.get("problem")
        if addr:
            self._f2_problems.pop(addr, None)
        return []

    def _f2_event(self, prob: Find2Problem, role: str, tensors: dict[str, TensorDesc],
                  warnings: list[str]) -> Event:
        if prob.kind == "conv":
            direction = PROBLEM_DIRECTIONS.get(prob.direction)
            if direction is None:
                raise BlockError(f"convolution problem direction {prob.direction} is not fwd/bwd/wrw")
            if not isinstance(prob.desc, ConvDesc):
                raise BlockError("the problem's convolution descriptor was not readable")
            x, w, y = tensors.get("ConvX"), tensors.get("ConvW"), tensors.get("ConvY")
            if x is None or w is None:
                raise BlockError("the problem's ConvX/ConvW tensors are unknown")
            problem = self._decoding.conv_problem(direction, x, w, prob.desc, y, warnings)
            return Sighting(problem, role, SOURCE, tuple(warnings))
        if not isinstance(prob.desc, ActivDesc):
            raise BlockError("the problem's activation descriptor was not readable")
        backward = prob.direction == 1
        x = tensors.get("ActivDX" if backward else "ActivX") or tensors.get("ActivX")
        if x is None:
            raise BlockError("the problem's activation tensors are unknown")
        n, c, hw = nchw_2d(x, "ActivX", warnings)
        dtype = self._decoding.infer_dtype(x, tensors.values(), warnings)
        d = prob.desc
        problem = make_problem(lambda: ActivationProblem("bwd" if backward else "fwd", dtype, n, c, hw,
                                                     d.mode, d.alpha, d.beta, d.gamma))
        return Sighting(problem, role, SOURCE, tuple(warnings))

    def _f2_find(self, name: str, p: BlockParams) -> list[Event]:
        addr = p.get("problem")
        prob = self._f2_lookup(addr, create=False)
        if prob is None:
            raise BlockError(f"problem {addr} was not set up in the trace (miopenCreate*Problem / "
                        f"miopenSetProblemTensorDescriptor)")
        self._f2_last_found = prob
        return [self._f2_event(prob, "find", dict(prob.tensors), [])]

    def _f2_solution_seen(self, name: str, p: BlockParams) -> list[Event]:
        """Solutions are printed by address only: one queried right after a Find belongs to it."""
        addr = p.get("solution")
        if addr and self._f2_last_found is not None and addr not in self._f2_solutions:
            if len(self._f2_solutions) >= 4096:
                self._f2_solutions.popitem(last=False)
            self._f2_solutions[addr] = self._f2_last_found
        return []

    def _f2_run(self, name: str, p: BlockParams) -> list[Event]:
        addr = p.get("solution")
        args: tuple[TensorArg, ...] = ()
        text = p.get("tensors_vector")
        if text is not None:
            try:
                args = parse_tensor_args(text)
            except DescriptorError:
                args = ()
        given = {a.tag: a.desc for a in args if a.desc is not None}
        warnings: list[str] = []
        prob = self._f2_solutions.get(addr) if addr else None
        if prob is not None and any(tag in prob.tensors and prob.tensors[tag].lens != d.lens
                                    for tag, d in given.items()):
            prob = None  # the address guess contradicts the tensors passed: match by tensors instead
        if prob is None:
            prob = self._f2_match(given, warnings)
        if prob is None:
            raise BlockError(f"solution {addr} cannot be tied to a problem in the trace")
        tensors = dict(prob.tensors)
        tensors.update(given)
        return [self._f2_event(prob, "execution", tensors, warnings)]

    def _f2_match(self, given: dict[str, TensorDesc], warnings: list[str]) -> Optional[Find2Problem]:
        """An unlinked solution: the known problem whose tensors equal the ones passed
        (the last one found first).  Tensors alone cannot tell fwd from bwd/wrw."""
        if not given:
            return None
        known = list(reversed(self._f2_problems.values()))
        if self._f2_last_found is not None:
            known.insert(0, self._f2_last_found)
        matches = [pr for pr in known if pr.tensors and all(
            pr.tensors.get(tag) is None or pr.tensors[tag].lens == d.lens for tag, d in given.items())
            and any(tag in pr.tensors for tag in given)]
        if not matches:
            return None
        if len({(m.kind, m.direction) for m in matches}) > 1:
            warnings.append("solution not linked to a Find; direction taken from the last matching problem")
        return matches[0]



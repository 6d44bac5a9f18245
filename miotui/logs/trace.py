"""Decode MIOpen API-trace blocks (``MIOPEN_ENABLE_LOGGING=1``) into problems.

One block is the header ``miopenStatus_t miopenConvolutionForward(...){`` plus its
``name = value`` lines (``miopen_formats.md`` §2).  A block shows descriptors by their
contents but never the element type, so the decoder is *stateful per log*: it remembers
the ``dataType`` of earlier ``miopenSet*TensorDescriptor`` calls (keyed by lengths and
strides), the last pooling/activation/LRN descriptor set-up, fusion plans being built,
and Find-2.0 problems and solutions by the address MIOpen prints for them.

Convolutions are described exactly as MIOpen's own ``Command`` line would describe the
same call (§3.2, §9): x is the API's x for forward and backward-weights and the API's
dx for backward-data; K is ``w[0]``, or ``w[1]*G`` for a transposed convolution; the
layouts come from the strides the way ``TensorDescriptor::GetLayout_str`` derives them.
So an API block and the Command line it causes give the same ``ConvProblem``.

Speed: a training log repeats identical blocks every iteration.  Descriptor texts are
parsed once (``miotui.logs.grammar`` memoises by exact text) and whole decoded blocks are
cached by (function, parameters with addresses normalised), for the blocks whose result
depends only on their text and the remembered data types; the cache is dropped whenever
that remembered state changes.

Nothing here raises on bad input: a modelled operation that cannot be decoded becomes
``Undecoded(reason)``; blocks we do not model (internal ``miopen::`` functions, GEMM
lambdas, tensor ops, RNNs...) give ``[]``.
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Optional, Sequence

from miotui.logs.events import Event, Sighting, Undecoded
from miotui.logs.grammar import (ACTIVATION_NAMES, ActivDesc, ConvDesc, DescriptorError, LRNDesc, PoolDesc, TensorArg,
                                 TensorDesc, is_null_pointer, is_pointer, layout_strides,
                                 packed_strides, parse_activ, parse_conv, parse_int_vector, parse_lrn,
                                 parse_number, parse_pool, parse_tensor, parse_tensor_args)
from miotui.problems import (FUSION_ACTIV_DEFAULTS, ActivationProblem, BatchNormProblem, ConvProblem, FusionProblem,
                             LRNProblem, PoolProblem, Problem, ProblemError, SoftmaxProblem,
                             default_layout)

__all__ = ["TraceDecoder", "api_name", "DTYPE_GUESS_WARNING", "DATA_TYPES"]

SOURCE = "api-trace"

#: miopenDataType_t -> our dtype names (§2.2).  Int32/Int64 tensors are not layers we run.
DATA_TYPES = {0: "fp16", 1: "fp32", 2: "unknown", 3: "int8", 4: "int8", 5: "bf16", 6: "fp64",
              7: "fp8", 8: "bf8", 9: "unknown"}
#: miopenTensorLayout_t (tensor.hpp) for miopenSetNdTensorDescriptorWithLayout.
_TENSOR_LAYOUTS = {0: "NCHW", 1: "NHWC", 7: "NCDHW", 8: "NDHWC"}

DTYPE_GUESS_WARNING = ("data type not in the trace (no earlier miopenSet*TensorDescriptor for this "
                       "tensor); guessed fp32")

_DTYPE_MEMORY = 4096
_BLOCK_CACHE = 8192


class BlockError(Exception):
    """Raised inside a handler: the block is a modelled op that cannot be decoded."""


# ----------------------------------------------------------------------------- header

_HEADER_CACHE: dict[str, str] = {}
_NAME_RE = re.compile(r"([A-Za-z_~][\w:~<>]*)\s*$")


def api_name(header: str) -> str:
    """The traced function's name, ``_impl`` stripped, or "" for a header that is not a
    public MIOpen API (C++ internals, lambdas, anything not starting with ``miopen``)."""
    hit = _HEADER_CACHE.get(header)
    if hit is not None:
        return hit
    name = ""
    paren = header.find("(")
    if paren > 0:
        m = _NAME_RE.search(header[:paren])
        if m:
            token = m.group(1)
            if "::" not in token and token.startswith("miopen"):
                name = token[:-5] if token.endswith("_impl") else token
    if len(_HEADER_CACHE) > 4096:
        _HEADER_CACHE.clear()
    _HEADER_CACHE[header] = name
    return name


# ----------------------------------------------------------------------------- params

class BlockParams:
    """The block's ``name = value`` pairs; lookups by any of several spellings
    (parameter names changed between versions: ``u``/``stride_h``, ``yDesc``/``ydesc``)."""

    __slots__ = ("d", "lower")

    def __init__(self, params: Sequence[tuple[str, str]]):
        d: dict[str, str] = {}
        for item in params:
            try:
                k, v = item
            except (TypeError, ValueError):
                continue
            k = str(k).strip()
            if k and k not in d:
                d[k] = str(v).strip()
        self.d = d
        self.lower = {k.lower(): v for k, v in d.items()}

    def get(self, *names: str) -> Optional[str]:
        for n in names:
            v = self.d.get(n)
            if v is not None:
                return v
        for n in names:
            v = self.lower.get(n.lower())
            if v is not None:
                return v
        return None

    def need(self, what: str, *names: str) -> str:
        v = self.get(*names)
        if v is None:
            raise BlockError(f"no {what} ({' / '.join(names)}) in the block")
        return v

    def int(self, what: str, *names: str) -> int:
        v = self.need(what, *names)
        try:
            return int(v, 10)
        except ValueError:
            raise BlockError(f"{what} is not an integer: {v[:40]!r}") from None

    def opt_int(self, *names: str) -> Optional[int]:
        v = self.get(*names)
        if v is None:
            return None
        try:
            return int(v, 10)
        except ValueError:
            return None

    def float(self, what: str, *names: str) -> float:
        v = self.need(what, *names)
        try:
            return parse_number(v)
        except DescriptorError:
            raise BlockError(f"{what} is not a number: {v[:40]!r}") from None

    def nonnull(self, *names: str) -> bool:
        """True when the pointer argument is present and not null."""
        v = self.get(*names)
        return v is not None and v != "" and not is_null_pointer(v)


def _normalise(value: str) -> str:
    """Cache-key form of a value: addresses change every iteration, only null-ness matters."""
    v = value.strip()
    if v.startswith("0x") or (len(v) == 16 and is_pointer(v)):
        return "<ptr>" if not is_null_pointer(v) else "nullptr"
    return v


_PAIR_KEYS: dict[tuple[str, str], Optional[tuple[str, str]]] = {}
_PAIR_KEYS_LIMIT = 200_000


def _pair_key(pair: tuple[str, str]) -> Optional[tuple[str, str]]:
    """Cache-key form of one (name, value) parameter, memoised: the scanner hands the same
    tuple object for every repeat of a line, so most calls are one dict lookup."""
    key = _PAIR_KEYS.get(pair)
    if key is None:
        name, value = pair
        key = None if name == "handle" else (name, _normalise(value))
        if len(_PAIR_KEYS) >= _PAIR_KEYS_LIMIT:
            _PAIR_KEYS.clear()
        _PAIR_KEYS[pair] = key
    return key


# ----------------------------------------------------------------------------- tensors

def need_tensor(p: BlockParams, what: str, *names: str) -> TensorDesc:
    text = p.need(what, *names)
    try:
        t = parse_tensor(text)
    except DescriptorError as e:
        raise BlockError(f"{what}: {e}") from None
    if not t.lens:
        raise BlockError(f"{what} is an empty (unset) tensor descriptor")
    if any(v <= 0 for v in t.lens):
        raise BlockError(f"{what} has a non-positive length: {t.lens}")
    return t


def opt_tensor(p: BlockParams, *names: str) -> Optional[TensorDesc]:
    text = p.get(*names)
    if text is None or is_null_pointer(text):
        return None
    try:
        t = parse_tensor(text)
    except DescriptorError:
        return None
    return t if t.lens and all(v > 0 for v in t.lens) else None


def _layout(t: Optional[TensorDesc], ndim: int, what: str, warnings: list[str]) -> str:
    """Storage layout of a 4-D/5-D tensor as MIOpen names it, with a warning when the
    driver cannot reproduce it (an odd axis order, or padded/non-packed strides)."""
    default = default_layout(ndim)
    if t is None or t.strides is None:
        return default
    order = t.storage_order
    allowed = ("NCHW", "NHWC") if ndim == 2 else ("NCDHW", "NDHWC")
    if order not in allowed:
        warnings.append(f"{what} strides {list(t.strides)} give layout {order or '?'}, which MIOpenDriver "
                        f"cannot express; assumed {default}")
        return default
    if t.packed is False:
        warnings.append(f"{what} is not packed (strides {list(t.strides)}); the driver command uses "
                        f"packed {order}")
    return order


def _cast_warning(t: Optional[TensorDesc], what: str, warnings: list[str]) -> None:
    if t is not None and t.cast_type:
        warnings.append(f"{what} has cast type {t.cast_type}, which this problem does not carry")


def _spatial_of(t: TensorDesc, what: str) -> tuple[int, int, tuple[int, ...]]:
    """N, C and (D,)H,W of a 4-D or 5-D tensor."""
    if t.rank not in (4, 5):
        raise BlockError(f"{what} has {t.rank} dimensions; expected 4 or 5")
    return t.lens[0], t.lens[1], t.lens[2:]


def _nchw_2d(t: TensorDesc, what: str, warnings: list[str]) -> tuple[int, int, tuple[int, int]]:
    """N, C, (H, W) for problems that are 2-D only (activation, LRN, softmax): lower ranks
    are padded with 1s and a 5-D tensor's depth is folded into H, as element-wise ops allow."""
    lens = t.lens
    if len(lens) == 4:
        return lens[0], lens[1], (lens[2], lens[3])
    if len(lens) == 5:
        warnings.append(f"{what} is 5-D {list(lens)}; depth folded into H")
        return lens[0], lens[1], (lens[2] * lens[3], lens[4])
    if 1 <= len(lens) < 4:
        padded = tuple(lens) + (1,) * (4 - len(lens))
        warnings.append(f"{what} is {len(lens)}-D {list(lens)}; read as {list(padded)}")
        return padded[0], padded[1], (padded[2], padded[3])
    raise BlockError(f"{what} has {len(lens)} dimensions")


def make_problem(make: Callable[[], Problem]) -> Problem:
    try:
        return make()
    except ProblemError as e:
        raise BlockError(str(e)) from None
    except (TypeError, ValueError, OverflowError, ZeroDivisionError) as e:
        raise BlockError(f"values do not form a valid problem: {e}") from None


# ----------------------------------------------------------------------------- op tables

#: conv API -> (direction, role).  _CONV_TENSORS gives its x/w/y parameter names in §9 step 3's
#: sense: the tensors MIOpen's Command line describes the call by.
_X_FWD, _W_FWD, _Y_FWD = ("xDesc", "inputTensorDesc"), ("wDesc", "filterDesc"), ("yDesc", "ydesc")
_X_BWD, _W_BWD, _Y_BWD = ("dxDesc",), ("wDesc",), ("dyDesc",)
_X_WRW, _W_WRW, _Y_WRW = ("xDesc",), ("dwDesc",), ("dyDesc",)
_CONV_APIS: dict[str, tuple[str, str]] = {}
for _dir, _names in (
        ("fwd", ("miopenConvolutionForward", "miopenConvolutionForwardImmediate",
                 "miopenFindConvolutionForwardAlgorithm", "miopenConvolutionForwardGetWorkSpaceSize",
                 "miopenConvolutionForwardGetSolutionCount", "miopenConvolutionForwardGetSolution",
                 "miopenConvolutionForwardGetSolutionWorkspaceSize",
                 "miopenConvolutionForwardCompileSolution", "miopenGetConvolutionForwardOutputDim",
                 "miopenGetConvolutionNdForwardOutputDim")),
        ("bwd", ("miopenConvolutionBackwardData", "miopenConvolutionBackwardDataImmediate",
                 "miopenFindConvolutionBackwardDataAlgorithm",
                 "miopenConvolutionBackwardDataGetWorkSpaceSize",
                 "miopenConvolutionBackwardDataGetSolutionCount", "miopenConvolutionBackwardDataGetSolution",
                 "miopenConvolutionBackwardDataGetSolutionWorkspaceSize",
                 "miopenConvolutionBackwardDataCompileSolution")),
        ("wrw", ("miopenConvolutionBackwardWeights", "miopenConvolutionBackwardWeightsImmediate",
                 "miopenFindConvolutionBackwardWeightsAlgorithm",
                 "miopenConvolutionBackwardWeightsGetWorkSpaceSize",
                 "miopenConvolutionBackwardWeightsGetSolutionCount",
                 "miopenConvolutionBackwardWeightsGetSolution",
                 "miopenConvolutionBackwardWeightsGetSolutionWorkspaceSize",
                 "miopenConvolutionBackwardWeightsCompileSolution"))):
    for _n in _names:
        if _n.startswith("miopenFind"):
            _role = "find"
        elif _n in ("miopenConvolutionForward", "miopenConvolutionBackwardData",
                    "miopenConvolutionBackwardWeights") or _n.endswith("Immediate"):
            _role = "execution"
        else:
            _role = "mention"
        _CONV_APIS[_n] = (_dir, _role)
_CONV_TENSORS = {"fwd": (_X_FWD, _W_FWD, _Y_FWD), "bwd": (_X_BWD, _W_BWD, _Y_BWD),
                 "wrw": (_X_WRW, _W_WRW, _Y_WRW)}
_CONV_DESC = ("convDesc", "conv_desc")
_API_DIRECTION_ID = {"fwd": 0, "bwd": 1, "wrw": 2}
_PROBLEM_DIRECTIONS = {0: "fwd", 1: "bwd", 2: "wrw"}

_BN_APIS = {
    "miopenBatchNormalizationForwardInference": "fwd_infer",
    "miopenBatchNormalizationForwardInference_V2": "fwd_infer",
    "miopenBatchNormalizationForwardTraining": "fwd_train",
    "miopenBatchNormalizationForwardTraining_V2": "fwd_train",
    "miopenBatchNormalizationBackward": "bwd",
    "miopenBatchNormalizationBackward_V2": "bwd",
}
_FUSION_KINDS = {
    "miopenCreateOpConvForward": "conv", "miopenCreateOpBiasForward": "bias",
    "miopenCreateOpActivationForward": "activ", "miopenCreateOpBatchNormInference": "bn_infer",
    "miopenCreateOpActivationBackward": "activ_bwd", "miopenCreateOpBatchNormForward": "bn_train",
    "miopenCreateOpBatchNormBackward": "bn_bwd",
}
#: GetFusionMode (driver_arguments.cpp): op sequence -> CBAInfer mode.
_FUSION_MODES = {("conv", "bias", "bn_infer", "activ"): 0, ("conv", "bn_infer", "activ"): 1,
                 ("bn_infer", "activ"): 2, ("conv", "bn_infer"): 3, ("conv", "bias", "activ"): 4,
                 ("conv", "activ"): 5, ("conv", "bias"): 6}
_TENSOR_ARG_IDS = {1: "ConvX", 2: "ConvW", 3: "ConvY", 37: "ActivX", 38: "ActivY", 39: "ActivDX",
                   40: "ActivDY"}


def _activ_fields(a: ActivDesc) -> dict[str, Any]:
    return {"activ_mode": a.mode, "activ_alpha": a.alpha, "activ_beta": a.beta, "activ_gamma": a.gamma}


@dataclass
class _Plan:
    """A fusion plan being assembled from miopenCreateFusionPlan / miopenCreateOp* blocks."""

    input: Optional[TensorDesc]
    ops: list[str] = field(default_factory=list)
    conv: Optional[ConvDesc] = None
    weights: Optional[TensorDesc] = None
    bn_mode: str = "spatial"
    #: activation mode (miopenCreateOpActivationForward) and coefficients (miopenSetOpArgsActivForward)
    activ: ActivDesc = ActivDesc(**{k.removeprefix("activ_"): v for k, v in FUSION_ACTIV_DEFAULTS.items()})


@dataclass
class _F2Problem:
    """A Find-2.0 problem: operator descriptor, direction and tensors by argument id."""

    kind: str                      # conv | activ
    desc: object                   # ConvDesc | ActivDesc | None
    direction: int
    tensors: dict[str, TensorDesc] = field(default_factory=dict)


# ----------------------------------------------------------------------------- decoder

class TraceDecoder:
    """Stateful decoder of one log's API-trace blocks (see the module docstring)."""

    def __init__(self, *, dtype_memory: int = _DTYPE_MEMORY, block_cache: int = _BLOCK_CACHE):
        self._dtype_limit = max(16, dtype_memory)
        self._cache_limit = max(16, block_cache)
        # (lens, strides) -> dtype and lens -> dtype, most recent last.
        self._dtypes_exact: "OrderedDict[tuple, str]" = OrderedDict()
        self._dtypes_lens: "OrderedDict[tuple, str]" = OrderedDict()
        self._last_pool: Optional[PoolDesc] = None
        self._pool_index_mode = 0
        self._last_activ: Optional[ActivDesc] = None
        self._last_lrn: Optional[LRNDesc] = None
        self._plan: Optional[_Plan] = None
        self._plans: deque[_Plan] = deque(maxlen=64)
        self._f2_problems: "OrderedDict[str, _F2Problem]" = OrderedDict()
        self._f2_pending: deque[_F2Problem] = deque(maxlen=64)
        self._f2_solutions: "OrderedDict[str, _F2Problem]" = OrderedDict()
        self._f2_last_found: Optional[_F2Problem] = None
        self._cache: dict[tuple, tuple[Event, ...]] = {}
        #: counters for benchmarks and tests
        self.stats = {"blocks": 0, "cache_hits": 0}
        #: bumped whenever remembered state that a pure block's events depend on changes
        #: (see ``is_pure``): a caller may reuse a pure block's events while it is unchanged
        self.state_version = 0
        self._handlers: dict[str, Callable[[str, BlockParams], list[Event]]] = self._build_handlers()
        self._cacheable: frozenset[str] = frozenset(
            list(_CONV_APIS) + list(_BN_APIS) + [
                "miopenPoolingForward", "miopenPoolingBackward", "miopenGetPoolingForwardOutputDim",
                "miopenGetPoolingNdForwardOutputDim", "miopenActivationForward",
                "miopenActivationBackward", "miopenLRNForward", "miopenLRNBackward",
                "miopenSoftmaxForward", "miopenSoftmaxBackward", "miopenSoftmaxForward_V2",
                "miopenSoftmaxBackward_V2", "miopenConvolutionBiasActivationForward"])

    # ------------------------------------------------------------------ public

    def decode_block(self, header: str, params: list[tuple[str, str]]) -> list[Event]:
        """Events for one API block; never raises."""
        try:
            return self._decode(header, params)
        except RecursionError:
            return [Undecoded("API block too deeply nested to decode")]
        except Exception as e:  # noqa: BLE001 - the contract is: never raise on log text
            name = ""
            try:
                name = api_name(header) if isinstance(header, str) else ""
            except Exception:  # noqa: BLE001
                pass
            return [Undecoded(f"{name or 'API block'}: internal decoder error: {type(e).__name__}: {e}")]

    def is_pure(self, header: str) -> bool:
        """Whether a block's events depend only on its parameters (pointers aside) and on
        ``state_version``, and decoding it changes no state: the blocks whose events this
        decoder caches itself, and which the scanner may reuse by their text."""
        return isinstance(header, str) and api_name(header) in self._cacheable

    def dtype_of(self, t: TensorDesc) -> Optional[str]:
        """The data type remembered for a tensor with these lengths (and strides), if any."""
        if t.strides is not None:
            hit = self._dtypes_exact.get((t.lens, t.strides))
            if hit is not None:
                return hit
        return self._dtypes_lens.get(t.lens)

    # ------------------------------------------------------------------ dispatch

    def _decode(self, header: str, params: list[tuple[str, str]]) -> list[Event]:
        if not isinstance(header, str):
            return []
        name = api_name(header)
        if not name:
            return []
        self.stats["blocks"] += 1
        handler = self._handlers.get(name)
        if handler is None:
            return []
        if name in self._cacheable:
            try:
                key = (name, tuple(map(_pair_key, params)))
            except (TypeError, ValueError, AttributeError):  # malformed params: decode uncached
                return self._run(handler, name, params)
            hit = self._cache.get(key)
            if hit is not None:
                self.stats["cache_hits"] += 1
                return list(hit)
            events = self._run(handler, name, params)
            if len(self._cache) >= self._cache_limit:
                self._cache.clear()
            self._cache[key] = tuple(events)
            return events
        return self._run(handler, name, params)

    @staticmethod
    def _run(handler: Callable[[str, BlockParams], list[Event]], name: str,
             params: list[tuple[str, str]]) -> list[Event]:
        try:
            return handler(name, BlockParams(params))
        except BlockError as e:
            return [Undecoded(f"{name}: {e}")]

    def _state_changed(self) -> None:
        """Remembered state that cached blocks may depend on changed: drop the block cache."""
        self.state_version += 1
        if self._cache:
            self._cache.clear()

    def _build_handlers(self) -> dict[str, Callable[[str, BlockParams], list[Event]]]:
        h: dict[str, Callable[[str, BlockParams], list[Event]]] = {}
        for n in _CONV_APIS:
            h[n] = self._conv
        for n in _BN_APIS:
            h[n] = self._bnorm
        for n in ("miopenSet4dTensorDescriptor", "miopenSet4dTensorDescriptorEx", "miopenSetTensorDescriptor",
                  "miopenSetTensorDescriptorV2", "miopenSetNdTensorDescriptorWithLayout"):
            h[n] = self._set_tensor
        h.update({
            "miopenSet2dPoolingDescriptor": self._set_pool,
            "miopenSetNdPoolingDescriptor": self._set_pool,
            "miopenSetPoolingWorkSpaceIndexMode": self._set_pool_index_mode,
            "miopenPoolingForward": self._pool,
            "miopenPoolingBackward": self._pool,
            "miopenGetPoolingForwardOutputDim": self._pool,
            "miopenGetPoolingNdForwardOutputDim": self._pool,
            "miopenSetActivationDescriptor": self._set_activ,
            "miopenActivationForward": self._activ,
            "miopenActivationBackward": self._activ,
            "miopenSetLRNDescriptor": self._set_lrn,
            "miopenLRNForward": self._lrn,
            "miopenLRNBackward": self._lrn,
            "miopenSoftmaxForward": self._softmax,
            "miopenSoftmaxBackward": self._softmax,
            "miopenSoftmaxForward_V2": self._softmax,
            "miopenSoftmaxBackward_V2": self._softmax,
            "miopenCreateFusionPlan": self._fusion_create,
            "miopenCompileFusionPlan": self._fusion_compile,
            "miopenExecuteFusionPlan": self._fusion_execute,
            "miopenConvolutionBiasActivationForward": self._cba,
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
        })
        for n in _FUSION_KINDS:
            h[n] = self._fusion_op
        h["miopenSetOpArgsActivForward"] = self._fusion_activ_args
        h.update(__import__("miotui.logs.trace_ops", fromlist=["op_handlers"]).op_handlers(self))
        return h

    # ------------------------------------------------------------------ dtype memory

    def _remember(self, lens: tuple[int, ...], strides: Optional[tuple[int, ...]], dtype: str) -> None:
        changed = False
        for table, key in ((self._dtypes_exact, (lens, strides)), (self._dtypes_lens, lens)):
            if key is None or (table is self._dtypes_exact and strides is None):
                continue
            old = table.get(key)
            if old is None:
                changed = True
                if len(table) >= self._dtype_limit:
                    table.popitem(last=False)
            elif old != dtype:
                changed = True
            else:
                table.move_to_end(key)
                continue
            table[key] = dtype
        if changed:
            self._state_changed()

    def _set_tensor(self, name: str, p: BlockParams) -> list[Event]:
        """Remember a Set*TensorDescriptor's data type (the only place it is printed, §2.4)."""
        dt = p.opt_int("dataType")
        if dt is None or dt not in DATA_TYPES:
            return []
        dtype = DATA_TYPES[dt]
        try:
            if name in ("miopenSet4dTensorDescriptor", "miopenSet4dTensorDescriptorEx"):
                lens = tuple(p.int(c, c) for c in ("n", "c", "h", "w"))
                strides: Optional[tuple[int, ...]] = packed_strides(lens)
                if name.endswith("Ex"):
                    strides = tuple(p.int(s, s) for s in ("nStride", "cStride", "hStride", "wStride"))
            elif name == "miopenSetNdTensorDescriptorWithLayout":
                text = p.get("lens_in.values")
                if text is None:  # ROCm 5.4 printed only the first length (a plain int*)
                    return []
                lens = parse_int_vector(text)
                layout = _TENSOR_LAYOUTS.get(p.opt_int("tensorLayout") if p.get("tensorLayout") else -1)
                strides = layout_strides(lens, layout) if layout else None
            else:
                dims, strd = p.get("dim.values"), p.get("stride.values")
                if dims is None:  # <= MIOpen 2.0 printed only dimsA[0]
                    return []
                lens = parse_int_vector(dims)
                s = parse_int_vector(strd) if strd is not None else ()
                strides = s if s else packed_strides(lens)
        except (BlockError, DescriptorError):
            return []
        if not lens or any(v <= 0 for v in lens) or (strides is not None and len(strides) != len(lens)):
            return []
        self._remember(tuple(lens), tuple(strides) if strides is not None else None, dtype)
        return []

    def infer_dtype(self, primary: Optional[TensorDesc], others: Iterable[Optional[TensorDesc]],
               warnings: list[str]) -> str:
        """The op's data type: the primary tensor's remembered type, else another of its
        tensors', else fp32 with a warning saying it was guessed."""
        for t in (primary, *others):
            if t is not None:
                hit = self.dtype_of(t)
                if hit is not None:
                    if hit == "unknown":
                        warnings.append("tensor data type is Int32/Int64, which no MIOpenDriver base runs")
                    return hit
        warnings.append(DTYPE_GUESS_WARNING)
        return "fp32"

    # ------------------------------------------------------------------ convolution

    def _conv_desc(self, p: BlockParams) -> ConvDesc:
        text = p.need("convolution descriptor", *_CONV_DESC)
        try:
            return parse_conv(text)
        except DescriptorError as e:
            raise BlockError(f"convDesc: {e}") from None

    def _conv_problem(self, direction: str, x: TensorDesc, w: TensorDesc, conv: ConvDesc,
                      y: Optional[TensorDesc], warnings: list[str], dtype: str = "") -> ConvProblem:
        """A ConvProblem exactly as MIOpen's Command line describes the call (§3.2)."""
        nd = conv.spatial_dim
        if nd not in (2, 3):
            raise BlockError(f"conv{nd}d is not a 2-D or 3-D convolution")
        xn = {"fwd": "xDesc", "bwd": "dxDesc", "wrw": "xDesc"}[direction]
        wn = "dwDesc" if direction == "wrw" else "wDesc"
        yn = "yDesc" if direction == "fwd" else "dyDesc"
        for t, what in ((x, xn), (w, wn)):
            if t.rank != nd + 2:
                raise BlockError(f"{what} has {t.rank} dimensions but the descriptor is conv{nd}d")
        groups = conv.groups
        if conv.legacy_mode == "miopenDepthwise" and groups <= 1:
            groups = x.lens[1]
        if conv.mode == "trans":
            c, k = x.lens[1], w.lens[1] * groups
            if w.lens[0] != c:
                warnings.append(f"{wn}[0] = {w.lens[0]} differs from the input channels {c}")
        else:
            c, k = x.lens[1], w.lens[0]
            if w.lens[1] * groups != c:
                warnings.append(f"{wn}[1] x groups = {w.lens[1] * groups} differs from the input channels {c}")
        if conv.legacy_mode:
            warnings.append(f"legacy mode {conv.legacy_mode} read as a grouped convolution (g={groups})")
        in_layout = _layout(x, nd, xn, warnings)
        fil_layout = _layout(w, nd, wn, warnings)
        out_layout = _layout(y, nd, yn, warnings) if y is not None else in_layout
        for t, what in ((x, xn), (w, wn), (y, yn)):
            _cast_warning(t, what, warnings)
        if not dtype:
            dtype = self.infer_dtype(x, (w, y), warnings)
        problem = make_problem(lambda: ConvProblem(
            direction=direction, dtype=dtype, n=x.lens[0], c=c, k=k, in_spatial=x.lens[2:],
            filter=w.lens[2:], pads=conv.pads, strides=conv.strides, dilations=conv.dilations,
            groups=groups, mode=conv.mode, trans_output_pads=conv.trans_output_pads or (0,) * nd,
            pad_mode=conv.pad_mode, in_layout=in_layout, fil_layout=fil_layout, out_layout=out_layout))
        if y is not None and y.rank == nd + 2 and y.lens != problem.output_shape:  # type: ignore[union-attr]
            warnings.append(f"{yn} lengths {list(y.lens)} differ from the computed output "
                            f"{list(problem.output_shape)}")
        return problem  # type: ignore[return-value]

    def _conv(self, name: str, p: BlockParams) -> list[Event]:
        direction, role = _CONV_APIS[name]
        xs, ws, ys = _CONV_TENSORS[direction]
        if role == "mention":
            # Workspace / immediate-mode queries: a sighting only when they carry enough.
            if p.get(*xs) is None or p.get(*ws) is None or p.get(*_CONV_DESC) is None:
                return []
            try:
                x, w = need_tensor(p, xs[0], *xs), need_tensor(p, ws[0], *ws)
                conv = self._conv_desc(p)
            except BlockError:
                return []
        else:
            x, w = need_tensor(p, xs[0], *xs), need_tensor(p, ws[0], *ws)
            conv = self._conv_desc(p)
        y = opt_tensor(p, *ys)
        warnings: list[str] = []
        problem = self._conv_problem(direction, x, w, conv, y, warnings)
        annotations: list[tuple[str, str]] = []
        if role == "execution":
            algo = p.opt_int("algo")
            if algo is not None:
                annotations.append(("algorithm", str(algo)))
            sid = p.opt_int("solution_id")
            if sid is not None:
                annotations.append(("solver_id", str(sid)))
            ws_size = p.opt_int("workSpaceSize")
            if ws_size is not None:
                annotations.append(("workspace", str(ws_size)))
        return [Sighting(problem, role, SOURCE, tuple(warnings), tuple(annotations))]

    # ------------------------------------------------------------------ batch norm

    def _bnorm(self, name: str, p: BlockParams) -> list[Event]:
        direction = _BN_APIS[name]
        x = need_tensor(p, "xDesc", "xDesc")
        n, c, spatial = _spatial_of(x, "xDesc")
        mode_int = p.int("bn_mode", "bn_mode")
        mode = {0: "per_activation", 1: "spatial"}.get(mode_int)
        if mode is None:
            raise BlockError(f"bn_mode {mode_int} is not 0 (per-activation) or 1 (spatial)")
        warnings: list[str] = []
        others = [opt_tensor(p, "yDesc"), opt_tensor(p, "dyDesc"), opt_tensor(p, "dxDesc")]
        dtype = self.infer_dtype(x, others, warnings)
        param_desc = opt_tensor(p, "estMeanDesc", "savedMeanDesc", "bnScaleBiasMeanVarDesc",
                                 "bnScaleBiasDiffDesc", "scaleDesc")
        param_dtype = (self.dtype_of(param_desc) if param_desc is not None else None) or dtype
        # Driver meaning (§3.4): -s = saved mean/inv-variance, -r = running mean/variance.
        if direction == "fwd_infer":
            running = p.nonnull("estimatedMean") and p.nonnull("estimatedVariance")
            save = False
        elif direction == "fwd_train":
            running = p.nonnull("resultRunningMean") and p.nonnull("resultRunningVariance")
            save = p.nonnull("resultSaveMean") and p.nonnull("resultSaveInvVariance")
        else:
            running = False
            save = p.nonnull("savedMean") and p.nonnull("savedInvVariance")
        layout = _layout(x, len(spatial), "xDesc", warnings)
        problem = make_problem(lambda: BatchNormProblem(direction, dtype, n, c, spatial, mode, layout, save,
                                                    running, param_dtype))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]

    # ------------------------------------------------------------------ pooling

    def _set_pool(self, name: str, p: BlockParams) -> list[Event]:
        mode = {0: "max", 1: "avg", 2: "avg_in"}.get(p.opt_int("mode") if p.get("mode") else -1)
        if mode is None:
            return []
        try:
            win = (p.int("window", "windowHeight"), p.int("window", "windowWidth"))
            pads = (p.int("pad", "pad_h"), p.int("pad", "pad_w"))
            strides = (p.int("stride", "stride_h", "u"), p.int("stride", "stride_w", "v"))
        except BlockError:
            return []
        desc = PoolDesc(mode, win, pads, strides)
        if desc != self._last_pool:
            self._last_pool = desc
            self._state_changed()
        return []

    def _set_pool_index_mode(self, name: str, p: BlockParams) -> list[Event]:
        v = p.opt_int("workspace_index")
        if v in (0, 1) and v != self._pool_index_mode:
            self._pool_index_mode = v
            self._state_changed()
        return []

    def _pool(self, name: str, p: BlockParams) -> list[Event]:
        mention = "OutputDim" in name
        backward = name == "miopenPoolingBackward"
        warnings: list[str] = []
        text = p.get("poolDesc")
        desc: Optional[PoolDesc] = None
        if text is not None:
            try:
                desc = parse_pool(text)
            except DescriptorError:
                desc = None
        if desc is None:
            if self._last_pool is None:
                if mention:
                    return []
                raise BlockError("poolDesc not readable and no earlier miopenSet2dPoolingDescriptor")
            desc = self._last_pool
            warnings.append("pooling descriptor taken from the last miopenSet2dPoolingDescriptor")
        if mention:
            x = opt_tensor(p, "tensorDesc")
            if x is None:
                return []
        elif backward:
            x = need_tensor(p, "xDesc", "xDesc", "dxDesc")
        else:
            x = need_tensor(p, "xDesc", "xDesc")
        n, c, spatial = _spatial_of(x, "xDesc")
        if len(desc.window) != len(spatial):
            raise BlockError(f"{len(desc.window)}-D pooling window on a {x.rank}-D tensor")
        others = [opt_tensor(p, "yDesc"), opt_tensor(p, "dyDesc"), opt_tensor(p, "dxDesc")]
        dtype = self.infer_dtype(x, others, warnings)
        layout = _layout(x, len(spatial), "xDesc", warnings)
        problem = make_problem(lambda: PoolProblem("bwd" if backward else "fwd", dtype, n, c, spatial,
                                               desc.window, desc.pads, desc.strides, desc.mode, layout,
                                               self._pool_index_mode))
        return [Sighting(problem, "mention" if mention else "execution", SOURCE, tuple(warnings))]

    # ------------------------------------------------------------------ activation

    def _set_activ(self, name: str, p: BlockParams) -> list[Event]:
        try:
            desc = ActivDesc(p.int("mode", "mode"), p.float("alpha", "activAlpha"),
                             p.float("beta", "activBeta"), p.float("gamma", "activGamma"))
        except BlockError:
            return []
        if desc != self._last_activ:
            self._last_activ = desc
            self._state_changed()
        return []

    def _activ_desc(self, p: BlockParams, warnings: list[str]) -> ActivDesc:
        text = p.get("activDesc", "activationDesc")
        if text is not None:
            try:
                return parse_activ(text)
            except DescriptorError:
                pass
        if self._last_activ is None:
            raise BlockError("activDesc not readable and no earlier miopenSetActivationDescriptor")
        warnings.append("activation descriptor taken from the last miopenSetActivationDescriptor")
        return self._last_activ

    def _activ(self, name: str, p: BlockParams) -> list[Event]:
        backward = name.endswith("Backward")
        warnings: list[str] = []
        desc = self._activ_desc(p, warnings)
        x = need_tensor(p, "xDesc", "xDesc") if not backward else need_tensor(p, "xDesc", "xDesc", "dxDesc")
        n, c, hw = _nchw_2d(x, "xDesc", warnings)
        dtype = self.infer_dtype(x, [opt_tensor(p, "yDesc"), opt_tensor(p, "dyDesc")], warnings)
        layout = _layout(x, 2, "xDesc", warnings) if x.rank == 4 else "NCHW"
        problem = make_problem(lambda: ActivationProblem("bwd" if backward else "fwd", dtype, n, c, hw,
                                                     desc.mode, desc.alpha, desc.beta, desc.gamma, layout))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]

    # ------------------------------------------------------------------ LRN

    def _set_lrn(self, name: str, p: BlockParams) -> list[Event]:
        try:
            mode = {0: "within", 1: "cross"}.get(p.int("mode", "mode"))
            if mode is None:
                return []
            desc = LRNDesc(mode, p.int("lrnN", "lrnN"), p.float("alpha", "lrnAlpha"),
                           p.float("beta", "lrnBeta"), p.float("K", "lrnK"))
        except BlockError:
            return []
        if desc != self._last_lrn:
            self._last_lrn = desc
            self._state_changed()
        return []

    def _lrn(self, name: str, p: BlockParams) -> list[Event]:
        backward = name.endswith("Backward")
        warnings: list[str] = []
        desc: Optional[LRNDesc] = None
        text = p.get("lrnDesc")
        if text is not None:
            try:
                desc = parse_lrn(text)
            except DescriptorError:
                desc = None
        if desc is None:
            if self._last_lrn is None:
                raise BlockError("lrnDesc not readable and no earlier miopenSetLRNDescriptor")
            desc = self._last_lrn
            warnings.append("LRN descriptor taken from the last miopenSetLRNDescriptor")
        x = need_tensor(p, "xDesc", "xDesc")
        if x.rank != 4:
            raise BlockError(f"LRN needs a 4-D xDesc, got {x.rank}-D")
        _layout(x, 2, "xDesc", warnings)
        dtype = self.infer_dtype(x, [opt_tensor(p, "yDesc")], warnings)
        problem = make_problem(lambda: LRNProblem("bwd" if backward else "fwd", dtype, x.lens[0], x.lens[1],
                                              x.lens[2:], desc.mode, desc.n, desc.alpha, desc.beta, desc.k))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]

    # ------------------------------------------------------------------ softmax

    def _softmax(self, name: str, p: BlockParams) -> list[Event]:
        backward = "Backward" in name
        warnings: list[str] = []
        # LogCmdSoftmax describes backward by dxDesc and forward by xDesc.
        x = need_tensor(p, "dxDesc", "dxDesc", "yDesc") if backward else need_tensor(p, "xDesc", "xDesc")
        n, c, hw = _nchw_2d(x, "dxDesc" if backward else "xDesc", warnings)
        if name.endswith("_V2"):
            algorithm, mode = p.int("algorithm", "algorithm"), p.int("mode", "mode")
        else:  # the legacy API always runs accurate, per-channel
            algorithm, mode = 1, 1
        dtype = self.infer_dtype(x, [opt_tensor(p, "yDesc"), opt_tensor(p, "dyDesc")], warnings)
        problem = make_problem(lambda: SoftmaxProblem("bwd" if backward else "fwd", dtype, n, c, hw,
                                                  algorithm, mode))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]

    # ------------------------------------------------------------------ fusion

    def _fusion_create(self, name: str, p: BlockParams) -> list[Event]:
        self._plan = _Plan(opt_tensor(p, "inputDesc"))
        self._plans.append(self._plan)
        return []

    def _fusion_op(self, name: str, p: BlockParams) -> list[Event]:
        plan = self._plan
        if plan is None:
            plan = self._plan = _Plan(None)
            self._plans.append(plan)
        kind = _FUSION_KINDS[name]
        plan.ops.append(kind)
        if kind == "conv":
            try:
                plan.conv = self._conv_desc(p)
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

    def _fusion_problem(self, plan: _Plan, x: TensorDesc, warnings: list[str],
                        y: Optional[TensorDesc] = None) -> FusionProblem:
        mode = _FUSION_MODES.get(tuple(plan.ops))
        if mode is None:
            raise BlockError(f"fusion plan {'+'.join(plan.ops) or '(empty)'} is not a CBAInfer mode")
        if x.rank != 4:
            raise BlockError(f"fusion input has {x.rank} dimensions; CBAInfer is 2-D only")
        n, c, hw = x.lens[0], x.lens[1], x.lens[2:]
        dtype = self.infer_dtype(x, [y, plan.weights], warnings)
        if mode in (0, 1, 3, 4, 5, 6):
            if plan.conv is None or plan.weights is None:
                raise BlockError("fusion plan's convolution descriptor or weights were not readable")
            cp = self._conv_problem("fwd", x, plan.weights, plan.conv, y, warnings, dtype)
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
        conv = self._conv_desc(p)
        y = opt_tensor(p, "yDesc", "ydesc")
        if x.rank != 4:
            raise BlockError(f"xDesc has {x.rank} dimensions; CBAInfer is 2-D only")
        warnings: list[str] = []
        plan = _Plan(x, ["conv", "bias", "activ"], conv, w)
        if p.get("activationDesc", "activDesc") is not None:
            plan.activ = self._activ_desc(p, warnings)
        problem = self._fusion_problem(plan, x, warnings, y)
        annotations = []
        algo = p.opt_int("algo")
        if algo is not None:
            annotations.append(("algorithm", str(algo)))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings), tuple(annotations))]

    # ------------------------------------------------------------------ Find 2.0

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
        self._f2_pending.append(_F2Problem(kind, desc, direction))
        return []

    def _f2_lookup(self, addr: Optional[str], create: bool) -> Optional[_F2Problem]:
        if not addr:
            return None
        prob = self._f2_problems.get(addr)
        if prob is None and create:
            prob = self._f2_pending.popleft() if self._f2_pending else _F2Problem("conv", None, 0)
            if len(self._f2_problems) >= 1024:
                self._f2_problems.popitem(last=False)
            self._f2_problems[addr] = prob
        return prob

    def _f2_set_tensor(self, name: str, p: BlockParams) -> list[Event]:
        prob = self._f2_lookup(p.get("problem"), create=True)
        tag = _TENSOR_ARG_IDS.get(p.opt_int("id") if p.get("id") else -1)
        desc = opt_tensor(p, "descriptor")
        if prob is not None and tag and desc is not None:
            prob.tensors[tag] = desc
        return []

    def _f2_destroy(self, name: str, p: BlockParams) -> list[Event]:
        addr = p.get("problem")
        if addr:
            self._f2_problems.pop(addr, None)
        return []

    def _f2_event(self, prob: _F2Problem, role: str, tensors: dict[str, TensorDesc],
                  warnings: list[str]) -> Event:
        if prob.kind == "conv":
            direction = _PROBLEM_DIRECTIONS.get(prob.direction)
            if direction is None:
                raise BlockError(f"convolution problem direction {prob.direction} is not fwd/bwd/wrw")
            if not isinstance(prob.desc, ConvDesc):
                raise BlockError("the problem's convolution descriptor was not readable")
            x, w, y = tensors.get("ConvX"), tensors.get("ConvW"), tensors.get("ConvY")
            if x is None or w is None:
                raise BlockError("the problem's ConvX/ConvW tensors are unknown")
            problem = self._conv_problem(direction, x, w, prob.desc, y, warnings)
            return Sighting(problem, role, SOURCE, tuple(warnings))
        if not isinstance(prob.desc, ActivDesc):
            raise BlockError("the problem's activation descriptor was not readable")
        backward = prob.direction == 1
        x = tensors.get("ActivDX" if backward else "ActivX") or tensors.get("ActivX")
        if x is None:
            raise BlockError("the problem's activation tensors are unknown")
        n, c, hw = _nchw_2d(x, "ActivX", warnings)
        dtype = self.infer_dtype(x, tensors.values(), warnings)
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

    def _f2_match(self, given: dict[str, TensorDesc], warnings: list[str]) -> Optional[_F2Problem]:
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



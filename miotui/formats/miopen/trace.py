"""Decode MIOpen API-trace blocks (``MIOPEN_ENABLE_LOGGING=1``) into problems.

One block is the header ``miopenStatus_t miopenConvolutionForward(...){`` plus its
``name = value`` lines (``docs/formats.md`` §3).  A block shows descriptors by their
contents but never the element type, so the decoder is *stateful per log*: it remembers
the ``dataType`` of earlier ``miopenSet*TensorDescriptor`` calls (keyed by lengths and
strides), the last pooling/activation/LRN descriptor set-up, fusion plans being built,
and Find-2.0 problems and solutions by the address MIOpen prints for them.

Convolutions are described exactly as MIOpen's own ``Command`` line would describe the
same call (§3.4, §4.2): x is the API's x for forward and backward-weights and the API's
dx for backward-data; K is ``w[0]``, or ``w[1]*G`` for a transposed convolution; the
layouts come from the strides the way ``TensorDescriptor::GetLayout_str`` derives them.
So an API block and the Command line it causes give the same ``ConvProblem``.

Speed: a training log repeats identical blocks every iteration.  Descriptor texts are
parsed once (``miotui.formats.miopen.grammar`` memoises by exact text) and whole decoded blocks are
cached by (function, parameters with addresses normalised), for the blocks whose result
depends only on their text and the remembered data types; the cache is dropped whenever
that remembered state changes.

Nothing here raises on bad input: a modelled operation that cannot be decoded becomes
``Undecoded(reason)``; blocks that are no layer (descriptor set-up and tear-down, internal
``miopen::`` functions, GEMM lambdas, fusion-plan arguments) give ``[]``.  The newer ops
(RNN, norms, reductions, tensor ops, ...) have their handlers in ``trace_ops``/``trace_rnn``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Iterable, Optional

from miotui.events import Event, Sighting, Undecoded
from miotui.formats.miopen.grammar import (
    ActivDesc,
    ConvDesc,
    DescriptorError,
    LRNDesc,
    PoolDesc,
    TensorDesc,
    layout_strides,
    packed_strides,
    parse_activ,
    parse_conv,
    parse_int_vector,
    parse_lrn,
    parse_pool,
)
from miotui.formats.miopen.startup_lines import tuning_policy_block
from miotui.formats.miopen.trace_ops import op_handlers
from miotui.formats.miopen.trace_params import (
    BN_APIS,
    CONV_APIS,
    CONV_DESC,
    CONV_TENSORS,
    DATA_TYPES,
    BlockError,
    BlockParams,
    api_name,
    cast_warning,
    make_problem,
    nchw_2d,
    need_tensor,
    opt_tensor,
    pair_key,
    spatial_of,
    storage_layout,
)
from miotui.formats.miopen.trace_plans import Find2Problems, FusionPlans, TraceDecoding
from miotui.problems import (
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    LRNProblem,
    PoolProblem,
    SoftmaxProblem,
)

__all__ = ["TraceDecoder", "api_name", "DTYPE_GUESS_WARNING", "DATA_TYPES", "BlockError", "BlockParams",
           "make_problem", "need_tensor", "opt_tensor"]

SOURCE = "api-trace"

#: miopenTensorLayout_t (tensor.hpp) for miopenSetNdTensorDescriptorWithLayout.
_TENSOR_LAYOUTS = {0: "NCHW", 1: "NHWC", 7: "NCDHW", 8: "NDHWC"}

DTYPE_GUESS_WARNING = ("data type not in the trace (no earlier miopenSet*TensorDescriptor for this "
                       "tensor); guessed fp32")

_DTYPE_MEMORY = 4096
_BLOCK_CACHE = 8192


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
        # the objects built across several blocks, each with its own state (``trace_plans``)
        decoding = TraceDecoding(self.infer_dtype, self._conv_desc, self._conv_problem, self._activ_desc)
        self.fusion_plans = FusionPlans(decoding)
        self.find2 = Find2Problems(decoding)
        self._cache: dict[tuple, tuple[Event, ...]] = {}
        #: counters for benchmarks and tests
        self.stats = {"blocks": 0, "cache_hits": 0}
        #: bumped whenever remembered state that a pure block's events depend on changes
        #: (see ``is_pure``): a caller may reuse a pure block's events while it is unchanged
        self.state_version = 0
        self._handlers: dict[str, Callable[[str, BlockParams], list[Event]]] = self._build_handlers()
        self._cacheable: frozenset[str] = frozenset(
            list(CONV_APIS) + list(BN_APIS) + [
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
                key = (name, tuple(map(pair_key, params)))
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
        for n in CONV_APIS:
            h[n] = self._conv
        for n in BN_APIS:
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
        })
        h.update(self.fusion_plans.handlers())
        h.update(self.find2.handlers())
        h["miopenSetTuningPolicy"] = tuning_policy_block
        h.update(op_handlers(self))
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
        """Remember a Set*TensorDescriptor's data type (the only place it is printed, §3.3)."""
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
        text = p.need("convolution descriptor", *CONV_DESC)
        try:
            return parse_conv(text)
        except DescriptorError as e:
            raise BlockError(f"convDesc: {e}") from None

    def _conv_problem(self, direction: str, x: TensorDesc, w: TensorDesc, conv: ConvDesc,
                      y: Optional[TensorDesc], warnings: list[str], dtype: str = "") -> ConvProblem:
        """A ConvProblem exactly as MIOpen's Command line describes the call (§3.4)."""
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
        in_layout = storage_layout(x, nd, xn, warnings)
        fil_layout = storage_layout(w, nd, wn, warnings)
        out_layout = storage_layout(y, nd, yn, warnings) if y is not None else in_layout
        for t, what in ((x, xn), (w, wn), (y, yn)):
            cast_warning(t, what, warnings)
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
        direction, role = CONV_APIS[name]
        xs, ws, ys = CONV_TENSORS[direction]
        if role == "mention":
            # Workspace / immediate-mode queries: a sighting only when they carry enough.
            if p.get(*xs) is None or p.get(*ws) is None or p.get(*CONV_DESC) is None:
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
        direction = BN_APIS[name]
        x = need_tensor(p, "xDesc", "xDesc")
        n, c, spatial = spatial_of(x, "xDesc")
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
        # Driver meaning (§4.3): -s = saved mean/inv-variance, -r = running mean/variance.
        if direction == "fwd_infer":
            running = p.nonnull("estimatedMean") and p.nonnull("estimatedVariance")
            save = False
        elif direction == "fwd_train":
            running = p.nonnull("resultRunningMean") and p.nonnull("resultRunningVariance")
            save = p.nonnull("resultSaveMean") and p.nonnull("resultSaveInvVariance")
        else:
            running = False
            save = p.nonnull("savedMean") and p.nonnull("savedInvVariance")
        layout = storage_layout(x, len(spatial), "xDesc", warnings)
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
        n, c, spatial = spatial_of(x, "xDesc")
        if len(desc.window) != len(spatial):
            raise BlockError(f"{len(desc.window)}-D pooling window on a {x.rank}-D tensor")
        others = [opt_tensor(p, "yDesc"), opt_tensor(p, "dyDesc"), opt_tensor(p, "dxDesc")]
        dtype = self.infer_dtype(x, others, warnings)
        layout = storage_layout(x, len(spatial), "xDesc", warnings)
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
        n, c, hw = nchw_2d(x, "xDesc", warnings)
        dtype = self.infer_dtype(x, [opt_tensor(p, "yDesc"), opt_tensor(p, "dyDesc")], warnings)
        layout = storage_layout(x, 2, "xDesc", warnings) if x.rank == 4 else "NCHW"
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
        storage_layout(x, 2, "xDesc", warnings)
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
        n, c, hw = nchw_2d(x, "dxDesc" if backward else "xDesc", warnings)
        if name.endswith("_V2"):
            algorithm, mode = p.int("algorithm", "algorithm"), p.int("mode", "mode")
        else:  # the legacy API always runs accurate, per-channel
            algorithm, mode = 1, 1
        dtype = self.infer_dtype(x, [opt_tensor(p, "yDesc"), opt_tensor(p, "dyDesc")], warnings)
        problem = make_problem(lambda: SoftmaxProblem("bwd" if backward else "fwd", dtype, n, c, hw,
                                                  algorithm, mode))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]

    # ------------------------------------------------------------------ fusion


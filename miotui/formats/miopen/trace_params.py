"""The values of one API-trace block: its function's name, its ``name = value`` parameters, and
the tensors they describe.

Shared by every block handler (``miotui.formats.miopen.trace`` and the handlers of the newer ops):
lookups that accept each spelling MIOpen used over the years, tensor parsing that refuses
what no layer has, and the failure every handler raises (``BlockError``) when a block of a
modelled op cannot be decoded.
"""

from __future__ import annotations

import re
from typing import Callable, Optional, Sequence

from miotui.formats.miopen.grammar import (
    DescriptorError,
    TensorDesc,
    is_null_pointer,
    is_pointer,
    parse_number,
    parse_tensor,
)
from miotui.problems import Problem, ProblemError, default_layout

#: miopenDataType_t -> our dtype names (docs/formats.md §3.3).  Int32/Int64 tensors are not layers we run.
DATA_TYPES = {0: "fp16", 1: "fp32", 2: "unknown", 3: "int8", 4: "int8", 5: "bf16", 6: "fp64",
              7: "fp8", 8: "bf8", 9: "unknown"}


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


def normalise(value: str) -> str:
    """Cache-key form of a value: addresses change every iteration, only null-ness matters."""
    v = value.strip()
    if v.startswith("0x") or (len(v) == 16 and is_pointer(v)):
        return "<ptr>" if not is_null_pointer(v) else "nullptr"
    return v


_PAIR_KEYS: dict[tuple[str, str], Optional[tuple[str, str]]] = {}
_PAIR_KEYS_LIMIT = 200_000


def pair_key(pair: tuple[str, str]) -> Optional[tuple[str, str]]:
    """Cache-key form of one (name, value) parameter, memoised: the scanner hands the same
    tuple object for every repeat of a line, so most calls are one dict lookup."""
    key = _PAIR_KEYS.get(pair)
    if key is None:
        name, value = pair
        key = None if name == "handle" else (name, normalise(value))
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


def storage_layout(t: Optional[TensorDesc], ndim: int, what: str, warnings: list[str]) -> str:
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


def cast_warning(t: Optional[TensorDesc], what: str, warnings: list[str]) -> None:
    if t is not None and t.cast_type:
        warnings.append(f"{what} has cast type {t.cast_type}, which this problem does not carry")


def spatial_of(t: TensorDesc, what: str) -> tuple[int, int, tuple[int, ...]]:
    """N, C and (D,)H,W of a 4-D or 5-D tensor."""
    if t.rank not in (4, 5):
        raise BlockError(f"{what} has {t.rank} dimensions; expected 4 or 5")
    return t.lens[0], t.lens[1], t.lens[2:]


def nchw_2d(t: TensorDesc, what: str, warnings: list[str]) -> tuple[int, int, tuple[int, int]]:
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


# ----------------------------------------------------------------------------- which API is which op

#: conv API -> (direction, role).  CONV_TENSORS gives its x/w/y parameter names in the
#: sense of docs/formats.md §3.4: the tensors MIOpen's Command line describes the call by.
X_FWD, W_FWD, Y_FWD = ("xDesc", "inputTensorDesc"), ("wDesc", "filterDesc"), ("yDesc", "ydesc")
X_BWD, W_BWD, Y_BWD = ("dxDesc",), ("wDesc",), ("dyDesc",)
X_WRW, W_WRW, Y_WRW = ("xDesc",), ("dwDesc",), ("dyDesc",)
CONV_APIS: dict[str, tuple[str, str]] = {}
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
        CONV_APIS[_n] = (_dir, _role)
CONV_TENSORS = {"fwd": (X_FWD, W_FWD, Y_FWD), "bwd": (X_BWD, W_BWD, Y_BWD),
                 "wrw": (X_WRW, W_WRW, Y_WRW)}
CONV_DESC = ("convDesc", "conv_desc")

BN_APIS = {
    "miopenBatchNormalizationForwardInference": "fwd_infer",
    "miopenBatchNormalizationForwardInference_V2": "fwd_infer",
    "miopenBatchNormalizationForwardTraining": "fwd_train",
    "miopenBatchNormalizationForwardTraining_V2": "fwd_train",
    "miopenBatchNormalizationBackward": "bwd",
    "miopenBatchNormalizationBackward_V2": "bwd",
}

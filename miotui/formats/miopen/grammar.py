"""Grammars for the descriptor values MIOpen prints in its API trace.

An API-trace parameter line shows a descriptor by its *contents* (``docs/formats.md``
§3.2), in a format that changed over the years: tensors went from ``1, 96, 2, 3`` to
``{1, 24, 340, 340}, {2774400, 115600, 340, 1}, packed, `` (ROCm 5.5), convolution
descriptors from ``miopenConvolution, 2, 2, 1, 1, 1, 1, `` to ``conv2d, miopenConvolution,
miopenPaddingDefault, {1, 1}, {1, 1}, {1, 1}, `` (MIOpen 1.8).  The grammars below accept
every version, tolerate lost trailing whitespace, and turn a value into a small frozen
record.

They are pyparsing grammars, as the design asks.  Measured cost (``/tmp/bench.py``-style
micro-benchmark, this machine): a pyparsing parse of one tensor or convolution descriptor
takes 0.3-0.5 ms, a regular expression 4 us, a memo hit 0.3 us.  A log whose shapes vary
(NLP batches, dynamic resolution) has thousands of distinct descriptor texts, so:

* every public ``parse_*`` function is memoised by the exact value text (successes *and*
  failures), so nothing is parsed twice;
* the two hot formats (tensor and convolution descriptors, both versions) and the
  ``{ 1 2 3 }`` vectors are first tried with a strict regular expression (the exact
  shapes MIOpen prints, §3.2); only text the regex rejects goes to the pyparsing
  grammar, which is whitespace-tolerant and produces the error message;
* the rarer descriptors (pooling, activation, LRN, softmax, Find-2.0 tensor lists) use
  pyparsing directly.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Generic, Optional, TypeVar, Union

if TYPE_CHECKING:  # pyparsing is imported on first use: it costs ~60 ms, and the CLI starts fast
    import pyparsing as pp

__all__ = [
    "DescriptorError", "TensorDesc", "ConvDesc", "PoolDesc", "ActivDesc", "LRNDesc", "SoftmaxDesc",
    "TensorArg", "parse_tensor", "parse_conv", "parse_pool", "parse_activ", "parse_lrn",
    "parse_softmax_desc", "parse_int_vector", "parse_tensor_args", "parse_number", "is_null_pointer",
    "is_pointer", "layout_from_strides", "packed_strides", "layout_strides", "clear_caches",
]


class DescriptorError(ValueError):
    """A descriptor value that does not match any known MIOpen format."""


# ----------------------------------------------------------------------------- records

def packed_strides(lens: tuple[int, ...]) -> tuple[int, ...]:
    """Strides of a packed tensor stored in the order its lengths are listed (NC(D)HW)."""
    out = [1] * len(lens)
    for i in range(len(lens) - 2, -1, -1):
        out[i] = out[i + 1] * lens[i + 1]
    return tuple(out)


_LAYOUT_LETTERS = {4: "NCHW", 5: "NCDHW"}


def layout_strides(lens: tuple[int, ...], layout: str) -> Optional[tuple[int, ...]]:
    """Packed strides of NC(D)HW-ordered ``lens`` stored as ``layout`` (e.g. NHWC); None if unknown."""
    letters = _LAYOUT_LETTERS.get(len(lens))
    if letters is None or sorted(layout) != sorted(letters):
        return None
    strides = [0] * len(lens)
    step = 1
    for letter in reversed(layout):  # innermost storage axis first
        axis = letters.index(letter)
        strides[axis] = step
        step *= lens[axis]
    return tuple(strides)


def layout_from_strides(lens: tuple[int, ...], strides: tuple[int, ...]) -> Optional[str]:
    """The storage order MIOpen itself reports (``TensorDescriptor::GetLayout_str``).

    MIOpen stable-sorts the axes by (stride, length), largest first, and names them in
    that order; we do exactly the same so that our layout agrees with the
    ``--in_layout`` MIOpen would print on its Command line, including the tie-breaks
    for size-1 axes.  Returns e.g. ``"NHWC"``, or an odd order like ``"NCWH"``; None
    for tensors that are not 4-D or 5-D.
    """
    letters = _LAYOUT_LETTERS.get(len(lens))
    if letters is None or len(strides) != len(lens):
        return None
    order = sorted(range(len(lens)), key=lambda i: (-strides[i], -lens[i]))
    return "".join(letters[i] for i in order)


@dataclass(frozen=True)
class TensorDesc:
    """A tensor descriptor as printed: lengths (always N,C,(D,)H,W order) and, in the
    ROCm >= 5.5 format, strides, the packed flag and an fp8 cast type."""

    lens: tuple[int, ...]
    strides: Optional[tuple[int, ...]] = None  # None: the old lengths-only format
    packed: Optional[bool] = None              # None: not printed (old format)
    cast_type: Optional[str] = None

    @property
    def rank(self) -> int:
        return len(self.lens)

    @property
    def storage_order(self) -> Optional[str]:
        """MIOpen's layout string for these strides (None for old format or odd ranks)."""
        if self.strides is None:
            return None
        return layout_from_strides(self.lens, self.strides)

    @property
    def effective_strides(self) -> tuple[int, ...]:
        """The printed strides, or the packed NC(D)HW strides the old format implies."""
        return self.strides if self.strides is not None else packed_strides(self.lens)


@dataclass(frozen=True)
class ConvDesc:
    """A convolution descriptor, either format.  ``mode`` is ``conv`` or ``trans``;
    ``legacy_mode`` keeps MIOpen <= 1.7's ``miopenGroupConv``/``miopenDepthwise``."""

    spatial_dim: int
    mode: str
    pad_mode: str
    pads: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    groups: int = 1
    trans_output_pads: tuple[int, ...] = ()
    legacy_mode: str = ""
    new_format: bool = True


@dataclass(frozen=True)
class PoolDesc:
    """``<mode>, <lens...>, <pads...>, <strides...>, ``: mode max/avg/avg_in."""

    mode: str
    window: tuple[int, ...]
    pads: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass(frozen=True)
class ActivDesc:
    mode: int
    alpha: float
    beta: float
    gamma: float


@dataclass(frozen=True)
class LRNDesc:
    mode: str  # within | cross
    n: int
    alpha: float
    beta: float
    k: float


@dataclass(frozen=True)
class SoftmaxDesc:
    alpha: float
    beta: float
    algorithm: int
    mode: int


@dataclass(frozen=True)
class TensorArg:
    """One element of a Find-2.0 ``tensors_vector``: ``ConvX: <desc> -> 0x..,``."""

    tag: str
    desc: Optional[TensorDesc]
    buffer: str


# ----------------------------------------------------------------------------- enums

ACTIVATION_NAMES = ("miopenActivationPASTHRU", "miopenActivationLOGISTIC", "miopenActivationTANH",
                    "miopenActivationRELU", "miopenActivationSOFTRELU", "miopenActivationABS",
                    "miopenActivationPOWER", "miopenActivationCLIPPEDRELU",
                    "miopenActivationLEAKYRELU", "miopenActivationELU")
_POOL_MODES = {"miopenPoolingMax": "max", "miopenPoolingAverage": "avg",
               "miopenPoolingAverageInclusive": "avg_in"}
_POOL_MODE_INTS = {0: "max", 1: "avg", 2: "avg_in"}
_LRN_MODES = {"miopenLRNWithinChannel": "within", "miopenLRNCrossChannel": "cross"}
_LRN_MODE_INTS = {0: "within", 1: "cross"}
_CONV_MODES_NEW = {"miopenConvolution": "conv", "miopenTranspose": "trans"}
_CONV_MODES_OLD = {"miopenConvolution": "conv", "miopenTranspose": "trans",
                   "miopenGroupConv": "conv", "miopenDepthwise": "conv"}
_CONV_MODE_INTS = {0: "miopenConvolution", 1: "miopenTranspose", 2: "miopenGroupConv", 3: "miopenDepthwise"}
_PAD_MODES = {"miopenPaddingDefault": "default", "miopenPaddingSame": "same", "miopenPaddingValid": "valid"}
_PAD_MODE_INTS = {0: "default", 1: "same", 2: "valid"}


# ----------------------------------------------------------------------------- pyparsing

def _grammars() -> dict[str, "pp.ParserElement"]:
    """Build all grammars once.  Whitespace is skipped between tokens (the default),
    so a value that lost its trailing blank still parses."""
    import pyparsing as pp

    integer = pp.Regex(r"[+]?\d+").set_name("integer").set_parse_action(lambda t: int(t[0]))
    number = pp.Regex(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan|INF|NAN)").set_name("number")
    number.set_parse_action(lambda t: float(t[0]))
    comma = pp.Suppress(",")
    lbrace, rbrace = pp.Suppress("{"), pp.Suppress("}")
    ident = pp.Word(pp.alphas + "_", pp.alphanums + "_")
    unknown_enum = pp.Suppress(pp.Literal("Unknown:")) + integer  # MIOPEN_LOG_ENUM fallback

    def enum(name: str, optional: bool = False) -> "pp.ParserElement":
        """An enum name, or ``Unknown: <int>`` for a value the logger has no name for;
        always grouped, so ``r[name]`` is a (possibly empty) list."""
        body = unknown_enum | ident
        return pp.Group(pp.Optional(body) if optional else body)(name)

    def braced(name: str) -> "pp.ParserElement":
        return pp.Group(lbrace + pp.Optional(pp.DelimitedList(integer)) + rbrace)(name)

    end = pp.StringEnd()

    # Tensor, ROCm >= 5.5: {lens}, {strides}, [packed, ][cast_type: X]
    tensor_new = (braced("lens") + comma + braced("strides") + comma
                  + pp.Optional(pp.Keyword("packed")("packed") + pp.Optional(comma))
                  + pp.Optional(pp.Suppress(pp.Literal("cast_type:")) + ident("cast")) + end)
    # Tensor, before: 128, 3, 32, 32
    tensor_old = pp.Group(pp.DelimitedList(integer))("lens") + pp.Optional(comma) + end

    # Convolution, MIOpen >= 1.8
    conv_new = (pp.Regex(r"conv(\d)d").set_parse_action(lambda t: int(t[0][4]))("dim") + comma
                + enum("mode", optional=True) + comma
                + enum("padmode", optional=True) + comma
                + braced("pads") + comma + braced("strides") + comma + braced("dilations") + comma
                + pp.Optional(integer("groups") + pp.Optional(comma))
                + pp.Optional(braced("adj") + pp.Optional(comma)) + end)
    # Convolution, MIOpen <= 1.7: <mode>, p, q, u, v, dl, j, [g, ]
    conv_old = (enum("mode") + comma
                + pp.Group(integer + comma + integer + comma + integer + comma + integer + comma
                           + integer + comma + integer)("vals")
                + pp.Optional(comma) + pp.Optional(integer("groups") + pp.Optional(comma)) + end)

    # Pooling: <mode>, lens..., pads..., strides...,
    pool = (enum("enum") + comma + pp.Group(pp.DelimitedList(integer))("vals") + pp.Optional(comma) + end)

    # Activation: <mode>, alpha, beta, gamma,
    activ = (enum("enum") + comma + number("alpha") + comma + number("beta") + comma + number("gamma")
             + pp.Optional(comma) + end)

    # LRN: <mode>, N, alpha, beta, K,
    lrn = (enum("enum") + comma + integer("n") + comma + number("alpha") + comma + number("beta")
           + comma + number("k") + pp.Optional(comma) + end)

    # Softmax (Find 2.0): softmax,alpha1,beta0,algorithm1,mode1,
    softmax = (pp.Suppress(pp.Literal("softmax")) + comma + pp.Suppress("alpha") + number("alpha") + comma
               + pp.Suppress("beta") + number("beta") + comma + pp.Suppress("algorithm") + integer("algorithm")
               + comma + pp.Suppress("mode") + integer("mode") + pp.Optional(comma) + end)

    # std::vector<int> as the logger prints it: { 1 24 340 340 }
    int_vector = lbrace + pp.Group(pp.ZeroOrMore(integer))("vals") + rbrace + end

    # Find-2.0 tensors_vector: { ConvX: <desc> -> 0x7f.., ConvW: NULL -> 0, }
    arg_tag = pp.Word(pp.alphanums + "_")("tag") + pp.Suppress(":")
    arg_desc = pp.SkipTo(pp.Literal("->"))("desc")
    arg = pp.Group(arg_tag + arg_desc + pp.Suppress("->") + pp.Word(pp.alphanums + "()")("buffer")
                   + pp.Optional(comma))
    tensor_args = lbrace + pp.Group(pp.ZeroOrMore(arg))("args") + rbrace + end

    return {"tensor_new": tensor_new, "tensor_old": tensor_old, "conv_new": conv_new,
            "conv_old": conv_old, "pool": pool, "activ": activ, "lrn": lrn, "softmax": softmax,
            "int_vector": int_vector, "tensor_args": tensor_args}


_G: dict[str, "pp.ParserElement"] = {}


def _grammar(name: str) -> "pp.ParserElement":
    if not _G:
        _G.update(_grammars())
    return _G[name]


def _parse(name: str, text: str) -> "pp.ParseResults":
    grammar = _grammar(name)
    from pyparsing import ParseBaseException
    try:
        return grammar.parse_string(text, parse_all=True)
    except ParseBaseException as e:
        raise DescriptorError(f"not a {name.split('_')[0]} descriptor: {text[:80]!r}") from e


# ----------------------------------------------------------------------------- memoising

T = TypeVar("T")
_CACHE_LIMIT = 16384


class _Memo(Generic[T]):
    """Bounded memo of a parse function keyed by the exact text; remembers failures too
    (a malformed value repeated every iteration must not re-run the grammar)."""

    def __init__(self, fn: Callable[[str], T]):
        self.fn = fn
        self.cache: "OrderedDict[str, Union[T, DescriptorError]]" = OrderedDict()
        self.misses = 0

    def __call__(self, text: str) -> T:
        hit = self.cache.get(text)
        if hit is None:
            self.misses += 1
            try:
                hit = self.fn(text)
            except DescriptorError as e:
                hit = e
            except (ValueError, TypeError, IndexError, OverflowError, RecursionError) as e:
                hit = DescriptorError(f"unreadable descriptor {text[:80]!r}: {e}")
            if len(self.cache) >= _CACHE_LIMIT:
                self.cache.popitem(last=False)
            self.cache[text] = hit
        if isinstance(hit, DescriptorError):
            raise hit
        return hit  # type: ignore[return-value]

    def clear(self) -> None:
        self.cache.clear()


_MEMOS: list[_Memo] = []


def _memo(fn: Callable[[str], T]) -> _Memo[T]:
    m = _Memo(fn)
    _MEMOS.append(m)
    return m


def clear_caches() -> None:
    """Forget every memoised parse (tests and benchmarks use this to measure misses)."""
    for m in _MEMOS:
        m.clear()


# ----------------------------------------------------------------------------- public parsers

def _ints(seq) -> tuple[int, ...]:
    return tuple(int(v) for v in seq)


def _csv(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",")) if text.strip() else ()


# Strict fast paths: exactly what MIOpen prints (trailing blank optional).
_TENSOR_NEW_RE = re.compile(r"\{((?:\d+(?:, \d+)*)?)\}, \{((?:\d+(?:, \d+)*)?)\}, ?(packed, ?)?"
                            r"(?:cast_type: (\w+))?")
_TENSOR_OLD_RE = re.compile(r"\d+(?:, \d+)*(?:, ?)?")
_CONV_NEW_RE = re.compile(r"conv([23])d, (miopenConvolution|miopenTranspose), "
                          r"(miopenPadding(?:Default|Same|Valid)), \{(\d+(?:, \d+)*)\}, \{(\d+(?:, \d+)*)\}, "
                          r"\{(\d+(?:, \d+)*)\}, ?(?:(\d+), ?)?(?:\{(\d+(?:, \d+)*)\}, ?)?")
_CONV_OLD_RE = re.compile(r"(miopen(?:Convolution|Transpose|GroupConv|Depthwise)), "
                          r"(\d+), (\d+), (\d+), (\d+), (\d+), (\d+), ?(?:(\d+), ?)?")
#: MIOpen 1.0-1.3 (2017-early 2018, MIOpen's wiki "Logger to Driver Decoder"): six numbers and
#: no mode name, ``p, q, u, v, dl, j, `` (pad h/w, stride h/w, dilation h/w; always a convolution)
_CONV_BARE_RE = re.compile(r"(\d+), ?(\d+), ?(\d+), ?(\d+), ?(\d+), ?(\d+),? ?")
_INT_VECTOR_RE = re.compile(r"\{ ((?:\d+ )*)\}")


def _tensor_fast(s: str) -> Optional[TensorDesc]:
    m = _TENSOR_NEW_RE.fullmatch(s)
    if m:
        lens, strides = _csv(m.group(1)), _csv(m.group(2))
        if len(strides) == len(lens):
            return TensorDesc(lens, strides, m.group(3) is not None, m.group(4))
        return None
    if _TENSOR_OLD_RE.fullmatch(s):
        return TensorDesc(_csv(s.rstrip(", ")))
    return None


@_memo
def parse_tensor(text: str) -> TensorDesc:
    """Either tensor format.  Raises DescriptorError for anything else."""
    s = text.strip()
    fast = _tensor_fast(s)
    if fast is not None:
        return fast
    if s.startswith("{"):
        r = _parse("tensor_new", s)
        lens, strides = _ints(r["lens"]), _ints(r["strides"])
        if strides and len(strides) != len(lens):
            raise DescriptorError(f"tensor has {len(lens)} lengths but {len(strides)} strides")
        return TensorDesc(lens, strides, "packed" in r, r.get("cast"))
    r = _parse("tensor_old", s)
    return TensorDesc(_ints(r["lens"]))


def _enum_name(r: pp.ParseResults, key: str = "enum") -> Union[str, int, None]:
    """The enum token of a grouped ``enum(...)`` result: a name, an int, or None if absent."""
    v = r.get(key)
    if v is None or not len(v):
        return None
    return v[0]


def _conv_fast(s: str) -> Optional[ConvDesc]:
    m = _CONV_NEW_RE.fullmatch(s)
    if m:
        nd = int(m.group(1))
        pads, strides, dils = _csv(m.group(4)), _csv(m.group(5)), _csv(m.group(6))
        adj = _csv(m.group(8)) if m.group(8) else ()
        if any(len(v) != nd for v in (pads, strides, dils)) or (adj and len(adj) != nd):
            return None  # let the full grammar report it
        return ConvDesc(nd, _CONV_MODES_NEW[m.group(2)], _PAD_MODES[m.group(3)], pads, strides, dils,
                        int(m.group(7)) if m.group(7) else 1, adj, "", True)
    m = _CONV_OLD_RE.fullmatch(s)
    if m:
        mode_v = m.group(1)
        p, q, u, v, dl, j = (int(m.group(i)) for i in range(2, 8))
        legacy = mode_v if mode_v in ("miopenGroupConv", "miopenDepthwise") else ""
        return ConvDesc(2, _CONV_MODES_OLD[mode_v], "default", (p, q), (u, v), (dl, j),
                        int(m.group(8)) if m.group(8) else 1, (), legacy, False)
    m = _CONV_BARE_RE.fullmatch(s)
    if m:
        p, q, u, v, dl, j = (int(m.group(i)) for i in range(1, 7))
        return ConvDesc(2, "conv", "default", (p, q), (u, v), (dl, j), 1, (), "", False)
    return None


@_memo
def parse_conv(text: str) -> ConvDesc:
    """Either convolution-descriptor format (§3.2)."""
    s = text.strip()
    fast = _conv_fast(s)
    if fast is not None:
        return fast
    if s.startswith("conv") and s[4:5].isascii() and s[4:5].isdigit():
        r = _parse("conv_new", s)
        nd = int(r["dim"])
        mode_v = _enum_name(r, "mode")
        pad_v = _enum_name(r, "padmode")
        if isinstance(mode_v, int):
            mode_v = _CONV_MODE_INTS.get(mode_v, str(mode_v))
        adj = _ints(r["adj"]) if "adj" in r else ()
        if mode_v is None:  # enum names not printed (MSVC-style build): infer from the tail
            mode_v = "miopenTranspose" if adj else "miopenConvolution"
        mode = _CONV_MODES_NEW.get(str(mode_v))
        if mode is None:
            raise DescriptorError(f"unknown convolution mode {mode_v!r}")
        if pad_v is None:
            pad_mode = "default"
        elif isinstance(pad_v, int):
            pad_mode = _PAD_MODE_INTS.get(pad_v, "")
        else:
            pad_mode = _PAD_MODES.get(str(pad_v), "")
        if not pad_mode:
            raise DescriptorError(f"unknown padding mode {pad_v!r}")
        pads, strides, dils = _ints(r["pads"]), _ints(r["strides"]), _ints(r["dilations"])
        for what, vals in (("pads", pads), ("strides", strides), ("dilations", dils)):
            if len(vals) != nd:
                raise DescriptorError(f"conv{nd}d descriptor has {len(vals)} {what}")
        if adj and len(adj) != nd:
            raise DescriptorError(f"conv{nd}d descriptor has {len(adj)} output paddings")
        groups = int(r["groups"]) if "groups" in r else 1
        return ConvDesc(nd, mode, pad_mode, pads, strides, dils, groups, adj, "", True)
    r = _parse("conv_old", s)
    mode_v = _enum_name(r, "mode")
    if isinstance(mode_v, int):
        mode_v = _CONV_MODE_INTS.get(mode_v, str(mode_v))
    mode = _CONV_MODES_OLD.get(str(mode_v))
    if mode is None:
        raise DescriptorError(f"unknown convolution mode {mode_v!r}")
    p, q, u, v, dl, j = _ints(r["vals"])
    groups = int(r["groups"]) if "groups" in r else 1
    legacy = str(mode_v) if mode_v in ("miopenGroupConv", "miopenDepthwise") else ""
    return ConvDesc(2, mode, "default", (p, q), (u, v), (dl, j), groups, (), legacy, False)


@_memo
def parse_pool(text: str) -> PoolDesc:
    r = _parse("pool", text.strip())
    mode_v = _enum_name(r)
    mode = _POOL_MODE_INTS.get(mode_v) if isinstance(mode_v, int) else _POOL_MODES.get(str(mode_v))
    if mode is None:
        raise DescriptorError(f"unknown pooling mode {mode_v!r}")
    vals = _ints(r["vals"])
    if len(vals) not in (6, 9):
        raise DescriptorError(f"pooling descriptor needs 6 or 9 numbers, got {len(vals)}")
    nd = len(vals) // 3
    return PoolDesc(mode, vals[:nd], vals[nd:2 * nd], vals[2 * nd:])


@_memo
def parse_activ(text: str) -> ActivDesc:
    r = _parse("activ", text.strip())
    mode_v = _enum_name(r)
    if isinstance(mode_v, int):
        mode = mode_v
    elif mode_v in ACTIVATION_NAMES:
        mode = ACTIVATION_NAMES.index(mode_v)
    else:
        raise DescriptorError(f"unknown activation mode {mode_v!r}")
    return ActivDesc(mode, float(r["alpha"]), float(r["beta"]), float(r["gamma"]))


@_memo
def parse_lrn(text: str) -> LRNDesc:
    r = _parse("lrn", text.strip())
    mode_v = _enum_name(r)
    mode = _LRN_MODE_INTS.get(mode_v) if isinstance(mode_v, int) else _LRN_MODES.get(str(mode_v))
    if mode is None:
        raise DescriptorError(f"unknown LRN mode {mode_v!r}")
    return LRNDesc(mode, int(r["n"]), float(r["alpha"]), float(r["beta"]), float(r["k"]))


@_memo
def parse_softmax_desc(text: str) -> SoftmaxDesc:
    r = _parse("softmax", text.strip())
    return SoftmaxDesc(float(r["alpha"]), float(r["beta"]), int(r["algorithm"]), int(r["mode"]))


@_memo
def parse_int_vector(text: str) -> tuple[int, ...]:
    """``{ 1 24 340 340 }`` (the logger's std::vector format); ``{ }`` gives ()."""
    s = text.strip()
    m = _INT_VECTOR_RE.fullmatch(s)
    if m is not None:
        return tuple(int(v) for v in m.group(1).split())
    return _ints(_parse("int_vector", s)["vals"])


@_memo
def parse_tensor_args(text: str) -> tuple[TensorArg, ...]:
    """A Find-2.0 ``tensors_vector``; descriptors that do not parse become None."""
    r = _parse("tensor_args", text.strip())
    out = []
    for a in r["args"]:
        desc_text = str(a["desc"]).strip()
        desc: Optional[TensorDesc]
        if desc_text == "NULL" or not desc_text:
            desc = None
        else:
            try:
                desc = parse_tensor(desc_text)
            except DescriptorError:
                desc = None
        out.append(TensorArg(str(a["tag"]), desc, str(a["buffer"])))
    return tuple(out)


# ----------------------------------------------------------------------------- scalars (regex: trivial)

_NUMBER_RE = re.compile(r"^\s*[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)\s*$", re.I)
_PTR_RE = re.compile(r"^(?:0x[0-9a-fA-F]+|[0-9a-fA-F]{16}|\(nil\))$")
_NULL_VALUES = frozenset({"nullptr", "0", "0x0", "(nil)", "NULL", "0000000000000000", "00000000"})


def parse_number(text: str) -> float:
    """A C++ ``double``/``float`` as ostream prints it (``1e-05``, ``0.5``, ``-nan``)."""
    if not _NUMBER_RE.match(text):
        raise DescriptorError(f"not a number: {text[:40]!r}")
    v = float(text)
    return v


def is_null_pointer(text: str) -> bool:
    """``nullptr`` (a null argument), ``0`` (a null reached through a pointer), Windows zeros."""
    return text.strip() in _NULL_VALUES


def is_pointer(text: str) -> bool:
    """An address as ``operator<<(const void*)`` prints it (Linux ``0x..``, Windows 16 hex digits)."""
    return bool(_PTR_RE.match(text.strip()))

"""API-trace blocks of MIOpen's RNN calls -> ``RNNProblem`` (see ``miotui.formats.miopen.trace_ops``).

What a block shows (``src/rnn_api.cpp``, ``src/rnn.cpp``): ``rnnDesc`` by its contents (``hsize,
nLayers, nHiddenTensorsPerLayer, workspaceScale, rnnMode, dirMode, algoMode, inputMode,
biasMode, <dropoutDesc>, `` as integers), ``sequenceLen``, ``hxDesc`` ({layers x directions,
batch, hidden}) and ``wDesc``/``dwDesc`` (all weights).  The per-step ``xDesc``/``dxDesc``
arrays are pointers to descriptor handles, which the logger prints as an address, so the
input size is worked out from the weight count (it is linear in it) unless the block prints
a tensor there; the batch is the first step's (``hxDesc``'s).  The descriptor does not print
its data type, padding mode or dropout rate: those come from the ``miopenSetRNNDescriptor``
(``_V2``), ``miopenSetRNNPaddingMode`` and ``miopenSetDropoutDescriptor`` blocks that set
it up, remembered by the descriptor's contents (the same seven numbers).

The sequence-tensor API (``miopenRNNForward``, ``miopenRNNBackwardSeqData``,
``miopenRNNBackwardWeightsSeqTensor``) prints its ``xDesc`` as ``{lens{batch, steps, vector },
layout{...}, [padded_seq_layout, ]padding{...}, sequence_len[...], packed}``, which gives the
batch, the longest sequence, every sample's length and the IO layout, as its Command line does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Optional

from miotui.events import Event, Sighting
from miotui.formats.miopen.grammar import DescriptorError, TensorDesc, parse_tensor
from miotui.formats.miopen.trace_params import DATA_TYPES, BlockError, BlockParams, make_problem, opt_tensor
from miotui.problems import RNN_MODES, RNNProblem
from miotui.problems.base import prod

SOURCE = "api-trace"
#: miopenRNNAlgo_t (the newest adds 2, rounded dynamic)
_ALGOS = (0, 1, 2)


@dataclass(frozen=True)
class RNNDesc:
    """What a printed RNN descriptor says, and what its set-up blocks added."""

    hidden: int
    layers: int
    mode: str
    bidirectional: bool
    algo: int
    skip_input: bool
    bias: bool
    dtype: Optional[str] = None
    padded: bool = False
    dropout: float = 0.0

    @property
    def key(self) -> tuple:
        return (self.hidden, self.layers, self.mode, self.bidirectional, self.algo, self.skip_input, self.bias)


def _enum(text: str, names: tuple[str, ...], what: str) -> int:
    """An enum printed as its number (or, defensively, its name)."""
    t = text.strip()
    if t.isascii() and t.lstrip("-").isdigit():
        return int(t)
    for i, name in enumerate(names):
        if name and t.endswith(name):
            return i
    raise BlockError(f"{what} {t[:30]!r} is not a number")


_MODE_NAMES = ("miopenRNNRELU", "miopenRNNTANH", "miopenLSTM", "miopenGRU")


def parse_rnn_desc(text: str) -> RNNDesc:
    """``hsize, nLayers, nHiddenTensorsPerLayer, workspaceScale, rnnMode, dirMode, algoMode,
    inputMode, biasMode, <dropoutDesc>, ``."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) < 9:
        raise BlockError(f"rnnDesc {text[:60]!r} is not an RNN descriptor (hsize, nLayers, ...)")
    try:
        hidden, layers = int(parts[0]), int(parts[1])
    except ValueError:
        raise BlockError(f"rnnDesc {text[:60]!r} does not start with the hidden size and layer count") from None
    mode = _enum(parts[4], _MODE_NAMES, "rnnMode")
    if not 0 <= mode < len(RNN_MODES):
        raise BlockError(f"rnnMode {mode} is not relu, tanh, lstm or gru")
    algo = _enum(parts[6], (), "algoMode")
    if algo not in _ALGOS:
        raise BlockError(f"RNN algoMode {algo} is unknown")
    return RNNDesc(hidden, layers, RNN_MODES[mode], _enum(parts[5], (), "dirMode") == 1, algo,
                   _enum(parts[7], (), "inputMode") == 1, _enum(parts[8], (), "biasMode") == 1)


_SEQ_LENS_RE = re.compile(r"lens\{([^}]*)\}")
_SEQ_LAYOUT_RE = re.compile(r"layout\{([^}]*)\}")
_SEQ_LENGTHS_RE = re.compile(r"sequence_len\[([^\]]*)\]")


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in re.split(r"[,\s]+", text.strip()) if v)
    except ValueError:
        raise BlockError(f"{text[:40]!r} is not a list of integers") from None


def parse_seq_tensor(text: str) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """A sequence tensor: (lens (batch, steps, vector), sample lengths, IO layout number as
    LogCmdRNN prints it: 1 seq-major packed, 2 seq-major padded, 3 batch-major padded, 0 other)."""
    m = _SEQ_LENS_RE.search(text)
    if m is None:
        raise BlockError(f"{text[:60]!r} is not a sequence tensor descriptor")
    lens = _ints(m.group(1))
    if len(lens) != 3 or min(lens) <= 0:
        raise BlockError(f"sequence tensor lengths {list(lens)} are not (batch, steps, vector)")
    order = _SEQ_LAYOUT_RE.search(text)
    dim_order = _ints(order.group(1)) if order else ()
    padded = "padded_seq_layout" in text
    layout = {((0, 1, 2), True): 3, ((1, 0, 2), False): 1, ((1, 0, 2), True): 2}.get((dim_order, padded), 0)
    m = _SEQ_LENGTHS_RE.search(text)
    return lens, (_ints(m.group(1)) if m else ()), layout


class RNNTrace:
    """The RNN part of the trace decoder: descriptor set-up remembered, passes decoded."""

    def __init__(self, infer_dtype: Callable, last_dropout: Callable[[], float]):
        self._infer_dtype = infer_dtype
        self._last_dropout = last_dropout
        self._descs: dict[tuple, RNNDesc] = {}

    def handlers(self) -> dict[str, Callable[[str, BlockParams], list[Event]]]:
        h: dict[str, Callable[[str, BlockParams], list[Event]]] = {
            "miopenSetRNNDescriptor": self.set_desc, "miopenSetRNNDescriptor_V2": self.set_desc,
            "miopenSetRNNPaddingMode": self.set_padding,
        }
        for name in ("miopenRNNForwardTraining", "miopenRNNForwardInference", "miopenRNNBackwardData",
                     "miopenRNNBackwardWeights"):
            h[name] = self.pass_
        for name in ("miopenRNNForward", "miopenRNNBackwardSeqData", "miopenRNNBackwardWeightsSeqTensor"):
            h[name] = self.seq_pass
        return h

    def _remember(self, desc: RNNDesc) -> None:
        if len(self._descs) >= 256:
            self._descs.pop(next(iter(self._descs)))
        self._descs[desc.key] = desc

    def set_desc(self, name: str, p: BlockParams) -> list[Event]:
        try:
            mode = p.int("rnnMode", "rnnMode")
            desc = RNNDesc(p.int("hsize", "hsize"), p.int("nlayers", "nlayers"), RNN_MODES[mode],
                           p.int("direction", "direction") == 1, p.int("algo", "algo"),
                           p.int("inMode", "inMode") == 1, p.int("biasMode", "biasMode") == 1,
                           DATA_TYPES.get(p.opt_int("dataType") if p.get("dataType") else -1))
        except (BlockError, IndexError):
            return []
        if name.endswith("_V2"):
            desc = replace(desc, dropout=self._last_dropout())
        self._remember(desc)
        return []

    def set_padding(self, name: str, p: BlockParams) -> list[Event]:
        text, mode = p.get("rnnDesc"), p.opt_int("paddingMode")
        if text is None or mode is None:
            return []
        try:
            desc = parse_rnn_desc(text)
        except BlockError:
            return []
        known = self._descs.get(desc.key, desc)
        self._remember(replace(known, padded=mode == 1))
        return []

    def _desc(self, p: BlockParams, warnings: list[str]) -> RNNDesc:
        desc = parse_rnn_desc(p.need("RNN descriptor", "rnnDesc"))
        known = self._descs.get(desc.key)
        if known is None:
            warnings.append("no miopenSetRNNDescriptor for this descriptor in the trace: padding and dropout "
                            "assumed off")
            return desc
        return known

    def _dtype(self, desc: RNNDesc, tensors: list[Optional[TensorDesc]], warnings: list[str]) -> str:
        if desc.dtype and desc.dtype != "unknown":
            return desc.dtype
        return self._infer_dtype(tensors[0], tensors[1:], warnings)

    def pass_(self, name: str, p: BlockParams) -> list[Event]:
        warnings: list[str] = []
        desc = self._desc(p, warnings)
        steps = p.int("sequenceLen", "sequenceLen", "seqLen")
        if steps <= 0:
            raise BlockError(f"sequenceLen {steps} is not a number of steps")
        direction = {"miopenRNNBackwardData": "bwd", "miopenRNNBackwardWeights": "wrw"}.get(name, "fwd")
        hx = opt_tensor(p, "hxDesc")
        weights = opt_tensor(p, "dwDesc" if direction == "wrw" else "wDesc")
        x = _tensor_or_none(p.get("dxDesc" if direction == "bwd" else "xDesc"))
        if x is not None and x.rank == 2:
            batch, in_size = x.lens
        else:
            if hx is None or hx.rank != 3:
                raise BlockError("neither the input nor hxDesc tells the batch size")
            batch = hx.lens[1]
            in_size = self._input_size(desc, weights)
        dtype = self._dtype(desc, [hx, weights], warnings)
        problem = make_problem(lambda: RNNProblem(
            direction, dtype, desc.mode, (batch,), steps, in_size, desc.hidden, desc.layers, desc.bias,
            "skip" if desc.skip_input else "linear", desc.bidirectional, name == "miopenRNNForwardInference",
            desc.padded, desc.algo, desc.dropout))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]

    @staticmethod
    def _input_size(desc: RNNDesc, weights: Optional[TensorDesc]) -> int:
        """The input vector size from the weight count, which is linear in it."""
        if desc.skip_input:
            return desc.hidden
        if weights is None:
            raise BlockError("the input size is not in the block (its x descriptors print as an address) and "
                             "there is no weight descriptor to work it out from")

        def count(in_size: int) -> int:
            return RNNProblem("fwd", "fp32", desc.mode, (1,), 1, in_size, desc.hidden, desc.layers, desc.bias,
                              "linear", desc.bidirectional).weight_count

        base, slope = count(1), count(2) - count(1)
        total = prod(weights.lens)
        in_size, rest = divmod(total - base, slope) if slope else (0, 1)
        if rest or in_size + 1 <= 0:
            raise BlockError(f"{total} weights do not fit this RNN descriptor for any input size")
        return in_size + 1

    def seq_pass(self, name: str, p: BlockParams) -> list[Event]:
        warnings: list[str] = []
        desc = self._desc(p, warnings)
        lens, seq_lens, layout = parse_seq_tensor(p.need("sequence tensor", "xDesc"))
        if name == "miopenRNNForward":
            direction = "fwd"
            inference = p.opt_int("fwdMode") == 1
        else:
            direction, inference = ("bwd" if name == "miopenRNNBackwardSeqData" else "wrw"), False
        dtype = self._dtype(desc, [opt_tensor(p, "hDesc"), opt_tensor(p, "cDesc")], warnings)
        problem = make_problem(lambda: RNNProblem(
            direction, dtype, desc.mode, (lens[0],), lens[1], lens[2], desc.hidden, desc.layers, desc.bias,
            "skip" if desc.skip_input else "linear", desc.bidirectional, inference, False, desc.algo,
            desc.dropout, "rnn_seq", seq_lens, layout))
        return [Sighting(problem, "execution", SOURCE, tuple(warnings))]


def _tensor_or_none(text: Optional[str]) -> Optional[TensorDesc]:
    """A tensor when the value is one (not an address)."""
    if not text or not text.lstrip().startswith("{"):
        return None
    try:
        return parse_tensor(text)
    except DescriptorError:
        return None

"""Recurrent layers: vanilla RNN (ReLU or tanh), LSTM and GRU, stacked and bidirectional.

MIOpen describes an RNN by its descriptor (mode, hidden size, layers, direction mode, input
mode, bias, algorithm, dropout) and the per-time-step input tensors; its driver command says
the same (``rnn -n <batch per step> -W <input size> -H <hidden size> -l <layers> -m lstm -k
<steps> ...``).  One ``RNNProblem`` is one of the three passes MIOpen logs separately:
forward (training or inference), backward data, backward weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from miotui.problems.base import CONV_DIRECTIONS, ProblemBase, check, check_common, check_finite, check_positive
from miotui.problems.limits import collapse_repeats

RNN_MODES = ("relu", "tanh", "lstm", "gru")
#: gates per cell: the number of hidden-sized matrix products each step does per layer
RNN_GATES = {"relu": 1, "tanh": 1, "lstm": 4, "gru": 3}
RNN_APIS = ("rnn", "rnn_seq")
#: what one form of an RNN call may lack although another has it: an API block prints only
#: the first time step's tensor (not every step's batch) and an RNN descriptor without its
#: padding mode and dropout; MIOpen's Command line for the descriptor-array API has no -a
_RNN_LOSSY = frozenset({"batch", "padded", "dropout", "algo"})


@dataclass(frozen=True)
class RNNProblem(ProblemBase):
    """One pass of a (possibly stacked, bidirectional) RNN over ``seq_len`` time steps.

    ``batch`` is the batch size of each time step, as MIOpen's driver takes it (one value
    when every step has the same; a non-increasing list for packed variable-length
    sequences, one per step, at most ``MAX_LISTED`` of them; shown as ``listed_batch``).
    ``api`` says which MIOpen entry point (and driver) it came from: ``rnn`` (descriptor
    arrays) or ``rnn_seq`` (sequence tensors, with per-sample ``seq_lens``).
    """

    op: ClassVar[str] = "rnn"
    memory_bound: ClassVar[bool] = False
    layout: ClassVar[str] = "TNC"
    direction: str
    dtype: str
    mode: str
    batch: tuple[int, ...]
    seq_len: int
    in_size: int
    hidden: int
    layers: int = 1
    bias: bool = True
    input_mode: str = "linear"
    bidirectional: bool = False
    inference: bool = False
    padded: bool = False
    algo: int = 0
    dropout: float = 0.0
    api: str = "rnn"
    seq_lens: tuple[int, ...] = ()
    io_layout: int = 0

    def __post_init__(self) -> None:
        check_common("rnn", self.direction, CONV_DIRECTIONS, self.dtype)
        check(self.mode in RNN_MODES, f"RNN mode must be one of {', '.join(RNN_MODES)}, got {self.mode!r}")
        check(isinstance(self.batch, tuple) and len(self.batch) >= 1, f"batch must be a tuple, got {self.batch!r}")
        for b in self.batch:
            check_positive("batch", b)
        check(list(self.batch) == sorted(self.batch, reverse=True),
              f"per-step batch sizes must not increase, got {self.batch!r}")
        for name in ("seq_len", "in_size", "hidden", "layers"):
            check_positive(name, getattr(self, name))
        check(len(self.batch) in (1, self.seq_len),
              f"give one batch size, or one per time step ({self.seq_len}), got {len(self.batch)}")
        check(self.input_mode in ("linear", "skip"), f"input mode must be linear or skip, got {self.input_mode!r}")
        check(self.input_mode != "skip" or self.in_size == self.hidden,
              "skip input mode needs the input size to equal the hidden size")
        check(not self.inference or self.direction == "fwd", "only a forward pass can be inference")
        check(self.api in RNN_APIS, f"RNN api must be rnn or rnn_seq, got {self.api!r}")
        check(self.algo in (0, 1, 2), f"RNN algorithm must be 0, 1 or 2, got {self.algo!r}")
        check_finite("dropout", self.dropout)
        check(0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1), got {self.dropout}")
        for v in self.seq_lens:
            check_positive("seq_lens", v)
            check(v <= self.seq_len, f"a sequence length ({v}) exceeds the maximum ({self.seq_len})")
        check(self.io_layout in (0, 1, 2, 3), f"io layout must be 0..3, got {self.io_layout!r}")

    @property
    def listed_batch(self) -> tuple[int, ...]:
        """``batch`` as the driver's ``-n`` takes it: the repeated tail collapsed (the driver
        repeats the last size over the remaining steps).  What keys, JSON and driver commands
        show, so a 60-byte line asking for 65,536 steps of two batch sizes writes two numbers,
        not 65,536 (``miotui.problems.limits``)."""
        return collapse_repeats(self.batch, self.seq_len)

    def shown_values(self) -> tuple:
        values = self._field_values()(self)
        if len(self.batch) == 1:
            return values
        at = self._field_names().index("batch")
        return values[:at] + (self.listed_batch,) + values[at + 1:]

    @property
    def lossy_fields(self) -> frozenset[str]:
        """Fields one form of a call may lack although another form of it has them."""
        return _RNN_LOSSY

    @property
    def n(self) -> int:
        """The batch of the first (largest) time step."""
        return self.batch[0]

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def gates(self) -> int:
        return RNN_GATES[self.mode]

    @property
    def input_shape(self) -> tuple[int, ...]:
        """(time steps, batch, input size): the packed input as one tensor."""
        return (self.seq_len, self.n, self.in_size)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.seq_len, self.n, self.hidden * self.directions)

    @property
    def rows(self) -> int:
        """Input vectors processed per layer: the sum of the per-step batch sizes, or of the
        per-sample lengths where ``rnn_seq`` gives them (padding steps are not computed; a
        list shorter than the batch stands for its last length repeated, as the driver's ``-K``
        does, and is never expanded: the batch is a logged number)."""
        if self.seq_lens:
            lens = self.seq_lens[:self.n]
            return sum(lens) + (self.n - len(lens)) * lens[-1]
        return self.batch[0] * self.seq_len if len(self.batch) == 1 else sum(self.batch)

    def layer_in(self, layer: int) -> int:
        """Input width of ``layer`` (0 = the first; the others read the previous layer's
        hidden state of each direction); 0 when the first layer skips its input product."""
        if layer > 0:
            return self.hidden * self.directions
        return 0 if self.input_mode == "skip" else self.in_size

    def _layer_weights(self, width: int) -> int:
        """Weights of one direction of one layer whose input is ``width`` wide."""
        per_dir = self.gates * self.hidden * (width + self.hidden)
        return per_dir + (2 * self.gates * self.hidden if self.bias else 0)

    @property
    def weight_count(self) -> int:
        """Closed form (the first layer, then ``layers - 1`` alike): ``layers`` is a logged
        number up to 2**31 - 1, and a loop over it took half an hour (issue 27)."""
        first = self._layer_weights(self.layer_in(0))
        rest = (self.layers - 1) * self._layer_weights(self.hidden * self.directions)
        return (first + rest) * self.directions

    @property
    def flops(self) -> int:
        """2 multiply-adds per weight per input vector, every layer and direction (the same
        count for the backward-data and backward-weights passes); closed form, as
        ``weight_count``."""
        widths = (self.layer_in(0) + self.hidden) + (self.layers - 1) * (self.hidden * self.directions + self.hidden)
        return 2 * self.rows * self.gates * self.hidden * widths * self.directions

    @property
    def bytes_moved(self) -> int:
        activations = self.rows * (self.in_size + self.hidden * self.directions * self.layers * (1 + self.gates))
        return (activations + self.weight_count) * self.element_bytes

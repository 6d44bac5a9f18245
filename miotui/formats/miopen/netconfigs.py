"""Network configs of operations other than convolution -> problems.

MIOpen keys its kernel and invoker caches by a "network config" string, and its level-6
lines print it (``Returning an invoker for problem <config> and algorithm ...``, ``Invoker
registered for algorithm <config>``, ``No invokers found for <config>``).  For convolutions
the config is decoded by ``miotui.formats.miopen.keys``; this module reads the others, each in the
forms MIOpen has printed (read from MIOpen's ``*/problem_description.cpp``):

* batch norm (2025): ``C x D x H x W x N x <in layout> x <out layout> [x <din layout>] x
  <x> x <y> x <scale> x <bias> x <mean> x <variance> [x <dx>] types x <mixed> x Trn|Inf|Bwd x
  (<save> x <running> | InvVar|Var | <use saved>) x <mode> x <activation mode>``;
* softmax: ``sfmfwd-``/``sfmbwd-`` then the tensor lengths (``n_x1c_x5h_x1w_x1...`` or
  ``n1c5h1w1<type>``), ``a<alpha>b<beta>algo<a>mode<m>``;
* pooling: ``m<mode>_i<...>_dt<type>_ker<window>_str<stride>...``: no input shape, so it
  names the op and direction but not the layer (``PoolConfig``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from miotui.formats.miopen.keys import DecodedKey, ProblemKeyError
from miotui.problems import BatchNormProblem, ProblemError, SoftmaxProblem

_TYPES = {"FP32": "fp32", "FP16": "fp16", "BF16": "bf16", "FP64": "fp64", "float": "fp32", "half": "fp16",
          "bfloat16": "bf16", "double": "fp64"}
_BN_DIRECTIONS = {"Trn": "fwd_train", "Inf": "fwd_infer", "Bwd": "bwd"}
_BN_RE = re.compile(r"^(\d+)x(\d+)x(\d+)x(\d+)x(\d+)x(N[A-Z]+)x(N[A-Z]+)x")
_SOFTMAX_RE = re.compile(
    r"^sfm(fwd|bwd)-n_?x?(\d+)c_?x?(\d+)h_?x?(\d+)w_?x?(\d+)(?:n_y\d+c_y\d+h_y\d+w_y\d+)?(.*?)"
    r"a(-?[\d.]+(?:e[-+]?\d+)?)b(-?[\d.]+(?:e[-+]?\d+)?)algo(\d)mode(\d)")
_POOL_RE = re.compile(r"^m(\d)_i\d+_dt(\d+)_ker(\d+)x(\d+)_str(\d+)x(\d+)_")
DTYPE_GUESS = "the network config does not say the data type; guessed fp32"


def is_bn_config(text: str) -> bool:
    return _BN_RE.match(text) is not None


def is_softmax_config(text: str) -> bool:
    return text.startswith(("sfmfwd-", "sfmbwd-"))


def decode_bn_config(text: str) -> DecodedKey:
    """A 2025 batch-norm network config -> one BatchNormProblem."""
    m = _BN_RE.match(text)
    if m is None:
        raise ProblemKeyError(f"not a batch-norm network config: {text[:60]!r}")
    c, d, h, w, n = (int(m.group(i)) for i in range(1, 6))
    tokens = text.split("x")
    rest = tokens[7:]
    direction = next((_BN_DIRECTIONS[t] for t in rest if t in _BN_DIRECTIONS), None)
    if direction is None:
        raise ProblemKeyError(f"batch-norm network config without a direction: {text[:80]!r}")
    if direction == "bwd":
        rest = rest[1:]                  # the backward form adds the dx layout
    types = [_TYPES.get(t) for t in rest[:6]]
    if None in types:
        raise ProblemKeyError(f"batch-norm network config with an unknown data type: {text[:80]!r}")
    after = rest[rest.index(next(k for k, v in _BN_DIRECTIONS.items() if v == direction)) + 1:]
    save = running = False
    if direction == "fwd_train" and len(after) >= 2:
        save, running = after[0] == "1", after[1] == "1"
        after = after[2:]
    else:
        after = after[1:]
    mode = "spatial" if after[:1] in (["1"], ["Spatial"], ["spatial"]) else "per_activation"
    spatial = (d, h, w) if d > 1 else (h, w)
    layout = m.group(6)
    if len(spatial) == 2:   # a 2-D problem is printed with D = 1, its layout may name the D axis
        layout = {"NCDHW": "NCHW", "NDHWC": "NHWC"}.get(layout, layout)
    try:
        problem = BatchNormProblem(direction, types[0], n, c, spatial, mode, layout, save, running, types[2])
    except ProblemError as e:
        raise ProblemKeyError(str(e)) from None
    return DecodedKey((problem,), ())


def decode_softmax_config(text: str) -> DecodedKey:
    """A softmax network config (either form) -> one SoftmaxProblem."""
    m = _SOFTMAX_RE.match(text)
    if m is None:
        raise ProblemKeyError(f"not a softmax network config: {text[:60]!r}")
    direction = "fwd" if m.group(1) == "fwd" else "bwd"
    n, c, h, w = (int(m.group(i)) for i in range(2, 6))
    type_text = m.group(6).strip("_")
    dtype = next((v for k, v in _TYPES.items() if type_text.startswith(k)), None)
    warnings: tuple[str, ...] = ()
    if dtype is None:
        dtype, warnings = "fp32", (DTYPE_GUESS,)
    try:
        problem = SoftmaxProblem(direction, dtype, n, c, (h, w), int(m.group(9)), int(m.group(10)),
                                 float(m.group(7)), float(m.group(8)))
    except (ProblemError, ValueError) as e:
        raise ProblemKeyError(str(e)) from None
    return DecodedKey((problem,), warnings)


@dataclass(frozen=True)
class PoolConfig:
    """What a pooling network config says: the op and the window, not the input shape."""

    mode: int
    window: tuple[int, int]
    strides: tuple[int, int]


def read_pool_config(text: str) -> Optional[PoolConfig]:
    m = _POOL_RE.match(text)
    if m is None:
        return None
    return PoolConfig(int(m.group(1)), (int(m.group(3)), int(m.group(4))), (int(m.group(5)), int(m.group(6))))

"""The network a generated log comes from (ResNet-50) and the framework's calls into MIOpen.

The ground truth (what a decoder must find) is computed from these calls, independently
of how any format renders them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

# --------------------------------------------------------------------------------------
# The network: ResNet-50 (torchvision v1.5: stride on the 3x3 convolution).
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tensor:
    """A packed NCHW fp32 tensor's lengths; strides and both print formats derive from them."""

    n: int
    c: int
    h: int
    w: int

    @property
    def lens(self) -> tuple[int, int, int, int]:
        return (self.n, self.c, self.h, self.w)

    @property
    def strides(self) -> tuple[int, int, int, int]:
        return (self.c * self.h * self.w, self.h * self.w, self.w, 1)

    @property
    def elements(self) -> int:
        return self.n * self.c * self.h * self.w

    def old(self) -> str:
        """MIOpen < ROCm 5.5 (``LogRange(lens, ", ")``)."""
        return f"{self.n}, {self.c}, {self.h}, {self.w}"

    def new(self) -> str:
        """ROCm >= 5.5: lengths, strides, ``packed, `` (trailing space included)."""
        s = self.strides
        return (f"{{{self.n}, {self.c}, {self.h}, {self.w}}}, "
                f"{{{s[0]}, {s[1]}, {s[2]}, {s[3]}}}, packed, ")


@dataclass(frozen=True)
class ConvLayer:
    """A 2-D convolution without bias (square filter, equal pads/strides, no dilation)."""

    name: str
    x: Tensor
    k: int
    r: int
    stride: int
    pad: int

    @property
    def w(self) -> Tensor:
        return Tensor(self.k, self.x.c, self.r, self.r)

    @property
    def y(self) -> Tensor:
        ho = (self.x.h + 2 * self.pad - self.r) // self.stride + 1
        wo = (self.x.w + 2 * self.pad - self.r) // self.stride + 1
        return Tensor(self.x.n, self.k, ho, wo)

    @property
    def shape_key(self) -> tuple:
        return ("conv", self.x.lens, self.k, self.r, self.stride, self.pad)


@dataclass(frozen=True)
class BNLayer:
    """Spatial batch normalisation (``bn_mode = 1``)."""

    name: str
    x: Tensor

    @property
    def y(self) -> Tensor:
        return self.x

    @property
    def param(self) -> Tensor:
        return Tensor(1, self.x.c, 1, 1)


@dataclass(frozen=True)
class ReluLayer:
    """ReLU through ``miopenActivation*`` (mode 3)."""

    name: str
    x: Tensor

    @property
    def y(self) -> Tensor:
        return self.x


@dataclass(frozen=True)
class PoolLayer:
    """2-D pooling; ``mode`` 0 = max, 1 = average (miopenPoolingMode_t)."""

    name: str
    x: Tensor
    mode: int
    win: int
    stride: int
    pad: int

    @property
    def y(self) -> Tensor:
        ho = (self.x.h + 2 * self.pad - self.win) // self.stride + 1
        wo = (self.x.w + 2 * self.pad - self.win) // self.stride + 1
        return Tensor(self.x.n, self.x.c, ho, wo)


Layer = ConvLayer | BNLayer | ReluLayer | PoolLayer


def resnet50_layers(batch: int = 32, image: int = 224) -> tuple[Layer, ...]:
    """The MIOpen-backed ops of one ResNet-50 forward pass, in execution order.

    53 convolutions, 53 batch norms, 49 ReLUs, the 3x3/2 max pool after ``conv1`` and the
    7x7 global average pool (the final fully-connected layer is a GEMM, not MIOpen).
    """
    layers: list[Layer] = []
    x = Tensor(batch, 3, image, image)
    conv1 = ConvLayer("conv1", x, 64, 7, 2, 3)
    layers += [conv1, BNLayer("bn1", conv1.y), ReluLayer("relu", conv1.y)]
    pool = PoolLayer("maxpool", conv1.y, 0, 3, 2, 1)
    layers.append(pool)
    x = pool.y
    for stage, (width, blocks, stride) in enumerate(((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), 1):
        out_c = width * 4
        for b in range(blocks):
            s = stride if b == 0 else 1
            p = f"layer{stage}.{b}"
            c1 = ConvLayer(f"{p}.conv1", x, width, 1, 1, 0)
            c2 = ConvLayer(f"{p}.conv2", c1.y, width, 3, s, 1)
            c3 = ConvLayer(f"{p}.conv3", c2.y, out_c, 1, 1, 0)
            layers += [c1, BNLayer(f"{p}.bn1", c1.y), ReluLayer(f"{p}.relu1", c1.y),
                       c2, BNLayer(f"{p}.bn2", c2.y), ReluLayer(f"{p}.relu2", c2.y),
                       c3, BNLayer(f"{p}.bn3", c3.y)]
            if b == 0:
                ds = ConvLayer(f"{p}.downsample.0", x, out_c, 1, s, 0)
                layers += [ds, BNLayer(f"{p}.downsample.1", ds.y)]
            layers.append(ReluLayer(f"{p}.relu3", c3.y))
            x = c3.y
    layers.append(PoolLayer("avgpool", x, 1, x.h, 1, 0))
    return tuple(layers)


# --------------------------------------------------------------------------------------
# Calls: what the framework asks MIOpen to do, in order.  The ground truth comes from
# these, independently of how a format renders them.
# --------------------------------------------------------------------------------------

#: Call kinds.  ``setup_*`` create/set descriptors; ``*_ws`` are workspace queries.
CALL_KINDS = ("setup_conv", "setup_bn", "setup_relu", "setup_pool", "conv_ws", "conv_find", "conv",
              "bn_train", "bn_bwd", "bn_infer", "pool_ws", "pool_fwd", "pool_bwd", "relu_fwd", "relu_bwd")


@dataclass(frozen=True)
class Call:
    """One framework call into MIOpen (``direction`` is fwd/bwd/wrw for convolutions)."""

    kind: str
    layer: Layer
    direction: str = "fwd"
    phase: str = "train"          # "train" or "infer"
    thread: int = 0               # index into the log's thread ids (MPMT formats)


@dataclass(frozen=True)
class TruthOp:
    """One operation of the ground truth: what a decoder should find.

    ``key`` is an MIOpenDriver-like argument string without ``-t``/``-s``/``-r``, e.g.
    ``conv -n 32 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -l 1 -j 1 -m conv -g 1 -F 1``.
    """

    op: str            # conv | bnorm | pool | activ
    direction: str     # conv: fwd/bwd/wrw; bnorm: fwd_train/fwd_infer/bwd; pool/activ: fwd/bwd
    key: str


@dataclass(frozen=True)
class GroundTruth:
    """Counts per operation for a complete log (``iterations`` mode; not for ``size`` mode)."""

    executions: dict[TruthOp, int]
    finds: dict[TruthOp, int]

    @property
    def distinct(self) -> int:
        return len(set(self.executions) | set(self.finds))

    def total_executions(self, op: str | None = None) -> int:
        return sum(n for t, n in self.executions.items() if op is None or t.op == op)

    def total_finds(self) -> int:
        return sum(self.finds.values())


def _conv_key(layer: ConvLayer, direction: str) -> str:
    x, f = layer.x, {"fwd": 1, "bwd": 2, "wrw": 4}[direction]
    return (f"conv -n {x.n} -c {x.c} -H {x.h} -W {x.w} -k {layer.k} -y {layer.r} -x {layer.r} "
            f"-p {layer.pad} -q {layer.pad} -u {layer.stride} -v {layer.stride} -l 1 -j 1 -m conv -g 1 -F {f}")


def truth_op(call: Call) -> TruthOp | None:
    """The operation a call executes or searches (None for set-up and workspace queries)."""
    layer = call.layer
    if call.kind in ("conv", "conv_find"):
        assert isinstance(layer, ConvLayer)
        return TruthOp("conv", call.direction, _conv_key(layer, call.direction))
    x = layer.x
    dims = f"-n {x.n} -c {x.c} -H {x.h} -W {x.w}"
    if call.kind in ("bn_train", "bn_bwd", "bn_infer"):
        forw = {"bn_train": "--forw 1 -b 0", "bn_infer": "--forw 2 -b 0", "bn_bwd": "--forw 0 -b 1"}[call.kind]
        direction = {"bn_train": "fwd_train", "bn_infer": "fwd_infer", "bn_bwd": "bwd"}[call.kind]
        return TruthOp("bnorm", direction, f"bnorm {dims} -m 1 {forw}")
    if call.kind in ("pool_fwd", "pool_bwd"):
        assert isinstance(layer, PoolLayer)
        mode = "max" if layer.mode == 0 else "avg"
        direction = "fwd" if call.kind == "pool_fwd" else "bwd"
        return TruthOp("pool", direction,
                       f"pool {dims} -y {layer.win} -x {layer.win} -p {layer.pad} -q {layer.pad} "
                       f"-v {layer.stride} -u {layer.stride} -m {mode} -F {1 if direction == 'fwd' else 0}")
    if call.kind in ("relu_fwd", "relu_bwd"):
        direction = "fwd" if call.kind == "relu_fwd" else "bwd"
        return TruthOp("activ", direction,
                       f"activ {dims} -m 3 --forw {1 if direction == 'fwd' else 2} -A 1 -B 0 -G 1")
    return None


def training_calls(layers: Sequence[Layer], *, first: bool, concurrent_backward: bool = False) -> list[Call]:
    """The calls of one training iteration (forward then backward).

    ``first``: descriptors are set up and each distinct convolution problem goes through a
    workspace query and a Find before it runs.  ``concurrent_backward``: the
    backward-weights call of a layer runs on thread 1 (TensorFlow's executor).
    """
    calls: list[Call] = []
    found: set[tuple] = set()
    setup_relu_done = False

    def conv_calls(layer: ConvLayer, direction: str, thread: int = 0) -> None:
        if first and (layer.shape_key, direction) not in found:
            found.add((layer.shape_key, direction))
            calls.append(Call("conv_ws", layer, direction, thread=thread))
            calls.append(Call("conv_find", layer, direction, thread=thread))
        calls.append(Call("conv", layer, direction, thread=thread))

    for layer in layers:
        if isinstance(layer, ConvLayer):
            if first:
                calls.append(Call("setup_conv", layer))
            conv_calls(layer, "fwd")
        elif isinstance(layer, BNLayer):
            if first:
                calls.append(Call("setup_bn", layer))
            calls.append(Call("bn_train", layer))
        elif isinstance(layer, ReluLayer):
            if first and not setup_relu_done:
                calls.append(Call("setup_relu", layer))
                setup_relu_done = True
            calls.append(Call("relu_fwd", layer))
        else:
            if first:
                calls.append(Call("setup_pool", layer))
                calls.append(Call("pool_ws", layer))
            calls.append(Call("pool_fwd", layer))
    for layer in reversed(layers):
        if isinstance(layer, ConvLayer):
            if layer.name != "conv1":  # the image needs no gradient
                conv_calls(layer, "bwd")
            conv_calls(layer, "wrw", 1 if concurrent_backward else 0)
        elif isinstance(layer, BNLayer):
            calls.append(Call("bn_bwd", layer))
        elif isinstance(layer, ReluLayer):
            calls.append(Call("relu_bwd", layer))
        else:
            calls.append(Call("pool_bwd", layer))
    return calls


def inference_calls(layers: Sequence[Layer]) -> list[Call]:
    """The calls of the final evaluation pass (model.eval(): BN inference, no pooling mask)."""
    calls: list[Call] = []
    for layer in layers:
        if isinstance(layer, ConvLayer):
            calls.append(Call("conv", layer, "fwd", phase="infer"))
        elif isinstance(layer, BNLayer):
            calls.append(Call("bn_infer", layer, phase="infer"))
        elif isinstance(layer, ReluLayer):
            calls.append(Call("relu_fwd", layer, phase="infer"))
        else:
            calls.append(Call("pool_fwd", layer, phase="infer"))
    return calls

"""Realistic synthetic MIOpen logs of a ResNet-50 training run.

Why this exists: real MIOpen logs in public issues are short excerpts, while miotui has
to cope with multi-gigabyte logs of whole training runs (and needs a log for
``miotui --demo``).  This module writes such logs, in the shapes MIOpen really prints
(see ``/work/shared/miopen_formats.md`` §1-§4, §8 and the real excerpts in
``sample_logs/real/``), at any size and deterministically from a seed.

Five formats, each modelled on one MIOpen release and a framework typical of it:

``trace2018``
    MIOpen 1.7 (ROCm 2.1), TensorFlow 1.x/Keras.  ``MIOPEN_ENABLE_LOGGING=1`` +
    ``MIOPEN_ENABLE_LOGGING_CMD=1``: ``MIOpen(HIP): <pretty function>{`` headers, bare
    ``name = value`` params and ``}``, tensors ``n, c, h, w``, the old convolution
    descriptor ``miopenConvolution, p, q, u, v, l, j, `` and old unprefixed command lines
    ``miopenConvolutionForward: ./bin/MIOpenDriver conv ...``.
``trace2x``
    MIOpen 2.9 (ROCm 4.0), TensorFlow 2.4/Keras.  Every line prefixed, tab-indented
    params, ``handle = stream: ..., device_id: 0``, new convolution descriptor, old tensor
    format, ``Command [LogCmdConvolution] ... -F 1 -t 1`` after execution blocks,
    ``MIOPEN_ENABLE_LOGGING_MPMT`` thread ids (TensorFlow runs the backward-data and
    backward-weights ops of a layer concurrently on two executor threads, so their blocks
    sometimes interleave line by line) and optionally the elapsed-time field.
``trace55``
    MIOpen 2.20 (ROCm 5.7), PyTorch 2.x.  API trace only, tensors printed as
    ``{lens}, {strides}, packed, `` and the data type only in ``miopenSetTensorDescriptor``
    blocks (``dataType = 1``).
``command``
    ROCm 5.7, ``MIOPEN_ENABLE_LOGGING_CMD=1`` only: ``Command [LogCmd...]`` lines
    (conv, bnorm with ``--forw``, pool with ``--input NxCxHxW,strides``, activ) between
    PyTorch noise (tqdm progress bars with ``\\r``, loss prints).
``info``
    ROCm 5.7, ``MIOPEN_ENABLE_LOGGING_CMD=1`` + ``MIOPEN_LOG_LEVEL=6`` (or 5): the command
    lines plus Info/Info2 lines about Find, the chosen algorithm, executions, invokers and
    find-db lookups.

Modelling choices, stated because a reader of the logs can see them:

* The first iteration runs each distinct convolution problem through a workspace query
  and ``miopenFind...`` before executing it (frameworks cache the Find result per
  problem, so a shape repeated in later blocks is only executed); later iterations only
  execute.  The first layer (``conv1``) has no backward-data call: its input needs no
  gradient.  An inference pass (batch-norm inference, pooling without backward) follows
  the training iterations.
* Descriptors are created and set once per distinct shape, in the first iteration (a
  framework that caches them, like TensorFlow or MIGraphX; PyTorch re-creates them per
  call, which would only multiply the same blocks).
* Device pointers come from a bump allocator walked in op order, so they repeat from
  iteration to iteration like a caching allocator's blocks; a few pre-rendered
  iteration variants move part of the activations to another segment, so pointers
  mostly repeat with some variation.  Generating gigabytes therefore costs little more
  than writing them.

Only the standard library is used: this module backs ``sample_logs/generate.py``, the
benchmarks and ``miotui --demo``.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import random
import re
import sys
import time
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

FORMATS = ("trace2018", "trace2x", "trace55", "command", "info")

#: What each format models, for ``--help`` and the demo's status line.
FORMAT_DESCRIPTIONS = {
    "trace2018": "MIOpen 1.7 / ROCm 2.1 API trace + old command lines (TensorFlow 1.x)",
    "trace2x": "MIOpen 2.9 / ROCm 4.0 API trace + Command lines, MPMT thread ids (TensorFlow 2.4)",
    "trace55": "MIOpen 2.20 / ROCm 5.7 API trace, strided tensors, dataType in Set blocks (PyTorch)",
    "command": "ROCm 5.7 Command [LogCmd...] lines only, with PyTorch progress output",
    "info": "ROCm 5.7 Command lines + Info/Info2 lines (MIOPEN_LOG_LEVEL=6 or 5)",
}

# --------------------------------------------------------------------------------------
# Function signatures and logged argument names, per MIOpen release.
#
# The header of an API block is clang's __PRETTY_FUNCTION__ of the extern "C" function
# (types only) and the params are the MIOPEN_LOG_FUNCTION arguments in macro order; both
# were read from src/*_api.cpp at tags 1.7.1, rocm-4.0.0 and rocm-5.7.0.  1.7.1 logs no
# handle; rocm-4.0.0 still omits xDesc from the forward workspace query; rocm-5.7.0 spells
# the Set-tensor arrays `const int *`.
# --------------------------------------------------------------------------------------

_T = "const miopenTensorDescriptor_t"
_CONV_RUN_TYPES = ("miopenHandle_t, const void *, " + _T + ", const void *, " + _T
                   + ", const void *, const miopenConvolutionDescriptor_t, {algo}, const void *, "
                   + _T + ", void *, void *, size_t")
_FIND_TYPES = ("miopenHandle_t, " + _T + ", const void *, " + _T + ", const void *, "
               "const miopenConvolutionDescriptor_t, " + _T + ", {out}, const int, int *, "
               "miopenConvAlgoPerf_t *, void *, size_t, bool")
_WS_TYPES = "miopenHandle_t, " + _T + ", " + _T + ", const miopenConvolutionDescriptor_t, " + _T + ", size_t *"


def _sigs(version: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Header text and logged parameter names of every API function the generator uses."""
    handle = () if version == "1.7" else ("handle",)
    set_arrays = "const int *, const int *" if version == "5.7" else "int *, int *"
    s: dict[str, tuple[str, tuple[str, ...]]] = {
        "miopenCreateTensorDescriptor": ("miopenTensorDescriptor_t *", ("tensorDesc",)),
        "miopenSet4dTensorDescriptor": ("miopenTensorDescriptor_t, miopenDataType_t, int, int, int, int",
                                        ("tensorDesc", "dataType", "n", "c", "h", "w")),
        "miopenSetTensorDescriptor": ("miopenTensorDescriptor_t, miopenDataType_t, int, " + set_arrays,
                                      ("tensorDesc", "dataType", "nbDims", "dim.values", "stride.values")),
        "miopenCreateConvolutionDescriptor": ("miopenConvolutionDescriptor_t *", ("convDesc",)),
        "miopenInitConvolutionDescriptor": (
            "miopenConvolutionDescriptor_t, miopenConvolutionMode_t, int, int, int, int, int, int",
            ("convDesc", "c_mode", "pad_h", "pad_w")
            + (("u", "v") if version == "1.7" else ("stride_h", "stride_w"))
            + ("dilation_h", "dilation_w")),
        "miopenConvolutionForwardGetWorkSpaceSize": (
            _WS_TYPES,
            handle + (("wDesc", "xDesc", "convDesc", "yDesc", "workSpaceSize") if version == "5.7"
                      else ("wDesc", "yDesc", "convDesc", "workSpaceSize"))),
        "miopenConvolutionBackwardDataGetWorkSpaceSize": (
            _WS_TYPES, handle + ("dyDesc", "wDesc", "convDesc", "dxDesc", "workSpaceSize")),
        "miopenConvolutionBackwardWeightsGetWorkSpaceSize": (
            _WS_TYPES, handle + ("dyDesc", "xDesc", "convDesc", "dwDesc", "workSpaceSize")),
        "miopenFindConvolutionForwardAlgorithm": (
            _FIND_TYPES.format(out="void *"),
            handle + ("xDesc", "x", "wDesc", "w", "convDesc", "yDesc", "y", "requestAlgoCount",
                      "returnedAlgoCount", "perfResults", "workSpace", "workSpaceSize", "exhaustiveSearch")),
        "miopenFindConvolutionBackwardDataAlgorithm": (
            _FIND_TYPES.format(out="const void *" if version == "1.7" else "void *"),
            handle + ("dyDesc", "dy", "wDesc", "w", "convDesc", "dxDesc", "dx", "requestAlgoCount",
                      "returnedAlgoCount", "perfResults", "workSpace", "workSpaceSize", "exhaustiveSearch")),
        "miopenFindConvolutionBackwardWeightsAlgorithm": (
            _FIND_TYPES.format(out="void *"),
            handle + ("dyDesc", "dy", "xDesc", "x", "convDesc", "dwDesc", "dw", "requestAlgoCount",
                      "returnedAlgoCount", "perfResults", "workSpace", "workSpaceSize", "exhaustiveSearch")),
        "miopenConvolutionForward": (
            _CONV_RUN_TYPES.format(algo="miopenConvFwdAlgorithm_t"),
            handle + ("alpha", "xDesc", "x", "wDesc", "w", "convDesc", "algo", "beta", "yDesc", "y",
                      "workSpace", "workSpaceSize")),
        "miopenConvolutionBackwardData": (
            _CONV_RUN_TYPES.format(algo="miopenConvBwdDataAlgorithm_t"),
            handle + ("alpha", "dyDesc", "dy", "wDesc", "w", "convDesc", "algo", "beta", "dxDesc", "dx",
                      "workSpace", "workSpaceSize")),
        "miopenConvolutionBackwardWeights": (
            _CONV_RUN_TYPES.format(algo="miopenConvBwdWeightsAlgorithm_t"),
            handle + ("alpha", "dyDesc", "dy", "xDesc", "x", "convDesc", "algo", "beta", "dwDesc", "dw",
                      "workSpace", "workSpaceSize")),
        "miopenDeriveBNTensorDescriptor": (
            "miopenTensorDescriptor_t, " + _T + ", miopenBatchNormMode_t", ("derivedBnDesc", "xDesc", "bn_mode")),
        "miopenBatchNormalizationForwardTraining": (
            "miopenHandle_t, miopenBatchNormMode_t, void *, void *, " + _T + ", const void *, " + _T
            + ", void *, " + _T + ", void *, void *, double, void *, void *, double, void *, void *",
            handle + ("bn_mode", "xDesc", "x", "yDesc", "y", "bnScaleBiasMeanVarDesc", "bnScale", "bnBias",
                      "expAvgFactor", "resultRunningMean", "resultRunningVariance", "epsilon",
                      "resultSaveMean", "resultSaveInvVariance")),
        "miopenBatchNormalizationBackward": (
            "miopenHandle_t, miopenBatchNormMode_t, const void *, const void *, const void *, const void *, "
            + _T + ", const void *, " + _T + ", const void *, " + _T + ", void *, " + _T
            + ", const void *, void *, void *, double, const void *, const void *",
            handle + ("bn_mode", "xDesc", "x", "dyDesc", "dy", "dxDesc", "dx", "bnScaleBiasDiffDesc",
                      "bnScale", "resultBnScaleDiff", "resultBnBiasDiff", "epsilon", "savedMean",
                      "savedInvVariance")),
        "miopenBatchNormalizationForwardInference": (
            "miopenHandle_t, miopenBatchNormMode_t, void *, void *, " + _T + ", const void *, " + _T
            + ", void *, " + _T + ", void *, void *, void *, void *, double",
            handle + ("bn_mode", "xDesc", "x", "yDesc", "y", "bnScaleBiasMeanVarDesc", "bnScale", "bnBias",
                      "estimatedMean", "estimatedVariance", "epsilon")),
        "miopenCreatePoolingDescriptor": ("miopenPoolingDescriptor_t *", ("poolDesc",)),
        "miopenSet2dPoolingDescriptor": (
            "miopenPoolingDescriptor_t, miopenPoolingMode_t, int, int, int, int, int, int",
            ("poolDesc", "mode", "windowHeight", "windowWidth", "pad_h", "pad_w")
            + (("u", "v") if version == "1.7" else ("stride_h", "stride_w"))),
        "miopenPoolingGetWorkSpaceSize": ("const miopenTensorDescriptor_t, size_t *", ("yDesc", "workSpaceSize")),
        "miopenPoolingGetWorkSpaceSizeV2": ("const miopenPoolingDescriptor_t, " + _T + ", size_t *",
                                            ("poolDesc", "yDesc", "workSpaceSize")),
        "miopenPoolingForward": (
            "miopenHandle_t, const miopenPoolingDescriptor_t, const void *, " + _T + ", const void *, "
            "const void *, " + _T + ", void *, bool, void *, size_t",
            handle + ("poolDesc", "alpha", "xDesc", "x", "beta", "yDesc", "y", "do_backward", "workSpace",
                      "workSpaceSize")),
        "miopenPoolingBackward": (
            "miopenHandle_t, const miopenPoolingDescriptor_t, const void *, " + _T + ", const void *, " + _T
            + ", const void *, " + _T + ", const void *, const void *, " + _T + ", void *, "
            + ("void *" if version == "5.7" else "const void *"),
            handle + ("poolDesc", "alpha", "yDesc", "y", "dyDesc", "dy", "xDesc", "x", "beta", "dxDesc", "dx",
                      "workSpace")),
        "miopenCreateActivationDescriptor": ("miopenActivationDescriptor_t *", ("activDesc",)),
        "miopenSetActivationDescriptor": (
            "miopenActivationDescriptor_t, miopenActivationMode_t, double, double, double",
            ("activDesc", "mode", "activAlpha", "activBeta", "activGamma")),
        "miopenActivationForward": (
            "miopenHandle_t, miopenActivationDescriptor_t, const void *, " + _T + ", const void *, "
            "const void *, " + _T + ", void *",
            handle + ("activDesc", "alpha", "xDesc", "x", "beta", "yDesc", "y")),
        "miopenActivationBackward": (
            "miopenHandle_t, miopenActivationDescriptor_t, const void *, " + _T + ", const void *, " + _T
            + ", const void *, " + _T + ", const void *, const void *, " + _T + ", void *",
            handle + ("activDesc", "alpha", "yDesc", "y", "dyDesc", "dy", "xDesc", "x", "beta", "dxDesc", "dx")),
    }
    return {name: (f"miopenStatus_t {name}({types}){{", params) for name, (types, params) in s.items()}


_SIGS = {v: _sigs(v) for v in ("1.7", "2.9", "5.7")}
_FORMAT_VERSION = {"trace2018": "1.7", "trace2x": "2.9", "trace55": "5.7", "command": "5.7", "info": "5.7"}

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


# --------------------------------------------------------------------------------------
# Spec and ground truth
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleSpec:
    """What to generate.  ``size`` (bytes) wins over ``iterations`` when given.

    In ``size`` mode the run is cut at the line where the size is reached (a log of a run
    still going), so it has no inference pass; in ``iterations`` mode the log is complete.
    ``elapsed``: add MIOPEN_ENABLE_LOGGING_ELAPSED_TIME's field (not for ``trace2018``,
    which predates it); None = the format's default (on for ``trace2x`` only).
    ``level``: MIOPEN_LOG_LEVEL for the ``info`` format (5 = Info, 6 = Info2).
    """

    format: str = "trace55"
    iterations: int = 2
    size: int | None = None
    batch: int = 32
    seed: int = 0
    level: int = 6
    elapsed: bool | None = None
    inference: bool = True

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}; choose one of {', '.join(FORMATS)}")
        if self.iterations < 1:
            raise ValueError("iterations must be at least 1")
        if self.size is not None and self.size < 1:
            raise ValueError("size must be positive")
        if not 1 <= self.batch <= 4096:
            raise ValueError("batch must be between 1 and 4096")
        if self.level not in (5, 6):
            raise ValueError("level must be 5 (Info) or 6 (Info2)")
        if self.elapsed and self.format == "trace2018":
            raise ValueError("MIOpen 1.7 (trace2018) has no elapsed-time field")

    @property
    def use_elapsed(self) -> bool:
        return self.format == "trace2x" if self.elapsed is None else self.elapsed


def ground_truth(spec: SampleSpec) -> GroundTruth:
    """How many times each operation is executed and searched in a complete generated log."""
    layers = resnet50_layers(spec.batch)
    execs: dict[TruthOp, int] = {}
    finds: dict[TruthOp, int] = {}
    groups = [training_calls(layers, first=True)]
    if spec.iterations > 1:
        later = training_calls(layers, first=False)
        groups += [later] * (spec.iterations - 1)
    if spec.inference:
        groups.append(inference_calls(layers))
    for calls in groups:
        for call in calls:
            t = truth_op(call)
            if t is None:
                continue
            target = finds if call.kind == "conv_find" else execs
            target[t] = target.get(t, 0) + 1
    return GroundTruth(execs, finds)


# --------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------

_ALIGN = 512
_SEGMENT = 0x2000000  # 32 MiB: a caching-allocator segment


class _Memory:
    """Device and host addresses that repeat like a caching allocator's.

    Weights (and their gradients) live in a persistent region; activations, gradients and
    BN statistics are bump-allocated in op order from an arena.  A *variant* moves every
    activation allocated after a cut point to another segment, which is how a caching
    allocator's reuse drifts between iterations.
    """

    def __init__(self, rng: random.Random, layers: Sequence[Layer]) -> None:
        # x86-64 user space ends at 0x7fffffffffff; ROCm maps device memory high in it.
        self.weights_base = 0x7F1000000000 + rng.randrange(0x10, 0xE0) * 0x100000000
        self.act_base = self.weights_base - rng.randrange(0x20, 0x80) * 0x10000000
        self.host_stack = 0x7FFC00000000 + rng.randrange(0x1000000, 0xFFFFFFF) * 0x10
        self.worker_stack = self.weights_base + 0x1E0000000 + rng.randrange(0x1000, 0xFFFF) * 0x1000
        self.alpha_main = self.host_stack + 0x4C
        self.alpha_worker = self.worker_stack + 0xA6C
        self._persist: dict[tuple[str, str], int] = {}
        self._act: dict[tuple[str, str], tuple[int, int]] = {}
        #: (layer, role) -> the allocation it shares: a layer's input is the previous
        #: layer's output, and its output gradient the next layer's input gradient.
        self.alias: dict[tuple[str, str], tuple[str, str]] = {}
        for prev, cur in zip(layers, layers[1:]):
            if prev.y == cur.x:
                self.alias[(cur.name, "x")] = (prev.name, "y")
                self.alias[(prev.name, "dy")] = (cur.name, "dx")
        self._next_w = self.weights_base
        self._next_a = self.act_base
        self.shift: tuple[int, int] = (1 << 62, 0)   # (cut index, offset)
        self._ws: dict[int, int] = {}
        self._next_ws = self.act_base - 0x40000000

    @staticmethod
    def _size(t: Tensor, elem: int = 4) -> int:
        return (t.elements * elem + _ALIGN - 1) // _ALIGN * _ALIGN

    def persistent(self, layer: Layer, role: str, t: Tensor) -> int:
        key = (layer.name, role)
        if key not in self._persist:
            self._persist[key] = self._next_w
            self._next_w += max(self._size(t), _ALIGN)
        return self._persist[key]

    def act(self, layer: Layer, role: str, t: Tensor) -> int:
        key = self.alias.get((layer.name, role), (layer.name, role))
        entry = self._act.get(key)
        if entry is None:
            entry = self._act[key] = (self._next_a, len(self._act))
            self._next_a += max(self._size(t), _ALIGN)
        addr, index = entry
        if index >= self.shift[0]:
            addr += self.shift[1]
        return addr

    def workspace(self, size: int) -> int | None:
        if size == 0:
            return None
        if size not in self._ws:
            self._ws[size] = self._next_ws
            self._next_ws -= (size + _SEGMENT - 1) // _SEGMENT * _SEGMENT
        return self._ws[size]


def _hex(addr: int | None) -> str:
    return "nullptr" if addr is None else f"0x{addr:x}"


def _g(value: float) -> str:
    """C++ default ostream formatting of a double (6 significant digits)."""
    return f"{value:.6g}"


# miopenConv*Algorithm_t names by direction and enum value (as Info lines print them).
_ALGO_NAMES = {
    "fwd": {0: "miopenConvolutionFwdAlgoGEMM", 1: "miopenConvolutionFwdAlgoDirect",
            3: "miopenConvolutionFwdAlgoWinograd", 5: "miopenConvolutionFwdAlgoImplicitGEMM"},
    "bwd": {0: "miopenConvolutionBwdDataAlgoGEMM", 1: "miopenConvolutionBwdDataAlgoDirect",
            3: "miopenConvolutionBwdDataAlgoWinograd", 5: "miopenConvolutionBwdDataAlgoImplicitGEMM"},
    "wrw": {0: "miopenConvolutionBwdWeightsAlgoGEMM", 1: "miopenConvolutionBwdWeightsAlgoDirect",
            3: "miopenConvolutionBwdWeightsAlgoWinograd", 5: "miopenConvolutionBwdWeightsAlgoImplicitGEMM"},
}


def _choose_algo(layer: ConvLayer, direction: str, version: str) -> tuple[int, str, int]:
    """(algo enum, solver name, workspace bytes) a plausible Find would pick."""
    r, s = layer.r, layer.stride
    x, y = layer.x, layer.y
    im2col = x.c * r * r * y.h * y.w * 4
    if version == "1.7" or version == "2.9":
        if r == 3 and s == 1:
            return 3, "ConvBinWinogradRxSf2x3" if version == "2.9" else "ConvBinWinogradRxS", 0
        if direction == "fwd":
            if r == 1:
                return 1, "ConvAsm1x1U", 0
            if r == 7:
                return 1, "ConvAsm7x7c3h224w224k64u2v2p3q3f1", 0
            return 0, "gemm", im2col
        if direction == "bwd":
            if r == 1 and s == 1:
                return 1, "ConvAsm1x1U", 0
            return 0, "gemm", im2col if r > 1 else x.c * x.h * x.w * 4
        if r == 1:
            return 1, "ConvAsmBwdWrW1x1", 0
        return 0, "gemm", im2col
    # ROCm 5.7 on gfx90a
    if r == 3 and s == 1 and direction != "wrw":
        return 3, "ConvBinWinogradRxSf2x3g1", 0
    if direction == "fwd":
        if r == 1 and s == 1:
            return 0, "GemmFwd1x1_0_1", 0
        return 5, "ConvAsmImplicitGemmGTCDynamicFwdXdlops", 0
    if direction == "bwd":
        if r == 1 and s == 1:
            return 0, "GemmBwd1x1_stride1", 0
        if r == 1:
            return 0, "GemmBwd1x1_stride2", x.n * x.c * x.h * x.w * 4
        return 5, "ConvAsmImplicitGemmGTCDynamicBwdXdlops", 0
    if r == 1 and s == 1:
        return 0, "GemmWrw1x1_stride1", 0
    if r == 7:
        return 0, "GemmWrwUniversal", im2col
    return 5, "ConvAsmImplicitGemmGTCDynamicWrwXdlops", 0


def _conv_time_ms(layer: ConvLayer, direction: str, algo: int, rng: random.Random) -> float:
    """A plausible Find time: FLOPs at 7-16 TFLOP/s by algorithm, with jitter."""
    y = layer.y
    flops = 2.0 * y.n * layer.k * y.h * y.w * layer.x.c * layer.r * layer.r
    rate = {0: 9e9, 1: 7e9, 3: 14e9, 5: 16e9}[algo] * (0.8 if direction == "wrw" else 1.0)
    return flops / rate * rng.uniform(0.9, 1.15) + 0.004


# A rendered record: (thread index, kind, text, delay ms before it).
# kind: "p" = MIOpen line with the format's prefix, "r" = raw line (no prefix).
_Rec = tuple[int, str, str, float]


class _Renderer:
    """Turns calls into log records for one format; holds the per-log state."""

    def __init__(self, spec: SampleSpec, layers: Sequence[Layer]) -> None:
        self.spec = spec
        self.fmt = spec.format
        self.version = _FORMAT_VERSION[self.fmt]
        self.sigs = _SIGS[self.version]
        self.trace = self.fmt.startswith("trace")
        rng = random.Random(f"{spec.seed}:memory")
        self.mem = _Memory(rng, layers)
        self.rng = random.Random(f"{spec.seed}:render")
        self.tf = self.fmt in ("trace2018", "trace2x")
        stream = 0x55D0C0000000 + rng.randrange(0x100000, 0xFFFFFF) * 0x10
        self.handle = f"stream: {_hex(stream)}, device_id: 0" if self.fmt == "trace2x" else "stream: 0, device_id: 0"
        self.eps = 0.001 if self.tf else 1e-05
        self.exp_avg = 0.01 if self.tf else 0.1
        self.db_hash = f"{rng.randrange(16 ** 9):09x}"
        self.fdb_user = f"/root/.config/miopen/gfx90a6e.HIP.2_20_0_{self.db_hash}.ufdb.txt"
        self.fdb_sys = "/opt/rocm-5.7.0/share/miopen/db/gfx90a6e.HIP.fdb.txt"
        self._described: set[Tensor] = set()
        self._conv_descs: set[tuple[int, int]] = set()

    # -- generic pieces ----------------------------------------------------------------
    def tensor(self, t: Tensor) -> str:
        return t.new() if self.version == "5.7" else t.old()

    def conv_desc(self, layer: ConvLayer) -> str:
        p, s = layer.pad, layer.stride
        if self.version == "1.7":
            return f"miopenConvolution, {p}, {p}, {s}, {s}, 1, 1, "
        return f"conv2d, miopenConvolution, miopenPaddingDefault, {{{p}, {p}}}, {{{s}, {s}}}, {{1, 1}}, "

    def fresh_tensor(self) -> str:
        return "{}, {}, packed, " if self.version == "5.7" else ""

    def block(self, func: str, values: dict[str, str], thread: int = 0, delay: float = 0.0) -> list[_Rec]:
        """An API block: header, one line per logged argument (in macro order), ``}``."""
        header, params = self.sigs[func]
        if self.version == "1.7":
            recs: list[_Rec] = [(thread, "p", header, delay)]
            recs += [(thread, "r", f"{name} = {values[name]}", 0.0) for name in params]
            recs.append((thread, "r", "}", 0.0))
            return recs
        recs = [(thread, "p", header, delay)]
        recs += [(thread, "p", f"\t{name} = {values[name]}", 0.0) for name in params]
        recs.append((thread, "p", "}", 0.0))
        return recs

    def command(self, fn: str, args: str, thread: int = 0, api: str = "") -> list[_Rec]:
        """A driver command line: ``Command [fn] ./bin/MIOpenDriver ...`` (2.x+), or the
        unprefixed ``<api>: ./bin/MIOpenDriver ...`` of MIOpen 1.x."""
        if self.version == "1.7":
            return [(thread, "r", f"{api}: ./bin/MIOpenDriver {args}", 0.0)]
        if self.fmt == "trace55":
            return []  # API trace only (MIOPEN_ENABLE_LOGGING_CMD unset)
        return [(thread, "p", f"Command [{fn}] ./bin/MIOpenDriver {args}", 0.0)]

    def level(self, lvl: str, fn: str, msg: str, delay: float = 0.0) -> list[_Rec]:
        if self.fmt != "info" or (lvl == "Info2" and self.spec.level < 6):
            return []
        return [(0, "p", f"{lvl} [{fn}] {msg}", delay)]

    def alpha(self, thread: int) -> tuple[str, str]:
        base = self.mem.alpha_worker if thread else self.mem.alpha_main
        return _hex(base), _hex(base - 4)

    # -- calls ---------------------------------------------------------------------------
    def render(self, call: Call) -> list[_Rec]:
        if call.kind not in CALL_KINDS:
            raise ValueError(f"unknown call kind {call.kind!r}")
        return getattr(self, "_r_" + call.kind)(call)

    def _setup_tensors(self, layer: Layer, tensors: Iterable[tuple[str, Tensor]]) -> list[_Rec]:
        """Create + set a descriptor for each tensor shape not seen before (the framework
        keeps one descriptor per shape)."""
        recs: list[_Rec] = []
        if not self.trace:
            return recs
        for _, t in tensors:
            if t in self._described:
                continue
            self._described.add(t)
            recs += self.block("miopenCreateTensorDescriptor", {"tensorDesc": "0"})
            if self.version == "5.7":
                recs += self.block("miopenSetTensorDescriptor", {
                    "tensorDesc": self.fresh_tensor(), "dataType": "1", "nbDims": "4",
                    "dim.values": "{ " + " ".join(map(str, t.lens)) + " }",
                    "stride.values": "{ " + " ".join(map(str, t.strides)) + " }"})
            else:
                recs += self.block("miopenSet4dTensorDescriptor", {
                    "tensorDesc": "", "dataType": "1", "n": str(t.n), "c": str(t.c), "h": str(t.h), "w": str(t.w)})
        return recs

    def _r_setup_conv(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, ConvLayer)
        recs = self._setup_tensors(layer, (("x", layer.x), ("w", layer.w), ("y", layer.y)))
        if not self.trace:
            return recs
        if (layer.pad, layer.stride) in self._conv_descs:
            return recs
        self._conv_descs.add((layer.pad, layer.stride))
        default = ConvLayer("", layer.x, layer.k, layer.r, 1, 0)
        recs += self.block("miopenCreateConvolutionDescriptor", {"convDesc": "0"})
        p, s = str(layer.pad), str(layer.stride)
        names = ("u", "v") if self.version == "1.7" else ("stride_h", "stride_w")
        recs += self.block("miopenInitConvolutionDescriptor", {
            "convDesc": self.conv_desc(default), "c_mode": "0", "pad_h": p, "pad_w": p,
            names[0]: s, names[1]: s, "dilation_h": "1", "dilation_w": "1"})
        return recs

    def _r_setup_bn(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, BNLayer)
        recs = self._setup_tensors(layer, (("x", layer.x),))
        if not self.trace:
            return recs
        if self.version == "5.7":  # PyTorch sets the scale/bias descriptor itself
            return recs + self._setup_tensors(layer, (("param", layer.param),))
        if layer.param in self._described:
            return recs
        self._described.add(layer.param)
        recs += self.block("miopenCreateTensorDescriptor", {"tensorDesc": "0"})
        recs += self.block("miopenDeriveBNTensorDescriptor", {
            "derivedBnDesc": "", "xDesc": self.tensor(layer.x), "bn_mode": "1"})
        return recs

    def _r_setup_relu(self, call: Call) -> list[_Rec]:
        if not self.trace:
            return []
        recs = self.block("miopenCreateActivationDescriptor", {"activDesc": "0"})
        recs += self.block("miopenSetActivationDescriptor", {
            "activDesc": "miopenActivationPASTHRU, , ", "mode": "3",
            "activAlpha": "1", "activBeta": "0", "activGamma": "1"})
        return recs

    def _r_setup_pool(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, PoolLayer)
        recs = self._setup_tensors(layer, (("x", layer.x), ("y", layer.y)))
        if not self.trace:
            return recs
        recs += self.block("miopenCreatePoolingDescriptor", {"poolDesc": "0"})
        names = ("u", "v") if self.version == "1.7" else ("stride_h", "stride_w")
        w, p, s = str(layer.win), str(layer.pad), str(layer.stride)
        recs += self.block("miopenSet2dPoolingDescriptor", {
            "poolDesc": "miopenPoolingMax, , , , ", "mode": str(layer.mode), "windowHeight": w,
            "windowWidth": w, "pad_h": p, "pad_w": p, names[0]: s, names[1]: s})
        return recs

    # convolution ------------------------------------------------------------------------
    def _conv_ptrs(self, layer: ConvLayer, thread: int) -> dict[str, str]:
        m = self.mem
        a, b = self.alpha(thread)
        return {
            "x": _hex(m.act(layer, "x", layer.x) if layer.name != "conv1" else m.act(layer, "image", layer.x)),
            "w": _hex(m.persistent(layer, "w", layer.w)),
            "y": _hex(m.act(layer, "y", layer.y)),
            "dy": _hex(m.act(layer, "dy", layer.y)),
            "dx": _hex(m.act(layer, "dx", layer.x)),
            "dw": _hex(m.persistent(layer, "dw", layer.w)),
            "alpha": a, "beta": b,
        }

    _CONV_API = {
        "fwd": ("miopenConvolutionForward", "miopenFindConvolutionForwardAlgorithm",
                "miopenConvolutionForwardGetWorkSpaceSize", "ConvolutionForward", "FindConvFwdAlgorithm", "FW"),
        "bwd": ("miopenConvolutionBackwardData", "miopenFindConvolutionBackwardDataAlgorithm",
                "miopenConvolutionBackwardDataGetWorkSpaceSize", "ConvolutionBackwardData",
                "FindConvBwdDataAlgorithm", "BWD"),
        "wrw": ("miopenConvolutionBackwardWeights", "miopenFindConvolutionBackwardWeightsAlgorithm",
                "miopenConvolutionBackwardWeightsGetWorkSpaceSize", "ConvolutionBackwardWeights",
                "FindConvBwdWeightsAlgorithm", "BWrW"),
    }

    def _conv_values(self, layer: ConvLayer, thread: int, ws: int) -> dict[str, str]:
        """Every value any convolution API logs; each block picks its own names."""
        p = self._conv_ptrs(layer, thread)
        return {"handle": self.handle, "convDesc": self.conv_desc(layer), "workSpaceSize": str(ws),
             "workSpace": _hex(self.mem.workspace(ws)), "alpha": p["alpha"], "beta": p["beta"],
             "xDesc": self.tensor(layer.x), "wDesc": self.tensor(layer.w), "yDesc": self.tensor(layer.y),
             "dyDesc": self.tensor(layer.y), "dxDesc": self.tensor(layer.x), "dwDesc": self.tensor(layer.w),
             "x": p["x"], "w": p["w"], "y": p["y"], "dy": p["dy"], "dx": p["dx"], "dw": p["dw"]}

    def _conv_cmd_args(self, layer: ConvLayer, direction: str) -> str:
        x = layer.x
        base = (f"conv -n {x.n} -c {x.c} -H {x.h} -W {x.w} -k {layer.k} -y {layer.r} -x {layer.r} "
                f"-p {layer.pad} -q {layer.pad} -u {layer.stride} -v {layer.stride} -l 1 -j 1 -m conv -g 1")
        if self.version == "1.7":
            return base + " -t 1"
        return base + f" -F {({'fwd': 1, 'bwd': 2, 'wrw': 4})[direction]} -t 1"

    def _r_conv_ws(self, call: Call) -> list[_Rec]:
        layer, d = call.layer, call.direction
        assert isinstance(layer, ConvLayer)
        if not self.trace:
            return []
        values = self._conv_values(layer, call.thread, 0)
        values["workSpaceSize"] = "0"   # the output parameter is printed before the call
        return self.block(self._CONV_API[d][2], values, call.thread)

    def _problem_key(self, layer: ConvLayer, direction: str, sep: str) -> str:
        """Find-db key (``sep='-'``) or network config (``sep='x'``) of ROCm 5.7 (§7.3, §7.4)."""
        x, y, r = layer.x, layer.y, layer.r
        p, s = layer.pad, layer.stride
        (ic, ih, iw), (oc, oh, ow) = ((x.c, x.h, x.w), (layer.k, y.h, y.w))
        if direction != "fwd":  # B/W problems are stored with in = dy, out = dx
            (ic, ih, iw), (oc, oh, ow) = (oc, oh, ow), (ic, ih, iw)
        dch = {"fwd": "F", "bwd": "B", "wrw": "W"}[direction]
        if sep == "-":
            return f"{ic}-{ih}-{iw}-{r}x{r}-{oc}-{oh}-{ow}-{x.n}-{p}x{p}-{s}x{s}-1x1-0-NCHW-FP32-{dch}"
        return f"{ic}x{ih}x{iw}x{r}x{r}x{oc}x{oh}x{ow}x{x.n}xNCHWxFP32x{p}x{p}x{s}x{s}x1x1x1x{dch}"

    def _r_conv_find(self, call: Call) -> list[_Rec]:
        layer, d, th = call.layer, call.direction, call.thread
        assert isinstance(layer, ConvLayer)
        algo, solver, ws = _choose_algo(layer, d, self.version)
        api, find_api, _, _, find_fn, tag = self._CONV_API[d]
        ms = _conv_time_ms(layer, d, algo, self.rng)
        recs: list[_Rec] = []
        if self.trace:
            values = self._conv_values(layer, th, ws)
            values.update(requestAlgoCount="1", returnedAlgoCount="0", perfResults="", exhaustiveSearch="0")
            recs += self.block(find_api, values, th)
        if self.version == "1.7":
            if d == "wrw":  # MIOpen <= 1.8 logged the WrW *Find*, not the WrW run
                recs += self.command("", self._conv_cmd_args(layer, d), th, api=find_api)
        elif self.version == "2.9":
            if d == "wrw":  # 2.1 - ROCm 5.3: the WrW Find is logged as [LogCmdConvolution] -F 4
                recs += self.command("LogCmdConvolution", self._conv_cmd_args(layer, d), th)
        else:
            recs += self.command("LogCmdFindConvolution", self._conv_cmd_args(layer, d), th)
        key = self._problem_key(layer, d, "-")
        recs += self.level("Info", find_fn, f"requestAlgoCount = 1, workspace = {ws}")
        recs += self.level("Info2", "FindRecord", f"Looking for key {key} in file {self.fdb_sys}")
        recs += self.level("Info2", "FindRecordUnsafe", f"Looking for key {key} in file {self.fdb_user}")
        recs += self.level("Info2", "Measure", f"Db::FindRecord time: {_g(self.rng.uniform(0.008, 0.06))} ms")
        recs += self.level("Info", "TryLoad", "Find-db regenerating.")
        recs += self.level("Info", "FindConvolution", f"{_ALGO_NAMES[d][algo]}\t{_g(ms)}\t{ws}")
        recs += self.level("Info", find_fn, f"{tag} Chosen Algorithm: {solver} , {ws}, {_g(ms)}")
        # Find compiles kernels and times them: the next line comes much later.
        recs.append((th, "delay", "", self.rng.uniform(150.0, 1800.0)))
        return recs

    def _r_conv(self, call: Call) -> list[_Rec]:
        layer, d, th = call.layer, call.direction, call.thread
        assert isinstance(layer, ConvLayer)
        algo, solver, ws = _choose_algo(layer, d, self.version)
        api, _, _, run_fn, _, _ = self._CONV_API[d]
        recs: list[_Rec] = []
        if self.trace:
            values = self._conv_values(layer, th, ws)
            values["algo"] = str(algo)
            recs += self.block(api, values, th)
        if self.version == "1.7":
            if d != "wrw":
                recs += self.command("", self._conv_cmd_args(layer, d), th, api=api)
        else:  # 2.x and 5.x log every run, -F 1/2/4
            recs += self.command("LogCmdConvolution", self._conv_cmd_args(layer, d), th)
        recs += self.level("Info", run_fn, f"algo = {algo}, workspace = {ws}")
        recs += self.level("Info2", "GetInvoker", f"Returning an invoker for problem "
                           f"{self._problem_key(layer, d, 'x')} and algorithm {_ALGO_NAMES[d][algo]}")
        return recs

    # batch norm -------------------------------------------------------------------------
    def _bn_ptrs(self, layer: BNLayer, thread: int) -> dict[str, str]:
        m = self.mem
        a, b = self.alpha(thread)
        return {"x": _hex(m.act(layer, "x", layer.x)), "y": _hex(m.act(layer, "y", layer.y)),
                "dy": _hex(m.act(layer, "dy", layer.y)), "dx": _hex(m.act(layer, "dx", layer.x)),
                "scale": _hex(m.persistent(layer, "scale", layer.param)),
                "bias": _hex(m.persistent(layer, "bias", layer.param)),
                "rmean": _hex(m.persistent(layer, "running_mean", layer.param)),
                "rvar": _hex(m.persistent(layer, "running_var", layer.param)),
                "dscale": _hex(m.persistent(layer, "dscale", layer.param)),
                "dbias": _hex(m.persistent(layer, "dbias", layer.param)),
                "smean": _hex(m.act(layer, "save_mean", layer.param)),
                "sinv": _hex(m.act(layer, "save_invstd", layer.param)), "alpha": a, "beta": b}

    def _bn_dims(self, layer: BNLayer) -> str:
        x = layer.x
        return f"-n {x.n} -c {x.c} -H {x.h} -W {x.w} -m 1"

    def _r_bn_train(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, BNLayer)
        p = self._bn_ptrs(layer, call.thread)
        recs: list[_Rec] = []
        if self.trace:
            recs += self.block("miopenBatchNormalizationForwardTraining", {
                "handle": self.handle, "bn_mode": "1", "xDesc": self.tensor(layer.x), "x": p["x"],
                "yDesc": self.tensor(layer.y), "y": p["y"], "bnScaleBiasMeanVarDesc": self.tensor(layer.param),
                "bnScale": p["scale"], "bnBias": p["bias"], "expAvgFactor": _g(self.exp_avg),
                "resultRunningMean": p["rmean"], "resultRunningVariance": p["rvar"], "epsilon": _g(self.eps),
                "resultSaveMean": p["smean"], "resultSaveInvVariance": p["sinv"]}, call.thread)
        if self.version == "1.7":
            recs += self.command("", f"bnorm {self._bn_dims(layer)} -s 1 -r 1", call.thread,
                                 api="miopenBatchNormalizationForwardTraining")
        else:
            recs += self.command("LogCmdBNorm", f"bnorm {self._bn_dims(layer)} --forw 1 -b 0 -s 1 -r 1", call.thread)
        return recs

    def _r_bn_bwd(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, BNLayer)
        p = self._bn_ptrs(layer, call.thread)
        recs: list[_Rec] = []
        if self.trace:
            recs += self.block("miopenBatchNormalizationBackward", {
                "handle": self.handle, "bn_mode": "1", "xDesc": self.tensor(layer.x), "x": p["x"],
                "dyDesc": self.tensor(layer.y), "dy": p["dy"], "dxDesc": self.tensor(layer.x), "dx": p["dx"],
                "bnScaleBiasDiffDesc": self.tensor(layer.param), "bnScale": p["scale"],
                "resultBnScaleDiff": p["dscale"], "resultBnBiasDiff": p["dbias"], "epsilon": _g(self.eps),
                "savedMean": p["smean"], "savedInvVariance": p["sinv"]}, call.thread)
        if self.version == "1.7":  # MIOpen 1.7 printed only the base argument here
            recs += self.command("", "bnorm", call.thread, api="miopenBatchNormalizationBackward")
        else:
            recs += self.command("LogCmdBNorm", f"bnorm {self._bn_dims(layer)} --forw 0 -b 1 -r 1", call.thread)
        return recs

    def _r_bn_infer(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, BNLayer)
        p = self._bn_ptrs(layer, call.thread)
        recs: list[_Rec] = []
        if self.trace:
            recs += self.block("miopenBatchNormalizationForwardInference", {
                "handle": self.handle, "bn_mode": "1", "xDesc": self.tensor(layer.x), "x": p["x"],
                "yDesc": self.tensor(layer.y), "y": p["y"], "bnScaleBiasMeanVarDesc": self.tensor(layer.param),
                "bnScale": p["scale"], "bnBias": p["bias"], "estimatedMean": p["rmean"],
                "estimatedVariance": p["rvar"], "epsilon": _g(self.eps)}, call.thread)
        if self.version != "1.7":  # 1.7 logged no command for inference
            recs += self.command("LogCmdBNorm", f"bnorm {self._bn_dims(layer)} --forw 2 -b 0 -s 1", call.thread)
        return recs

    # pooling ----------------------------------------------------------------------------
    def _pool_desc(self, layer: PoolLayer) -> str:
        mode = "miopenPoolingMax" if layer.mode == 0 else "miopenPoolingAverage"
        w, p, s = layer.win, layer.pad, layer.stride
        return f"{mode}, {w}, {w}, {p}, {p}, {s}, {s}, "

    def _pool_ws(self, layer: PoolLayer) -> int:
        return layer.y.elements  # uint8 index per output element (max pooling mask)

    def _pool_cmd(self, layer: PoolLayer, fwd: bool) -> str:
        x = layer.x
        mode = "max" if layer.mode == 0 else "avg"
        w, p, s = layer.win, layer.pad, layer.stride
        if self.version == "1.7":
            return f"pool -n {x.n} -c {x.c} -H {x.h} -W {x.w} -y {w} -x {w} -p {p} -q {p} -u {s} -v {s} -m {mode} -t 1"
        if self.version == "2.9":
            return (f"pool -M 0 -n {x.n} -c {x.c} -H {x.h} -W {x.w} -y {w} -x {w} -p {p} -q {p} -v {s} -u {s} "
                    f"-m {mode} -F {1 if fwd else 2} -t 1")
        st = "x".join(map(str, x.strides))
        return (f"pool -M 0 --input {x.n}x{x.c}x{x.h}x{x.w},{st} -y {w} -x {w} -p {p} -q {p} -v {s} -u {s} "
                f"-m {mode} -F {1 if fwd else 0} -t 1")

    def _r_pool_ws(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, PoolLayer)
        if not self.trace:
            return []
        if self.version == "1.7":
            return self.block("miopenPoolingGetWorkSpaceSize", {"yDesc": self.tensor(layer.y), "workSpaceSize": "0"})
        return self.block("miopenPoolingGetWorkSpaceSizeV2", {
            "poolDesc": self._pool_desc(layer), "yDesc": self.tensor(layer.y), "workSpaceSize": "0"})

    def _r_pool_fwd(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, PoolLayer)
        m = self.mem
        a, b = self.alpha(call.thread)
        train = call.phase == "train"
        ws = self._pool_ws(layer)
        recs: list[_Rec] = []
        if self.trace:
            recs += self.block("miopenPoolingForward", {
                "handle": self.handle, "poolDesc": self._pool_desc(layer), "alpha": a,
                "xDesc": self.tensor(layer.x), "x": _hex(m.act(layer, "x", layer.x)), "beta": b,
                "yDesc": self.tensor(layer.y), "y": _hex(m.act(layer, "y", layer.y)),
                "do_backward": "1" if train else "0",
                "workSpace": _hex(m.act(layer, "mask", Tensor(1, 1, 1, ws)) if train else None),
                "workSpaceSize": str(ws if train else 0)}, call.thread)
        recs += self.command("Pooling_logging_cmd", self._pool_cmd(layer, True), call.thread, api="miopenPoolingForward")
        return recs

    def _r_pool_bwd(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, PoolLayer)
        m = self.mem
        a, b = self.alpha(call.thread)
        recs: list[_Rec] = []
        if self.trace:
            recs += self.block("miopenPoolingBackward", {
                "handle": self.handle, "poolDesc": self._pool_desc(layer), "alpha": a,
                "yDesc": self.tensor(layer.y), "y": _hex(m.act(layer, "y", layer.y)),
                "dyDesc": self.tensor(layer.y), "dy": _hex(m.act(layer, "dy", layer.y)),
                "xDesc": self.tensor(layer.x), "x": _hex(m.act(layer, "x", layer.x)), "beta": b,
                "dxDesc": self.tensor(layer.x), "dx": _hex(m.act(layer, "dx", layer.x)),
                "workSpace": _hex(m.act(layer, "mask", Tensor(1, 1, 1, self._pool_ws(layer))))}, call.thread)
        recs += self.command("Pooling_logging_cmd", self._pool_cmd(layer, False), call.thread,
                             api="miopenPoolingBackward")
        return recs

    # activation -------------------------------------------------------------------------
    def _activ_cmd(self, layer: ReluLayer, fwd: bool) -> str:
        x = layer.x
        return f"activ -n {x.n} -c {x.c} -H {x.h} -W {x.w} -m 3 --forw {1 if fwd else 2} -A 1 -B 0 -G 1"

    _ACTIV_DESC = "miopenActivationRELU, 1, 0, 1, "

    def _r_relu_fwd(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, ReluLayer)
        a, b = self.alpha(call.thread)
        recs: list[_Rec] = []
        if self.trace:
            recs += self.block("miopenActivationForward", {
                "handle": self.handle, "activDesc": self._ACTIV_DESC, "alpha": a, "xDesc": self.tensor(layer.x),
                "x": _hex(self.mem.act(layer, "x", layer.x)), "beta": b, "yDesc": self.tensor(layer.y),
                "y": _hex(self.mem.act(layer, "y", layer.y))}, call.thread)
        if self.version != "1.7":  # activation commands exist since MIOpen 2.3
            recs += self.command("LogCmdActivation", self._activ_cmd(layer, True), call.thread)
        return recs

    def _r_relu_bwd(self, call: Call) -> list[_Rec]:
        layer = call.layer
        assert isinstance(layer, ReluLayer)
        a, b = self.alpha(call.thread)
        m = self.mem
        recs: list[_Rec] = []
        if self.trace:
            recs += self.block("miopenActivationBackward", {
                "handle": self.handle, "activDesc": self._ACTIV_DESC, "alpha": a,
                "yDesc": self.tensor(layer.y), "y": _hex(m.act(layer, "y", layer.y)),
                "dyDesc": self.tensor(layer.y), "dy": _hex(m.act(layer, "dy", layer.y)),
                "xDesc": self.tensor(layer.x), "x": _hex(m.act(layer, "x", layer.x)), "beta": b,
                "dxDesc": self.tensor(layer.x), "dx": _hex(m.act(layer, "dx", layer.x))}, call.thread)
        if self.version != "1.7":
            recs += self.command("LogCmdActivation", self._activ_cmd(layer, False), call.thread)
        return recs


# --------------------------------------------------------------------------------------
# Framework noise
# --------------------------------------------------------------------------------------

_TF_TS = "2021-03-04 10:{m:02d}:{s:02d}.{us:06d}"


class _Noise:
    """Lines the framework prints around MIOpen's: banners, progress bars, losses."""

    def __init__(self, spec: SampleSpec, steps: int) -> None:
        self.spec = spec
        self.fmt = spec.format
        self.steps = steps
        self.rng = random.Random(f"{spec.seed}:noise")
        self.loss = 6.95 + self.rng.uniform(-0.05, 0.05)
        self.clock = 0.0
        self.epochs = 1 if spec.size is None else 90

    def _tf_time(self) -> str:
        self.clock += self.rng.uniform(0.01, 2.0)
        t = int(self.clock)
        year = "2019-03-11 09" if self.fmt == "trace2018" else "2021-03-04 10"
        return f"{year}:{(12 + t // 60) % 60:02d}:{t % 60:02d}.{self.rng.randrange(10 ** 6):06d}"

    def preamble(self) -> list[str]:
        if self.fmt == "trace2018":
            return [
                "Using TensorFlow backend.",
                f"{self._tf_time()}: I tensorflow/core/platform/cpu_feature_guard.cc:141] Your CPU supports "
                "instructions that this TensorFlow binary was not compiled to use: SSE4.1 SSE4.2 AVX AVX2 FMA",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1531] Found device 0 with "
                "properties: ",
                "name: Vega 10 XT [Radeon RX Vega 64]",
                "AMDGPU ISA: gfx900",
                "memoryClockRate (GHz) 1.63",
                "pciBusID 0000:03:00.0",
                "Total memory: 7.98GiB",
                "Free memory: 7.73GiB",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1642] Adding visible gpu "
                "devices: 0",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1053] Created TensorFlow "
                "device (/job:localhost/replica:0/task:0/device:GPU:0 with 7513 MB memory) -> physical GPU "
                "(device: 0, name: Vega 10 XT [Radeon RX Vega 64], pci bus id: 0000:03:00.0)",
                "",
                f"Epoch 1/{self.epochs}",
            ]
        if self.fmt == "trace2x":
            return [
                f"{self._tf_time()}: I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully "
                "opened dynamic library libhip_hcc.so",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1734] Found device 0 with "
                "properties: ",
                "pciBusID: 0000:43:00.0 name: Vega 20     ROCm AMDGPU Arch: gfx906",
                "coreClock: 1.725GHz coreCount: 60 deviceMemorySize: 31.98GiB deviceMemoryBandwidth: -1B/s",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1862] Adding visible gpu "
                "devices: 0",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1406] Created TensorFlow "
                "device (/job:localhost/replica:0/task:0/device:GPU:0 with 30196 MB memory) -> physical GPU "
                "(device: 0, name: Vega 20, pci bus id: 0000:43:00.0)",
                f"Epoch 1/{self.epochs}",
            ]
        return ["=> creating model 'resnet50'",
                "=> using ROCm device 0: AMD Instinct MI250X/MI250 (gfx90a:sramecc+:xnack-)"]

    def _keras_bar(self, step: int, done: bool) -> str:
        width = 30
        filled = width * step // self.steps
        if done:
            bar = "=" * width
            return (f"{step}/{self.steps} [{bar}] - {self.rng.randrange(8, 40)}s "
                    f"{self.rng.randrange(200, 900)}ms/step - loss: {self.loss:.4f} - accuracy: 0.0010")
        bar = "=" * max(filled - 1, 0) + ">" + "." * (width - max(filled, 1))
        eta = max(1, (self.steps - step) * self.rng.randrange(1, 3))
        return (f"{step:>{len(str(self.steps))}}/{self.steps} [{bar}] - ETA: {eta}s - loss: {self.loss:.4f} "
                f"- accuracy: {0.0:.4e}")

    def _tqdm(self, epoch: int, step: int) -> str:
        pct = 100 * step // self.steps
        filled = 10 * step // self.steps
        bar = "\u2588" * filled + " " * (10 - filled)
        rate = self.rng.uniform(2.5, 3.4)
        elapsed = int(step / rate)
        remain = int((self.steps - step) / rate)
        return (f"Epoch {epoch}: {pct:3d}%|{bar}| {step}/{self.steps} [{elapsed // 60:02d}:{elapsed % 60:02d}<"
                f"{remain // 60:02d}:{remain % 60:02d}, {rate:.2f}it/s, loss={self.loss:.3f}]")

    def after_iteration(self, global_step: int) -> list[str]:
        """Output after training step ``global_step`` (1-based): progress, sometimes a loss.

        Progress bars are redrawn with ``\\r`` (Keras, tqdm); a physical line only ends when
        the framework prints a newline, so one line holds several bar states.
        """
        self.loss = max(0.5, self.loss - self.rng.uniform(0.0, 0.004) + self.rng.uniform(-0.01, 0.01))
        epoch, step = divmod(global_step - 1, self.steps)
        step += 1
        done = step == self.steps
        if self.fmt in ("trace2018", "trace2x"):
            if not done:
                return ["\r" + self._keras_bar(step, False)]
            lines = ["\r" + self._keras_bar(max(step - 1, 1), False) + "\r" + self._keras_bar(step, True)]
            if self.epochs > epoch + 1 and self.spec.size is not None:
                lines.append(f"Epoch {epoch + 2}/{self.epochs}")
            return lines
        lines = ["\r" + self._tqdm(epoch, step - 1) + "\r" + self._tqdm(epoch, step)]
        if step == 1 or step % 10 == 0 or done:
            lines.append(f"Epoch: [{epoch}][{step:>{len(str(self.steps))}}/{self.steps}]\tTime "
                         f"{self.rng.uniform(0.28, 0.4):6.3f} ({self.rng.uniform(0.3, 0.5):6.3f})\tData "
                         f"{self.rng.uniform(0.001, 0.02):6.3f} ({self.rng.uniform(0.01, 0.2):6.3f})\tLoss "
                         f"{self.loss:.4e} ({self.loss + 0.01:.4e})\tAcc@1   0.00 (  0.10)\tAcc@5   0.00 (  0.49)")
        return lines

    def before_inference(self) -> list[str]:
        if self.fmt in ("trace2018", "trace2x"):
            return ["", "Evaluating on 1 validation batch..."]
        return ["", "Test: [0/1]\tTime  1.234 ( 1.234)\tLoss 6.8713e+00 (6.8713e+00)"]

    def epilogue(self) -> list[str]:
        if self.fmt in ("trace2018", "trace2x"):
            return [f"1/1 [==============================] - 1s 512ms/step - loss: {self.loss + 0.05:.4f} "
                    "- accuracy: 0.0000e+00", f"val_loss: {self.loss + 0.05:.4f}"]
        return [" * Acc@1 0.000 Acc@5 0.000", "Saving checkpoint to checkpoint.pth.tar"]


# --------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------


class _Writer:
    """Turns records into text: prefixes, thread ids, elapsed field, interleaving."""

    def __init__(self, spec: SampleSpec, rng: random.Random) -> None:
        self.spec = spec
        self.fmt = spec.format
        self.rng = rng
        self.mpmt = self.fmt == "trace2x"
        self.elapsed = spec.use_elapsed
        base = rng.randrange(20000, 60000)
        self.tids = (base, base + rng.randrange(30, 90))

    def prefix(self, thread: int, delay: float) -> str:
        parts = []
        if self.mpmt:
            parts.append(f"{self.tids[thread]} ")
        parts.append("MIOpen(HIP)")
        if self.elapsed:
            ms = delay + self.rng.expovariate(1 / 0.02)
            parts.append(f"{ms:8.3f}")
        parts.append(": ")
        return "".join(parts)

    def render(self, recs: Sequence[_Rec]) -> str:
        out: list[str] = []
        pending = 0.0
        for thread, kind, text, delay in recs:
            if kind == "delay":
                pending += delay
                continue
            if kind == "p":
                out.append(self.prefix(thread, delay + pending) + text)
                pending = 0.0
            else:
                out.append(text)
        out.append("")
        return "\n".join(out)


def _interleave(rng: random.Random, a: list[_Rec], b: list[_Rec]) -> list[_Rec]:
    """Random merge of two threads' records, each keeping its order (line-level interleave)."""
    out: list[_Rec] = []
    i = j = 0
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and rng.random() < 0.5):
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out


class Generator:
    """Produces one log as text pieces; see ``iter_chunks`` for the public entry point."""

    VARIANTS = 4

    def __init__(self, spec: SampleSpec) -> None:
        self.spec = spec
        self.layers = resnet50_layers(spec.batch)
        self.renderer = _Renderer(spec, self.layers)
        self.writer = _Writer(spec, random.Random(f"{spec.seed}:writer"))
        self.rng = random.Random(f"{spec.seed}:generator")
        steps = spec.iterations if spec.size is None else -(-1281167 // spec.batch)
        self.noise = _Noise(spec, steps)
        self._variants: list[str] = []

    def _records(self, calls: Sequence[Call]) -> list[_Rec]:
        render = self.renderer.render
        concurrent = self.spec.format == "trace2x"
        recs: list[_Rec] = []
        pending_b: list[_Rec] = []
        for call in calls:
            r = render(call)
            if concurrent and call.thread == 1:
                pending_b += r
                continue
            if pending_b:
                # the previous call ran on the other executor thread, concurrently with this one
                if self.rng.random() < 0.35:
                    recs += _interleave(self.rng, r, pending_b)
                else:
                    recs += pending_b + r
                pending_b = []
            else:
                recs += r
        recs += pending_b
        return recs

    def _text(self, calls: Sequence[Call], delay_first: float = 0.0) -> str:
        recs = self._records(calls)
        if recs and delay_first:
            t, k, s, d = recs[0]
            recs[0] = (t, k, s, d + delay_first)
        return self.writer.render(recs)

    def preamble(self) -> str:
        text = "\n".join(self.noise.preamble()) + "\n"
        recs: list[_Rec] = []
        if self.spec.format == "info":
            recs += [(0, "p", "Info [get_device_name] Raw device name: gfx90a:sramecc+:xnack-", 0.0),
                     (0, "p", "Info [Handle] stream: 0, device_id: 0", 0.0)]
        if self.spec.format in ("command", "info"):
            # printed at the default level (Warning) when the kernel-cache package is missing
            recs.append((0, "p", "Warning [SQLiteBase] Missing system database file: "
                         "/opt/rocm-5.7.0/share/miopen/db/gfx90a6e.kdb "
                         "Performance may degrade. Please follow instructions to install: "
                         "https://github.com/ROCmSoftwarePlatform/MIOpen#installing-miopen-kernels-package", 0.0))
        return text + (self.writer.render(recs) if recs else "")

    def first_iteration(self) -> str:
        calls = training_calls(self.layers, first=True, concurrent_backward=self.spec.format == "trace2x")
        return self._text(calls, 2500.0) + "\n".join(self.noise.after_iteration(1)) + "\n"

    def _variant(self, index: int) -> str:
        while len(self._variants) <= index:
            v = len(self._variants)
            mem = self.renderer.mem
            if v == 0:
                mem.shift = (1 << 62, 0)
            else:
                total = max(len(mem._act), 3)
                mem.shift = (self.rng.randrange(total // 3, total), v * _SEGMENT * self.rng.choice((1, 2, 3)))
            calls = training_calls(self.layers, first=False, concurrent_backward=self.spec.format == "trace2x")
            self._variants.append(self._text(calls, self.rng.uniform(60.0, 250.0)))
            mem.shift = (1 << 62, 0)
        return self._variants[index]

    def iteration(self, step: int) -> str:
        """Text of training step ``step`` >= 2 (a cached variant + that step's output)."""
        v = 0 if self.rng.random() < 0.6 else self.rng.randrange(1, self.VARIANTS)
        return self._variant(v) + "\n".join(self.noise.after_iteration(step)) + "\n"

    def inference(self) -> str:
        pre = "\n".join(self.noise.before_inference()) + "\n"
        return pre + self._text(inference_calls(self.layers), 400.0)

    def epilogue(self) -> str:
        return "\n".join(self.noise.epilogue()) + "\n"

    def chunks(self) -> Iterator[str]:
        spec = self.spec
        yield self.preamble()
        yield self.first_iteration()
        if spec.size is None:
            for step in range(2, spec.iterations + 1):
                yield self.iteration(step)
            if spec.inference:
                yield self.inference()
            yield self.epilogue()
            return
        step = 2
        while True:  # size mode: the caller stops reading
            yield self.iteration(step)
            step += 1


def iter_chunks(spec: SampleSpec) -> Iterator[str]:
    """The log as text chunks (an iteration or more each), honouring ``spec.size``.

    In size mode the last chunk is cut after the last complete line that fits, so the
    total is within one line of ``spec.size`` (or the whole log is shorter, never longer).
    """
    gen = Generator(spec)
    if spec.size is None:
        yield from gen.chunks()
        return
    remaining = spec.size
    for chunk in gen.chunks():
        n = len(chunk.encode("utf-8")) if not chunk.isascii() else len(chunk)
        if n <= remaining:
            yield chunk
            remaining -= n
            if remaining == 0:
                return
            continue
        data = chunk.encode("utf-8")[:remaining]
        cut = data.rfind(b"\n")
        if cut >= 0:
            yield data[: cut + 1].decode("utf-8", "ignore")
        return


#: The log behind ``miotui --demo`` (shipped as ``miotui/samples/resnet50_demo.log``):
#: what a user sees with MIOPEN_ENABLE_LOGGING_CMD=1 MIOPEN_LOG_LEVEL=5.
DEMO_SPEC = SampleSpec(format="info", level=5, iterations=3, batch=32, seed=0)


def demo_log_path() -> str:
    """Path of the bundled demo log (generated from ``DEMO_SPEC``; package data)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "samples", "resnet50_demo.log")


def generate_text(spec: SampleSpec) -> str:
    """The whole log as one string (for small logs: tests, the demo)."""
    return "".join(iter_chunks(spec))


def write_log(spec: SampleSpec, path: str, *, compresslevel: int = 1) -> int:
    """Write the log to ``path`` (gzip-compressed when it ends in ``.gz``).

    Returns the number of uncompressed bytes written.  Writes in multi-megabyte chunks;
    the gzip stream has no timestamp so the same spec gives the same file.
    """
    written = 0
    tmp = path + ".part"
    with open(tmp, "wb") as raw:
        sink: io.BufferedIOBase
        if path.endswith(".gz"):
            sink = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=compresslevel, mtime=0)
        else:
            sink = raw  # type: ignore[assignment]
        buf: list[bytes] = []
        size = 0
        for chunk in iter_chunks(spec):
            data = chunk.encode("utf-8")
            buf.append(data)
            size += len(data)
            if size >= 8 << 20:
                sink.write(b"".join(buf))
                written += size
                buf, size = [], 0
        sink.write(b"".join(buf))
        written += size
        if sink is not raw:
            sink.close()
    os.replace(tmp, path)
    return written


_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"1G"`` -> 1073741824; K/M/G/T are binary multiples (``1.5M``, ``200k``, ``4096``)."""
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"cannot read size {text!r} (examples: 4096, 200K, 1.5M, 1G)")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    value = int(float(m.group(1)) * mult)
    if value < 1:
        raise ValueError("size must be positive")
    return value


# --------------------------------------------------------------------------------------
# Command line (sample_logs/generate.py is a thin wrapper around main)
# --------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="generate.py",
        description="Write a realistic synthetic MIOpen log of a ResNet-50 training run.",
        epilog="Formats: " + "; ".join(f"{k}: {v}" for k, v in FORMAT_DESCRIPTIONS.items()))
    ap.add_argument("--format", choices=FORMATS, default="trace55", help="log format (default trace55)")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--iterations", type=int, default=2, help="training iterations (default 2)")
    group.add_argument("--size", type=parse_size, help="stop at about this many bytes, e.g. 1G (binary units)")
    ap.add_argument("--batch", type=int, default=32, help="batch size N (default 32)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--level", type=int, choices=(5, 6), default=6, help="MIOPEN_LOG_LEVEL for --format info")
    el = ap.add_mutually_exclusive_group()
    el.add_argument("--elapsed", dest="elapsed", action="store_true", default=None,
                    help="add MIOPEN_ENABLE_LOGGING_ELAPSED_TIME's field (default: trace2x only)")
    el.add_argument("--no-elapsed", dest="elapsed", action="store_false")
    ap.add_argument("--no-inference", dest="inference", action="store_false",
                    help="leave out the final inference pass")
    ap.add_argument("--out", default="-", help="output file ('-' = stdout; '.gz' = gzip)")
    ap.add_argument("--quiet", action="store_true", help="do not report size and speed on stderr")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    try:
        spec = SampleSpec(format=ns.format, iterations=ns.iterations, size=ns.size, batch=ns.batch,
                          seed=ns.seed, level=ns.level, elapsed=ns.elapsed, inference=ns.inference)
    except ValueError as exc:
        print(f"generate: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    if ns.out == "-":
        out = sys.stdout.buffer
        written = 0
        for chunk in iter_chunks(spec):
            data = chunk.encode("utf-8")
            out.write(data)
            written += len(data)
        out.flush()
    else:
        directory = os.path.dirname(os.path.abspath(ns.out))
        os.makedirs(directory, exist_ok=True)
        written = write_log(spec, ns.out)
    dt = time.perf_counter() - t0
    if not ns.quiet:
        print(f"generate: {spec.format}: {written} bytes in {dt:.2f} s ({written / 1e6 / max(dt, 1e-9):.0f} MB/s)"
              f"{'' if ns.out == '-' else ' -> ' + ns.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Which cuDNN API calls describe a layer, and how each is read.

A call is one of three kinds, by its function name alone:

* a *layer* call (this module's ``LAYER_CALLS``): ``cudnnBackendExecuteInternal`` (one per
  convolution run in cuDNN 9, on both of PyTorch's paths), the legacy
  ``cudnnConvolution{Forward,BackwardData,BackwardFilter}`` calls, ``cudnnFind*`` searches,
  algorithm and workspace queries, batch norm, pooling, activation, softmax, and the
  ``*Visualize`` graph records;
* a *known* call that holds no layer (descriptor creation, attribute get/set, streams,
  versions: ``KNOWN``), recognised and counted;
* anything else: counted and listed as undecoded with its function name.

The legacy calls name the descriptors they take; cuDNN 7-9 print them spelled out in the
call, but where a record gives one only by address (``convDesc: location=host;
addr=0x…``) it is looked up among the descriptors earlier ``cudnnSet*Descriptor`` calls
described (``Descriptors``).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable, Optional

from miotui.formats.cudnn.fields import FieldError, Fields
from miotui.formats.cudnn.graphs import visualize_layer
from miotui.formats.cudnn.layers import (
    DIRECTIONS,
    Decoded,
    activation_layer,
    bnorm_layer,
    conv_layer,
    geometry,
    pool_layer,
    rnn_layer,
    softmax_layer,
    solver_name,
    tensor,
)

#: calls recognised as holding no layer
KNOWN = re.compile(r"^cudnn(?:Backend|Create|Destroy|Set|Get|Graph|Cnn|Ops|Adv|Query|Init|Make|Restore|Save)")
#: descriptors remembered by address (the oldest forgotten first)
DESCRIPTORS_KEPT = 4096

#: legacy convolution calls: direction, role, and the names each of x, w, y goes by
#: (cuDNN 8/9 names first, then cuDNN 7's)
_X_FWD, _W_FWD, _Y_FWD = ("xDesc", "srcDesc"), ("wDesc", "filterDesc"), ("yDesc", "destDesc")
_BWD_DATA = (("dxDesc", "gradDesc"), ("wDesc", "filterDesc"), ("dyDesc", "diffDesc"))
_BWD_FILTER = (("xDesc", "srcDesc"), ("dwDesc", "gradDesc"), ("dyDesc", "diffDesc"))
LEGACY_CONV: dict[str, tuple[str, str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]] = {}
for _fn, _direction, _names in (("Forward", "fwd", (_X_FWD, _W_FWD, _Y_FWD)), ("BackwardData", "bwd", _BWD_DATA),
                                ("BackwardFilter", "wrw", _BWD_FILTER)):
    LEGACY_CONV[f"cudnnConvolution{_fn}"] = (_direction, "execution", _names)
    for _find in ("Algorithm", "AlgorithmEx"):
        LEGACY_CONV[f"cudnnFindConvolution{_fn}{_find}"] = (_direction, "find", _names)
    for _query in ("Algorithm", "Algorithm_v7", "WorkspaceSize"):
        LEGACY_CONV[f"cudnnGetConvolution{_fn}{_query}"] = (_direction, "mention", _names)
LEGACY_CONV["cudnnConvolutionBiasActivationForward"] = ("fwd", "execution", (_X_FWD, _W_FWD, _Y_FWD))

#: the other layer calls: (decoder, direction, role)
OTHER_LAYERS: dict[str, tuple[Callable[[str, Fields], Decoded], str, str]] = {
    "cudnnBatchNormalizationForwardTraining": (bnorm_layer, "fwd_train", "execution"),
    "cudnnBatchNormalizationForwardTrainingEx": (bnorm_layer, "fwd_train", "execution"),
    "cudnnBatchNormalizationForwardInference": (bnorm_layer, "fwd_infer", "execution"),
    "cudnnBatchNormalizationBackward": (bnorm_layer, "bwd", "execution"),
    "cudnnBatchNormalizationBackwardEx": (bnorm_layer, "bwd", "execution"),
    "cudnnPoolingForward": (pool_layer, "fwd", "execution"),
    "cudnnPoolingBackward": (pool_layer, "bwd", "execution"),
    "cudnnActivationForward": (activation_layer, "fwd", "execution"),
    "cudnnActivationBackward": (activation_layer, "bwd", "execution"),
    "cudnnSoftmaxForward": (softmax_layer, "fwd", "execution"),
    "cudnnSoftmaxBackward": (softmax_layer, "bwd", "execution"),
    "cudnnRNNForward": (rnn_layer, "fwd", "execution"),
    "cudnnRNNBackwardData_v8": (rnn_layer, "bwd", "execution"),
    "cudnnRNNBackwardWeights_v8": (rnn_layer, "wrw", "execution"),
}
EXECUTE_INTERNAL = "cudnnBackendExecuteInternal"
BACKEND_EXECUTE = "cudnnBackendExecute"
ENGINE_CONFIG = "cudnnBackendFinalizeEngineCfgVisualize"
VISUALIZE = ("cudnnBackendFinalizeGraphVisualize", ENGINE_CONFIG)
#: calls whose records hold a layer
LAYER_CALLS = frozenset(LEGACY_CONV) | frozenset(OTHER_LAYERS) | {EXECUTE_INTERNAL, BACKEND_EXECUTE, *VISUALIZE}
#: calls that record descriptors by address for the legacy calls
DESCRIPTOR_SETTERS = frozenset({"cudnnSetConvolutionNdDescriptor", "cudnnSetConvolution2dDescriptor",
                                "cudnnSetConvolutionGroupCount", "cudnnSetConvolutionMathType",
                                "cudnnSetTensorNdDescriptor", "cudnnSetTensor4dDescriptor",
                                "cudnnSetTensorNdDescriptorEx", "cudnnSetFilterNdDescriptor",
                                "cudnnSetFilter4dDescriptor", "cudnnDestroyConvolutionDescriptor",
                                "cudnnDestroyTensorDescriptor", "cudnnDestroyFilterDescriptor"})
_DESC_NAMES = ("convDesc", "tensorDesc", "filterDesc", "desc")


@dataclass(frozen=True)
class Found:
    """A layer a call record describes: the decoded layer and how it was seen."""

    decoded: Decoded
    role: str
    #: a run whose ``cudnnBackendExecuteInternal`` record, which cuDNN 9 prints after it (a
    #: legacy convolution call, a ``cudnnBackendExecute`` call), is the same run
    paired_run: bool = False
    #: a ``cudnnBackendExecuteInternal`` record
    internal: bool = False


def known(fn: str) -> bool:
    return KNOWN.match(fn) is not None


class Descriptors:
    """Descriptors described by ``cudnnSet*Descriptor`` calls, by address, for a legacy call
    that names one only by its address.  Bounded: the oldest is forgotten first."""

    def __init__(self) -> None:
        self._by_addr: OrderedDict[str, Fields] = OrderedDict()

    def record(self, fn: str, f: Fields) -> None:
        addr = next((f[n] for n in _DESC_NAMES if isinstance(f.get(n), str) and f[n].startswith("@")), None)
        if addr is None:
            return
        if fn.startswith("cudnnDestroy"):
            self._by_addr.pop(addr, None)
            return
        entry = self._by_addr.get(addr)
        if entry is None or fn.endswith(("NdDescriptor", "2dDescriptor", "4dDescriptor", "DescriptorEx")):
            entry = Fields()
        self._by_addr[addr] = entry
        self._by_addr.move_to_end(addr)
        for name, value in f.items():
            if name not in _DESC_NAMES and isinstance(value, str):
                entry[name] = value
        if fn == "cudnnSetConvolution2dDescriptor":   # its scalars as the Nd form's arrays
            pick = [entry.get(n, "") for n in ("pad_h", "pad_w", "u", "v", "dilation_h", "dilation_w")]
            if all(isinstance(p, str) and p for p in pick):
                entry["padA"], entry["strideA"], entry["dilationA"] = (
                    f"[{pick[0]},{pick[1]}]", f"[{pick[2]},{pick[3]}]", f"[{pick[4]},{pick[5]}]")
        while len(self._by_addr) > DESCRIPTORS_KEPT:
            self._by_addr.popitem(last=False)

    def block(self, f: Fields, names: tuple[str, ...]) -> Fields:
        """The descriptor ``names`` gives: spelled out in the record, or by its address."""
        for name in names:
            value = f.get(name)
            if isinstance(value, Fields):
                return value
            if isinstance(value, str) and value.startswith("@"):
                found = self._by_addr.get(value)
                if found is None:
                    raise FieldError(f"{name} is given by address {value[1:]}, which no earlier "
                                     f"cudnnSet*Descriptor call described")
                return found
        return f.block(*names)


def execute_internal(f: Fields) -> Found:
    operation = f.text("operation")
    direction = DIRECTIONS.get(operation)
    if direction is None:
        raise FieldError(f"operation {operation} is not a convolution miotui reads")
    x, w, y = (tensor(f.block("xDesc"), "xDesc"), tensor(f.block("wDesc"), "wDesc"),
               tensor(f.block("yDesc"), "yDesc"))
    notes: list[tuple[str, str]] = []
    engine = f.text("engine_id", default="")
    if engine:
        knobs = f.get("knobDesc")
        notes.append(("solver", solver_name(engine, {k: v for k, v in knobs.items() if isinstance(v, str)}
                                            if isinstance(knobs, Fields) else {})))
    tf32 = f.text("enable_tf32", default="")
    if tf32:
        notes.append(("tf32", "on" if tf32 == "true" else "off"))
    numerical = f.get("numericalNotes")
    if isinstance(numerical, Fields) and numerical:
        notes.append(("numerical_notes", " ".join(n.replace("CUDNN_NUMERICAL_NOTE_", "") for n in numerical)))
    return Found(conv_layer(direction, x, w, y, geometry(f.block("convDesc")), tuple(notes)), "execution",
                 internal=True)


#: a backend convolution operation's x, w, y by direction
_BACKEND_PORTS = {"fwd": ("xDesc", "wDesc", "yDesc"), "bwd": ("dxDesc", "wDesc", "dyDesc"),
                  "wrw": ("xDesc", "dwDesc", "dyDesc")}


def backend_execute(f: Fields) -> Found:
    """A ``cudnnBackendExecute`` call: the convolution of its execution plan's graph
    (``executionPlan`` > ``engcfg`` > ``engine`` > ``opGraph`` > ``operation``), with the
    engine and knobs the plan uses: the run, in a log without ExecuteInternal records (read
    as cuDNN 9.19 prints it; cuDNN 8.2's records nest a plan the same way in the public
    excerpts, but no cuDNN 8 execute record was at hand)."""
    engine = f.block("executionPlan").block("engcfg").block("engine")
    operation = engine.block("opGraph").block("operation")
    op_type = operation.kind
    direction = DIRECTIONS.get(op_type)
    if direction is None:
        raise FieldError(f"its graph's operation is {op_type or 'not named'}, not a convolution miotui reads")
    x_name, w_name, y_name = _BACKEND_PORTS[direction]
    x, w, y = tensor(operation.block(x_name), x_name), tensor(operation.block(w_name), w_name), \
        tensor(operation.block(y_name), y_name)
    geo = geometry(operation.block("convDesc"))
    if len(w.dims) > 1 and w.dims[1] and x.dims[1] % w.dims[1] == 0:
        geo = replace(geo, groups=x.dims[1] // w.dims[1])
    notes = []
    engine_id = engine.text("engine_id", default="")
    if engine_id:
        knobs = engine.get("knobDesc")
        notes.append(("solver", solver_name(engine_id, {k: v for k, v in knobs.items() if isinstance(v, str)}
                                            if isinstance(knobs, Fields) else {})))
    return Found(conv_layer(direction, x, w, y, geo, tuple(notes)), "execution", paired_run=True)


def legacy_conv(fn: str, f: Fields, descriptors: Descriptors) -> Found:
    direction, role, (x_names, w_names, y_names) = LEGACY_CONV[fn]
    x = tensor(descriptors.block(f, x_names), x_names[0])
    w = tensor(descriptors.block(f, w_names), w_names[0])
    y = tensor(descriptors.block(f, y_names), y_names[0])
    notes = []
    algo = f.text("algo", default="")
    if algo:
        notes.append(("algo", algo.split(" ")[0].replace("CUDNN_CONVOLUTION_", "")))
    return Found(conv_layer(direction, x, w, y, geometry(descriptors.block(f, ("convDesc",))), tuple(notes)), role,
                 paired_run=role == "execution")


def decode_call(fn: str, f: Fields, descriptors: Descriptors) -> Optional[Found]:
    """The layer of a layer call's record (None: a graph with no convolution);
    ``FieldError`` says why a record that should hold one does not."""
    if fn == EXECUTE_INTERNAL:
        return execute_internal(f)
    if fn == BACKEND_EXECUTE:
        return backend_execute(f)
    if fn in LEGACY_CONV:
        return legacy_conv(fn, f, descriptors)
    if fn in OTHER_LAYERS:
        decoder, direction, role = OTHER_LAYERS[fn]
        return Found(decoder(direction, f), role)
    decoded = visualize_layer(f.text("apiLog"))
    if decoded is None:
        return None
    if fn == ENGINE_CONFIG:   # one engine configuration tried for the layer's plan: no new sighting
        return Found(decoded, "config")
    return Found(decoded, "mention")

"""Convolutions described as graphs: cuDNN's ``*Visualize`` JSON, the cudnn-frontend v1
graph JSON, and the cudnn-frontend (v0.x) text log PyTorch's default path writes.

The graph forms say what cuDNN built a plan for, not that it ran: each is a *mention* of
its layer, carrying the engine (``eng48 TILE_SIZE=2 …``) or plan tag
(``ConvFwd_eng48_k2=2_k6=0…``) as the layer's solver.  A frontend log's executions
(``VARIANT_PACK … has 3 data pointers``) name no layer (a cached plan is run without its
graph being printed again), so they are counted for the whole log, not given to a layer.
"""

from __future__ import annotations

import json
import re
from typing import Optional

from miotui.formats.cudnn.fields import FieldError
from miotui.formats.cudnn.layers import (
    DIRECTIONS,
    ConvGeometry,
    Decoded,
    Tensor,
    array_text,
    conv_layer,
    dtype_of,
    int_list,
    match_tensors,
    solver_name,
    type_name,
)

#: the longest JSON value parsed (a ResNet-50 ``Visualize`` line is ~3 KB)
JSON_CHARS = 64 * 1024


def load_json(text: str) -> dict:
    if len(text) > JSON_CHARS:
        raise FieldError(f"a JSON value of {len(text):,} characters (at most {JSON_CHARS:,} are read)")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise FieldError(f"JSON that does not parse: {str(e)[:80]}") from None
    if not isinstance(value, dict):
        raise FieldError("JSON that is not an object")
    return value


def _tensor(entry: object, name: str, fallback_type: str = "") -> Tensor:
    if not isinstance(entry, dict):
        raise FieldError(f"graph tensor {name[:40]!r} is not described")
    dtype_text = entry.get("dataType", entry.get("data_type", fallback_type))
    if not isinstance(dtype_text, str) or dtype_text in ("", "NOT_SET"):
        dtype_text = fallback_type
    stride = entry.get("stride")
    return Tensor(dtype_of(dtype_text), type_name(dtype_text), int_list(f"{name}.dim", entry.get("dim")),
                  int_list(f"{name}.stride", stride) if stride is not None else ())


def _groups(x: Tensor, w: Tensor) -> int:
    return x.dims[1] // w.dims[1] if len(w.dims) > 1 and w.dims[1] and x.dims[1] % w.dims[1] == 0 else 1


_ENGINE = re.compile(r',"engine":\{"engineId":(-?\d{1,9})[^{}]{0,200}"knobChoices":\{([^{}]{0,2000})\}')
_KNOB = re.compile(r'"(\w{1,80})":(-?\d{1,12})')


def engine_config(text: str) -> str:
    """The engine and knobs of a ``FinalizeEngineCfgVisualize`` JSON value (``eng48
    TILE_SIZE=2 …``), read apart from its graph so that the graph's layer can be cached;
    "" where there is none."""
    m = _ENGINE.search(text)
    return solver_name(m.group(1), dict(_KNOB.findall(m.group(2))[:16])) if m else ""


def graph_part(text: str) -> str:
    """A ``Visualize`` JSON value without its engine: what its layer depends on."""
    cut = text.rfind(',"engine":')
    return text if cut < 0 else text[:cut]


def visualize_layer(text: str) -> Optional[Decoded]:
    """The convolution of a ``cudnnBackendFinalize{Graph,EngineCfg}Visualize`` JSON value
    (its engine, if any, is ``engine_config``'s); None for a graph with no convolution
    (recognised, no layer)."""
    obj = load_json(text)
    graph = obj.get("operationGraph")
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise FieldError("JSON without an operationGraph with nodes")
    nodes = [n for n in graph["nodes"][:64] if isinstance(n, dict)]
    convs = [n for n in nodes if DIRECTIONS.get(str(n.get("operation", ""))) is not None]
    if not convs:
        return None
    node = convs[0]
    tensors = {t.get("name"): t for t in graph.get("tensors", [])[:256] if isinstance(t, dict)} \
        if isinstance(graph.get("tensors"), list) else {}
    x_name, w_name, y_name = (node.get("X", node.get("dX")), node.get("W", node.get("dW")),
                              node.get("Y", node.get("dY")))
    x, w, y = (_tensor(tensors.get(x_name), "X"), _tensor(tensors.get(w_name), "W"),
               _tensor(tensors.get(y_name), "Y"))
    geo = ConvGeometry(int_list("pad", node.get("pad")), int_list("stride", node.get("stride")),
                       int_list("dilation", node.get("dilation")), _groups(x, w),
                       node.get("mode") == "CUDNN_CONVOLUTION", type_name(str(node.get("mathPrec", ""))))
    decoded = conv_layer(DIRECTIONS[node["operation"]], x, w, y, geo)
    if len(nodes) > 1:
        decoded = Decoded(decoded.problem, decoded.annotations,
                          decoded.warnings + (f"cuDNN's graph fuses {len(nodes)} operations; this is its convolution",))
    return decoded


#: frontend v1 node tags -> (x, w, y) as (port group, port name)
_V1_PORTS = {"CONV_FPROP": (("inputs", "X"), ("inputs", "W"), ("outputs", "Y")),
             "CONV_DGRAD": (("outputs", "DX"), ("inputs", "W"), ("inputs", "DY")),
             "CONV_WGRAD": (("inputs", "X"), ("outputs", "DW"), ("inputs", "DY"))}


def frontend_graph_layers(text: str) -> list[Decoded]:
    """The convolutions of a cudnn-frontend v1 graph JSON (``{"context":…,"nodes":…}``)."""
    obj = load_json(text)
    context = obj.get("context") if isinstance(obj.get("context"), dict) else {}
    io_type = str(context.get("io_data_type", ""))
    tensors = obj.get("tensors") if isinstance(obj.get("tensors"), dict) else {}
    nodes = obj.get("nodes") if isinstance(obj.get("nodes"), list) else []
    found = []
    for node in nodes[:64]:
        if not isinstance(node, dict) or node.get("tag") not in _V1_PORTS:
            continue
        ports = []
        for group, port in _V1_PORTS[node["tag"]]:
            names = node.get(group) if isinstance(node.get(group), dict) else {}
            name = names.get(port, names.get(port.capitalize()))
            ports.append(_tensor(tensors.get(name), port, io_type))
        x, w, y = ports
        pre, post = int_list("pre_padding", node.get("pre_padding")), int_list("post_padding", node.get("post_padding"))
        geo = ConvGeometry(pre, int_list("stride", node.get("stride")), int_list("dilation", node.get("dilation")),
                           _groups(x, w), node.get("math_mode") == "CONVOLUTION",
                           type_name(str(node.get("compute_data_type", context.get("compute_data_type", "")))),
                           upper_pads=post)
        found.append(conv_layer(DIRECTIONS[node["tag"]], x, w, y, geo))
    return found


_FE_TENSOR = re.compile(r"CUDNN_BACKEND_TENSOR_DESCRIPTOR\s*:")
_FE_FIELD = re.compile(r"^\s*(Datatype|Id|Dim|Str)\s*:?\s*(.*?)\s*$", re.M)
_FE_CONV = re.compile(r"CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR : Datatype: \[\"?(\w+)\"?\] Mode: \[\"?(\w+)\"?\]"
                      r".*?PadLower (\[[^\]]*\]) PadUpper (\[[^\]]*\]) Dilation (\[[^\]]*\]) Stride (\[[^\]]*\])")
_FE_PLAN = re.compile(r"CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR : (\w+?)_(eng[^,\s]*)")
_FE_TAG = re.compile(r"^Tag: (\w+?)_", re.M)
_FE_TIMED = re.compile(r"Plan (\S+) took\s+([0-9.]+)")
_FE_EXECUTE = re.compile(r"VARIANT_PACK_DESCRIPTOR : has \d+ data pointers|Executing plan at index")


class FrontendLog:
    """The cudnn-frontend text log, one ``[cudnn_frontend]`` unit at a time: tensor dumps
    and a convolution descriptor gather a graph; its execution plan's tag makes it a layer."""

    def __init__(self) -> None:
        self.tensors: list[Tensor] = []
        self.geometry: Optional[ConvGeometry] = None
        self.direction = ""
        #: plan executions seen (no layer named)
        self.executions = 0
        #: autotuning timings (``Plan <tag> took <ms>``)
        self.timings = 0

    def unit(self, text: str) -> list[tuple[Decoded, str]]:
        """Layers (with their role) a unit completes; ``FieldError`` for a graph that does
        not make one."""
        if _FE_EXECUTE.search(text):
            self.executions += 1
            return []
        if _FE_TENSOR.search(text):
            return self._tensor(text)
        m = _FE_CONV.search(text)
        if m:
            dtype, mode, lower, upper, dilation, stride = m.groups()
            self.geometry = ConvGeometry(array_text("PadLower", lower), array_text("Stride", stride),
                                         array_text("Dilation", dilation), 1, mode == "CONVOLUTION",
                                         type_name(dtype), upper_pads=array_text("PadUpper", upper))
            return []
        m = _FE_TAG.search(text)
        if m:
            self.direction = DIRECTIONS.get(m.group(1), "")
        m = _FE_PLAN.search(text)
        if m:
            return [(self._layer(m.group(1), f"{m.group(1)}_{m.group(2)}"), "mention")]
        m = _FE_TIMED.search(text)
        if m:
            self.timings += 1
            tag = m.group(1)
            layer = self._layer(tag.split("_", 1)[0], tag, keep=True)
            return [(Decoded(layer.problem, layer.annotations + (("plan_time_ms", f"{tag} {m.group(2)}"),),
                             layer.warnings), "find")]
        start = text.find('{"context":')
        if start >= 0:
            return [(d, "mention") for d in frontend_graph_layers(text[start:].split("\n", 1)[0].strip())]
        return []

    def _tensor(self, text: str) -> list[tuple[Decoded, str]]:
        values = dict(_FE_FIELD.findall(text))
        if "Dim" not in values:
            raise FieldError("a frontend tensor dump without its Dim line")
        dtype = values.get("Datatype", "")
        stride = values.get("Str", "")
        self.tensors.append(Tensor(dtype_of(dtype), type_name(dtype), array_text("Dim", values["Dim"]),
                                   array_text("Str", stride) if stride.strip("[] ") else ()))
        del self.tensors[:-3]
        return []

    def _layer(self, prefix: str, tag: str, keep: bool = False) -> Decoded:
        direction = DIRECTIONS.get(prefix, self.direction)
        tensors, geometry = self.tensors, self.geometry
        if not keep:
            self.tensors, self.geometry, self.direction = [], None, ""
        if not direction:
            raise FieldError(f"plan {tag}: no direction in its tag")
        if geometry is None:
            raise FieldError(f"plan {tag}: no convolution descriptor before it")
        x, w, y = match_tensors(direction, tensors, geometry)
        geometry = ConvGeometry(geometry.pads, geometry.strides, geometry.dilations, x.dims[1] // w.dims[1],
                                geometry.true_convolution, geometry.compute_type, geometry.math_type,
                                geometry.upper_pads)
        return conv_layer(direction, x, w, y, geometry, (("solver", tag),))


_XLA_INPUT = re.compile(r"input: \{count: (\d+) feature_map_count: (\d+) spatial: ([\d ]+?)\s+"
                        r"value_min.*?layout: (\w+)")
_XLA_FILTER = re.compile(r"filter: \{output_feature_map_count: (\d+) input_feature_map_count: (\d+) "
                         r"layout: (\w+) shape: ([\d ]+?)\s*\}")
_XLA_CONV = re.compile(r"\{zero_padding: ([\d ]+?)\s+pad_alignment: \w+ filter_strides: ([\d ]+?)\s+"
                       r"dilation_rates: ([\d ]+?)\s*\}")
XLA_WARNING = ("TensorFlow/XLA's description of this convolution gives neither its direction nor its data type: "
               "listed as a forward convolution of unknown type")


def _ints(name: str, text: str) -> tuple[int, ...]:
    return array_text(name, ",".join(text.split()))


def xla_conv_layer(text: str) -> Decoded:
    """TensorFlow/XLA StreamExecutor's description of a convolution (``cuda_dnn.cc``:
    ``input: {count: … feature_map_count: … spatial: …}``, ``filter: {…}``,
    ``{zero_padding … filter_strides … dilation_rates}``), printed when it falls back from
    the cuDNN frontend: a mention, with no direction or data type in it."""
    m_in, m_fil, m_conv = _XLA_INPUT.search(text), _XLA_FILTER.search(text), _XLA_CONV.search(text)
    if not (m_in and m_fil and m_conv):
        missing = [n for n, m in (("input", m_in), ("filter", m_fil), ("zero_padding", m_conv)) if not m]
        raise FieldError(f"TensorFlow's convolution description without its {', '.join(missing)} part")
    spatial = _ints("spatial", m_in.group(3))
    channels_last = m_in.group(4) in ("BatchYXDepth", "BatchDepthYX4")
    nd = len(spatial)
    x = Tensor("unknown", "", (int(m_in.group(1)), int(m_in.group(2))) + spatial,
               format=("NHWC" if nd == 2 else "NDHWC") if channels_last else "")
    w = Tensor("unknown", "", (int(m_fil.group(1)), int(m_fil.group(2))) + _ints("shape", m_fil.group(4)),
               format=("NHWC" if nd == 2 else "NDHWC") if m_fil.group(3) == "OutputYXInput" else "")
    geo = ConvGeometry(_ints("zero_padding", m_conv.group(1)), _ints("filter_strides", m_conv.group(2)),
                       _ints("dilation_rates", m_conv.group(3)), _groups(x, w))
    decoded = conv_layer("fwd", x, w, None, geo)
    return Decoded(decoded.problem, decoded.annotations,
                   tuple(w for w in decoded.warnings if not w.startswith("data type")) + (XLA_WARNING,))

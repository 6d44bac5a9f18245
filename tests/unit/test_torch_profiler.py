"""PyTorch profiler traces (three real ones from an H100: ResNet-18 fp32, MobileNet-V3 AMP
channels-last, DenseNet-121): every convolution forward op is a layer with its shapes and
call count, and the layers' GPU time is the time of the kernels their ops launched, counted
here on its own from the whole parsed document by correlation id."""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miotui.catalog import Catalog
from miotui.decoding.whole import decode_paths
from miotui.formats.torch_profiler import TraceScanner, decode_trace_bytes, looks_like_trace
from miotui.formats.torch_profiler.attribution import kernel_side, split_backward
from miotui.problems import ConvProblem
from miotui.views.timing import layer_times

DATA = Path(__file__).parents[1] / "data" / "profiler"
TRACES = ("profile_resnet18.json.gz", "profile_mobilenet_v3_small_amp.json.gz", "profile_densenet121.json.gz")
#: convolution forward ops in each trace (counted with zcat | grep -c '"aten::cudnn_convolution"')
CONV_FORWARDS = {"profile_resnet18.json.gz": 20, "profile_mobilenet_v3_small_amp.json.gz": 52,
                 "profile_densenet121.json.gz": 120}
CONV_OPS = ("aten::cudnn_convolution", "aten::convolution_backward")
DTYPES = {"float": "fp32", "c10::Half": "fp16"}


def _events(name: str) -> list[dict]:
    with gzip.open(DATA / name) as fh:
        return json.load(fh)["traceEvents"]


@pytest.fixture(scope="module", params=TRACES)
def trace(request):
    name = request.param
    data = gzip.decompress((DATA / name).read_bytes())
    scanner = decode_trace_bytes(data)
    return name, _events(name), scanner


def _expected_forward(ev: dict) -> tuple:
    """A forward op's layer, read here from its args with no code of the decoder."""
    args = ev["args"]
    x, w = args["Input Dims"][0], args["Input Dims"][1]
    pad, stride, dil, groups = (json.loads(args["Concrete Inputs"][i]) for i in (2, 3, 4, 5))
    return (DTYPES[args["Input type"][0]], x[0], x[1], tuple(x[2:]), w[0], tuple(w[2:]), tuple(pad), tuple(stride),
            tuple(dil), groups)


def _layer_key(p: ConvProblem) -> tuple:
    return (p.dtype, p.n, p.c, p.in_spatial, p.k, p.filter, p.pads, p.strides, p.dilations, p.groups)


def test_every_conv_forward_op_is_a_layer_with_its_shapes_and_calls(trace):
    name, events, scanner = trace
    ops = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::cudnn_convolution"]
    assert len(ops) == CONV_FORWARDS[name]
    expected = Counter(_expected_forward(e) for e in ops)
    got = Counter()
    for layer in scanner.catalog.layers():
        p = layer.problem
        if isinstance(p, ConvProblem) and p.direction == "fwd":
            got[_layer_key(p)] += layer.executions
            assert layer.sources == ("torch-profiler",)
    assert got == expected


def _conv_kernel_us(events: list[dict]) -> float:
    """The kernels launched under the conv ops: each op's launches are the runtime calls on its
    thread within its span; their correlation ids name the kernels."""
    kernels = {e["args"]["correlation"]: e["dur"] for e in events if e.get("cat") == "kernel"}
    launches = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e["args"]]
    total = 0.0
    for op in (e for e in events if e.get("cat") == "cpu_op" and e["name"] in CONV_OPS):
        end = op["ts"] + op["dur"]
        for launch in launches:
            if launch["tid"] == op["tid"] and launch["pid"] == op["pid"] and op["ts"] <= launch["ts"] <= end:
                total += kernels.get(launch["args"]["correlation"], 0.0)
    return total


def test_conv_layers_time_is_the_time_of_the_kernels_under_the_conv_ops(trace):
    name, events, scanner = trace
    expected_ms = _conv_kernel_us(events) / 1000
    timed = pair_rows = 0.0
    for layer in scanner.catalog.layers():
        if isinstance(layer.problem, ConvProblem):
            timed += float(layer.annotation("profiler_total_ms", "0"))
            pair_rows += float(layer.annotation("profiler_pair_total_ms", "0"))
    total = timed + pair_rows / 2   # a pair's combined time is on both of its rows
    assert expected_ms > 0
    assert total == pytest.approx(expected_ms, rel=0.01)


def test_all_kernel_time_is_counted_and_what_no_layer_claims_is_said(trace):
    _, events, scanner = trace
    stats = scanner.stats
    all_us = sum(e["dur"] for e in events if e.get("cat") == "kernel")
    assert stats.kernel_us == pytest.approx(all_us)
    claimed = stats.layer_us + stats.pair_us
    unclaimed = stats.free_us + stats.orphan_us + stats.unread_us
    assert claimed + unclaimed == pytest.approx(all_us)
    assert 0 < claimed < all_us   # the optimizer's and the loss's kernels are under no layer
    kernel_time = scanner.catalog.kernel_time["profiler"]
    assert kernel_time.share == pytest.approx(claimed / all_us)


def test_resnet18_backward_pairs_split_by_cudnn_kernel_names():
    scanner = decode_trace_bytes(gzip.decompress((DATA / TRACES[0]).read_bytes()))
    # 20 backward ops; the first conv's asks no input gradient (output_mask [False, True, False])
    assert scanner.stats.backward_split == 19 and scanner.stats.backward_pairs == 0
    times = layer_times(scanner.catalog.layers())
    convs = [layer for layer in scanner.catalog.layers() if isinstance(layer.problem, ConvProblem)]
    assert {layer.problem.direction for layer in convs} == {"fwd", "bwd", "wrw"}
    for layer in convs:
        t = times[layer.id]
        assert t.source == "profiler" and t.per_call_ms > 0
        assert t.total_ms == pytest.approx(float(layer.annotation("profiler_total_ms")), rel=1e-4)


def test_mobilenet_gemm_kernels_keep_the_pair_together_and_say_so():
    scanner = decode_trace_bytes(gzip.decompress((DATA / TRACES[1]).read_bytes()))
    assert scanner.stats.backward_pairs > 0
    paired = [layer for layer in scanner.catalog.layers() if layer.annotation("profiler_pair")]
    assert paired and all(layer.problem.direction in ("bwd", "wrw") for layer in paired)
    assert all("do not say" in layer.annotation("profiler_pair") for layer in paired)


@pytest.mark.parametrize("name, side", [
    ("sm90_xmma_dgrad_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x64x32", "data"),
    ("sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc", "weights"),
    ("_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_52Conv2dWgradOutputGradient",
     "weights"),
    ("igemm_bwd_gtcx_nchw_fp32_bx0_ex1_bt128x128x16", "data"),
    ("igemm_wrw_gtcx_nhwc_fp16_bx0_ex0_bt256x128x32", "weights"),
    ("naive_conv_nonpacked_bwd_nchw_float_double_float", "data"),
    ("gridwise_convolution_backward_weights_implicit_gemm_v4r4_xdlops", "weights"),
    ("void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true>", None),
    ("nvjet_sm90_hsh_64x8_64x16_1x2_h_bz_NNT", None),
])
def test_kernel_names_say_which_gradient(name, side):
    assert kernel_side(name) == side


def test_backward_split_at_the_last_data_kernel():
    # (correlation, µs, side) in launch order: transform, dgrad, transform | transform, wgrad
    split = split_backward([(1, 1.0, None), (2, 10.0, "data"), (3, 2.0, None), (4, 3.0, None), (5, 20.0, "weights")])
    assert split.times == (11.0, 25.0) and split.between_us == 5.0
    interleaved = split_backward([(1, 1.0, "weights"), (2, 2.0, "data"), (3, 4.0, "weights")])
    assert interleaved.times == () and interleaved.combined == 7.0 and "interleave" in interleaved.why


def _strip_shapes(doc: dict) -> dict:
    doc = dict(doc, record_shapes=0)
    events = []
    for e in doc["traceEvents"]:
        if e.get("cat") == "cpu_op":
            e = dict(e, args={k: v for k, v in e["args"].items()
                              if k not in ("Input Dims", "Input Strides", "Input type", "Concrete Inputs")})
        events.append(e)
    doc["traceEvents"] = events
    return doc


def test_a_trace_without_shapes_says_to_record_them_and_gives_no_layers():
    with gzip.open(DATA / TRACES[0]) as fh:
        doc = _strip_shapes(json.load(fh))
    scanner = decode_trace_bytes(json.dumps(doc).encode())
    assert len(scanner.catalog) == 0
    reasons = [u.reason for u in scanner.catalog.undecoded()]
    assert len(reasons) == 1 and "record_shapes=True" in reasons[0]
    assert scanner.stats.without_shapes["aten::cudnn_convolution"] == 20


def test_any_chunking_gives_the_same_layers_and_times():
    data = gzip.decompress((DATA / TRACES[0]).read_bytes())
    whole = decode_trace_bytes(data, chunk=len(data))
    for chunk in (1, 4093):
        part = data[:200_000] if chunk == 1 else data
        small = decode_trace_bytes(part, chunk=chunk)
        reference = whole if chunk != 1 else decode_trace_bytes(part, chunk=len(part))
        assert [(s.problem, s.executions, s.annotations, s.first_line) for s in small.catalog.layers()] == \
            [(s.problem, s.executions, s.annotations, s.first_line) for s in reference.catalog.layers()]
    assert whole.catalog.lines == data.count(b"\n") + (not data.endswith(b"\n"))


def test_a_trace_cut_short_keeps_what_came_before_and_says_where_it_broke():
    data = gzip.decompress((DATA / TRACES[0]).read_bytes())
    scanner = decode_trace_bytes(data[:len(data) // 2])
    assert len(scanner.catalog) > 0
    reasons = [u.reason for u in scanner.catalog.undecoded()]
    assert any("the trace ends inside an event (a profile cut short?)" in r for r in reasons)


@pytest.mark.parametrize("text, reason", [
    (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op"},\n {"x": 1, ]}', "line 2: the trace's JSON breaks here"),
    (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op"},\n {"x": 1, ', "line 2: the trace ends inside an event"),
    (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op"},\n', "the trace ends inside its event array"),
    (b'{"schemaVersion": 1}', "no event array"),
    (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::cudnn_convolution", "ts": 1, "dur": 2, '
     b'"args": {"Input Dims": [[1, 2], [3]], "Concrete Inputs": ["", "", "[1]", "[1]", "[1]", "1"]}}]}',
     "aten::cudnn_convolution: the input (input 0) has dims [1, 2]"),
])
def test_bad_input_is_an_undecoded_record_with_its_reason(text, reason):
    scanner = decode_trace_bytes(text)
    assert any(reason in u.reason for u in scanner.catalog.undecoded()), scanner.catalog.undecoded()


def test_decode_picks_the_trace_format_by_content(tmp_path):
    path = tmp_path / "run.pt.trace.json"
    path.write_bytes(gzip.decompress((DATA / TRACES[0]).read_bytes()))
    assert looks_like_trace(path.read_bytes()[:1 << 20])
    assert not looks_like_trace(b"MIOpen(HIP): Info [ConvolutionDescriptor] {\n")
    catalog = decode_paths([str(path)])
    assert len(catalog) == 54 and "profiler" in catalog.kernel_time
    assert isinstance(TraceScanner(Catalog()), TraceScanner)


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 1 << 40) | st.floats() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                     max_leaves=12)
_OPS = st.sampled_from(["aten::cudnn_convolution", "aten::convolution_backward", "aten::cudnn_batch_norm",
                        "aten::max_pool2d_with_indices", "aten::relu_", "aten::_softmax", "aten::native_layer_norm",
                        "aten::avg_pool2d_backward", "cudaLaunchKernel"])


@st.composite
def _hostile_event(draw) -> dict:
    """A trace event with any JSON where the profiler writes numbers, lists and text."""
    args = {"Input Dims": draw(st.one_of(_JSON, st.lists(st.lists(st.integers(-2, 300), max_size=5), max_size=4))),
            "Input Strides": draw(_JSON), "Input type": draw(st.one_of(_JSON, st.just(["float", "c10::Half"]))),
            "Concrete Inputs": draw(st.one_of(_JSON, st.lists(st.sampled_from(["", "[1, 1]", "1", "True", "x", "[]",
                                                                              "[True, True, False]"]), max_size=11))),
            "correlation": draw(st.one_of(st.integers(0, 3), _JSON))}
    return {"ph": "X", "cat": draw(st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "cuda_driver"])),
            "name": draw(_OPS), "pid": draw(st.one_of(st.integers(0, 2), _JSON)), "tid": draw(_JSON),
            "ts": draw(st.one_of(st.floats(), st.integers(0, 10), _JSON)),
            "dur": draw(st.one_of(st.floats(), st.integers(0, 10), _JSON)), "args": draw(st.one_of(st.just(args), _JSON))}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_hostile_event(), max_size=12))
def test_hostile_events_never_crash_and_all_kernel_time_is_accounted(events):
    text = json.dumps({"traceEvents": events}, allow_nan=True).encode()
    scanner = decode_trace_bytes(text, chunk=97)
    stats = scanner.stats
    claimed = stats.layer_us + stats.pair_us + stats.free_us + stats.orphan_us + stats.unread_us
    if all(math.isfinite(v) for v in (claimed, stats.kernel_us)):
        assert claimed == pytest.approx(stats.kernel_us)


def _op(name: str, ext: int, ts: float, dur: float, dims: list, concrete: list, types=None) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 7, "tid": 7, "ts": ts, "dur": dur,
            "args": {"External id": ext, "Input Dims": dims, "Input Strides": [[] for _ in dims],
                     "Input type": types or ["float"] * len(dims), "Concrete Inputs": concrete}}


def _launch(ts: float, correlation: int, kernel: str, us: float) -> list[dict]:
    return [{"ph": "X", "cat": "cuda_runtime", "name": "hipExtModuleLaunchKernel", "pid": 7, "tid": 7, "ts": ts,
             "dur": 1, "args": {"correlation": correlation}},
            {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 1, "ts": ts + 5, "dur": us,
             "args": {"correlation": correlation}}]


def test_a_rocm_trace_reads_miopen_ops_and_splits_by_miopen_kernel_names():
    """A ROCm trace's shape (no real one could be made here): ``aten::miopen_convolution`` with
    its bias slot, HIP launches, MIOpen's kernel names; built from PyTorch's op schemas."""
    x, w = [8, 16, 32, 32], [32, 16, 3, 3]
    events = [_op("aten::miopen_convolution", 1, 0, 100, [x, w, [], [], [], [], [], [], []],
                  ["", "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False"]),
              *_launch(10, 1, "igemm_fwd_gtcx_nchw_fp32_bx0_ex1_bt128x128x16", 30.0),
              _op("aten::convolution_backward", 2, 200, 100, [[8, 32, 16, 16], x, w, [], [], [], [], [], [], [], []],
                  ["", "", "", "[0]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"]),
              *_launch(210, 2, "batched_transpose_32x32_dword", 2.0),
              *_launch(220, 3, "igemm_bwd_gtcx_nchw_fp32_bx0_ex1", 40.0),
              *_launch(230, 4, "batched_transpose_32x32_dword", 3.0),
              *_launch(240, 5, "igemm_wrw_gtcx_nchw_fp32_bx0_ex1", 50.0)]
    scanner = decode_trace_bytes(json.dumps({"traceEvents": events}).encode())
    by_dir = {layer.problem.direction: layer for layer in scanner.catalog.layers()}
    fwd = by_dir["fwd"].problem
    assert (fwd.pads, fwd.strides, fwd.k, fwd.c) == ((1, 1), (2, 2), 32, 16)
    assert by_dir["fwd"].annotation("profiler_time_ms") == "0.03"
    assert by_dir["bwd"].annotation("profiler_time_ms") == "0.042"    # transpose + igemm_bwd
    assert by_dir["wrw"].annotation("profiler_time_ms") == "0.053"    # transpose + igemm_wrw
    assert scanner.stats.between_us == 3.0

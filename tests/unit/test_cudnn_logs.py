"""Real cuDNN logs decode to their hand counts (tests/data/cudnn/h100/README.md), to the same
layers as the bundled MIOpen ResNet-50 log, and every public excerpt is recognised."""

from __future__ import annotations

import dataclasses
import gzip
import lzma
import re
from collections import Counter
from pathlib import Path

import pytest

from miotui.decoding.whole import decode_paths
from miotui.formats.cudnn import decode_cudnn_bytes, looks_like_cudnn

DATA = Path(__file__).parents[1] / "data" / "cudnn"
H100 = DATA / "h100"
PUBLIC = DATA / "public"
MIOPEN_RESNET50 = Path(__file__).parents[2] / "sample_logs" / "resnet50_trace55.log"
HEADER_LINE = re.compile(rb"^[IWE]! CuDNN \(v", re.M)


def _log(name: str) -> bytes:
    """A log of h100/, decompressed (.gz, or .xz: half the size for the larger logs)."""
    data = (H100 / name).read_bytes()
    return lzma.decompress(data) if name.endswith(".xz") else gzip.decompress(data)


@pytest.fixture(scope="module")
def backend():
    return decode_cudnn_bytes(_log("cudnn_resnet50.log.xz"))


@pytest.fixture(scope="module")
def legacy():
    return decode_cudnn_bytes(_log("cudnn_resnet50_v7.log.gz"))


def without_records(data: bytes, function: str) -> bytes:
    """``data`` with every record of ``function`` cut out (split at header lines)."""
    starts = [m.start() for m in HEADER_LINE.finditer(data)] + [len(data)]
    kept = [data[:starts[0]]]
    needle = f" function {function}() called:".encode()
    for a, b in zip(starts, starts[1:], strict=False):
        if needle not in data[a:data.find(b"\n", a)]:
            kept.append(data[a:b])
    return b"".join(kept)


def counts(scanner):
    layers = scanner.catalog.layers()
    conv = [ln for ln in layers if ln.problem.op == "conv"]
    by_direction = Counter()
    for ln in conv:
        by_direction[ln.problem.direction] += ln.executions
    bnorm = Counter()
    for ln in layers:
        if ln.problem.op == "bnorm":
            bnorm[ln.problem.direction] += ln.executions
    return len(conv), sum(ln.executions for ln in conv), dict(by_direction), dict(bnorm)


HAND_COUNTS = (68, 316, {"fwd": 106, "bwd": 104, "wrw": 106}, {"fwd_train": 106, "bwd": 106})


def test_backend_path_gives_the_hand_counts(backend):
    assert counts(backend) == HAND_COUNTS
    assert backend.catalog.undecoded_count == 0, backend.catalog.undecoded()[:3]
    assert backend.stats.internal_records == 316
    assert backend.stats.device == "NVIDIA H100 80GB HBM3"
    assert backend.stats.library_config == "AUTO"


def test_legacy_path_gives_the_hand_counts(legacy):
    """Each legacy call and the ExecuteInternal record cuDNN 9 prints after it are one run."""
    assert counts(legacy) == HAND_COUNTS
    assert legacy.catalog.undecoded_count == 0, legacy.catalog.undecoded()[:3]


def test_legacy_calls_alone_give_the_hand_counts():
    """Where there is no ExecuteInternal record (cuDNN 7/8), the legacy calls are the runs."""
    data = without_records(_log("cudnn_resnet50_v7.log.gz"), "cudnnBackendExecuteInternal")
    assert b"cudnnBackendExecuteInternal" not in data
    assert counts(decode_cudnn_bytes(data)) == HAND_COUNTS


def test_backend_execute_calls_alone_give_the_hand_counts():
    """Without ExecuteInternal records (cuDNN 8's backend API), each cudnnBackendExecute call
    is a run of the convolution of its plan's graph."""
    data = without_records(_log("cudnn_resnet50.log.xz"), "cudnnBackendExecuteInternal")
    assert b"cudnnBackendExecuteInternal" not in data
    scanner = decode_cudnn_bytes(data)
    assert counts(scanner) == HAND_COUNTS
    assert scanner.catalog.undecoded_count == 0


def test_warning_records_are_notes_not_calls(backend):
    """Every batch-norm call draws a W! record of the same name: a note on its layer."""
    bn = [ln for ln in backend.catalog.layers() if ln.problem.op == "bnorm"]
    assert all("!canRunSemiPersist" in ln.annotation("cudnn_warning") for ln in bn)
    assert backend.stats.by_function["W! cudnnBatchNormalizationForwardTrainingEx"] == 106


def test_first_layer_facts(backend, legacy):
    first = backend.catalog.layers()[0]
    assert first.problem.key == ("conv direction=fwd dtype=fp32 n=16 c=3 k=64 in_spatial=224x224 filter=7x7 pads=3x3 "
                                 "strides=2x2 dilations=1x1 groups=1 mode=conv trans_output_pads=0x0 "
                                 "pad_mode=default in_layout=NCHW fil_layout=NCHW out_layout=NCHW")
    assert first.annotation("solver") == "eng48 TILE_SIZE=2 LDGA=0 TILEK=2 STAGES=0 LDGC=1"
    assert first.annotation("tf32") == "on"
    assert first.annotation("compute_type") == "FLOAT"
    assert first.driver_command.endswith("-F 1")
    legacy_first = legacy.catalog.layers()[0]
    assert legacy_first.problem == first.problem
    assert legacy_first.annotation("algo") == "FWD_ALGO_IMPLICIT_PRECOMP_GEMM"
    assert "CUDNN_STATUS_NOT_SUPPORTED" in legacy_first.annotation("cudnn_warning")


def _batchless(layer) -> str:
    return dataclasses.replace(layer.problem, n=1).key


def test_same_layers_as_the_miopen_resnet50_log(backend, legacy):
    """One identity across vendors: the MIOpen sample is ResNet-50 at batch 32, the cuDNN
    logs at batch 16; with the batch set aside the 68 convolution keys are the same."""
    miopen = decode_paths([str(MIOPEN_RESNET50)])
    miopen_keys = {_batchless(ln) for ln in miopen.layers() if ln.problem.op == "conv"}
    assert len(miopen_keys) == 68
    for scanner in (backend, legacy):
        keys = {_batchless(ln) for ln in scanner.catalog.layers() if ln.problem.op == "conv"}
        assert keys == miopen_keys


def test_frontend_logs_give_one_plan_per_layer(backend):
    fe = decode_cudnn_bytes(_log("fe_resnet50.log.gz"))
    conv = [ln for ln in fe.catalog.layers() if ln.problem.op == "conv"]
    assert len(conv) == 68 and fe.catalog.undecoded_count == 0
    assert Counter(ln.problem.direction for ln in conv) == {"fwd": 23, "bwd": 22, "wrw": 23}
    assert {ln.problem for ln in conv} == {ln.problem for ln in backend.catalog.layers() if ln.problem.op == "conv"}
    assert conv[0].annotation("solver") == "ConvFwd_eng48_k2=2_k6=0_k13=2_k14=0_k22=1"
    assert fe.frontend.executions == 316
    assert all(ln.executions == 0 and ln.mentions == 1 for ln in conv)


def test_frontend_amp_log_is_fp16_channels_last():
    fe = decode_cudnn_bytes(_log("fe_resnet50_amp.log.gz"))
    conv = [ln for ln in fe.catalog.layers() if ln.problem.op == "conv"]
    assert len(conv) == 68 and fe.catalog.undecoded_count == 0
    assert {(ln.problem.dtype, ln.problem.in_layout, ln.problem.fil_layout, ln.problem.out_layout)
            for ln in conv} == {("fp16", "NHWC", "NHWC", "NHWC")}
    assert "--in_layout NHWC" in conv[0].driver_command


#: per public excerpt: (layers as (op, direction, dtype, role counts), undecoded reasons' starts)
PUBLIC_EXPECTED = {
    "01": ([], ["cudnnConvolutionForward(): no yDesc"]),   # the excerpt is cut before yDesc
    "02": ([], []), "03": ([], []), "04": ([], []), "05": ([], []), "06": ([], []), "07": ([], []),
    "08": ([], []),
    "09": ([("conv", "fwd", "fp32", (0, 1, 0))], []),
    "10": ([], []),
    "11": ([("conv", "fwd", "fp32", (0, 0, 1))], []),
    "12": ([("conv", "fwd", "unknown", (0, 0, 1))], []),
    "13": ([], []), "14": ([], []),
    # cut before its convDesc and dxDesc: recognised, listed with the reason
    "15": ([], ["cudnnConvolutionBackwardData(): no dxDesc"]),
    "16": ([], []),
}
PUBLIC_RECORDS = {"01": 1, "02": 2, "03": 3, "04": 2, "05": 3, "06": 2, "07": 3, "08": 2, "09": 1, "10": 1,
                  "11": 0, "12": 0, "13": 4, "14": 3, "15": 1, "16": 5}


@pytest.mark.parametrize("path", sorted(p for p in PUBLIC.iterdir() if p.suffix in (".log", ".json")),
                         ids=lambda p: p.name[:2])
def test_every_public_excerpt_is_recognised(path):
    data = path.read_bytes()
    assert looks_like_cudnn(data)
    scanner = decode_cudnn_bytes(data)
    tag = path.name[:2]
    layers = [(ln.problem.op, ln.problem.direction, ln.problem.dtype, (ln.executions, ln.finds, ln.mentions))
              for ln in scanner.catalog.layers()]
    want_layers, want_undecoded = PUBLIC_EXPECTED[tag]
    assert layers == want_layers
    reasons = [u.reason for u in scanner.catalog.undecoded()]
    assert len(reasons) == len(want_undecoded) and all(r.startswith(w) for r, w in zip(reasons, want_undecoded, strict=True))
    assert scanner.stats.records == PUBLIC_RECORDS[tag]
    # nothing but whole records: every line is in a record (06 starts with the trailer of one before it)
    assert scanner.loose_lines == (4 if tag == "06" else 0)


def test_public_facts():
    """What the excerpts say beside the layer: v7 names, true convolution, asymmetric pads."""
    find = decode_cudnn_bytes((PUBLIC / "09_v7501_legacy_findconvfwd_mlmodelscope.log").read_bytes())
    (layer,) = find.catalog.layers()
    assert (layer.problem.n, layer.problem.c, layer.problem.k, layer.problem.filter) == (1, 3, 96, (11, 11))
    graph = decode_cudnn_bytes((PUBLIC / "11_frontend_v1_graph_json_conv_fprop_onnxruntime26274.json").read_bytes())
    (layer,) = graph.catalog.layers()
    assert layer.problem.pads == (1, 1) and any("asymmetric padding" in w for w in layer.warnings)
    config = decode_cudnn_bytes((PUBLIC / "13_v90300_configinit_full_gist_jimgao1.log").read_bytes())
    assert config.stats.library_config == "FULL"


def test_decode_picks_the_cudnn_format_by_content(tmp_path):
    """``miotui decode`` (and every whole-file decode) reads a cuDNN log: detected by its
    content, .gz or not, while a MIOpen log still goes to MIOpen's scanner."""
    import json
    import subprocess
    import sys
    catalog = decode_paths([str(H100 / "cudnn_resnet50_v7.log.gz")])
    conv = [ln for ln in catalog.layers() if ln.problem.op == "conv"]
    assert (len(conv), sum(ln.executions for ln in conv)) == (68, 316)
    plain = tmp_path / "cudnn.log"
    plain.write_bytes((PUBLIC / "09_v7501_legacy_findconvfwd_mlmodelscope.log").read_bytes())
    out = subprocess.run([sys.executable, "-m", "miotui", "decode", "--format", "json", str(plain)],
                         capture_output=True, text=True, check=True).stdout
    (layer,) = json.loads(out)["layers"]
    assert (layer["op"], layer["direction"], layer["finds"]) == ("conv", "fwd", 1)
    assert layer["driver_command"].startswith("MIOpenDriver conv -n 1 -c 3 -H 224 -W 224 -k 96 -y 11 -x 11")
    miopen = decode_paths([str(MIOPEN_RESNET50)])
    assert sum(ln.executions for ln in miopen.layers() if ln.problem.op == "conv") == 369


def test_the_table_says_how_to_time_a_cudnn_log_not_miopens_switches():
    """A cuDNN log holds no GPU time: the table's time line points to a profiler trace, not
    to MIOpen's variables (which a cuDNN job would ignore); a MIOpen log keeps MIOpen's."""
    import io

    from miotui.decode_output import write_table
    out = io.StringIO()
    write_table(out, decode_paths([str(H100 / "cudnn_resnet50_v7.log.gz")]))
    line = next(ln for ln in out.getvalue().splitlines() if "layers timed" in ln)
    assert "cuDNN log holds no GPU time" in line and "profiler trace" in line and "MIOPEN_" not in line
    out = io.StringIO()
    write_table(out, decode_paths([str(MIOPEN_RESNET50)]))
    assert "MIOPEN_LOG_LEVEL=5" in next(ln for ln in out.getvalue().splitlines() if "layers timed" in ln)


def test_no_miopen_log_is_taken_for_cudnn():
    """The format is chosen by content: none of the project's MIOpen logs (real excerpts,
    MITuna data, regressions, the bundled samples) looks like cuDNN's."""
    root = Path(__file__).parents[2]
    paths = [p for p in (Path(__file__).parents[1] / "data").rglob("*") if p.is_file() and "cudnn" not in p.parts]
    paths += sorted((root / "sample_logs").glob("*.log")) + sorted((root / "miotui" / "samples").glob("*.log"))
    assert len(paths) > 100
    assert [p.name for p in paths if looks_like_cudnn(p.read_bytes()[:1 << 20])] == []


#: small logs made for these tests on an H100 (PyTorch 2.11, cuDNN 9.19; h100/README.md), with
#: counts by hand (grep): (unique conv layers, runs by direction, finds, batch-norm runs, undecoded)
SMALL = {
    "bench": (5, {"fwd": 4, "bwd": 2, "wrw": 4}, 100, {}, 0),
    "amp_cl": (5, {"fwd": 4, "bwd": 2, "wrw": 4}, 0, {"fwd_train": 2, "bwd": 2}, 0),
    "variety": (6, {"fwd": 4, "bwd": 2, "wrw": 6}, 0, {}, 0),
    "variety_v7": (4, {"fwd": 2, "bwd": 2, "wrw": 4}, 0, {}, 0),
    "lstm": (0, {}, 0, {}, 0),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_h100_logs_give_their_hand_counts(name):
    scanner = decode_cudnn_bytes(_log(f"small_{name}.log.xz"))
    unique, runs, finds, bnorm, undecoded = SMALL[name]
    got_unique, _, got_runs, got_bnorm = counts(scanner)
    conv = [ln for ln in scanner.catalog.layers() if ln.problem.op == "conv"]
    assert (got_unique, got_runs, sum(ln.finds for ln in conv), got_bnorm) == (unique, runs, finds, bnorm)
    assert scanner.catalog.undecoded_count == undecoded


def test_benchmark_mode_plan_timing_is_finds():
    """benchmark=True: each new layer's 20 timed executions of candidate plans are finds, the
    chosen plan's runs are runs."""
    scanner = decode_cudnn_bytes(_log("small_bench.log.xz"))
    conv = [ln for ln in scanner.catalog.layers() if ln.problem.op == "conv"]
    assert [(ln.executions, ln.finds) for ln in conv] == [(2, 20)] * 5
    assert all(ln.annotation("plan_timing").startswith("20 timed executions of ") for ln in conv)
    assert scanner.stats.timed_executions == 100


def test_channels_last_amp_3d_bf16_transposed():
    amp = decode_cudnn_bytes(_log("small_amp_cl.log.xz"))
    conv = [ln.problem for ln in amp.catalog.layers() if ln.problem.op == "conv"]
    assert {(p.dtype, p.in_layout, p.fil_layout, p.out_layout) for p in conv} == {("fp16", "NHWC", "NHWC", "NHWC")}
    assert {p.groups for p in conv} == {1, 4}
    variety = decode_cudnn_bytes(_log("small_variety.log.xz"))
    keys = {(p.direction, p.dtype, p.ndim, p.c, p.k) for p in (ln.problem for ln in variety.catalog.layers())}
    # Conv3d(4, 8) fwd and wrw; ConvTranspose2d(4, 6) runs as cuDNN's backward data of a 6 -> 4
    # convolution (and its wrw); a bf16 Conv2d(4, 4) fwd and wrw
    assert keys == {("fwd", "fp32", 3, 4, 8), ("wrw", "fp32", 3, 4, 8), ("bwd", "fp32", 2, 6, 4),
                    ("wrw", "fp32", 2, 6, 4), ("fwd", "bf16", 2, 4, 4), ("wrw", "bf16", 2, 4, 4)}


def test_lstm_calls_are_rnn_layers():
    """cudnnRNNForward / BackwardData_v8 / BackwardWeights_v8 of LSTM(32, 64, 2 layers) on 5 x 3 x 32:
    one layer per pass, 2 runs each (2 iterations), as MIOpen's rnn_seq problem."""
    scanner = decode_cudnn_bytes(_log("small_lstm.log.xz"))
    layers = scanner.catalog.layers()
    assert [(ln.problem.op, ln.problem.direction, ln.executions) for ln in layers] == [
        ("rnn", "fwd", 2), ("rnn", "bwd", 2), ("rnn", "wrw", 2)]
    p = layers[0].problem
    assert (p.mode, p.batch, p.seq_len, p.in_size, p.hidden, p.layers, p.bias, p.seq_lens) == \
        ("lstm", (3,), 5, 32, 64, 2, True, (5, 5, 5))
    assert layers[0].driver_command.startswith("MIOpenDriver rnn_seq -n 3 -W 32 -H 64 -l 2")
    assert scanner.stats.by_function["cudnnGetRNNWeightParams"] == 9616


def test_an_execute_internal_without_shapes_is_its_calls_other_form():
    """cuDNN 9.19 printed two ExecuteInternal records of legacy backward-filter calls with
    empty descriptors: the run is the call's, noted on its layer, not undecoded."""
    scanner = decode_cudnn_bytes(_log("small_variety_v7.log.xz"))
    assert scanner.stats.internal_unread == 2 and scanner.catalog.undecoded_count == 0
    (layer,) = [ln for ln in scanner.catalog.layers() if any("without its shapes" in w for w in ln.warnings)]
    assert (layer.problem.direction, layer.executions) == ("wrw", 2)


def test_pooling_activation_softmax_calls():
    """Direct cuDNN calls on the H100 (h100/README.md): the forward's input is srcDesc, the
    pooling backward's is destDesc; each call is a run of its layer."""
    scanner = decode_cudnn_bytes(_log("small_ops.log.xz"))
    got = [(ln.problem.op, ln.problem.direction, ln.executions) for ln in scanner.catalog.layers()]
    assert got == [("pool", "fwd", 1), ("pool", "bwd", 1), ("pool", "fwd", 1), ("pool", "bwd", 1),
                   ("activ", "fwd", 1), ("activ", "bwd", 1), ("softmax", "fwd", 1), ("softmax", "bwd", 1)]
    assert scanner.catalog.undecoded_count == 0
    pools = [ln.problem for ln in scanner.catalog.layers()][:4]
    assert [(p.mode, p.input_shape, p.window, p.pads, p.strides) for p in pools[::2]] == [
        ("max", (2, 3, 8, 8), (3, 3), (1, 1), (2, 2)), ("avg", (2, 3, 8, 8), (3, 3), (1, 1), (2, 2))]
    softmax = [ln.problem for ln in scanner.catalog.layers()][6:]
    assert [(p.algorithm, p.mode) for p in softmax] == [(1, 1), (2, 0)]
    assert [ln.problem.mode_name for ln in scanner.catalog.layers()[4:6]] == ["RELU", "RELU"]


def test_run_a_layer_of_a_cudnn_log():
    """``miotui run --log cudnn.log --layer K`` runs a cuDNN layer like any layer (numpy here)."""
    import json
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "miotui", "run", "--log", str(H100 / "cudnn_resnet50_v7.log.gz"),
                          "--layer", "3", "--backend", "numpy", "--iters", "1", "--batch", "1", "--json"],
                         capture_output=True, text=True, check=True).stdout
    (layer,) = json.loads(out)["layers"]
    assert (layer["op"], layer["direction"], layer["problem"]["c"], layer["problem"]["filter"]) == ("conv", "fwd", 64,
                                                                                                   [1, 1])
    assert [(r["backend"], r["status"]) for r in layer["results"]] == [("numpy", "ok")]


def test_diff_pairs_every_conv_layer_across_vendors():
    """``miotui diff MIOPEN.log CUDNN.log --ignore-batch``: the 68 convolutions of the MIOpen
    ResNet-50 sample (batch 32) pair with the 68 of the cuDNN log (batch 16), none left over."""
    import json
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "miotui", "diff", str(MIOPEN_RESNET50),
                          str(H100 / "cudnn_resnet50_v7.log.gz"), "--ignore-batch", "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    pairs = json.loads(out)["pairs"]
    conv = Counter(p["status"] for p in pairs if (p["old"] or p["new"])["op"] == "conv")
    assert conv == {"changed": 68}
    assert all("batch 32 -> 16" in p["changes"] for p in pairs if p["status"] == "changed")

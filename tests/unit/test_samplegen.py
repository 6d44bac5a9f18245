"""Tests of the synthetic log generator (miotui.samplegen, sample_logs/generate.py).

The generated logs stand in for real multi-gigabyte training logs in the decoder tests and
benchmarks, so what is checked here is that each format has exactly the line shapes MIOpen
prints (docs/formats.md §2-§5; the real excerpts in tests/data/real_logs/), that the
text agrees with the generator's own ground truth, and that output is deterministic.
"""

from __future__ import annotations

import collections
import gzip
import os
import re
import subprocess
import sys

import pytest

from miotui import samplegen
from miotui.samplegen import SampleSpec, generate_text, ground_truth

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# §2.2 prefixes (every version since 2.0); old 1.x params have no prefix.
PREFIX = re.compile(r"^(?:(?P<tid>\d+) )?MIOpen(?:\((?P<backend>HIP|OpenCL)\))?(?P<elapsed> *\d+\.\d{3})?: "
                    r"(?P<body>.*)$")
HEADER = re.compile(r"^miopenStatus_t (miopen\w+)\(([^()]*)\)\{$")
NEW_TENSOR = re.compile(r"^\{([\d, ]*)\}, \{([\d, ]*)\}, packed, $")
OLD_TENSOR = re.compile(r"^\d+(, \d+)*$")
NEW_CONV = re.compile(r"^conv(\d)d, (\w*), (\w*), \{([^}]*)\}, \{([^}]*)\}, \{([^}]*)\}, $")
OLD_CONV = re.compile(r"^(\w+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+), $")
COMMAND = re.compile(r"^Command \[(?P<fn>[^\]]*)\] (?P<exe>\S*MIOpenDriver) +(?P<args>.*)$")
LEVEL = re.compile(r"^(?P<level>(?:Fatal|Error|Warning|Info2?|Trace)) \[(?P<func>[^\]]*)\] ?(?P<msg>.*)$")
OLD_COMMAND = re.compile(r"^(miopen\w+): \./bin/MIOpenDriver (conv|bnorm|pool)\b.*$")

EXEC_APIS = {
    ("conv", "fwd"): "miopenConvolutionForward", ("conv", "bwd"): "miopenConvolutionBackwardData",
    ("conv", "wrw"): "miopenConvolutionBackwardWeights",
    ("bnorm", "fwd_train"): "miopenBatchNormalizationForwardTraining",
    ("bnorm", "bwd"): "miopenBatchNormalizationBackward",
    ("bnorm", "fwd_infer"): "miopenBatchNormalizationForwardInference",
    ("pool", "fwd"): "miopenPoolingForward", ("pool", "bwd"): "miopenPoolingBackward",
    ("activ", "fwd"): "miopenActivationForward", ("activ", "bwd"): "miopenActivationBackward",
}
FIND_APIS = {"fwd": "miopenFindConvolutionForwardAlgorithm", "bwd": "miopenFindConvolutionBackwardDataAlgorithm",
             "wrw": "miopenFindConvolutionBackwardWeightsAlgorithm"}

_CACHE: dict[SampleSpec, str] = {}


def text_of(**kw) -> str:
    spec = SampleSpec(**kw)
    if spec not in _CACHE:
        _CACHE[spec] = generate_text(spec)
    return _CACHE[spec]


def physical_lines(text: str) -> list[str]:
    """Lines as a log reader sees them: ``\\n`` and ``\\r`` both end a line."""
    return re.split(r"\r\n|\r|\n", text)


def miopen_bodies(text: str) -> list[tuple[str | None, str | None, str]]:
    """(tid, elapsed, body) of every prefixed MIOpen line."""
    out = []
    for line in physical_lines(text):
        m = PREFIX.match(line)
        if m:
            out.append((m.group("tid"), m.group("elapsed"), m.group("body")))
    return out


def api_headers(text: str) -> collections.Counter:
    return collections.Counter(m.group(1) for _, _, body in miopen_bodies(text)
                               if (m := HEADER.match(body)))


# --------------------------------------------------------------------------------------
# determinism and spec validation
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", samplegen.FORMATS)
def test_same_seed_same_text_other_seed_other_pointers(fmt):
    a = generate_text(SampleSpec(format=fmt, iterations=2, seed=7))
    b = generate_text(SampleSpec(format=fmt, iterations=2, seed=7))
    c = generate_text(SampleSpec(format=fmt, iterations=2, seed=8))
    assert a == b
    assert a != c
    # the operations do not depend on the seed, only pointers / timings / noise do
    if fmt == "command":
        cmds = lambda t: [ln for ln in physical_lines(t) if "Command [" in ln]  # noqa: E731
        assert cmds(a) == cmds(c)
    else:
        assert api_headers(a) == api_headers(c)


def test_spec_rejects_bad_values():
    with pytest.raises(ValueError):
        SampleSpec(format="nope")
    with pytest.raises(ValueError):
        SampleSpec(iterations=0)
    with pytest.raises(ValueError):
        SampleSpec(format="trace2018", elapsed=True)  # MIOpen 1.7 has no elapsed field
    with pytest.raises(ValueError):
        SampleSpec(format="info", level=7)


def test_parse_size():
    assert samplegen.parse_size("1G") == 1 << 30
    assert samplegen.parse_size("1.5M") == 3 << 19
    assert samplegen.parse_size("200k") == 200 << 10
    assert samplegen.parse_size("4096") == 4096
    assert samplegen.parse_size("2MiB") == 2 << 20
    for bad in ("", "G", "-1", "1X", "0"):
        with pytest.raises(ValueError):
            samplegen.parse_size(bad)


# --------------------------------------------------------------------------------------
# the network and the ground truth
# --------------------------------------------------------------------------------------

def test_resnet50_layer_counts():
    layers = samplegen.resnet50_layers(32)
    kinds = collections.Counter(type(layer).__name__ for layer in layers)
    assert kinds == {"ConvLayer": 53, "BNLayer": 53, "ReluLayer": 49, "PoolLayer": 2}
    convs = [layer for layer in layers if isinstance(layer, samplegen.ConvLayer)]
    assert convs[0].y.lens == (32, 64, 112, 112)
    assert convs[-1].y.lens == (32, 2048, 7, 7)
    assert layers[-1].y.lens == (32, 2048, 1, 1)


def test_ground_truth_counts():
    gt = ground_truth(SampleSpec(iterations=3))
    conv = {d: {t: n for t, n in gt.executions.items() if t.op == "conv" and t.direction == d}
            for d in ("fwd", "bwd", "wrw")}
    # 53 convolutions per pass: 3 training passes + 1 inference pass forward
    assert sum(conv["fwd"].values()) == 53 * 4
    assert sum(conv["wrw"].values()) == 53 * 3
    assert sum(conv["bwd"].values()) == 52 * 3  # conv1 needs no input gradient
    distinct_fwd = len(conv["fwd"])
    assert distinct_fwd < 53  # repeated bottleneck shapes collapse
    # one Find per distinct (problem, direction), in the first iteration only
    assert gt.total_finds() == distinct_fwd + len(conv["bwd"]) + len(conv["wrw"])
    assert all(n == 1 for n in gt.finds.values())
    bn = {t.direction: n for t, n in gt.executions.items() if t.op == "bnorm"}
    assert sum(n for t, n in gt.executions.items() if t.op == "bnorm" and t.direction == "fwd_infer") == 53
    assert set(bn) == {"fwd_train", "bwd", "fwd_infer"}


# --------------------------------------------------------------------------------------
# line shapes per format (§2-§5)
# --------------------------------------------------------------------------------------

def test_trace2018_shapes():
    text = text_of(format="trace2018")
    lines = physical_lines(text)
    headers = [ln for ln in lines if ln.startswith("MIOpen(HIP): ")]
    assert headers and all(ln.endswith("{") and HEADER.match(ln[len("MIOpen(HIP): "):]) for ln in headers)
    # 1.x: params and "}" are bare, never tab-indented or prefixed
    assert not any(ln.startswith("MIOpen(HIP): \t") for ln in lines)
    assert "\t" not in "".join(ln for ln in lines if " = " in ln and not ln.startswith("Epoch"))
    assert lines.count("}") == len(headers)
    assert not any(ln.startswith(("handle = ", "Command [")) or "Command [" in ln for ln in lines)
    params = dict.fromkeys(ln.split(" = ", 1)[0] for ln in lines if re.match(r"^\w[\w.]* = ", ln))
    assert "u" in params and "stride_h" not in params  # 1.7 names of InitConvolutionDescriptor
    for ln in lines:
        if ln.startswith(("xDesc = ", "wDesc = ", "yDesc = ", "dyDesc = ", "dxDesc = ")):
            assert OLD_TENSOR.match(ln.split(" = ", 1)[1]), ln
        if ln.startswith("convDesc = ") and ln != "convDesc = 0":  # 0: miopenCreateConvolutionDescriptor
            m = OLD_CONV.match(ln.split(" = ", 1)[1])
            assert m and m.group(1) == "miopenConvolution", ln
    olds = [OLD_COMMAND.match(ln) for ln in lines if "./bin/MIOpenDriver" in ln]
    assert olds and all(olds)
    apis = collections.Counter(m.group(1) for m in olds)
    # ≤1.8 logs Fwd and BwdData runs and the WrW *Find*; BN fwd-train and bwd; pooling both ways
    assert set(apis) == {"miopenConvolutionForward", "miopenConvolutionBackwardData",
                         "miopenFindConvolutionBackwardWeightsAlgorithm", "miopenBatchNormalizationForwardTraining",
                         "miopenBatchNormalizationBackward", "miopenPoolingForward", "miopenPoolingBackward"}
    assert "miopenBatchNormalizationBackward: ./bin/MIOpenDriver bnorm" in lines  # 1.7 printed only the base
    assert not any(" -F " in m.group(0) for m in olds)


@pytest.mark.parametrize("elapsed", [True, False])
def test_trace2x_shapes(elapsed):
    text = text_of(format="trace2x", elapsed=elapsed)
    bodies = miopen_bodies(text)
    lines = [ln for ln in physical_lines(text) if "MIOpen(HIP)" in ln]
    assert len(bodies) == len(lines)  # every MIOpen line has the full prefix
    tids = {tid for tid, _, _ in bodies}
    assert None not in tids and len(tids) == 2
    assert all((e is not None) == elapsed for _, e, _ in bodies)
    if elapsed:
        # setw(8) with 3 decimals: "   0.012"; Find calls leave gaps of hundreds of ms
        assert all(len(e) >= 8 for _, e, _ in bodies)
        assert max(float(e) for _, e, _ in bodies) > 100
    for _tid, _, body in bodies:
        if HEADER.match(body) or body == "}":
            continue
        if m := COMMAND.match(body):
            assert m.group("exe") == "./bin/MIOpenDriver"
            continue
        assert body.startswith("\t"), body
        name, _, value = body[1:].partition(" = ")
        if name == "handle":
            assert re.fullmatch(r"stream: 0x[0-9a-f]+, device_id: 0", value)
        if name.endswith("Desc") and name not in ("convDesc", "activDesc", "poolDesc", "derivedBnDesc", "tensorDesc"):
            assert OLD_TENSOR.match(value), body  # 2.x still prints lengths only
        if name == "convDesc" and value != "0":
            assert NEW_CONV.match(value), body
    # Command lines follow the execution block of the same thread, -F 1/2/4, -t 1
    last_close: dict[str, str] = {}
    open_api: dict[str, str] = {}
    n_cmd = 0
    for tid, _, body in bodies:
        if m := HEADER.match(body):
            open_api[tid] = m.group(1)
        elif body == "}":
            last_close[tid] = open_api.pop(tid)
        elif m := COMMAND.match(body):
            n_cmd += 1
            api = last_close[tid]
            args = m.group("args")
            if api == "miopenConvolutionForward":
                assert m.group("fn") == "LogCmdConvolution" and args.endswith("-F 1 -t 1")
            elif api == "miopenConvolutionBackwardData":
                assert args.endswith("-F 2 -t 1")
            elif api in ("miopenConvolutionBackwardWeights", "miopenFindConvolutionBackwardWeightsAlgorithm"):
                assert args.endswith("-F 4 -t 1")  # 2.x logged the WrW Find as LogCmdConvolution too
            elif api.startswith("miopenPooling"):
                assert m.group("fn") == "Pooling_logging_cmd" and re.search(r"-M 0 -n \d+ -c \d+ -H", args)
            elif api.startswith("miopenBatchNormalization"):
                assert m.group("fn") == "LogCmdBNorm" and "--forw" in args
            else:
                assert api.startswith("miopenActivation") and m.group("fn") == "LogCmdActivation", api
    assert n_cmd > 300
    # the two executor threads interleave some blocks line by line
    inside_other = 0
    open_by: dict[str, bool] = {}
    for tid, _, body in bodies:
        if any(v for t, v in open_by.items() if t != tid):
            inside_other += 1
        if HEADER.match(body):
            open_by[tid] = True
        elif body == "}":
            open_by[tid] = False
    assert inside_other > 0


def test_trace55_shapes():
    text = text_of(format="trace55")
    bodies = miopen_bodies(text)
    assert bodies and all(tid is None and e is None for tid, e, _ in bodies)
    assert not any(COMMAND.match(b) for _, _, b in bodies)  # API trace only
    assert all(HEADER.match(b) or b == "}" or b.startswith("\t") for _, _, b in bodies)
    assert all(ln.startswith("MIOpen(HIP): \t") for ln in physical_lines(text) if " = " in ln and "MIOpen" in ln)
    descs = [b[1:].split(" = ", 1) for _, _, b in bodies if b.startswith("\t") and " = " in b]
    tensor_values = [v for k, v in descs if k in ("xDesc", "yDesc", "wDesc", "dyDesc", "dxDesc", "dwDesc",
                                                  "bnScaleBiasMeanVarDesc", "bnScaleBiasDiffDesc")]
    assert tensor_values and all(NEW_TENSOR.match(v) for v in tensor_values)
    for v in tensor_values:  # lengths and packed NCHW strides agree
        m = NEW_TENSOR.match(v)
        lens = [int(x) for x in m.group(1).split(", ")]
        strides = [int(x) for x in m.group(2).split(", ")]
        assert strides == [lens[1] * lens[2] * lens[3], lens[2] * lens[3], lens[3], 1]
    # the data type only appears in the Set blocks
    sets = [i for i, (_, _, b) in enumerate(bodies) if b.startswith("miopenStatus_t miopenSetTensorDescriptor(")]
    assert sets
    for i in sets:
        block = [b for _, _, b in bodies[i + 1:i + 6]]
        assert block[0] == "\ttensorDesc = {}, {}, packed, "
        assert block[1] == "\tdataType = 1" and block[2] == "\tnbDims = 4"
        assert re.fullmatch(r"\tdim\.values = \{ \d+ \d+ \d+ \d+ \}", block[3])
        assert re.fullmatch(r"\tstride\.values = \{ \d+ \d+ \d+ 1 \}", block[4])
    # 5.x forward workspace query logs xDesc (2.9 did not)
    ws = [i for i, (_, _, b) in enumerate(bodies) if "miopenConvolutionForwardGetWorkSpaceSize(" in b]
    assert [b.split(" = ")[0] for _, _, b in bodies[ws[0] + 1:ws[0] + 7]] == [
        "\thandle", "\twDesc", "\txDesc", "\tconvDesc", "\tyDesc", "\tworkSpaceSize"]


def test_command_shapes():
    text = text_of(format="command")
    lines = physical_lines(text)
    bodies = miopen_bodies(text)
    assert "\r" in text  # progress bars are redrawn with \r
    kinds = collections.Counter()
    for _, _, body in bodies:
        if m := COMMAND.match(body):
            args = m.group("args")
            base = args.split()[0]
            kinds[(m.group("fn"), base)] += 1
            if base == "pool":
                assert re.search(r" --input \d+x\d+x\d+x\d+,\d+x\d+x\d+x1 ", args) and re.search(r"-F [01] -t 1$", args)
            elif base == "bnorm":
                assert re.search(r"-m 1 --forw [012] -b [01]", args)
            elif base == "activ":
                assert re.search(r"-m 3 --forw [12] -A 1 -B 0 -G 1$", args)
            else:
                assert base == "conv" and re.search(r"-m conv -g 1 -F [124] -t 1$", args)
        else:
            assert LEVEL.match(body) and body.startswith("Warning ["), body
    assert set(kinds) == {("LogCmdFindConvolution", "conv"), ("LogCmdConvolution", "conv"), ("LogCmdBNorm", "bnorm"),
                          ("Pooling_logging_cmd", "pool"), ("LogCmdActivation", "activ")}
    noise = [ln for ln in lines if ln and "MIOpen" not in ln]
    assert any(ln.startswith("Epoch: [0]") and "Loss" in ln for ln in noise)


@pytest.mark.parametrize("level", [5, 6])
def test_info_shapes(level):
    text = text_of(format="info", level=level)
    bodies = [b for _, _, b in miopen_bodies(text)]
    levels = collections.Counter()
    for body in bodies:
        if COMMAND.match(body):
            continue
        m = LEVEL.match(body)
        assert m, body
        levels[m.group("level")] += 1
    assert ("Info2" in levels) == (level == 6)
    joined = "\n".join(bodies)
    assert re.search(r"^Info \[FindConvFwdAlgorithm\] requestAlgoCount = 1, workspace = \d+$", joined, re.M)
    assert re.search(r"^Info \[FindConvFwdAlgorithm\] FW Chosen Algorithm: \w+ , \d+, [\d.e-]+$", joined, re.M)
    assert re.search(r"^Info \[FindConvBwdWeightsAlgorithm\] BWrW Chosen Algorithm: ", joined, re.M)
    assert re.search(r"^Info \[FindConvolution\] miopenConvolutionFwdAlgo\w+\t[\d.e-]+\t\d+$", joined, re.M)
    assert re.search(r"^Info \[ConvolutionForward\] algo = \d, workspace = \d+$", joined, re.M)
    if level == 6:
        # network config (§7.2) and find-db key (§7.1) of ROCm 5.7
        assert re.search(r"^Info2 \[GetInvoker\] Returning an invoker for problem "
                         r"3x224x224x7x7x64x112x112x32xNCHWxFP32x3x3x2x2x1x1x1xF and algorithm "
                         r"miopenConvolutionFwdAlgo\w+$",
                         joined, re.M)
        assert re.search(r"^Info2 \[FindRecordUnsafe\] Looking for key "
                         r"3-224-224-7x7-64-112-112-32-3x3-2x2-1x1-0-NCHW-FP32-F in file \S+\.ufdb\.txt$", joined, re.M)
        # B/W problems are stored with in = dy, out = dx
        assert re.search(r"Looking for key 256-56-56-1x1-64-56-56-32-0x0-1x1-1x1-0-NCHW-FP32-B ", joined)


# --------------------------------------------------------------------------------------
# text agrees with the ground truth
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["trace2018", "trace2x", "trace55"])
def test_trace_blocks_match_ground_truth(fmt):
    spec = SampleSpec(format=fmt)
    gt = ground_truth(spec)
    headers = api_headers(text_of(format=fmt))
    for (op, d), api in EXEC_APIS.items():
        expected = sum(n for t, n in gt.executions.items() if t.op == op and t.direction == d)
        assert headers[api] == expected, api
    for d, api in FIND_APIS.items():
        assert headers[api] == sum(n for t, n in gt.finds.items() if t.direction == d), api


@pytest.mark.parametrize("fmt", ["trace2x", "trace2018"])
def test_blocks_are_closed_per_thread(fmt):
    depth: dict[str | None, int] = collections.defaultdict(int)
    for line in physical_lines(text_of(format=fmt)):
        m = PREFIX.match(line)
        tid = m.group("tid") if m else None
        body = m.group("body") if m else line
        if HEADER.match(body):
            assert depth[tid] == 0, line
            depth[tid] = 1
        elif body == "}":
            assert depth[tid] == 1, line
            depth[tid] = 0
    assert all(v == 0 for v in depth.values())


@pytest.mark.parametrize("fmt", ["command", "info"])
def test_command_lines_match_ground_truth(fmt):
    spec = SampleSpec(format=fmt)
    gt = ground_truth(spec)
    found = collections.Counter()
    execd = collections.Counter()
    for _, _, body in miopen_bodies(text_of(format=fmt)):
        m = COMMAND.match(body)
        if not m:
            continue
        args = m.group("args")
        key = re.sub(r" -t 1$", "", args)
        key = re.sub(r" -s 1| -r 1", "", key)
        if key.startswith("pool"):  # ground-truth keys spell pooling with -n -c -H -W
            mm = re.match(r"pool -M 0 --input (\d+)x(\d+)x(\d+)x(\d+),\S+ (.*)$", key)
            key = f"pool -n {mm[1]} -c {mm[2]} -H {mm[3]} -W {mm[4]} {mm[5]}"
        (found if m.group("fn") == "LogCmdFindConvolution" else execd)[key] += 1
    assert execd == collections.Counter({t.key: n for t, n in gt.executions.items()})
    assert found == collections.Counter({t.key: n for t, n in gt.finds.items()})


# --------------------------------------------------------------------------------------
# size mode, gzip, CLI, bundled files
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt,size", [("trace55", 3 << 20), ("command", 700_000), ("trace2x", 50_000), ("info", 1000)])
def test_size_mode_gives_about_that_many_bytes(fmt, size):
    text = generate_text(SampleSpec(format=fmt, size=size, seed=3))
    data = text.encode("utf-8")
    longest = max(len(ln) for ln in data.split(b"\n"))
    assert size - longest - 1 <= len(data) <= size
    assert data.endswith(b"\n")


def test_gz_output_is_readable_and_equal(tmp_path):
    spec = SampleSpec(format="trace2x", iterations=2, seed=5)
    plain, packed = tmp_path / "a.log", tmp_path / "a.log.gz"
    n1 = samplegen.write_log(spec, str(plain))
    n2 = samplegen.write_log(spec, str(packed))
    assert n1 == n2 == plain.stat().st_size
    with gzip.open(packed, "rb") as fh:
        assert fh.read() == plain.read_bytes()
    assert packed.stat().st_size < plain.stat().st_size // 5
    samplegen.write_log(spec, str(tmp_path / "b.log.gz"))
    assert (tmp_path / "b.log.gz").read_bytes() == packed.read_bytes()  # no timestamp in the header


def test_cli_wrapper_writes_file(tmp_path):
    out = tmp_path / "x.log.gz"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "sample_logs", "generate.py"), "--format", "command",
                        "--size", "100K", "--seed", "2", "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "bytes" in r.stderr
    with gzip.open(out, "rt", encoding="utf-8", newline="") as fh:
        data = fh.read()
    assert data == generate_text(SampleSpec(format="command", size=100 << 10, seed=2))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "sample_logs", "generate.py"), "--format", "bogus"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2


def test_main_rejects_bad_spec(capsys):
    assert samplegen.main(["--format", "trace2018", "--elapsed", "--out", os.devnull]) == 2
    assert "elapsed" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", samplegen.FORMATS)
def test_bundled_samples_are_current(fmt):
    """sample_logs/resnet50_<fmt>.log is exactly what the generator makes (rebuild with
    ``python sample_logs/generate.py --rebuild-samples``)."""
    path = os.path.join(ROOT, "sample_logs", f"resnet50_{fmt}.log")
    with open(path, encoding="utf-8", newline="") as fh:
        assert fh.read() == generate_text(SampleSpec(format=fmt, iterations=2, batch=32))


def test_demo_log_is_current_and_small():
    path = samplegen.demo_log_path()
    assert os.path.getsize(path) < 500_000
    with open(path, encoding="utf-8", newline="") as fh:
        assert fh.read() == generate_text(samplegen.DEMO_SPEC)

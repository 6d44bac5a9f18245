"""Level lines (docs/formats.md §5, §5.3) -> sightings and annotations."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui.events import Annotation, Sighting, Undecoded
from miotui.formats.miopen.levels import LevelDecoder

HERE = Path(__file__).parents[1]
_LEVEL_LINE = re.compile(r"MIOpen(?:\((?:HIP|OpenCL)\))?: (Fatal|Error|Warning|Info2|Info|Trace) \[([^\]]*)\] ?(.*)$")


def _real_logs() -> Path:
    for cand in (HERE / "data" / "real_logs",):
        if cand.is_dir():
            return cand
    pytest.skip("real_logs not available")


def decode_log(text: str, decoder: LevelDecoder | None = None) -> list:
    d = decoder or LevelDecoder()
    out = []
    for line in text.splitlines():
        m = _LEVEL_LINE.search(line)
        if m:
            out.extend(d.decode(*m.groups()))
    return out


def anns(events) -> list[tuple[str, str]]:
    return [(e.name, e.value) for e in events if isinstance(e, Annotation)]


D = LevelDecoder()


# ---------------------------------------------------------------- choices and runs (annotations for the last call)

@pytest.mark.parametrize("func, message, expected", [
    ("FindConvFwdAlgorithm", "FW Chosen Algorithm: ConvBinWinogradRxSf2x3g1 , 0, 0.742358",
     [("solver", "ConvBinWinogradRxSf2x3g1"), ("workspace", "0"), ("solver_time_ms", "0.742358")]),
    ("FillFindReturnParameters", "BWD Chosen Algorithm: GemmBwdRest , 1035776, 6.79936",
     [("solver", "GemmBwdRest"), ("workspace", "1035776"), ("solver_time_ms", "6.79936")]),
    ("FindConvBwdWeightsAlgorithm", "BWrW Chosen Algorithm: ConvWinoFuryRxS<2-3> , 0, 1e-05",
     [("solver", "ConvWinoFuryRxS<2-3>"), ("workspace", "0"), ("solver_time_ms", "1e-05")]),
    ("ConvolutionForward", "algo = 1, workspace = 0", [("algorithm", "1"), ("workspace", "0")]),
    ("ConvolutionBackwardData", "algo = 5, workspace = 903168", [("algorithm", "5"), ("workspace", "903168")]),
    ("ConvolutionBackwardWeights", "algo = 0, workspace = 12", [("algorithm", "0"), ("workspace", "12")]),
    ("ConvolutionForwardImmediate", "solver_id = ConvDirectNaiveConvFwd, workspace = 0",
     [("solver", "ConvDirectNaiveConvFwd"), ("workspace", "0")]),
    ("ConvolutionWrwImmediate", "solver_id = GemmWrwUniversal, workspace = 64",
     [("solver", "GemmWrwUniversal"), ("workspace", "64")]),
    ("EvaluateInvokers", "Selected: GemmFwdRest: : 6.79936, workspace_sz = 1035776",
     [("find_result", "GemmFwdRest 6.79936 ms ws=1035776"), ("solver", "GemmFwdRest"),
      ("solver_time_ms", "6.79936")]),
    ("EvaluateInvokers", "Selected: ConvHipImplicitGemmBwdDataV4R1Xdlops: gridwise_convolution_backward_data_"
                         "implicit_gemm_v4r1_xdlops_gnchw_gkcyx_gnkhw: 0.328002, workspce_sz = 0",
     [("find_result", "ConvHipImplicitGemmBwdDataV4R1Xdlops 0.328002 ms ws=0"),
      ("solver", "ConvHipImplicitGemmBwdDataV4R1Xdlops"), ("solver_time_ms", "0.328002")]),
    ("FindConvolution", "miopenConvolutionFwdAlgoGEMM\t0.308879\t0",
     [("find_result", "miopenConvolutionFwdAlgoGEMM 0.308879 ms ws=0")]),
    ("FindConvFwdAlgorithm", "miopenConvolutionFwdAlgoWinograd\t0.742358\t0",
     [("find_result", "miopenConvolutionFwdAlgoWinograd 0.742358 ms ws=0")]),
    ("GetSolutions", "id: 85, algo: 1, time: 0.5, ws: 0, name: ConvDirectNaiveConvFwd",
     [("find_result", "ConvDirectNaiveConvFwd 0.5 ms ws=0")]),
])
def test_annotations_without_a_problem(func, message, expected):
    events = D.decode("Info", func, message)
    assert all(isinstance(e, Annotation) and e.problem is None for e in events)
    assert anns(events) == expected


@pytest.mark.parametrize("func, message", [
    ("EvaluateInvokers", "GemmFwdRest: : 6.79936 < 3.40282e+38"),              # a candidate, not the choice
    ("CompileForwardSolution", "solver_id = ConvBinWinogradRxSf2x3g1"),        # compiled during Find
    ("FindConvFwdAlgorithm", "requestAlgoCount = 1, workspace = 0"),
    ("FindSolutionImpl", "ConvBinWinogradRxSf2x3g1 (not searchable)"),
    ("run", "kernel_name = naive_conv_ab_nonpacked_fwd_nhwc_float_double_float, global_work_dim = { 2097152, 1, 1 }"),
    ("Measure", "Db::FindRecord time: 0.0325 ms"),
    ("", "MIOPEN_FIND_MODE = DYNAMIC_HYBRID(5)"),
    ("GetSolutionCount", ""),
    ("FindRecordUnsafe", "Looking for key bn-stuff-NCHW in file /x"),          # not a conv key
    ("ConvolutionForward", "algo = banana"),
])
def test_irrelevant_or_unreadable_lines_give_nothing(func, message):
    assert D.decode("Info", func, message) == []


def test_a_cut_setvalues_line_is_undecoded():
    """real_logs/43 ends inside a SetValues key: MIOpen-looking text that names no layer."""
    (u,) = D.decode("Info", "SetValues", "96-35-35-1x")
    assert isinstance(u, Undecoded) and "cut short" in u.reason


# ---------------------------------------------------------------- lines that name a problem

def test_looking_for_key_both_spellings():
    (s,) = D.decode("Info2", "FindRecordUnsafe", "Looking for key 192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-F "
                                                 "in file /tmp/miopen.test.find_db")
    assert isinstance(s, Sighting) and (s.role, s.source) == ("mention", "info")
    assert (s.problem.c, s.problem.k, s.problem.n) == (192, 32, 16)
    (s2,) = D.decode("Info", "FindRecordUnsafe", "Looking for key: 192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-F")
    assert s2.problem == s.problem  # 2018 spelling (§5.3)
    (s3,) = D.decode("Info2", "Prefetch", "Looking for key 192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-F "
                                          "in cache for file /x y/z.ufdb.txt")
    assert s3.problem == s.problem


def test_set_values_variants():
    key = "192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-F"
    (s,) = D.decode("Info", "SetValues", f"{key}, content inserted: miopenConvolutionFwdAlgoDirect:ConvOclDirectFwd,"
                                         "2.30946,0,miopenConvolutionFwdAlgoDirect,<unused>")
    assert s.role == "mention" and ("find_result", "ConvOclDirectFwd 2.30946 ms ws=0") in s.annotations
    (s,) = D.decode("Info2", "SetValues", f"{key}, content overwritten: ConvBinWinograd3x3U:0.0512,0,"
                                          "miopenConvolutionFwdAlgoWinograd")
    assert ("solver", "ConvBinWinograd3x3U") in s.annotations
    (s,) = D.decode("Info", "SetValues", f"{key}, content is the same, not changed:miopenConvolutionFwdAlgoGEMM:gemm,"
                                         "3.024,1036800,0_0_900_288_900_900_32_288")
    assert ("find_result", "gemm 3.024 ms ws=1036800") in s.annotations
    (s,) = D.decode("Info", "SetValues", f"{key}, content inserted: ConvOclDirectFwd:8,32,32,32,4,1,8,2,1")
    assert s.annotations == (("perf_config", "ConvOclDirectFwd:8,32,32,32,4,1,8,2,1"),)
    (s,) = D.decode("Info", "GetValues", f"Read record {key}=ConvOclDirectFwd:8,32,32,32,4,1,8,2,1")
    assert s.role == "mention"


def test_invoker_lines():
    (s,) = D.decode("Info2", "GetInvoker", "Returning an invoker for problem 64x256x256x3x3x64x256x256x32xNHWCx"
                                           "NHWCxNHWCxBF16x1x1x1x1x1x1x1xFxDefault and algorithm "
                                           "miopenConvolutionFwdAlgoDirect")
    # "and algorithm" is logged only by the run paths: an execution
    assert (s.problem.dtype, s.problem.in_layout, s.role) == ("bf16", "NHWC", "execution")
    assert s.annotations == (("algorithm", "1"),)
    (s,) = D.decode("Info2", "GetInvoker", "Returning an invoker for problem 96x35x35x1x1x384x35x35x64xNCHWxFP32x0x0"
                                           "x1x1x1x1x1xB and solver ConvHipImplicitGemmBwdDataV4R1Xdlops")
    assert s.problem.direction == "bwd" and s.annotations == (("solver", "ConvHipImplicitGemmBwdDataV4R1Xdlops"),)
    assert s.role == "mention"   # "and solver" also comes from Find-Db validation
    (s,) = D.decode("Info2", "Register", "Invoker registered for algorithm 96x35x35x1x1x384x35x35x64xNCHWxFP32x0x0x1x1"
                                         "x1x1x1xB and solver ConvHipImplicitGemmBwdDataV4R1Xdlops")
    assert s.problem.direction == "bwd"
    # a 2019 config's x0 is settled by the algorithm name on the same line
    (s,) = D.decode("Info2", "GetInvoker", "Returning an invoker for problem 32x30x30x3x3x32x32x32x100xNCHWxFP32x0x0x1"
                                           "x1x1x1x1x0 and algorithm miopenConvolutionBwdWeightsAlgoGEMM")
    assert s.problem.direction == "wrw"


def test_log_convolution_execution():
    msg = ('[ConvolutionExecution] Problem="conv -n 100 -c 32 -H 30 -W 30 -k 32 -y 3 -x 3 -p 0 -q 0 -u 1 -v 1 -l 1 '
           '-j 1 -m conv -g 1 -F 4 -t 1" Solver="ConvAsmImplicitGemmGTCDynamicWrwXdlopsNHWC" Config="wrw,nhwc,fp32,'
           '0,1,32" Time=0.0442772')
    (s,) = D.decode("Info", "LogConvolutionExecution", msg)
    assert (s.role, s.source, s.problem.direction) == ("execution", "execution-log", "wrw")
    assert dict(s.annotations) == {"solver": "ConvAsmImplicitGemmGTCDynamicWrwXdlopsNHWC",
                                   "solver_time_ms": "0.0442772", "find_db_time_ms": "0.0442772",
                                   "perf_config": "ConvAsmImplicitGemmGTCDynamicWrwXdlopsNHWC:wrw,nhwc,fp32,0,1,32"}
    (s,) = D.decode("Info", "LogConvolutionExecution",
                    '[ConvolutionExecution] Problem="conv -n 100 -c 3 -H 32 -W 32 -k 32 -y 3 -x 3 -p 0 -q 0 -u 1 -v 1 '
                    '-l 1 -j 1 -m conv -g 1 -F 1 -t 1" Solver="ConvBinWinogradRxSf2x3g1" Config="N/A" Time=0.0186725')
    assert "perf_config" not in dict(s.annotations)
    (u,) = D.decode("Info", "LogConvolutionExecution", '[ConvolutionExecution] Problem="conv -n 100 -c" Solver="X"')
    assert isinstance(u, Undecoded)


def test_log_convolution_execution_2026_keeps_config_and_find_db_time():
    """The merged 2026 form names where each value came from; both are kept on the layer, and
    a Time of -1 (no find-db record) is no time at all."""
    msg = ('Problem="conv -n 100 -c 3 -H 32 -W 32 -k 32 -y 3 -x 3 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1" '
           'Solver="ConvBinWinogradRxSf2x3g1" Config(from_perf_db)="1,2,3" Time(from_find_db)=0.0186725')
    (s,) = D.decode("Info", "LogConvolutionExecution", msg)
    ann = dict(s.annotations)
    assert ann["perf_config"] == "ConvBinWinogradRxSf2x3g1:1,2,3" and ann["find_db_time_ms"] == "0.0186725"
    (s,) = D.decode("Info", "LogConvolutionExecution", msg.replace("Time(from_find_db)=0.0186725",
                                                                   "Time(from_find_db)=-1"))
    assert "find_db_time_ms" not in dict(s.annotations) and s.role == "execution"


def test_bad_problem_naming_lines_become_undecoded():
    (u,) = D.decode("Info2", "FindRecordUnsafe", "Looking for key 192-28-28-5x5-32-99-99-16-1x1-1x1-1x1-0-NCHW-FP32-F "
                                                 "in file /x")
    assert isinstance(u, Undecoded) and "output size" in u.reason
    (u,) = D.decode("Info2", "GetInvoker", "Returning an invoker for problem 32x32x32x3x3x32x30x30x100xNCHWxFP32x1 "
                                           "and algorithm miopenConvolutionFwdAlgoGEMM")
    assert isinstance(u, Undecoded)


# ---------------------------------------------------------------- real logs (README hand counts)

def _log(prefix: str) -> str:
    (path,) = _real_logs().glob(prefix + "_*")
    return path.read_text()


def test_real_14_windows_info2():
    events = decode_log(_log("14"))
    sightings = [e for e in events if isinstance(e, Sighting)]
    assert {s.problem for s in sightings} == {sightings[0].problem}        # 1 distinct
    assert [s.role for s in sightings] == ["execution", "execution"]      # the 2 runs (same calls as the Commands)
    p = sightings[0].problem
    assert (p.dtype, p.in_layout, p.n, p.c, p.k) == ("bf16", "NHWC", 32, 64, 64)
    assert ("algorithm", "1") in anns(events)


def test_real_43_opencl_invokers():
    events = decode_log(_log("43"))
    sightings = [e for e in events if isinstance(e, Sighting)]
    assert len({s.problem for s in sightings}) == 1 and sightings[0].problem.direction == "bwd"   # 1 distinct bwd-data
    assert not any(s.role == "execution" for s in sightings)                                       # 0 exec
    assert ("find_result", "ConvHipImplicitGemmBwdDataV4R1Xdlops 0.328002 ms ws=0") in anns(events)
    (cut,) = [e for e in events if isinstance(e, Undecoded)]                                       # the cut last line
    assert "SetValues" in cut.reason


def test_real_44_find_and_48_int8():
    events = decode_log(_log("44"))
    sightings = [e for e in events if isinstance(e, Sighting)]
    assert len({s.problem for s in sightings}) == 1 and sightings[0].problem.direction == "fwd"
    events = decode_log(_log("48"))
    (s,) = [e for e in events if isinstance(e, Sighting)]
    assert s.problem.dtype == "int8" and ("algorithm", "0") in anns(events)
    assert s.role == "execution"                                                                   # 1 fwd int8 exec


def test_real_52_log_convolution_execution():
    events = decode_log(_log("52"))
    execs = [e for e in events if isinstance(e, Sighting) and e.role == "execution"]
    assert [e.problem.direction for e in execs] == ["fwd", "wrw"]                                 # 2 exec


# ---------------------------------------------------------------- robustness and speed

@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["Info", "Info2", "Warning", "Error"]),
       st.sampled_from(["SetValues", "GetInvoker", "Register", "EvaluateInvokers", "FindConvFwdAlgorithm",
                        "LogConvolutionExecution", "ConvolutionForward", "ConvolutionForwardImmediate", "X", ""]),
       st.one_of(st.text(max_size=100),
                 st.sampled_from(["Looking for key ", "Selected: ", "algo = ", "solver_id = ", "FW Chosen Algorithm: ",
                                  "Returning an invoker for problem ", "[ConvolutionExecution] Problem=\"",
                                  "Invoker registered for algorithm ", "id: 1, algo: 2, time: 3, ws: 4, name: "])
                 .flatmap(lambda p: st.text(max_size=60).map(lambda t: p + t))))
def test_decode_never_raises(level, func, message):
    events = LevelDecoder().decode(level, func, message)
    assert isinstance(events, list)


def test_irrelevant_lines_are_fast_and_not_cached():
    d = LevelDecoder()
    lines = [("Info2", "run", f"kernel_name = k{i}, global_work_dim = {{ {i}, 1, 1 }}") for i in range(20000)]
    t0 = time.perf_counter()
    for line in lines:
        assert d.decode(*line) == []
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.5, elapsed      # ~1 us per line on a laptop
    assert len(d._cache) == 0


def test_decoded_lines_are_cached_by_text():
    d = LevelDecoder()
    msg = "Looking for key 192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-F in file /x"
    first = d.decode("Info2", "FindRecordUnsafe", msg)
    assert d.decode("Info2", "FindRecordUnsafe", msg) is first


# ---------------------------------------------------------------- other ops' network configs

def test_batch_norm_network_config_2025():
    """rocm-libraries' batch-norm problem_description: C x D x H x W x N, layouts, six types,
    mixed flag, direction, save and running flags, mode."""
    cfg = "64x1x112x112x16xNCHWxNCHWxFP32xFP32xFP32xFP32xFP32xFP32x0xTrnx1x1x1x0"
    (s,) = D.decode("Info2", "GetInvoker", f"Returning an invoker for problem {cfg} and algorithm "
                                           f"miopenBatchNormForwardTrainingSpatial")
    p = s.problem
    assert (s.role, p.op, p.direction, p.n, p.c, p.in_spatial) == ("execution", "bnorm", "fwd_train", 16, 64, (112, 112))
    assert (p.mode, p.save, p.running, p.layout, p.dtype) == ("spatial", True, True, "NCHW", "fp32")
    (m,) = D.decode("Info2", "GetFound1_0", f"No invokers found for {cfg}")
    assert m.role == "mention" and m.problem == p


def test_softmax_network_config_and_pooling_config():
    cfg = "sfmfwd-n_x1c_x5h_x1w_x1n_y1c_y5h_y1w_y1xpk1ypk1a1.000000b0.000000algo0mode1"
    (s,) = D.decode("Info2", "Register", f"Invoker registered for algorithm {cfg} and solver Softmax")
    p = s.problem
    assert (p.op, p.direction, p.n, p.c, p.in_spatial, p.algorithm, p.mode) == ("softmax", "fwd", 1, 5, (1, 1), 0, 1)
    assert s.warnings and "data type" in s.warnings[0]
    # a pooling config names the op, not the layer: only a driver run's own call can use it
    (seen,) = D.decode("Info2", "GetInvoker", "Returning an invoker for problem m0_i1_dt1_ker1x2_str1x1_it0_nout2_"
                                              "tile1x1_grp8x8_glb8x8x4_wsidx0 and algorithm miopenPooling2dForward")
    assert (seen.op, seen.direction, seen.role) == ("pool", "fwd", "execution")

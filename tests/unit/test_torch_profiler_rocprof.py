"""rocprofv3 kernel traces joined to a MIOpen log by the order of calls.  No real rocprofv3
output was available: tests/data/profiler/rocprof/kernel_trace.csv is written from the
columns the ROCprofiler-SDK documentation gives, with MIOpen's kernel names, for the 14 calls
of miopen_step.log (one training step of a conv-bnorm-relu-pool net)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from miotui.decoding.parallel import decode_files
from miotui.formats.rocprof import looks_like_kernel_trace
from miotui.formats.rocprof.kernel_trace import kernel_family
from miotui.views.timing import layer_times

DATA = Path(__file__).parents[1] / "data" / "profiler" / "rocprof"
LOG = DATA / "miopen_step.log"
CSV = DATA / "kernel_trace.csv"
#: (op, direction, n, c, H) -> ms per call, worked out by hand from the CSV's rows
EXPECTED = {("conv", "fwd", 3): 0.100, ("bnorm", "fwd_train", 64): 0.020, ("activ", "fwd", 64): 0.005,
            ("pool", "fwd", 64): 0.008, ("conv", "fwd", 64): (0.030 + 0.031) / 2, ("pool", "bwd", 64): 0.009,
            ("activ", "bwd", 64): 0.006, ("bnorm", "bwd", 64): 0.025 + 0.003, ("conv", "wrw", 3): 0.070 + 0.010 + 0.060}
#: the run of 4 backward conv calls met 5 kernels: which is whose cannot be told
AMBIGUOUS = {("conv", "bwd", 64), ("conv", "wrw", 64)}


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _key(problem) -> tuple:
    return problem.op, problem.direction, problem.c


def _decode(tmp_path: Path, rows: list[dict], header=None):
    path = tmp_path / "kernel_trace.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=header or list(rows[0]), quoting=csv.QUOTE_NONNUMERIC,
                                extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return decode_files([str(LOG), str(path)])


def test_each_call_gets_its_kernels_by_order_and_the_rest_is_said():
    catalog = decode_files([str(LOG), str(CSV)])
    times = layer_times(catalog.layers())
    for layer in catalog.layers():
        t = times[layer.id]
        if _key(layer.problem) in AMBIGUOUS:
            assert t.source is None
        else:
            assert t.source == "rocprof"
            assert t.per_call_ms == pytest.approx(EXPECTED[_key(layer.problem)])
    rows = _rows(CSV)
    total_ns = sum(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in rows)
    not_miopen = {"Cijk_Alik_Bljk_SB_MT64x64x16_MI32x32x2x1_SN", "void at::native::elementwise_kernel<128, 4>"
                  "(int, at::native::FillFunctor<float>)"}
    unclaimed = sum(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for i, r in enumerate(rows)
                    if r["Kernel_Name"] in not_miopen or 8 <= i <= 12)   # the GEMM, the fill, the ambiguous run
    share = catalog.kernel_time["rocprof"].share
    assert share == pytest.approx((total_ns - unclaimed) / total_ns)
    assert "run 7: 4 conv calls, 5 kernels" in catalog.joined[0]


def test_where_the_log_and_the_trace_part_nothing_after_is_attributed(tmp_path):
    rows = [r for r in _rows(CSV) if r["Kernel_Name"] != "MIOpenBatchNormFwdTrainSpatial"]
    catalog = _decode(tmp_path, rows)
    timed = {_key(layer.problem) for layer in catalog.layers() if layer.annotation("rocprof_time_ms")}
    assert timed == {("conv", "fwd", 3)}
    assert "part at run 2: the log's next calls are 1 x bnorm, the trace's next kernels 1 x activ" in \
        catalog.joined[0]


def test_a_file_without_the_documented_columns_is_not_joined(tmp_path):
    rows = _rows(CSV)
    header = [h for h in rows[0] if h != "End_Timestamp"] + ["Kernel_Name_", "Start_Timestamp_", "End_Timestampx"]
    path = tmp_path / "other.csv"
    path.write_text(",".join(header) + "\n")
    assert not looks_like_kernel_trace(path.read_bytes())
    catalog = decode_files([str(LOG), str(path)])   # then it is read as a log: no MIOpen line in it
    assert not catalog.kernel_time and all(not layer.annotation("rocprof_time_ms") for layer in catalog.layers())


def test_a_bad_row_is_listed_with_its_line_and_the_rest_is_joined(tmp_path):
    rows = _rows(CSV)
    rows[3] = dict(rows[3], Start_Timestamp="soon")   # the GEMM's row: no family, so the join is unchanged
    catalog = _decode(tmp_path, rows)
    reasons = [(u.line, u.reason) for u in catalog.undecoded()]
    assert (5, "kernel trace row without a kernel name and integer timestamps") in reasons
    assert catalog.layers()[0].annotation("rocprof_time_ms") == "0.1"


@pytest.mark.parametrize("name, family", [
    ("igemm_fwd_gtcx_nchw_fp32_bx0_ex1_bt128x128x16", "conv"), ("naive_conv_nonpacked_bwd_nchw_half_double_half",
                                                                 "conv"),
    ("miopenSp3AsmConv_v21_1_3_gfx9_fp32_stride1", "conv"), ("MIOpenBatchNormFwdTrainSpatial", "bnorm"),
    ("mloPoolingG", "pool"), ("MIOpenActiveFwd", "activ"), ("SoftmaxForward", "softmax"),
    ("Cijk_Alik_Bljk_SB_MT64x64x16_MI32x32x2x1_SN", None), ("elementwise_kernel", None),
])
def test_miopen_kernel_names_say_the_family(name, family):
    assert kernel_family(name) == family


def test_a_kernel_trace_alone_says_it_needs_the_log():
    catalog = decode_files([str(CSV)])
    assert len(catalog) == 0
    assert [u.reason for u in catalog.undecoded()] == [
        "a rocprofv3 kernel trace names no layers: decode it with the MIOpen log of the same run "
        "(miotui decode run.log kernel_trace.csv)"]

"""MIOpenDriver stdout of every version (docs/formats.md §8.2, §9) and driver runs inside logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui.driver.output import DriverOutput, parse_driver_output, parse_output_line, parse_stats
from miotui.events import Annotation, Sighting, Undecoded
from miotui.formats.miopen.driver_output import DriverLogTracker
from miotui.formats.miopen.lines import DB, TEXT, classify

HERE = Path(__file__).parents[1]


def _real_logs() -> Path:
    return HERE / "data" / "real_logs"


def _log(prefix: str) -> str:
    (path,) = _real_logs().glob(prefix + "_*")
    return path.read_text()


def scan(text: str, tracker: DriverLogTracker | None = None) -> list:
    """Feed text the way LogScanner does: only unprefixed lines reach the tracker, and a
    line the tracker once called "not driver text" (None) is skipped from then on."""
    t = tracker or DriverLogTracker()
    noise: set[str] = set()
    out: list = []
    for line in text.splitlines():
        if classify(line)[0] not in (TEXT, DB) or line in noise:
            continue
        events = t.feed(line)
        if events is None:
            noise.add(line)
            continue
        out.extend(events)
    return out


def sightings(events) -> list[Sighting]:
    return [e for e in events if isinstance(e, Sighting)]


def executions(events) -> list[Sighting]:
    """A run's result lines: one execution per direction reported."""
    return [e for e in events if isinstance(e, Sighting) and e.role == "execution"]


def mentions(events) -> list[Sighting]:
    """Commands, typed or echoed: one mention per layer named."""
    return [e for e in events if isinstance(e, Sighting) and e.role == "mention"]


def ann(events, name: str, direction: str | None = None) -> list[str]:
    return [e.value for e in events if isinstance(e, Annotation) and e.name == name
            and (direction is None or (e.problem is not None and e.problem.direction == direction))]


# ================================================================ parse_driver_output on real logs

def test_17_2017_interrupted_fwd_bwd():
    out = parse_driver_output(_log("17"))
    assert out.command.startswith("conv -H 14")
    fwd, bwd = out.result("fwd"), out.result("bwd")
    assert (fwd.algorithm, fwd.kernel_ms, fwd.kernel_ms_kind) == (1, 3.43388, "single")
    assert (fwd.verdict, fwd.error, fwd.reference) == ("ok", None, "CPU")   # §9.4: no number in 2017
    assert (bwd.algorithm, bwd.kernel_ms, bwd.verdict) == (0, 104.385124, None)
    assert out.result("wrw") is None and out.verdict == "ok"


def test_18_and_20_old_outputs():
    out = parse_driver_output(_log("18"))
    r = out.result("fwd")
    assert (r.algorithm, r.kernel_ms, r.verdict, r.error) == (1, 0.248961, "ok", 3.75939e-08)
    out = parse_driver_output(_log("20"))
    r = out.result("fwd")
    assert (r.wall_ms, r.algorithm, r.kernel_ms, r.kernel_ms_kind) == (3.805411, 0, 0.3848, "average")
    assert (r.stats.n, r.stats.c, r.stats.k, r.stats.out_spatial, r.stats.filter) == (32, 3, 32, (6, 6), (3, 3))
    assert (r.stats.flop_count, r.stats.bytes_read, r.stats.bytes_written) == (1990656, 28032, 147456)
    assert r.stats.time_ms == 0.3848 and r.error == 2.56053e-08


def test_22_two_runs_stay_separate():
    out = parse_driver_output(_log("22"))
    assert [r.kernel_ms for r in out.results] == [0.056871, 0.06176]
    assert [r.stats.gflops for r in out.results] == [3049, 2808]
    assert out.result("fwd").kernel_ms == 0.06176


def test_24_pool_backward_failure_and_version():
    out = parse_driver_output(_log("24"))
    assert out.version == "2.9.0"
    r = out.result("bwd", "pool")
    assert (r.op, r.kernel_ms, r.verdict) == ("pool", 0.003839, "failed")
    assert r.error == pytest.approx(0.0001647336444)       # the "Sqr error" line of mloVerify
    assert out.result("fwd") is None and out.verdict == "failed"


def test_31_bnorm_backward_checks():
    out = parse_driver_output(_log("31"))
    r = out.result("bwd", "bnorm")
    assert r.checks == (("dx", "ok", None), ("dscale", "failed", 0.844537), ("dbias", "ok", None))
    assert r.verdict == "failed" and r.error == 0.844537   # a later "passed on dbias" does not undo it


def test_34_fp16_failed_and_cut_stats():
    out = parse_driver_output(_log("34"))
    first, second = out.results
    assert (first.algorithm, first.solution_id, first.solver) == (5, 64, "ConvHipImplicitGemmForwardV4R4Xdlops")
    assert (first.verdict, first.error, first.tolerance) == ("failed", 0.257789, 0.082)
    assert first.stats.complete and not second.stats.complete and second.stats.gflops == 7144
    assert second.verdict is None and out.verdict == "failed"


def test_38_bf16_gpu_reference_and_prng():
    out = parse_driver_output(_log("38"))
    assert out.prng_seed == 12345678
    r = out.results[0]
    assert (r.solution_id, r.solver, r.verdict, r.error, r.tolerance, r.reference) == \
        (91, "GemmFwdRest", "ok", 2.71049e-05, 0.0656, "GPU")
    assert r.stats.flop_count == 309237645312


def test_39_wrw_with_sysinfo_and_profiler_noise():
    out = parse_driver_output(_log("39"))
    (r,) = out.results
    assert (r.direction, r.algorithm, r.solution_id, r.kernel_ms) == ("wrw", 5, 110, 0.00976)
    assert (r.stats.n, r.stats.c, r.stats.k, r.stats.out_spatial, r.stats.filter) == (3, 256, 192, (512, 512), (1, 1))
    info = dict(out.system_info)
    assert info["MIOpen Driver"] == "3.5.1" and info["GPU Model"] == "4 x AMD Instinct MI210"
    assert out.verdict is None and out.errors == ()          # -V 0: nothing verified


# ================================================================ every version's line variants

@pytest.mark.parametrize("line, direction, op, verdict, error, tol, ref", [
    ("Forward Convolution Verifies on CPU and GPU", "fwd", "conv", "ok", None, None, "CPU"),
    ("Forward Convolution Verifies on CPU and GPU (3.75939e-08)", "fwd", "conv", "ok", 3.75939e-08, None, "CPU"),
    ("Backward Convolution Data Verifies OK on CPU reference (1e-07)", "bwd", "conv", "ok", 1e-07, None, "CPU"),
    ("Backward Convolution Weights Verifies OK on GPU reference (0.00037644 < 0.0082)", "wrw", "conv", "ok",
     0.00037644, 0.0082, "GPU"),
    ("Backward Convolution Bias Verifies OK on GPU reference (2e-08)", "bwd_bias", "conv", "ok", 2e-08, None, "GPU"),
    ("Forward Convolution Failed: 0.1", "fwd", "conv", "failed", 0.1, None, None),
    ("Backward Convolution Data Failed: 0.5 > 1e-06", "bwd", "conv", "failed", 0.5, 1e-06, None),
    ("Backward Convolution Weights FAILED: 1.79769e+308 > 3e-06", "wrw", "conv", "failed", 1.79769e+308, 3e-06, None),
    ("Forward Pooling Verifies on CPU and GPU (0, 9)", "fwd", "pool", "ok", 0.0, None, "CPU"),
    ("Forward Pooling verification FAILED", "fwd", "pool", "failed", None, None, None),
    ("Forward Pooling Verification Failed !!", "fwd", "pool", "failed", None, None, None),
    ("Backward Pooling verification FAILED (0.5, 4)", "bwd", "pool", "failed", 0.5, None, None),
    ("Forward LRN Verifies on CPU and GPU (err=0.000012)", "fwd", "lrn", "ok", 1.2e-05, None, "CPU"),
    ("Backward LRN FAILED: 0.25", "bwd", "lrn", "failed", 0.25, None, None),
    ("Forward Softmax Failed: 0.5", "fwd", "softmax", "failed", 0.5, None, None),
    ("Backward Softmax Verifies on CPU and GPU (err=0.000000)", "bwd", "softmax", "ok", 0.0, None, "CPU"),
    ("Forward Activation Verifies on CPU and GPU", "fwd", "activ", "ok", None, None, "CPU"),
    ("Forward Activation FAILED", "fwd", "activ", "failed", None, None, None),
    ("Forward Batch Norm Verifies on CPU and GPU.", "fwd", "bnorm", "ok", None, None, "CPU"),
    ("Backwards Prop Batch Norm Verifies on CPU and GPU.", "bwd", "bnorm", "ok", None, None, "CPU"),
    ("Forward train batch norm verification passed on running mean (4.10829e-08)", "fwd", "bnorm", "ok",
     4.10829e-08, None, None),
    ("Forward train batch norm verification passed on running mean.", "fwd", "bnorm", "ok", None, None, None),
    ("Forward batch norm verification failed on output: 0.3", "fwd", "bnorm", "failed", 0.3, None, None),
    ("Forward train batch norm verification FAILED on saved inverse variance: 2", "fwd", "bnorm", "failed",
     2.0, None, None),
])
def test_verification_lines(line, direction, op, verdict, error, tol, ref):
    ol = parse_output_line(line)
    assert (ol.kind, ol.direction, ol.op, ol.get("verdict")) == ("verify", direction, op, verdict)
    assert ol.get("error") == error and ol.get("tolerance") == tol and ol.get("reference") == ref


@pytest.mark.parametrize("line, kind, direction, op, ms", [
    ("GPU Kernel Time Forward Conv. Elapsed: 0.248961 ms", "single", "fwd", "conv", 0.248961),
    ("GPU Kernel Time Backward Data Conv. Elapsed: 2.539060 ms (average)", "average", "bwd", "conv", 2.53906),
    ("GPU Kernel Time Backward Weights Conv. Elapsed: 36.705635 ms (average)", "average", "wrw", "conv", 36.705635),
    ("GPU Kernel Time Forward Conv. Bias Elapsed: 0.010000 ms", "single", "fwd_bias", "conv", 0.01),
    ("GPU Kernel Time Backward Bias Conv. Elapsed: 0.020000 ms", "single", "bwd_bias", "conv", 0.02),
    ("GPU Kernel Time Forward Pooling Elapsed: 0.003839 ms", "single", "fwd", "pool", 0.003839),
    ("GPU Kernel Min Time Forward Batch Normalization Elapsed: 0.100000 ms", "min", "fwd", "bnorm", 0.1),
    ("GPU Kernel Avg Time Forward Batch Normalization Elapsed: 0.200000 ms, for 10 iterations.", "average", "fwd",
     "bnorm", 0.2),
    ("GPU Kernel Min Time Backwards Batch Normalization Elapsed: 0.3 ms", "min", "bwd", "bnorm", 0.3),
    ("GPU Kernel Avg Time Backward Activation Elapsed: 0.4 ms, for 5 iterations.", "average", "bwd", "activ", 0.4),
    ("GPU Kernel Time Forward LRN Elapsed: 0.5 ms", "single", "fwd", "lrn", 0.5),
    ("GPU Kernel Time Backward Softmax Elapsed: 0.6 ms", "single", "bwd", "softmax", 0.6),
    ("GPU Fused Kernel Avg Time Elapsed: 0.7 ms, for 10 iterations.", "average", "fwd", "fusion", 0.7),
])
def test_kernel_time_lines(line, kind, direction, op, ms):
    ol = parse_output_line(line)
    assert (ol.kind, ol.get("kind"), ol.direction, ol.op, ol.get("ms")) == ("kernel_time", kind, direction, op, ms)


@pytest.mark.parametrize("line, direction, op, ms", [
    ("Wall-clock Time Forward Conv. Elapsed: 3.805411 ms", "fwd", "conv", 3.805411),
    ("Wall-clock Time Backward Weights Conv. Elapsed: 1.5 ms, Auxiliary API calls: 0.2 ms (GWSS: 0.01)", "wrw",
     "conv", 1.5),
    ("Wall-clock Time Forward GPU Batch Norm Elapsed: 2.0 ms, for 10 iterations.", "fwd", "bnorm", 2.0),
    ("Wall-clock Time Forward Softmax Elapsed: 1.0 ms, First Call Overhead: 9.0 ms", "fwd", "softmax", 1.0),
    ("Wall-clock Time Elapsed: 4.0 ms, for 1 iterations.", "fwd", "fusion", 4.0),
])
def test_wall_clock_lines(line, direction, op, ms):
    ol = parse_output_line(line)
    assert (ol.kind, ol.direction, ol.op, ol.get("ms")) == ("wall_time", direction, op, ms)


def test_algorithm_lines():
    ol = parse_output_line("MIOpen Forward Conv. Algorithm: 3, Solution: 139/ConvWinoFuryRxS<2-3>")
    assert (ol.direction, ol.get("algorithm"), ol.get("solution_id"), ol.get("solver")) == \
        ("fwd", 3, 139, "ConvWinoFuryRxS<2-3>")
    ol = parse_output_line("MIOpen Backward Weights Conv. Algorithm: 1")
    assert (ol.direction, ol.get("algorithm"), ol.get("solution_id")) == ("wrw", 1, None)
    out = parse_driver_output("MIOpen Backward Data Conv. Algorithm: 0, Solution: 0/UNKNOWN\n")
    assert out.result("bwd").solver is None and out.result("bwd").solution_id == 0


@pytest.mark.parametrize("body, n, c, k, outs, filt", [
    # header says "x, y" but the values are (fh, fw) -- a 3x1 filter tells them apart
    ("fwd-conv3x1u1, 2, 8, 6, 8, 3, 1, 16,  1, 2, 3, 4, 5, 0.1", 2, 8, 16, (6, 8), (3, 1)),
    # backward data: n, c, fh, fw, k, ho, wo despite the same header
    ("bwdd-conv3x1u1, 2, 8, 3, 1, 16, 6, 8,  1, 2, 3, 4, 5, 0.1", 2, 8, 16, (6, 8), (3, 1)),
    ("bwdw-conv3x1u1, 2, 8, 6, 8, 3, 1, 16,  1, 2, 3, 4, 5, 0.1", 2, 8, 16, (6, 8), (3, 1)),
    ("fwd-conv3x3x1u1, 2, 8, 4, 6, 8, 3, 3, 1, 16,  1, 2, 3, 4, 5, 0.1", 2, 8, 16, (4, 6, 8), (3, 3, 1)),
    # 3-D backward data lacks the comma before flopCnt
    ("bwdd-conv3x3x1u1, 2, 8, 3, 3, 1, 16, 4, 6, 8  1, 2, 3, 4, 5, 0.1", 2, 8, 16, (4, 6, 8), (3, 3, 1)),
])
def test_stats_field_order_pitfalls(body, n, c, k, outs, filt):
    s = parse_stats(body)
    assert (s.n, s.c, s.k, s.out_spatial, s.filter) == (n, c, k, outs, filt)
    assert (s.flop_count, s.bytes_read, s.bytes_written, s.gflops, s.gbps, s.time_ms) == (1, 2, 3, 4, 5, 0.1)
    assert s.complete


def test_other_stats_lines():
    s = parse_stats("bnormf, 0, 1024, 1024, 0, 12.5, 0.2")
    assert (s.bytes_read, s.gbps, s.time_ms) == (1024, 12.5, 0.2)
    s = parse_stats("fwd-activ, 100, 200, 3.5, 0.01")
    assert (s.bytes_written, s.gbps, s.time_ms) == (200, 3.5, 0.01)
    assert parse_output_line("stats: <not implemented> for conv4d").kind == "info"


@pytest.mark.parametrize("line, kind", [
    ("RunForwardGPU() FAILED, rc = 0x7", "run_error"),
    ("ParseCmdLineArgs() FAILED, rc = 1", "run_error"),
    ("AllocateBuffersAndCopy() FAILED, rc = 3", "run_error"),
    ("Input Flag: n Not Found !", "error"),
    ("Input Flag: n Not Found !root@host:~#", "error"),   # printed without a newline
    ("Long Name: foo Not Found !", "error"),
    ("FAILED: Invalid Base Input Argument", "error"),
    ("Illegal input flag", "error"),
    ("Incorrect BaseArg", "error"),
    ("MIOpen Error: /src/ocl/convolutionocl.cpp:123: No suitable algorithm was found", "error"),
    ("terminate called after throwing an instance of 'miopen::Exception'", "error"),
    ("  what():  /src/x.cpp:1: bad", "error"),
    ("Memory access fault by GPU node-2 (Agent handle: 0x1) on address 0x7f. Reason: Page not present", "error"),
    ("Warning: Solution id (5) is not reported by the library. Trying it anyway...", "warning"),
    ("Int8 Backward Convolution is not supported", "warning"),
    ("MIOpen (version: 3.3.0)", "version"),
    ("PRNG seed: 12345678", "prng"),
    ("MIOpenDriver: conv -n 1", "echo"),
    ("MIOpenDriver conv -n 1", "echo"),
    ("stats: name, n, c, ho, wo, x, y, k, flopCnt, bytesRead, bytesWritten, GFLOPs, GB/s, timeMs", "stats_header"),
    ("Forward Conv solutions available: 3", "solutions_available"),
    ("- id: 85 algo: 1, time: 0.5 ms, ws: 0, name: ConvDirectNaiveConvFwd", "solution"),
    ("Running fusion: Convolution+Bias+Activation", "fusion"),
    ("Difference in neuron layer: 0.5 too large at 3 c_v = 1 vs g_v = 2", "verify_detail"),
])
def test_other_line_kinds(line, kind):
    assert parse_output_line(line).kind == kind


@pytest.mark.parametrize("line", [
    "", "hello", "MIOpen(HIP): Info [X] y", "root@simon:", "^C", "- SQ_CYCLES", "ROCProfilerV2: Collecting",
    "Dispatch_ID(0), GPU_ID(2)", "Enabling Counter Collection", "Forwarding ports", "Backup done",
    "Backward pass Failed to converge", "Forward step FAILED: see above", "Backward Verifies on CPU and GPU",
])
def test_not_driver_output(line):
    assert parse_output_line(line) is None


def test_full_outputs_of_other_drivers():
    bn = parse_driver_output("""MIOpenDriver bnorm -n 32 -c 64 -H 28 -W 28 -m 1 --forw 1 -b 0 -s 1 -r 1 -t 1
GPU Kernel Min Time Forward Batch Normalization Elapsed: 0.100000 ms
GPU Kernel Avg Time Forward Batch Normalization Elapsed: 0.120000 ms, for 10 iterations.
stats: bnormf, 0, 6422528, 6422528, 0, 107042, 0.120000
Forward train batch norm verification passed on running mean (4.10829e-08)
Forward train batch norm verification passed on running variance (1e-08)
Forward batch norm verification passed on output (2e-07)
Forward Batch Norm Verifies on CPU and GPU.
""")
    r = bn.result("fwd", "bnorm")
    assert (r.kernel_ms, r.kernel_ms_kind, r.kernel_min_ms, r.iterations) == (0.12, "average", 0.1, 10)
    assert r.verdict == "ok" and len(r.checks) == 3 and r.stats.bytes_read == 6422528
    fusion = parse_driver_output("""MIOpenDriver CBAInfer -F 4 -n 1 -c 3 -H 8 -W 8 -k 4
Running fusion: Convolution+Bias+Activation
GPU Fused Kernel Min Time Elapsed: 0.05 ms
Forward Activation FAILED
""")
    assert fusion.fusion == "Convolution+Bias+Activation"
    r = fusion.result("fwd")
    assert (r.op, r.kernel_ms, r.verdict) == ("fusion", 0.05, "failed")
    imm = parse_driver_output("""MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -F 1 -t 1 -S 85
Forward Conv solutions available: 2
- id: 85 algo: 1, time: 0.5 ms, ws: 0, name: ConvDirectNaiveConvFwd
- id: 91 algo: 0, time: 0.7 ms, ws: 1024, name: GemmFwdRest
MIOpen Forward Conv. Algorithm: 1, Solution: 85/ConvDirectNaiveConvFwd
GPU Kernel Time Forward Conv. Elapsed: 0.4 ms (average)
""")
    assert [(s.direction, s.solution_id, s.name) for s in imm.solutions] == \
        [("fwd", 85, "ConvDirectNaiveConvFwd"), ("fwd", 91, "GemmFwdRest")]
    assert imm.result("fwd").solution_id == 85


def test_errors_reach_the_right_direction():
    out = parse_driver_output("""MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -F 0 -t 1
MIOpen Forward Conv. Algorithm: 1, Solution: 85/ConvDirectNaiveConvFwd
GPU Kernel Time Forward Conv. Elapsed: 0.4 ms (average)
Forward Convolution Verifies OK on GPU reference (1e-07 < 1.5e-06)
MIOpen Error: /src/solver.cpp:1: no solver
RunBackwardGPU() FAILED, rc = 0x30000
""")
    assert out.result("wrw").run_error == "RunBackwardGPU() FAILED, rc = 0x30000"  # high 16 bits: weights
    assert out.result("bwd") is None
    assert out.result("fwd").verdict == "ok"
    assert out.verdict == "failed"            # weights failed to run
    assert len(out.errors) == 2
    bad = parse_driver_output("MIOpenDriver pool -n 2\nInput Flag: n Not Found !")
    assert bad.errors == ("Input Flag: n Not Found !",) and bad.verdict == "failed"
    assert parse_driver_output("FAILED: Invalid Base Input Argument\n").verdict == "failed"


# ---------------------------------------------------------------- property: every era's wording round-trips

ERAS = ("2017", "2018", "2019", "2021", "2023", "2025")


def _render(era: str, direction: str, algo: int, sid: int, name: str, ms: float, verdict: str, err: float,
            tol: float, ref: str) -> str:
    """Driver text of one conv direction as MIOpen ``era`` printed it (from §9.4's version table)."""
    what = {"fwd": "Forward", "bwd": "Backward Data", "wrw": "Backward Weights"}[direction]
    vwhat = {"fwd": "Forward Convolution", "bwd": "Backward Convolution Data",
             "wrw": "Backward Convolution Weights"}[direction]
    lines = []
    if era in ("2017", "2018", "2019"):
        lines.append(f"MIOpen {what} Conv. Algorithm: {algo}")
    else:
        lines.append(f"MIOpen {what} Conv. Algorithm: {algo}, Solution: {sid}/{name}")
    avg = "" if era == "2017" else " (average)"
    lines.append(f"GPU Kernel Time {what} Conv. Elapsed: {ms:f} ms{avg}")
    if verdict == "ok":
        if era == "2017":
            lines.append(f"{vwhat} Verifies on CPU and GPU")
        elif era in ("2018", "2019"):
            lines.append(f"{vwhat} Verifies on CPU and GPU ({err:g})")
        elif era in ("2021", "2023"):
            lines.append(f"{vwhat} Verifies OK on {ref} reference ({err:g})")
        else:
            lines.append(f"{vwhat} Verifies OK on {ref} reference ({err:g} < {tol:g})")
    else:
        word = "Failed" if era in ("2017", "2018", "2019", "2021") else "FAILED"
        lines.append(f"{vwhat} {word}: {err:g}" + ("" if era in ("2017", "2018") else f" > {tol:g}"))
    return "\n".join(lines)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(ERAS),
       st.lists(st.sampled_from(["fwd", "bwd", "wrw"]), min_size=1, max_size=3, unique=True),
       st.integers(0, 5), st.integers(1, 160), st.from_regex(r"Conv[A-Za-z0-9]{1,12}", fullmatch=True),
       st.floats(0.001, 999, allow_nan=False), st.sampled_from(["ok", "failed"]),
       st.floats(1e-9, 10, allow_nan=False), st.floats(1e-6, 0.1, allow_nan=False), st.sampled_from(["GPU", "CPU"]))
def test_every_era_round_trips(era, directions, algo, sid, name, ms, verdict, err, tol, ref):
    text = "MIOpenDriver conv -n 1\n" + "\n".join(
        _render(era, d, algo, sid, name, ms, verdict, err, tol, ref) for d in directions)
    out = parse_driver_output(text)
    assert [r.direction for r in out.results] == directions
    for r in out.results:
        assert r.algorithm == algo
        assert r.kernel_ms == pytest.approx(float(f"{ms:f}"))
        assert r.kernel_ms_kind == ("single" if era == "2017" else "average")
        assert r.verdict == verdict
        if era in ("2019", "2021", "2023", "2025"):
            assert r.solution_id == (None if era == "2019" else sid)
        if verdict == "ok" and era != "2017":
            assert r.error == pytest.approx(float(f"{err:g}"))
        if (verdict == "ok" and era == "2025") or (verdict == "failed" and era not in ("2017", "2018")):
            assert r.tolerance == pytest.approx(float(f"{tol:g}"))
        if verdict == "ok":
            assert r.reference == (ref if era in ("2021", "2023", "2025") else "CPU")
    assert out.verdict == verdict


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_parse_never_raises(text):
    assert isinstance(parse_driver_output(text), DriverOutput)
    t = DriverLogTracker()
    for line in text.splitlines() or [text]:
        events = t.feed(line)
        assert events is None or isinstance(events, list)


# ================================================================ the tracker, inside logs

def test_tracker_17_typed_and_echo_counted_once():
    events = scan(_log("17"))
    # no -F: MIOpenDriver's default 0 runs every direction; typed + echo name each once
    assert [x.problem.direction for x in mentions(events)] == ["fwd", "bwd", "wrw"]
    assert all(x.source == "driver-command" for x in mentions(events))
    # interrupted (^C) after the backward-data result: two directions ran
    assert [x.problem.direction for x in executions(events)] == ["fwd", "bwd"]
    assert all(x.source == "driver-output" for x in executions(events))
    assert ann(events, "algorithm", "fwd") == ["1"] and ann(events, "algorithm", "bwd") == ["0"]
    assert ann(events, "driver_kernel_ms", "fwd") == ["3.43388"]
    assert ann(events, "driver_verdict", "fwd") == ["OK"] and ann(events, "driver_reference", "fwd") == ["CPU"]
    assert ann(events, "driver_verdict", "bwd") == []   # interrupted before its verification


def test_tracker_18_22_34_38_39():
    events = scan(_log("18"))
    (s,) = executions(events)
    assert mentions(events)[0].problem == s.problem
    assert (s.problem.c, s.problem.k, s.problem.in_spatial, s.problem.direction) == (18, 5, (32, 32), "fwd")
    assert ann(events, "driver_verify_error") == ["3.75939e-08"]

    events = scan(_log("22"))                               # 2 fwd results, 1 distinct
    s = executions(events)
    assert len(mentions(events)) == 2
    assert len(s) == 2 and s[0].problem == s[1].problem
    assert ann(events, "driver_kernel_ms") == ["0.056871", "0.06176"]

    events = scan(_log("34"))                               # 2 fwd fp16 results, 2 distinct
    s = executions(events)
    assert [x.problem.dtype for x in s] == ["fp16", "fp16"] and s[0].problem != s[1].problem
    assert ann(events, "driver_verdict") == ["FAILED"] and ann(events, "driver_tolerance") == ["0.082"]
    assert [e.problem for e in events if isinstance(e, Annotation) and e.name == "driver_verdict"] == [s[0].problem]
    assert ann(events, "solver_id") == ["64", "64"]

    events = scan(_log("38"))                               # python argv repr + echo, 2 distinct bf16
    s = executions(events)
    assert [x.problem.dtype for x in s] == ["bf16", "bf16"] and s[0].problem != s[1].problem
    assert ann(events, "driver_reference") == ["GPU"] and ann(events, "solver") == ["GemmFwdRest", "GemmFwdRest"]

    events = scan(_log("39"))                               # echo only, rocprof lines around
    (s,) = executions(events)
    assert s.problem.direction == "wrw" and ann(events, "solver_id") == ["110"]
    assert ann(events, "driver_kernel_ms") == ["0.00976"]


def test_tracker_24_31_pool_and_bnorm():
    events = scan(_log("24"))
    (s,) = executions(events)
    assert (s.problem.op, s.problem.direction, s.problem.mode) == ("pool", "bwd", "max")   # §8.2: -F 2 = bwd only
    assert ann(events, "driver_verdict") == ["FAILED"] and ann(events, "driver_kernel_ms") == ["0.003839"]

    events = scan(_log("31"))
    (s,) = executions(events)
    assert (s.problem.op, s.problem.direction) == ("bnorm", "bwd")
    assert ann(events, "driver_verdict")[-1] == "FAILED"


def test_tracker_10_echo_only():
    events = scan(_log("10"))        # the LogCmd lines are the scanner's; the echo names the layer
    (s,) = mentions(events)
    assert executions(events) == []
    assert (s.problem.n, s.problem.c, s.problem.k, s.problem.filter) == (1, 1, 2, (2, 2))


def test_typed_command_spellings():
    base = "conv -n 2 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -F 1 -t 1"
    expected = None
    for typed in [f"$ ./MIOpenDriver {base}", f"root@host:/opt/rocm/bin# ./MIOpenDriver {base}",
                  f"MIOPEN_FIND_MODE=1 MIOPEN_LOG_LEVEL=6 /opt/rocm/bin/MIOpenDriver {base}",
                  f"PS C:\\> MIOpenDriver.exe {base}", f"$ sudo ./bin/MIOpenDriver {base} 2>&1 | tee out.txt",
                  f"$ rocprof --stats ./MIOpenDriver {base}",
                  "['/opt/rocm/bin/MIOpenDriver', " + ", ".join(repr(t) for t in base.split()) + "]"]:
        events = scan(typed + "\n" + f"MIOpenDriver {base}\nGPU Kernel Time Forward Conv. Elapsed: 0.5 ms (average)\n")
        (s,) = executions(events)
        assert [m.problem for m in mentions(events)] == [s.problem], typed
        expected = expected or s.problem
        assert s.problem == expected, typed
        assert ann(events, "driver_kernel_ms") == ["0.5"], typed


def test_continuations_repeat_safely():
    block = ("$ ./MIOpenDriver conv -n 2 -c 3 \\\n    -H 8 -W 8 -k 4 \\\n    -y 3 -x 3 -F 1 -t 1\n"
             "MIOpenDriver conv -n 2 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -F 1 -t 1\n"
             "GPU Kernel Time Forward Conv. Elapsed: {} ms (average)\n")
    events = scan(block.format("0.1") + block.format("0.2") + "-y 3 -x 3 -F 1 -t 1\n" + block.format("0.3"))
    s = executions(events)
    assert len(s) == 3 and len({x.problem for x in s}) == 1 and s[0].problem.c == 3 and s[0].problem.k == 4
    assert len(mentions(events)) == 3
    assert ann(events, "driver_kernel_ms") == ["0.1", "0.2", "0.3"]


def feed(t: DriverLogTracker, line: str) -> list:
    """One line and nothing after it: a typed command is held for one line (it may wrap), so
    flush it as the scanner does at the next line."""
    return (t.feed(line) or []) + t.flush()


def test_echo_without_its_typed_command_and_changed_echo():
    t = DriverLogTracker()
    (s1,) = feed(t, "$ ./MIOpenDriver conv -n 2 -c 3 -H 8 -W 8 -k 4 -F 1")
    (s2,) = feed(t, "MIOpenDriver conv -n 2 -c 3 -H 8 -W 8 -k 8 -F 1")   # not the same command: a new run
    assert s1.problem.k == 4 and s2.problem.k == 8
    # the same command again with no output between is its echo (typed, then echoed)...
    assert feed(t, "MIOpenDriver conv -n 2 -c 3 -H 8 -W 8 -k 8 -F 1") == []
    # ...but only once: a third time is another run
    (s3,) = feed(t, "MIOpenDriver conv -n 2 -c 3 -H 8 -W 8 -k 8 -F 1")
    assert s3.problem == s2.problem and s3.role == "mention"


def test_a_typed_command_is_held_one_line_for_a_wrap_or_its_echo():
    t = DriverLogTracker()
    assert t.feed(" /opt/rocm/bin/MIOpenDriver conv -n 16 -c 64 -H 128 -W 128 -k 64 -g 64 ") == []
    assert t.held is not None
    # the paste wrapped without a backslash, and lost the newline before the driver's echo
    events = t.feed("-F 2 -t 1MIOpenDriver: conv -n 16 -c 64 -H 128 -W 128 -k 64 -g 64 -F 2 -t 1")
    (s,) = events
    assert s.problem.direction == "bwd" and s.role == "mention" and t.held is None


def test_typed_commands_in_a_chain_pair_with_their_echoes_in_order():
    t = DriverLogTracker()
    events = feed(t, "# ./MIOpenDriver bnorm -n 1 -c 2 -H 4 -W 4 -m 1 --forw 1 ; ./MIOpenDriver bnorm -n 2 -c 2 "
                     "-H 4 -W 4 -m 1 --forw 1")
    assert [e.problem.n for e in events] == [1, 2]
    assert feed(t, "MIOpenDriver bnorm -n 1 -c 2 -H 4 -W 4 -m 1 --forw 1") == []      # the first one's echo
    (result,) = executions(feed(t, "GPU Kernel Avg Time Forward Batch Normalization Elapsed: 0.12 ms, for 10 "
                                   "iterations."))
    assert result.role == "execution" and result.problem.n == 1
    assert feed(t, "MIOpenDriver bnorm -n 2 -c 2 -H 4 -W 4 -m 1 --forw 1") == []      # then the second's


def test_cut_and_bad_commands_never_crash():
    t = DriverLogTracker()
    (s,) = feed(t, "$ ./MIOpenDriver conv -n 2 -c 3 -F 1 -H")     # cut after a flag: driver default stands
    assert s.problem.in_spatial == (32, 32) and any("cut" in w for w in s.warnings)
    (u,) = feed(t, "$ ./MIOpenDriver conv -n 2 -c banana")
    assert isinstance(u, Undecoded)
    (u,) = feed(t, "$ ./MIOpenDriver rnn -n 4 -W 8 -H 8 -m banana")
    assert isinstance(u, Undecoded) and "-m" in u.reason
    # output of a run whose command cannot be read is not credited to the previous run, and is
    # not "output without its command" either
    assert feed(t, "GPU Kernel Time Forward Conv. Elapsed: 1 ms") == []
    assert feed(t, "$ ./MIOpenDriver --version") == []
    assert feed(t, "MIOpen (version: 2.9.0)") == []
    assert t.feed("I ran MIOpenDriver yesterday and it was slow") is None   # prose
    assert t.feed("see MIOpenDriver.") is None


def test_output_without_a_command_is_not_guessed():
    events = scan(_log("20"))          # the command is cut off this excerpt
    assert sightings(events) == [] and [e for e in events if isinstance(e, Annotation)] == []
    (u,) = [e for e in events if isinstance(e, Undecoded)]    # said once, with what is missing
    assert "without its command" in u.reason


def test_run_errors_annotate_their_directions():
    events = scan("""$ ./MIOpenDriver conv -n 2 -c 3 -H 8 -W 8 -k 4 -F 0
MIOpenDriver conv -n 2 -c 3 -H 8 -W 8 -k 4 -F 0
RunForwardGPU() FAILED, rc = 0x7
Forward Convolution FAILED: 1.79769e+308 > 1.5e-06
Input Flag: Q Not Found !
""")
    assert ann(events, "driver_error", "fwd") == ["RunForwardGPU() FAILED, rc = 0x7", "Input Flag: Q Not Found !"]
    assert ann(events, "driver_error", "wrw") == ["Input Flag: Q Not Found !"]
    assert ann(events, "driver_verdict", "fwd") == ["FAILED"]


def test_bnorm_forward_lines_reach_the_training_problem():
    events = scan("""MIOpenDriver bnorm -n 4 -c 8 -H 8 -W 8 -m 1 --forw 1 -b 0
GPU Kernel Avg Time Forward Batch Normalization Elapsed: 0.12 ms, for 10 iterations.
Forward Batch Norm Verifies on CPU and GPU.
""")
    (s,) = executions(events)
    assert s.problem.direction == "fwd_train" and mentions(events)[0].problem == s.problem
    assert ann(events, "driver_kernel_ms", "fwd_train") == ["0.12"] and ann(events, "driver_verdict") == ["OK"]


def test_library_command_lines_are_left_to_the_scanner():
    t = DriverLogTracker()
    assert t.feed("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 1 -H 3 -W 3") is None
    assert t.feed("miopenConvolutionForward: ./bin/MIOpenDriver conv -n 1 -c 1 -H 3 -W 3 -k 1 -y 1 -x 1 -p 0 -q 0 "
                  "-u 1 -v 1 -l 1 -j 1 -m conv -t 1") is None


def test_pasted_terminal_with_continuation_prompts():
    events = scan("$ ./MIOpenDriver conv -n 2 -c 3 \\\n> -H 8 -W 8 -k 4 \\\n> -F 2\n"
                  "MIOpenDriver conv -n 2 -c 3 -H 8 -W 8 -k 4 -F 2\n")
    (s,) = mentions(events)
    assert executions(events) == []
    assert (s.problem.direction, s.problem.in_spatial, s.problem.k) == ("bwd", (8, 8), 4)


def test_unreadable_command_and_its_echo_give_one_undecoded():
    events = scan("$ ./MIOpenDriver conv -n 2 -c banana\nMIOpenDriver conv -n 2 -c banana\n"
                  "GPU Kernel Time Forward Conv. Elapsed: 1 ms\n")
    assert len([e for e in events if isinstance(e, Undecoded)]) == 1
    assert sightings(events) == [] and [e for e in events if isinstance(e, Annotation)] == []


def test_incremental_parser_matches_whole_text():
    from miotui.driver.output import DriverOutputParser
    text = _log("34")
    parser = DriverOutputParser()
    kinds = [getattr(parser.feed(line), "kind", None) for line in text.splitlines()]
    assert parser.output() == parse_driver_output(text)
    assert kinds.count("verify") == 1 and kinds.count("echo") == 2


# ================================================================ the newer drivers (RNN, norms, ops)

@pytest.mark.parametrize("line, kind, direction, op", [
    ("Forward RNN time results:", "time_header", "fwd", "rnn"),
    ("Backward Data RNN time results:", "time_header", "bwd", "rnn"),
    ("Backward Weights RNN time results:", "time_header", "wrw", "rnn"),
    ("GPU Kernel Time Elapsed: 20.086491 ms", "kernel_time", None, None),     # direction in the header (2024+)
    ("Wall-clock Time Elapsed: 9.155551 ms", "wall_time", None, None),
    ("GPU Kernel Time Backward Weights RNN Elapsed: 3824.282715 ms", "kernel_time", "wrw", "rnn"),
    ("Backward RNN Weights Verifies on CPU and GPU", "verify", "wrw", "rnn"),
    ("Backward RNN Data FAILED: 0.5", "verify", "bwd", "rnn"),
    ("GPU Kernel Time Forward Cat Elapsed: 0.323147 ms", "kernel_time", "fwd", "cat"),
    ("Forward Cat Verifies OK on CPU reference", "verify", "fwd", "cat"),
    ("GPU Kernel Time Gemm Elapsed: 13077.966797 ms", "kernel_time", "fwd", "gemm"),
    ("Forward GEMM Failed: nan", "verify", "fwd", "gemm"),
    ("Forward LayerNorm rstd FAILED: 2.3796e-06 > 1.5e-06", "verify", "fwd", "layernorm"),
    ("Forward Layernorm mean FAILED: 2e-06 > 1.5e-06", "verify", "fwd", "layernorm"),
    ("Backward LayerNorm Verifies dw OK against multi-threaded CPU reference (1e-07 < 1.5e-06)", "verify", "bwd",
     "layernorm"),
    ("Forward LayerNorm FAILED against single-threaded CPU reference: 2e-05 > 1.5e-06", "verify", "fwd", "layernorm"),
    ("GPU Kernel Time Forward AddLayerNorm Elapsed: 1 ms", "kernel_time", "fwd", "addlayernorm"),
    ("GPU Kernel Time Backward T5LayerNorm Elapsed: 1 ms", "kernel_time", "bwd", "t5layernorm"),
    ("Forward GroupNorm rstd Verifies on CPU and GPU (err=0.000001)", "verify", "fwd", "groupnorm"),
    ("GPU Kernel Time Reduction Elapsed: 0.1 ms", "kernel_time", "fwd", "reduce"),
    ("ReduceTensor() Verifies on CPU and GPU (err=0.000000)", "verify", "fwd", "reduce"),
    ("ReduceTensor() FAILED with error = 0.5", "verify", "fwd", "reduce"),
    ("GPU Kernel Time Kthvalue Fwd Elapsed: 0.2 ms", "kernel_time", "fwd", "kthvalue"),
    ("Forward Kthvalue output FAILED: 1 > 0.5", "verify", "fwd", "kthvalue"),
    ("GPU Kernel Time Forward Dropout. Elapsed: 0.3 ms (average)", "kernel_time", "fwd", "dropout"),
    ("Wall-clock Time Dropout Elapsed: 1 ms", "wall_time", "fwd", "dropout"),
    ("Backward Dropout Verifies on CPU and GPU (0)", "verify", "bwd", "dropout"),
    ("GPU Kernel Avg Time Tensor Op Elapsed: 0.1 ms, for 10 iterations.", "kernel_time", "fwd", "tensorop"),
    ("Forward ReduceExtreme Verifies on CPU (1e-07 < 1e-06)", "verify", "fwd", "reduceextreme"),
    ("GPU Kernel Time Forward Reduce Calculation Elapsed: 1 ms", "kernel_time", "fwd", "reducecalculation"),
    ("Backward PReLU Weight Gradient Verifies OK on CPU reference (1 < 2)", "verify", "bwd", "prelu"),
    ("GPU Kernel Time Backward Getitem Elapsed: 1 ms", "kernel_time", "bwd", "getitem"),
    ("GPU Kernel Time Backward GLU Elapsed: 1 ms", "kernel_time", "bwd", "glu"),
    ("GPU Kernel Time Forward RoPE Elapsed: 1 ms", "kernel_time", "fwd", "rope"),
    ("GPU Kernel Time Backward SoftMarginLoss Elapsed: 1 ms", "kernel_time", "bwd", "softmarginloss"),
    ("Forward MultiMarginLoss Verifies OK on CPU reference (1e-07 < 1e-06)", "verify", "fwd", "multimarginloss"),
    ("GPU Kernel Time Forward Adam Elapsed: 1 ms", "kernel_time", "fwd", "adam"),
    ("CTC loss Verifies on CPU and GPU", "verify", "fwd", "ctc"),
    ("Wall-clock Time CTC Loss Elapsed: 1 ms", "wall_time", "fwd", "ctc"),
    ("GPU Kernel Time Forwar", "cut_result", None, None),
    ("launch# 1 , host_time= 9.096022 , gpu_time= 19.923912", "info", None, None),
    ("launch#0, host_time= 1.0 ms, gpu_time= 2.0 ms", "info", None, None),
    ("final hidden Verifies on CPU and GPU", "info", None, None),
])
def test_newer_driver_lines(line, kind, direction, op):
    ol = parse_output_line(line)
    assert ol is not None and (ol.kind, ol.direction, ol.op) == (kind, direction, op)


def test_rnn_timing_blocks_give_their_direction_to_the_lines_after():
    out = parse_driver_output(_log("122"))
    (fwd,) = out.results
    assert (fwd.direction, fwd.op, fwd.kernel_ms, fwd.wall_ms) == ("fwd", "rnn", 20.086491, 9.155551)
    events = scan(_log("122"))
    assert [(s.problem.direction, s.problem.dtype) for s in mentions(events)] == [("fwd", "fp16"), ("bwd", "fp16"),
                                                                                   ("wrw", "fp16")]
    (s,) = executions(events)
    assert s.problem.direction == "fwd" and ann(events, "driver_kernel_ms") == ["20.086491"]
    assert ann(events, "driver_wall_ms") == ["9.155551"]


def test_an_rnn_timing_block_cut_short_is_undecoded():
    t = DriverLogTracker()
    scan(_log("122"), t)
    (u,) = t.finish()                      # the Backward Data block ends in 'launch# 1 ...'
    assert isinstance(u, Undecoded) and "bwd" in u.reason
    assert t.finish() == []
    # a new command or a new timing block closes it too
    t = DriverLogTracker()
    events = scan("MIOpenDriver rnn -n 4 -k 2 -F 0\nForward RNN time results:\nBackward Data RNN time results:\n"
                  "GPU Kernel Time Elapsed: 1.0 ms\n", t)
    assert [type(e).__name__ for e in events if not isinstance(e, Annotation)] == [
        "Sighting", "Sighting", "Sighting", "Undecoded", "Sighting"]
    assert executions(events)[0].problem.direction == "bwd"


def test_a_result_line_cut_mid_line_is_undecoded():
    events = scan(_log("100"))
    assert [s.problem.direction for s in executions(events)] == ["wrw"]
    (u,) = [e for e in events if isinstance(e, Undecoded)]
    assert "cut short" in u.reason
    # prose that starts like a timing line is not a cut one (real log 109)
    assert parse_output_line("GPU Kernel Time 6.396966 is lower than Chosen Algorithm 8.52753") is None


def test_the_same_echo_after_its_output_is_the_next_run():
    events = scan(_log("139"))             # one run pasted twice, each starting with its echo
    assert len(mentions(events)) == 2 and len(executions(events)) == 1
    assert ann(events, "driver_verdict") == ["OK", "OK", "FAILED"]


def test_results_named_by_another_op_reach_the_run():
    """The CTC driver prints its kernel time as "Forward Conv.", Transformers AdamW as "Adam"."""
    events = scan("MIOpenDriver ctc -n 2 -c 9 -k 10 -l 3\nGPU Kernel Time Forward Conv. Elapsed: 0.5 ms (average)\n"
                  "CTC loss Verifies on CPU and GPU\n")
    (s,) = executions(events)
    assert s.problem.op == "ctc" and ann(events, "driver_verdict") == ["OK"]
    events = scan("MIOpenDriver transformersadamw -d 64\nGPU Kernel Time Forward Adam Elapsed: 0.1 ms\n")
    assert executions(events)[0].problem.op == "transformersadamw"
    # a conv line after a layer-norm run is not the layer norm's
    assert executions(scan("MIOpenDriver layernorm -X 2x4 -o 1\nGPU Kernel Time Forward Conv. Elapsed: 1 ms\n")) == []

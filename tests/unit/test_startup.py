"""Where the time goes: per-layer times and shares, and the first iteration's Finds, searches
and compiles (issue 14).  Hand-made logs of each line form, as MIOpen prints them
(``binary_cache.cpp``, ``generic_search.hpp``, ``find_db.hpp``, ``find_controls.cpp``,
``logger.cpp``), and the real excerpts that carry them."""

from __future__ import annotations

import io
import json

import pytest

from miotui.catalog import Catalog
from miotui.decode_output import render
from miotui.decoding.whole import decode_stream
from miotui.export import to_csv
from miotui.formats.miopen.scan import LogScanner
from miotui.formats.miopen.startup_lines import line_clock, read_perf_record, read_startup_line
from miotui.views.timing import layer_times, per_call_time, time_summary

CONV = ("./bin/MIOpenDriver conv -n {n} -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 "
        "-F 1 -t 1")


def scan(text: str) -> Catalog:
    catalog = Catalog()
    decode_stream(catalog, io.BytesIO(text.encode()))
    return catalog


def by_batch(catalog: Catalog) -> dict[int, object]:
    return {layer.problem.n: layer for layer in catalog.layers()}


def execution(n: int, time_ms: str, tid: str = "") -> str:
    lead = f"{tid} " if tid else ""
    return (f'{lead}MIOpen(HIP): Info [LogConvolutionExecution] Problem="conv -n {n} -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 '
            f'-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1" Solver="GemmFwdRest" '
            f'Config(from_perf_db)="N/A" Time(from_find_db)={time_ms}\n')


# ---------------------------------------------------------------------- time per layer

def test_totals_and_shares_from_a_known_log():
    """Layer A: 3 executions at 2 ms; B: 1 at 4 ms; C: executed with no time (-1: not in the
    find-db); D: a Find only (0.5 ms, never executed: no total)."""
    text = (execution(1, "2.0") * 3 + execution(2, "4.0") + execution(3, "-1")
            + f"MIOpen(HIP): Command [LogCmdFindConvolution] {CONV.format(n=4)}\n"
            "MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: GemmFwdRest , 0, 0.5\n")
    catalog = scan(text)
    layers = catalog.layers()
    times = layer_times(layers)
    got = {layer.problem.n: times[layer.id] for layer in layers}
    assert (got[1].per_call_ms, got[1].source, got[1].total_ms) == (2.0, "execution_log", 6.0)
    assert (got[2].total_ms, got[2].share) == (4.0, pytest.approx(0.4))
    assert got[1].share == pytest.approx(0.6)
    assert (got[3].per_call_ms, got[3].total_ms, got[3].share) == (None, None, None)
    assert (got[4].per_call_ms, got[4].source, got[4].total_ms, got[4].share) == (0.5, "find", None, None)
    summary = time_summary(times)
    assert (summary.timed, summary.layers, summary.total_ms) == (2, 4, 10.0)
    assert summary.line() == "2 of 4 layers timed; the 2 take 100% of the logged GPU time"
    doc = json.loads(render(catalog, "json"))
    time_of = {d["problem"]["n"]: d["time"] for d in doc["layers"]}
    # the best source's time, and the other sources' times beside it (``time.also``)
    assert time_of[1] == {"per_call_ms": 2.0, "source": "execution_log", "total_ms": 6.0, "share": 0.6,
                          "also": {"find": 2.0}}
    assert time_of[3] == {"per_call_ms": None, "source": None, "total_ms": None, "share": None}
    assert doc["stats"]["time"] == {"layers": 4, "timed": 2, "total_ms": 10.0, "top5_share": 1.0}
    table = render(catalog, "table")
    assert "2 of 4 layers timed" in table and "60.0%" in table and "execution_log" in table


def test_the_best_source_wins_and_is_named():
    assert per_call_time([("solver_time_ms", "3"), ("driver_kernel_ms", "9")]) == (3.0, "find")
    assert per_call_time([("solver_time_ms", "3"), ("find_db_time_ms", "2")]) == (2.0, "execution_log")
    assert per_call_time([("find_db_time_ms", "2"), ("perf_time_ms", "1.5")]) == (1.5, "perf_log")
    assert per_call_time([("driver_kernel_ms", "9")]) == (9.0, "driver")
    assert per_call_time([("solver_time_ms", "nan"), ("driver_kernel_ms", "inf")]) == (None, None)


def test_a_log_with_no_times_gives_nulls_never_zeros():
    text = (f"MIOpen(HIP): Command [LogCmdConvolution] {CONV.format(n=1)}\n" * 3
            + "MIOpen(HIP): Info2 [LoadBinary] Unable to load binary for: \"k.cl.o\"; args: -DX=1\n"
            + "MIOpen(HIP): Info2 [SaveBinary] Saving binary for: \"k.cl.o\"; args: -DX=1\n")
    doc = json.loads(render(scan(text), "json"))
    (layer,) = doc["layers"]
    assert layer["time"] == {"per_call_ms": None, "source": None, "total_ms": None, "share": None}
    startup = layer["startup"]
    assert startup["kernels_compiled"] == 1   # counted: the log says it was compiled ...
    assert startup["compile_ms"] is None and startup["tuning_ms"] is None   # ... but not how long it took
    assert doc["stats"]["startup"]["compile_ms"] is None and doc["stats"]["startup"]["timed"] is False
    assert doc["stats"]["time"] == {"layers": 1, "timed": 0, "total_ms": None, "top5_share": None}
    assert "0 of 1 layers timed (no time in the log: MIOPEN_LOG_LEVEL=5" in render(scan(text), "table")


def test_csv_shows_the_same_times_with_empty_cells_for_none():
    import csv
    catalog = scan(execution(1, "2.0") * 2 + execution(2, "-1"))
    rows = {r["n"]: r for r in csv.DictReader(io.StringIO(to_csv(catalog.most_executed())))}
    assert (rows["1"]["time_per_call_ms"], rows["1"]["time_source"], rows["1"]["time_total_ms"],
            rows["1"]["time_share"]) == ("2", "execution_log", "4", "1")
    assert (rows["2"]["time_per_call_ms"], rows["2"]["time_total_ms"], rows["2"]["compile_ms"]) == ("", "", "")


def test_performance_log_records_time_the_call_they_follow():
    record = {"solution": "GemmFwdRest", "solver_id": 91, "workspace_bytes": 0, "phase": "execution",
              "performance_configs": [{"config_name": "gemm", "time_ms": 0.25, "time_std_ms": 0.01,
                                       "time_executions_ms": [0.3, 0.25, 0.24]}]}
    text = (f"MIOpen(HIP): Command [LogCmdConvolution] {CONV.format(n=1)}\n" + json.dumps(record) + "\n"
            + '{"solution":"GemmFwdRest","solver_id":91,"performance_conf\n')
    catalog = scan(text)
    (layer,) = catalog.layers()
    assert dict(layer.annotations)["perf_time_ms"] == "0.25"
    assert layer_times([layer])[layer.id].source == "perf_log"
    (undecoded,) = catalog.undecoded()
    assert undecoded.reason.startswith("MIOPEN_PERFORMANCE_LOGS record cut short or interleaved with other output")
    tuning = read_perf_record(json.dumps(dict(record, phase="solver_tuning")))
    assert [(a.name, a.value) for a in tuning] == [("solver", "GemmFwdRest"), ("perf_phase", "solver_tuning")]


# ---------------------------------------------------------------------- the clock

@pytest.mark.parametrize("line, clock", [
    ("MIOpen(HIP)   1.628: Info [] MIOPEN_FIND_MODE = DYNAMIC_HYBRID(5)", (1.628, None)),
    ("myhost 4242 MIOpen(HIP) 350.000: Info2 [SaveBinary] x", (350.0, None)),
    ("MIOpen(HIP) (2026-11-23T20:00:00.123Z): Info [x] y", (None, 1795464000123.0)),
    ("MIOpen(HIP)   0.012 (2026-11-23T20:00:00.123Z): Info [x] y", (0.012, 1795464000123.0)),
    ("MIOpen(HIP): Info [x] y", (None, None)),
    ("no MIOpen here", (None, None)),
])
def test_the_prefix_time_fields(line, clock):
    elapsed, wall = line_clock(line)
    assert elapsed == clock[0]
    assert (wall is None) == (clock[1] is None)
    if wall is not None:   # local time, as MIOpen prints it: the same moment up to the zone offset
        assert abs(wall - clock[1]) <= 14 * 3600 * 1000 and wall % 1000 == pytest.approx(123)


FIRST_ITERATION = """\
MIOpen(HIP)   0.000: Info [GetFindModeValueImpl] MIOPEN_FIND_MODE = NORMAL(1)
MIOpen(HIP)   0.100: Command [LogCmdFindConvolution] {conv}
MIOpen(HIP)   0.050: Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0
MIOpen(HIP)   1.000: Info [TryLoad] Find-db regenerating.
MIOpen(HIP)   0.010: Info2 [LoadBinary] Loading binary for: "naive_conv.cpp.o"; args: -DX=1
MIOpen(HIP)   0.020: Info2 [LoadBinary] Unable to load binary for: "naive_conv.cpp.o"; args: -DX=1
MIOpen(HIP) 350.000: Info2 [SaveBinary] Saving binary for: "naive_conv.cpp.o"; args: -DX=1
MIOpen(HIP)   0.010: Info2 [LoadBinary] Loading binary for: "MIOpenIm2d2Col.cl.o"; args: -DY=2
MIOpen(HIP)   0.010: Info2 [LoadBinary] Successfully loaded binary for: "MIOpenIm2d2Col.cl.o"; args: -DY=2
MIOpen(HIP)   0.500: Warning [GetAllConfigs] ConvHipImplicitGemmV4R1Fwd: Searching the best solution among 120...
MIOpen(HIP) 3000.000: Warning [Monitor] 60/0/120 0.5, best within recent 60: 0.45 #12 64,64, ETA:3.0 sec.
MIOpen(HIP) 3000.000: Warning [GenericSearch] Done: 120/0/120, best #12 0.45 64,64
MIOpen(HIP)   0.300: Info [EvaluateInvokers] ConvDirectNaiveConvFwd: naive_conv_fwd: 2.5 < 3.40282e+38
MIOpen(HIP)   0.300: Info [EvaluateInvokers] ConvHipImplicitGemmV4R1Fwd: igemm: 0.45 < 2.5
MIOpen(HIP)   0.100: Info [FindConvFwdAlgorithm] FW Chosen Algorithm: ConvHipImplicitGemmV4R1Fwd , 0, 0.45
"""


def test_a_first_iteration_with_elapsed_times():
    catalog = scan(FIRST_ITERATION.format(conv=CONV.format(n=2)))
    (layer,) = catalog.layers()
    s = layer.startup
    assert (s.find_db, s.searched, s.solvers_measured, s.kernels_compiled, s.kernels_from_cache) == \
        ("miss", True, 2, 1, 1)
    assert s.compile_ms == pytest.approx(350.0) and s.tuning_ms == pytest.approx(6000.0)
    assert s.find_ms == pytest.approx(6352.25)   # requestAlgoCount .. Chosen Algorithm
    totals = catalog.startup.totals()
    assert (totals.kernels_compiled, totals.kernels_from_cache, totals.searches, totals.find_db_misses,
            totals.unattributed, totals.timed) == (1, 1, 1, 1, 0, True)
    assert dict(totals.settings) == {"MIOPEN_FIND_MODE": "NORMAL(1)"}
    assert totals.searching == ()   # the search ended
    kinds = [e.kind for e in catalog.startup.timeline()]
    assert kinds == ["find_db_miss", "kernel_compiled", "kernel_from_cache", "search_started", "search_done",
                     "find_done"]
    table = render(catalog, "table")
    assert "first iteration: 1 layer, 1 searched, 1 kernel compiled, 1 from cache, 350 ms in compiles, " \
           "6 s in tuning" in table
    assert "find-db miss, 1 compiled (350 ms), 1 cached, tuned 6 s" in table


def test_the_date_time_prefix_is_a_clock_too():
    text = ("MIOpen(HIP) (2026-11-23T20:00:00.000Z): Command [LogCmdConvolution] " + CONV.format(n=1) + "\n"
            'MIOpen(HIP) (2026-11-23T20:00:00.100Z): Info2 [LoadBinary] Unable to load binary for: "a.o"; args: \n'
            'MIOpen(HIP) (2026-11-23T20:00:02.600Z): Info2 [SaveBinary] Saving binary for: "a.o"; args: \n')
    (layer,) = scan(text).layers()
    assert layer.startup.compile_ms == pytest.approx(2500.0)


def test_a_developer_builds_compile_time_line():
    text = (f"MIOpen(HIP): Command [LogCmdConvolution] {CONV.format(n=1)}\n"
            "MIOpen(HIP): Info2 [Log] Kernel MIOpenSubTensorOpWithSubTensorKernel.cl Compile Time, ms: 341.724\n")
    (layer,) = scan(text).layers()
    assert layer.startup.compile_ms == pytest.approx(341.724)


def test_two_threads_interleaved_each_get_their_own_events():
    """MIOPEN_ENABLE_LOGGING_MPMT: thread ids before the prefix; each thread's compile spans
    its own Unable-to-load .. Saving lines, whatever the other thread logs in between."""
    a, b = "1234 5001", "1234 5002"
    text = (f"{a} MIOpen(HIP)   0.000: Command [LogCmdConvolution] {CONV.format(n=1)}\n"
            f"{b} MIOpen(HIP)   1.000: Command [LogCmdConvolution] {CONV.format(n=2)}\n"
            f'{a} MIOpen(HIP)   1.000: Info2 [LoadBinary] Unable to load binary for: "k.o"; args: -DA\n'
            f'{b} MIOpen(HIP)   2.000: Info2 [LoadBinary] Unable to load binary for: "k.o"; args: -DA\n'
            f'{b} MIOpen(HIP)  10.000: Info2 [LoadBinary] Successfully loaded binary for: "j.o"; args: \n'
            f'{a} MIOpen(HIP) 100.000: Info2 [SaveBinary] Saving binary for: "k.o"; args: -DA\n'
            f'{b} MIOpen(HIP)   5.000: Info2 [SaveBinary] Saving binary for: "k.o"; args: -DA\n'
            f'1234 5003 MIOpen(HIP)   1.000: Info2 [LoadBinary] Successfully loaded binary for: "w.o"; args: \n')
    catalog = scan(text)
    layers = by_batch(catalog)
    assert (layers[1].startup.kernels_compiled, layers[1].startup.compile_ms) == (1, pytest.approx(112.0))
    assert (layers[2].startup.kernels_compiled, layers[2].startup.kernels_from_cache,
            layers[2].startup.compile_ms) == (1, 1, pytest.approx(115.0))
    totals = catalog.startup.totals()
    assert (totals.unattributed, totals.kernels_from_cache) == (1, 2)   # thread 5003 made no call


def test_events_of_a_find_wait_for_the_layer_its_lines_name():
    """A log of level lines only: requestAlgoCount, then the compile, then the Find-Db key
    lookup that names the layer: the compile is that layer's."""
    key = "3-8-8-3x3-4-8-8-2-1x1-1x1-1x1-0-NCHW-FP32-F"
    text = ("MIOpen(HIP): Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0\n"
            'MIOpen(HIP): Info2 [SaveBinary] Saving binary for: "k.o"; args: \n'
            f"MIOpen(HIP): Info2 [FindRecordUnsafe] Looking for key {key} in file /tmp/x.ufdb.txt\n"
            "MIOpen(HIP): Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0\n"
            'MIOpen(HIP): Info2 [SaveBinary] Saving binary for: "j.o"; args: \n'
            "MIOpen(HIP): Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0\n")
    catalog = scan(text)
    (layer,) = catalog.layers()
    assert layer.finds == 1 and layer.startup.kernels_compiled == 1
    totals = catalog.startup.totals()
    assert (totals.kernels_compiled, totals.unattributed) == (2, 1)   # the second Find never named its layer
    assert catalog.unknown_finds == 2


def test_find_db_hits_are_told_only_where_the_log_would_show_a_miss():
    find = (f"MIOpen(HIP): Command [LogCmdFindConvolution] {CONV.format(n='{n}')}\n"
            "MIOpen(HIP): Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0\n"
            "MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: GemmFwdRest , 0, 0.5\n")
    banner = "MIOpen(HIP): Info [GetFindModeValueImpl] MIOPEN_FIND_MODE = DYNAMIC_HYBRID(5)\n"
    no_banner = scan(find.format(n=1) + find.format(n=2))
    assert {layer.startup.find_db for layer in no_banner.layers()} == {"unknown"}
    with_banner = by_batch(scan(banner + find.format(n=1) + find.format(n=2)))
    assert with_banner[1].startup.find_db == "hit"
    assert with_banner[2].startup.find_db == "unknown"   # the log ends inside its Find


def test_following_a_log_that_is_mid_search_shows_progress():
    catalog = Catalog()
    scanner = LogScanner(catalog, "train.log")
    lines = FIRST_ITERATION.format(conv=CONV.format(n=2)).splitlines(keepends=True)
    upto_heartbeat = next(i for i, line in enumerate(lines) if "[Monitor]" in line) + 1
    scanner.feed("".join(lines[:upto_heartbeat]).encode())
    (progress,) = catalog.startup.totals().searching
    assert (progress.solver, progress.done, progress.total, progress.eta_s, progress.best_ms) == \
        ("ConvHipImplicitGemmV4R1Fwd", 60, 120, 3.0, 0.45)
    assert progress.layer_id == 1
    scanner.feed("".join(lines[upto_heartbeat:]).encode())
    assert catalog.startup.totals().searching == ()
    scanner.finish()
    assert catalog.layers()[0].startup.tuning_ms == pytest.approx(6000.0)


def test_settings_in_force():
    text = ("MIOpen(HIP): Info [] MIOPEN_FIND_MODE = DYNAMIC_HYBRID(5)\n"
            "MIOpen(HIP): Info [IsEnabled] MIOPEN_FIND_MODE is set to NORMAL due to MIOPEN_FIND_ENFORCE\n"
            "MIOpen(HIP): miopenStatus_t miopenSetTuningPolicy(miopenHandle_t, miopenTuningPolicy_t){\n"
            "MIOpen(HIP): \thandle = 0x55d1\nMIOpen(HIP): \tnewValue = 4\nMIOpen(HIP): }\n")
    catalog = scan(text)
    assert dict(catalog.startup.totals().settings) == {
        "MIOPEN_FIND_MODE": "NORMAL (forced by MIOPEN_FIND_ENFORCE)",
        "tuning policy (miopenSetTuningPolicy)": "SearchDbUpdate(4)"}
    assert catalog.undecoded_count == 0


@pytest.mark.parametrize("func, message, kind", [
    ("LoadBinary", 'Loading binary for: "a.o"; args: ', None),
    ("LoadBinary", 'Successfully loaded binary for: "a.o"; args: ', "kernel_from_cache"),
    ("LoadBinary", 'Unable to load binary for: "a.o"; args: ', "cache_miss"),
    ("SaveBinary", 'Saving binary for: "a.o"; args: ', "saved"),
    ("GenericSearch", "ConvOclDirectFwd: Searching the best solution among 0 (spare)...", "search_started"),
    ("GenericSearch", "#3/0/120 1.69924 < 2.33082 4", "search_progress"),
    ("GenericSearch", "Done: 88/0/88, best # 39 1.01337 64,64,8,32,64,4,1,1", "search_done"),
    ("GenericSearch", "Finding average for: 1.38638 / 1.69924 = 0.815883", None),
    ("Monitor", "200/3/4096 0.0412, best within recent 57: 0.0398 #173 16,64, ETA:512.3 sec.", "search_progress"),
    ("TryLoad", "Find-db regenerating.", "find_db_miss"),
    ("EvaluateInvokers", "ConvBinWinogradRxSf2x3: winograd: 0.3 < 0.405603", "solver_measured"),
    ("EvaluateInvokers", "Selected: ConvBinWinogradRxSf2x3: winograd: 0.3, workspce_sz = 0", None),
    ("ConvolutionForward", "algo = 1, workspace = 0", None),
])
def test_each_line_form(func, message, kind):
    fact = read_startup_line(func, message)
    assert (fact.kind if fact else None) == kind


def test_real_excerpts_that_carry_startup_lines(real_log):
    """104: a Find that regenerated its Find-Db record; 207: a kernel loaded from the binary
    cache (MIOpen 3.x on Windows); 114: a Find cut short by the end of the excerpt, with the
    elapsed-time prefix."""
    c104 = scan(real_log("104").read_text())
    (layer,) = c104.layers()
    assert (layer.startup.find_db, layer.startup.searched) == ("miss", True)
    c207 = scan(real_log("207").read_text())
    assert c207.startup.totals().kernels_from_cache == 1
    c114 = scan(real_log("114").read_text())
    assert c114.startup.totals().timed
    assert {layer.startup.find_db for layer in c114.layers()} == {"unknown"}

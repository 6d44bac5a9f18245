"""``miotui decode`` of several files, one worker process per file (issue 15): the catalog,
and so every output format, is the one the serial run gives.

Each set of files is decoded both ways and compared twice: the outputs (json without its
``seconds``, table, csv, driver) and the catalog's whole state (layer snapshots with their
annotation history, source lines, files and startup facts; undecoded records with their
files; startup totals with the searches in progress; the startup timeline; the counts).
Most sets are merged in this process from pickled per-file catalogs (what a worker sends
back), so they run fast; some go through real worker processes and the CLI."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miotui import startup
from miotui.catalog import Catalog
from miotui.decode_cli import decode_main
from miotui.decode_output import render
from miotui.decoding import parallel
from miotui.decoding.parallel import decode_files, decode_one, separable, worker_count
from miotui.decoding.whole import decode_paths, source_label
from miotui.driver import parse_driver_args
from miotui.samplegen import SampleSpec, generate_text
from miotui.startup import SearchProgress

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_LOGS = sorted(str(p) for p in (ROOT / "sample_logs").glob("*.log"))
REAL_LOGS = sorted(str(p) for p in (ROOT / "tests" / "data" / "real_logs").iterdir() if p.is_file())
FORMATS = ("json", "table", "csv", "driver")

CONV = ("./bin/MIOpenDriver conv -n {n} -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 "
        "-F 1 -t 1")
#: a first iteration with elapsed times (as in test_startup): a setting, a Find-Db miss, a
#: compile, a kernel from the cache, a tuning search with its heartbeat, the chosen solver
FIRST_ITERATION = """\
MIOpen(HIP)   0.000: Info [GetFindModeValueImpl] MIOPEN_FIND_MODE = NORMAL(1)
MIOpen(HIP)   0.100: Command [LogCmdFindConvolution] {conv}
MIOpen(HIP)   0.050: Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0
MIOpen(HIP)   1.000: Info [TryLoad] Find-db regenerating.
MIOpen(HIP)   0.010: Info2 [LoadBinary] Loading binary for: "naive_conv.cpp.o"; args: -DX=1
MIOpen(HIP)   0.020: Info2 [LoadBinary] Unable to load binary for: "naive_conv.cpp.o"; args: -DX=1
MIOpen(HIP) 350.100: Info2 [SaveBinary] Saving binary for: "naive_conv.cpp.o"; args: -DX=1
MIOpen(HIP)   0.010: Info2 [LoadBinary] Loading binary for: "MIOpenIm2d2Col.cl.o"; args: -DY=2
MIOpen(HIP)   0.010: Info2 [LoadBinary] Successfully loaded binary for: "MIOpenIm2d2Col.cl.o"; args: -DY=2
MIOpen(HIP)   0.500: Warning [GetAllConfigs] ConvHipImplicitGemmV4R1Fwd: Searching the best solution among 120...
MIOpen(HIP) 3000.300: Warning [Monitor] 60/0/120 0.5, best within recent 60: 0.45 #12 64,64, ETA:3.0 sec.
MIOpen(HIP) 3000.700: Warning [GenericSearch] Done: 120/0/120, best #12 0.45 64,64
MIOpen(HIP)   0.300: Info [EvaluateInvokers] ConvDirectNaiveConvFwd: naive_conv_fwd: 2.5 < 3.40282e+38
MIOpen(HIP)   0.300: Info [EvaluateInvokers] ConvHipImplicitGemmV4R1Fwd: igemm: 0.45 < 2.5
MIOpen(HIP)   0.100: Info [FindConvFwdAlgorithm] FW Chosen Algorithm: ConvHipImplicitGemmV4R1Fwd , 0, 0.45
"""
BANNER = "MIOpen(HIP)   0.000: Info [GetFindModeValueImpl] MIOPEN_FIND_MODE = DYNAMIC_HYBRID(5)\n"
FIND = (f"MIOpen(HIP)   0.100: Command [LogCmdFindConvolution] {CONV.format(n='{n}')}\n"
        "MIOpen(HIP)   0.200: Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0\n"
        "MIOpen(HIP)   0.300: Info [FindConvFwdAlgorithm] FW Chosen Algorithm: GemmFwdRest , 0, 0.{n}\n")
#: a developer build's compile times, for one layer (sums whose float rounding depends on order)
COMPILE_TIMES = ("MIOpen(HIP): Command [LogCmdConvolution] {conv}\n"
                 "MIOpen(HIP): Info2 [Log] Kernel a.cl Compile Time, ms: {a}\n"
                 "MIOpen(HIP): Info2 [Log] Kernel b.cl Compile Time, ms: {b}\n")
#: a Find-Db key lookup, then the record it read (the record counts only where the layer is new)
LOOKUP = "MIOpen(HIP): Info [FindRecordUnsafe] Looking for key: 512-28-28-3x3-512-28-28-64-1x1-1x1-1x1-0-NCHW-FP32-W\n"
RECORD = ("MIOpen(HIP): Info [GetValues] Read record 512-28-28-3x3-512-28-28-64-1x1-1x1-1x1-0-NCHW-FP32-W="
          "ConvAsmBwdWrW3x3:3,0,8,4,4,{v}\n")
#: lines MIOpen could have written that cannot be decoded, each with its own reason
UNDECODABLE = ("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n\n"
               "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H x -W 8\n"
               "3-8-8-3x3-4-8\n"
               "MIOpen(HIP): \tconvDesc = 0x55d1\n"
               "MIOpen(HIP): miopenStatus_t miopenConvolutionForward(miopenHandle_t, ...){\n")


def outputs(catalog: Catalog) -> dict[str, str]:
    """Every format ``decode`` writes (json without the wall time it took)."""
    out = {}
    for fmt in FORMATS:
        text = render(catalog, fmt)
        if fmt == "json":
            doc = json.loads(text)
            del doc["stats"]["seconds"]
            text = json.dumps(doc, indent=1)
        out[fmt] = text
    return out


def state(catalog: Catalog) -> dict:
    """All a catalog holds that any reader sees."""
    return {"layers": catalog.layers(), "undecoded": catalog.undecoded(), "totals": catalog.startup.totals(),
            "timeline": catalog.startup.timeline(),
            "counts": (len(catalog), catalog.lines, catalog.bytes, catalog.undecoded_count, catalog.unknown_finds)}


def merged(paths: list[str]) -> Catalog:
    """What the parallel path computes, in this process: each file into a catalog of its
    own, pickled as a worker sends it, merged in path order."""
    catalog = Catalog()
    for path in paths:
        catalog.merge(pickle.loads(pickle.dumps(decode_one(path, source_label(path, paths)))))
    return catalog


def assert_same(serial: Catalog, other: Catalog) -> None:
    assert state(other) == state(serial)
    assert outputs(other) == outputs(serial)


def write(tmp_path: Path, texts: list[str], stem: str = "part") -> list[str]:
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / f"{stem}{i}.log"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    return paths


def generated(tmp_path: Path) -> list[str]:
    """Logs of the same network in several formats, batch sizes and seeds: most layers in
    more than one file; ``size`` cuts each run mid-line, so there are undecoded lines too."""
    specs = [SampleSpec(format="trace55", size=40_000, seed=1), SampleSpec(format="info", size=30_000, seed=2),
             SampleSpec(format="command", size=30_000, seed=3, batch=16),
             SampleSpec(format="trace2x", size=40_000, seed=4), SampleSpec(format="trace55", size=25_000, seed=5,
                                                                       batch=16),
             SampleSpec(format="trace2018", size=30_000, seed=6), SampleSpec(format="info", size=20_000, seed=7,
                                                                        level=5)]
    return write(tmp_path, [generate_text(spec) for spec in specs], "gen")


def startup_files(tmp_path: Path) -> list[str]:
    """Timed first iterations spread over files: a search begun in one file and ended in the
    next, a setting changed and set back, one layer's compiles and Finds in several files,
    Find-Db hits after a miss, interleaved threads."""
    lines = FIRST_ITERATION.format(conv=CONV.format(n=2)).splitlines(keepends=True)
    heartbeat = next(i for i, line in enumerate(lines) if "[Monitor]" in line)
    threads = "".join(f"1234 500{i % 2} {line}" for i, line in enumerate(lines))
    return write(tmp_path, [
        "".join(lines[:heartbeat]),
        "".join(lines[heartbeat:]) + BANNER + FIND.format(n=1) + FIND.format(n=3),
        FIRST_ITERATION.format(conv=CONV.format(n=1)) + FIND.format(n=2),
        threads,
        FIRST_ITERATION.format(conv=CONV.format(n=3)).replace("NORMAL(1)", "DYNAMIC_HYBRID(5)") + FIND.format(n=5),
        "".join(lines[:heartbeat + 1]),   # ends mid-search: still in progress
        "".join(lines[3:heartbeat]) + BANNER,
        BANNER + FIND.format(n=2) + FIND.format(n=1) + FIND.format(n=9),   # hits after the misses
        COMPILE_TIMES.format(conv=CONV.format(n=2), a="0.1", b="0.2"),
        COMPILE_TIMES.format(conv=CONV.format(n=2), a="0.2", b="0.3"),   # summed in another order, another float
    ], "timed")


def undecodable_files(tmp_path: Path) -> list[str]:
    """The same undecodable lines in each file, around calls shared by the files."""
    calls = [f"MIOpen(HIP): Command [LogCmdConvolution] {CONV.format(n=n)}\n" for n in (1, 2, 3)]
    return write(tmp_path, [calls[0] + UNDECODABLE + calls[1], UNDECODABLE * 3 + calls[2] + calls[0],
                            calls[1] + "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c",
                            UNDECODABLE + calls[2]], "bad")


# ---------------------------------------------------------------------- the merge, file sets


def test_sample_logs():
    assert len(SAMPLE_LOGS) >= 5
    assert_same(decode_paths(SAMPLE_LOGS), merged(SAMPLE_LOGS))


def test_real_logs_in_both_orders():
    assert len(REAL_LOGS) > 50
    assert_same(decode_paths(REAL_LOGS), merged(REAL_LOGS))
    backwards = REAL_LOGS[::-1]
    assert_same(decode_paths(backwards), merged(backwards))


def test_generated_logs_sharing_layers(tmp_path):
    paths = generated(tmp_path)
    serial = decode_paths(paths)
    assert serial.undecoded_count > 0 and any(len(layer.files) > 1 for layer in serial.layers())
    assert_same(serial, merged(paths))


def test_timed_logs_with_startup_facts(tmp_path):
    paths = startup_files(tmp_path)
    serial = decode_paths(paths)
    totals = serial.startup.totals()
    assert totals.timed and totals.kernels_compiled and totals.searches and totals.find_db_hits
    assert len(totals.searching) == 1   # the last search begun was never ended
    assert_same(serial, merged(paths))


def test_a_record_counted_only_for_a_new_layer(tmp_path):
    """The record a lookup read counts only where its layer is new to the catalog: in the
    second file's own catalog it is, in the serial run it is not."""
    paths = write(tmp_path, [LOOKUP + RECORD.format(v=1), RECORD.format(v=2), RECORD.format(v=1) + LOOKUP])
    serial = decode_paths(paths)
    assert [layer.mentions for layer in serial.layers()] == [2]
    assert_same(serial, merged(paths))


def test_undecoded_lines(tmp_path):
    paths = undecodable_files(tmp_path)
    serial = decode_paths(paths)
    assert serial.undecoded_count >= 15
    assert_same(serial, merged(paths))


def test_undecoded_records_past_their_cap(tmp_path, monkeypatch):
    """The kept undecoded records (the last ``UNDECODED_KEPT``) and the startup timeline's
    entries are the serial run's when the cap falls inside a file."""
    import miotui.catalog as catalog_module
    import miotui.startup as startup_module
    monkeypatch.setattr(catalog_module, "UNDECODED_KEPT", 7)
    monkeypatch.setattr(startup_module, "TIMELINE_KEPT", 5)
    paths = undecodable_files(tmp_path) + startup_files(tmp_path)
    serial = decode_paths(paths)
    assert len(serial.undecoded()) == 7 and len(serial.startup.timeline()) == 5
    assert_same(serial, merged(paths))


def test_annotation_values_past_their_cap(tmp_path):
    """A layer's Find results over several files, more distinct values than are kept."""
    chosen = ("MIOpen(HIP): Command [LogCmdFindConvolution] " + CONV.format(n=1) + "\n"
              "MIOpen(HIP): Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0\n"
              "MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: Solver{v} , 0, 0.{v}\n")
    texts = ["".join(chosen.format(v=v) for v in values)
             for values in (range(10), range(5, 25), (3, 30, 3, 7), range(12, 0, -1))]
    paths = write(tmp_path, texts, "finds")
    serial = decode_paths(paths)
    (layer,) = serial.layers()
    assert len(dict(layer.annotation_history)["solver"]) == 16
    assert_same(serial, merged(paths))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_log_cut_into_files_at_any_bytes(tmp_path_factory, data):
    """A log (real excerpts, a timed first iteration, undecodable lines) cut into files at
    arbitrary bytes: blocks, Finds and searches cut across files, one layer in every file."""
    names = data.draw(st.lists(st.sampled_from(REAL_LOGS), min_size=1, max_size=6))
    text = "".join(Path(name).read_text(encoding="utf-8", errors="replace") for name in names)
    text += FIRST_ITERATION.format(conv=CONV.format(n=2)) + UNDECODABLE + BANNER + FIND.format(n=2)
    raw = text.encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), min_size=1, max_size=4)))
    pieces = [raw[a:b] for a, b in zip([0] + cuts, cuts + [len(raw)], strict=True)]
    folder = tmp_path_factory.mktemp("cut")
    paths = []
    for i, piece in enumerate(pieces):
        path = folder / f"piece{i}.log"
        path.write_bytes(piece)
        paths.append(str(path))
    assert_same(decode_paths(paths), merged(paths))


# ---------------------------------------------------------------------- the merge, call by call

PROBLEMS = [parse_driver_args(CONV.format(n=n).split()[1:]).problems[0] for n in (1, 2, 3)]
_line = st.integers(0, 60)
_ms = st.sampled_from([None, 0.1, 0.2, 0.3, 1e16, 1.0, 2.5])
_value = st.sampled_from([str(v) for v in range(20)])
_problem = st.sampled_from(range(len(PROBLEMS)))
_op = st.one_of(
    st.tuples(st.just("sight"), _problem, st.sampled_from(["execution", "find", "mention"]),
              st.sampled_from(["api-trace", "command", "info"]), _line, st.booleans(), st.booleans(),
              st.lists(st.sampled_from(["w1", "w2", "w3"]), max_size=2),
              st.lists(st.tuples(st.sampled_from(["solver", "algo"]), _value), max_size=3), st.booleans()),
    st.tuples(st.just("annotate_new"), _problem, _line, st.sampled_from(["solver", "driver_kernel_ms"]), _value),
    st.tuples(st.just("annotate"), _problem, st.sampled_from(["solver", "algo"]), _value),
    st.tuples(st.just("again"), _problem, st.sampled_from(["execution", "find"]), _line, st.integers(1, 3)),
    st.tuples(st.just("seen"), _problem, _line),
    st.tuples(st.just("fact"), st.one_of(st.none(), _problem),
              st.sampled_from([startup.KERNEL_FROM_CACHE, startup.KERNEL_COMPILED, startup.COMPILE_TIME,
                               startup.SEARCH_STARTED, startup.SEARCH_DONE, startup.FIND_DB_HIT,
                               startup.FIND_DB_MISS, startup.SOLVER_MEASURED, startup.FIND_DONE]), _ms, _line),
    st.tuples(st.just("undecoded"), _line, st.sampled_from(["cut short", "unknown"])),
    st.tuples(st.just("set"), st.sampled_from(["MIOPEN_FIND_MODE", "policy"]), st.sampled_from(["1", "2", "3"])),
    st.tuples(st.just("progress"), st.sampled_from(["t1", "t2", "t3"]), st.one_of(st.none(), _problem),
              st.booleans()),
)


def apply_calls(catalog: Catalog, ops: list[tuple], file: str) -> None:
    """What a scanner does to its catalog, one file's worth: a call on a row it did not sight
    in this file is skipped (a scanner only counts again, annotates or attributes facts to
    rows it met itself)."""
    mine: dict[int, object] = {}
    for op in ops:
        kind, args = op[0], op[1:]
        if kind == "sight":
            p, role, source, line, only_if_new, count, warnings, annotations, raw = args
            mine[p] = catalog.add_sighting(PROBLEMS[p], role, source, line, file, warnings, annotations,
                                           (lambda line=line: [(line, f"line {line}")]) if raw else None,
                                           count=count, only_if_new=only_if_new)
        elif kind == "annotate_new":
            p, line, name, value = args
            catalog.annotate(catalog.row_for(PROBLEMS[p], line, file), name, value)
        elif kind == "undecoded":
            catalog.add_undecoded(args[0], args[1], "text", file)
        elif kind == "set":
            catalog.startup.set(*args)
        elif kind == "progress":
            thread, p, ends = args
            if ends:
                catalog.startup.progress(None, thread)
            else:
                layer = mine.get(p) if p is not None else None
                catalog.startup.progress(SearchProgress(thread, "solver", 10, layer_id=None if layer is None
                                                        else layer.index + 1), thread)
        elif kind == "fact":
            p, fact, ms, line = args
            if p is None or p in mine:
                catalog.record_startup(None if p is None else mine[p], fact, ms, line, None)
        elif args[0] in mine:
            row = mine[args[0]]
            if kind == "annotate":
                catalog.annotate(row, args[1], args[2])
            elif kind == "again":
                catalog.count_again(row, args[1], args[2], args[3])
            else:
                catalog.seen_again(row, args[1])


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.lists(_op, max_size=25), min_size=2, max_size=4))
def test_merging_equals_making_the_same_calls_on_one_catalog(parts):
    serial = Catalog()
    for i, ops in enumerate(parts):
        apply_calls(serial, ops, f"f{i}.log")
    merged_catalog = Catalog()
    for i, ops in enumerate(parts):
        part = Catalog()
        apply_calls(part, ops, f"f{i}.log")
        merged_catalog.merge(pickle.loads(pickle.dumps(part)))
    assert_same(serial, merged_catalog)


def test_a_catalog_survives_pickling(tmp_path):
    catalog = decode_one(SAMPLE_LOGS[0], "a.log")
    copy = pickle.loads(pickle.dumps(catalog))
    assert state(copy) == state(catalog)
    with copy.lock:   # a lock of its own again
        pass


# ---------------------------------------------------------------------- worker processes


@pytest.fixture
def no_fallback(monkeypatch):
    """Fail the test if the parallel path falls back to the serial one."""
    def serial(paths, catalog=None):
        raise AssertionError("fell back to the serial decode")
    monkeypatch.setattr(parallel, "decode_paths", serial)


def test_worker_processes_give_the_serial_catalog(tmp_path, no_fallback):
    paths = SAMPLE_LOGS + generated(tmp_path) + startup_files(tmp_path) + undecodable_files(tmp_path)
    assert_same(decode_paths(paths), decode_files(paths, jobs=2))   # (only parallel's decode_paths is patched)


def test_worker_processes_on_the_real_logs(no_fallback):
    assert_same(decode_paths(REAL_LOGS), decode_files(REAL_LOGS, jobs=2))


def test_how_many_workers():
    cores = os.cpu_count() or 1
    assert worker_count(["a"] * 50) == min(50, cores)
    assert worker_count(["a"] * 50, jobs=1) == 1
    assert worker_count(["a", "b"], jobs=64) == min(2, cores)
    assert worker_count(["a"]) == 1


def test_only_regular_files_are_decoded_apart(tmp_path):
    a, b = write(tmp_path, ["x\n", "y\n"])
    assert separable([a, b])
    assert not separable([a, "-"])
    assert not separable([a, str(tmp_path / "missing.log")])
    assert not separable([a, str(tmp_path)])
    assert not separable([a, "/dev/null"])


def test_stdin_among_files_is_decoded_serially(tmp_path, monkeypatch):
    a = write(tmp_path, [f"MIOpen(HIP): Command [LogCmdConvolution] {CONV.format(n=1)}\n"])[0]
    text = f"MIOpen(HIP): Command [LogCmdConvolution] {CONV.format(n=2)}\n"

    class Stdin(io.TextIOWrapper):
        def fileno(self) -> int:
            return 0

    monkeypatch.setattr(sys, "stdin", Stdin(io.BytesIO(text.encode())))
    catalog = decode_files([a, "-"], jobs=2)
    assert [layer.problem.n for layer in catalog.layers()] == [1, 2]
    assert catalog.layers()[1].files == ("-",)


class _NoProcesses:
    def __init__(self, *args, **kwargs):
        raise OSError(38, "Function not implemented")


class _DyingPool:
    """A pool whose workers all die (killed for memory, say)."""

    def __init__(self, *args, **kwargs):
        pass

    def submit(self, fn, *args):
        from concurrent.futures import Future
        future: Future = Future()
        future.set_exception(BrokenProcessPool("a worker died"))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


@pytest.mark.parametrize("pool", [_NoProcesses, _DyingPool])
def test_without_worker_processes_it_decodes_serially(monkeypatch, pool):
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", pool)
    assert_same(decode_paths(SAMPLE_LOGS), decode_files(SAMPLE_LOGS, jobs=2))


# ---------------------------------------------------------------------- the CLI


def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = decode_main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_jobs_2_prints_what_jobs_1_prints(tmp_path, capsys, fmt):
    paths = SAMPLE_LOGS[:2] + startup_files(tmp_path)[:3] + undecodable_files(tmp_path)[:2]
    one, two = (cli([*paths, "--format", fmt, "--jobs", jobs], capsys) for jobs in ("1", "2"))
    assert one[0] == two[0] == 0
    if fmt == "json":
        one, two = (outputs_json(r[1]) for r in (one, two))
    assert one == two


def outputs_json(text: str) -> dict:
    doc = json.loads(text)
    del doc["stats"]["seconds"]
    return doc


def test_the_command_line_in_a_process_of_its_own(tmp_path):
    paths = SAMPLE_LOGS[:3]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runs = [subprocess.run([sys.executable, "-m", "miotui", "decode", *paths, "--format", "json", "--jobs", jobs],
                           capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
            for jobs in ("1", "2")]
    assert [r.returncode for r in runs] == [0, 0], runs[1].stderr
    assert outputs_json(runs[0].stdout) == outputs_json(runs[1].stdout)


def test_an_unreadable_file_is_reported_as_the_serial_run_reports_it(tmp_path, capsys, monkeypatch):
    a, b = write(tmp_path, ["x\n", "y\n"])
    missing = str(tmp_path / "missing.log")
    serial = cli([a, missing, b, "--jobs", "1"], capsys)
    assert serial[0] == 2 and "cannot read" in serial[2] and serial[1] == ""
    assert cli([a, missing, b, "--jobs", "2"], capsys) == serial
    # the file gone between the check and its worker: the worker's error, the same words
    monkeypatch.setattr(parallel, "separable", lambda paths: True)
    assert cli([a, missing, b, "--jobs", "2"], capsys) == serial


def test_jobs_must_be_positive(capsys):
    with pytest.raises(SystemExit) as e:
        decode_main([SAMPLE_LOGS[0], "--jobs", "0"])
    assert e.value.code == 2 and "--jobs must be at least 1" in capsys.readouterr().err

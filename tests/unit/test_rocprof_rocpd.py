"""rocprofv3's rocpd SQLite database joined to a MIOpen log: by MIOpen's roctx ranges where the
run recorded them (and the runtime calls that tie each kernel to one), else by the order of
calls, always saying which and how much of the kernel time was attributed.

No real rocpd database was available: each test builds one here from the tables the
ROCprofiler-SDK documents (rocpd_string, rocpd_info_kernel_symbol, rocpd_timestamp,
rocpd_track, rocpd_event, rocpd_region, rocpd_kernel_dispatch; a subset of their columns),
for the 14 calls of tests/data/profiler/rocprof/miopen_step.log.  The expected times are the
kernels each test put under each call, summed here."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from miotui.decoding.parallel import decode_files
from miotui.decoding.whole import decode_paths
from miotui.formats import FORMATS
from miotui.formats.rocprof import CallOrder
from miotui.views.timing import layer_times

LOG = Path(__file__).parents[1] / "data" / "profiler" / "rocprof" / "miopen_step.log"
#: the API function MIOpen names in its roctx range for each kind of call (MIOpen's logger.hpp)
API = {("conv", "fwd"): "miopenConvolutionForward", ("conv", "bwd"): "miopenConvolutionBackwardData",
       ("conv", "wrw"): "miopenConvolutionBackwardWeights",
       ("bnorm", "fwd_train"): "miopenBatchNormalizationForwardTraining",
       ("bnorm", "bwd"): "miopenBatchNormalizationBackward", ("pool", "fwd"): "miopenPoolingForward",
       ("pool", "bwd"): "miopenPoolingBackward", ("activ", "fwd"): "miopenActivationForward",
       ("activ", "bwd"): "miopenActivationBackward"}
THREAD = (4242, 4243)


@dataclass
class Db:
    """A rocpd database written row by row, in the documented tables (times in ns)."""

    inline_times: bool = False
    strings: dict = field(default_factory=dict)
    symbols: dict = field(default_factory=dict)
    timestamps: list = field(default_factory=list)
    events: list = field(default_factory=list)
    regions: list = field(default_factory=list)
    dispatches: list = field(default_factory=list)

    def string(self, text: str) -> int:
        return self.strings.setdefault(text, len(self.strings) + 1)

    def stamp(self, ns: int) -> int:
        self.timestamps.append(ns)
        return len(self.timestamps)

    def event(self, correlation, extdata: dict) -> int:
        self.events.append((correlation, json.dumps(extdata)))
        return len(self.events)

    def region(self, name: str, start: int, end: int, correlation=None, message=None) -> None:
        event = self.event(correlation, {"message": message} if message is not None else {})
        self.regions.append((self.string(name), start, end, event))

    def kernel(self, name: str, start: int, end: int, correlation=None) -> None:
        symbol = self.symbols.setdefault(name, len(self.symbols) + 1)
        self.dispatches.append((symbol, start, end, self.event(correlation, {})))

    def write(self, path: Path) -> Path:
        db = sqlite3.connect(path)
        times = '"start" INTEGER, "end" INTEGER' if self.inline_times else "start_id INTEGER, end_id INTEGER"
        db.executescript(f"""
            CREATE TABLE rocpd_string (id INTEGER PRIMARY KEY, guid TEXT, string TEXT);
            CREATE TABLE rocpd_info_kernel_symbol (id INTEGER PRIMARY KEY, guid TEXT, kernel_name TEXT,
                                                   display_name TEXT);
            CREATE TABLE rocpd_timestamp (id INTEGER PRIMARY KEY, guid TEXT, value INTEGER);
            CREATE TABLE rocpd_track (id INTEGER PRIMARY KEY, guid TEXT, pid INTEGER, tid INTEGER);
            CREATE TABLE rocpd_event (id INTEGER PRIMARY KEY, guid TEXT, correlation_id INTEGER, extdata TEXT);
            CREATE TABLE rocpd_region (id INTEGER PRIMARY KEY, guid TEXT, track_id INTEGER, name_id INTEGER,
                                       {times}, event_id INTEGER);
            CREATE TABLE rocpd_kernel_dispatch (id INTEGER PRIMARY KEY, guid TEXT, track_id INTEGER,
                                                kernel_id INTEGER, dispatch_id INTEGER, {times}, event_id INTEGER);
        """)
        g = "guid-1"
        db.executemany("INSERT INTO rocpd_string VALUES (?, ?, ?)", [(i, g, s) for s, i in self.strings.items()])
        db.executemany("INSERT INTO rocpd_info_kernel_symbol VALUES (?, ?, ?, ?)",
                       [(i, g, f"_Z{len(n)}{n}v", n) for n, i in self.symbols.items()])
        db.execute("INSERT INTO rocpd_track VALUES (1, ?, ?, ?)", (g, *THREAD))
        db.executemany("INSERT INTO rocpd_event VALUES (?, ?, ?, ?)",
                       [(i, g, c, x) for i, (c, x) in enumerate(self.events, 1)])
        for table, rows in (("rocpd_region", self.regions), ("rocpd_kernel_dispatch", self.dispatches)):
            for i, (ref, start, end, event) in enumerate(rows, 1):
                t0, t1 = (start, end) if self.inline_times else (self.stamp(start), self.stamp(end))
                if table == "rocpd_region":
                    db.execute("INSERT INTO rocpd_region VALUES (?, ?, 1, ?, ?, ?, ?)", (i, g, ref, t0, t1, event))
                else:
                    db.execute("INSERT INTO rocpd_kernel_dispatch VALUES (?, ?, 1, ?, ?, ?, ?, ?)",
                               (i, g, ref, i, t0, t1, event))
        db.executemany("INSERT INTO rocpd_timestamp VALUES (?, ?, ?)",
                       [(i, g, v) for i, v in enumerate(self.timestamps, 1)])
        db.commit()
        db.close()
        return path


def log_calls() -> list:
    catalog = CallOrder()
    decode_paths([str(LOG)], catalog)
    return catalog.calls


def a_step(db: Db, calls: list, ranges: bool = True, launches: bool = True) -> dict:
    """Each call as MIOpen and the runtime record it: a range naming its API call, holding one
    launch per kernel, each kernel 10 µs x (call's place + kernel's place); a Find with two
    kernels first, a framework kernel launched outside MIOpen, a kernel with no launch record.
    Returns problem -> [ms of each call's kernels]."""
    expected: dict = {}
    t, correlation = 1_000_000, 0

    def launch_kernel(name: str, ns: int) -> None:
        nonlocal t, correlation
        correlation += 1
        if launches:
            db.region("hipLaunchKernel", t + 100, t + 200, correlation)
        db.kernel(name, t + 10_000, t + 10_000 + ns, correlation)
        t += 1_000

    db.region("miopenFindConvolutionForwardAlgorithm", t, t + 50_000,
              message="s_api = miopenFindConvolutionForwardAlgorithm | handle = 0x1 | ") if ranges else None
    for ns in (70_000, 80_000):
        launch_kernel("igemm_fwd_gtcx_nchw_fp32", ns)
    t += 100_000
    for i, problem in enumerate(calls):
        start = t
        kernels = [10_000 * (i + 1) * (j + 1) for j in range(1 + i % 3)]
        for j, ns in enumerate(kernels):
            launch_kernel(f"MIOpen_kernel_{i}_{j}", ns)
        if ranges:
            db.region("roctxRangePush", start, t, message=f"s_api = {API[(problem.op, problem.direction)]} | x = 1 | ")
        expected.setdefault(problem, []).append(sum(kernels) / 1e6)
        t += 1_000
    launch_kernel("void at::native::elementwise_kernel<128, 4>", 5_000)     # PyTorch's own: under no range
    db.kernel("MIOpenBatchNormFwdTrainSpatial", t + 50_000, t + 53_000, None)   # no launch record
    return expected


def joined(tmp_path: Path, db: Db) -> object:
    return decode_files([str(LOG), str(db.write(tmp_path / "1234_results.db"))])


def test_each_call_gets_the_kernels_launched_in_its_roctx_range(tmp_path):
    db = Db()
    expected = a_step(db, log_calls())
    catalog = joined(tmp_path, db)
    times = layer_times(catalog.layers())
    assert len(catalog.layers()) == len(expected) == 11
    for layer in catalog.layers():
        ms = expected[layer.problem]
        assert times[layer.id].source == "rocprof", layer.problem
        assert times[layer.id].per_call_ms == pytest.approx(sum(ms) / len(ms))
        assert "joined by MIOpen's roctx ranges" in layer.annotation("rocprof_kernels")
    # the backward convolutions the order join could not split (tests/unit/test_torch_profiler_rocprof.py) are timed
    assert {(s.problem.direction, s.problem.c) for s in catalog.layers() if s.problem.op == "conv"
            and times[s.id].source == "rocprof"} >= {("bwd", 64), ("wrw", 64)}
    total = (70 + 80) / 1000 + sum(sum(v) for v in expected.values()) + 0.005 + 0.003
    attributed = sum(sum(v) for v in expected.values())
    kt = catalog.kernel_time["rocprof"]
    assert kt.total_ms == pytest.approx(total) and kt.attributed_ms == pytest.approx(attributed)
    line = catalog.joined[0]
    assert f"rocprofv3: {100 * attributed / total:.0f}% of {total:.3g} ms in " in line
    assert "attributed to 14 logged calls by MIOpen's roctx ranges" in line
    assert "0.15 ms under MIOpen calls that run no layer (Finds), 0.005 ms under no MIOpen range, " \
           "0.003 ms without a launch record" in line
    assert not catalog.undecoded()


def test_older_schema_with_start_and_end_columns_reads_the_same(tmp_path):
    a, b = Db(), Db(inline_times=True)
    a_step(a, log_calls())
    a_step(b, log_calls())
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one, other = joined(tmp_path / "a", a), joined(tmp_path / "b", b)
    assert [(s.problem, s.annotations) for s in one.layers()] == [(s.problem, s.annotations) for s in other.layers()]


def test_where_a_range_names_another_call_the_join_stops_and_says_where(tmp_path):
    calls = log_calls()
    db = Db()
    a_step(db, [calls[0], calls[2], *calls[2:]])     # the second range is an activation, the log's a bnorm
    catalog = joined(tmp_path, db)
    timed = {s.problem for s in catalog.layers() if s.annotation("rocprof_time_ms")}
    assert timed == {calls[0]}
    assert "the log and the ranges part at call 2: the log's is bnorm fwd_train, the range's activ fwd; " \
           "nothing after is attributed" in catalog.joined[0]


def test_without_ranges_the_order_of_calls_is_used_and_it_says_why(tmp_path):
    db = Db()
    a_step(db, log_calls(), ranges=False)
    catalog = joined(tmp_path, db)
    line = catalog.joined[0]
    assert "attributed to 14 logged calls by their order" in line
    assert line.endswith("joined by the order of calls: no MIOpen roctx ranges in it "
                         "(MIOPEN_ENABLE_LOGGING_ROCTX=1 and rocprofv3 --marker-trace record them)")


def test_ranges_without_launch_records_fall_back_to_the_order_and_say_so(tmp_path):
    db = Db()
    a_step(db, log_calls(), launches=False)
    line = joined(tmp_path, db).joined[0]
    assert "by their order" in line and "rocprofv3 --hip-trace records them" in line


def test_the_database_is_told_by_content_and_alone_needs_its_log(tmp_path):
    db = Db()
    a_step(db, log_calls())
    path = db.write(tmp_path / "results.db")
    assert FORMATS.claimed(path.read_bytes()[:256 * 1024]).name == "rocprof"
    catalog = decode_files([str(path)])
    assert len(catalog) == 0 and "names no layers" in catalog.undecoded()[0].reason


def test_a_bad_row_is_listed_and_a_database_without_kernels_is_not_joined(tmp_path):
    db = Db(inline_times=True)
    expected = a_step(db, log_calls())
    symbol, start, _end, event = db.dispatches[-1]
    db.dispatches[-1] = (symbol, start, start - 1, event)        # the unlaunched kernel ends before it starts
    catalog = joined(tmp_path, db)
    assert [u.reason for u in catalog.undecoded()] == [
        f"rocpd_kernel_dispatch id {len(db.dispatches)}: no integer start and end in order"]
    assert catalog.kernel_time["rocprof"].attributed_ms == pytest.approx(sum(sum(v) for v in expected.values()))
    empty = tmp_path / "empty.db"
    con = sqlite3.connect(empty)
    con.execute("CREATE TABLE rocpd_string (id INTEGER PRIMARY KEY, string TEXT)")
    con.commit()
    con.close()
    catalog = decode_files([str(LOG), str(empty)])
    assert [u.reason for u in catalog.undecoded()] == [
        "rocprofv3 kernel trace: not a rocpd database with a kernel trace: no rocpd_kernel_dispatch (record with "
        "rocprofv3 --kernel-trace)"]
    assert not catalog.kernel_time


def test_hostile_rows_are_read_as_what_they_are_never_a_crash(tmp_path):
    from miotui.formats.rocprof.rocpd import NAME_CHARS, read_rocpd
    db = Db(inline_times=True)
    db.region("roctxRangePush", 1, 2, message="s_api = miopenConvolutionForward | " + "x" * 100_000)
    db.region("hipLaunchKernel", 1, 2, correlation="seven")
    db.kernel("k" * 100_000, 10, 20, correlation=1.5)
    db.write(tmp_path / "h.db")
    con = sqlite3.connect(tmp_path / "h.db")
    con.execute("INSERT INTO rocpd_event VALUES (99, 'g', 3, '{\"message\": 5}')")
    con.execute("INSERT INTO rocpd_event VALUES (98, 'g', 4, '\"message\" {not json')")
    con.execute("INSERT INTO rocpd_region VALUES (9, 'g', 1, 1, 5, 6, 99)")
    con.execute("INSERT INTO rocpd_region VALUES (8, 'g', 1, 1, 7, 8, 98)")
    con.execute("INSERT INTO rocpd_region VALUES (7, 'g', 1, 1, 'late', 8, 98)")
    con.commit()
    con.close()
    problems: list = []
    trace = read_rocpd(str(tmp_path / "h.db"), problems)
    assert [r.marker for r in trace.regions] == [True, False, False, False]
    assert len(trace.regions[0].name) == NAME_CHARS and trace.regions[1].correlation is None
    assert [(d.correlation, len(d.name)) for d in trace.dispatches] == [(None, NAME_CHARS)]
    assert problems == [(3, "rocpd_region id 7: no integer start and end in order")]

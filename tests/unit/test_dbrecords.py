"""Find-Db / Perf-Db text records (docs/formats.md §6.2) -> one sighting per record."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui.events import Sighting, Undecoded
from miotui.formats.miopen.dbrecords import (
    algorithm_direction,
    algorithm_number,
    decode_db_record,
    parse_db_item,
    parse_db_items,
)

HERE = Path(__file__).parents[1]
MITUNA = HERE / "data" / "mituna"


def _real_logs() -> Path:
    for cand in (HERE / "data" / "real_logs",):
        if cand.is_dir():
            return cand
    pytest.skip("real_logs not available")


def _real(prefix: str) -> str:
    d = _real_logs()
    (path,) = d.glob(prefix + "_*")
    return path.read_text()


def _ann(s: Sighting, name: str) -> list[str]:
    return [v for k, v in s.annotations if k == name]


# ---------------------------------------------------------------- the three Find-Db formats and Perf-Db

def test_v2_user_find_db_record():
    line = ("320-152-104-3x3-4-152-104-2-1x1-1x1-1x1-0-NCHW-FP16-F=ConvWinoFuryRxS<2-3>:0.343429,0,"
            "miopenConvolutionFwdAlgoWinograd;GemmFwdRest:5.31349,91054080,miopenConvolutionFwdAlgoGEMM")
    (s,) = decode_db_record(line)
    assert isinstance(s, Sighting)
    assert (s.role, s.source) == ("mention", "find-db")
    assert (s.problem.c, s.problem.k, s.problem.n, s.problem.dtype) == (320, 4, 2, "fp16")
    assert _ann(s, "find_result") == ["ConvWinoFuryRxS<2-3> 0.343429 ms ws=0", "GemmFwdRest 5.31349 ms ws=91054080"]
    assert _ann(s, "solver") == ["ConvWinoFuryRxS<2-3>"] and _ann(s, "solver_time_ms") == ["0.343429"]


def test_v1_system_find_db_record_picks_the_fastest():
    line = ("1-1-1-4x4-512-4-4-128-0x0-1x1-1x1-0-NCHW-FP32-B=miopenConvolutionBwdDataAlgoImplicitGEMM:"
            "ConvMlirIgemmBwd,0.017439,0,miopenConvolutionBwdDataAlgoImplicitGEMM,<unused>;"
            "miopenConvolutionBwdDataAlgoWinograd:ConvBinWinogradRxSf2x3g1,0.01024,0,"
            "miopenConvolutionBwdDataAlgoWinograd,<unused>")
    (s,) = decode_db_record(line)
    assert s.problem.direction == "bwd"
    assert _ann(s, "solver") == ["ConvBinWinogradRxSf2x3g1"] and _ann(s, "solver_time_ms") == ["0.01024"]
    assert any("transposed" in w for w in s.warnings)  # B key: could be a transposed forward


def test_v0_find_db_record_2019():
    line = ("32-32-32-3x3-32-30-30-100-0x0-1x1-1x1-0-NCHW-FP32-F=miopenConvolutionFwdAlgoWinograd:"
            "ConvBinWinogradRxS,0.12496,0,32x32x32x3x3x32x30x30x100xNCHWxFP32x0x0x1x1x1x1x1x1;"
            "miopenConvolutionFwdAlgoGEMM:gemm,3.024,1036800,0_0_900_288_900_900_32_288")
    (s,) = decode_db_record(line)
    assert _ann(s, "find_result") == ["ConvBinWinogradRxS 0.12496 ms ws=0", "gemm 3.024 ms ws=1036800"]
    assert _ann(s, "solver") == ["ConvBinWinogradRxS"]


def test_perf_db_record():
    line = ("192-28-28-1x1-16-28-28-32-0x0-1x1-1x1-0-NCHW-FP32-F=ConvOclDirectFwd1x1:1,64,1,1,1,1,64,64,0;"
            "ConvAsm1x1U:2,16,2,64,1,3")
    (s,) = decode_db_record(line)
    assert s.source == "perf-db"
    assert _ann(s, "perf_config") == ["ConvOclDirectFwd1x1:1,64,1,1,1,1,64,64,0", "ConvAsm1x1U:2,16,2,64,1,3"]
    assert _ann(s, "solver") == []  # tuned parameters, not a choice


def test_items_and_algorithm_names():
    assert parse_db_item("ConvBinWinograd3x3U:0.0512,0,miopenConvolutionFwdAlgoWinograd").kind == "find"
    assert parse_db_item("ConvAsm1x1U:2,16,2,64,1,3").kind == "perf"
    with pytest.raises(ValueError):
        parse_db_item("miopenConvolutionFwdAlgoGEMM:gemm,3.0")
    items, warnings = parse_db_items("ConvA:1,0,miopenConvolutionFwdAlgoGEMM;ConvA:2,0,miopenConvolutionFwdAlgoGEMM;"
                                     "miopenConvolutionBwdWeightsAl")
    assert len(items) == 1          # duplicate ids are ignored, as MIOpen does
    assert len(warnings) == 1 and "cut" in warnings[0]
    assert algorithm_number("miopenConvolutionFwdAlgoWinograd") == 3
    assert algorithm_number("miopenTransposeBwdDataAlgoGEMM") == 4
    assert algorithm_number("miopenConvolutionBwdWeightsAlgoImplicitGEMM") == 5
    assert algorithm_direction("miopenConvolutionBwdWeightsAlgoGEMM") == "wrw"
    assert algorithm_number("GemmFwdRest") is None


# ---------------------------------------------------------------- rejecting and failing

@pytest.mark.parametrize("line", [
    "", "   ", "MIOpen(HIP): Info [X] y", "hello=world", "384-152-104-3x3-384-76",
    "1=2", "2024-01-02 12:00:00 x=1", "12-34=5",
])
def test_non_records_are_rejected_with_none(line):
    assert decode_db_record(line) is None


def test_bad_records_become_undecoded():
    (u,) = decode_db_record("192-28-28-5x5-32-99-99-16-1x1-1x1-1x1-0-NCHW-FP32-F=ConvA:1,0,miopenConvolutionFwdAlgoGEMM")
    assert isinstance(u, Undecoded) and "output size" in u.reason
    (u,) = decode_db_record("192-28-28-5x5-32-26-26-16-1x1-1x1-1x1-0-NCHW-FP32-F=")
    assert isinstance(u, Undecoded)


def test_cut_record_keeps_the_readable_items():
    (s,) = decode_db_record("1-19-19-1x1-64-19-19-1024-0x0-1x1-1x1-0-NCHW-FP32-W=miopenConvolutionBwdWeightsAlgoDirect:"
                            "ConvOclBwdWrW53,0.29008,262144,miopenConvolutionBwdWeightsAlgoDirect,not used;"
                            "miopenConvolutionBwdWeightsAl")
    assert len(_ann(s, "find_result")) == 1 and any("cut" in w for w in s.warnings)


# ---------------------------------------------------------------- real files

def test_real_perf_db_53():
    lines = [ln for ln in _real("53").splitlines() if ln.strip()]
    events = [e for ln in lines for e in decode_db_record(ln)]
    assert all(isinstance(e, Sighting) and e.source == "perf-db" for e in events)
    assert len(events) == 10                                           # README: 10 records
    assert sum(e.problem.direction == "fwd" for e in events) == 5      # 5 F, 5 B
    assert sum(len(_ann(e, "perf_config")) for e in events) == 14      # 14 solver entries


def test_real_user_find_db_55():
    results = [decode_db_record(ln) for ln in _real("55").splitlines() if ln.strip()]
    sightings = [r[0] for r in results if r]
    assert results[-1] is None                                           # the cut key
    assert len(sightings) == 3
    assert sum(len(_ann(s, "find_result")) for s in sightings) == 16     # README: 16 entries
    assert [_ann(s, "solver")[0] for s in sightings] == ["ConvWinoFuryRxS<2-3>", "ConvBinWinogradRxSf2x3g1",
                                                          "ConvBinWinogradRxSf2x3g1"]


@pytest.mark.parametrize("name", ["test_files_old_gfx90a68.HIP.fdb.txt", "test_files_usr_gfx90a68.HIP.fdb.txt"])
def test_mituna_find_dbs_with_not_used_spelling(name):
    path = MITUNA / name
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    for line in lines:
        (s,) = decode_db_record(line)
        assert isinstance(s, Sighting) and s.source == "find-db", line[:80]
        assert _ann(s, "solver") and _ann(s, "find_result")
        times = [float(v.split()[1]) for v in _ann(s, "find_result")]
        assert float(_ann(s, "solver_time_ms")[0]) == min(times)


# ---------------------------------------------------------------- properties

solver = st.from_regex(r"[A-Z][A-Za-z0-9]{2,20}", fullmatch=True)
times = st.floats(0.001, 5000, allow_nan=False).map(lambda t: float(format(t, ".6g")))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(solver, times, st.integers(0, 10**9)), min_size=1, max_size=8, unique_by=lambda t: t[0]),
       st.sampled_from(["v1", "v2"]))
def test_record_annotations_match_what_was_written(entries, fmt):
    algos = ["miopenConvolutionFwdAlgoGEMM", "miopenConvolutionFwdAlgoDirect", "miopenConvolutionFwdAlgoWinograd",
             "miopenConvolutionFwdAlgoImplicitGEMM", "miopenConvolutionFwdAlgoFFT"]
    if fmt == "v1":
        entries = entries[:len(algos)]  # v1 holds one item per algorithm
        items = [f"{algos[i]}:{s},{format(t, 'g')},{w},{algos[i]},<unused>" for i, (s, t, w) in enumerate(entries)]
    else:
        items = [f"{s}:{format(t, 'g')},{w},{algos[i % len(algos)]}" for i, (s, t, w) in enumerate(entries)]
    line = "64-56-56-3x3-64-56-56-8-1x1-1x1-1x1-0-NCHW-FP32-F=" + ";".join(items)
    (s,) = decode_db_record(line)
    assert _ann(s, "find_result") == [f"{n} {format(t, 'g')} ms ws={w}" for n, t, w in entries]
    best = min(entries, key=lambda e: e[1])
    assert float(_ann(s, "solver_time_ms")[0]) == best[1]
    assert _ann(s, "solver")[0] in [n for n, t, _ in entries if t == best[1]]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=120))
def test_arbitrary_text_never_raises(text):
    out = decode_db_record(text)
    assert out is None or isinstance(out, list)


def test_sqlite_perf_db_dump_rows_are_layers():
    """MIOpen 2.x kept user perf-dbs in SQLite; a `sqlite3 .dump` pasted into a report has one
    config row per problem, in the column order of its CREATE TABLE line."""
    from miotui.formats.miopen.dbrecords import SqlConfigReader
    r = SqlConfigReader()
    assert r.feed("CREATE TABLE `config` (`id` INTEGER PRIMARY KEY ASC,`layout` TEXT NOT NULL,`data_type` TEXT "
                  "NOT NULL,`direction` TEXT NOT NULL,`spatial_dim` INT NOT NULL,`in_channels` INT NOT NULL,`in_h` "
                  "INT NOT NULL,`in_w` INT NOT NULL,`in_d` INT NOT NULL,`fil_h` INT NOT NULL,`fil_w` INT NOT NULL,"
                  "`fil_d` INT NOT NULL,`out_channels` INT NOT NULL,`batchsize` INT NOT NULL,`pad_h` INT NOT NULL,"
                  "`pad_w` INT NOT NULL,`pad_d` INT NOT NULL,`conv_stride_h` INT NOT NULL,`conv_stride_w` INT NOT "
                  "NULL,`conv_stride_d` INT NOT NULL,`dilation_h` INT NOT NULL,`dilation_w` INT NOT NULL,"
                  "`dilation_d` INT NOT NULL,`bias` INT NOT NULL,`group_count` INT NOT NULL);") == []
    (s,) = r.feed("INSERT INTO \"config\" VALUES(2,'NCHW','FP32','F',2,64,56,56,1,3,3,1,64,64,1,1,0,1,1,0,1,1,0,0,1);")
    p = s.problem
    assert (s.role, s.source, p.direction, p.n, p.c, p.k, p.in_spatial, p.filter, p.pads) == \
        ("mention", "perf-db", "fwd", 64, 64, 64, (56, 56), (3, 3), (1, 1))
    (b,) = r.feed("INSERT INTO \"config\" VALUES(3,'NCHW','FP16','B',2,256,28,28,1,1,1,1,128,8,0,0,0,2,2,0,1,1,0,0,1);")
    assert (b.problem.direction, b.problem.c, b.problem.k, b.problem.in_spatial) == ("bwd", 128, 256, (55, 55))
    assert b.warnings and "dy's size" in b.warnings[0]
    (u,) = r.feed("INSERT INTO \"config\" VALUES(4,'NCHW');")
    assert isinstance(u, Undecoded)
    assert r.feed("INSERT INTO \"other\" VALUES(1);") is None

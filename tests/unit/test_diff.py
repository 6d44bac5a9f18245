"""``miotui diff``: two runs paired layer by layer (miotui.diff), from real shapes: the bundled
ResNet-50 log (its layers and times as MIOpen logged them), copies of it with one layer's
solver and time changed, a real log of other layers, and the generator's ResNet-50 at two
batches."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from diff_support import DEMO, SLOW, with_one_layer_changed

from miotui.cli import main
from miotui.diff import compare, layer_key
from miotui.diff_cli import load_comparison
from miotui.diff_output import write_csv, write_json, write_table

ROOT = Path(__file__).resolve().parents[2]
#: a real log of layers the ResNet-50 does not have (3 directions of one convolution)
OTHER = ROOT / "tests" / "data" / "real_logs" / "00_miopen-wiki-2018-api-trace-conv-3dirs.log"
#: a real log whose device line names MIOpen 3.4.1 and HIP 6.4
VERSIONED = ROOT / "tests" / "data" / "real_logs" / "207_rocm5441-2025-windows-info2-find-invoker-exec-conv.log"


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_log_against_itself_is_all_same(capsys):
    code, out, _ = _run(["diff", str(DEMO), str(DEMO), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"old", "new", "pairs"}
    assert set(doc["old"]) == {"paths", "layers", "stats"} and doc["old"]["paths"] == [str(DEMO)]
    assert doc["old"]["layers"] == doc["new"]["layers"] == len(doc["pairs"]) == 120
    for pair in doc["pairs"]:
        assert set(pair) == {"status", "old", "new", "delta_total_ms", "ratio_per_call", "changes"}
        assert pair["status"] == "same" and pair["changes"] == []
        assert pair["old"] == pair["new"]
        if pair["old"]["time"]["total_ms"] is not None:
            assert pair["delta_total_ms"] == 0.0 and pair["ratio_per_call"] == 1.0
    # the sides' layers are decode's JSON of the same log, layer for layer
    code, decoded, _ = _run(["decode", str(DEMO), "--format", "json"], capsys)
    by_id = {layer["id"]: layer for layer in json.loads(decoded)["layers"]}
    assert all(pair["new"] == by_id[pair["new"]["id"]] for pair in doc["pairs"])
    assert doc["new"]["stats"] == {**json.loads(decoded)["stats"], "seconds": doc["new"]["stats"]["seconds"]}


def test_a_changed_solver_and_time_rank_first_and_are_named(tmp_path, capsys):
    slower, t, old_ms = with_one_layer_changed(tmp_path)
    comparison = load_comparison([str(DEMO)], [str(slower)], ignore_batch=False, jobs=1)
    first = comparison.pairs[0]
    assert first.status == "changed"
    assert [p.status for p in comparison.pairs].count("changed") == 1
    assert first.old is not None and first.new is not None
    assert first.old.solver == "GemmFwd1x1_0_1" and first.new.solver == SLOW
    assert f"solver GemmFwd1x1_0_1 -> {SLOW}" in first.changes
    per_call = [c for c in first.changes if c.startswith("per call")]
    assert per_call and per_call[0].endswith("(x10.0)"), first.changes
    assert first.ratio_per_call == pytest.approx(10.0, rel=1e-5)
    assert first.delta_total_ms == pytest.approx(9 * old_ms * first.old.layer.executions, rel=1e-5)
    # the table and CSV say the same, in the same order
    buf = io.StringIO()
    write_table(buf, comparison)
    table = buf.getvalue()
    assert "1 changed, 0 added, 0 removed, 119 same" in table
    row1 = [ln for ln in table.splitlines() if re.match(r"\s+1\s", ln)][0]
    assert "changed" in row1 and f"GemmFwd1x1_0_1 -> {SLOW}" in row1 and "x10.0" in row1
    buf = io.StringIO()
    write_csv(buf, comparison)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert rows[0]["status"] == "changed" and rows[0]["new_solver"] == SLOW
    assert rows[0]["old_time_source"] == rows[0]["new_time_source"] == "execution_log"
    assert float(rows[0]["ratio_per_call"]) == pytest.approx(10.0, rel=1e-5)


def test_layers_added_and_removed(tmp_path, capsys):
    """The new run has the demo's layers and a real log's; listed as added (after the
    changed ones, before the same), and as removed the other way round."""
    code, out, _ = _run(["diff", "--old", str(DEMO), "--new", str(DEMO), str(OTHER), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    statuses = [p["status"] for p in doc["pairs"]]
    from miotui.decoding.whole import decode_paths
    demo_keys = {layer_key(s.problem) for s in decode_paths([str(DEMO)]).layers()}
    other = [s for s in decode_paths([str(OTHER)]).layers() if layer_key(s.problem) not in demo_keys]
    assert other and statuses.count("added") == len(other)
    assert statuses.count("removed") == 0
    assert statuses == sorted(statuses, key=["changed", "added", "removed", "same"].index)
    added = [p for p in doc["pairs"] if p["status"] == "added"]
    assert all(p["old"] is None and p["new"] is not None and p["changes"][0].startswith("only in new")
               for p in added)
    code, out, _ = _run(["diff", "--old", str(DEMO), str(OTHER), "--new", str(DEMO), "--format", "json"], capsys)
    doc = json.loads(out)
    removed = [p for p in doc["pairs"] if p["status"] == "removed"]
    assert len(removed) == len(other) and all(p["new"] is None for p in removed)
    assert doc["old"]["paths"] == [str(DEMO), str(OTHER)]


def test_ignore_batch_matches_the_same_model_at_two_batches(tmp_path):
    from miotui.samplegen.generator import write_log
    from miotui.samplegen.spec import SampleSpec
    logs = {}
    for batch in (32, 16):
        path = tmp_path / f"b{batch}.log.gz"
        write_log(SampleSpec(format="info", iterations=1, batch=batch, startup=True), str(path))
        logs[batch] = str(path)
    strict = load_comparison([logs[32]], [logs[16]], ignore_batch=False, jobs=1)
    assert strict.count("same") == strict.count("changed") == 0
    assert strict.count("added") == strict.count("removed") == len(strict.old.layers)
    loose = load_comparison([logs[32]], [logs[16]], ignore_batch=True, jobs=1)
    assert loose.count("added") == loose.count("removed") == 0
    assert len(loose.pairs) == len(loose.old.layers) == len(loose.new.layers)
    convs = 0
    for pair in loose.pairs:
        assert pair.changes[0] == "batch 32 -> 16"
        assert pair.old is not None and pair.new is not None
        assert pair.old.layer.problem.op == pair.new.layer.problem.op
        convs += pair.new.layer.problem.op == "conv"
    assert convs > 40


def test_write_json_equals_the_written_file(tmp_path, capsys):
    """``-o FILE`` holds what stdout gets."""
    code, out, _ = _run(["diff", str(DEMO), str(OTHER), "--format", "json"], capsys)
    target = tmp_path / "d.json"
    code2, out2, _ = _run(["diff", str(DEMO), str(OTHER), "--format", "json", "-o", str(target)], capsys)
    assert code == code2 == 0 and out2 == ""
    a, b = json.loads(out), json.loads(target.read_text())
    for doc in (a, b):
        for side in ("old", "new"):
            doc[side]["stats"]["seconds"] = 0
    assert a == b


def test_bad_arguments_and_unreadable_paths_exit_2(tmp_path, capsys):
    code, _, err = _run(["diff", str(DEMO), str(tmp_path / "missing.log")], capsys)
    assert code == 2 and "cannot read" in err and "missing.log" in err
    with pytest.raises(SystemExit) as e:
        main(["diff", str(DEMO)])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        main(["diff", str(DEMO), str(DEMO), "--top", "3"])


def test_pack_writes_commands_for_each_sides_version_and_a_runnable_torch_script(tmp_path, capsys):
    slower, _t, _ms = with_one_layer_changed(tmp_path)
    # the old run names MIOpen 3.4.1 in its device line (a real one)
    versioned = tmp_path / "old.log"
    device = [ln for ln in VERSIONED.read_text(errors="replace").splitlines() if "MIOpen version" in ln]
    versioned.write_text(DEMO.read_text() + device[0] + "\n")
    pack = tmp_path / "pack"
    code, _, err = _run(["diff", str(versioned), str(slower), "--pack", str(pack), "--top", "3"], capsys)
    assert code == 0 and "repro pack" in err
    report = (pack / "README.md").read_text()
    assert "MIOpen 3.4.1" in report and "HIP 6.4.50101" in report and "MIOPEN_FIND_MODE = NORMAL(1)" in report
    assert f"solver GemmFwd1x1_0_1 -> {SLOW}" in report
    folders = sorted(p for p in pack.iterdir() if p.is_dir())
    assert len(folders) == 1 and folders[0].name.startswith("01-conv-fwd-layer")
    old_sh = (folders[0] / "driver_old.sh").read_text()
    new_sh = (folders[0] / "driver_new.sh").read_text()
    assert "for MIOpenDriver 3.4.1" in old_sh and "today's MIOpenDriver" in new_sh
    # the command runs on the (fake) driver and is the layer's
    fake = ROOT / "tests" / "fake_miopendriver.py"
    shutil.copy(fake, tmp_path / "MIOpenDriver")
    (tmp_path / "MIOpenDriver").chmod(0o755)
    run = subprocess.run(["bash", str(folders[0] / "driver_new.sh")], capture_output=True, text=True, timeout=60,
                         env={"MIOPEN_DRIVER": str(tmp_path / "MIOpenDriver"),
                              "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    script = folders[0] / "repro.py"
    run = subprocess.run([sys.executable, str(script), "1"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert re.search(r"cpu .*: [0-9.e+-]+ ms per call over 1 calls", run.stdout)


def test_json_pairs_follow_the_table_order(tmp_path):
    slower, _t, _ms = with_one_layer_changed(tmp_path)
    comparison = load_comparison([str(DEMO)], [str(slower)], ignore_batch=False, jobs=1)
    buf = io.StringIO()
    write_json(buf, comparison)
    doc = json.loads(buf.getvalue())
    assert [p["status"] for p in doc["pairs"]] == [p.status for p in comparison.pairs]
    assert [p["new"]["id"] for p in doc["pairs"]] == [p.new.layer.id for p in comparison.pairs]
    # compare() of the same sides twice gives the same ranking
    again = compare(comparison.old, comparison.new)
    assert [p.changes for p in again.pairs] == [p.changes for p in comparison.pairs]


CUDNN_RESNET50 = ROOT / "tests" / "data" / "cudnn" / "h100" / "cudnn_resnet50.log.xz"


def test_a_cudnn_resnet50_pairs_every_convolution_of_the_miopen_one(tmp_path):
    """The bundled MIOpen ResNet-50 (batch 32) against PyTorch's cuDNN log of the same model on
    an H100 (batch 16): every convolution (and batch norm) on both sides pairs with
    --ignore-batch; what is left is what PyTorch runs without cuDNN (pooling, ReLU)."""
    import lzma
    cudnn_log = tmp_path / "cudnn_resnet50.log"
    cudnn_log.write_bytes(lzma.decompress(CUDNN_RESNET50.read_bytes()))
    comparison = load_comparison([str(DEMO)], [str(cudnn_log)], ignore_batch=True, jobs=1)
    for pair in comparison.pairs:
        op = pair.either.layer.problem.op
        if op in ("conv", "bnorm"):
            assert pair.status == "changed" and pair.old is not None and pair.new is not None, pair.changes
            assert pair.changes[0] == "batch 32 -> 16"
            assert op == "bnorm" or pair.new.solver, "the cuDNN side names its engine"
        else:
            assert pair.status == "removed" and op in ("pool", "activ")
    convs = [p for p in comparison.pairs if p.either.layer.problem.op == "conv"]
    assert len(convs) == sum(1 for s in comparison.old.layers if s.problem.op == "conv") \
        == sum(1 for s in comparison.new.layers if s.problem.op == "conv") == 68


def test_ranking_delta_total_then_solver_changes_then_faster_layers():
    """Changed pairs in the order of what they cost the new run: the larger added total first,
    then (no total on either side) a solver change before a mere count change, and a layer
    that got faster last; same pairs after every changed one."""
    import dataclasses

    from miotui.decoding.whole import decode_paths
    from miotui.diff import Side
    layers = decode_paths([str(DEMO)]).most_executed()
    timed = [s for s in layers if s.annotation("find_db_time_ms") and s.executions > 1]
    untimed = [s for s in layers if not any(k.endswith("time_ms") for k, _ in s.annotations) and s.executions]
    t1, t2, t3 = timed[:3]
    u2, u1 = sorted(untimed[:2], key=lambda s: s.index)   # the solver change is the later layer

    def with_time(layer, factor):
        ann = tuple((k, f"{float(v) * factor:.6g}" if k == "find_db_time_ms" else v) for k, v in layer.annotations)
        return dataclasses.replace(layer, annotations=ann)

    changed = {t1.id: with_time(t1, 2.0), t2.id: with_time(t2, 10.0), t3.id: with_time(t3, 0.5),
               u1.id: dataclasses.replace(u1, annotations=u1.annotations + (("solver", SLOW),)),
               u2.id: dataclasses.replace(u2, executions=u2.executions + 1)}
    old = Side.of([str(DEMO)], layers, {})
    new = Side.of(["new"], [changed.get(s.id, s) for s in layers], {})
    pairs = compare(old, new).pairs
    ids = [p.new.layer.id for p in pairs[:5]]
    gains = {t1.id: t1.executions * float(t1.annotation("find_db_time_ms")),
             t2.id: 9 * t2.executions * float(t2.annotation("find_db_time_ms"))}
    assert ids[:2] == sorted(gains, key=lambda i: -gains[i])
    assert ids[2:] == [u1.id, u2.id, t3.id]
    assert [p.status for p in pairs[:5]] == ["changed"] * 5 and {p.status for p in pairs[5:]} == {"same"}
    assert pairs[4].delta_total_ms < 0 and pairs[2].solver_changed and not pairs[3].solver_changed


def test_a_layer_in_another_layout_pairs_and_says_so():
    """NHWC against NCHW (another framework's or vendor's choice) is the same layer: paired,
    the layout named among its changes; without the layout rule it would be added and removed."""
    import dataclasses

    from miotui.decoding.whole import decode_paths
    from miotui.diff import Side
    layers = decode_paths([str(DEMO)]).most_executed()
    conv = next(s for s in layers if s.problem.op == "conv")
    nhwc = dataclasses.replace(conv, problem=dataclasses.replace(conv.problem, in_layout="NHWC", fil_layout="NHWC",
                                                                 out_layout="NHWC"))
    old = Side.of([str(DEMO)], layers, {})
    new = Side.of(["new"], [nhwc if s.id == conv.id else s for s in layers], {})
    comparison = compare(old, new)
    assert comparison.count("added") == comparison.count("removed") == 0
    first = comparison.pairs[0]
    assert first.status == "changed" and first.new.layer.problem.layout == "NHWC"
    assert first.changes == ("layout NCHW -> NHWC",)


def test_log_text_cannot_drive_the_terminal_or_a_spreadsheet(tmp_path, capsys):
    """A solver name holding an escape sequence and a formula is shown with the escape made
    visible, and a CSV cell that starts with it is quoted as text."""
    hostile = tmp_path / "hostile.log"
    hostile.write_text(DEMO.read_text().replace("ConvBinWinogradRxSf2x3g1", "=HYPERLINK\x1b]0;pwned\x07Wino"))
    for fmt in ("table", "json", "csv"):
        code, out, _ = _run(["diff", str(DEMO), str(hostile), "--format", fmt], capsys)
        assert code == 0 and "\x1b" not in out and "\x07" not in out
        if fmt == "table":
            assert "-> =HYPERLINK\u241b]0;pwned\u2407Wino" in out
    rows = list(csv.DictReader(io.StringIO(out)))   # the CSV, written last
    assert rows[0]["new_solver"] == "'=HYPERLINK\u241b]0;pwned\u2407Wino"


def test_compare_app_refuses_a_missing_log(tmp_path, capsys):
    code = main(["--compare", str(DEMO), str(tmp_path / "missing.log")])
    assert code == 2 and "missing.log" in capsys.readouterr().err


def test_both_runs_decoded_at_once_equal_each_decoded_alone():
    """``decode_file_groups`` (the two runs' files in one pool of processes) gives each run the
    catalog ``decode_files`` gives it alone: the same JSON, layer for layer."""
    from miotui.decode_output import render
    from miotui.decoding.parallel import decode_file_groups, decode_files
    groups = [[str(DEMO)], [str(OTHER), str(VERSIONED), str(DEMO)]]
    together = decode_file_groups(groups, jobs=2, min_bytes=0)
    for group, catalog in zip(groups, together, strict=True):
        alone = decode_files(group, jobs=1)
        a, b = json.loads(render(catalog, "json")), json.loads(render(alone, "json"))
        a["stats"]["seconds"] = b["stats"]["seconds"] = 0
        assert a == b and a["layers"]

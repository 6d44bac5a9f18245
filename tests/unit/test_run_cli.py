"""``miotui run``: parsed arguments through run_main, and the real entry point in a subprocess."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from miotui.execute.runner import clear_cache
from miotui.run_cli import add_run_parser, run_main

FAKE = str(Path(__file__).parents[1].joinpath("fake_miopendriver.py"))
ROOT = Path(__file__).resolve().parents[2]
SMALL_CMD = "./bin/MIOpenDriver conv -n 2 -c 3 -H 9 -W 9 -k 4 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1"
_PREFIX = "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver "
LOG = (_PREFIX + "conv -n 2 -c 3 -H 9 -W 9 -k 4 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n"
       + 2 * (_PREFIX + "conv -n 2 -c 4 -H 6 -W 6 -k 4 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 "
                "-F 2 -t 1\n"))


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    clear_cache()
    for var in ("FAKE_MIOPEN_STYLE", "FAKE_MIOPEN_EXIT", "MIOPEN_DRIVER"):
        monkeypatch.delenv(var, raising=False)


def parse(*argv: str) -> argparse.Namespace:
    top = argparse.ArgumentParser(prog="miotui")
    sub = top.add_subparsers(dest="command_name")
    add_run_parser(sub)
    return top.parse_args(["run", *argv])


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = run_main(parse(*argv, "--json"))
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_command_runs_and_verifies(capsys):
    code, doc = run_json(capsys, SMALL_CMD, "--backend", "numpy", "--iters", "2")
    assert code == 0
    (layer,) = doc["layers"]
    assert layer["op"] == "conv" and layer["direction"] == "fwd"
    (r,) = layer["results"]
    assert r["status"] == "ok" and r["backend"] == "numpy" and r["iterations"] == 2
    assert r["verification"]["ok"] and r["verification"]["rms_range"] <= r["verification"]["tolerance"]
    assert r["median_ms"] > 0 and r["gflops"] > 0
    assert layer["driver_command"].startswith("MIOpenDriver conv -n 2 -c 3")


def test_multi_direction_command_runs_each_direction(capsys):
    code, doc = run_json(capsys, SMALL_CMD.replace("-F 1", "-F 0"), "--backend", "numpy", "--iters", "1")
    assert code == 0
    assert [layer["direction"] for layer in doc["layers"]] == ["fwd", "bwd", "wrw"]
    assert all(layer["results"][0]["status"] == "ok" for layer in doc["layers"])


def test_unquoted_command_after_double_dash(capsys):
    code = run_main(parse("--backend", "numpy", "--iters", "1", "--json", "--", *SMALL_CMD.split()))
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["layers"][0]["results"][0]["status"] == "ok"


def test_log_layer_is_the_layers_id_its_arrival_order(tmp_path, capsys):
    """One layer, one id: --layer K is the id the app's # column shows (arrival order
    from 1), not a rank by executions (the 1x1 backward layer ran twice but came second)."""
    log = tmp_path / "train.log"
    log.write_text(LOG)
    code, doc = run_json(capsys, "--log", str(log), "--layer", "1", "--backend", "numpy", "--iters", "1")
    assert code == 0
    (layer,) = doc["layers"]
    assert layer["direction"] == "fwd" and layer["problem"]["filter"] == [3, 3]
    assert "layer 1 of" in doc["source"]
    code, doc = run_json(capsys, "--log", str(log), "--layer", "2", "--backend", "numpy", "--iters", "1")
    assert code == 0 and doc["layers"][0]["direction"] == "bwd"
    from miotui.decoding.whole import decode_paths
    assert [s.id for s in decode_paths([str(log)]).layers()] == [1, 2]


def test_layer_help_says_it_is_the_arrival_order(capsys):
    with pytest.raises(SystemExit):
        parse("--help")
    assert "arrival order" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("argv,needle", [
    (("conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -F 1 -H",), "cannot parse"),
    (("gemm -m 1 -Z 3",), "cannot parse"),
    (("conv -n 1 -c 3 -H 2 -W 2 -k 4 -y 5 -x 5 -z valid -F 1",), "at least as large as its filter"),
    ((), "give a MIOpenDriver command"),
    (("--layer", "1"), "--layer needs --log"),
    (("conv -n 1 -F 1", "--iters", "0"), "--iters"),
])
def test_bad_usage_exits_2(capsys, argv, needle):
    assert run_main(parse(*argv)) == 2
    assert needle in capsys.readouterr().err


def test_log_errors_exit_2(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text(LOG)
    assert run_main(parse("--log", str(log), "--layer", "9")) == 2
    assert "2 unique layer(s), ids 1 to 2" in capsys.readouterr().err
    assert run_main(parse("--log", str(tmp_path / "missing.log"), "--layer", "1")) == 2
    assert "cannot read" in capsys.readouterr().err
    assert run_main(parse("--log", str(log))) == 2
    assert run_main(parse(SMALL_CMD, "--log", str(log), "--layer", "1")) == 2


def test_verification_failure_exits_1(capsys):
    os.environ["FAKE_MIOPEN_STYLE"] = "fail"
    try:
        code, doc = run_json(capsys, SMALL_CMD, "--backend", "miopen-driver", "--driver", FAKE)
    finally:
        del os.environ["FAKE_MIOPEN_STYLE"]
    assert code == 1
    r = doc["layers"][0]["results"][0]
    assert r["status"] == "failed" and "0.0123" in r["message"]


def test_backend_error_exits_1(capsys, tmp_path):
    code, doc = run_json(capsys, SMALL_CMD, "--backend", "miopen-driver", "--driver", str(tmp_path / "none"))
    assert code == 1 and "does not exist" in doc["layers"][0]["results"][0]["message"]


def test_all_backends_side_by_side(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))   # no MIOpenDriver here: shown as n/a, not a failure
    monkeypatch.setattr("miotui.execute.driver_backend.DEFAULT_DRIVER", str(tmp_path / "MIOpenDriver"))
    code = run_main(parse(SMALL_CMD, "--backend", "all", "--iters", "1"))
    out = capsys.readouterr().out
    assert code == 0, out
    for name in ("numpy", "numba", "torch", "miopen-driver"):
        assert name in out
    assert "n/a: MIOpenDriver not found" in out
    assert "GFLOP/s" in out and "rms_range" in out
    for column in ("verdict", "JIT", "median", "min", "max", "spread"):
        assert column in out, column


def test_all_backends_lists_numba_as_na_on_a_dense_conv(capsys):
    """numba has direct kernels only for depthwise/grouped conv and pooling: on a dense
    conv it is "n/a: why", never a row named numba that ran numpy."""
    code, doc = run_json(capsys, SMALL_CMD, "--backend", "all", "--iters", "1")
    assert code == 0
    numba = next(r for r in doc["layers"][0]["results"] if r["backend"] == "numba")
    assert numba["status"] == "n/a" and "numba's direct kernels are for depthwise" in numba["message"]
    code = run_main(parse(SMALL_CMD, "--backend", "all", "--iters", "1"))
    out = capsys.readouterr().out
    assert "n/a: a dense convolution: numba's direct kernels" in " ".join(out.split())


def test_memory_bound_layers_are_shown_in_gb_per_s(capsys):
    code = run_main(parse("MIOpenDriver bnorm -n 2 -c 8 -H 8 -W 8 -m 1 --forw 1 -b 0 -s 1 -r 1", "--backend", "numpy",
                          "--iters", "2"))
    out = capsys.readouterr().out
    assert code == 0 and "GB/s" in out and "GFLOP/s" not in out
    assert "e-0" not in out.split("max abs")[0], "no exponent in times or rates"


def test_all_with_the_fake_driver_json(capsys):
    code, doc = run_json(capsys, SMALL_CMD, "--backend", "all", "--iters", "1", "--driver", FAKE)
    assert code == 0
    results = {r["backend"]: r for r in doc["layers"][0]["results"]}
    assert set(results) == {"numpy", "numba", "torch", "miopen-driver"}
    assert results["miopen-driver"]["status"] == "ok"
    assert results["miopen-driver"]["details"]["solver"] == "85/ConvDirectNaiveConvFwd"


def test_batch_and_dump(capsys, tmp_path):
    code, doc = run_json(capsys, SMALL_CMD.replace("-F 1", "-F 4"), "--backend", "numpy", "--iters", "1",
                         "--batch", "3", "--dump", str(tmp_path))
    assert code == 0
    r = doc["layers"][0]["results"][0]
    assert r["problem"]["n"] == 3 and "N=3" in r["note"]
    assert sorted(os.listdir(tmp_path)) == ["dw.npy", "dy.npy", "x.npy"]
    assert np.load(tmp_path / "x.npy").shape == (3, 3, 9, 9)


def test_launcher_is_split_into_argv(capsys):
    code, doc = run_json(capsys, SMALL_CMD, "--backend", "miopen-driver", "--driver", FAKE,
                         "--launcher", "env FAKE_MIOPEN_STYLE=2019")
    assert code == 0
    r = doc["layers"][0]["results"][0]
    assert r["argv"][:3] == ["env", "FAKE_MIOPEN_STYLE=2019", FAKE]
    assert r["details"]["driver reference"] == "CPU"    # the 2019 wording: "Verifies on CPU and GPU"


def test_table_output(capsys):
    code = run_main(parse(SMALL_CMD, "--backend", "numpy", "--iters", "1"))
    out = capsys.readouterr().out
    assert code == 0
    assert "MIOpenDriver conv -n 2 -c 3" in out and "numpy" in out and "ok" in out


def test_python_m_miotui_run_end_to_end(tmp_path):
    """The real entry point (cli.py wires `run` to add_run_parser/run_main)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "miotui", "run", SMALL_CMD, "--backend", "miopen-driver",
                           "--driver", FAKE, "--json", "--iters", "3"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    r = doc["layers"][0]["results"][0]
    assert r["status"] == "ok" and r["argv"][-2:] == ["-i", "3"]
    proc = subprocess.run([sys.executable, "-m", "miotui", "run", "conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -q"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 2 and "miotui run:" in proc.stderr


def test_batch_override_describes_the_layer_that_ran(capsys):
    """Review finding: with --batch the JSON showed the log's N while N images were timed."""
    import json as _json

    from miotui.cli import main
    rc = main(["run", "conv -n 2 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -F 1",
               "--backend", "numpy", "--batch", "3", "--iters", "1", "--json"])
    layer = _json.loads(capsys.readouterr().out)["layers"][0]
    assert rc == 0 and layer["problem"]["n"] == 3 and " -n 3 " in layer["driver_command"]

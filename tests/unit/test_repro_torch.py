"""The standalone PyTorch script of a cuDNN layer (``miotui run --script``) runs here on the
CPU and computes what miotui's numpy reference computes from the same inputs."""

from __future__ import annotations

import lzma
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from miotui.execute.conv import run_conv
from miotui.repro_torch import OUTPUT_NAME

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "cudnn" / "h100"


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cudnn")
    out = {}
    for name in ("small_amp_cl", "small_variety_v7"):
        path = folder / f"{name}.log"
        path.write_bytes(lzma.decompress((DATA / f"{name}.log.xz").read_bytes()))
        out[name] = path
    return out


def miotui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miotui", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def layer_of(log: Path, k: int):
    from miotui.decoding.whole import decode_paths
    return next(layer for layer in decode_paths([str(log)]).layers() if layer.id == k)


@pytest.mark.parametrize("log,k,layout,tf32", [
    ("small_amp_cl", 1, "torch.channels_last", True),        # fp16 NHWC forward
    ("small_amp_cl", 4, "torch.channels_last", True),        # fp16 NHWC backward data
    ("small_amp_cl", 5, "torch.channels_last", True),        # fp16 NHWC backward filter
    ("small_variety_v7", 1, "torch.contiguous_format", True),   # fp32 3-D forward (legacy path)
    ("small_variety_v7", 2, "torch.contiguous_format", True),   # fp32 backward data
])
def test_the_script_of_a_cudnn_layer_matches_numpy(logs, tmp_path, log, k, layout, tf32):
    layer = layer_of(logs[log], k)
    p = layer.problem
    made = miotui("run", "--log", str(logs[log]), "--layer", str(k), "--script")
    assert made.returncode == 0, made.stderr
    script = tmp_path / "repro.py"
    script.write_text(made.stdout)
    assert f"fmt = {layout}" in made.stdout
    assert f"torch.backends.cudnn.allow_tf32 = {tf32}" in made.stdout
    assert f"direction = {p.direction!r}" in made.stdout
    saved = tmp_path / "out.npz"
    # on the CPU even where a GPU is present: the comparison is with numpy in fp32, and a GPU
    # would run the logged TF32 (a 1e-3 error by design); the H100 run is its own test
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}
    ran = subprocess.run([sys.executable, str(script), "2", "--save", str(saved)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stderr
    assert "cpu" in ran.stdout and "ms per call over 2 calls" in ran.stdout
    arrays = dict(np.load(saved))
    out_name = OUTPUT_NAME[p.direction]
    got = arrays.pop(out_name)
    want = run_conv(p, arrays)[out_name]   # the same inputs (fp16 values are exact in fp32)
    assert got.shape == want.shape == tuple({"fwd": p.output_shape, "bwd": p.input_shape,
                                             "wrw": p.weight_shape}[p.direction])
    scale = float(np.abs(want).max())
    tolerance = 1e-2 if p.dtype == "fp16" else 1e-5          # the output rounded to fp16, or fp32 sums
    assert scale > 0 and float(np.abs(got - want).max()) <= tolerance * scale


def test_a_layer_with_no_script_says_how_to_run_it(logs):
    made = miotui("run", "--log", str(logs["small_amp_cl"]), "--layer", "2", "--script")   # a batch norm
    assert made.returncode == 2
    assert "has no standalone script here" in made.stdout and "--backend torch" in made.stdout


def test_the_driver_command_of_a_cudnn_layer_is_marked_a_translation(logs, tmp_path):
    import json

    from miotui.decoding.whole import decode_paths
    from miotui.export import to_driver_script
    from miotui.formats.cudnn import TRANSLATION
    cudnn = json.loads(miotui("decode", "--format", "json", str(logs["small_variety_v7"])).stdout)["layers"]
    assert cudnn and all(layer["driver_command_note"] == TRANSLATION for layer in cudnn)
    miopen = tmp_path / "miopen.log"
    miopen.write_text("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 8 -H 16 -W 16 -k 8 "
                      "-y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")
    own = json.loads(miotui("decode", "--format", "json", str(miopen)).stdout)["layers"]
    assert len(own) == 1 and "driver_command_note" not in own[0]
    lines = miotui("decode", "--format", "driver", str(logs["small_variety_v7"])).stdout
    assert lines.count(TRANSLATION) == len(cudnn)
    script = to_driver_script(decode_paths([str(logs["small_variety_v7"])]).layers())
    assert script.count(TRANSLATION) == len(cudnn)
    assert TRANSLATION not in to_driver_script(decode_paths([str(miopen)]).layers())


def test_the_script_run_on_an_h100_logs_the_layer_it_was_written_for(logs):
    """The script of layer 1 of small_amp_cl, run on an H100 with cuDNN's log on (the log is
    stored): the log decodes to that very layer, 1 + 5 warm-up + 20 timed runs, TF32 on."""
    from miotui.formats.cudnn import decode_cudnn_bytes
    original = layer_of(logs["small_amp_cl"], 1)
    scanner = decode_cudnn_bytes(lzma.decompress((DATA / "repro_small_amp_cl_layer1.log.xz").read_bytes()))
    layers = scanner.catalog.layers()
    assert [layer.problem for layer in layers] == [original.problem]
    assert layers[0].executions == 26 and dict(layers[0].annotations)["tf32"] == "on"
    assert scanner.catalog.undecoded_count == 0

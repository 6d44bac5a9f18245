"""What a log says, decoded (issue 19, section 5).

(a) A MIOpenDriver output whose command is cut off the log, but whose ``stats:`` line and a
    problem key MIOpen logged before it name the layer together, yields that layer, with a
    warning that the command was not seen (real log 20: an im2col kernel key gives the input
    size and padding the stats line lacks).
(b) A Find-Db / Perf-Db problem key quoted inside an Error or Warning line, even glued to
    the solver name after it, is a mention of that layer; a key that does not decode is
    undecoded with the reason, never dropped.
(c) ``-Z`` (tensor_vect): the warning says what runs.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from miotui.catalog import Catalog
from miotui.decoding.whole import decode_paths, decode_stream
from miotui.driver import parse_driver_args, to_driver_command

REAL = Path(__file__).parents[1] / "data" / "real_logs"


def decode(text: str) -> Catalog:
    catalog = Catalog()
    decode_stream(catalog, io.BytesIO(text.encode()))
    return catalog


# ---------------------------------------------------------------- (a) stats: line + key, no command

def test_real_driver_output_without_its_command_is_named_by_stats_and_im2col_key():
    catalog = decode_paths([str(next(REAL.glob("20_*.log")))])
    (layer,) = catalog.layers()
    assert to_driver_command(layer.problem) == ("MIOpenDriver conv -n 32 -c 3 -H 8 -W 8 -k 32 -y 3 -x 3 -p 0 -q 0 "
                                                "-u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1")
    assert layer.executions == 1 and layer.sources == ("driver-output",)
    assert any("command was not seen" in w for w in layer.warnings)
    assert layer.annotation("driver_kernel_ms") == "0.3848"


STATS = ("GPU Kernel Time Forward Conv. Elapsed: 2.539060 ms (average)\n"
         "stats: name, n, c, ho, wo, x, y, k, flopCnt, bytesRead, bytesWritten, GFLOPs, GB/s, timeMs\n"
         "stats: fwd-conv3x3u1, {n}, 64, 256, 256, 3, 3, 64,  173408256, 609024, 12845056, 3049, 237, 2.539060\n")
# tests/data/real_logs/14 (TheRock #1899)
INVOKER = ("MIOpen(HIP): Info2 [GetInvoker] Returning an invoker for problem 64x256x256x3x3x64x256x256x32xNHWCxNHWCx"
           "NHWCxBF16x1x1x1x1x1x1x1xFxDefault and algorithm miopenConvolutionFwdAlgoDirect\n")


def test_stats_line_after_an_invoker_key_times_that_layer_without_counting_the_call_twice():
    (layer,) = decode(INVOKER + STATS.format(n=32)).layers()
    assert layer.executions == 1                    # the invoker line's; the stats line is the same run
    assert layer.annotation("driver_kernel_ms") == "2.53906"


def test_stats_line_that_no_key_agrees_with_stays_undecoded():
    catalog = decode(INVOKER + STATS.format(n=16))  # batch 16: not the layer the key names
    assert [s.problem.n for s in catalog.layers()] == [32]
    assert catalog.layers()[0].annotation("driver_kernel_ms") == ""
    assert any("without its command" in u.reason for u in catalog.undecoded())


# ---------------------------------------------------------------- (b) keys inside Error / Warning lines

# The "Search failed for: <solver>: <what>" form is MIOpen's (FindSolutionImpl); the keys are real
# (tests/data/real_logs/116 and 14), glued to a real solver name as the issue reports them.
DASH_GLUED = ("MIOpen(HIP): Error [FindSolutionImpl] Search failed for: 1-160-698-5x5-64-79-348-1-1x1-2x2-1x1-0-"
              "NCHW-FP32-FConvHipImplicitGemmForwardV4R4Xdlops_Padded_Gemm: generic_search.hpp:575: Search failed\n")
X_GLUED = ("MIOpen(HIP): Warning [FindSolutionImpl] Search Failed: 64x256x256x3x3x64x256x256x32xNHWCxNHWCxNHWCx"
           "BF16x1x1x1x1x1x1x1xFxDefaultConvBinWinogradRxSf2x3g1\n")


@pytest.mark.parametrize("line, command", [
    (DASH_GLUED, "MIOpenDriver conv -n 1 -c 1 -H 160 -W 698 -k 64 -y 5 -x 5 -p 1 -q 1 -u 2 -v 2 -l 1 -j 1 -m conv "
                 "-g 1 -F 1"),
    (X_GLUED, "MIOpenDriver convbfp16 -n 32 -c 64 -H 256 -W 256 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 "
              "--in_layout NHWC --fil_layout NHWC --out_layout NHWC -m conv -g 1 -F 1"),
])
def test_a_problem_key_in_an_error_line_is_a_mention_of_its_layer(line, command):
    catalog = decode(line)
    (layer,) = catalog.layers()
    assert to_driver_command(layer.problem) == command
    assert (layer.mentions, layer.executions) == (1, 0) and not catalog.undecoded()
    assert any("Search" in w for w in layer.warnings)          # the line itself, on the layer
    assert not any("alpha" in w for w in layer.warnings)       # the glued solver name is not read as the key


def test_a_key_in_an_error_line_that_does_not_decode_is_undecoded_with_the_reason():
    catalog = decode(DASH_GLUED.replace("1-160-698-", "1-160-0-"))
    assert not catalog.layers()
    (u,) = catalog.undecoded()
    assert "problem key" in u.reason and "in_spatial" in u.reason


def test_error_lines_without_a_key_stay_as_they_were():
    # ROCm/MIOpen#411 and tests/data/real_logs/101: no problem key on them
    catalog = decode("MIOpen(HIP): Error [FindSolutionImpl] Search failed for: ConvBinWinogradRxSf2x3: /root/dMIOpen/"
                     "src/include/miopen/generic_search.hpp:408: GenericSearch: top_ocl_ptr == nullptr || "
                     "bot_ocl_ptr == nullptr || wei_ocl_ptr == nullptr\n"
                     "MIOpen(HIP): Error [BuildHip] HIPRTC status = HIPRTC_ERROR_COMPILATION (6), source file: "
                     "gridwise_generic_reduction_first_call_multiblock_reduce_partial_dims.cpp\n")
    assert not catalog.layers() and not catalog.undecoded()


# ---------------------------------------------------------------- (c) -Z says what runs

BASE = "-n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -F 1"


def test_tensor_vect_on_fp32_says_it_runs_fp32():
    parsed = parse_driver_args(f"conv {BASE} -Z 3".split())
    (p,) = parsed.problems
    assert p.dtype == "fp32"
    (warning,) = [w for w in parsed.warnings if "-Z" in w]
    assert "runs as fp32" in warning and "plain int8" not in warning


def test_tensor_vect_on_int8_says_what_the_driver_and_miotui_each_run():
    parsed = parse_driver_args(f"convint8 {BASE} -Z 1".split())
    assert parsed.problems[0].dtype == "int8"
    assert any("int8x4" in w and "plain int8" in w for w in parsed.warnings)


def test_run_prints_what_it_runs():
    r = subprocess.run([sys.executable, "-m", "miotui", "run", f"conv {BASE} -Z 3", "--backend", "numpy",
                        "--iters", "1"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-800:]
    out = r.stdout + r.stderr
    assert "runs as fp32" in out and "conv fwd fp32" in out
    assert "plain int8" not in out

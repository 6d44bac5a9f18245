"""Driver commands: problem -> argv -> problem, MIOpen's logging bugs, MITuna's corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from miotui.driver import DriverCommandError, parse_driver_args, parse_driver_command, to_driver_argv, to_driver_command
from miotui.problems import (
    ActivationProblem,
    BatchNormProblem,
    ConvProblem,
    FusionProblem,
    LRNProblem,
    PoolProblem,
    ProblemError,
    SoftmaxProblem,
)

HERE = Path(__file__).parents[1]
MITUNA = HERE / "data" / "mituna"


# ---------------------------------------------------------------- strategies

small = st.integers(1, 9)


@st.composite
def conv_problems(draw):
    nd = draw(st.sampled_from([2, 3]))
    g = draw(st.sampled_from([1, 1, 2, 4]))
    c = g * draw(small)
    k = g * draw(small)
    mode = draw(st.sampled_from(["conv", "trans"]))
    filt = tuple(draw(st.integers(1, 5)) for _ in range(nd))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dil = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    pads = tuple(draw(st.integers(0, 3)) for _ in range(nd))
    spatial = tuple(draw(st.integers(1, 40)) for _ in range(nd))
    adj = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(strides, dil, strict=True)) if mode == "trans" else ()
    layout = draw(st.sampled_from(["NCHW", "NHWC"] if nd == 2 else ["NCDHW", "NDHWC"]))
    try:
        return ConvProblem(draw(st.sampled_from(["fwd", "bwd", "wrw"])),
                           draw(st.sampled_from(["fp32", "fp16", "bf16", "int8"])),
                           draw(st.integers(1, 256)), c, k, spatial, filt, pads, strides, dil, g, mode,
                           adj, draw(st.sampled_from(["default", "default", "same", "valid"])),
                           layout, layout, layout)
    except ProblemError:
        assume(False)


@st.composite
def other_problems(draw):
    n, c = draw(st.integers(1, 64)), draw(st.integers(1, 64))
    hw = (draw(st.integers(1, 64)), draw(st.integers(1, 64)))
    kind = draw(st.sampled_from(["pool", "bnorm", "activ", "lrn", "softmax", "fusion"]))
    floats = st.floats(-8, 8, allow_nan=False).map(lambda v: float(format(v, "g")))
    try:
        if kind == "pool":
            nd = draw(st.sampled_from([2, 3]))
            sp = hw if nd == 2 else (draw(st.integers(1, 16)),) + hw
            win = tuple(draw(st.integers(1, 4)) for _ in range(nd))
            return PoolProblem(draw(st.sampled_from(["fwd", "bwd"])), draw(st.sampled_from(["fp32", "fp16"])),
                               n, c, sp, win, tuple(draw(st.integers(0, w // 2)) for w in win),
                               tuple(draw(st.integers(1, 3)) for _ in range(nd)),
                               draw(st.sampled_from(["max", "avg", "avg_in"])),
                               draw(st.sampled_from(["NCHW", "NHWC"] if nd == 2 else ["NCDHW", "NDHWC"])),
                               draw(st.sampled_from([0, 1])))
        if kind == "bnorm":
            nd = draw(st.sampled_from([2, 3]))
            sp = hw if nd == 2 else (draw(st.integers(1, 16)),) + hw
            dtype = draw(st.sampled_from(["fp32", "fp16", "bf16"]))
            return BatchNormProblem(draw(st.sampled_from(["fwd_train", "fwd_infer", "bwd"])), dtype, n, c, sp,
                                    draw(st.sampled_from(["spatial", "per_activation"])),
                                    draw(st.sampled_from(["NCHW", "NHWC"] if nd == 2 else ["NCDHW", "NDHWC"])),
                                    draw(st.booleans()), draw(st.booleans()),
                                    "fp32" if dtype != "fp32" and draw(st.booleans()) else dtype)
        if kind == "activ":
            return ActivationProblem(draw(st.sampled_from(["fwd", "bwd"])), draw(st.sampled_from(["fp32", "fp16"])),
                                     n, c, hw, draw(st.integers(0, 9)), draw(floats), draw(floats), draw(floats))
        if kind == "lrn":
            return LRNProblem(draw(st.sampled_from(["fwd", "bwd"])), "fp32", n, c, hw,
                              draw(st.sampled_from(["within", "cross"])), draw(st.integers(1, 7)),
                              draw(floats), draw(floats), draw(floats))
        if kind == "softmax":
            return SoftmaxProblem(draw(st.sampled_from(["fwd", "bwd"])), draw(st.sampled_from(["fp32", "fp16"])),
                                  n, c, hw, draw(st.integers(0, 2)), draw(st.integers(0, 1)),
                                  draw(floats), draw(floats))
        mode = draw(st.integers(0, 6))
        if mode == 2:
            return FusionProblem(2, "fp32", n, c, hw, bn_mode=draw(st.sampled_from(["spatial", "per_activation"])))
        return FusionProblem(mode, draw(st.sampled_from(["fp32", "fp16"])), n, c, hw, k=draw(st.integers(1, 64)),
                             filter=(draw(st.integers(1, 3)),) * 2, pads=(draw(st.integers(0, 1)),) * 2,
                             strides=(1, 1), dilations=(1, 1),
                             bn_mode=draw(st.sampled_from(["spatial", "per_activation"])))
    except ProblemError:
        assume(False)


# ---------------------------------------------------------------- round trips

@settings(max_examples=300, deadline=None)
@given(conv_problems())
def test_conv_round_trip(problem):
    argv = to_driver_argv(problem)
    assert argv[0].startswith("conv")
    for flag in "-n -c -H -W -k -y -x -p -q -u -v -l -j -m -g -F".split():
        assert flag in argv
    if problem.ndim == 3:
        assert argv[argv.index("--spatial_dim") + 1] == "3"
    assert parse_driver_args(argv).problems == (problem,)
    assert parse_driver_command(to_driver_command(problem)).problems == (problem,)


@settings(max_examples=300, deadline=None)
@given(other_problems())
def test_other_round_trip(problem):
    assert parse_driver_args(to_driver_argv(problem)).problems == (problem,)


def test_issue_example_command():
    p = ConvProblem("bwd", "fp32", 1, 16, 48, (1, 2), (5, 5), (2, 2), (1, 1), (1, 1))
    assert to_driver_command(p) == ("MIOpenDriver conv -n 1 -c 16 -H 1 -W 2 -k 48 -y 5 -x 5 -p 2 -q 2 "
                                    "-u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 2")


def test_dtype_in_base_argument():
    p = ConvProblem("fwd", "fp16", 1, 4, 4, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1))
    assert to_driver_argv(p)[0] == "convfp16"
    assert to_driver_argv(BatchNormProblem("bwd", "fp16", 2, 3, (4, 4), param_dtype="fp32"))[0] == "bnormfp16fp32"


# ---------------------------------------------------------------- reading commands

def test_defaults_fill_omitted_flags():
    # MIOpen issue #57 (2018): most flags omitted.
    pc = parse_driver_command("./bin/MIOpenDriver conv -F 1 -P 1 -W 32 -H 32 -c 18 -k 5 -x 3 -y 3 -t 1")
    (p,) = pc.problems
    assert (p.n, p.c, p.k, p.in_spatial, p.pads, p.strides) == (100, 18, 5, (32, 32), (0, 0), (1, 1))


def test_multi_direction_command_is_one_problem_per_direction():
    pc = parse_driver_command("MIOpenDriver conv -n 2 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -F 0")
    assert [p.direction for p in pc.problems] == ["fwd", "bwd", "wrw"]
    pc = parse_driver_command("MIOpenDriver conv -n 2 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -F 6")
    assert [p.direction for p in pc.problems] == ["bwd", "wrw"]


@pytest.mark.parametrize("text", [
    "$ ./MIOpenDriver conv -n 1 -c 3 -H 9 -W 9 -k 2 -F 1",
    "root@simon:/opt/rocm/miopen/bin# ./MIOpenDriver conv -n 1 -c 3 -H 9 -W 9 -k 2 -F 1",
    "MIOPEN_FIND_MODE=1 /opt/rocm/bin/MIOpenDriver conv -n 1 -c 3 -H 9 -W 9 -k 2 -F 1",
    "MIOpenDriver.exe conv -n 1 -c 3 \\\n  -H 9 -W 9 -k 2 -F 1",
    "['/opt/rocm/bin/MIOpenDriver', 'conv', '-n', '1', '-c', '3', '-H', '9', '-W', '9', '-k', '2', '-F', '1']",
    "conv --batchsize 1 --in_channels 3 --in_h 9 --in_w 9 --out_channels 2 --forw 1",
    "MIOpenDriver: conv -n 1 -c 3 -H 9 -W 9 -k 2 -F 1",
])
def test_command_text_forms(text):
    (p,) = parse_driver_command(text).problems
    assert (p.n, p.c, p.k, p.in_spatial, p.direction) == (1, 3, 2, (9, 9), "fwd")


def test_old_api_prefix_gives_direction():
    args = "conv -n 128 -c 3 -H 32 -W 32 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -t 1".split()
    (p,) = parse_driver_args(args, api_name="miopenConvolutionBackwardData").problems
    assert p.direction == "bwd"
    (p,) = parse_driver_args(args, api_name="miopenFindConvolutionBackwardWeightsAlgorithm").problems
    assert p.direction == "wrw"


def test_cut_log_line_is_an_error():
    cut = "conv -n 1 -c 64 -H 256 -W 256 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g".split()
    with pytest.raises(DriverCommandError, match="cut short"):
        parse_driver_args(cut, api_name="miopenConvolutionForward")
    missing_t = "conv -n 1 -c 1 -H 3 -W 3 -k 2 -y 2 -x 2 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1".split()
    with pytest.raises(DriverCommandError, match="-t"):
        parse_driver_args(missing_t, log_fn="LogCmdConvolution")


@pytest.mark.parametrize("bad", [
    "conv -n -1 -c 3", "conv -n 1 -c 3 -m ; rm -rf /", "conv -n 1 -c x3", "conv -n 1 -H 2 -W 2 -y 5 -x 5 -z valid",
    "conv -n 1 -c 3 -g 2", "frobnicate -n 1", "conv 7", "conv --in_layout 'NCHW; ls'",
])
def test_bad_commands_are_rejected_with_a_message(bad):
    with pytest.raises(DriverCommandError):
        parse_driver_command(bad)


# ---------------------------------------------------------------- MIOpen logging bugs (docs/formats.md §4.3)

def test_bnorm_dash_M_corrected():
    pc = parse_driver_args("bnorm -n 4 -c 8 -H 2 -W 2 -M 1 --forw 1 -b 0".split(), log_fn="LogCmdBNorm")
    assert pc.problems[0].mode == "spatial"
    assert any("-M" in w for w in pc.warnings)


def test_bnorm_save_run_swap_for_old_logs():
    args = "bnorm -n 4 -c 8 -H 2 -W 2 -m 1 --forw 2 -b 0 -s 1".split()
    (p,) = parse_driver_args(args, log_fn="LogCmdBNorm").problems
    assert (p.running, p.save, p.direction) == (True, False, "fwd_infer")
    (p,) = parse_driver_args(args).problems  # a typed command means what it says
    assert (p.running, p.save) == (False, True)
    (p,) = parse_driver_args(args + ["-I", "0"], log_fn="LogCmdBNorm").problems  # newest: fixed
    assert (p.running, p.save) == (False, True)


def test_old_pooling_flags_become_input_tensor():
    pc = parse_driver_args("pool -M 0 -n 2 -c 3 -H 8 -W 8 -y 2 -x 2 -p 0 -q 0 -v 2 -u 1 -m max -F 1 -t 1".split(),
                           log_fn="Pooling_logging_cmd")
    (p,) = pc.problems
    assert p.in_spatial == (8, 8) and p.strides == (2, 1)
    assert "--input" in to_driver_argv(p) and "2x3x8x8" in to_driver_argv(p)
    assert any("--input" in w for w in pc.warnings)


def test_pool_log_direction_semantics():
    args = "pool -M 0 --input 2x3x8x8,192x64x8x1 -y 2 -x 2 -p 0 -q 0 -v 2 -u 2 -m avg -F 0 -t 1".split()
    (p,) = parse_driver_args(args, log_fn="Pooling_logging_cmd").problems
    assert p.direction == "bwd" and p.mode == "avg"
    assert [q.direction for q in parse_driver_args(args).problems] == ["fwd", "bwd"]


def test_lrn_numeric_mode_corrected():
    pc = parse_driver_args("lrn -A 0.001 -B 0.75 -F 1 -H 8 -K 1 -N 5 -W 8 -c 4 -m 1 -n 2".split(), log_fn="LogCmdLRN")
    assert pc.problems[0].mode == "cross" and pc.warnings
    assert to_driver_argv(pc.problems[0])[to_driver_argv(pc.problems[0]).index("-m") + 1] == "cross"


def test_immediate_dash_S_0_dropped():
    args = ("conv -n 1 -c 1 -H 3 -W 3 -k 2 -y 2 -x 2 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1 -S 0").split()
    pc = parse_driver_args(args, log_fn="LogCmdConvolution")
    assert "-S" not in to_driver_argv(pc.problems[0]) and any("-S 0" in w for w in pc.warnings)


def test_grouped_transposed_k_corrected():
    args = "conv -n 1 -c 8 -H 5 -W 5 -k 2 -y 3 -x 3 -p 0 -q 0 -u 2 -v 2 -l 1 -j 1 -m trans -g 2 -F 1 -t 1".split()
    pc = parse_driver_args(args, log_fn="LogCmdConvolution")
    assert pc.problems[0].k == 4 and pc.warnings
    assert parse_driver_args(args).problems[0].k == 2


def test_fusion_commands_from_miopen_tests():
    (p,) = parse_driver_command("./bin/MIOpenDriver CBAInfer -F 4 -n 128 -c 3 -H 32 -W 32 -k 64 -y 3 -x 3 "
                                "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1", log_fn="LogCmdFusion").problems
    assert p.fusion_mode == 4 and p.conv.output_shape == (128, 64, 32, 32)
    pc = parse_driver_command("./bin/MIOpenDriver CBAInfer -F 2 -n 64 -c 64 -H 56 -W 56 -m 1", log_fn="LogCmdFusion")
    assert pc.problems[0].bn_mode == "spatial" and pc.problems[0].activ_mode == 3  # -m was the BN mode


def test_fusion_activation_flags_round_trip():
    (p,) = parse_driver_command("MIOpenDriver CBAInfer -F 4 -n 2 -c 8 -H 9 -W 9 -k 8 -y 3 -x 3 -p 1 -q 1 "
                                "-u 1 -v 1 -l 1 -j 1 -g 1 -m 8 -A 0.25").problems
    assert (p.activ_mode, p.activ_alpha, p.activ_beta, p.activ_gamma) == (8, 0.25, 0.0, 1.0)
    command = to_driver_command(p)
    assert command.endswith("-m 8 -A 0.25")
    assert parse_driver_command(command).problems == (p,)
    default = parse_driver_command(command.replace(" -m 8 -A 0.25", "")).problems[0]
    assert default.activ_mode == 3 and "-m" not in to_driver_command(default).split()
    # a plan without an activation (conv+bias) ignores the flags
    assert " -J 4 " in command                       # today's driver takes the fusion mode as -J
    (cb,) = parse_driver_command(command.replace("-J 4", "-J 6")).problems
    assert cb.activ_mode == 3 and "-m" not in to_driver_command(cb).split()


def test_commands_are_written_for_a_driver_version():
    """--driver-version: spellings and base names follow the target driver's era."""
    from miotui.driver.spec import parse_version
    (p,) = parse_driver_command("MIOpenDriver CBAInfer -F 4 -n 2 -c 8 -H 9 -W 9 -k 8").problems
    assert to_driver_argv(p)[1:3] == ["-J", "4"]                                # today
    assert to_driver_argv(p, parse_version("3.5.0"))[1:3] == ["-F", "4"]       # before the -J change
    fp8 = parse_driver_command("MIOpenDriver convfp8 -n 1 -c 4 -H 8 -W 8 -k 4 -F 1").problems[0]
    assert to_driver_argv(fp8, parse_version("3.1"))[0] == "convfp8"
    with pytest.raises(DriverCommandError, match="convfp8"):    # no longer a base argument today
        to_driver_argv(fp8)


# ---------------------------------------------------------------- MITuna corpus

def _mituna_lines():
    for path in sorted(MITUNA.glob("*.txt")):
        if "fdb" in path.name:
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                yield path.name, lineno, line.strip()


def test_every_mituna_line_decodes_and_round_trips():
    lines = list(_mituna_lines())
    assert len(lines) > 1300
    undecoded = []
    for name, lineno, line in lines:
        try:
            pc = parse_driver_command(line)
        except DriverCommandError as e:
            undecoded.append((name, lineno, str(e)))
            continue
        assert pc.problems, line
        for p in pc.problems:
            assert parse_driver_command(to_driver_command(p)).problems == (p,), line
    # One line of the corpus is a fragment with no executable, base argument or -n
    # (" 64 -c 64 -H 56 ..."): it is reported, not guessed.
    assert undecoded == [("recurrent_cfgs_all.txt", 1341, "no MIOpenDriver command found")]


def test_driver_version_names_a_miopen_or_a_rocm_release():
    from miotui.driver.versions import DriverVersionError, resolve_driver_version, version_from_output
    assert resolve_driver_version(None) is None and resolve_driver_version("latest") is None
    assert resolve_driver_version("3.2.0") == (3, 2, 0) == resolve_driver_version("rocm-6.2")
    assert resolve_driver_version("6.4") == resolve_driver_version("ROCm 6.4")      # MIOpen never had a 6.x
    for bad in ("banana", "rocm-99.1"):
        with pytest.raises(DriverVersionError):
            resolve_driver_version(bad)
    assert version_from_output("MIOpen (version: 2.9.0)") == (2, 9, 0)
    assert version_from_output("Timestamp: x; MIOpen Driver: 3.5.1; CPU Vendor: AMD") == (3, 5, 1)


def test_decode_writes_commands_for_the_asked_driver(tmp_path):
    import subprocess
    import sys
    log = tmp_path / "f.log"
    log.write_text("MIOpen(HIP): Command [LogCmdFusion] ./bin/MIOpenDriver CBAInfer -F 4 -n 2 -c 8 -H 9 -W 9 -k 8 "
                   "-y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1\n")

    def commands(*extra: str) -> list[str]:
        out = subprocess.run([sys.executable, "-m", "miotui", "decode", str(log), "--format", "driver", *extra],
                             capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if line.startswith("MIOpenDriver")]
    assert " -J 4 " in commands()[0] and " -F 4 " in commands("--driver-version", "rocm-6.2")[0]


# ---------------------------------------------------------------- the usual line's direct reader

_CONV_FLAGS = "n c H W k y x p q u v l j m g F t".split()
_VALUE_TEXT = st.one_of(st.integers(0, 10**10).map(str), st.sampled_from(["007", "1.5", "-1", "", "²", "x", "$N"]),
                        st.integers(1, 64).map(str))


@st.composite
def _conv_command_lines(draw):
    values = {k: draw(_VALUE_TEXT) if draw(st.integers(0, 24)) == 0 else str(draw(st.integers(1, 70)))
              for k in _CONV_FLAGS}
    values["m"] = draw(st.sampled_from(["conv", "conv", "conv", "trans", "group", "dw", "CONV"]))
    values["F"] = draw(st.sampled_from(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "1", "1"]))
    values["g"] = draw(st.sampled_from(["1", "1", "2", "0", values["c"]]))
    order = draw(st.permutations(_CONV_FLAGS)) if draw(st.integers(0, 9)) == 0 else _CONV_FLAGS
    args = [token for k in order for token in (f"-{k}", values[k]) if token != ""]
    base = draw(st.sampled_from(["conv", "convfp16", "convbfp16", "convint8"]))
    context = draw(st.sampled_from([(None, None), (None, "LogCmdConvolution"), (None, "LogCmdFindConvolution"),
                                    ("miopenConvolutionBackwardData", None)]))
    return base, args, context


def _outcome(reader, sub, base, args, ctx):
    try:
        return reader(sub, base, args, ctx)
    except DriverCommandError as e:
        return f"error: {e}"


@settings(max_examples=600, deadline=None)
@given(_conv_command_lines())
def test_the_usual_conv_line_read_directly_equals_the_general_reader(case):
    """``read_plain_2d`` (one regular expression for MIOpen's 2-D Command line) gives what the
    general reader gives, problems, warnings and errors alike, whenever it answers."""
    from miotui.driver.commands.common import Context
    from miotui.driver.commands.conv import read_conv_flags, read_plain_2d
    from miotui.driver.tables import subcommand
    base, args, (api_name, log_fn) = case
    sub, ctx = subcommand("conv"), Context(api_name, log_fn, None)
    direct = _outcome(read_plain_2d, sub, base, args, ctx)
    if direct is not None:
        assert direct == _outcome(read_conv_flags, sub, base, args, ctx)


def test_the_direct_reader_answers_for_mitunas_and_the_logs_lines():
    """The equivalence above is not vacuous: the direct reader takes MIOpen's own lines."""
    from miotui.driver.commands.common import Context
    from miotui.driver.commands.conv import read_conv_flags, read_plain_2d
    from miotui.driver.tables import subcommand
    line = ("conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 "
            "-t 1").split()
    sub, ctx = subcommand("conv"), Context(None, "LogCmdConvolution", None)
    direct = read_plain_2d(sub, line[0], line[1:], ctx)
    assert direct is not None and direct == read_conv_flags(sub, line[0], line[1:], ctx)
    assert read_plain_2d(sub, "conv", line[1:-2] + ["-t", "x1"], ctx) is None   # not the usual line

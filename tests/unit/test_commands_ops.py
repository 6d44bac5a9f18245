"""Driver commands of every primitive beyond conv/pool/bnorm/activ/lrn/softmax/fusion (RNN, the
norms, the reductions, the Adam family, tensorop, dropout, CTC, GEMM, cat, getitem, kthvalue,
PReLU, RoPE, GLU, the margin losses, sum, argmax): typed command -> problem -> command round
trips for today's driver and older eras, the repairs of MIOpen's own Command lines (each line
spelled as the library prints it), and a fuzz test that nothing but DriverCommandError escapes.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miotui.driver import (
    KNOWN_BASES,
    DriverCommandError,
    parse_driver_args,
    parse_driver_command,
    to_driver_argv,
    to_driver_command,
)
from miotui.driver.commands.ops import join_cat_parts
from miotui.driver.tables import SUBCOMMANDS
from miotui.problems import GroupNormProblem, LayerNormProblem, OpProblem, ReduceProblem, RNNProblem

# ---------------------------------------------------------------- typed commands, one strategy per family

pos = st.integers(1, 48)
exact = st.sampled_from(["0", "0.5", "0.25", "1e-05", "0.001", "0.9", "0.999", "1e-08", "2"])


def _shape(draw, lo: int = 1, hi: int = 5) -> str:
    return "x".join(str(draw(pos)) for _ in range(draw(st.integers(lo, hi))))


def _rnn(draw, base_names: list[str]) -> list[str]:
    seq_api = "seq" in base_names[0]
    steps = draw(st.integers(1, 8))
    hidden = draw(pos)
    skip = draw(st.booleans())
    argv = [draw(st.sampled_from(base_names)), "-W", str(hidden if skip else draw(pos)), "-H", str(hidden),
            "-l", str(draw(st.integers(1, 3))), "-b", draw(st.sampled_from(["0", "1"])),
            "-m", draw(st.sampled_from(["relu", "tanh", "lstm", "gru"])), "-p", "1" if skip else "0",
            "-r", draw(st.sampled_from(["0", "1"])), "-k", str(steps),
            "-F", draw(st.sampled_from(["0", "1", "2", "4", "3", "6"])), "-c", draw(st.sampled_from(["0", "1"]))]
    if seq_api:
        batch = draw(pos)
        argv += ["-n", str(batch), "-I", draw(st.sampled_from(["1", "2", "3"]))]
        if draw(st.booleans()):
            argv += ["-K", ",".join(str(draw(st.integers(1, steps))) for _ in range(batch))]
    else:
        sizes = sorted((draw(pos) for _ in range(draw(st.integers(1, steps)))), reverse=True)
        argv += ["-n", ",".join(map(str, sizes)), "-q", draw(st.sampled_from(["0", "1"]))]
    if draw(st.booleans()):
        argv += ["-U", "1", "-P", draw(st.sampled_from(["0.25", "0.5"]))]
    return argv


def _layernorm(draw) -> list[str]:
    spelling = draw(st.sampled_from(["newest", "X", "lower"]))
    if spelling == "X":
        shape = _shape(draw, 2, 5)
        argv = ["layernorm", "-X", shape]
        rank = shape.count("x") + 1
    elif spelling == "lower":
        argv = ["layernorm", "-n", str(draw(pos)), "-c", str(draw(pos)), "-H", str(draw(pos)), "-W", str(draw(pos))]
        rank = 4
    else:
        argv = ["layernorm", "-N", str(draw(pos)), "-C", str(draw(pos)), "-H", str(draw(pos)), "-W", str(draw(pos))]
        rank = 4
        if draw(st.booleans()):
            argv += ["-D", str(draw(pos))]
            rank = 5
    argv[0] = draw(st.sampled_from(["layernorm", "layernormfp16", "layernormbfp16"]))
    # up to 3.4 (the -X and -n/-c spellings) the driver's backward is an empty stub: -F 2 runs nothing
    forw = ["0", "1", "2"] if spelling == "newest" else ["0", "1"]
    return argv + ["-o", str(draw(st.integers(0, rank - 1))), "-e", draw(exact), "-m", draw(st.sampled_from("01")),
                   "-F", draw(st.sampled_from(forw))]


def _norm_x(draw, family: str) -> list[str]:
    shape = _shape(draw, 2, 5)
    argv = [draw(st.sampled_from([family, family + "fp16", family + "bfp16"])), "-X", shape, "-e", draw(exact)]
    if family == "addlayernorm":
        return argv + ["-o", str(draw(st.integers(0, shape.count("x")))), "-m", draw(st.sampled_from("23"))]
    return argv + ["-m", draw(st.sampled_from("45")), "-F", draw(st.sampled_from(["0", "1", "2"]))]


def _groupnorm(draw) -> list[str]:
    groups = draw(st.integers(1, 4))
    return [draw(st.sampled_from(["groupnorm", "groupnormfp16", "groupnormbfp16"])), "-n", str(draw(pos)),
            "-c", str(groups * draw(st.integers(1, 8))), "-D", draw(st.sampled_from(["0", "3"])),
            "-H", str(draw(pos)), "-W", str(draw(pos)), "-g", str(groups), "-e", draw(exact),
            "-m", draw(st.sampled_from("01"))]


def _reduce(draw) -> list[str]:
    rank = draw(st.integers(1, 5))
    dims = sorted(set(draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank))))
    op = draw(st.integers(0, 7))
    return [draw(st.sampled_from(["reduce", "reducefp16", "reducefp64"])),
            "-D", ",".join(str(draw(pos)) for _ in range(rank)), "-R", ",".join(map(str, dims)), "-O", str(op),
            "-C", draw(st.sampled_from(["0", "1", "6"])), "-N", draw(st.sampled_from("01")),
            "-I", "1" if op in (2, 3, 4) and draw(st.booleans()) else "0", "-A", draw(exact), "-B", draw(exact)]


def _one_dim(draw, family: str) -> list[str]:
    shape = _shape(draw, 1, 4)
    rank = shape.count("x") + 1
    argv = [draw(st.sampled_from([family, family + "fp16", family + "bfp16"])), "-X", shape,
            "-R", str(draw(st.integers(0, rank - 1)))]
    if family == "reduceextreme":
        return argv + ["-O", str(draw(st.integers(1, 4)))]
    return argv + ["-O", draw(st.sampled_from("12")), "-N", draw(st.sampled_from("01"))]


def _sum_or_argmax(draw, family: str) -> list[str]:
    argv = [draw(st.sampled_from([family, family + "fp16", family + "bfp16"])), "-n", str(draw(pos)),
            "-c", str(draw(pos)), "-W", str(draw(pos))]
    if draw(st.booleans()):
        argv += ["-H", str(draw(pos))]
    argv += ["-R", str(draw(st.integers(0, 2)))]
    return argv + (["-N", draw(st.sampled_from("01"))] if family == "sum" else [])


def _adam(draw, family: str) -> list[str]:
    bases = {"adam": ["adam", "adamfp16", "adamw", "adamwfp16"], "ampadam": ["ampadam", "ampadamw"],
             "transformersadamw": ["transformersadamw", "transformersadamwfp16"],
             "transformersampadamw": ["transformersampadamw"]}[family]
    argv = [draw(st.sampled_from(bases)), "-d", _shape(draw, 1, 3)]
    for flag in ("-l", "-1", "-2", "-e", "-W"):
        argv += [flag, draw(exact)]
    bools = ["-c"] if family.startswith("transformers") else ["-a", "-m"]
    for flag in bools:
        argv += [flag, draw(st.sampled_from("01"))]
    return argv


def _misc(draw, family: str) -> list[str]:
    if family == "tensorop":
        op = draw(st.integers(0, 5))
        argv = ["tensorop", "-n", str(draw(pos)), "-c", str(draw(pos)), "-H", str(draw(pos)), "-W", str(draw(pos)),
                "-o", str(op)]
        return argv + (["-v", draw(exact)] if op < 2 else ["-A", draw(exact), "-B", draw(exact), "-G", draw(exact)])
    if family == "dropout":
        return [draw(st.sampled_from(["dropout", "dropoutfp16"])), "-d", _shape(draw, 1, 5).replace("x", ","),
                "-p", draw(st.sampled_from(["0", "0.25", "0.5"])), "-e", draw(st.sampled_from("01")),
                "-F", draw(st.sampled_from("012"))]
    if family == "ctc":
        n = draw(st.integers(1, 4))
        return ["ctc", "-n", str(n), "-c", str(draw(pos)), "-b", "0", "-m", draw(st.sampled_from("01")),
                "-a", draw(st.sampled_from("01")), "-k", ",".join(str(draw(pos)) for _ in range(n)),
                "-l", ",".join(str(draw(pos)) for _ in range(n))]
    if family == "gemm":
        return [draw(st.sampled_from(["gemm", "gemmfp16"])), "--a_h", str(draw(pos)), "--a_w", str(draw(pos)),
                "--b_w", str(draw(pos)), "-b", str(draw(st.integers(1, 3))), "--transA", draw(st.sampled_from("01")),
                "--transB", draw(st.sampled_from("01")), "-A", draw(exact), "-B", draw(exact)]
    if family == "cat":
        lens = [draw(pos) for _ in range(draw(st.integers(1, 4)))]
        dim = draw(st.integers(0, len(lens) - 1))
        argv = [draw(st.sampled_from(["cat", "catfp16", "catbfp16"])), "-d", str(dim)]
        for i in range(draw(st.integers(2, 8))):
            part = list(lens)
            part[dim] = draw(pos)
            argv += [f"--input{i + 1}", "x".join(map(str, part))]
        return argv
    if family == "getitem":
        return [draw(st.sampled_from(["getitem", "getitemfp16", "getitembfp16"])), "-O", _shape(draw, 1, 3),
                "-D", _shape(draw, 1, 2), "-N", _shape(draw, 1, 3), "-1", "1", "-2", "1", "-3", "0",
                "-4", "0", "-6", str(draw(st.integers(0, 3)))]
    if family == "kthvalue":
        shape = _shape(draw, 1, 4)
        rank = shape.count("x") + 1
        return [draw(st.sampled_from(["kthvalue", "kthvaluefp16", "kthvaluebfp16"])), "-D", shape,
                "-k", str(draw(st.integers(1, 4))), "-d", str(draw(st.integers(-rank, rank - 1))),
                "-K", draw(st.sampled_from("01")), "-c", draw(st.sampled_from("01"))]
    if family == "prelu":
        return [draw(st.sampled_from(["prelu", "prelufp16", "prelubfp16"])), "-D", _shape(draw, 1, 5),
                "-P", str(draw(pos)), "-F", draw(st.sampled_from("012"))]
    if family == "rope":
        return [draw(st.sampled_from(["rope", "ropefp16", "ropebfp16"])), "-X", _shape(draw, 3, 5),
                "-F", draw(st.sampled_from("012"))]
    if family == "glu":
        lens = [2 * draw(pos) for _ in range(draw(st.integers(1, 4)))]
        return [draw(st.sampled_from(["glu", "glufp16", "glubfp16"])), "-D", "x".join(map(str, lens)),
                "-R", str(draw(st.integers(0, len(lens) - 1))), "-F", draw(st.sampled_from("012"))]
    argv = [draw(st.sampled_from([family, family + "fp16", family + "bfp16"])), "-D", _shape(draw, 2, 4),
            "-C", draw(st.sampled_from("01")), "-R", draw(st.sampled_from(["none", "mean", "sum"]))]
    return argv + (["-F", draw(st.sampled_from("012"))] if family == "softmarginloss" else [])


#: family -> (typed-command strategy, the eras a command is also written for)
FAMILIES = {
    "rnn": (lambda d: _rnn(d, ["rnn", "rnnfp16"]), [None, (3, 0), (2, 4)]),
    "rnn_seq": (lambda d: _rnn(d, ["rnn_seq", "rnn_seqfp16"]), [None, (3, 2)]),
    "layernorm": (_layernorm, [None, (3, 4), (3, 1)]),
    "addlayernorm": (lambda d: _norm_x(d, "addlayernorm"), [None, (3, 2)]),
    "t5layernorm": (lambda d: _norm_x(d, "t5layernorm"), [None, (3, 3)]),
    "groupnorm": (_groupnorm, [None, (3, 2)]),
    "reduce": (_reduce, [None, (2, 14), (3, 4)]),
    "reduceextreme": (lambda d: _one_dim(d, "reduceextreme"), [None, (3, 2)]),
    "reducecalculation": (lambda d: _one_dim(d, "reducecalculation"), [None, (3, 3)]),
    "sum": (lambda d: _sum_or_argmax(d, "sum"), [(3, 2), (3, 1)]),
    "argmax": (lambda d: _sum_or_argmax(d, "argmax"), [(3, 1)]),
    "adam": (lambda d: _adam(d, "adam"), [None, (3, 3)]),
    "ampadam": (lambda d: _adam(d, "ampadam"), [None, (3, 3)]),
    "transformersadamw": (lambda d: _adam(d, "transformersadamw"), [None]),
    "transformersampadamw": (lambda d: _adam(d, "transformersampadamw"), [None]),
    **{f: (lambda d, f=f: _misc(d, f), [None, (3, 3), (2, 14)]) for f in (
        "tensorop", "dropout", "ctc", "gemm", "cat", "getitem", "kthvalue", "prelu", "rope", "glu",
        "softmarginloss", "multimarginloss")},
}
_NEWEST_ONLY_BASE_MISSING = {"sum", "argmax"}


def test_every_family_has_a_reader_a_writer_and_a_round_trip():
    from miotui.driver.commands import READERS
    assert set(FAMILIES) | {"conv", "fusion", "pool", "bnorm", "activ", "lrn", "softmax"} == \
        {s.family for s in SUBCOMMANDS} == set(READERS)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_typed_command_round_trips(family, data):
    """command -> problems -> command for every era listed -> the same problems; a writer
    refuses (DriverCommandError) only what that era's driver lacks."""
    strategy, eras = FAMILIES[family]
    argv = data.draw(st.composite(lambda draw: strategy(draw))())
    version = eras[0]
    parsed = parse_driver_args(argv, version=version)
    assert parsed.problems
    for problem in parsed.problems:
        assert problem.op != ""
        written_for = []
        for era in eras:
            try:
                written = to_driver_argv(problem, era)
            except DriverCommandError:
                continue   # that era's driver lacks a flag, a base or a rank this layer needs
            back = parse_driver_args(written, version=era).problems
            assert problem in back, (argv, era, written, back)
            written_for.append(era)
        assert written_for, f"{argv} -> {problem} has a command for none of {eras}"
        # today's command is a fixed point
        if None in written_for:
            cmd = to_driver_argv(problem)
            again = [p for p in parse_driver_args(cmd).problems if p.direction == problem.direction]
            assert to_driver_argv(again[0]) == cmd


# ---------------------------------------------------------------- typed commands: eras and defaults

def test_rnn_directions_batch_list_and_inference():
    r = parse_driver_command("rnn -n 4,3 -W 8 -H 16 -l 2 -m gru -k 4 -F 3 -c 1")
    fwd, bwd = r.problems
    assert (fwd.direction, bwd.direction) == ("fwd", "bwd")
    assert fwd.batch == (4, 3, 3, 3) and fwd.inference and not bwd.inference
    assert parse_driver_command("rnn -n 2 -k 3 -F 0").problems[2].direction == "wrw"
    with pytest.raises(DriverCommandError, match="-F"):
        parse_driver_command("rnn -n 2 -k 3 -F 8")
    with pytest.raises(DriverCommandError):
        parse_driver_command("rnn -n 2,3 -k 3 -F 1")   # per-step batch sizes must not increase
    # the writer keeps to the era: -q (padding) from 3.0, dropout from 2.4, rnn_seq from 3.0
    padded = RNNProblem("fwd", "fp32", "lstm", (2,), 3, 8, 8, padded=True)
    assert "-q" in to_driver_argv(padded, (3, 0))
    with pytest.raises(DriverCommandError, match="-q"):
        to_driver_argv(padded, (2, 20))
    with pytest.raises(DriverCommandError, match="-U"):
        to_driver_argv(RNNProblem("fwd", "fp32", "lstm", (2,), 3, 8, 8, dropout=0.5), (2, 3))
    with pytest.raises(DriverCommandError, match="rnn_seq"):
        to_driver_argv(RNNProblem("bwd", "fp32", "tanh", (2,), 3, 8, 8, api="rnn_seq", io_layout=1), (2, 20))


def test_layernorm_spelling_sets_the_era_and_its_defaults():
    # -X is 3.2-3.4 spelling, whose -F default is forward only (the real log 139's command), and whose
    # backward pass is an empty stub (-F 0 runs forward only, -F 2 nothing)
    (p,) = parse_driver_command("MIOpenDriver layernorm -X 64x4x4x128 -o 1 -t 1 -i 10").problems
    assert p == LayerNormProblem("fwd", "fp32", (64, 4, 4, 128), 1, 1e-5, 0, "layernorm")
    assert parse_driver_command("layernorm -X 64x4x4x128 -o 1 -F 0").problems == (p,)
    with pytest.raises(DriverCommandError, match="no backward"):
        parse_driver_command("layernorm -X 64x4x4x128 -o 1 -F 2")
    # today's -N/-C default is both directions; N and W with C = H = 0 is 2-D
    fwd, bwd = parse_driver_command("layernorm -N 8 -C 0 -H 0 -W 64 -o 1").problems
    assert fwd.shape == (8, 64) and bwd.direction == "bwd"
    assert to_driver_command(fwd) == "MIOpenDriver layernorm -N 8 -C 0 -H 0 -W 64 -e 1e-05 -o 1 -m 0 -F 1"
    assert to_driver_command(fwd, version=(3, 4)) == "MIOpenDriver layernorm -X 8x64 -e 1e-05 -o 1 -m 0 -F 1"
    with pytest.raises(DriverCommandError, match="NCHW or NCDHW"):
        to_driver_argv(fwd, (3, 1))
    with pytest.raises(DriverCommandError, match="backward"):
        to_driver_argv(bwd, (3, 4))
    # a transformer's (batch, tokens, features): today's driver has no 3-D input; 3.2-3.4 take it
    three_d = LayerNormProblem("fwd", "fp32", (2, 8, 16), 2)
    with pytest.raises(DriverCommandError, match="3.2-3.4 take it as -X 2x8x16"):
        to_driver_argv(three_d)
    assert to_driver_argv(three_d, (3, 3))[:3] == ["layernorm", "-X", "2x8x16"]


def test_groupnorm_always_spells_depth_and_newer_3d():
    p = GroupNormProblem("fwd", "fp16", (2, 8, 5, 5), 4)
    assert to_driver_command(p) == ("MIOpenDriver groupnormfp16 -n 2 -c 8 -D 0 -H 5 -W 5 -g 4 -e 1e-05 -m 0 -F 1")
    assert parse_driver_command(to_driver_command(p)).problems == (p,)
    # omitting -D: the 3.3+ default depth 14 makes the input 5-D
    assert parse_driver_command("groupnorm -n 2 -c 8 -H 5 -W 5 -g 4").problems[0].shape == (2, 8, 14, 5, 5)
    assert parse_driver_args("groupnorm -n 2 -c 8 -H 5 -W 5 -g 4".split(), version=(3, 2)).problems[0].shape == \
        (2, 8, 5, 5)


def test_reduce_defaults_read_with_atoi_and_written_in_full():
    (p,) = parse_driver_command("bin/MIOpenDriver  reducefp64  -D 64,3,280,81 -R 0,1 -O 1  ").problems
    assert p == ReduceProblem("fwd", "fp64", (64, 3, 280, 81), (0, 1), 1, comp_dtype="fp32")  # -C 1: float
    assert to_driver_argv(p) == ["reducefp64", "-D", "64,3,280,81", "-R", "0,1", "-O", "1", "-C", "1", "-N", "0",
                                 "-I", "0", "-A", "1", "-B", "0"]
    with pytest.raises(DriverCommandError, match="fp64"):
        to_driver_argv(p, (2, 13))   # reducefp64 came in 2.14


def test_gemm_long_names_and_flops():
    (p,) = parse_driver_command("gemmfp16 --a_w 32 --a_h 64 --b_w 128 --transA 1").problems
    assert (p.param("m"), p.param("n"), p.param("k"), p.param("u")) == ("64", "128", "32", "1")
    assert p.flops == 2 * 64 * 128 * 32 and not p.memory_bound
    with pytest.raises(DriverCommandError):
        to_driver_argv(p, (1, 1))   # MIOpen 1.1 had no gemm driver


def test_sum_and_argmax_run_only_on_their_eras():
    (p,) = parse_driver_args("sum -n 4 -c 8 -W 16 -R 2".split(), version=(3, 2)).problems
    assert to_driver_argv(p, (3, 2)) == ["sum", "-n", "4", "-c", "8", "-W", "16", "-D", "0", "-H", "0", "-N", "0",
                                         "-R", "2"]
    for era in (None, (3, 3)):  # gone today; 3.3-3.4 kept the base but had no such driver
        with pytest.raises(DriverCommandError):
            to_driver_argv(p, era)


def test_adam_kind_is_in_the_base():
    (p,) = parse_driver_command("ampadamw -d 8x4 -l 0.01").problems
    assert p.op == "adam" and ("adamw", "1") in p.params and ("amp", "1") in p.params and p.dtype == "fp32"
    assert to_driver_argv(p)[0] == "ampadamw"
    with pytest.raises(DriverCommandError):
        to_driver_argv(p, (3, 2))   # ampadamw came in 3.3


def test_tensoropfp16_left_the_valid_list():
    (p,) = parse_driver_command("tensoropfp16 -n 1 -c 2 -H 3 -W 4 -o 3").problems
    assert to_driver_argv(p, (3, 2))[0] == "tensoropfp16"
    with pytest.raises(DriverCommandError, match="tensoropfp16"):
        to_driver_argv(p)


# ---------------------------------------------------------------- MIOpen's own Command lines

def logged(args: str, fn: str):
    """A Command line's arguments, split as the scanner splits them (on whitespace)."""
    return parse_driver_args(args.split(), log_fn=fn)


def test_logcmd_rnn_real_lines():
    # tests/data/real_logs/101 and 210 (Windows TheRock build, 2026)
    fwd = logged("rnn -n 256 -W 30 -H 256 -l 2 -b 1 -m lstm -p 0 -r 0 -q 0 -k 45 -c 0 -F 1 -t 1 -w 1", "LogCmdRNN")
    (p,) = fwd.problems
    assert p == RNNProblem("fwd", "fp32", "lstm", (256,), 45, 30, 256, 2, True)
    assert to_driver_command(p) == ("MIOpenDriver rnn -n 256 -W 30 -H 256 -l 2 -b 1 -m lstm -p 0 -r 0 -k 45 -c 0 "
                                    "-F 1")
    with pytest.raises(DriverCommandError, match="cut"):
        logged("rnn -n 256 -W 30 -H 256 -l 2 -b 1 -m lstm -p 0 -r 0 -q 0 -k 45 -F 2", "LogCmdRNN")
    with pytest.raises(DriverCommandError, match="-F"):   # MIOpen 2.1-2.2: no -F
        logged("rnn -n 4 -W 8 -H 8 -l 1 -b 0 -m tanh -p 0 -r 0 -k 2 -c 0 -t 1 -w 1", "LogCmdRNN")
    (seq,) = logged("rnn_seqfp16 -n 3 -W 8 -H 16 -l 1 -b 1 -m gru -p 0 -r 1 -k 5 -K 5,3,2 -a 0 -I 1 -F 4 -t 1 -w 1 "
                    "-U 1 -P 0.500000 -L 7 -M 0", "LogCmdRNN").problems
    assert (seq.api, seq.direction, seq.dtype, seq.seq_lens, seq.dropout) == ("rnn_seq", "wrw", "fp16", (5, 3, 2),
                                                                              0.5)


@pytest.mark.parametrize("line, fn, what", [
    # LogCmdLayerNorm: "layernormfp32 -n -c [-D -H -W | -H -W | -W] -F 1|2 -m mode"
    ("layernormfp32 -n 32 -c 128 -W 768 -F 1 -m 1", "LogCmdLayerNorm", "layernormfp32"),
    ("addlayernormbfp16 -n 2 -c 4 -H 8 -W 16 -F 1 -m 2", "LogCmdAddLayerNorm", "-n/-c/-H/-W"),
    ("groupnormfp32 -n 2 -c 32 -H 16 -W 16 -g 8 -m 0 -F 1", "LogCmdGroupNorm", "groupnormfp32"),
    ("reducefp -A 1 -B 0 -C 1 -D 16,32,8 -I 0 -N 0 -O 3 -R 1", "LogCmdRedux", "reducefp"),
    ("ropebfp16 -input 2x8x16x64 -F 1", "LogCmdRoPE", "-input"),
    ("reduceextremefp32 -input 21x500x375 -F 1 -R 1 -O 2", "LogCmdReduceExtreme", "-input"),
    ("reduceextremefp16 -n 21 -c 500 -W 375 -F 1 -R 1 -O 3", "LogCmdReduceExtreme", "-n/-c/-H/-W"),
    ("prelufp32 --input {4,8,16} --weight {8} -F 2", "LogCmdPReLU", "--weight"),
])
def test_logged_lines_repaired_to_runnable_commands(line, fn, what):
    parsed = logged(line, fn)
    assert any(what in w for w in parsed.warnings), parsed.warnings
    for p in parsed.problems:
        if getattr(p, "missing", ()):
            continue
        cmd = to_driver_argv(p)
        assert parse_driver_args(cmd).problems[0] == p


def test_logged_layernorm_lacks_normalized_dim_and_t5_backward_is_unknowable():
    (p,) = logged("layernormfp32 -n 32 -c 128 -W 768 -F 1 -m 1", "LogCmdLayerNorm").problems
    assert p.shape == (32, 128, 768) and p.missing == ("normalized_dim",) and p.normalized_dim == -1
    with pytest.raises(DriverCommandError, match="normalized_dim"):
        to_driver_argv(p)
    t5 = logged("t5layernormfp16 -n 2 -c 8 -W 64 -F 1 -m 5", "LogCmdT5LayerNorm")
    assert t5.problems[0].normalized_dim == 2 and any("backward" in w for w in t5.warnings)
    assert "direction" in t5.problems[0].lossy_fields


@pytest.mark.parametrize("line, fn, missing", [
    # one line per cat input ("-dims" reads as -d, the dimension)
    ("catf16 -dims 4,136800,91 -F 1", "LogCmdCat", ("dim", "inputs")),
    # the input shape is computed but never printed; the NaN mode is printed as -n
    ("reducecalculationfp32 -F 1 -n 0 -R 1 -O 2", "LogCmdReduceCalculation", ("input",)),
    # -d is the rank, not the lengths
    ("dropout -F 1 -d 4 -e 0 -l 0 -m 0 -p 0.500000", "LogCmdDropout", ("input_dim",)),
    # k, dim and keep-dim are not printed
    ("kthvaluefp32 -n 4 -T {4,8,16} -Si {128,16,1} -F 1", "LogCmdKthvalue", ("k", "dim", "keep-dim")),
    # "i != size - 2" glues the last two lengths: "4,1616," is 4x16x16 or 4x1x616 ...
    ("getitemf16 -doutput 4,1616, -index1 4, -dx 4,1616, -dims01, -slice -offset3 -F 1", "LogCmdGetitem",
     ("doutput", "indexs", "dinput")),
    # the sum line prints -n twice and no dimension
    ("sumfp32 -n 256 -c 4 -W 8732 -F 1 -n 1", "LogCmdSum", ("DimToReduce",)),
])
def test_logged_lines_not_reproducible_keep_the_layer(line, fn, missing):
    (p,) = logged(line, fn).problems
    assert p.missing == missing
    with pytest.raises(DriverCommandError, match="not reproducible"):
        to_driver_argv(p)


def test_logged_details_read_back():
    (cat,) = logged("catf16 -dims 4,136800,91 -F 1", "LogCmdCat").problems
    assert cat.dtype == "bf16" and cat.shapes == (("input1", (4, 136800, 91)),)
    (get,) = logged("getitemf16 -doutput 4,1616, -index1 4, -dx 4,1616, -dims01, -slice -offset3 -F 1",
                    "LogCmdGetitem").problems
    assert get.direction == "bwd" and dict(get.params)["3"] == "0,1" and dict(get.params)["6"] == "3"
    (kth,) = logged("kthvaluefp16 -n 4 -T {4,8,16} -Si {1,4,32} -F 1", "LogCmdKthvalue").problems
    assert kth.dtype == "fp16" and kth.param("c") == "0"     # transposed strides: not contiguous
    (s,) = logged("sumfp32 -n 256 -c 4 -W 8732 -F 1 -n 1", "LogCmdSum").problems
    assert s.shapes == (("input", (256, 4, 8732)),) and s.param("N") == "1"
    (ctc,) = logged(" ctc  -a 0 -b 0 -c 28 -m 1 -n 2 -l 3,4 -k 10,12", "miopenCTCLoss").problems
    assert ctc.shapes == (("probs", (12, 2, 29)),) and to_driver_argv(ctc)[0] == "ctc"
    (op,) = logged("tensorop -A 1.000000 -B 2.000000 -G 0.000000 -n 2 -c 3 -H 4 -W 5 -o 3", "LogCmdTensorOp").problems
    assert op.params == (("o", "3"), ("A", "1"), ("B", "2"), ("G", "0"))
    (adam,) = logged("adamw -d 64x32 -l 0.001 -1 0.9 -2 0.999 -e 1e-08 -W 0.01 -a 0 -m 0", "LogCmdAdam").problems
    assert to_driver_argv(adam) == ["adamw", "-d", "64x32", "-l", "0.001", "-1", "0.9", "-2", "0.999", "-e", "1e-08",
                                    "-W", "0.01", "-a", "0", "-m", "0"]


def test_cat_lines_of_one_call_join():
    parts = [logged(f"catfp32 -dims 4,{n},91 -F 1", "LogCmdCat").problems[0] for n in (136800, 34200, 8550)]
    whole = join_cat_parts(parts)
    assert whole.params == (("d", "1"),) and not whole.missing and len(whole.shapes) == 3
    assert to_driver_argv(whole) == ["cat", "-1", "4x136800x91", "-2", "4x34200x91", "-3", "4x8550x91", "-d", "1"]
    same = join_cat_parts(parts[:1] * 2)
    assert same.missing == ("dim",)
    assert join_cat_parts(parts[:1] * 2, dim=0).params == (("d", "0"),)
    with pytest.raises(DriverCommandError):
        join_cat_parts([OpProblem("rope", "fwd", "fp32", (("input", (2, 3)),))])


# ---------------------------------------------------------------- fuzz

_FLAG_POOL = sorted({f"-{f.short}" for s in SUBCOMMANDS for f in s.flags} |
                    {f"--{f.long}" for s in SUBCOMMANDS for f in s.flags} |
                    {"-input", "-dims", "--weight", "-T", "-Si", "-doutput", "-index1", "-dx", "-dims0,", "-slice",
                     "-offset1", "-n", "-", "--", "-F1", "--x=1"})
_VALUES = st.one_of(st.integers(-3, 300).map(str), st.sampled_from(
    ["", "0", "1", "2", "4", "7", "1.5", "abc", "$N", "<N>", "4,3,2", "4x8x16", "4x8,NHWC", "{4,8}", "{}", "0x10",
     "1e-05", "nan", "inf", "lstm", "gru", "none", "mean", "2x32x128x128x128", "99999999999999", "-1", ",", "x",
     "4,1616,", "8x0", "1x2,3x4"]), st.text(max_size=6))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(sorted(KNOWN_BASES)), tokens=st.lists(st.one_of(st.sampled_from(_FLAG_POOL), _VALUES),
                                                                    max_size=14),
       fn=st.sampled_from([None, "LogCmdRNN", "LogCmdCat", "LogCmdX"]),
       version=st.sampled_from([None, (2, 3), (3, 1), (3, 4)]))
def test_fuzz_parse_and_write_raise_only_command_errors(base, tokens, fn, version):
    try:
        parsed = parse_driver_args([base] + tokens, log_fn=fn)
    except DriverCommandError:
        return
    for problem in parsed.problems:
        try:
            to_driver_argv(problem, version)
        except DriverCommandError:
            pass


def test_flags_a_logged_line_must_have_are_ones_miopen_prints():
    """The readers call a Command line cut when it lacks a flag; each such flag is one the
    family's LOGGED_FLAGS table says every MIOpen since the first era with -F prints."""
    from miotui.driver.commands import adam, classic, norm, reduce, rnn
    from miotui.driver.spec import parse_version
    from miotui.driver.tables import logged_flags
    for module in (adam, classic, norm, reduce, rnn):
        for family, required in module.LOGGED_REQUIRED.items():
            eras = logged_flags(family)
            assert eras, family
            for first, _last, _, tokens in eras:
                if family.startswith("rnn") and parse_version(first) < (2, 3):
                    continue   # no -F before 2.3: the reader says the direction cannot be told
                for letter in required.split():
                    assert f"-{letter}" in tokens, (family, first, letter)


@pytest.mark.parametrize("line, dtype", [
    ("groupnormfp64 -n 2 -c 4 -H 8 -W 8 -g 2 -m 0 -F 1", "fp64"),
    ("layernormfp64 -n 2 -c 4 -H 8 -W 8 -m 0 -F 1 -o 1", "fp64"),
])
def test_a_logged_base_with_no_driver_for_its_dtype_is_a_layer_of_that_dtype(line, dtype):
    parsed = parse_driver_args(line.split(), log_fn="LogCmdNorm")
    assert [p.dtype for p in parsed.problems] == [dtype]
    assert any("no MIOpenDriver runs" in w for w in parsed.warnings)
    with pytest.raises(DriverCommandError):
        to_driver_argv(parsed.problems[0])
    with pytest.raises(DriverCommandError, match="not a MIOpenDriver base"):  # typed: no such driver
        parse_driver_args(line.split())

"""The scanner's fast paths (a repeated API block recognised by its text, a repeated plain
Command or level line replayed) must give exactly the catalog of the general line-by-line
path, for any input and any chunking: bundled, real and generated logs, and hypothesis-made
ones."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from miotui.catalog import Catalog
from miotui.decode_output import render
from miotui.formats.miopen.scan import LogScanner

ROOT = Path(__file__).parents[2]
LOGS = sorted(p for p in [*(ROOT / "sample_logs").glob("*.log"), *(ROOT / "tests/data/real_logs").iterdir(),
                          *(ROOT / "tests/data/regress").iterdir()] if p.is_file() and p.suffix != ".gz")


def decode(data: bytes, whole_blocks: bool, chunks: list[int] = (),
           repeat_lines: bool | None = None) -> tuple[dict, LogScanner]:
    """What a reader sees of ``data`` fed in ``chunks`` (then the rest), and the scanner;
    ``whole_blocks`` switches both fast paths unless ``repeat_lines`` says otherwise."""
    catalog = Catalog()
    scanner = LogScanner(catalog)
    scanner.whole_blocks = whole_blocks
    scanner.repeat_lines = whole_blocks if repeat_lines is None else repeat_lines
    pos = 0
    for size in chunks:
        scanner.feed(data[pos:pos + size])
        pos += size
    scanner.feed(data[pos:])
    scanner.finish()
    return _seen(catalog), scanner


def _seen(catalog: Catalog) -> dict:
    """What a reader sees of a catalog: ``decode``'s json and every layer's snapshot (the
    annotations and their history, the raw lines, which the json leaves out)."""
    out = json.loads(render(catalog, "json"))
    del out["stats"]["seconds"]
    out["snapshots"] = catalog.layers()
    return out


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_bundled_and_real_logs_decode_the_same_both_ways(path):
    data = path.read_bytes()
    expected, _ = decode(data, False)
    rnd = random.Random(path.name)
    chunks = [rnd.randint(1, 4000) for _ in range(rnd.randint(1, 40))]
    assert decode(data, True)[0] == expected
    assert decode(data, True, chunks)[0] == expected
    assert decode(data, False, chunks, repeat_lines=True)[0] == expected


def _generated() -> list[tuple[str, bytes]]:
    from miotui import samplegen
    out = []
    for fmt in ("command", "info", "trace2018", "trace2x", "trace55"):
        text = samplegen.generate_text(samplegen.SampleSpec(format=fmt, size=300_000, seed=3))
        out.append((fmt, text.encode()))
    return out


@pytest.mark.parametrize("fmt, data", _generated(), ids=lambda v: v if isinstance(v, str) else "")
def test_generated_logs_decode_the_same_both_ways(fmt, data):
    expected, _ = decode(data, False)
    rnd = random.Random(fmt)
    chunks = [rnd.randint(1, 20_000) for _ in range(30)]
    assert decode(data, True, chunks)[0] == expected
    assert expected["layers"] and not expected["undecoded"] or fmt in ("trace2018", "trace55")


def block(name: str, params: list[tuple[str, str]], tid: str = "", prefix: str = "MIOpen(HIP): ") -> list[str]:
    lead = f"{tid} " if tid else ""
    head = f"{lead}{prefix}miopenStatus_t {name}(miopenHandle_t, ...){{"
    return [head] + [f"{lead}{prefix}\t{k} = {v}" for k, v in params] + [f"{lead}{prefix}}}"]


def set_tensor(dtype: int, lens: str, strides: str) -> list[str]:
    return block("miopenSetTensorDescriptor", [("tensorDesc", "{}, {}, packed, "), ("dataType", str(dtype)),
                                               ("nbDims", "4"), ("dim.values", "{ " + lens + " }"),
                                               ("stride.values", "{ " + strides + " }")])


def conv(x: str = "{8, 16, 14, 14}, {3136, 196, 14, 1}, packed, ", tid: str = "") -> list[str]:
    return block("miopenConvolutionForward", [
        ("handle", "stream: 0, device_id: 0"), ("alpha", "0x7ffc9021f51c"), ("xDesc", x), ("x", "0x7f9a90000000"),
        ("wDesc", "{32, 16, 3, 3}, {144, 9, 3, 1}, packed, "), ("w", "0x7f9f00000000"),
        ("convDesc", "conv2d, miopenConvolution, miopenPaddingDefault, {1, 1}, {1, 1}, {1, 1}, "),
        ("algo", "1"), ("beta", "0x7ffc9021f518"), ("yDesc", "{8, 32, 14, 14}, {6272, 196, 14, 1}, packed, "),
        ("y", "0x7f9a91260000"), ("workSpace", "nullptr"), ("workSpaceSize", "0")], tid=tid)


@pytest.mark.parametrize("text", ["a\r\nb{\r\r\nc\r\n", "a{\r\r\nb\r\n", "a\r\rb\r\n", "a\r\n\r\rb", "a\rb\r\n\r\nc", "\r\r\n"])
def test_every_cr_ends_one_line_and_crlf_is_one_end(text):
    import re
    expected = len(re.split(r"\r\n|\r|\n", text)) - 1   # the text ends with a line end or the last line
    for whole in (True, False):
        for chunks in ([], [1] * len(text), [2] * (len(text) // 2)):
            out, _ = decode(text.encode(), whole, chunks)
            assert out["stats"]["lines"] == expected + (0 if text.endswith(("\n", "\r")) else 1)


def test_repeated_blocks_take_the_whole_block_path_and_count_every_call():
    lines = set_tensor(1, "8 16 14 14", "3136 196 14 1") + conv() * 50
    out, scanner = decode(("\n".join(lines) + "\n").encode(), True)
    assert scanner.whole_block_hits >= 48
    [layer] = out["layers"]
    assert layer["executions"] == 50 and layer["dtype"] == "fp32" and layer["first_line"] == 8


def test_remembered_data_type_changes_between_identical_blocks():
    """The same block text after a descriptor changed the remembered data type decodes anew."""
    lines = (set_tensor(1, "8 16 14 14", "3136 196 14 1") + conv() * 3
             + set_tensor(0, "8 16 14 14", "3136 196 14 1") + conv() * 2)  # 0 = half
    data = ("\n".join(lines) + "\n").encode()
    fast, _ = decode(data, True)
    assert fast == decode(data, False)[0]
    counts = {layer["dtype"]: layer["executions"] for layer in fast["layers"]}
    assert counts == {"fp32": 3, "fp16": 2}


def test_old_blocks_with_bare_bodies_take_the_whole_block_path():
    lines = (["MIOpen(HIP): miopenStatus_t miopenConvolutionForward(miopenHandle_t, ...){", "xDesc = 8, 16, 14, 14",
              "wDesc = 32, 16, 3, 3", "convDesc = miopenConvolution, 1, 1, 1, 1, 1, 1, ", "yDesc = 8, 32, 14, 14", "}"]
             + ["miopenConvolutionForward: ./bin/MIOpenDriver conv -n 8 -c 16 -H 14 -W 14 -k 32 -y 3 -x 3 "
                "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -t 1"]) * 20
    data = ("\n".join(lines) + "\n").encode()
    out, scanner = decode(data, True)
    assert scanner.whole_block_hits >= 18 and out == decode(data, False)[0]
    assert [layer["executions"] for layer in out["layers"]] == [20]


def test_interleaved_threads_fall_back_to_the_line_path():
    a, b = conv(tid="11"), conv("{4, 16, 14, 14}, {3136, 196, 14, 1}, packed, ", tid="12")
    mixed = [line for pair in zip(a, b, strict=False) for line in pair] + a + b
    data = ("\n".join(mixed) + "\n").encode()
    out, _ = decode(data, True)
    assert out == decode(data, False)[0]
    assert sorted(layer["executions"] for layer in out["layers"]) == [2, 2]


_PIECES = [
    conv(), conv(tid="7"), conv("{2, 16, 14, 14}, {3136, 196, 14, 1}, packed, "),
    set_tensor(1, "8 16 14 14", "3136 196 14 1"), set_tensor(0, "8 16 14 14", "3136 196 14 1"),
    conv()[:5], conv()[5:], conv(tid="7")[:3],  # cut and orphaned halves
    ["MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 8 -c 16 -H 14 -W 14 -k 32 -y 3 -x 3 "
     "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1"],
    ["Epoch 0:   3%|3         | 1/40 [00:00<00:02, 3.1it/s]\rEpoch 0:   5%|5         | 2/40"],
    ["MIOpen(HIP): Info [GetSolutions] Chosen Algorithm: GemmFwd1x1_0_1 , 0, 0"],
    # Command and level-6 lines of ResNet's first layer, a second layer, another thread
    ["MIOpen(HIP): Command [LogCmdFindConvolution] ./bin/MIOpenDriver conv -n 8 -c 16 -H 14 -W 14 -k 32 -y 3 "
     "-x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
     "MIOpen(HIP): Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0",
     "MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: GemmFwdRest , 0, 0.5"],
    ["MIOpen(HIP): Info [ConvolutionForward] algo = 1, workspace = 0"],
    ["MIOpen(HIP): Info [ConvolutionForward] algo = 3, workspace = 0"],
    ["MIOpen(HIP): Info2 [GetInvoker] Returning an invoker for problem 16x14x14x3x3x32x14x14x8xNCHWxFP32x1x1x1x1x1x"
     "1x1xF and algorithm miopenConvolutionFwdAlgoGEMM"],
    ["MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 2 -c 16 -H 14 -W 14 -k 32 -y 3 -x 3 "
     "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1"],
    ["7 MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 8 -c 16 -H 14 -W 14 -k 32 -y 3 -x 3 "
     "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1", "7 MIOpen(HIP): Info [ConvolutionForward] algo = 1, "
     "workspace = 0"],
    ["MIOpenDriver conv -n 8 -c 16 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -F 1 -t 1",
     "MIOpen Forward Conv. Algorithm: 1, Solution: 91/GemmFwdRest"],
    ["MIOpen(HIP): Command [LogCmdCat] ./bin/MIOpenDriver catfp32 -dims 2,3,4 -F 1"],
    [""], ["MIOpen(HIP): }"], ["{"], ["text ending in a brace {"],
    # MIOpen 1.x: only the header prefixed (or nothing), bare body and "}"
    ["MIOpen(HIP): miopenStatus_t miopenConvolutionForward(miopenHandle_t, ...){", "xDesc = 8, 16, 14, 14",
     "wDesc = 32, 16, 3, 3", "convDesc = miopenConvolution, 1, 1, 1, 1, 1, 1, ", "yDesc = 8, 32, 14, 14", "}"],
    ["miopenStatus_t miopenConvolutionForward(miopenHandle_t, ...){", "xDesc = 2, 16, 14, 14",
     "wDesc = 32, 16, 3, 3", "convDesc = miopenConvolution, 1, 1, 1, 1, 1, 1, ", "yDesc = 2, 32, 14, 14", "}"],
    ["}"], ["dataType = 1"],
    ["MIOpen(HIP): miopenStatus_t miopenConvolutionForward(miopenHandle_t, ...){\r"],  # "{\r\r\n" in a CRLF log
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, len(_PIECES) - 1), min_size=1, max_size=30),
       st.sampled_from(["\n", "\r\n"]), st.lists(st.integers(1, 700), max_size=12))
def test_any_log_and_chunking_decode_the_same_both_ways(order, line_end, chunks):
    lines = [line for i in order for line in _PIECES[i]]
    data = (line_end.join(lines) + line_end).encode()
    assert decode(data, True, chunks)[0] == decode(data, False)[0]


# A first iteration: Find-Db, compiles, a tuning search; the time fields are added per line below
_STARTUP_PIECES = [
    ["MIOpen(HIP): Info [GetFindModeValueImpl] MIOPEN_FIND_MODE = NORMAL(1)"],
    ["MIOpen(HIP): Command [LogCmdFindConvolution] ./bin/MIOpenDriver conv -n 8 -c 16 -H 14 -W 14 -k 32 -y 3 "
     "-x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
     "MIOpen(HIP): Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0",
     "MIOpen(HIP): Info [TryLoad] Find-db regenerating."],
    ["MIOpen(HIP): Info2 [LoadBinary] Unable to load binary for: \"naive_conv.cpp.o\"; args: -DX=1"],
    ["MIOpen(HIP): Info2 [SaveBinary] Saving binary for: \"naive_conv.cpp.o\"; args: -DX=1"],
    ["MIOpen(HIP): Info2 [LoadBinary] Successfully loaded binary for: \"MIOpenIm2d2Col.cl.o\"; args: -DY=2"],
    ["MIOpen(HIP): Warning [GetAllConfigs] ConvHipImplicitGemmV4R1Fwd: Searching the best solution among 120..."],
    ["MIOpen(HIP): Warning [Monitor] 60/0/120 0.5, best within recent 60: 0.45 #12 64,64, ETA:3.0 sec."],
    ["MIOpen(HIP): Warning [GenericSearch] Done: 120/0/120, best #12 0.45 64,64"],
    ["MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: ConvHipImplicitGemmV4R1Fwd , 0, 0.45"],
    ["MIOpen(HIP): Info [ConvolutionForward] algo = 1, workspace = 0"],
    ["MIOpen(HIP): Info [FindConvFwdAlgorithm] requestAlgoCount = 1, workspace = 0",
     "MIOpen(HIP): Info [FindConvFwdAlgorithm] FW Chosen Algorithm: GemmFwdRest , 0, 0.5"],
    ["MIOpen(HIP) version 3.2 said: MIOpen(HIP) 1.000: not a prefix"],   # the prefix word inside a message
]
_FIELDS = st.sampled_from(["", "   0.022", "2500.037", " 350.000", " (2026-11-23T20:00:00.123Z)",
                           "   1.500 (2026-11-23T20:00:01.623Z)"])


def _timed(lines: list[str], fields: list[str]) -> list[str]:
    """Each line's first "MIOpen(HIP)" followed by the next field (or left as it is)."""
    out = []
    for i, line in enumerate(lines):
        field = fields[i % len(fields)] if fields else ""
        out.append(line.replace("MIOpen(HIP):", f"MIOpen(HIP){field}:", 1))
    return out


def _timeline(data: bytes, whole_blocks: bool, chunks: list[int]) -> list:
    catalog = Catalog()
    scanner = LogScanner(catalog)
    scanner.whole_blocks = scanner.repeat_lines = whole_blocks
    pos = 0
    for size in chunks:
        scanner.feed(data[pos:pos + size])
        pos += size
    scanner.feed(data[pos:])
    scanner.finish()
    return [(e.line, e.clock_ms, e.layer_id, e.kind, e.ms, e.name) for e in catalog.startup.timeline()]


@settings(max_examples=150, deadline=None)
@example(order=[11, 28, 0], fields=[""], line_end="\n", chunks=[])   # a Find ended by a whole API block
@given(st.lists(st.integers(0, len(_PIECES) + len(_STARTUP_PIECES) - 1), min_size=1, max_size=40),
       st.lists(_FIELDS, min_size=1, max_size=8), st.sampled_from(["\n", "\r\n"]),
       st.lists(st.integers(1, 700), max_size=12))
def test_timed_logs_decode_and_keep_time_the_same_both_ways(order, fields, line_end, chunks):
    """The fast path lifts the time fields out of whole chunks and applies them lazily; the
    line-by-line path strips and applies them per line: same catalog, same clock at every fact."""
    pieces = _PIECES + _STARTUP_PIECES
    lines = _timed([line for i in order for line in pieces[i]], ["   0.001"] + fields)
    data = (line_end.join(lines) + line_end).encode()
    assert decode(data, True, chunks)[0] == decode(data, False)[0]
    assert _timeline(data, True, chunks) == _timeline(data, False, [])


def test_a_timed_first_iteration_keeps_its_clock_on_the_fast_path():
    lines = [line for piece in _STARTUP_PIECES[:9] for line in piece]
    data = ("\n".join(_timed(lines, ["   0.100", " 350.000", "   0.020"])) + "\n").encode()
    fast = _timeline(data, True, [len(data) // 3])
    assert fast == _timeline(data, False, [])
    compiled = [e for e in fast if e[3] == "kernel_compiled"]
    assert compiled and compiled[0][4] is not None and compiled[0][1] is not None


_CALLS = [
    "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 8 -c 16 -H 14 -W 14 -k 32 -y 3 -x 3 "
    "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
    "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 2 -c 16 -H 14 -W 14 -k 32 -y 3 -x 3 "
    "-p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
    "MIOpen(HIP): Command [LogCmdBNorm] ./bin/MIOpenDriver bnorm -n 32 -c 256 -H 14 -W 14 -m 1 --forw 0 -b 1 -r 1",
    "7 MIOpen(HIP): Command [LogCmdActivation] ./bin/MIOpenDriver activ -n 32 -c 256 -H 14 -W 14 -m 3 --forw 2 "
    "-A 1 -B 0 -G 1",
]


@settings(max_examples=60, deadline=None)
@example(calls=[0], iterations=20, between=[14], chunks=[])   # a run, then its last call's invoker line
@given(st.lists(st.integers(0, len(_CALLS) - 1), min_size=1, max_size=12), st.integers(20, 60),
       st.lists(st.integers(0, len(_PIECES) - 1), max_size=4), st.lists(st.integers(1, 30_000), max_size=4))
def test_long_runs_of_call_lines_decode_the_same_both_ways(calls, iterations, between, chunks):
    """A command log is runs of repeated call lines (replayed a run at a time) between other
    lines (a Find, a progress bar, another thread's block): same catalog as line by line."""
    lines = []
    for it in range(iterations):
        lines += [_CALLS[i] for i in calls] * 3
        if between:
            lines += _PIECES[between[it % len(between)]]
    data = ("\n".join(lines) + "\n").encode()
    assert decode(data, True, chunks)[0] == decode(data, False)[0]


# ---------------------------------------------------------------- stretches (``stretches``)

def _call(n: int, tid: str = "") -> str:
    lead = f"{tid} " if tid else ""
    return (f"{lead}MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {n} -c 16 -H 14 -W 14 -k 32 "
            "-y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1")


def _training_log(iteration: list[int], iterations: int, between: dict[int, list[str]],
                  changed: dict[int, int] | None = None, line_end: str = "\n") -> bytes:
    """``iterations`` of the same calls (``iteration``: call numbers; 100 and more: thread 7),
    ``between[i]``'s lines after iteration ``i``, iteration ``i`` with its first call
    replaced by call ``changed[i]``."""
    lines = []
    for it in range(iterations):
        calls = list(iteration)
        if changed and it in changed:
            calls[0] = changed[it]
        lines += [_call(n % 100 + 1, "7" if n >= 100 else "") for n in calls]
        lines += between.get(it, [])
    return (line_end.join(lines) + line_end).encode()


def _scan(data: bytes, fast: bool, chunk: int) -> tuple[dict, LogScanner]:
    """``decode`` in chunks of ``chunk`` bytes."""
    return decode(data, fast, [chunk] * ((len(data) - 1) // chunk))


_ITERATION = [1, 2, 3, 1, 2, 4, 5, 6, 7, 8] * 12 + [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]


def test_a_repeating_command_log_is_replayed_by_stretches_and_decodes_the_same():
    bar = ["Epoch 0:   3%|3         | 1/40 [00:00<00:02, 3.1it/s]\rEpoch 0:   5%|5         | 2/40"]
    data = _training_log(_ITERATION, 60, {i: bar for i in range(0, 60, 3)})
    expected, _ = _scan(data, False, 1 << 20)
    for chunk in (4096, 65_536, 1 << 20):
        got, scanner = _scan(data, True, chunk)
        assert got == expected
        # the stretches' path was taken where a chunk holds a run long enough to pick an anchor in
        assert scanner.stretches.hits > 20 or chunk < 30_000, chunk
    assert expected["layers"] and sum(layer["executions"] for layer in expected["layers"]) == 60 * len(_ITERATION)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 119), min_size=40, max_size=140), st.integers(4, 30),
       st.dictionaries(st.integers(0, 29), st.integers(0, len(_PIECES) - 1), max_size=4),
       st.dictionaries(st.integers(0, 29), st.integers(0, 119), max_size=3),
       st.sampled_from(["\n", "\r\n"]), st.sampled_from([997, 65_536, 200_000, 1 << 20]))
def test_training_logs_with_interruptions_decode_the_same_with_stretches(iteration, iterations, between, changed,
                                                                         line_end, chunk):
    """Iterations of the same calls (two threads), some interrupted (a Find, a progress bar, an
    API block, an orphaned half) or changed: stretches replayed must give the line path's catalog."""
    data = _training_log(iteration, iterations, {i: _PIECES[p] for i, p in between.items()}, changed, line_end)
    assert _scan(data, True, chunk)[0] == _scan(data, False, 1 << 20)[0]


def test_the_stretch_checks_fail_for_the_bugs_they_catch(monkeypatch):
    """The comparison above must be able to fail: a stretch that moves the line count by one
    too few changes the catalog (an API block of the anchor's call just before it, whose second
    form the anchor line is, goes the line way)."""
    from miotui.formats.miopen import scan
    anchor_first = [7] + [1, 2, 3, 4, 5, 6, 8, 9, 10] * 30   # call 7 (-n 8) the rarest: the anchor
    data = _training_log(anchor_first, 60, {40: conv()})     # conv(): an API block of the -n 8 call
    expected, _ = _scan(data, False, 1 << 20)
    got, scanner = _scan(data, True, 200_000)
    assert got == expected and scanner.stretches.hits > 20

    class ShortStretch(scan.Stretch):
        def __init__(self, plan, lines, last_line):
            super().__init__(plan, lines - 1, last_line)

    with monkeypatch.context() as patch:
        patch.setattr(scan, "Stretch", ShortStretch)
        assert _scan(data, True, 200_000)[0] != expected


def test_a_stretch_is_not_replayed_where_its_thread_is_in_a_block_or_a_find():
    """The state check of ``replay_plan``: a thread whose current call is an API block's (the
    anchor line would be its second form) or which has a Find open goes the line way."""
    data = _training_log([7] + [1, 2, 3, 4, 5, 6, 8, 9, 10] * 30, 20, {})
    _, scanner = _scan(data, True, 200_000)
    stretch = next(iter(scanner.stretches.by_text.values()))
    plan, calls = stretch.plan, scanner.calls
    tid, cur, _sources, _row = plan.threads[0]
    problem, role, _ = cur[0]
    calls.pending[tid] = [(problem, role, {"api-trace"})]
    assert not scanner.replay.replay_plan(plan, 1)
    del calls.pending[tid]
    calls.find_open[tid] = []
    assert not scanner.replay.replay_plan(plan, 1)
    del calls.find_open[tid]
    assert plan.times == 0 and not scanner.replay.unsettled_plans
    assert scanner.replay.replay_plan(plan, 1) and plan.times == 1


# ---------------------------------------------------------------- level-6 stretches

_LEVEL6: list[str] = []


def _level6_lines() -> list[str]:
    """A generated level-6 training log (Command lines, their annotation and invoker lines), once."""
    if not _LEVEL6:
        from miotui import samplegen
        _LEVEL6.extend(samplegen.generate_text(samplegen.SampleSpec(format="info", size=3_000_000, seed=3))
                       .split("\n"))
    return _LEVEL6


def _algo_changed(lines: list[str], at: int, algo: int = 9) -> list[str]:
    """``lines`` with, before the call of the first ``algo = `` line from ``at`` on, that call
    with another algo: the layer's latest value changes, and its usual line is new again."""
    j = next(i for i in range(at, len(lines)) if "] algo = " in lines[i])
    head, _, tail = lines[j].partition("algo = ")
    changed = head + f"algo = {algo}" + tail[tail.index(","):]
    return lines[:j - 1] + [lines[j - 1], changed] + lines[j - 1:]


def test_a_level6_log_is_replayed_by_stretches_and_decodes_the_same():
    data = "\n".join(_level6_lines()).encode()
    expected, _ = _scan(data, False, 1 << 20)
    got, scanner = _scan(data, True, 1 << 20)
    assert got == expected
    assert scanner.stretches.hits > 5


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.1, 0.95), max_size=3), st.lists(st.tuples(st.floats(0.1, 0.95),
       st.integers(0, len(_PIECES) - 1)), max_size=2), st.sampled_from([65_536, 200_000, 1 << 20]))
def test_level6_training_logs_decode_the_same_with_stretches(changes, pieces, chunk):
    """A level-6 log with a call whose algo changes here and there and other interruptions
    (a Find, a progress bar, an API block...): stretches replayed give the line path's catalog."""
    lines = list(_level6_lines())
    for where in changes:
        lines = _algo_changed(lines, int(where * len(lines)))
    for where, p in pieces:
        at = int(where * len(lines))
        lines[at:at] = _PIECES[p]
    data = "\n".join(lines).encode()
    assert _scan(data, True, chunk)[0] == _scan(data, False, 1 << 20)[0]


def _states(data: bytes, fast: bool, cuts: list[int]) -> list:
    """The layers' snapshots after each chunk (cut at ``cuts``): what the app shows as it reads."""
    catalog = Catalog()
    scanner = LogScanner(catalog)
    scanner.whole_blocks = scanner.repeat_lines = fast
    states = []
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        scanner.feed(data[start:end])
        states.append(catalog.layers())
    return states


def test_a_level6_stretch_is_not_replayed_after_an_annotation_changed(monkeypatch):
    """The annotation check of ``replay_plan``: a stretch whose level lines asked whether a
    value is the layer's latest is not replayed after any value changed (the anchor line's
    call, where a stretch begins, logged once more just before its usual call with algo 9:
    its usual value is new again in the stretch after).  Left out, the layer's latest algo
    stays 9 until a line read the general way sets it back: the app, reading the catalog
    after the chunk that ends with that stretch, would show 9."""
    from miotui.formats.miopen.repeats import LineReplay
    lines = list(_level6_lines())
    anchor = _scan("\n".join(lines).encode(), True, 1 << 20)[1].stretches.anchor
    assert anchor is not None
    at = lines.index(anchor[:-1], len(lines) * 2 // 3)
    lines = _algo_changed(lines, at)
    # a chunk that ends just past the "\r" after the stretch (a piece cut by the chunk's end
    # is read line by line, and would set the value back)
    bar = next(i for i in range(at + 3, len(lines)) if lines[i].count("\r") >= 2)
    cut = len(("\n".join(lines[:bar + 1]))[:-len(lines[bar]) + lines[bar].index("\r", 1) + 2].encode())
    data = "\n".join(lines).encode()
    expected = _states(data, False, [cut])
    assert _states(data, True, [cut]) == expected
    checked = LineReplay.replay_plan

    def unchecked(self, plan, first):
        plan.annotations = None
        return checked(self, plan, first)

    with monkeypatch.context() as patch:
        patch.setattr(LineReplay, "replay_plan", unchecked)
        assert _states(data, True, [cut]) != expected

"""The scanner's whole-block path (a repeated API block recognised by its text) must give
exactly the catalog of the line-by-line path, for any input and any chunking."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui.catalog import Catalog
from miotui.decode_output import render
from miotui.logs.scan import LogScanner

ROOT = Path(__file__).parent.parent
LOGS = sorted(p for p in [*(ROOT / "sample_logs").glob("*.log"), *(ROOT / "tests/data/real_logs").iterdir(),
                          *(ROOT / "tests/data/regress").iterdir()] if p.is_file() and p.suffix != ".gz")


def decode(data: bytes, whole_blocks: bool, chunks: list[int] = ()) -> tuple[dict, int]:
    catalog = Catalog()
    scanner = LogScanner(catalog)
    scanner.whole_blocks = whole_blocks
    pos = 0
    for size in chunks:
        scanner.feed(data[pos:pos + size])
        pos += size
    scanner.feed(data[pos:])
    scanner.finish()
    out = json.loads(render(catalog, "json"))
    del out["stats"]["seconds"]
    return out, scanner.whole_block_hits


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_bundled_and_real_logs_decode_the_same_both_ways(path):
    data = path.read_bytes()
    expected, _ = decode(data, False)
    rnd = random.Random(path.name)
    chunks = [rnd.randint(1, 4000) for _ in range(rnd.randint(1, 40))]
    assert decode(data, True)[0] == expected
    assert decode(data, True, chunks)[0] == expected


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
    out, hits = decode(("\n".join(lines) + "\n").encode(), True)
    assert hits >= 48
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
    out, hits = decode(data, True)
    assert hits >= 18 and out == decode(data, False)[0]
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

"""The raw-log pane's reader: lines by number from a sparse index, numbered as the scanner
numbers them, for any file size with bounded memory."""

from __future__ import annotations

import gzip
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui.sources import context as ctx
from miotui.sources.context import LogContext
from miotui.sources.follow import LineTail


def reference_lines(data: bytes) -> list[str]:
    """The scanner's rule: \\n, \\r\\n and a lone \\r each end a line."""
    text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@settings(max_examples=150, deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\r", b"\r\n", "é".encode()]), max_size=120)
       .map(b"".join), step=st.integers(1, 5), chunk=st.integers(1, 9), first=st.integers(1, 40),
       count=st.integers(1, 40))
def test_any_range_matches_the_scanners_numbering(tmp_path_factory, data, step, chunk, first, count):
    path = tmp_path_factory.mktemp("c") / "x.log"
    path.write_bytes(data)
    old = ctx.CHUNK
    ctx.CHUNK = chunk          # reads split lines, "\r\n" pairs and UTF-8 characters anywhere
    try:
        c = LogContext(str(path), step=step)
        want = reference_lines(data)
        got = c.read(first, count)
        assert [(ln.number, ln.text) for ln in got] == \
            [(i + 1, t) for i, t in enumerate(want)][first - 1:first - 1 + count]
        assert c.lines_known >= min(len(want), first + count - 1)
        assert c.index_to_end() == len(want)
        # the catalog's numbering (LineTail mirrors the scanner) agrees
        tail = LineTail(maxlen=1000)
        for i in range(0, len(data), 7):
            tail.feed(data[i:i + 7])
        tail.end_line()
        assert [t for _, t in tail.snapshot()] == want
        c.close()
    finally:
        ctx.CHUNK = old


def test_a_growing_file_a_truncation_and_a_replacement(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    c = LogContext(str(path), step=64)
    assert [ln.text for ln in c.read(4999, 5)] == ["line 4999", "line 5000"]
    assert c.lines_known == 5000
    with open(path, "a") as fh:
        fh.write("line 5001\npartial")
    assert c.index_to_end() == 5002
    assert [ln.text for ln in c.read(5001, 3)] == ["line 5001", "partial"]
    path.write_text("new 1\nnew 2\n")                 # truncated and rewritten
    assert [ln.text for ln in c.read(1, 5)] == ["new 1", "new 2"] and c.reset_count == 1
    os.rename(path, tmp_path / "old.log")
    path.write_text("rotated\n")
    assert [ln.text for ln in c.read(1, 5)] == ["rotated"] and c.reset_count == 2


def test_memory_is_one_offset_per_step_and_ranges_read_only_what_they_need(tmp_path):
    path = tmp_path / "big.log"
    with open(path, "w") as fh:
        for i in range(200_000):
            fh.write(f"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {i}\n")
    c = LogContext(str(path), step=1024)
    assert [ln.text[-8:] for ln in c.read(100, 1)] == ["conv -n 99"[-8:]]
    assert c._scanned < 4 * ctx.CHUNK, "only the start of the file was indexed for an early range"
    assert c.read(199_999, 5)[-1].text.endswith("-n 199999")
    assert c.lines_known == 200_000
    assert len(c._offsets) == 200_000 // 1024 + 1


def test_long_lines_are_cut_and_bad_utf8_replaced(tmp_path):
    path = tmp_path / "x.log"
    path.write_bytes(b"x" * 10_000 + b"\n\xff\xfe ok\n")
    c = LogContext(str(path), max_line=100)
    lines = c.read(1, 2)
    assert lines[0].text == "x" * 100 + " …" and lines[1].text == "\ufffd\ufffd ok"


def test_search_forward_backward_and_wrapping(tmp_path):
    path = tmp_path / "x.log"
    path.write_text("".join("needle\n" if i in (10, 500, 900) else f"hay {i}\n" for i in range(1, 1001)))
    c = LogContext(str(path), step=32)
    assert c.find("NEEDLE", 1) == 10
    assert c.find("needle", 10) == 500
    assert c.find("needle", 900) == 10, "wraps past the end"
    assert c.find("needle", 900, wrap=False) is None
    assert c.find("needle", 500, backward=True) == 10
    assert c.find("needle", 10, backward=True) == 900, "wraps past the start"
    assert c.find("absent", 1) is None


def test_gzip_files(tmp_path):
    path = tmp_path / "x.log.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("".join(f"l{i}\n" for i in range(1, 3001)))
    c = LogContext(str(path), step=100)
    assert [ln.text for ln in c.read(2500, 2)] == ["l2500", "l2501"]
    assert [ln.text for ln in c.read(3, 1)] == ["l3"]


def test_missing_file_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        LogContext(str(tmp_path / "nope.log")).read(1, 1)

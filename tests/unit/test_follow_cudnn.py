"""Following a cuDNN log: the format is told from the first text that arrives in pieces,
decided once, and the followed log decodes to what a whole-file decode of it gives."""

from __future__ import annotations

import lzma
import random
from pathlib import Path

import pytest
from follow_support import conv, started_readers, wait_for

from miotui.catalog import Catalog
from miotui.formats import FORMATS
from miotui.formats.cudnn import CudnnScanner
from miotui.sources.head_choice import CHOOSE_BYTES, HeadChoice

DATA = Path(__file__).parents[1] / "data" / "cudnn"


@pytest.fixture
def reader_factory():
    with started_readers() as make:
        yield make


def small_ops() -> bytes:
    return lzma.decompress((DATA / "h100" / "small_ops.log.xz").read_bytes())


def layer_counts(cat) -> dict:
    return {s.problem: (s.executions, s.finds, s.mentions) for s in cat.layers()}


def _bytes_read(reader) -> int:
    return sum(s.bytes_read for s in reader.sources)


def test_a_cudnn_log_arriving_in_pieces_is_followed_like_the_whole_file(tmp_path, reader_factory):
    data = small_ops()
    whole = CudnnScanner(Catalog())   # the whole file, less its end: the last record stays open
    whole.feed(data)                  # until the next one starts, while the log may grow
    log = tmp_path / "cudnn.log"
    log.write_bytes(b"")
    cat, reader = reader_factory([log])
    rng = random.Random(5)
    with open(log, "ab", buffering=0) as f:
        f.write(data[:5])              # "I! Cu": not yet a cuDNN header, nor a MIOpen line
        assert wait_for(lambda: _bytes_read(reader) == 5)
        assert cat.formats == {} and cat.bytes == 0   # held, not scanned by a guess
        at = 5
        while at < len(data):
            n = rng.randint(1, 400)
            f.write(data[at:at + n])
            at += n
    assert wait_for(lambda: cat.lines == whole.line_no, timeout=20)
    assert list(cat.formats) == ["cuDNN"]
    assert cat.bytes == len(data)      # every byte scanned once: none lost, none doubled
    assert layer_counts(cat) == layer_counts(whole.catalog)
    assert cat.undecoded_count == whole.catalog.undecoded_count


def test_a_miopen_log_is_still_followed_as_one(tmp_path, reader_factory):
    log = tmp_path / "miopen.log"
    log.write_bytes(conv(1).encode()[:12])   # "MIOpen(HIP):" without its newline
    cat, reader = reader_factory([log])
    assert wait_for(lambda: _bytes_read(reader) == 12)
    with open(log, "ab") as f:
        f.write(conv(1).encode()[12:] + conv(2).encode())
    assert wait_for(lambda: len(cat.layers()) == 2)
    assert list(cat.formats) == ["MIOpen"]


def test_text_that_names_neither_format_is_decided_when_the_writer_pauses(tmp_path, reader_factory):
    log = tmp_path / "other.log"
    log.write_bytes(b"hello from a job\n")
    cat, _ = reader_factory([log])
    assert wait_for(lambda: cat.lines == 1, timeout=10)   # after ACTIVE_GRACE_S without new bytes
    assert list(cat.formats) == ["MIOpen"]


def test_the_choice_is_the_same_however_the_head_is_cut():
    data = small_ops()[:3000]
    for cut in range(1, 200, 7):
        choice = HeadChoice(FORMATS.told)
        got = choice.offer(data[:cut])
        rest = data[cut:]
        while got is None and rest:
            got = choice.offer(rest[:13])
            rest = rest[13:]
        assert got is not None and got.startswith(data[:cut])
        first_line_end = data.index(b"called:\n") + 8    # the first header (after a blank line)
        assert len(got) >= first_line_end       # decided on the first complete header, not before
        assert len(got) < max(first_line_end, cut) + 13


def test_a_head_with_no_sign_is_decided_at_the_cap():
    choice = HeadChoice(FORMATS.told)
    assert choice.offer(b"x" * (CHOOSE_BYTES - 1)) is None
    assert len(choice.offer(b"yy")) == CHOOSE_BYTES + 1
    assert choice.held == 0

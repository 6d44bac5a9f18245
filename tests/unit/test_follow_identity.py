"""Is a followed file still the one read?  Rewrites crafted to keep the bytes a cheap
check compares (the first 4 KiB and the bytes just before the read position) must still
be seen as new files, and a file that only grew must still be taken for the same one."""

from __future__ import annotations

import os

import pytest
from follow_support import batches, conv, started_readers, wait_for

from miotui.sources import fingerprint as fpmod
from miotui.sources.fingerprint import Fingerprint


@pytest.fixture
def reader_factory():
    with started_readers() as make:
        yield make


def fingerprint_of(body: bytes, piece: int) -> Fingerprint:
    """The fingerprint of ``body`` read in pieces of ``piece`` bytes (not aligned with its blocks)."""
    fp = Fingerprint()
    for off in range(0, len(body), piece):
        fp.add(body[off:off + piece], off)
    return fp


def _crafted(first_run: bytes, middle: bytes) -> bytes:
    """``first_run`` with its middle replaced by ``middle`` of the same length: the first
    4 KiB and the last 64 bytes are the first run's."""
    keep_head, keep_tail = fpmod.HEAD_BYTES, 64
    room = len(first_run) - keep_head - keep_tail
    assert len(middle) == room
    return first_run[:keep_head] + middle + first_run[-keep_tail:]


def test_a_rewrite_keeping_the_head_and_the_bytes_before_the_offset_is_read_as_new(tmp_path, reader_factory):
    """The issue's case: 29 layers of the rewrite were missed (only 4 KiB + 64 B compared)."""
    log = tmp_path / "train.log"
    header = b"".join(b"MIOpen(HIP): Info [Startup] line %04d of the job's start\n" % i for i in range(100))
    assert len(header) > fpmod.HEAD_BYTES
    filler = conv(1).encode()
    first = header + filler * 60
    log.write_bytes(first)
    cat, reader = reader_factory([log])
    assert wait_for(lambda: batches(cat) == {1: 60})
    # the new run: same start, 29 other layers in the middle (padded to the same length), same end
    room = len(first) - fpmod.HEAD_BYTES - 64
    new_layers = b"".join(conv(100 + i).encode() for i in range(29))
    middle = first[fpmod.HEAD_BYTES:fpmod.HEAD_BYTES + room - len(new_layers) - 1] + b"\n" + new_layers
    second = _crafted(first, middle[:room])
    assert second[:fpmod.HEAD_BYTES] == first[:fpmod.HEAD_BYTES] and second[-64:] == first[-64:]
    with open(log, "r+b") as fh:       # rewritten in place, then grown past the old offset
        fh.write(second + conv(7).encode())
    assert wait_for(lambda: all(100 + i in batches(cat) for i in range(29)) and 7 in batches(cat))
    assert any(e.kind == "truncated" and "rewritten" in e.message for e in reader.drain_events())


def test_a_big_file_changed_anywhere_is_caught_within_a_few_checks(tmp_path):
    """Past FULL_CHECK_BYTES each check compares a bounded slice of blocks that moves on:
    a change in any block read is seen within len(blocks) / CHECK_SPREAD checks."""
    log = tmp_path / "big.log"
    body = b"".join(b"line %07d of the first run\n" % i for i in range(40_000))   # ~1.1 MB
    assert len(body) > fpmod.FULL_CHECK_BYTES
    log.write_bytes(body)
    fp = fingerprint_of(body, 5000)
    fd = os.open(log, os.O_RDONLY)
    try:
        assert all(fp.continues(fd) for _ in range(50)), "an unchanged file is never taken for another"
        at = len(body) // 3
        with open(log, "r+b") as fh:
            fh.seek(at)
            fh.write(b"X")
        seen = next((i for i in range(len(fp.blocks)) if not fp.continues(fd)), None)
        assert seen is not None and seen <= len(fp.blocks) // fpmod.CHECK_SPREAD + 1
    finally:
        os.close(fd)


def test_a_small_file_is_compared_in_full(tmp_path):
    log = tmp_path / "small.log"
    body = os.urandom(100_000)
    log.write_bytes(body)
    fp = fingerprint_of(body, 3000)
    fd = os.open(log, os.O_RDONLY)
    try:
        assert fp.continues(fd)
        with open(log, "a") as fh:
            fh.write("grown\n")
        assert fp.continues(fd), "growth is not a rewrite"
        for at in (fpmod.HEAD_BYTES + 1, len(body) // 2, len(body) - fpmod.WINDOW_BYTES - 1):
            with open(log, "r+b") as fh:
                fh.seek(at)
                fh.write(bytes([body[at] ^ 1]))
            assert not fp.continues(fd), f"one byte changed at {at}"
            with open(log, "r+b") as fh:
                fh.seek(at)
                fh.write(body[at:at + 1])
            assert fp.continues(fd)
    finally:
        os.close(fd)


def test_a_rewrite_keeping_the_head_and_the_whole_window_is_read_as_new(tmp_path, reader_factory):
    """The first 4 KiB and the 4 KiB before the offset kept, the middle changed, at once
    after the reader caught up: seen at once or by the thorough look owed within 0.25 s."""
    log = tmp_path / "train.log"
    header = b"".join(b"MIOpen(HIP): Info [Startup] line %04d of the job's start\n" % i for i in range(100))
    filler = conv(1).encode()
    first = header + filler * 120
    log.write_bytes(first)
    cat, reader = reader_factory([log])
    assert wait_for(lambda: batches(cat) == {1: 120})
    keep = fpmod.HEAD_BYTES
    new_layers = b"\n" + b"".join(conv(200 + i).encode() for i in range(10))
    at = keep + 1000
    second = first[:at] + new_layers + first[at + len(new_layers):]
    assert len(second) == len(first) and second[-fpmod.WINDOW_BYTES:] == first[-fpmod.WINDOW_BYTES:]
    with open(log, "r+b") as fh:
        fh.write(second + conv(7).encode())
    assert wait_for(lambda: all(200 + i in batches(cat) for i in range(10)) and 7 in batches(cat))

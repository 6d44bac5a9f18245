"""The tail -F reader against hostile and transient conditions: a path that is briefly a
directory, unreadable or a FIFO; truncation that size alone cannot see; many files; and
what the reader reports per source (rates, hosts, bounded feeding)."""

from __future__ import annotations

import os
import threading
import time

import pytest
from follow_support import batches, before_each_feed, conv, has_inotify, started_readers, wait_for

import miotui.sources.follow as follow
from miotui.catalog import Catalog
from miotui.formats import FORMATS
from miotui.formats.miopen.hosts import lead_label
from miotui.sources.fingerprint import Fingerprint
from miotui.sources.follow import LogReader


@pytest.fixture
def reader_factory():
    with started_readers() as make:
        yield make


# ---------------------------------------------------------------------- transient errors are retried

def test_a_path_that_is_briefly_a_directory_is_retried(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.mkdir()
    cat, reader = reader_factory([log])
    assert wait_for(lambda: reader.sources[0].state == "not a file")
    events = reader.drain_events()
    assert any(e.kind == "waiting" and "directory" in e.message for e in events)
    log.rmdir()
    log.write_text(conv(1) + conv(2))
    assert wait_for(lambda: batches(cat) == {1: 1, 2: 1})
    assert wait_for(lambda: reader.sources[0].state == "following")


def test_a_directory_without_follow_is_an_error_not_a_crash(tmp_path, reader_factory):
    d = tmp_path / "logs"
    d.mkdir()
    cat, reader = reader_factory([d], follow=False)
    assert wait_for(lambda: reader.finished)
    assert any(e.kind == "error" and "directory" in e.message for e in reader.drain_events())
    assert len(cat) == 0


def test_a_path_that_cannot_be_opened_yet_is_retried(tmp_path, reader_factory):
    """A symlink loop (ELOOP) stands for any open() error that goes away later."""
    log = tmp_path / "train.log"
    os.symlink(log.name, log)           # a link to itself: "too many levels of symbolic links"
    cat, reader = reader_factory([log])
    assert wait_for(lambda: reader.sources[0].state == "unreadable")
    assert any(e.kind == "waiting" and "retrying" in e.message for e in reader.drain_events())
    log.unlink()
    log.write_text(conv(3))
    assert wait_for(lambda: batches(cat) == {3: 1})
    assert any(e.kind == "recreated" for e in reader.drain_events())


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_a_file_not_yet_readable_is_retried(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_text(conv(4))
    log.chmod(0)
    cat, reader = reader_factory([log])
    assert wait_for(lambda: reader.sources[0].state == "unreadable")
    log.chmod(0o644)
    assert wait_for(lambda: batches(cat) == {4: 1})


def _open_writer(path, timeout: float = 5.0) -> int:
    """Open a FIFO for writing without blocking: succeeds once a reader has it open."""
    end = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            if time.monotonic() > end:
                raise AssertionError("nobody has the FIFO open for reading") from None
            time.sleep(0.01)
            continue
        os.set_blocking(fd, True)
        return fd


def test_a_fifo_at_the_path_never_blocks_the_reader_and_outlives_its_writers(tmp_path, reader_factory):
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    other = tmp_path / "other.log"
    other.write_text(conv(9))
    cat, reader = reader_factory([fifo, other])
    assert wait_for(lambda: reader.sources[0].state == "waiting for a writer")
    assert wait_for(lambda: batches(cat) == {9: 1}), "the other file is read while the FIFO has no writer"
    w = _open_writer(fifo)
    os.write(w, (conv(1) + conv(2)).encode())
    assert wait_for(lambda: batches(cat) == {9: 1, 1: 1, 2: 1})
    assert reader.sources[0].state == "reading"
    os.close(w)
    assert wait_for(lambda: reader.sources[0].state == "waiting for a writer")
    assert any(e.kind == "eof" for e in reader.drain_events())
    w = _open_writer(fifo)        # a second writer (the job restarted)
    os.write(w, conv(3).encode())
    os.close(w)
    assert wait_for(lambda: batches(cat).get(3) == 1)
    reader.stop(timeout=2)
    assert not reader.alive


def test_a_fifo_without_follow_is_read_until_its_writer_closes(tmp_path, reader_factory):
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    cat, reader = reader_factory([fifo], follow=False)
    w = _open_writer(fifo)
    os.write(w, (conv(5) * 3).encode())
    os.close(w)
    assert wait_for(lambda: reader.finished)
    assert batches(cat) == {5: 3}


def test_stop_returns_while_a_fifo_has_no_writer(tmp_path):
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    reader = LogReader(Catalog(), [str(fifo)], follow=True, formats=FORMATS, poll_interval=0.01)
    reader.start()
    assert wait_for(lambda: reader.sources[0].state == "waiting for a writer")
    reader.stop(timeout=2)
    assert not reader.alive


# ---------------------------------------------------------------------- truncation by content

def test_truncated_and_at_once_rewritten_past_the_old_offset_loses_nothing(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_text(conv(1) * 3)
    cat, reader = reader_factory([log])
    assert wait_for(lambda: batches(cat) == {1: 3})
    fd = os.open(log, os.O_WRONLY)
    os.ftruncate(fd, 0)                      # `> train.log` and the job writes at once
    os.write(fd, (conv(5) * 4).encode())     # more than was there: the size never drops below our offset
    os.close(fd)
    assert wait_for(lambda: batches(cat) == {1: 3, 5: 4})
    assert any(e.kind == "truncated" and "rewritten" in e.message for e in reader.drain_events())


def test_truncate_s_n_never_counts_a_byte_twice(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_text(conv(1) * 3)
    cat, reader = reader_factory([log])
    assert wait_for(lambda: batches(cat) == {1: 3})
    os.truncate(log, len(conv(1)))           # `truncate -s N`: the first line is kept, as it was
    assert wait_for(lambda: any(e.kind == "truncated" for e in reader.drain_events()))
    with open(log, "a") as fh:
        fh.write(conv(4))
    assert wait_for(lambda: batches(cat) == {1: 3, 4: 1})
    time.sleep(0.1)
    assert batches(cat) == {1: 3, 4: 1}, "bytes 0..N were read once"


def test_a_shorter_rewrite_with_the_same_first_line_is_read_as_a_new_file(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    header = "=> creating model 'resnet50'\n"
    log.write_text(header + conv(1) * 5)
    cat, reader = reader_factory([log])
    assert wait_for(lambda: batches(cat) == {1: 5})
    log.write_text(header + conv(2))          # a new run: same first line, shorter
    assert wait_for(lambda: batches(cat) == {1: 5, 2: 1})


def test_fingerprint_tells_a_cut_from_a_rewrite_in_a_big_file(tmp_path):
    """Past the literal head, the samples decide (a 1 MB file, cut in its middle)."""
    log = tmp_path / "big.log"
    body = b"".join(b"line %07d of the first run\n" % i for i in range(40_000))
    log.write_bytes(body)
    fp = Fingerprint()
    fd = os.open(log, os.O_RDONLY)
    try:
        for off in range(0, len(body), 5000):    # read in pieces that do not align with the samples
            fp.add(body[off:off + 5000], off)
        assert fp.continues(fd)
        cut = len(body) // 2
        os.truncate(log, cut)
        assert fp.kept_prefix(fd, cut)
        other = body[:cut - 300_000] + body[cut - 300_000:cut].replace(b"first", b"other")
        with open(log, "r+b") as fh:
            fh.write(other)
        assert not fp.kept_prefix(fd, cut), "a change far past the head is seen"
    finally:
        os.close(fd)


def test_fingerprint_blocks_stay_bounded_and_still_match(tmp_path, monkeypatch):
    from miotui.sources import fingerprint as fpmod
    monkeypatch.setattr(fpmod, "MAX_BLOCKS", 64)
    log = tmp_path / "big.log"
    body = os.urandom(3 * 64 * fpmod.BLOCK + 777)
    log.write_bytes(body)
    fp = Fingerprint()
    for off in range(0, len(body), 10_000):
        fp.add(body[off:off + 10_000], off)
    assert len(fp.blocks) <= 64 and fp.step > fpmod.BLOCK
    fd = os.open(log, os.O_RDONLY)
    try:
        assert fp.kept_prefix(fd, len(body) - 12345)
        assert all(fp.continues(fd) for _ in range(20))
    finally:
        os.close(fd)


# ---------------------------------------------------------------------- one thread, bounded pieces

def test_a_glob_of_many_files_is_read_by_one_thread(tmp_path, reader_factory):
    for i in range(200):
        (tmp_path / f"rank{i:03d}.log").write_text(conv(i % 7 + 1))
    before = threading.active_count()
    cat, reader = reader_factory([tmp_path / "rank*.log"])
    assert wait_for(lambda: sum(batches(cat).values()) == 200, timeout=20)
    assert threading.active_count() - before <= 1
    assert len(reader.sources) == 200


def test_the_scanner_is_fed_in_bounded_pieces(tmp_path, reader_factory, monkeypatch):
    sizes: list[int] = []
    before_each_feed(monkeypatch, lambda data: sizes.append(len(data)))
    log = tmp_path / "big.log"
    log.write_text(conv(1) * 20_000)     # ~3 MB
    cat, reader = reader_factory([log], follow=False)
    assert wait_for(lambda: reader.finished, timeout=60)
    assert batches(cat) == {1: 20_000}
    assert max(sizes) <= follow.CHUNK
    assert reader.longest_feed_s > 0


def test_a_big_initial_scan_does_not_starve_a_live_file(tmp_path, reader_factory, monkeypatch):
    before_each_feed(monkeypatch, lambda data: time.sleep(0.002))
    big = tmp_path / "a_big.log"
    big.write_text(conv(1) * 60_000)     # ~9 MB: ~300 pieces, ~0.6 s of sleeping alone
    live = tmp_path / "b_live.log"
    live.write_text("")
    cat, reader = reader_factory([big, live])
    assert wait_for(lambda: reader.sources[0].position > 0)
    with open(live, "a") as fh:
        fh.write(conv(2))
    assert wait_for(lambda: 2 in batches(cat), timeout=5)
    assert not reader.sources[0].initial_done, "the live line came in while the big file was still read"


# ---------------------------------------------------------------------- what the status bar can show

def test_per_source_rates_and_hosts(tmp_path, reader_factory):
    a = tmp_path / "rank0.log"
    b = tmp_path / "rank1.log"
    a.write_text("")
    b.write_text("")
    cat, reader = reader_factory([tmp_path / "rank*.log"])
    assert wait_for(lambda: len(reader.sources) == 2 and all(s.state == "following" for s in reader.sources))
    line_a = "node07 41523 " + conv(1)
    with open(a, "a") as fa, open(b, "a") as fb:
        for _ in range(10):
            fa.write(line_a * 50)
            fa.flush()
            fb.write(conv(2) * 5)
            fb.flush()
            time.sleep(0.03)
    assert wait_for(lambda: batches(cat) == {1: 500, 2: 50})
    stats = {os.path.basename(s.path): s for s in reader.source_stats()}
    assert stats["rank0.log"].lines == 500 and stats["rank0.log"].bytes == 500 * len(line_a)
    assert stats["rank0.log"].bytes_per_s > stats["rank1.log"].bytes_per_s > 0
    assert stats["rank0.log"].lines_per_s > 0
    assert stats["rank0.log"].hosts == ("node07",) and stats["rank1.log"].hosts == ()
    assert stats["rank0.log"].behind == 0 and stats["rank0.log"].state == "following"


@pytest.mark.parametrize("lead,label", [
    (b"node07 41523 ", "node07"), (b"node07: ", "node07"), (b"[1,3]<stderr>:", "[1,3]"), (b"3: ", "3"),
    (b"41523 ", None), (b"", None), (b"\x1b]0;x\x07 ", None), (b"some words here ", None),
])
def test_lead_labels(lead, label):
    assert lead_label(lead) == label


def test_a_log_moved_away_is_a_rotation_not_a_deletion(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_text(conv(1))
    cat, reader = reader_factory([log])
    assert wait_for(lambda: batches(cat) == {1: 1})
    os.rename(log, tmp_path / "train.log.1")       # logrotate's first step; the new file comes later
    assert wait_for(lambda: any(e.kind == "rotated" for e in reader.drain_events()))
    with open(tmp_path / "train.log.1", "a") as old:
        old.write(conv(1))                          # the job still writes the old file
    assert wait_for(lambda: batches(cat) == {1: 2})
    log.write_text(conv(6))
    assert wait_for(lambda: batches(cat) == {1: 2, 6: 1})
    kinds = [e.kind for e in reader.drain_events()]
    assert "rotated" in kinds and "deleted" not in kinds


def test_gzip_read_once_closes_its_descriptors(tmp_path, reader_factory):
    import gzip
    log = tmp_path / "train.log.gz"
    with gzip.open(log, "wt") as fh:
        fh.write(conv(1) * 5)
    before = len(os.listdir("/proc/self/fd"))
    cat, reader = reader_factory([log], follow=True)
    assert wait_for(lambda: reader.finished)
    assert batches(cat) == {1: 5}
    reader.stop()
    assert len(os.listdir("/proc/self/fd")) <= before


def test_a_damaged_gzip_keeps_what_came_before(tmp_path, reader_factory):
    import gzip
    log = tmp_path / "train.log.gz"
    data = gzip.compress((conv(1) * 2000).encode())
    log.write_bytes(data[:len(data) // 2])        # cut in the middle
    cat, reader = reader_factory([log], follow=False)
    assert wait_for(lambda: reader.finished)
    assert 0 < batches(cat).get(1, 0) < 2000
    assert any(e.kind == "error" and "damaged" in e.message for e in reader.drain_events())


def test_a_file_named_twice_or_also_matched_by_a_glob_is_read_once(tmp_path, reader_factory):
    log = tmp_path / "rank0.log"
    log.write_text(conv(1))
    cat, reader = reader_factory([log, log, tmp_path / "rank*.log"], follow=False)
    assert wait_for(lambda: reader.finished)
    assert batches(cat) == {1: 1} and len(reader.sources) == 1


# ---------------------------------------------------------------------- told (inotify) or asking (polling)

def test_without_inotify_polling_alone_follows_appends_truncation_and_rotation(tmp_path, reader_factory,
                                                                                monkeypatch):
    monkeypatch.setattr(follow, "open_watcher", lambda: None)   # as on a system without inotify
    log = tmp_path / "train.log"
    log.write_text(conv(1))
    cat, reader = reader_factory([log])
    assert wait_for(lambda: batches(cat) == {1: 1})
    assert reader._watcher is None
    with open(log, "a") as fh:
        fh.write(conv(2))
    assert wait_for(lambda: batches(cat) == {1: 1, 2: 1})
    os.truncate(log, 0)
    with open(log, "a") as fh:
        fh.write(conv(3))
    assert wait_for(lambda: batches(cat) == {1: 1, 2: 1, 3: 1})
    os.rename(log, tmp_path / "train.log.1")
    log.write_text(conv(4))
    assert wait_for(lambda: batches(cat) == {1: 1, 2: 1, 3: 1, 4: 1})


@pytest.mark.skipif(not has_inotify(), reason="no inotify here")
def test_inotify_wakes_the_reader_for_a_file_it_would_look_at_only_in_a_minute(tmp_path, monkeypatch):
    log = tmp_path / "quiet.log"
    log.write_text(conv(1))
    reader = LogReader(Catalog(), [str(log)], follow=True, formats=FORMATS, poll_interval=60.0)
    cat = reader.catalog
    reader.start()
    try:
        assert wait_for(lambda: batches(cat) == {1: 1} and reader.sources[0].state == "following")
        assert reader.sources[0].due - time.monotonic() > 30, "the next look is a minute away"
        with open(log, "a") as fh:
            fh.write(conv(2))
        assert wait_for(lambda: batches(cat) == {1: 1, 2: 1})
        (tmp_path / "other.log").write_text("x\n")    # a change to another file in the directory
        os.unlink(log)
        assert wait_for(lambda: reader.sources[0].state == "deleted")
    finally:
        reader.stop()


def test_a_file_named_like_a_glob_is_read_by_its_name(tmp_path):
    """``rank[0].log`` exists: it is that file, not a pattern matching ``rank0.log``."""
    from miotui.sources.follow import is_pattern
    named = tmp_path / "rank[0].log"
    named.write_text("x\n")
    assert not is_pattern(str(named))
    assert is_pattern(str(tmp_path / "rank[1].log")) and is_pattern(str(tmp_path / "rank*.log"))

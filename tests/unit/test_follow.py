"""The tail -F reader: partial lines, \\r, truncation, rotation, deletion, re-creation,
globs, stdin pipes, gzip, the bounded tail, the writer process, and the demo replay."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import time

import pytest
from follow_support import batches, conv, started_readers, wait_for
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui.catalog import Catalog
from miotui.demo import DemoReplay, steady_iteration
from miotui.formats import FORMATS
from miotui.formats.miopen.scan import LogScanner
from miotui.sources.follow import JobWatcher, LineTail, LogReader, find_writer_pid


@pytest.fixture
def reader_factory():
    with started_readers() as make:
        yield make


# ---------------------------------------------------------------------- LineTail

def _reference_lines(text: bytes) -> list[bytes]:
    """Lines the way the scanner splits them: \\r\\n, \\r and \\n each end one line."""
    norm = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    parts = norm.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    return parts


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r", b"\r\n", b"xyz ", b"\xc3\xa9"]), max_size=60),
       st.lists(st.integers(1, 7), min_size=1, max_size=10))
def test_line_tail_matches_the_scanner_whatever_the_chunking(pieces, cuts):
    data = b"".join(pieces)
    tail = LineTail(maxlen=1000)
    cat = Catalog()
    scanner = LogScanner(cat)
    i = 0
    k = 0
    while i < len(data):
        n = cuts[k % len(cuts)]
        tail.feed(data[i:i + n])
        scanner.feed(data[i:i + n])
        i += n
        k += 1
    tail.end_line()
    scanner.finish()
    expected = [ln.decode("utf-8", "replace") for ln in _reference_lines(data)]
    got = tail.snapshot()
    assert [t for _, t in got] == expected
    assert [n for n, _ in got] == list(range(1, len(expected) + 1))
    assert tail.line_count == len(expected)
    assert cat.lines == len(expected)


def test_line_tail_is_bounded_and_keeps_the_newest_with_true_numbers():
    tail = LineTail(maxlen=5)
    tail.feed(b"".join(b"line %d\n" % i for i in range(1, 1001)))
    assert tail.snapshot() == [(n, f"line {n}") for n in range(996, 1001)]
    tail.feed(b"partial")
    assert tail.line_count == 1000
    tail.feed(b" end\n")
    assert tail.snapshot(1) == [(1001, "partial end")]


def test_line_tail_caps_huge_lines():
    tail = LineTail(maxlen=3, max_line=100)
    tail.feed(b"x" * 10_000 + b"\nshort\n")
    (n1, long), (n2, short) = tail.snapshot()
    assert len(long) == 100 and (n1, n2, short) == (1, 2, "short")


# ---------------------------------------------------------------------- following a file

def test_reads_existing_content_then_appends_and_carries_partial_lines(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_text(conv(1) + conv(1))
    cat, reader = reader_factory([str(log)])
    assert wait_for(lambda: batches(cat) == {1: 2})
    assert wait_for(lambda: reader.initial_scan[2])
    line = conv(2)
    with open(log, "a") as fh:
        fh.write(line[:40])
        fh.flush()
        time.sleep(0.1)
        assert 2 not in batches(cat), "half a line must not be decoded"
        fh.write(line[40:])
    assert wait_for(lambda: batches(cat).get(2) == 1)
    assert reader.sources[0].state == "following"
    assert [n for n, _ in reader.sources[0].tail.snapshot()] == [1, 2, 3]


def test_carriage_return_ends_a_line(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_bytes(b"epoch 1 10%\repoch 1 20%\r" + conv(3).encode())
    cat, reader = reader_factory([str(log)])
    assert wait_for(lambda: batches(cat) == {3: 1})
    assert [t for _, t in reader.sources[0].tail.snapshot()][:2] == ["epoch 1 10%", "epoch 1 20%"]


def test_truncation_is_noticed_and_nothing_decoded_is_lost(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_text(conv(1) * 3)
    cat, reader = reader_factory([str(log)])
    assert wait_for(lambda: batches(cat) == {1: 3})
    with open(log, "w") as fh:  # truncate, as `> train.log` or copytruncate do
        fh.write("")
    assert wait_for(lambda: any(e.kind == "truncated" for e in reader.drain_events()))
    with open(log, "a") as fh:
        fh.write(conv(4))
    assert wait_for(lambda: batches(cat) == {1: 3, 4: 1})


def test_truncation_never_glues_a_partial_line_to_new_text(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_text(conv(1) + "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 9")
    cat, reader = reader_factory([str(log)])
    assert wait_for(lambda: batches(cat) == {1: 1})
    time.sleep(0.05)
    log.write_text(conv(5))   # shorter than before: a truncation
    assert wait_for(lambda: batches(cat).get(5) == 1)
    assert 9 not in batches(cat)


def test_rotation_drains_the_old_file_and_reads_the_new_one_from_its_start(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_text(conv(1))
    cat, reader = reader_factory([str(log)])
    assert wait_for(lambda: batches(cat) == {1: 1})
    with open(log, "a") as old:
        os.rename(log, tmp_path / "train.log.1")
        old.write(conv(1))          # the writer still has the old file open
        old.flush()
        log.write_text(conv(6))      # logrotate creates a new file at the path
    assert wait_for(lambda: batches(cat) == {1: 2, 6: 1})
    events = reader.drain_events()
    assert any(e.kind == "rotated" for e in events)
    with open(log, "a") as fh:
        fh.write(conv(6))
    assert wait_for(lambda: batches(cat) == {1: 2, 6: 2})


def test_deletion_and_recreation(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_text(conv(1))
    cat, reader = reader_factory([str(log)])
    assert wait_for(lambda: batches(cat) == {1: 1})
    os.unlink(log)
    assert wait_for(lambda: reader.sources[0].state == "deleted")
    log.write_text(conv(7))
    assert wait_for(lambda: batches(cat) == {1: 1, 7: 1})
    kinds = [e.kind for e in reader.drain_events()]
    assert "deleted" in kinds and "recreated" in kinds


def test_a_missing_file_is_waited_for(tmp_path, reader_factory):
    log = tmp_path / "later.log"
    cat, reader = reader_factory([str(log)])
    assert wait_for(lambda: reader.sources[0].state == "waiting")
    log.write_text(conv(2))
    assert wait_for(lambda: batches(cat) == {2: 1})


def test_without_follow_the_reader_finishes(tmp_path, reader_factory):
    log = tmp_path / "train.log"
    log.write_text(conv(1) + conv(2) + "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 3 "
                   "-c 8 -H 16 -W 16 -k 8 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1")
    cat, reader = reader_factory([str(log)], follow=False)
    assert wait_for(lambda: reader.finished)
    assert batches(cat) == {1: 1, 2: 1, 3: 1}, "the unterminated last line counts at the end"
    assert reader.initial_scan == (log.stat().st_size, log.stat().st_size, True)


def test_gzip_is_read_once(tmp_path, reader_factory):
    log = tmp_path / "train.log.gz"
    with gzip.open(log, "wt") as fh:
        fh.write(conv(1) * 5)
    cat, reader = reader_factory([str(log)], follow=True)
    assert wait_for(lambda: reader.finished)
    assert batches(cat) == {1: 5}


def test_glob_pattern_labels_rows_by_file_and_picks_up_new_files(tmp_path, reader_factory, monkeypatch):
    import miotui.sources.follow as follow
    monkeypatch.setattr(follow, "GLOB_INTERVAL", 0.05)
    (tmp_path / "rank0.log").write_text(conv(1))
    cat, reader = reader_factory([str(tmp_path / "rank*.log")])
    assert wait_for(lambda: batches(cat) == {1: 1})
    (tmp_path / "rank1.log").write_text(conv(1) + conv(2))
    assert wait_for(lambda: batches(cat) == {1: 2, 2: 1})
    files = {s.problem.n: s.files for s in cat.layers()}
    assert files[2] == (str(tmp_path / "rank1.log"),)
    assert set(files[1]) == {str(tmp_path / "rank0.log"), str(tmp_path / "rank1.log")}


def test_stdin_pipe(reader_factory):
    r, w = os.pipe()
    cat, reader = reader_factory(["-"], stdin_fd=r)
    os.write(w, conv(1).encode() + conv(2).encode()[:30])
    assert wait_for(lambda: batches(cat) == {1: 1})
    os.write(w, conv(2).encode()[30:])
    assert wait_for(lambda: batches(cat) == {1: 1, 2: 1})
    os.close(w)
    assert wait_for(lambda: reader.finished)
    assert any(e.kind == "eof" for e in reader.drain_events())
    os.close(r)


def test_stop_ends_every_thread(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(conv(1))
    reader = LogReader(Catalog(), [str(log), str(tmp_path / "missing.log")], follow=True, formats=FORMATS, poll_interval=0.01)
    reader.start()
    time.sleep(0.05)
    reader.stop(timeout=2)
    assert not reader.alive


# ---------------------------------------------------------------------- the job writing the log

def test_finds_the_process_writing_the_log_and_samples_it(tmp_path):
    log = tmp_path / "train.log"
    code = ("import sys, time\nf = open(sys.argv[1], 'a')\nf.write('x\\n'); f.flush()\n"
            "print('ready', flush=True)\ntime.sleep(30)\n")
    env = dict(os.environ, MIOPEN_ENABLE_LOGGING_CMD="1", MIOPEN_LOG_LEVEL="5")
    proc = subprocess.Popen([sys.executable, "-c", code, str(log)], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        assert find_writer_pid([str(log)]) == proc.pid
        w = JobWatcher(proc.pid)
        status = w.sample()
        assert status.running and status.rss > 0 and status.pid == proc.pid
        assert w.miopen_environment() == {"MIOPEN_ENABLE_LOGGING_CMD": "1", "MIOPEN_LOG_LEVEL": "5"}
        proc.kill()
        proc.wait()
        after = w.sample()
        assert not after.running and after.status == "exited"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_no_writer_for_a_file_nobody_writes(tmp_path):
    log = tmp_path / "quiet.log"
    log.write_text("")
    assert find_writer_pid([str(log)]) is None


# ---------------------------------------------------------------------- demo replay

def test_steady_iteration_has_no_find_and_every_line_is_miopen():
    lines = ["intro\n", "MIOpen(HIP): Command [LogCmdFindConvolution] a\n", "MIOpen(HIP): Command x\n",
             "Epoch 1\n", "MIOpen(HIP): Command [LogCmdConvolution] b\n", "MIOpen(HIP): Info c\n", "Epoch 2\n"]
    assert steady_iteration(lines) == ["MIOpen(HIP): Command [LogCmdConvolution] b\n", "MIOpen(HIP): Info c\n"]


def test_demo_replays_the_sample_into_a_file_a_follower_decodes(reader_factory):
    demo = DemoReplay(speed=1000, loop=True).start()
    try:
        cat, reader = reader_factory([demo.path])
        assert wait_for(lambda: demo.iterations >= 1, timeout=20)
        from miotui.decoding.whole import decode_paths
        sample = decode_paths([demo.source])
        assert wait_for(lambda: len(cat) >= len(sample), timeout=10)
        assert {s.problem for s in sample.layers()} <= {s.problem for s in cat.layers()}
        before = sum(s.executions for s in cat.layers())
        assert wait_for(lambda: sum(s.executions for s in cat.layers()) > before, timeout=10), \
            "the replay keeps training after the sample ends"
    finally:
        demo.cleanup()
    assert not os.path.exists(demo.path)

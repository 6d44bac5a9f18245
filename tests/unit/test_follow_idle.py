"""What following idle files costs: a file inotify watches is looked at less and less often
(a network file system's is not: inotify misses other machines' writes), and what the UI
polls about 1 000s of idle files is not remade while nothing moves."""

from __future__ import annotations

import os
import time

import pytest
from follow_support import batches, conv, has_inotify, started_readers, wait_for

import miotui.sources.follow as follow
from miotui.sources.dirwatch import MountTable, mount_types
from miotui.sources.follow_source import RATE_WINDOW_S


def _idle_intervals(tmp_path, files: int = 20, idle_s: float = 4.0) -> list[float]:
    for i in range(files):
        (tmp_path / f"rank{i:02d}.log").write_text(conv(i + 1))
    with started_readers() as make:
        cat, reader = make([str(tmp_path / "rank*.log")])
        assert wait_for(lambda: len(batches(cat)) == files)
        time.sleep(idle_s)      # a few looks, each further apart
        return [s.interval for s in reader.sources]


@pytest.mark.skipif(not has_inotify(), reason="no inotify here")
def test_idle_files_inotify_watches_back_off_past_the_polling_cap(tmp_path):
    assert MountTable().local(str(tmp_path)), "the test's folder is on a local file system"
    intervals = _idle_intervals(tmp_path)
    assert min(intervals) > follow.IDLE_POLL, intervals


def test_without_inotify_idle_files_are_still_looked_at_every_second(tmp_path, monkeypatch):
    monkeypatch.setattr(follow, "open_watcher", lambda: None)
    intervals = _idle_intervals(tmp_path)
    assert max(intervals) <= follow.IDLE_POLL, intervals


@pytest.mark.skipif(not has_inotify(), reason="no inotify here")
def test_files_on_a_network_file_system_are_polled_as_without_inotify(tmp_path, monkeypatch):
    info = tmp_path / "mountinfo"
    info.write_text(f"36 25 0:32 / / rw,relatime - ext4 /dev/sda1 rw\n"
                    f"99 36 0:77 / {os.path.realpath(tmp_path)} rw,relatime - nfs4 server:/export rw,vers=4.2\n")
    monkeypatch.setattr(follow, "MountTable", lambda: MountTable(str(info)))
    logs = tmp_path / "logs"
    logs.mkdir()
    intervals = _idle_intervals(logs)
    assert max(intervals) <= follow.IDLE_POLL, intervals


def test_mountinfo_is_read_longest_mount_first_with_escaped_spaces(tmp_path):
    text = ("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
            "40 22 0:50 / /mnt/lustre rw - lustre 10.0.0.1@tcp:/fs rw\n"
            "41 22 0:51 / /mnt/my\\040share rw - fuse.sshfs host: rw\n"
            "garbage line\n")
    mounts = mount_types(text)
    assert mounts[0][0] in ("/mnt/lustre", "/mnt/my share") and ("/mnt/my share", "fuse.sshfs") in mounts
    info = tmp_path / "mountinfo"
    info.write_text(text)
    table = MountTable(str(info))
    assert table.local("/home/x") and not table.local("/mnt/lustre/job1") and not table.local("/mnt/my share/a")
    assert table.local("/mnt/lustre2"), "a mount point is a path prefix of whole names only"
    assert not MountTable(str(tmp_path / "missing")).local("/home/x"), "unknown: polled"


def test_what_the_ui_polls_is_not_remade_while_nothing_moves(tmp_path):
    for i in range(50):
        (tmp_path / f"rank{i:02d}.log").write_text(conv(i + 1))
    with started_readers() as make:
        cat, reader = make([str(tmp_path / "rank*.log")])
        assert wait_for(lambda: len(batches(cat)) == 50 and reader.initial_scan[2])
        time.sleep(RATE_WINDOW_S + 0.3)          # every rate has settled to 0
        first = reader.source_stats()
        assert reader.source_stats() is first, "the same stats while nothing was read"
        assert all(s.bytes_per_s == 0 for s in first)
        summary = reader.initial_scan
        with open(tmp_path / "rank07.log", "a") as fh:
            fh.write(conv(99))
        assert wait_for(lambda: 99 in batches(cat))
        assert wait_for(lambda: reader.source_stats() is not first)
        moved = {s.path: s for s in reader.source_stats()}[str(tmp_path / "rank07.log")]
        assert moved.bytes == len(conv(8)) + len(conv(99)) and moved.bytes_per_s > 0
        assert reader.initial_scan == summary and "following" in reader.state_text()


def test_reader_summary_names_two_files_of_thousands(tmp_path):
    for i in range(3):
        (tmp_path / f"rank{i}.log").write_text(conv(1))
    with started_readers() as make:
        _cat, reader = make([str(tmp_path / "rank*.log")])
        assert wait_for(lambda: len(reader.sources) == 3)
        assert follow.reader_summary(reader) == "rank0.log, rank1.log +1 more"

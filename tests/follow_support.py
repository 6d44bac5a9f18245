"""Helpers shared by the follow tests (``test_follow.py``, ``test_follow_hostile.py``):
a Command line of a small convolution, waiting for a condition, the catalog's conv
batches, and started readers that are stopped after the test."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from miotui.catalog import Catalog
from miotui.formats import FORMATS
from miotui.sources.follow import LogReader

CONV = ("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {n} -c 8 -H 16 -W 16 -k 8 "
        "-y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")


def conv(n: int) -> str:
    return CONV.format(n=n)


def wait_for(cond, timeout: float = 5.0, step: float = 0.01) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def before_each_feed(monkeypatch, call) -> None:
    """Run ``call(data)`` before each ``LogScanner.feed`` (to see or slow the pieces fed)."""
    from miotui.formats.miopen.scan import LogScanner
    real_feed = LogScanner.feed

    def feed(self, data):
        call(data)
        real_feed(self, data)

    monkeypatch.setattr(LogScanner, "feed", feed)


def batches(cat: Catalog) -> dict[int, int]:
    """N -> executions, for the conv layers of the tests."""
    return {s.problem.n: s.executions for s in cat.layers()}


@contextmanager
def started_readers() -> Iterator:
    """``make(paths, follow=True, **kw)`` -> (catalog, started reader polling every 10 ms);
    every reader made is stopped at the end (the test modules' ``reader_factory`` fixture)."""
    readers: list[LogReader] = []

    def make(paths, follow=True, **kw):
        cat = Catalog()
        r = LogReader(cat, [str(p) for p in paths], follow=follow, formats=FORMATS, poll_interval=0.01, **kw)
        readers.append(r)
        r.start()
        return cat, r

    try:
        yield make
    finally:
        for r in readers:
            r.stop()


def has_inotify() -> bool:
    """Linux inotify can be had here (the tests of what it changes are skipped where not)."""
    from miotui.sources.follow import open_watcher
    w = open_watcher()
    if w is None:
        return False
    w.close()
    return True


def rank_logs(folder, count: int, times: int = 1) -> list:
    """``rank0.log`` .. each holding ``times`` of its own convolution (N = its number + 1)."""
    logs = [folder / f"rank{i}.log" for i in range(count)]
    for i, log in enumerate(logs):
        log.write_text(conv(i + 1) * times)
    return logs

"""``formats.miopen.stretches.StretchCache``: what it keeps and when it gives an anchor up.

Why: the cache holds text (an iteration's stretch is 50-100 KB), so what it keeps must be
what comes again; and a log that does not repeat by stretches must stop paying for them.
The scanner's use of it (same catalog both ways) is tested in ``test_scan_whole_blocks.py``."""

from __future__ import annotations

from miotui.formats.miopen import stretches
from miotui.formats.miopen.stretches import Stretch, StretchCache


def stretch() -> Stretch:
    return Stretch(plan=None, lines=3, last_line="c")   # the cache never looks into the plan


def test_a_stretch_is_kept_the_second_time_it_is_met():
    cache = StretchCache()
    cache.pick("a")
    text = "a\nb\nc\n"
    cache.keep(text, stretch())
    assert cache.get(text) is None, "a stretch met once (cut by a bar that comes at random) was kept"
    cache.keep(text, stretch())
    assert cache.get(text) is not None


def test_a_plan_made_again_replaces_the_old_one_without_counting_its_text_twice():
    cache = StretchCache()
    text = "a\nb\nc\n"
    cache.keep(text, stretch())
    cache.keep(text, stretch())
    chars = cache.chars
    newer = stretch()
    cache.keep(text, newer)
    assert cache.get(text) is newer and cache.chars == chars


def test_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(stretches, "MAX_CHARS", 100)
    monkeypatch.setattr(stretches, "MAX_STRETCH_CHARS", 40)
    cache = StretchCache()
    cache.keep("x" * 41, stretch())
    cache.keep("x" * 41, stretch())
    assert cache.get("x" * 41) is None, "a stretch over MAX_STRETCH_CHARS was kept"
    for i in range(10):
        text = f"{i}" * 30
        cache.keep(text, stretch())
        cache.keep(text, stretch())
        assert cache.chars <= 100
    assert cache.get("9" * 30) is not None


def test_an_anchor_whose_stretches_keep_missing_is_dropped_and_retried_later():
    cache = StretchCache()
    cache.pick("a")
    for _ in range(stretches.MISSES_BEFORE_DROP):
        cache.miss(1000)
    assert cache.anchor == "a\n", "dropped before MISSES_BEFORE_DROP misses"
    cache.miss(1000)
    assert cache.anchor is None and not cache.may_pick(1000)
    assert cache.may_pick(1000 + stretches.LINES_BEFORE_RETRY)


def test_hits_keep_an_anchor_that_misses_now_and_then():
    cache = StretchCache()
    cache.pick("a")
    for _ in range(100):
        cache.hit()
        cache.miss(5)
    assert cache.anchor == "a\n"

"""The freeze after a slow full collection (issue 19 §6: full collections of the whole heap
were the slow tail of the app's keys).  Durations come from an injected clock: a test
never depends on how fast this host collects."""

from __future__ import annotations

import gc

from miotui.gc_freeze import FreezeAfterSlowCollection


class StepClock:
    """Each reading is ``step`` seconds after the one before."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_slow_full_collection_freezes_what_survived_it_and_stop_gives_it_back():
    keep = [[i] for i in range(1000)]            # live objects the freeze must take
    guard = FreezeAfterSlowCollection(slow_ms=15, clock=StepClock(1.0))
    guard.start()
    try:
        gc.collect()
        assert guard.full_collections == 1 and guard.freezes == 1
        assert gc.get_freeze_count() >= len(keep)
        gc.collect(0)                              # a young collection is not watched
        assert guard.full_collections == 1
    finally:
        guard.stop()
    assert gc.get_freeze_count() == 0, "stop gives the frozen objects back to the collector"
    assert guard._callback not in gc.callbacks


def test_a_fast_full_collection_freezes_nothing():
    guard = FreezeAfterSlowCollection(slow_ms=15, clock=StepClock(0.001))
    guard.start()
    try:
        gc.collect()
        assert guard.full_collections == 1 and guard.freezes == 0
        assert gc.get_freeze_count() == 0
    finally:
        guard.stop()


def test_garbage_of_the_moment_is_not_frozen():
    """What the freeze takes survived a full collection: a cycle dropped before it is freed."""
    class Node:
        pass

    guard = FreezeAfterSlowCollection(slow_ms=15, clock=StepClock(1.0))
    a, b = Node(), Node()
    a.other, b.other = b, a
    ids = {id(a), id(b)}
    del a, b
    guard.start()
    try:
        gc.collect()
        assert guard.freezes == 1
        assert not any(id(o) in ids and isinstance(o, Node) for o in gc.get_objects())
    finally:
        guard.stop()


def test_a_second_slow_collection_freezes_only_once_the_heap_grew_by_half():
    """A frozen object that later dies in a reference cycle is never freed (Textual's cached
    lines do): freezing after every slow collection kept thousands a second.  Freezing again
    needs new survivors at least half as many as are frozen already: a handful a session."""
    guard = FreezeAfterSlowCollection(slow_ms=15, clock=StepClock(1.0))
    guard.start()
    try:
        gc.collect()
        assert guard.freezes == 1
        frozen = gc.get_freeze_count()
        few = [[i] for i in range(100)]
        gc.collect()
        assert guard.freezes == 1, "a few new survivors: nothing more is frozen"
        many = [[i] for i in range(frozen // 2 + 1000)]
        before = gc.get_freeze_count()   # (frozen objects freed by their refcount meanwhile leave it)
        gc.collect()
        assert guard.freezes == 2 and gc.get_freeze_count() - before >= len(many), len(few)
    finally:
        guard.stop()
    assert gc.get_freeze_count() == 0

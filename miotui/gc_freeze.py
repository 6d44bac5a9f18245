"""Keep the garbage collector's full collections short while the app runs.

Why: CPython collects its oldest generation (every object that outlived two young
collections) once the objects promoted since the last full collection reach a quarter of
those it kept then.  Following the demo, that was every ~2.5 s, and each one walked the
whole heap: modules, classes, Textual's widgets and caches, the catalog and, once a layer
ran, numpy's and numba's objects (75 000 tracked objects after start, 145 000 a minute
later).  On the shared 2-core host each took 50-340 ms (median 135 ms) of the UI thread
with the interpreter lock held, wherever it fell: it was the slow tail (p95) of ``enter``,
``i`` and ``escape`` (issue 19 §6).

What: a full collection that took longer than ``slow_ms`` freezes what survived it
(``gc.freeze()``: moved to a permanent generation that later collections never walk), so
the next ones walk only what is newer, but only when what survived it is at least half as
much as what is frozen already (the heap grew by half since the last freeze: startup, a
backend's imports, a catalog of thousands of layers).  Why not after every slow one: a frozen object
that later dies inside a reference cycle is never freed, and Textual's cached lines do
(a ``Strip`` caches itself); freezing every ~2 s kept ~2 000 such objects a second
following the demo.  Growing by half each time bounds the freezes to a handful a session
(a logarithm of the heap), each keeping at most the render caches alive at that moment
(following the demo for 40 s with keys pressed: 3 freezes, 30 000 objects kept in all).
Right after a full collection every object left is reachable, so no garbage of that moment
is frozen.
:meth:`~FreezeAfterSlowCollection.stop` gives everything back (``gc.unfreeze()``).
"""

from __future__ import annotations

import gc
import time
from typing import Any, Callable

#: A full collection longer than this (ms) freezes what survived it: a key pressed during
#: it waits that long, and the target for a key is 100 ms in all.
SLOW_MS = 15.0
#: ... when what survived it is at least this share of what is frozen already.  1.0 (the
#: heap doubled) left a 10 000-layer catalog unfrozen (60 000 objects against 84 000
#: frozen): 20-43 ms full collections while scrolling it.
GROWTH = 0.5


class FreezeAfterSlowCollection:
    """Watches full collections (``gc.callbacks``) and freezes the heap after a slow one.

    The callback runs in whichever thread allocated the object that started the collection
    (the reader, the poller, a worker or the UI); ``gc.freeze`` is safe from any of them.
    """

    def __init__(self, slow_ms: float = SLOW_MS, clock: Callable[[], float] = time.perf_counter) -> None:
        self.slow_ms = slow_ms
        self.clock = clock
        #: full collections seen, and how many of them froze the heap
        self.full_collections = 0
        self.freezes = 0
        self._started_at: float | None = None
        self._active = False

    def start(self) -> None:
        if not self._active:
            self._active = True
            gc.callbacks.append(self._callback)

    def stop(self) -> None:
        """Stop watching and give what was frozen back to the collector."""
        if self._active:
            self._active = False
            try:
                gc.callbacks.remove(self._callback)
            except ValueError:
                pass
            if self.freezes:
                gc.unfreeze()

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started_at = self.clock()
            return
        started, self._started_at = self._started_at, None
        if started is None:
            return
        self.full_collections += 1
        slow = (self.clock() - started) * 1000.0 > self.slow_ms
        if slow and len(gc.get_objects(2)) >= GROWTH * gc.get_freeze_count():
            gc.freeze()
            self.freezes += 1

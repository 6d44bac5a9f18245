"""``miotui --compare OLD NEW``: the compare screen as an app of its own, NEW followed live.

Why an app of its own and not a mode of ``MiotuiApp``: the layer explorer's model, run queue
and screens are about one log; a comparison needs two runs and none of the rest.  What it
shares is the reading machinery: the OLD run is decoded once (``decode_files``, in a
thread), the NEW one is read by a ``LogReader`` (following it with ``--follow``) and watched
by the same ``Poller`` as the explorer.  The comparison is made in the poller's thread each
time NEW's layers change (``miotui.diff.compare``: no math on the UI thread), and the UI
only draws it; the poller waits for the UI to take one before it makes the next.
"""

from __future__ import annotations

import threading
from typing import Any, Optional, Sequence

from textual.app import App
from textual.message import Message
from textual.screen import Screen

from miotui.catalog import Catalog
from miotui.formats import FORMATS
from miotui.safe_text import visible
from miotui.screens.compare import CompareScreen
from miotui.sources.follow import LogReader
from miotui.views.poller import POLL_INTERVAL, PollData, Poller


class Compared(Message):
    def __init__(self, comparison: Any) -> None:
        super().__init__()
        self.comparison = comparison


class CompareApp(App):
    """Two runs compared layer by layer, NEW updated as it grows."""

    TITLE = "miotui compare"

    def __init__(self, old: Sequence[str], new: Sequence[str], *, follow: bool = False, ignore_batch: bool = False,
                 poll_interval: float = POLL_INTERVAL, reader_poll_interval: Optional[float] = None) -> None:
        super().__init__()
        self.old_paths, self.new_paths = list(old), list(new)
        self.ignore_batch = ignore_batch
        self.catalog = Catalog()
        kw = {} if reader_poll_interval is None else {"poll_interval": reader_poll_interval}
        self.reader = LogReader(self.catalog, self.new_paths, follow=follow, formats=FORMATS, **kw)
        self.poller = Poller(self.catalog, self.reader, self._polled, interval=poll_interval,
                             on_error=lambda text: self.log.error(text))
        self.compare_screen = CompareScreen(visible(f"Reading {' '.join(self.old_paths)}…"))
        self.old_side: Any = None
        self.old_error = ""
        self._new_versions: Optional[tuple] = None
        self._drawn_version = -1
        self._old_ready = threading.Event()
        self._stopped = False
        self.comparisons = 0

    def get_default_screen(self) -> Screen:
        return self.compare_screen

    def on_mount(self) -> None:
        self.sub_title = visible(f"{' '.join(self.old_paths)} -> {' '.join(self.new_paths)}")
        threading.Thread(target=self._load_old, name="miotui-compare-old", daemon=True).start()
        self.reader.start()
        self.poller.start()

    def _load_old(self) -> None:
        """In a thread: decode the OLD run once."""
        from miotui.decoding.parallel import decode_files
        from miotui.diff_cli import side_of
        try:
            self.old_side = side_of(self.old_paths, decode_files(self.old_paths))
        except OSError as e:
            self.old_error = f"cannot read {e.filename or ' '.join(self.old_paths)}: {e.strerror or e}"
            self.call_from_thread(self.compare_screen.show_message, f"old run: {self.old_error}")
        self._old_ready.set()

    def _polled(self, data: PollData) -> None:
        """In the poller's thread: compare again when NEW's layers (or OLD's arrival) changed."""
        version = self.catalog.version
        if self._stopped or self.old_side is None or version == self._drawn_version:
            self.poller.ack()
            return
        from miotui.diff import compare
        from miotui.diff_cli import side_of
        from miotui.diff_pack import log_versions
        if not self._new_versions:
            self._new_versions = log_versions(self.new_paths)
        new = side_of(self.new_paths, self.catalog, self._new_versions)
        self._drawn_version = version
        self.post_message(Compared(compare(self.old_side, new, self.ignore_batch)))

    def on_compared(self, message: Compared) -> None:
        try:
            if not self._stopped:
                self.compare_screen.show(message.comparison)
                self.comparisons += 1
        finally:
            self.poller.ack()

    def shutdown_background(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.poller.stop(1.0)
        self.reader.stop(timeout=1.0)

    async def action_quit(self) -> None:
        self.shutdown_background()
        self.exit()

    def on_unmount(self) -> None:
        self.shutdown_background()


def launch_compare(old: str, new: str, *, follow: bool, ignore_batch: bool) -> int:
    """Run the compare app (``miotui --compare OLD NEW``); the exit status."""
    import os
    import sys
    for path in (old, new):
        if not (follow and path == new) and not os.path.exists(path):
            print(f"miotui: cannot read {visible(path)}: no such file", file=sys.stderr)
            return 2
    app = CompareApp([old], [new], follow=follow, ignore_batch=ignore_batch)
    try:
        app.run()
    finally:
        app.shutdown_background()
    return app.return_code or 0

"""The key footer, recomposed only when the keys it shows change.

Textual's ``Footer`` rebuilds all its key widgets (and styles each one) whenever its
screen says its bindings *may* have changed: on every focus change, every return to the
screen, every ``refresh_bindings``.  Following a log on a 2-core host, those rebuilds were
most of the 100-490 ms that ``enter``, ``escape`` and ``i`` took to show (issue 19 §6).
This footer compares what it would show with what it shows and rebuilds only on a
difference.
"""

from __future__ import annotations

from typing import Any, Optional

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """A ``Footer`` that skips rebuilds that would show the same keys."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: Optional[tuple] = None

    def _keys(self, screen: Screen) -> tuple:
        """What the footer shows: each shown binding's key, label and state, in order."""
        app = screen.app
        return (self.compact, self.show_command_palette,
                tuple((b.key, b.action, b.description, app.get_key_display(b), enabled, tooltip, b.group)
                      for _, b, enabled, tooltip in screen.active_bindings.values()
                      if b.show or b.action == getattr(app, "COMMAND_PALETTE_BINDING", None)))

    def bindings_changed(self, screen: Screen) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            keys = self._keys(screen)
            if keys == self._shown:
                self._bindings_ready = True
                return
            self._shown = keys
        super().bindings_changed(screen)

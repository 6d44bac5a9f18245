"""Messages between the screens and the app.

Why messages: a screen must not import the app module (that made a cycle, and tied each
screen to the app's internals).  A screen asks for something by posting a
:class:`LayerAction` (it bubbles up to the app), and learns that its data changed by
receiving a :class:`LayerChanged` (the app posts it to the screen).  Updates that come
in floods (a run's progress, a layer's counters at 10 Hz) replace a pending one for the
same layer instead of queueing behind it (``can_replace``), as toolong's messages do.
"""

from __future__ import annotations

from typing import Any, Optional

from textual.message import Message

#: what a LayerAction can ask for
ACTIONS = ("open", "run", "run_with", "driver", "copy", "save", "cancel")


class LayerAction(Message):
    """A screen asks the app to do ``action`` with layer ``layer_id``."""

    def __init__(self, action: str, layer_id: Optional[int], kind: Optional[str] = None) -> None:
        super().__init__()
        if action not in ACTIONS:
            raise ValueError(f"unknown layer action {action!r}")
        self.action = action
        self.layer_id = layer_id
        self.kind = kind            # for cancel: "run", "driver" or None (either)


class LayerChanged(Message):
    """Layer ``layer_id``'s data (``None``: everything, e.g. the job's environment)
    changed: its snapshot, its runs or its run's progress."""

    def __init__(self, layer_id: Optional[int]) -> None:
        super().__init__()
        self.layer_id = layer_id

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LayerChanged) and message.layer_id == self.layer_id


class RunFinished(Message):
    """A driver panel's run ended with ``result``."""

    def __init__(self, result: Any) -> None:
        super().__init__()
        self.result = result


class ViewChanged(Message):
    """The table's view changed (filter, op tab, follow): the status bar should say so."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ViewChanged)


class StartupChanged(Message):
    """What the first iteration spent changed (a new startup view from the poller, or a new
    calls-per-second sample): the startup screen redraws from the live model."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StartupChanged)

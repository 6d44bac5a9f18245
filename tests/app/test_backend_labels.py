"""A backend's label is what the run chooser shows for it (the registry's ``label``)."""

from __future__ import annotations

from miotui.execute.backends import all_backends
from miotui.screens.dialogs import CHOICES


def test_the_run_chooser_shows_each_backends_label():
    shown = dict(CHOICES)
    assert {b.name: b.label for b in all_backends()} == {b.name: shown[b.name] for b in all_backends()}

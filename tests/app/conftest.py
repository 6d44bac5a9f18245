"""Fixtures of the app's Pilot tests (tests/app/), handed to any test that names them.

``_isolated`` (autouse)
    Every app test runs in its own directory (``tmp_path``), with no user keymap or
    settings (``MIOTUI_KEYMAP`` and ``XDG_CONFIG_HOME`` point into ``tmp_path``).
``log``
    The small log of :func:`pilot_helpers.small_log` (five layers, one undecodable line),
    written to ``tmp_path/train.log``.
``long_big_runs``
    Each numpy run of a layer with 32 images lasts at least 1 s (see below).

The plain helpers (``wait_until``, ``loaded``, ``table``, ``plain`` ...) are functions in
tests/app/pilot_helpers.py, imported by name: a conftest is not meant to be imported.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pilot_helpers import isolate, write_small_log


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write_small_log(tmp_path)


@pytest.fixture
def long_big_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each numpy call on a layer with 32 images also waits 1 s (returning early on a
    cancel), so a run outlasts the key presses on any machine: on a 16-core one the
    real layer ran in 4.7 s, while each ``pilot.press`` waited up to 2 s for the CPU
    to go idle, and the run ended before the test could see it."""
    from miotui.execute.backends import NumpyBackend
    real = NumpyBackend.run

    def run(self, problem, prepared, cancel):
        out = real(self, problem, prepared, cancel)
        end = time.monotonic() + (1.0 if problem.n == 32 else 0.0)
        while time.monotonic() < end and not cancel.is_set():
            time.sleep(0.01)
        return out

    monkeypatch.setattr(NumpyBackend, "run", run)

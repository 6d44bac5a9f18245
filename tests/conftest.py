"""Shared test helpers and fixtures.

pytest hands these to any test that names them as an argument (no import needed):

``fake_driver``
    Path of ``tests/fake_miopendriver.py``: a FAKE MIOpenDriver that prints the real
    driver's output format (no GPU, no kernel, no verification).
``fake_leaky_launcher``
    Path of ``tests/fake_leaky_launcher.py``: a FAKE launcher that, like ``ssh`` with
    ``ControlPersist``, leaves a process in its own session holding the output pipe.
``fake_env``
    ``monkeypatch`` with every ``FAKE_*`` knob of the fakes and ``$MIOPEN_DRIVER`` cleared.
``fresh_run_cache``
    Empties :mod:`miotui.execute.runner`'s result cache before and after the test
    (``pytestmark = pytest.mark.usefixtures("fresh_run_cache")`` for a whole module).
``real_logs_dir`` / ``real_log``
    ``tests/data/real_logs`` (verbatim excerpts from public issues), and
    ``real_log("43")``: the one file there named ``43_*``.  Skips when absent.
``conv``
    ``conv(direction="fwd", dtype="fp32", n=2, c=4, k=6, hw=8, ...)``: a small 3x3
    ConvProblem, any field overridable.
``rel_err``
    ``rel_err(a, b)``: max |a - b| / max |b| in float64 (the shapes must match).

The helper fixtures are session-scoped so hypothesis tests (``@given``) can use them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from problem_values import make_conv

from miotui.problems import ConvProblem

TESTS = Path(__file__).resolve().parent
FAKE_DRIVER = TESTS / "fake_miopendriver.py"
FAKE_LEAKY_LAUNCHER = TESTS / "fake_leaky_launcher.py"
REAL_LOGS = TESTS / "data" / "real_logs"
FAKE_ENV_VARS = ("FAKE_MIOPEN_STYLE", "FAKE_MIOPEN_EXIT", "FAKE_MIOPEN_IGNORE_TERM", "FAKE_MIOPEN_ARGV_FILE",
                 "FAKE_MIOPEN_LINE_DELAY", "FAKE_MIOPEN_NOLINE_MB", "FAKE_LEAK_MODE", "FAKE_LEAK_SECONDS",
                 "MIOPEN_DRIVER")


@pytest.fixture(scope="session")
def fake_driver() -> str:
    return str(FAKE_DRIVER)


@pytest.fixture(scope="session")
def fake_leaky_launcher() -> str:
    return str(FAKE_LEAKY_LAUNCHER)


@pytest.fixture
def fake_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Reset the fakes' knobs; tests set the ones they need."""
    for var in FAKE_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.fixture
def fresh_run_cache():
    from miotui.execute.runner import clear_cache
    clear_cache()
    yield
    clear_cache()


@pytest.fixture(scope="session")
def real_logs_dir() -> Path:
    if not REAL_LOGS.is_dir():
        pytest.skip("tests/data/real_logs not available")
    return REAL_LOGS


@pytest.fixture(scope="session")
def real_log(real_logs_dir: Path) -> Callable[[str], Path]:
    def find(prefix: str) -> Path:
        (path,) = real_logs_dir.glob(prefix + "_*")
        return path
    return find


@pytest.fixture(scope="session")
def conv() -> Callable[..., ConvProblem]:
    return make_conv


def relative_error(a: Any, b: Any) -> float:
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a64.shape == b64.shape
    return float(np.max(np.abs(a64 - b64)) / max(float(np.max(np.abs(b64))), 1e-300))


@pytest.fixture(scope="session")
def rel_err() -> Callable[[Any, Any], float]:
    return relative_error

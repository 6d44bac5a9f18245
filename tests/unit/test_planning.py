"""Planning a request (miotui.execute.planning): which backends run, and why one does not.
The app's worker (run_queue.execute) and `miotui run` both plan with it."""

from __future__ import annotations

import threading

import pytest
from problem_values import make_conv

from miotui.execute import planning
from miotui.execute.backends import BACKENDS, NumpyBackend, RunSettings, available_backends
from miotui.execute.planning import ALL, backend_names, plan_backends, plan_request
from miotui.run_queue import RunBook, execute

pytestmark = pytest.mark.usefixtures("fresh_run_cache")

DENSE = make_conv()
NO_DRIVER = RunSettings(driver_path="/nonexistent/MIOpenDriver")


def test_all_means_every_backend_in_table_order():
    assert backend_names(ALL) == backend_names(("all",)) == BACKENDS
    assert backend_names(("torch",)) == ("torch",)


def test_side_by_side_each_backend_says_why_it_does_not_run():
    plan = dict(plan_request(DENSE, ALL, NO_DRIVER))
    assert list(plan) == list(BACKENDS)
    assert plan["numpy"] == ""
    numba_missing = available_backends()["numba"]
    if numba_missing:
        assert plan["numba"] == numba_missing
    else:
        assert plan["numba"].startswith("a dense convolution: numba's direct kernels are for depthwise")
    assert plan["torch"] == (available_backends()["torch"] or "")
    assert "does not exist" in plan["miopen-driver"]


def test_one_backend_asked_for_by_name_runs_and_says_why_not_itself():
    assert plan_request(DENSE, ("numba",), NO_DRIVER) == [("numba", "")]
    assert plan_request(DENSE, ("miopen-driver",), NO_DRIVER) == [("miopen-driver", "")]
    assert plan_request(DENSE, ("auto",), NO_DRIVER) == [("auto", "")]


def test_a_backend_that_breaks_while_asked_is_a_reason_not_a_crash(monkeypatch):
    def broken(self, problem, settings):
        raise RuntimeError("its module failed to load")
    monkeypatch.setattr(NumpyBackend, "why_not", broken)
    assert dict(plan_backends(DENSE, ALL, NO_DRIVER))["numpy"] == "RuntimeError: its module failed to load"


def test_auto_picks_numba_only_where_its_kernels_apply():
    name, why = planning.resolve_auto(DENSE)
    assert name == "numpy" and why.startswith("auto chose numpy")


def test_the_app_worker_runs_the_plan(monkeypatch):
    """run_queue.execute takes the plan from planning: a side-by-side request reports the
    skipped backends as n/a with the plan's reasons, and runs the rest."""
    book = RunBook()
    req = book.request(1, DENSE, ALL, RunSettings(iters=1, driver_path="/nonexistent/MIOpenDriver"))
    plan = dict(plan_request(DENSE, ALL, req.settings))
    events: list = []
    done = threading.Event()

    def emit(kind, payload):
        events.append((kind, payload))
        if kind == "done":
            done.set()
    execute(req, emit)
    assert done.is_set()
    results = {r.backend: r for kind, r in events if kind == "result"}
    assert list(results) == list(BACKENDS)
    for name, why in plan.items():
        if why:
            assert results[name].status == "n/a" and results[name].message == why
    assert results["numpy"].status == "ok"

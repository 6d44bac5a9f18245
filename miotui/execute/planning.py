"""Which backends a request runs, and why one does not: the app and ``miotui run`` alike.

A request names backends: one (``numpy``, ``torch``, ``miopen-driver``, ``auto``), or
every one side by side (the app's :data:`ALL`, ``--backend all``).

* Side by side, each backend is asked first (:meth:`~miotui.execute.protocol.Backend.why_not`):
  one that cannot run the layer (numba has direct kernels only for depthwise/grouped
  convolutions and pooling; torch has no int8; MIOpenDriver is not installed) is listed
  as ``n/a`` with the reason and does not run; never a row named after it that ran
  something else.
* One backend asked for by name runs, and its own result says why not (status ``n/a``
  with the reason): a user who named it wants its verdict, and ``miotui run`` counts it
  in its exit status.
* ``auto`` is resolved per layer (:func:`resolve_auto`): numba where its direct kernels
  apply, numpy everywhere else.

Light to import (the app imports it at start-up): the registry, and with it the
backends' modules, load when a plan is made.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from miotui.execute.protocol import RunResult, RunSettings
    from miotui.problems import Problem

#: a request's backends meaning "every backend, side by side"
ALL = ("*all*",)
#: what a plan is: (backend name, why it does not run or "") in the order they run
Plan = list[tuple[str, str]]


def backend_names(asked: Sequence[str]) -> tuple[str, ...]:
    """The backends a request names: every registered one for :data:`ALL` (or the
    CLI's ``all``), else as asked."""
    from miotui.execute.registry import BACKENDS
    if tuple(asked) in (ALL, ("all",)):
        return BACKENDS
    return tuple(asked)


def plan_backends(problem: "Problem", names: Sequence[str], settings: "RunSettings") -> Plan:
    """``[(backend, why it does not apply or "")]`` for the backends asked for (:data:`ALL`:
    every backend), each asked :meth:`~miotui.execute.protocol.Backend.why_not`.  ``auto``,
    or a name no backend has, is left to the runner (it resolves one, refuses the other)."""
    from miotui.execute.registry import BACKENDS, get_backend
    plan: Plan = []
    for name in backend_names(names):
        why = ""
        if name in BACKENDS:
            try:
                why = get_backend(name).why_not(problem, settings) or ""
            except Exception as e:     # a broken backend module is a reason, not a crash
                why = f"{type(e).__name__}: {e}"
        plan.append((name, why))
    return plan


def plan_request(problem: "Problem", asked: Sequence[str], settings: "RunSettings") -> Plan:
    """What a request runs, in order, each backend with why it does not ("": it runs).

    Several backends (side by side) are each checked first (:func:`plan_backends`); one
    backend asked for by name is not: it runs, and its result says why not."""
    names = backend_names(asked)
    if len(names) > 1:
        return plan_backends(problem, names, settings)
    return [(name, "") for name in names]


def resolve_auto(problem: "Problem") -> tuple[str, str]:
    """``--backend auto``: the best available reference for this layer, and why.

    numba where its direct kernels apply (depthwise/small-group conv, pooling: 4-20x
    faster than im2col there), numpy everywhere else.
    """
    from miotui.execute.registry import NumbaBackend, get_backend
    nb = get_backend("numba")
    assert isinstance(nb, NumbaBackend)
    if nb.kernels_apply(problem):
        return "numba", "auto chose numba: its direct kernels apply to this layer"
    why = nb.unavailable()
    if why:
        return "numpy", f"auto chose numpy ({why})"
    return "numpy", "auto chose numpy: numba's direct kernels do not apply to this layer"


def not_applicable(problem: "Problem", settings: "RunSettings", backend: str, why: str,
                   status: str = "n/a") -> "RunResult":
    """The result of a backend that did not run: ``status`` (``n/a``, ``cancelled``,
    ``error``) and the reason, with the request's settings for that backend."""
    from miotui.execute.protocol import RunResult
    return RunResult(backend=backend, problem=problem, settings=replace(settings, backend=backend),
                     status=status, message=why)

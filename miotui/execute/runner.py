"""Running one layer: guard, time, verify, cache.

:func:`run_layer` is what the app's worker and ``miotui run`` call.  It never raises
for a problem with the layer or the backend: every failure becomes a
:class:`~miotui.execute.protocol.RunResult` whose ``status`` and ``message`` say what
happened (a traceback in a TUI panel helps nobody).  Only ``KeyboardInterrupt``
passes through, after any child process has been killed.

A backend that does not apply to the layer, or is not installed, gives status ``n/a``
with the reason: no other backend runs in its place under its name.

In-process runs (numpy, numba, torch): the memory guard first (nothing allocated
yet), then the seeded inputs, ``warmup`` untimed calls (numba compiles before them,
timed apart), ``iters`` timed calls (median, min, max and each call's time reported),
then the verification reference on the same inputs (:mod:`miotui.execute.oracle`: float64
code sharing none of the backends') and :func:`miotui.execute.verify.compare`.
MIOpenDriver runs in a child process (:mod:`miotui.execute.driver_backend`).

Results that ran (``ok``/``failed``) are cached per (layer, backend, settings); a cached
result says ``cached=True``, and ``use_cache=False`` always measures again.
"""

from __future__ import annotations

import collections
import math
import os
import statistics
import threading
import time
from dataclasses import replace
from typing import Any, Callable, Optional

from miotui.execute import oracle, reference
from miotui.execute.driver_backend import DriverBackend, launch_driver
from miotui.execute.guard import batch_override, check_memory, not_modelled, validate
from miotui.execute.planning import resolve_auto
from miotui.execute.protocol import TIMES_KEPT, InProcessBackend, RunResult, RunSettings, rates
from miotui.execute.registry import BACKENDS, get_backend
from miotui.execute.tensors import ReferenceUnsupported
from miotui.execute.threads import Cancelled
from miotui.execute.verify import compare
from miotui.problems import Problem, ProblemError

__all__ = ["run_layer", "launch_driver", "clear_cache", "cache_info", "dump_tensors", "CACHE_SIZE"]

#: Results kept in the in-process cache.
CACHE_SIZE = 128

_cache: "collections.OrderedDict[tuple, RunResult]" = collections.OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def cache_info() -> int:
    with _cache_lock:
        return len(_cache)


class _Deadline:
    """A cancel flag that is also set by the clock (``timeout_s``); the reference only
    calls ``is_set()``, so this stands in for a threading.Event."""

    def __init__(self, cancel: Optional[threading.Event], timeout_s: float):
        self.cancel = cancel
        self.deadline = time.monotonic() + timeout_s if timeout_s and timeout_s > 0 else math.inf
        self.timeout_s = timeout_s

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    @property
    def timed_out(self) -> bool:
        return time.monotonic() > self.deadline

    def is_set(self) -> bool:
        return self.cancelled or self.timed_out


class _Stopped(Exception):
    pass


def _check(stop: _Deadline) -> None:
    if stop.is_set():
        raise _Stopped()


def _result(backend: str, problem: Problem, settings: RunSettings, status: str, message: str,
            **kw: Any) -> RunResult:
    return RunResult(backend=backend, problem=problem, settings=settings, status=status, message=message, **kw)


def _emit(on_progress: Optional[Callable[[str], None]], text: str) -> None:
    if on_progress is not None:
        try:
            on_progress(text)
        except Exception:   # a display callback must not break the run
            pass


def run_layer(problem: Problem, settings: RunSettings, cancel: Optional[threading.Event] = None,
              on_progress: Optional[Callable[[str], None]] = None, *, use_cache: bool = True) -> RunResult:
    """Run one layer on ``settings.backend`` and verify it; never raises (except
    KeyboardInterrupt).  ``on_progress(text)`` gets short progress messages (and, for
    MIOpenDriver, each output line).  ``backend="auto"`` picks numba or numpy and says
    which in the result's note.  Results are cached per (layer, backend, settings)
    unless ``use_cache`` is False (then it always measures, and stores nothing)."""
    start = time.monotonic()
    why = validate(problem)
    if why:
        return _result(settings.backend, problem, settings, "error", why)  # type: ignore[arg-type]
    why = not_modelled(problem) if _computed_here(settings.backend) else None
    if why:
        return _result(settings.backend, problem, settings, "n/a", why)  # type: ignore[arg-type]
    notes: list[str] = []
    try:
        problem, batch_note = batch_override(problem, settings.batch)
    except ProblemError as e:
        return _result(settings.backend, problem, settings, "error", f"--batch: {e}")
    if batch_note:
        notes.append(batch_note)
    name = settings.backend
    if name == "auto":
        name, why_auto = resolve_auto(problem)
        notes.append(why_auto)
    if name not in BACKENDS:
        hint = " (run each backend in turn for 'all')" if name == "all" else ""
        return _result(name, problem, settings, "error",
                       f"unknown backend {name!r}{hint}; choose from {', '.join(BACKENDS + ('auto',))}")
    if problem.dtype == "unknown":
        notes.append("the log did not say the data type; run as fp32")
    if settings.iters < 1:
        return _result(name, problem, settings, "error", f"iterations must be at least 1, got {settings.iters}")

    key = (problem.key, name, settings)
    cacheable = use_cache and settings.dump_dir is None
    if cacheable:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
        if hit is not None:
            _emit(on_progress, "cached result")
            return replace(hit, cached=True)

    try:
        backend = get_backend(name)
        if isinstance(backend, InProcessBackend):
            res = _run_in_process(backend, problem, settings, cancel, on_progress)
        elif isinstance(backend, DriverBackend):   # (the batch is applied already: launch_driver finds N = batch)
            res = launch_driver(problem, settings, on_progress or (lambda _l: None),
                                cancel if cancel is not None else threading.Event())
        else:
            raise TypeError(f"the runner has no way to run a {type(backend).__name__}")
    except KeyboardInterrupt:
        raise
    except MemoryError:
        res = _result(name, problem, settings, "error",
                      "ran out of memory (the guard's estimate was too low); try a smaller --batch")
    except Exception as e:  # every backend failure is a result, never a traceback
        res = _result(name, problem, settings, "error", f"{type(e).__name__}: {e}")
    if notes:
        res = replace(res, note="; ".join(n for n in notes + [res.note] if n))
    res = replace(res, elapsed_s=time.monotonic() - start, cached=False)
    if cacheable and res.status in ("ok", "failed"):
        with _cache_lock:
            _cache[key] = res
            _cache.move_to_end(key)
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return res


def _computed_here(name: str) -> bool:
    """Whether a run asked for as ``name`` computes the layer in this process (``auto``
    does; a name no backend has is refused later, after the layer's own checks)."""
    return name not in BACKENDS or get_backend(name).in_process


def _run_in_process(backend: InProcessBackend, problem: Problem, settings: RunSettings,
                    cancel: Optional[threading.Event],
                    on_progress: Optional[Callable[[str], None]]) -> RunResult:
    name = backend.name
    why = backend.unavailable()
    if why:
        return _result(name, problem, settings, "n/a", why)
    why = backend.applies(problem)
    if why:
        return _result(name, problem, settings, "n/a", f"{name} does not run this layer: {why}")
    check = check_memory(problem, backend, verify=settings.verify)
    if not check.ok:
        return _result(name, problem, settings, "refused", check.message)

    stop = _Deadline(cancel, settings.timeout_s)
    notes: list[str] = []
    try:
        engine = backend.describe(problem)
        _emit(on_progress, f"{name}: making inputs (seed {settings.seed})")
        inputs = reference.make_inputs(problem, settings.seed)
        jit_ms: Optional[float] = None
        if backend.jit:
            _emit(on_progress, f"{name}: compiling")
            jit_ms = backend.compile(problem) * 1e3
        prepared = backend.prepare(problem, inputs)
        for i in range(max(0, settings.warmup)):
            _check(stop)
            _emit(on_progress, f"{name}: warm-up {i + 1}/{settings.warmup}")
            backend.run(problem, prepared, stop)
            backend.synchronize()

        def before_call(i: int) -> None:
            _check(stop)
            _emit(on_progress, f"{name}: iteration {i + 1}/{settings.iters}")

        raw, times = backend.time_calls(problem, prepared, settings.iters, stop, before_call)
        outputs = backend.outputs(problem, raw)
        changed = backend.note(prepared)
        if changed:
            notes.append(changed)
        del prepared
        verification = None
        if settings.verify:
            _check(stop)
            _emit(on_progress, f"{name}: {oracle.reference_name(problem, name)}")
            ref, against = oracle.reference_outputs(problem, inputs, name, cancel=stop)
            _emit(on_progress, f"{name}: comparing")
            verification = compare(problem, ref, outputs, reference=against)
            del ref
        dumped: tuple[str, ...] = ()
        if settings.dump_dir:
            dumped = dump_tensors(settings.dump_dir, inputs, outputs)
    except (Cancelled, _Stopped):
        if stop.cancelled:
            return _result(name, problem, settings, "cancelled", "cancelled")
        return _result(name, problem, settings, "error", f"timed out after {settings.timeout_s:g} s (--timeout)")
    except NotImplementedError as e:   # ReferenceUnsupported too: the layer is outside what it runs
        what = "the reference" if isinstance(e, ReferenceUnsupported) else name
        return _result(name, problem, settings, "n/a", f"{what} cannot run this layer: {e or 'not implemented'}")
    except (RuntimeError, ValueError, TypeError) as e:
        return _result(name, problem, settings, "error", f"{name} failed: {e}")
    return _timed_result(backend, problem, settings, times, jit_ms, verification, engine, notes, dumped)


def _timed_result(backend: InProcessBackend, problem: Problem, settings: RunSettings, times: list[float],
                  jit_ms: Optional[float], verification: Any, engine: str, notes: list[str],
                  dumped: tuple[str, ...]) -> RunResult:
    """The result of a run that went through: min/median/max of ``times``, the verdict."""
    name = backend.name
    median = statistics.median(times)
    if jit_ms is not None:
        notes.append(f"compile {jit_ms:.0f} ms, not counted in the times" if jit_ms >= 1 else
                     "kernels already compiled (cached)")
    gflops, gbps = rates(problem, median)
    status, message = "ok", f"median {median:.3f} ms over {len(times)} iterations"
    timer = backend.timer()
    if timer:
        message += f" ({timer})"
    if verification is not None:
        if verification.ok:
            message += f"; verified against the {verification.reference}"
        else:
            status = "failed"
            message = (f"verification FAILED: {verification.metric} {verification.error:.3g} > tolerance "
                       f"{verification.tolerance:.3g} ({verification.how})")
    else:
        notes.append("not verified (--no-verify)")
    return _result(name, problem, settings, status, message, median_ms=median, min_ms=min(times),
                   max_ms=max(times), times_ms=tuple(times[:TIMES_KEPT]), jit_ms=jit_ms, gflops=gflops,
                   gbps=gbps, verification=verification, note="; ".join(notes), engine=engine,
                   iterations=len(times), dumped=dumped)


def dump_tensors(directory: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> tuple[str, ...]:
    """Write every tensor as ``<MIOpen name>.npy`` (x.npy, w.npy, y.npy, dy.npy, ...).

    A buffer that is both read and written (a reduction's ``y`` with beta, batch norm's
    running averages) keeps its input as ``<name>_in.npy``, so neither overwrites the other."""
    import numpy as np

    from miotui.output_file import open_output
    os.makedirs(directory, exist_ok=True)
    paths = []
    named = [(f"{k}_in" if k in outputs else k, v) for k, v in inputs.items()] + list(outputs.items())
    for name, arr in named:
        safe = "".join(ch for ch in name if ch.isalnum() or ch in "_-") or "tensor"
        path = os.path.join(directory, f"{safe}.npy")
        with open_output(path, binary=True) as fh:    # never through a link planted at x.npy
            np.save(fh, np.asarray(arr))
        paths.append(path)
    return tuple(paths)

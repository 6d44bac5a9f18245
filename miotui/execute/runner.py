"""Running one layer: guard, time, verify, cache; and MIOpenDriver in a child process.

:func:`run_layer` is what the app's worker and ``miotui run`` call.  It never raises
for a problem with the layer or the backend: every failure becomes a
:class:`~miotui.execute.backends.RunResult` whose ``status`` and ``message`` say what
happened (a traceback in a TUI panel helps nobody).  Only ``KeyboardInterrupt``
passes through, after any child process has been killed.

In-process runs (numpy, numba, torch): the memory guard first (nothing allocated
yet), then the seeded inputs, ``warmup`` untimed calls (numba compiles before them,
timed apart), ``iters`` timed calls (median and min reported), then the float64
reference on the same inputs and :func:`miotui.execute.verify.compare`.

MIOpenDriver (:func:`launch_driver`): argv built from the validated problem
(:func:`miotui.driver.to_driver_argv`) plus ``-V 1 -t 1 -i N``, an optional launcher
prefix, never a shell; its own session/process group so that a timeout or a cancel
kills the driver *and* anything it started (SIGTERM, then SIGKILL); every output line
handed to ``on_line`` as it arrives; the verdict read from the output
(:func:`miotui.logs.driver_output.parse_driver_output`), not from the exit status.
"""

from __future__ import annotations

import collections
import math
import os
import queue
import shlex
import signal
import statistics
import subprocess
import threading
import time
from dataclasses import replace
from typing import Any, Callable, Optional

from miotui.execute.backends import (BACKENDS, TIMES_KEPT, Backend, NumbaBackend, RunResult, RunSettings, find_driver,
                                     get_backend, resolve_auto)
from miotui.execute.guard import check_memory, validate, with_batch
from miotui.problems import BatchNormProblem, Problem, ProblemError

#: Results kept in the in-process cache.
CACHE_SIZE = 128
#: Seconds between SIGTERM and SIGKILL when stopping MIOpenDriver's process group.
KILL_GRACE_S = 2.0
#: Output kept from one driver run (the rest is streamed to on_line but not stored).
MAX_DRIVER_LINES = 20_000
MAX_DRIVER_LINE_CHARS = 4_000

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


def _result(backend: str, problem: Problem, settings: RunSettings, status: str, message: str,
            **kw: Any) -> RunResult:
    return RunResult(backend=backend, problem=problem, settings=settings, status=status, message=message, **kw)


def _rates(problem: Problem, ms: Optional[float]) -> tuple[Optional[float], Optional[float]]:
    if ms is None or not ms > 0:
        return None, None
    s = ms / 1e3
    return problem.flops / s / 1e9, problem.bytes_moved / s / 1e9


def _emit(on_progress: Optional[Callable[[str], None]], text: str) -> None:
    if on_progress is not None:
        try:
            on_progress(text)
        except Exception:   # a display callback must not break the run
            pass


# ============================================================================= run_layer

def _apply_batch(problem: Problem, settings: RunSettings) -> tuple[Problem, str]:
    """The layer with ``settings.batch`` images, and the note that says so (ProblemError
    for a batch that is not a positive integer)."""
    if settings.batch is None or settings.batch == problem.n:
        return problem, ""
    original = problem.n
    return with_batch(problem, settings.batch), \
        f"batch overridden: N={settings.batch} (the log's layer has N={original})"


def run_layer(problem: Problem, settings: RunSettings, cancel: Optional[threading.Event] = None,
              on_progress: Optional[Callable[[str], None]] = None, *, use_cache: bool = True) -> RunResult:
    """Run one layer on ``settings.backend`` and verify it; never raises (except
    KeyboardInterrupt).  ``on_progress(text)`` gets short progress messages (and, for
    MIOpenDriver, each output line).  ``backend="auto"`` picks numba or numpy and says
    which in the result's note.  Results are cached per (layer, backend, settings)."""
    start = time.monotonic()
    why = validate(problem)
    if why:
        return _result(settings.backend, problem, settings, "error", why)  # type: ignore[arg-type]
    notes: list[str] = []
    try:
        problem, batch_note = _apply_batch(problem, settings)
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
    if use_cache and settings.dump_dir is None:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
        if hit is not None:
            _emit(on_progress, "cached result")
            return replace(hit, cached=True)

    try:
        if name == "miopen-driver":
            res = launch_driver(problem, settings, on_progress or (lambda _l: None),
                                cancel if cancel is not None else threading.Event())
        else:
            res = _run_in_process(get_backend(name), problem, settings, cancel, on_progress)
    except KeyboardInterrupt:
        raise
    except MemoryError:
        res = _result(name, problem, settings, "error",
                      "ran out of memory (the guard's estimate was too low); try a smaller --batch")
    except Exception as e:  # every backend failure is a result, never a traceback
        res = _result(name, problem, settings, "error", f"{type(e).__name__}: {e}")
    if notes:
        res = replace(res, note="; ".join(n for n in notes + [res.note] if n))
    res = replace(res, elapsed_s=time.monotonic() - start)
    if use_cache and settings.dump_dir is None and res.status in ("ok", "failed"):
        with _cache_lock:
            _cache[key] = res
            _cache.move_to_end(key)
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return res


def _run_in_process(backend: Backend, problem: Problem, settings: RunSettings,
                    cancel: Optional[threading.Event],
                    on_progress: Optional[Callable[[str], None]]) -> RunResult:
    name = backend.name
    why = backend.unavailable()
    if why:
        return _result(name, problem, settings, "error", f"{name} backend unavailable: {why}")
    why = backend.applies(problem)
    if why:
        return _result(name, problem, settings, "error", f"{name} backend cannot run this layer: {why}")
    device = getattr(backend, "device", "cpu") if name == "torch" else "cpu"
    check = check_memory(problem, name, verify=settings.verify, device=device)
    if not check.ok:
        return _result(name, problem, settings, "refused", check.message)

    from miotui.execute.reference import Cancelled, ReferenceUnsupported, make_inputs, run_reference

    stop = _Deadline(cancel, settings.timeout_s)
    notes: list[str] = []
    try:
        engine = backend.describe(problem)
        if isinstance(backend, NumbaBackend) and not backend.kernels_apply(problem):
            notes.append("numba's direct kernels do not apply to this layer; the numpy path ran")
        _emit(on_progress, f"{name}: making inputs (seed {settings.seed})")
        inputs = make_inputs(problem, settings.seed)
        jit_ms: Optional[float] = None
        if backend.jit and not (isinstance(backend, NumbaBackend) and not backend.kernels_apply(problem)):
            _emit(on_progress, f"{name}: compiling")
            jit_ms = backend.compile(problem) * 1e3
        prepared = backend.prepare(problem, inputs)
        raw = None
        for i in range(max(0, settings.warmup)):
            _check(stop)
            _emit(on_progress, f"{name}: warm-up {i + 1}/{settings.warmup}")
            raw = backend.run(problem, prepared, stop)
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
            _emit(on_progress, f"{name}: float64 reference")
            from miotui.execute.verify import compare
            ref = run_reference(problem, inputs, precision="fp64", cancel=stop)
            _emit(on_progress, f"{name}: comparing")
            verification = compare(problem, ref, outputs)
            del ref
        dumped: tuple[str, ...] = ()
        if settings.dump_dir:
            dumped = dump_tensors(settings.dump_dir, inputs, outputs)
    except (Cancelled, _Stopped):
        if stop.cancelled:
            return _result(name, problem, settings, "cancelled", "cancelled")
        return _result(name, problem, settings, "error",
                       f"timed out after {settings.timeout_s:g} s (--timeout)")
    except ReferenceUnsupported as e:
        return _result(name, problem, settings, "error", f"{name} cannot run this layer: {e}")
    except NotImplementedError as e:
        return _result(name, problem, settings, "error", f"{name} cannot run this layer: {e or 'not implemented'}")
    except (RuntimeError, ValueError, TypeError) as e:
        return _result(name, problem, settings, "error", f"{name} failed: {e}")
    median = statistics.median(times)
    low, high = min(times), max(times)
    if jit_ms is not None:
        notes.append(f"compile {jit_ms:.0f} ms, not counted in the times" if jit_ms >= 1 else
                     "kernels already compiled (cached)")
    gflops, gbps = _rates(problem, median)
    status, message = "ok", f"median {median:.3f} ms over {len(times)} iterations"
    timer = backend.timer()
    if timer:
        message += f" ({timer})"
    if verification is not None:
        if verification.ok:
            message += "; verified against the float64 reference"
        else:
            status = "failed"
            metric = getattr(verification, "metric", "rms_range")
            error = getattr(verification, "error", verification.rms_range)
            message = (f"verification FAILED: {metric} {error:.3g} > tolerance "
                       f"{verification.tolerance:.3g} ({verification.how})")
    else:
        notes.append("not verified (--no-verify)")
    return _result(name, problem, settings, status, message, median_ms=median, min_ms=low, max_ms=high,
                   times_ms=tuple(times[:TIMES_KEPT]), jit_ms=jit_ms, gflops=gflops, gbps=gbps,
                   verification=verification, note="; ".join(notes), engine=engine, iterations=len(times),
                   dumped=dumped)


class _Stopped(Exception):
    pass


def _check(stop: _Deadline) -> None:
    if stop.is_set():
        raise _Stopped()


def dump_tensors(directory: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> tuple[str, ...]:
    """Write every tensor as ``<MIOpen name>.npy`` (x.npy, w.npy, y.npy, dy.npy, ...)."""
    import numpy as np
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name, arr in list(inputs.items()) + list(outputs.items()):
        safe = "".join(ch for ch in name if ch.isalnum() or ch in "_-") or "tensor"
        path = os.path.join(directory, f"{safe}.npy")
        np.save(path, np.asarray(arr))
        paths.append(path)
    return tuple(paths)


# ============================================================================= MIOpenDriver

def driver_argv(problem: Problem, settings: RunSettings, driver: str) -> list[str]:
    """The full argv: launcher prefix, driver, its arguments, ``-V 1 -t 1 -i N``.

    Every token comes from :func:`miotui.driver.to_driver_argv` (validated numbers and
    whitelisted names), the user's own ``--driver``/``--launcher`` and our flags.  No
    shell runs it, except that ssh hands its remote command to the remote user's shell:
    for an ``ssh`` launcher each remote token is shell-quoted, so the remote shell sees
    exactly these tokens.
    """
    from miotui.driver import to_driver_argv
    cmd = [driver] + to_driver_argv(problem) + ["-V", "1", "-t", "1", "-i", str(max(1, settings.iters))]
    launcher = list(settings.launcher)
    if launcher and os.path.basename(launcher[0]) == "ssh":
        cmd = [shlex.quote(tok) for tok in cmd]
    return launcher + cmd


def process_group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs (zombies do not count: they
    hold no resources and an init that does not reap would keep them forever)."""
    proc = "/proc"
    if os.path.isdir(proc):
        for entry in os.listdir(proc):
            if not entry.isdigit():
                continue
            try:
                with open(os.path.join(proc, entry, "stat"), "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            tail = data[data.rfind(b")") + 2:].split()
            if len(tail) >= 3 and int(tail[2]) == pgid and tail[0] not in (b"Z", b"X"):
                return True
        return False
    try:  # pragma: no cover - non-Linux
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:  # pragma: no cover
        return False
    except PermissionError:  # pragma: no cover
        return True


def kill_process_group(proc: "subprocess.Popen[bytes]", grace_s: float = KILL_GRACE_S) -> str:
    """SIGTERM the child's whole process group, SIGKILL what is left after ``grace_s``;
    returns what was done (for the result's message)."""
    pgid = proc.pid   # start_new_session: the child leads its own group
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    end = time.monotonic() + grace_s
    while time.monotonic() < end:
        if proc.poll() is not None and not process_group_alive(pgid):
            return "stopped with SIGTERM"
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
        return "SIGKILL sent; the process did not exit"
    end = time.monotonic() + 2.0
    while process_group_alive(pgid) and time.monotonic() < end:
        time.sleep(0.02)
    return "killed with SIGKILL"


def _reader(stream: Any, q: "queue.Queue[Optional[str]]") -> None:
    try:
        for raw in iter(stream.readline, b""):
            q.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
    except (OSError, ValueError):
        pass
    finally:
        q.put(None)


def _result_direction(problem: Problem) -> str:
    if isinstance(problem, BatchNormProblem):
        return "bwd" if problem.direction == "bwd" else "fwd"
    return problem.direction


def launch_driver(problem: Problem, settings: RunSettings, on_line: Callable[[str], None],
                  cancel: threading.Event) -> RunResult:
    """Run MIOpenDriver for one layer, stream its output to ``on_line``, parse its result.

    Stops on ``cancel`` or after ``settings.timeout_s``, killing the driver's whole process
    group.  Never raises except KeyboardInterrupt (after killing the group).  With a
    launcher, the group is the launcher's: killing a local ``ssh`` closes the connection
    (the remote driver gets SIGHUP only if ssh allocated a terminal); ``srun`` forwards
    the signal to its job step.  ``settings.batch`` applies here too.
    """
    name = "miopen-driver"
    start = time.monotonic()
    try:
        problem, batch_note = _apply_batch(problem, settings)
    except ProblemError as e:
        return _result(name, problem, settings, "error", f"--batch: {e}")
    result = _launch(problem, settings, on_line, cancel, start)
    extra = [batch_note]
    if settings.dump_dir:
        extra.append("MIOpenDriver makes its own inputs: nothing dumped")
    notes = [n for n in extra + [result.note] if n]
    if notes:
        result = replace(result, note="; ".join(notes))
    return result


def _launch(problem: Problem, settings: RunSettings, on_line: Callable[[str], None],
            cancel: threading.Event, start: float) -> RunResult:
    name = "miopen-driver"
    from miotui.driver import DriverCommandError
    try:
        driver, how = find_driver(settings)
        if driver is None:
            return _result(name, problem, settings, "error", how)
        argv = driver_argv(problem, settings, driver)
    except DriverCommandError as e:
        return _result(name, problem, settings, "error", f"MIOpenDriver cannot run this layer: {e}")
    engine = f"MIOpenDriver {driver}" + (f" via {' '.join(settings.launcher)}" if settings.launcher else "")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
    except FileNotFoundError:
        what = argv[0]
        return _result(name, problem, settings, "error",
                       f"cannot start {what}: not found" + ("" if settings.launcher else
                                                             f" (MIOpenDriver from {how})"),
                       argv=tuple(argv), engine=engine)
    except OSError as e:
        return _result(name, problem, settings, "error", f"cannot start {argv[0]}: {e.strerror or e}",
                       argv=tuple(argv), engine=engine)

    q: "queue.Queue[Optional[str]]" = queue.Queue()
    reader = threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True, name="miopendriver-reader")
    reader.start()
    stop = _Deadline(cancel, settings.timeout_s)
    lines: list[str] = []
    dropped = 0
    stopped = ""
    try:
        eof = False
        while not eof:
            if stop.is_set():
                stopped = kill_process_group(proc)
                break
            try:
                line = q.get(timeout=0.05)
            except queue.Empty:
                continue
            if line is None:
                eof = True
                break
            if len(lines) < MAX_DRIVER_LINES:
                lines.append(line[:MAX_DRIVER_LINE_CHARS])
            else:
                dropped += 1
            _emit(on_line, line)
        if not stopped:
            # output closed: the driver is exiting; still bounded by the deadline
            while proc.poll() is None:
                if stop.is_set():
                    stopped = kill_process_group(proc)
                    break
                time.sleep(0.02)
    except BaseException:
        kill_process_group(proc)
        raise
    finally:
        if proc.poll() is None and not stopped:
            kill_process_group(proc)
        reader.join(timeout=1.0)
        if proc.stdout is not None:
            try:
                proc.stdout.close()
            except OSError:  # pragma: no cover
                pass
    # drain what the reader queued before it ended
    while True:
        try:
            line = q.get_nowait()
        except queue.Empty:
            break
        if line is None:
            continue
        if len(lines) < MAX_DRIVER_LINES:
            lines.append(line[:MAX_DRIVER_LINE_CHARS])
        _emit(on_line, line)
    text = "\n".join(lines) + ("\n" if lines else "")
    if dropped:
        text += f"[miotui: {dropped} further lines not kept]\n"
    rc = proc.returncode
    common = dict(driver_output=text, argv=tuple(argv), engine=engine, elapsed_s=time.monotonic() - start)
    if stopped:
        if stop.cancelled:
            return _result(name, problem, settings, "cancelled",
                           f"cancelled; MIOpenDriver's process group {stopped}", **common)
        return _result(name, problem, settings, "error",
                       f"timed out after {settings.timeout_s:g} s (--timeout); MIOpenDriver's process group "
                       f"{stopped}", **common)
    return _driver_result(problem, settings, text, rc, how, common)


def _tail(text: str, n: int = 5) -> str:
    last = [ln for ln in text.strip().splitlines() if ln.strip()][-n:]
    return " | ".join(last)


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def _driver_result(problem: Problem, settings: RunSettings, text: str, rc: Optional[int], how: str,
                   common: dict) -> RunResult:
    """Turn the driver's output into a result: the verdict from the text, not ``rc``."""
    from miotui.driver.output import parse_driver_output
    name = "miopen-driver"
    out = parse_driver_output(text)
    want = _result_direction(problem)
    r = out.result(want)
    plain = [x for x in out.results if not x.direction.endswith("_bias")]
    if r is None and len(plain) == 1:
        r = plain[0]
    details: list[tuple[str, str]] = [("driver found via", how)]
    if out.version:
        details.append(("MIOpen version", out.version))
    if out.prng_seed is not None:
        details.append(("PRNG seed", str(out.prng_seed)))
    notes: list[str] = []
    verdict = r.verdict if r is not None else out.verdict
    median = min_ms = None
    verification = None
    if r is not None:
        if r.algorithm is not None:
            details.append(("algorithm", str(r.algorithm)))
        if r.solver or r.solution_id is not None:
            details.append(("solver", f"{r.solution_id if r.solution_id is not None else '?'}/{r.solver or '?'}"))
        if r.kernel_ms is not None:
            median = r.kernel_ms
            details.append(("kernel time", f"{r.kernel_ms:g} ms ({r.kernel_ms_kind or 'as printed'})"))
        min_ms = r.kernel_min_ms
        if r.reference:
            details.append(("driver reference", r.reference))
        for check_name, check_verdict, err in r.checks:
            details.append((f"check {check_name}", check_verdict + (f" ({err:g})" if err is not None else "")))
        if r.verdict is not None:
            from miotui.execute.verify import Verification
            nan = float("nan")
            where = f"{r.reference} reference" if r.reference else "its reference"
            err = r.error if r.error is not None else nan
            verification = Verification(max_abs=nan, max_rel=nan, rms_range=err,
                                        tolerance=r.tolerance if r.tolerance is not None else nan,
                                        ok=r.verdict == "ok",
                                        how=f"MIOpenDriver's own check against {where} (its printed error"
                                            f"{' and tolerance' if r.tolerance is not None else ''})",
                                        metric="driver", error=err)
    if verdict is not None:
        details.append(("driver verdict", verdict))
    gflops, gbps = _rates(problem, median)
    kw = dict(common, median_ms=median, min_ms=min_ms, gflops=gflops, gbps=gbps, verification=verification,
              details=tuple(details), iterations=max(1, settings.iters))
    if rc is not None and rc < 0:
        notes.append(f"MIOpenDriver died of {_signal_name(rc)}")
    elif rc:
        notes.append(f"MIOpenDriver exit status {rc}")
    run_error = (r.run_error if r is not None else None) or (out.errors[0] if out.errors else None)
    if verdict == "failed":
        if r is not None and r.error is not None:
            tol = f" > {r.tolerance:g}" if r.tolerance is not None else ""
            msg = f"MIOpenDriver verification FAILED: {r.error:g}{tol}"
        elif run_error:
            return _result(name, problem, settings, "error", f"MIOpenDriver failed: {run_error}",
                           note="; ".join(notes), **kw)
        else:
            msg = "MIOpenDriver verification FAILED"
        return _result(name, problem, settings, "failed", msg, note="; ".join(notes), **kw)
    if verdict == "ok":
        msg = "MIOpenDriver verified OK"
        if r is not None and r.error is not None:
            msg += f" ({r.error:g}" + (f" < {r.tolerance:g})" if r.tolerance is not None else ")")
        return _result(name, problem, settings, "ok", msg, note="; ".join(notes), **kw)
    if run_error:
        return _result(name, problem, settings, "error", f"MIOpenDriver failed: {run_error}",
                       note="; ".join(notes), **kw)
    if rc is not None and rc < 0:
        return _result(name, problem, settings, "error",
                       f"MIOpenDriver died of {_signal_name(rc)} before a result; last output: {_tail(text)}",
                       **kw)
    if median is not None:
        notes.append("MIOpenDriver printed no verification verdict")
        return _result(name, problem, settings, "ok", f"MIOpenDriver ran: {median:g} ms",
                       note="; ".join(notes), **kw)
    return _result(name, problem, settings, "error",
                   f"no result in MIOpenDriver's output (exit status {rc}); last output: {_tail(text) or '(none)'}",
                   **kw)

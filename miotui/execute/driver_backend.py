"""The miopen-driver backend: find MIOpenDriver, build its argv, run it, read its verdict.

:class:`DriverBackend` is what the registry, the planning and the guard ask (it is
available when MIOpenDriver is found; it holds no memory of this process);
:func:`launch_driver` runs it.

The argv is built from the validated problem (:func:`miotui.driver.to_driver_argv`) plus
``-V 1 -t 1 -i N``, after an optional launcher prefix (``ssh gpu-node``, ``srun -p gpu``),
and never goes through a shell.  :func:`miotui.driver.process.run_driver` runs it in its
own session, streams its lines and stops it on a cancel or the timeout.  The verdict,
the algorithm and the times are read from the driver's output, not from its exit
status.  MIOpenDriver makes its own inputs and checks itself: nothing here verifies.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Optional

from miotui.execute.guard import batch_override
from miotui.execute.protocol import Backend, MemoryEstimate, RunResult, RunSettings, rates
from miotui.execute.verify import Verification
from miotui.problems import BatchNormProblem, Problem, ProblemError

if TYPE_CHECKING:  # pragma: no cover
    from miotui.driver.output import DirectionResult
    from miotui.driver.process import DriverRun

NAME = "miopen-driver"
#: Where ROCm installs the driver.
DEFAULT_DRIVER = "/opt/rocm/bin/MIOpenDriver"


def find_driver(settings: RunSettings) -> tuple[Optional[str], str]:
    """(path, how it was found) or (None, why not).

    Order: ``settings.driver_path`` (``--driver``), ``$MIOPEN_DRIVER``, ``MIOpenDriver`` on
    PATH, ``/opt/rocm/bin/MIOpenDriver``.  With a launcher the driver lives on the other
    machine, so the path cannot be checked here: the explicit one, or ROCm's default.
    """
    explicit = settings.driver_path or os.environ.get("MIOPEN_DRIVER") or None
    how = "--driver" if settings.driver_path else "$MIOPEN_DRIVER"
    if settings.launcher:
        if explicit:
            return explicit, f"{how} (on the launcher's machine)"
        return DEFAULT_DRIVER, "ROCm's default location (on the launcher's machine)"
    if explicit:
        path = os.path.expanduser(explicit)
        if os.path.isdir(path):
            return None, f"{how} names a directory, not MIOpenDriver: {path}"
        if not os.path.exists(path):
            found = shutil.which(path)
            if found:
                return found, f"{how} (on PATH)"
            return None, f"{how} names {path}, which does not exist"
        if not os.access(path, os.X_OK):
            return None, f"{how} names {path}, which is not executable"
        return path, how
    found = shutil.which("MIOpenDriver")
    if found:
        return found, "PATH"
    if os.access(DEFAULT_DRIVER, os.X_OK):
        return DEFAULT_DRIVER, "ROCm's default location"
    return None, ("MIOpenDriver not found: give --driver PATH, set $MIOPEN_DRIVER, put it on PATH, "
                  f"or install ROCm ({DEFAULT_DRIVER}); --launcher runs it on another machine")


class DriverBackend(Backend):
    """The real MIOpenDriver, in a child process (maybe on another machine, through a
    launcher): it makes its own inputs and checks its own output."""

    name = NAME
    label = "MIOpenDriver (the real binary)"

    @property
    def device(self) -> str:
        return "child process"

    def unavailable(self, settings: Optional[RunSettings] = None) -> Optional[str]:
        """Why MIOpenDriver cannot be found with ``settings`` (--driver, --launcher), or None."""
        path, why = find_driver(settings or RunSettings())
        return None if path else why

    def memory_estimate(self, problem: Problem, settings: RunSettings,
                        device: Optional[str] = None) -> MemoryEstimate:
        """Nothing in this process: the driver allocates its own buffers, on its GPU, maybe
        on another machine, and miotui cannot see that memory."""
        return MemoryEstimate(0, 0)


def driver_argv(problem: Problem, settings: RunSettings, driver: str) -> list[str]:
    """The full argv: launcher prefix, driver, its arguments, ``-V 1 -t 1 -i N``.

    Every token comes from :func:`miotui.driver.to_driver_argv` (validated numbers and
    whitelisted names), the user's own ``--driver``/``--launcher`` and our flags.  No
    shell runs it, except that ssh hands its remote command to the remote user's shell:
    for an ``ssh`` launcher each remote token is shell-quoted, so the remote shell sees
    exactly these tokens.
    """
    from miotui.driver import to_driver_argv  # here: the app imports this module at start-up
    cmd = [driver] + to_driver_argv(problem) + ["-V", "1", "-t", "1", "-i", str(max(1, settings.iters))]
    launcher = list(settings.launcher)
    if launcher and os.path.basename(launcher[0]) == "ssh":
        cmd = [shlex.quote(tok) for tok in cmd]
    return launcher + cmd


def _result(problem: Problem, settings: RunSettings, status: str, message: str, **kw: Any) -> RunResult:
    return RunResult(backend=NAME, problem=problem, settings=settings, status=status, message=message, **kw)


def launch_driver(problem: Problem, settings: RunSettings, on_line: Callable[[str], None],
                  cancel: threading.Event) -> RunResult:
    """Run MIOpenDriver for one layer, stream its output to ``on_line``, parse its result.

    Stops on ``cancel`` or after ``settings.timeout_s``, killing the driver's whole process
    group, within a second whatever the driver (or a process it left behind) does.  Never
    raises except KeyboardInterrupt (after killing the group).  With a launcher, the group
    is the launcher's: killing a local ``ssh`` closes the connection (the remote driver
    gets SIGHUP only if ssh allocated a terminal); ``srun`` forwards the signal to its job
    step.  ``settings.batch`` applies here too.  A driver that cannot be found (none
    named) or a layer MIOpenDriver cannot express is ``n/a``.
    """
    start = time.monotonic()
    try:
        problem, batch_note = batch_override(problem, settings.batch)
    except ProblemError as e:
        return _result(problem, settings, "error", f"--batch: {e}")
    result = _launch(problem, settings, on_line, cancel)
    extra = [batch_note]
    if settings.dump_dir:
        extra.append("MIOpenDriver makes its own inputs: nothing dumped")
    notes = [n for n in extra + [result.note] if n]
    return replace(result, note="; ".join(notes), elapsed_s=time.monotonic() - start)


def _launch(problem: Problem, settings: RunSettings, on_line: Callable[[str], None],
            cancel: threading.Event) -> RunResult:
    from miotui.driver import DriverCommandError
    from miotui.driver.process import run_driver
    try:
        driver, how = find_driver(settings)
        if driver is None:
            named = bool(settings.driver_path or os.environ.get("MIOPEN_DRIVER"))
            return _result(problem, settings, "error" if named else "n/a", how)
        argv = driver_argv(problem, settings, driver)
    except DriverCommandError as e:
        return _result(problem, settings, "n/a", f"MIOpenDriver cannot run this layer: {e}")
    engine = f"MIOpenDriver {driver}" + (f" via {' '.join(settings.launcher)}" if settings.launcher else "")
    try:
        run = run_driver(argv, on_line, cancel, settings.timeout_s)
    except FileNotFoundError:
        where = "" if settings.launcher else f" (MIOpenDriver from {how})"
        return _result(problem, settings, "error", f"cannot start {argv[0]}: not found{where}",
                       argv=tuple(argv), engine=engine)
    except OSError as e:
        return _result(problem, settings, "error", f"cannot start {argv[0]}: {e.strerror or e}",
                       argv=tuple(argv), engine=engine)
    common: dict[str, Any] = dict(driver_output=run.text, argv=tuple(argv), engine=engine,
                                  note="; ".join(run.notes))
    if run.stopped:
        what = "cancelled" if run.stopped == "cancelled" else f"timed out after {settings.timeout_s:g} s (--timeout)"
        return _result(problem, settings, "cancelled" if run.stopped == "cancelled" else "error",
                       f"{what}; MIOpenDriver's process group {run.kill}", **common)
    return _driver_result(problem, settings, run, how, common)


def _result_direction(problem: Problem) -> str:
    if isinstance(problem, BatchNormProblem):
        return "bwd" if problem.direction == "bwd" else "fwd"
    return problem.direction


def _tail(text: str, n: int = 5) -> str:
    last = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("[miotui:")][-n:]
    return " | ".join(last)


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def _details(run: "DriverRun", r: "Optional[DirectionResult]", how: str) -> list[tuple[str, str]]:
    out = run.output
    details: list[tuple[str, str]] = [("driver found via", how)]
    if out.version:
        details.append(("MIOpen version", out.version))
    if out.prng_seed is not None:
        details.append(("PRNG seed", str(out.prng_seed)))
    if r is None:
        return details
    if r.algorithm is not None:
        details.append(("algorithm", str(r.algorithm)))
    if r.solver or r.solution_id is not None:
        details.append(("solver", f"{r.solution_id if r.solution_id is not None else '?'}/{r.solver or '?'}"))
    if r.kernel_ms is not None:
        details.append(("kernel time", f"{r.kernel_ms:g} ms ({r.kernel_ms_kind or 'as printed'})"))
        timing = f"MIOpenDriver's {r.kernel_ms_kind or 'printed'} kernel time"
        timing += f" and its minimum {r.kernel_min_ms:g} ms" if r.kernel_min_ms is not None else ""
        details.append(("timing", timing + "; it prints no maximum and no per-iteration times"))
    if r.reference:
        details.append(("driver reference", r.reference))
    for check_name, check_verdict, err in r.checks:
        details.append((f"check {check_name}", check_verdict + (f" ({err:g})" if err is not None else "")))
    return details


def _verification(r: "DirectionResult") -> Optional[Verification]:
    if r.verdict is None:
        return None
    nan = float("nan")
    where = f"{r.reference} reference" if r.reference else "its reference"
    err = r.error if r.error is not None else nan
    return Verification(max_abs=nan, max_rel=nan, rms_range=err,
                        tolerance=r.tolerance if r.tolerance is not None else nan, ok=r.verdict == "ok",
                        how=f"MIOpenDriver's own check against {where} (its printed error"
                            f"{' and tolerance' if r.tolerance is not None else ''})",
                        metric="driver", error=err,
                        reference=f"MIOpenDriver's {r.reference} reference" if r.reference
                        else "MIOpenDriver's own reference")


def _driver_result(problem: Problem, settings: RunSettings, run: "DriverRun", how: str,
                   common: dict[str, Any]) -> RunResult:
    """Turn the driver's output into a result: the verdict from the text, not the exit status."""
    out, rc, text = run.output, run.returncode, run.text
    r = out.result(_result_direction(problem))
    plain = [x for x in out.results if not x.direction.endswith("_bias")]
    if r is None and len(plain) == 1:
        r = plain[0]
    details = _details(run, r, how)
    verdict = r.verdict if r is not None else out.verdict
    if verdict is not None:
        details.append(("driver verdict", verdict))
    median = r.kernel_ms if r is not None else None
    gflops, gbps = rates(problem, median)
    run_note = common.pop("note", "")
    notes = [run_note] if run_note else []
    kw = dict(common, median_ms=median, min_ms=r.kernel_min_ms if r is not None else None, gflops=gflops,
              gbps=gbps, verification=_verification(r) if r is not None else None, details=tuple(details),
              iterations=max(1, settings.iters))
    if rc is not None and rc < 0:
        notes.append(f"MIOpenDriver died of {_signal_name(rc)}")
    elif rc:
        notes.append(f"MIOpenDriver exit status {rc}")
    run_error = (r.run_error if r is not None else None) or (out.errors[0] if out.errors else None)
    note = "; ".join(notes)
    if verdict == "failed":
        if r is not None and r.error is not None:
            tol = f" > {r.tolerance:g}" if r.tolerance is not None else ""
            return _result(problem, settings, "failed", f"MIOpenDriver verification FAILED: {r.error:g}{tol}",
                           note=note, **kw)
        if run_error:
            return _result(problem, settings, "error", f"MIOpenDriver failed: {run_error}", note=note, **kw)
        return _result(problem, settings, "failed", "MIOpenDriver verification FAILED", note=note, **kw)
    if verdict == "ok":
        msg = "MIOpenDriver verified OK"
        if r is not None and r.error is not None:
            msg += f" ({r.error:g}" + (f" < {r.tolerance:g})" if r.tolerance is not None else ")")
        return _result(problem, settings, "ok", msg, note=note, **kw)
    if run_error:
        return _result(problem, settings, "error", f"MIOpenDriver failed: {run_error}", note=note, **kw)
    if rc is not None and rc < 0:
        return _result(problem, settings, "error",
                       f"MIOpenDriver died of {_signal_name(rc)} before a result; last output: {_tail(text)}",
                       note=note, **kw)
    if median is not None:
        notes.append("MIOpenDriver printed no verification verdict")
        return _result(problem, settings, "ok", f"MIOpenDriver ran: {median:g} ms", note="; ".join(notes), **kw)
    return _result(problem, settings, "error",
                   f"no result in MIOpenDriver's output (exit status {rc}); last output: {_tail(text) or '(none)'}",
                   note=note, **kw)

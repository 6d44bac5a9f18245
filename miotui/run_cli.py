"""``miotui run``: run and verify one layer from the command line.

    miotui run "conv -n 64 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -F 1"
    miotui run "./bin/MIOpenDriver conv ... -F 0"           # every direction the command runs
    miotui run --log train.log --layer 3 --backend all      # layer 3: the third met in the log
    miotui run --backend torch -- conv -n 1 -c 3 -H 8 -W 8  # unquoted, after --

The layer comes from a MIOpenDriver command (as logged, pasted or typed; parsed by
:func:`miotui.driver.parse_driver_command`) or from a log: ``--layer K`` is the layer's
id, its arrival order in the log (1 = the first layer met), the number the app's ``#``
column shows.  With ``--backend all`` a backend that does not apply to the layer (or is
not installed) is listed as ``n/a`` with the reason and does not fail the run.  Exit
status: 0 every run ok (and verified), 1 a verification failed or a backend could not
run, 2 bad usage or a command that cannot be parsed.  Heavy modules are imported only
when a run starts.  Numbers follow :mod:`miotui.views.units` (the app's precision policy).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import threading
from typing import Any, Optional

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_run_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``run`` subcommand to an argparse subparsers object; returns its parser."""
    from miotui.execute.backends import BACKEND_CHOICES
    p = subparsers.add_parser(
        "run", help="run and verify one layer (numpy, numba, torch or MIOpenDriver)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run one layer on a backend, time it, and verify it against a float64 reference.",
        epilog=__doc__.split("\n\n")[1] if __doc__ else None)
    p.add_argument("command", nargs="*", metavar="COMMAND",
                   help="a MIOpenDriver command, quoted (or unquoted after --); "
                        "the executable and env assignments may be included")
    p.add_argument("--log", action="append", metavar="FILE",
                   help="take the layer from this log (repeatable: several files, one catalog)")
    p.add_argument("--layer", type=int, metavar="K",
                   help="with --log: the layer whose id is K, its arrival order in the log (1 = the first "
                        "layer met; the app's # column)")
    p.add_argument("--backend", default="auto", choices=BACKEND_CHOICES,
                   help="auto (numba where its kernels apply, else numpy), all (every backend, side by side), "
                        "or one backend (default: auto)")
    p.add_argument("--iters", type=int, default=10, metavar="N", help="timed iterations (default 10)")
    p.add_argument("--warmup", type=int, default=1, metavar="N", help="untimed warm-up calls (default 1)")
    p.add_argument("--batch", type=int, metavar="N", help="run the same layer with N images")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--no-verify", dest="verify", action="store_false",
                   help="skip the float64 reference (timing only)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--dump", metavar="DIR",
                   help="write inputs and outputs as .npy named by MIOpen tensor (x.npy w.npy y.npy ...)")
    p.add_argument("--driver", metavar="PATH",
                   help="MIOpenDriver to run (default: $MIOPEN_DRIVER, PATH, /opt/rocm/bin/MIOpenDriver)")
    p.add_argument("--launcher", metavar="CMD",
                   help='prefix for MIOpenDriver, split like a shell would, run without one: '
                        '"ssh gpu-node", "srun -p gpu"')
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="give up on a run after S seconds (default 600)")
    p.add_argument("--script", action="store_true",
                   help="print a standalone PyTorch script of the layer instead of running it (its shapes, "
                        "data type, layout and, from a cuDNN log, TF32 flag; timed with CUDA events; "
                        "runs on any CUDA or ROCm GPU and on a CPU)")
    p.set_defaults(run_main=run_main)
    return p


class UsageError(Exception):
    """Bad arguments or an unparseable command: exit status 2."""


def _log_layer(ns: argparse.Namespace) -> Any:
    """The layer ``--log FILE --layer K`` names (its ``LayerSnapshot``)."""
    if ns.layer is None:
        raise UsageError("--log needs --layer K (see `miotui decode FILE` for the numbers)")
    if ns.layer < 1:
        raise UsageError(f"--layer counts from 1, got {ns.layer}")
    from miotui.decoding.whole import decode_paths
    try:
        catalog = decode_paths(list(ns.log))
    except OSError as e:
        raise UsageError(f"cannot read {e.filename or ns.log[0]}: {e.strerror or e}") from e
    layers = {layer.id: layer for layer in catalog.layers()}
    if not layers:
        raise UsageError(f"no layers decoded from {', '.join(ns.log)}")
    if ns.layer not in layers:
        raise UsageError(f"--layer {ns.layer}: the log has {len(layers)} unique layer(s), ids 1 to {len(layers)}")
    return layers[ns.layer]


def _script(ns: argparse.Namespace, problems: list[Any]) -> int:
    """``--script``: the PyTorch script of each layer, on stdout."""
    from types import SimpleNamespace

    from miotui.repro_torch import has_torch_script, torch_script
    layers = [_log_layer(ns)] if ns.log else [SimpleNamespace(id=i, problem=p, annotations=())
                                              for i, p in enumerate(problems, 1)]
    for layer in layers:
        sys.stdout.write(torch_script(layer, "miotui run --script"))
    return EXIT_OK if all(has_torch_script(layer.problem) for layer in layers) else EXIT_USAGE


def _problems_from_args(ns: argparse.Namespace) -> tuple[list[Any], list[str], str]:
    """(problems, warnings, where they came from)."""
    from miotui.driver import DriverCommandError, parse_driver_command
    command = list(ns.command or [])
    if command and ns.log:
        raise UsageError("give a MIOpenDriver command or --log FILE --layer K, not both")
    if ns.log:
        layer = _log_layer(ns)
        where = f"layer {ns.layer} of {', '.join(ns.log)} ({layer.executions} executions, line {layer.first_line})"
        return [layer.problem], list(layer.warnings), where
    if ns.layer is not None:
        raise UsageError("--layer needs --log FILE")
    if not command:
        raise UsageError('give a MIOpenDriver command ("conv -n 1 -c 3 ...") or --log FILE --layer K')
    text = command[0] if len(command) == 1 else shlex.join(command)
    try:
        parsed = parse_driver_command(text)
    except DriverCommandError as e:
        raise UsageError(f"cannot parse the command: {e}") from e
    except ValueError as e:   # ProblemError: values that describe no real layer
        raise UsageError(f"invalid layer: {e}") from e
    if not parsed.problems:
        raise UsageError("the command runs no layer miotui models")
    return list(parsed.problems), list(parsed.warnings), "command"


def _settings(ns: argparse.Namespace, backend: str, dump_dir: Optional[str]) -> Any:
    from miotui.execute.backends import RunSettings
    try:
        launcher = tuple(shlex.split(ns.launcher)) if ns.launcher else ()
    except ValueError as e:
        raise UsageError(f"--launcher: {e}") from e
    if ns.iters < 1:
        raise UsageError("--iters must be at least 1")
    if ns.warmup < 0:
        raise UsageError("--warmup cannot be negative")
    if ns.batch is not None and ns.batch < 1:
        raise UsageError("--batch must be at least 1")
    if not ns.timeout > 0:
        raise UsageError("--timeout must be positive")
    return RunSettings(backend=backend, iters=ns.iters, warmup=ns.warmup, batch=ns.batch, seed=ns.seed,
                       timeout_s=ns.timeout, driver_path=ns.driver, launcher=launcher, verify=ns.verify,
                       dump_dir=dump_dir)


def run_main(ns: argparse.Namespace) -> int:
    """Run the layer(s) ``ns`` describes; print a table or JSON; return the exit status."""
    from miotui.safe_text import visible
    try:
        problems, warnings, where = _problems_from_args(ns)
        _settings(ns, ns.backend, None)  # validate the numeric options before any work
    except UsageError as e:   # it may quote the command or a log's file name: untrusted text
        print(f"miotui run: {visible(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    if ns.script:
        return _script(ns, problems)
    from miotui.execute.planning import backend_names, plan_request
    from miotui.execute.runner import run_layer

    names = backend_names((ns.backend,))
    cancel = threading.Event()
    blocks: list[dict[str, Any]] = []
    exit_code = EXIT_OK
    stream_driver = not ns.json and len(names) == 1 and names[0] == "miopen-driver"
    try:
        for problem in problems:
            rows: list[tuple[str, Any, str]] = []   # (backend, result or None, why it does not apply)
            # as the app plans: side by side each backend is asked first; one named runs and says why not
            for name, skip in plan_request(problem, (ns.backend,), _settings(ns, ns.backend, None)):
                if skip:
                    rows.append((name, None, skip))
                    continue
                dump_dir = None
                if ns.dump:
                    dump_dir = ns.dump
                    if len(problems) > 1:
                        dump_dir = os.path.join(dump_dir, problem.direction)
                    if len(names) > 1:
                        dump_dir = os.path.join(dump_dir, name)
                settings = _settings(ns, name, dump_dir)
                # the driver's own lines, as they come: what it prints is untrusted text too
                on_line = (lambda line: print(f"  | {visible(line)}", file=sys.stderr)) if stream_driver else None
                result = run_layer(problem, settings, cancel, on_line)
                rows.append((name, result, ""))
                if result.status != "ok":
                    exit_code = EXIT_FAILED
            blocks.append({"problem": _as_run(problem, ns.batch), "rows": rows})
    except KeyboardInterrupt:
        cancel.set()
        print("miotui run: interrupted", file=sys.stderr)
        return 130
    except UsageError as e:
        print(f"miotui run: {visible(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    if ns.json:
        print(json.dumps(_json(blocks, warnings, where), indent=1))
    else:
        _print_tables(blocks, warnings, where)
    return exit_code


def _as_run(problem: Any, batch: Optional[int]) -> Any:
    """The layer as it ran: with ``--batch`` the JSON and the title describe N images, so
    the printed command reproduces what was timed (the result's note names the log's N)."""
    if batch is None:
        return problem
    from miotui.execute.guard import with_batch
    from miotui.problems import ProblemError
    try:
        return with_batch(problem, batch)
    except (ProblemError, ValueError):
        return problem


def _json(blocks: list[dict[str, Any]], warnings: list[str], where: str) -> dict[str, Any]:
    from miotui.driver import DriverCommandError, to_driver_command
    layers = []
    for block in blocks:
        p = block["problem"]
        try:
            command = to_driver_command(p)
        except DriverCommandError:
            command = ""
        results = []
        for name, res, skip in block["rows"]:
            if res is None:
                results.append({"backend": name, "status": "n/a", "message": skip})
            else:
                results.append(res.to_dict())
        layers.append({"op": p.op, "direction": p.direction, "key": p.key, "problem": p.to_dict(),
                       "driver_command": command, "results": results})
    return {"source": where, "warnings": warnings, "layers": layers}


def _print_tables(blocks: list[dict[str, Any]], warnings: list[str], where: str) -> None:
    """One plain-text table per layer (a row per backend), then each backend's message."""
    from miotui.driver import DriverCommandError, to_driver_command
    from miotui.safe_text import visible
    from miotui.text_table import aligned
    from miotui.views import units
    from miotui.views.run_summary import noise_warning, verdict_of
    for w in warnings:
        print("warning: " + visible(w))
    for block in blocks:
        p = block["problem"]
        try:
            command = to_driver_command(p)
        except DriverCommandError:
            command = "(no MIOpenDriver command)"
        print()
        print(visible(f"{p.op} {p.direction} {p.dtype}  {command}"))
        rate = units.rate_unit(p)
        metrics = {getattr(r.verification, "metric", "rms_range") for _, r, _ in block["rows"]
                   if r is not None and r.verification is not None}
        error = f"error ({metrics.pop()})" if len(metrics) == 1 else "error"
        columns = [("backend", False), ("verdict", False), ("median", True), ("min", True), ("max", True),
                   ("spread", True), ("JIT", True), (rate, True), ("max abs", True), ("max rel", True),
                   (error, True), ("tolerance", True), ("engine", False)]
        rows: list[list[str]] = []
        details: list[str] = []
        for name, res, skip in block["rows"]:
            if res is None or res.status == "n/a":
                why = skip if res is None else res.message
                rows.append([visible(name), "n/a", *["-"] * 11])
                details.append(f"{name}: n/a: {why}")
                continue
            v = res.verification
            spread = units.ratio(res.spread) if res.spread is not None else "-"
            rows.append([visible(name), verdict_of(res) + (" (noisy)" if res.noisy else ""),
                         units.time_ms(res.median_ms), units.time_ms(res.min_ms), units.time_ms(res.max_ms),
                         spread, units.time_ms(res.jit_ms), units.throughput(res.problem, res.gflops, res.gbps),
                         units.sci(v.max_abs if v else None), units.sci(v.max_rel if v else None),
                         units.sci(getattr(v, "error", None) if v else None), units.sci(v.tolerance if v else None),
                         visible(res.engine)])
            line = f"{name}: {res.message}"
            if res.note:
                line += f" [{res.note}]"
            for k, val in res.details:
                if k in ("solver", "algorithm", "driver verdict", "MIOpen version"):
                    line += f"; {k} {val}"
            if res.dumped:
                line += f"; wrote {len(res.dumped)} files to {os.path.dirname(res.dumped[0])}"
            details.append(line)
            warning = noise_warning(res)
            if warning:
                details.append(f"{name}: {warning}")
        for line in aligned(columns, rows):
            print(line)
        for d in details:
            print("  " + visible(d))
        print("  source: " + visible(where))

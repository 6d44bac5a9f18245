"""Command-line entry: the app (``miotui [--follow] FILE|-``, ``miotui --demo``), recording a
job (``miotui record``) and the headless subcommands (``miotui decode``, ``miotui run``,
``miotui diff``).

Only argparse is imported at start-up: ``miotui --help`` must answer at once, so every
subcommand imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

EPILOG = """timed by a profiler trace:
  miotui [--follow] train.log --trace trace.json   the log's layers with the trace's measured GPU times
recording a job:
  miotui record [--level layers|time|first-iteration|full] [-o FILE] -- CMD ARGS...
                                 start CMD with MIOpen's logging on, record and watch it live
headless subcommands:
  miotui decode PATH... [--format table|json|csv|driver]   decode logs into unique layers
  miotui run "conv -n 64 -c 3 -H 224 ..." [--backend ...]  run and verify one layer
  miotui run --log FILE --layer K                          run the K-th layer of a log
  miotui diff OLD NEW [--format table|json|csv] [--ignore-batch] [--pack DIR]
                                                           compare two runs layer by layer
(see `miotui record --help`, `miotui decode --help`, `miotui run --help`, `miotui diff --help`)"""


def _app_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="miotui", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Live explorer for MIOpen logs: every convolution, pooling, batch-norm and "
                    "activation call as a row; inspect, reproduce with MIOpenDriver, run and verify.")
    p.add_argument("paths", nargs="*", metavar="FILE",
                   help="log file(s) or glob patterns; '-' reads stdin (e.g. python train.py 2>&1 | miotui -)")
    p.add_argument("-f", "--follow", action="store_true", help="keep reading as the log grows (like tail -F)")
    p.add_argument("--trace", action="append", default=[], metavar="TRACE",
                   help="a PyTorch profiler trace of the same run (torch.profiler, record_shapes=True): the log's "
                        "layers get its measured GPU times, also those logged later (a trace among FILE works too)")
    p.add_argument("--demo", action="store_true", help="replay a bundled ResNet-50 training log live")
    p.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"),
                   help="compare two runs layer by layer (with --follow, NEW is followed as it grows)")
    p.add_argument("--ignore-batch", action="store_true", help="--compare: match layers whose batch differs")
    p.add_argument("--pid", type=int, help="the training job's process id (default: found from the log's writer)")
    p.add_argument("--driver", metavar="PATH",
                   help="MIOpenDriver for d and R (default: $MIOPEN_DRIVER, PATH, /opt/rocm/bin/MIOpenDriver)")
    p.add_argument("--launcher", metavar="CMD",
                   help='prefix for MIOpenDriver, split like a shell would, run without one: '
                        '"ssh gpu-node", "srun -p gpu"')
    p.add_argument("--check-config", action="store_true",
                   help="check the keymap ($MIOTUI_KEYMAP or ~/.config/miotui/keymap.toml) and exit: "
                        "unknown binding ids, keys bound twice, invalid TOML (exit status 1 when any)")
    p.add_argument("--version", action="version", version="miotui " + _version())
    return p


def _version() -> str:
    from miotui import __version__
    return __version__


def run_cli_main(argv: Sequence[str]) -> int:
    from miotui.run_cli import add_run_parser, run_main
    top = argparse.ArgumentParser(prog="miotui")
    sub = top.add_subparsers(dest="command")
    add_run_parser(sub)
    ns = top.parse_args(["run", *argv])
    return run_main(ns)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "decode":
        from miotui.decode_cli import decode_main
        return decode_main(args[1:])
    if args and args[0] == "run":
        return run_cli_main(args[1:])
    if args and args[0] == "diff":
        from miotui.diff_cli import diff_main
        return diff_main(args[1:])
    if args and args[0] == "record":
        from miotui.record_cli import record_main
        return record_main(args[1:])
    ns = _app_parser().parse_args(args)
    if ns.compare:
        from miotui.compare_app import launch_compare
        return launch_compare(ns.compare[0], ns.compare[1], follow=ns.follow, ignore_batch=ns.ignore_batch)
    if not ns.paths and ns.trace:      # a trace alone: its own layers
        ns.paths, ns.trace = ns.trace, []
    if not ns.paths and not ns.demo and not ns.check_config:
        if sys.stdin is None or sys.stdin.closed:
            print("miotui: no log given and standard input is closed", file=sys.stderr)
            return 2
        if sys.stdin.isatty():
            _app_parser().print_help()
            return 2
        ns.paths = ["-"]
    from miotui import launch
    if ns.check_config:
        return launch.check_config()
    if "-" in ns.paths and (sys.stdin is None or sys.stdin.closed):
        print("miotui: cannot read '-': standard input is closed", file=sys.stderr)
        return 2
    return launch.launch(ns.paths, follow=ns.follow, demo=ns.demo, pid=ns.pid, driver=ns.driver,
                         launcher=ns.launcher, traces=ns.trace)

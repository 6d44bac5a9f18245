"""Command-line entry: the app (``miotui [--follow] FILE|-``, ``miotui --demo``) and the
headless subcommands (``miotui decode``, ``miotui run``).

Only argparse is imported at start-up: ``miotui --help`` must answer at once, so every
subcommand imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Optional, Sequence, TextIO

EPILOG = """headless subcommands:
  miotui decode PATH... [--format table|json|csv|driver]   decode logs into unique layers
  miotui run "conv -n 64 -c 3 -H 224 ..." [--backend ...]  run and verify one layer
  miotui run --log FILE --layer K                          run the K-th layer of a log
(see `miotui decode --help`, `miotui run --help`)"""


def _app_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="miotui", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Live explorer for MIOpen logs: every convolution, pooling, batch-norm and "
                    "activation call as a row; inspect, reproduce with MIOpenDriver, run and verify.")
    p.add_argument("paths", nargs="*", metavar="FILE",
                   help="log file(s) or glob patterns; '-' reads stdin (e.g. python train.py 2>&1 | miotui -)")
    p.add_argument("-f", "--follow", action="store_true", help="keep reading as the log grows (like tail -F)")
    p.add_argument("--demo", action="store_true", help="replay a bundled ResNet-50 training log live")
    p.add_argument("--pid", type=int, help="the training job's process id (default: found from the log's writer)")
    p.add_argument("--version", action="version", version="miotui " + _version())
    return p


def _version() -> str:
    from miotui import __version__
    return __version__


def _decode_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="miotui decode",
                                description="Decode MIOpen logs (any version) into unique layers.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="log files ('.gz' read transparently; '-' is stdin)")
    p.add_argument("--format", choices=("table", "json", "csv", "driver"), default="table",
                   help="table: readable; json: the documented contract; csv: one row per layer; "
                        "driver: one runnable MIOpenDriver command per layer, most executed first")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    return p


def decode_main(argv: Sequence[str]) -> int:
    ns = _decode_parser().parse_args(argv)
    from miotui.decode_output import render_to
    from miotui.logs.sources import decode_paths
    from miotui.safe_text import visible
    try:
        catalog = decode_paths(ns.paths)
    except OSError as e:
        where = visible(str(e.filename or " ".join(ns.paths)))
        print(f"miotui decode: cannot read {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    if ns.output:
        try:
            with open(ns.output, "w", encoding="utf-8") as fh:
                render_to(fh, catalog, ns.format)
        except OSError as e:
            print(f"miotui decode: cannot write {visible(ns.output)}: {e.strerror or e}", file=sys.stderr)
            return 2
        return 0
    return write_stdout(lambda out: render_to(out, catalog, ns.format), "miotui decode")


def write_stdout(write: Callable[[TextIO], None], who: str) -> int:
    """``write(sys.stdout)``; a closed pipe or a full device is one line on stderr and exit
    status 2, never a traceback (also not the one Python prints at exit when the final flush
    fails)."""
    import os
    try:
        if sys.stdout is None:
            raise OSError(0, "standard output is closed")
        write(sys.stdout)
        sys.stdout.flush()
    except (OSError, ValueError) as e:
        try:   # nothing more may reach the broken stream, not even at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
        except OSError:
            pass
        reason = getattr(e, "strerror", None) or str(e)
        try:
            print(f"{who}: cannot write the output: {reason}", file=sys.stderr)
        except (OSError, ValueError, AttributeError):
            pass
        return 2
    return 0


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
        return decode_main(args[1:])
    if args and args[0] == "run":
        return run_cli_main(args[1:])
    ns = _app_parser().parse_args(args)
    if not ns.paths and not ns.demo:
        if sys.stdin is None or sys.stdin.closed:
            print("miotui: no log given and standard input is closed", file=sys.stderr)
            return 2
        if sys.stdin.isatty():
            _app_parser().print_help()
            return 2
        ns.paths = ["-"]
    if "-" in ns.paths and (sys.stdin is None or sys.stdin.closed):
        print("miotui: cannot read '-': standard input is closed", file=sys.stderr)
        return 2
    from miotui.app import launch
    return launch(ns.paths, follow=ns.follow, demo=ns.demo, pid=ns.pid)

"""``miotui decode``: logs in, unique layers out (a table, JSON, CSV, or driver commands).

Headless and part of the core (no UI library is imported): scripts and CI use it, and its
JSON is the documented contract.  Exit status: 0 for any input (what could not be decoded is
listed, with why), 2 for an unreadable path, a bad argument or an output that cannot be
written.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from typing import Callable, Iterator, Sequence, TextIO


def _decode_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="miotui decode",
                                description="Decode MIOpen logs (any version) into unique layers.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="log files ('.gz' read transparently; '-' is stdin)")
    p.add_argument("--format", choices=("table", "json", "csv", "driver"), default="table",
                   help="table: readable; json: the documented contract; csv: one row per layer; "
                        "driver: one runnable MIOpenDriver command per layer, most executed first")
    p.add_argument("-o", "--output", help="write to this file instead of stdout ('-': stdout); a symbolic link "
                                          "there is refused, a file there is overwritten and keeps its mode")
    p.add_argument("--driver-version", metavar="VERSION",
                   help="write MIOpenDriver commands for this driver: a MIOpen version (3.2.0) or a ROCm release "
                        "(rocm-6.2); default: today's driver")
    p.add_argument("--jobs", "-j", type=int, metavar="N",
                   help="decode several files at once, one process per file, and one big file in byte ranges at "
                        "once, at most N processes (default: the cores; 1: serially); the output is the same")
    return p


def decode_main(argv: Sequence[str]) -> int:
    parser = _decode_parser()
    ns = parser.parse_args(argv)
    with without_full_collections():
        return _decode(parser, ns)


@contextlib.contextmanager
def without_full_collections() -> Iterator[None]:
    """The cyclic garbage collector without its full passes, for one decode.  A decode builds
    one large structure that lives until the output is written; each full pass walks all of
    it and frees nothing (at 200,000 layers: 16 passes, a fifth of the decode).  Young
    objects are still collected, so a cycle made and dropped at once is freed as before."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, 1 << 30)
    try:
        yield
    finally:
        gc.set_threshold(young, middle, old)


def _decode(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> int:
    from miotui.decode_output import render_to
    from miotui.decoding.parallel import decode_files
    from miotui.driver.versions import DriverVersionError, resolve_driver_version
    from miotui.safe_text import visible
    try:
        version = resolve_driver_version(ns.driver_version)
    except DriverVersionError as e:
        parser.error(str(e))
    if ns.jobs is not None and ns.jobs < 1:
        parser.error("--jobs must be at least 1")
    try:
        catalog = decode_files(ns.paths, ns.jobs)
    except OSError as e:
        where = visible(str(e.filename or " ".join(ns.paths)))
        print(f"miotui decode: cannot read {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    if ns.output and ns.output != "-":
        from miotui.output_file import open_output
        try:
            with open_output(ns.output, devices=True) as fh:
                render_to(fh, catalog, ns.format, version)
        except OSError as e:
            print(f"miotui decode: cannot write {visible(ns.output)}: {e.strerror or e}", file=sys.stderr)
            return 2
        return 0
    return write_stdout(lambda out: render_to(out, catalog, ns.format, version), "miotui decode")


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

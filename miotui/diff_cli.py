"""``miotui diff OLD NEW``: two runs' logs in, their layers paired and ranked out.

Headless and part of the core.  Each side is one or more logs (a path each positionally, or several
files of one run as ``--old``/``--new`` lists), decoded
like ``miotui decode`` does (``.gz``, any format miotui reads), both sides at once, one
process per file.  Exit status: 0 for any input (``miotui decode`` on a side lists what it
could not decode), 2 for an unreadable path, a bad argument or an output that cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence


def _diff_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="miotui diff",
        description="Compare two runs' logs layer by layer: the layers that cost the new run most time first "
                    "(delta of total time, then of first-iteration time, then solver changes), then layers "
                    "added and removed, then the same.",
        epilog="Several files per run: miotui diff --old a1.log a2.log --new b1.log b2.log")
    p.add_argument("paths", nargs="*", metavar="LOG", help="OLD NEW: one log each ('.gz' read transparently)")
    p.add_argument("--old", nargs="+", metavar="LOG", help="the old run's logs (instead of the first LOG)")
    p.add_argument("--new", nargs="+", metavar="LOG", help="the new run's logs (instead of the second LOG)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="table: readable; json: the documented contract; csv: one row per pair")
    p.add_argument("--ignore-batch", action="store_true",
                   help="match layers whose batch differs (the same model at another batch, or on another vendor); "
                        "each such pair says so")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.add_argument("--pack", metavar="DIR",
                   help="also write a repro pack: for the top changed layers, MIOpenDriver commands for each run's "
                        "version, a PyTorch script and a report of both runs' versions and settings")
    p.add_argument("--top", type=int, default=None, metavar="N", help="layers in the pack (default 10)")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="decode at most N files at once (default: the cores)")
    return p


def sides_of(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> tuple[list[str], list[str]]:
    positional = list(ns.paths)
    old = list(ns.old) if ns.old else (positional.pop(0) if positional else None)
    new = list(ns.new) if ns.new else (positional.pop(0) if positional else None)
    if old is None or new is None or positional:
        parser.error("give two logs (OLD NEW), or --old LOG... and --new LOG...")
    return [old] if isinstance(old, str) else old, [new] if isinstance(new, str) else new


def load_comparison(old: list[str], new: list[str], ignore_batch: bool, jobs: int | None = None):
    """Decode both runs (at once) and compare them: a ``miotui.diff.Comparison``.  Raises
    OSError for an unreadable path."""
    from miotui.decode_cli import without_full_collections
    from miotui.decoding.parallel import decode_file_groups
    with without_full_collections():
        catalogs = decode_file_groups([old, new], jobs)
        sides = [side_of(paths, catalog) for paths, catalog in zip((old, new), catalogs, strict=True)]
    from miotui.diff import compare
    return compare(sides[0], sides[1], ignore_batch)


def side_of(paths: list[str], catalog, versions=None):
    """A run's ``Side``: its layers, stats, settings and versions (read from the logs' heads
    unless given)."""
    from miotui.diff import Side
    from miotui.diff_pack import log_versions
    from miotui.export import run_stats
    layers = catalog.most_executed()
    totals = catalog.startup.totals()
    stats = run_stats({"lines": catalog.lines, "bytes": catalog.bytes, "seconds": round(catalog.seconds, 3),
                       "unknown_finds": catalog.unknown_finds, "startup": totals.to_dict()}, layers)
    return Side.of(paths, layers, stats, totals.settings, log_versions(paths) if versions is None else versions)


def diff_main(argv: Sequence[str]) -> int:
    parser = _diff_parser()
    ns = parser.parse_args(argv)
    old, new = sides_of(parser, ns)
    if ns.jobs is not None and ns.jobs < 1:
        parser.error("--jobs must be at least 1")
    if ns.top is not None and ns.top < 1:
        parser.error("--top must be at least 1")
    if ns.top is not None and not ns.pack:
        parser.error("--top needs --pack")
    if old.count("-") + new.count("-") > 1:
        parser.error("standard input ('-') can be only one of the logs")
    from miotui.decode_cli import write_stdout
    from miotui.diff_output import write
    from miotui.safe_text import visible
    try:
        comparison = load_comparison(old, new, ns.ignore_batch, ns.jobs)
    except OSError as e:
        where = visible(str(e.filename or " ".join(old + new)))
        print(f"miotui diff: cannot read {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    if ns.pack:
        from miotui.diff_pack import PACK_TOP, write_pack
        try:
            written = write_pack(comparison, ns.pack, ns.top or PACK_TOP)
        except OSError as e:
            print(f"miotui diff: cannot write the pack in {visible(ns.pack)}: {e.strerror or e}", file=sys.stderr)
            return 2
        print(f"miotui diff: repro pack of {len(written)} files in {visible(ns.pack)}", file=sys.stderr)
    if ns.output:
        try:
            from miotui.output_file import open_output
            with open_output(ns.output, devices=True) as fh:   # never through a link planted at the name
                write(fh, comparison, ns.format)
        except OSError as e:
            print(f"miotui diff: cannot write {visible(ns.output)}: {e.strerror or e}", file=sys.stderr)
            return 2
        return 0
    return write_stdout(lambda out: write(out, comparison, ns.format), "miotui diff")

"""A repro pack of a diff (``miotui diff --pack DIR``): for the top changed layers, the
MIOpenDriver command of each side (spelled for that side's driver where the log names its
MIOpen version), a PyTorch script, and a report with both runs' versions and settings, so a
maintainer can act on "it got slower after the upgrade" without the logs.

Also where a run's versions come from: MIOpen prints ``MIOpen version 3.1.0`` (and HIP's) in
its device-detection line near the top of a log, MIOpenDriver ``MIOpen (version: 2.9.0)``;
``log_versions`` reads the head of each file for them (the decoder does not keep them).

Every command is argv of validated tokens (``to_driver_argv``) quoted with ``shlex.quote``,
every script value a number or a whitelisted name, every piece of log text in the report
made visible: a log is untrusted input.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Optional

from miotui import repro_torch
from miotui.decode_output import shape_text, startup_text
from miotui.diff import Comparison, LayerFacts, Pair, Side
from miotui.driver import DriverCommandError, to_driver_argv
from miotui.driver.versions import DriverVersionError, resolve_driver_version, version_from_output, version_text
from miotui.output_file import write_output
from miotui.safe_text import visible
from miotui.startup import counted
from miotui.views.units import ms_text

#: bytes of each file's head read for its versions
VERSION_HEAD_BYTES = 4 << 20
#: layers a pack holds by default
PACK_TOP = 10

_HIP_RE = re.compile(r"HIP version (\d+(?:\.\d+){1,3})")


def log_versions(paths: list[str]) -> tuple[tuple[str, str], ...]:
    """(``MIOpen``, ``3.1.0``) and (``HIP``, ``6.0.23494``) from the first file's head that
    names them; nothing for stdin or an unreadable file (the decode reports those)."""
    from miotui.sources.files import open_source
    found: dict[str, str] = {}
    for path in paths:
        if path == "-" or len(found) == 2:
            continue
        try:
            stream = open_source(path)
            try:
                head = stream.read(VERSION_HEAD_BYTES)
            finally:
                stream.close()
        except (OSError, EOFError, ValueError):
            continue
        text = head.decode("utf-8", "replace")
        if "MIOpen" not in found:
            v = version_from_output(text)
            if v is not None:
                found["MIOpen"] = ".".join(map(str, v))
        if "HIP" not in found:
            m = _HIP_RE.search(text)
            if m:
                found["HIP"] = m.group(1)
    return tuple((k, found[k]) for k in ("MIOpen", "HIP") if k in found)


def driver_version(side: Side) -> tuple[Optional[tuple[int, ...]], str]:
    """The driver a side's commands are written for (None: today's) and a note when its
    MIOpen version is not one miotui can spell commands for."""
    text = side.version("MIOpen")
    if not text:
        return None, "the log names no MIOpen version: written for today's MIOpenDriver"
    try:
        return resolve_driver_version(text), ""
    except DriverVersionError as e:
        return None, f"{e}: written for today's MIOpenDriver"


def driver_script(facts: LayerFacts, side_name: str, side: Side) -> str:
    """A bash script running the layer as ``side_name`` ran it, with ``-t 1``."""
    version, note = driver_version(side)
    p = facts.layer.problem
    lines = ["#!/usr/bin/env bash",
             f"# {side_name} run's layer {facts.layer.id}: {p.op} {p.direction} {p.dtype} {shape_text(facts.layer)}",
             f"# for {version_text(version)}" + (f" ({visible(note)})" if note else ""),
             "# Usage: bash this.sh [extra MIOpenDriver flags]; the driver is $MIOPEN_DRIVER or MIOpenDriver on PATH.",
             'DRIVER="${MIOPEN_DRIVER:-MIOpenDriver}"']
    try:
        argv = to_driver_argv(p, version)
    except DriverCommandError as e:
        lines.append("# MIOpenDriver cannot express this layer: " + visible(" ".join(str(e).split())))
        lines.append("exit 1")
        return "\n".join(lines) + "\n"
    lines.append('exec "$DRIVER" ' + " ".join(shlex.quote(a) for a in argv) + ' -t 1 "$@"')
    return "\n".join(lines) + "\n"


def torch_script(facts: LayerFacts) -> str:
    """A self-contained PyTorch script timing the layer (``miotui.repro_torch``)."""
    return repro_torch.torch_script(facts.layer, "miotui diff --pack",
                                    " MIOPEN_FIND_MODE and the other settings in README.md change\nthe "
                                    "solver MIOpen picks as they did in the runs.")


def _facts_lines(name: str, facts: Optional[LayerFacts]) -> list[str]:
    if facts is None:
        return [f"- {name}: not in this run"]
    t = facts.time
    timing = "not timed"
    if t.per_call_ms is not None:
        timing = f"{ms_text(t.per_call_ms)} ms per call ({t.source}), total " + (
            "- (never executed)" if t.total_ms is None else f"{ms_text(t.total_ms)} ms")
    first = startup_text(facts.layer.startup) or "nothing logged"
    return [f"- {name}: layer {facts.layer.id}, {counted(facts.layer.executions, 'execution')}, "
            f"{counted(facts.layer.finds, 'find')}, "
            f"{timing}; solver {visible(facts.solver) or '(not logged)'}; first iteration: {visible(first)}"
            + (f"; driver verdict {visible(facts.verdict)}" if facts.verdict else "")]


def _run_lines(name: str, side: Side) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in side.versions) or "no version in the log"
    settings = "; ".join(f"{k} = {v}" for k, v in side.settings) or "none logged"
    return [f"- {name}: {visible(' '.join(side.paths))}",
            f"  - versions: {visible(versions)}", f"  - settings from the log: {visible(settings)}",
            f"  - {len(side.layers)} unique layers, {int(side.stats.get('lines', 0)):,} lines"]


def packed_pairs(comparison: Comparison, top: int) -> list[tuple[int, Pair]]:
    """The top ``top`` pairs that are not ``same`` with both sides (rank, pair)."""
    out = []
    for rank, pair in enumerate(comparison.pairs, 1):
        if pair.status == "changed" and len(out) < top:
            out.append((rank, pair))
    return out


def write_pack(comparison: Comparison, directory: str, top: int = PACK_TOP) -> list[str]:
    """Write the pack into ``directory`` (made if missing); the files written, report first.
    Raises OSError where a file cannot be written."""
    os.makedirs(directory, exist_ok=True)
    written = []
    report = ["# miotui diff: repro pack", "",
              "Layers that changed between two runs, the most costly to the new run first. Each folder holds",
              "`driver_old.sh` / `driver_new.sh` (MIOpenDriver, spelled for each run's MIOpen version where the log",
              "names it) and `repro.py` (PyTorch).", "", "## Runs", ""]
    report += _run_lines("old", comparison.old) + _run_lines("new", comparison.new)
    report += ["", f"{len(comparison.pairs)} layers: {comparison.counts_text()}"
               + (" (batch ignored in matching)" if comparison.ignore_batch else ""), "", "## Layers", ""]
    chosen = packed_pairs(comparison, top)
    if not chosen:
        report.append("No layer changed.")
    for rank, pair in chosen:
        assert pair.old is not None and pair.new is not None
        p = pair.new.layer.problem
        folder = f"{rank:02d}-{p.op}-{p.direction}-layer{pair.new.layer.id}"
        path = os.path.join(directory, folder)
        os.makedirs(path, exist_ok=True)
        for name, text in (("driver_old.sh", driver_script(pair.old, "old", comparison.old)),
                           ("driver_new.sh", driver_script(pair.new, "new", comparison.new)),
                           ("repro.py", torch_script(pair.new))):
            write_output(os.path.join(path, name), text, executable=name.endswith(".sh"))
            written.append(os.path.join(path, name))
        report += [f"### {rank}. {p.op} {p.direction} {p.dtype} {shape_text(pair.new.layer)} (`{folder}/`)", "",
                   *[f"- {visible(c)}" for c in pair.changes], *_facts_lines("old", pair.old),
                   *_facts_lines("new", pair.new), ""]
    report_path = os.path.join(directory, "README.md")
    write_output(report_path, "\n".join(report) + "\n")
    return [report_path, *written]

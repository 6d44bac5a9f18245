"""What ``miotui decode`` prints: the readable table here, the machine formats from
``miotui.export`` (shared with the app's export key, so both write the same files).

Plain text on purpose: the headless CLI is part of the core, which imports no UI library,
and every piece of log text it prints goes through ``safe_text.visible`` (a log line can
carry terminal escape sequences), so nothing here can drive the terminal or be read as
markup.
"""

from __future__ import annotations

import dataclasses
import io
from typing import IO, Iterable, Iterator, Optional

from miotui.catalog import Catalog, LayerSnapshot
from miotui.driver import DriverCommandError, to_driver_command
from miotui.driver.versions import version_text
from miotui.formats import FORMATS
from miotui.problems import ConvProblem
from miotui.safe_text import visible
from miotui.startup import LayerStartup, seconds
from miotui.text_table import TextTable
from miotui.views.timing import NO_TIME, layer_times, measured_line, time_summary
from miotui.views.units import ms_text

#: the table's columns: (title, right-aligned)
_COLUMNS = (("id", True), ("op", False), ("dir", False), ("dtype", False), ("layout", False), ("shape", False),
            ("GFLOP", True), ("exec", True), ("find", True), ("mention", True), ("ms/call", True), ("from", False),
            ("total ms", True), ("share", True), ("first iteration", False), ("solver", False))


def shape_text(layer: LayerSnapshot) -> str:
    p = layer.problem
    dims = "x".join(str(v) for v in getattr(p, "input_shape", ())[1:])
    if isinstance(p, ConvProblem):
        f = "x".join(str(v) for v in p.filter)
        extra = f" g{p.groups}" if p.groups > 1 else ""
        extra += " trans" if p.mode == "trans" else ""
        return f"{p.n}x{dims} k{p.k} {f}{extra}"
    shape = getattr(p, "input_shape", ())
    return "x".join(str(v) for v in shape) or "?"


def gflop_text(flops: int) -> str:
    """A layer's GFLOP per call, three significant digits, never in exponent form."""
    g = flops / 1e9
    if g == 0:
        return "0"
    if g >= 100:
        return f"{g:,.0f}"
    if g >= 0.001:
        return f"{g:.3g}"
    return "<0.001"


def startup_text(s: LayerStartup) -> str:
    """A layer's first iteration in a few words: ``find-db miss, 3 compiled (1.2 s), tuned 6 s``."""
    parts = []
    if s.find_db != "unknown":
        parts.append(f"find-db {s.find_db}")
    if s.kernels_compiled:
        parts.append(f"{s.kernels_compiled} compiled" + (f" ({seconds(s.compile_ms)})" if s.compile_ms else ""))
    if s.kernels_from_cache:
        parts.append(f"{s.kernels_from_cache} cached")
    if s.tuning_ms is not None:
        parts.append(f"tuned {seconds(s.tuning_ms)}")
    elif s.searched and s.find_db != "miss":
        parts.append("tuned")
    return ", ".join(parts)


def render_table(catalog: Catalog) -> str:
    buf = io.StringIO()
    write_table(buf, catalog)
    return buf.getvalue()


def write_table(out: IO[str], catalog: Catalog) -> None:
    """The readable table, written line by line (a log of 200,000 layers never holds the whole
    text)."""
    layers = catalog.most_executed()
    times = layer_times(layers)
    table = TextTable(_COLUMNS)
    for layer in layers:
        p = layer.problem
        t = times.get(layer.id, NO_TIME)
        table.add([str(layer.id), p.op, p.direction, p.dtype, getattr(p, "layout", "") or "", shape_text(layer),
                   gflop_text(p.flops), str(layer.executions), str(layer.finds), str(layer.mentions),
                   ms_text(t.per_call_ms), t.source or "", ms_text(t.total_ms),
                   "" if t.share is None else f"{100 * t.share:.1f}%", startup_text(layer.startup),
                   visible(layer.annotation("solver"))])
    title = (f"{len(layers)} unique layers, {catalog.lines:,} lines, {catalog.undecoded_count} undecoded"
             + (f", {catalog.unknown_finds} Finds of an unknown problem" if catalog.unknown_finds else "")
             + " (id: the layer's order of arrival in the log; rows: most executed first)")
    out.write(title + "\n")
    out.write(time_summary(times).line(catalog.formats) + "\n")
    measured = measured_line(layers, catalog.kernel_time)
    for line in ([measured] if measured else []) + catalog.joined:
        out.write(visible(line) + "\n")
    startup = catalog.startup.totals()
    if startup.kernels_compiled or startup.kernels_from_cache or startup.searches or startup.find_db_misses:
        searched = sum(1 for layer in layers if layer.startup.searched)
        out.write(startup.summary(searched, len(layers)) + "\n")
    if startup.settings:
        out.write("settings: " + visible("; ".join(f"{k} = {v}" for k, v in startup.settings)) + "\n")
    for line in table.lines():
        out.write(line + "\n")
    for layer in layers:
        for w in layer.warnings:
            out.write(f"  warning (layer {layer.id}): {visible(w)}\n")
    if catalog.undecoded_count:
        out.write(f"{catalog.undecoded_count} MIOpen-looking lines or blocks could not be decoded "
                  f"(see --format json for each line and reason)\n")


def render_driver_lines(layers: list[LayerSnapshot]) -> str:
    """One paste-able command per layer, most executed first, its counts as a comment.
    (The app's export writes a full script around the same commands.)"""
    out = []
    for layer in layers:
        p = layer.problem
        out.append(f"# layer {layer.id}: {layer.executions} executions, {layer.finds} finds, {layer.mentions} "
                   f"mentions: {p.op} {p.direction} {p.dtype} {getattr(p, 'layout', '')} "
                   f"(log lines {layer.first_line}-{layer.last_line})")
        note = FORMATS.translation(layer.sources)
        if note:
            out.append(f"#   {note}")
        for w in layer.warnings:
            out.append(f"#   warning: {visible(' '.join(w.split()))}")
        out.append(layer.driver_command or "#   (MIOpenDriver cannot express this layer)")
    return "\n".join(out) + "\n" if out else ""


def render(catalog: Catalog, fmt: str, version: Optional[tuple[int, ...]] = None) -> str:
    buf = io.StringIO()
    render_to(buf, catalog, fmt, version)
    return buf.getvalue()


def for_driver(layers: Iterable[LayerSnapshot], version: Optional[tuple[int, ...]]) -> Iterator[LayerSnapshot]:
    """The layers with their commands written for the driver of ``version`` (None: as they
    are, for today's driver)."""
    for layer in layers:
        if version is None:
            yield layer
            continue
        try:
            command = to_driver_command(layer.problem, version=version)
            warnings = layer.warnings
        except DriverCommandError as e:
            command = ""
            warnings = layer.warnings + (f"no command for {version_text(version)}: {e}",)
        yield dataclasses.replace(layer, driver_command=command, warnings=warnings)


def render_to(out: IO[str], catalog: Catalog, fmt: str, version: Optional[tuple[int, ...]] = None) -> None:
    """Write ``catalog`` in ``fmt`` to ``out`` (JSON as it is made: a log of many layers
    never holds the whole document), with commands for the driver of ``version``."""
    if fmt == "table":
        write_table(out, catalog)
        return
    from miotui import export
    layers = list(for_driver(catalog.most_executed(), version))
    if fmt == "json":
        stats = {"lines": catalog.lines, "bytes": catalog.bytes, "seconds": round(catalog.seconds, 3),
                 "unknown_finds": catalog.unknown_finds, "startup": catalog.startup.totals().to_dict()}
        if catalog.kernel_time:   # the GPU time a trace measured (a key only where there is one)
            stats["kernel_time"] = {source: k.to_dict() for source, k in catalog.kernel_time.items()}
        # json's ensure_ascii (the default) writes every control and non-ASCII character as \uXXXX
        export.write_json(out, layers, catalog.undecoded(), stats)
    elif fmt == "csv":
        out.write(export.to_csv(layers))
    elif fmt == "driver":
        out.write(render_driver_lines(layers))
    else:
        raise ValueError(f"unknown format {fmt!r}")

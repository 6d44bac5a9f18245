"""What ``miotui decode`` prints: the readable table here, the machine formats from
``miotui.export`` (shared with the app's export key, so both write the same files)."""

from __future__ import annotations

import io

from miotui.catalog import Catalog, LayerSnapshot
from miotui.problems import ConvProblem


def shape_text(layer: LayerSnapshot) -> str:
    p = layer.problem
    dims = "x".join(str(v) for v in p.input_shape[1:])
    if isinstance(p, ConvProblem):
        f = "x".join(str(v) for v in p.filter)
        extra = f" g{p.groups}" if p.groups > 1 else ""
        extra += " trans" if p.mode == "trans" else ""
        return f"{p.n}x{dims} k{p.k} {f}{extra}"
    return f"{p.n}x{dims}"


def render_table(catalog: Catalog) -> str:
    from rich.console import Console
    from rich.table import Table

    layers = catalog.most_executed()
    table = Table(title=f"{len(layers)} unique layers, {catalog.lines:,} lines, "
                        f"{catalog.undecoded_count} undecoded", title_justify="left")
    for col in ("#", "op", "dir", "dtype", "layout", "shape", "GFLOP", "exec", "find", "mention", "solver"):
        table.add_column(col, justify="right" if col in ("#", "GFLOP", "exec", "find", "mention") else "left")
    for i, layer in enumerate(layers, 1):
        p = layer.problem
        table.add_row(str(i), p.op, p.direction, p.dtype, p.layout, shape_text(layer),
                      f"{p.flops / 1e9:.3g}", str(layer.executions), str(layer.finds), str(layer.mentions),
                      layer.annotation("solver"))
    buf = io.StringIO()
    console = Console(file=buf, width=160, force_terminal=False)
    console.print(table)
    for i, layer in enumerate(layers, 1):
        for w in layer.warnings:
            console.print(f"  warning (layer {i}): {w}")
    if catalog.undecoded_count:
        console.print(f"{catalog.undecoded_count} MIOpen-looking lines or blocks could not be decoded "
                      f"(see --format json for each line and reason)")
    return buf.getvalue()


def render_driver_lines(layers: list[LayerSnapshot]) -> str:
    """One paste-able command per layer, most executed first, its counts as a comment.
    (The app's export writes a full script around the same commands.)"""
    out = []
    for layer in layers:
        p = layer.problem
        out.append(f"# {layer.executions} executions, {layer.finds} finds, {layer.mentions} mentions: "
                   f"{p.op} {p.direction} {p.dtype} {p.layout} (log lines {layer.first_line}-{layer.last_line})")
        for w in layer.warnings:
            out.append(f"#   warning: {' '.join(w.split())}")
        out.append(layer.driver_command or "#   (MIOpenDriver cannot express this layer)")
    return "\n".join(out) + "\n" if out else ""


def render(catalog: Catalog, fmt: str) -> str:
    if fmt == "table":
        return render_table(catalog)
    from miotui import export
    layers = catalog.most_executed()
    if fmt == "json":
        import json
        stats = {"lines": catalog.lines, "bytes": catalog.bytes, "seconds": round(catalog.seconds, 3),
                 "unknown_finds": catalog.unknown_finds}
        return json.dumps(export.to_json(layers, catalog.undecoded(), stats), indent=1) + "\n"
    if fmt == "csv":
        return export.to_csv(layers)
    if fmt == "driver":
        return render_driver_lines(layers)
    raise ValueError(f"unknown format {fmt!r}")

#!/usr/bin/env python3
"""Rewrite this directory's README.md from its hand counts (``hand_counts*.json``).

The counts were written by hand before the decoder ran on each excerpt; the README is a view
of them (so the table and the tests can never disagree).  Run it after editing a count:

    python tests/data/real_logs/make_readme.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent

HEAD = """\
# Real MIOpen log excerpts with hand counts

Verbatim excerpts of real users' MIOpen logs, driver output and database files from public
GitHub issues, pull requests and docs (MIOpen, rocm-libraries, TheRock, MIGraphX, ROCm forks of
TensorFlow and PyTorch, MIVisionX...), 2017-2026.  Nothing in a `.log` file was edited,
re-wrapped or re-encoded; most are cut at one or both ends, which is how they were published
(a decoder must take a cut last line or block as incomplete, and never crash on it).  The `00`-`55`
files are the developers' shared set (`00` is the example on MIOpen's wiki page "Logger to
Driver Decoder for Convolutions"); the `100`-`2xx` files were collected for the decode issue.

Each excerpt was counted by hand *before* the decoder ran on it (`hand_counts*.json`: per layer
op, direction, data type, executions, finds, mentions and the expected driver command; the
finds no layer could be given; the lines that must stay undecoded; notes).
`tests/test_real_logs.py` decodes every file and compares with these counts.  Where a count
was revised after the decoder disagreed, the note says so and why ("count revised"): the count
was wrong by the contract (executions are calls that ran the layer, a typed or echoed command
is a mention, a Find is a find), never to make a test pass.

This file is generated from the JSON by `make_readme.py`.

| file | year | forms | layers | exec | find | mention | undecoded | source |
|---|---|---|---|---|---|---|---|---|
"""


def rows() -> list[str]:
    out = []
    entries = []
    for path in sorted(HERE.glob("hand_counts*.json")):
        entries += json.loads(path.read_text(encoding="utf-8"))
    for e in sorted(entries, key=lambda e: (int(e["file"].split("_")[0]), e["file"])):
        layers = e["layers"]
        total = {k: sum(layer[k] for layer in layers) for k in ("exec", "find", "mention")}
        undecoded = e["undecoded"] if isinstance(e["undecoded"], int) else len(e["undecoded"])
        forms = ", ".join(e["forms"])
        source = e["source"].replace("|", "/")
        out.append(f"| `{e['file']}` | {e['year']} | {forms} | {len(layers)} | {total['exec']} | "
                   f"{total['find'] + e['unknown_finds']} | {total['mention']} | {undecoded} | {source} |")
    return out


def main() -> None:
    (HERE / "README.md").write_text(HEAD + "\n".join(rows()) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

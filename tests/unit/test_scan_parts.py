"""The MIOpen scanner's parts (issue 20): each works on its own, given its collaborators as
arguments, and the scanner writes the catalog only through the catalog's methods."""

from __future__ import annotations

import ast
from pathlib import Path

from miotui.catalog import Catalog
from miotui.driver import parse_driver_args
from miotui.events import Sighting
from miotui.formats.miopen.calls import CallTracker, CatJoiner
from miotui.formats.miopen.driver_output import DriverLogTracker
from miotui.formats.miopen.first_iteration import FirstIteration
from miotui.formats.miopen.line_cache import LineCache
from miotui.formats.miopen.lines import NOISE, TEXT
from miotui.formats.miopen.sink import CatalogSink
from miotui.formats.miopen.trace import DTYPE_GUESS_WARNING

MIOTUI = Path(__file__).resolve().parents[2] / "miotui"
MIOPEN = MIOTUI / "formats" / "miopen"
CONV = "conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1"


def catalog_writes(source: str) -> list[str]:
    """Where ``source`` sets a field of something named ``catalog`` (``x.catalog.lines += n``,
    ``catalog.finished = t``) or takes a catalog's lock or its startup ledger itself."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and _is_catalog(target.value):
                found.append(f"line {node.lineno}: sets catalog.{target.attr}")
        if isinstance(node, ast.Attribute) and node.attr in ("lock", "startup") and _is_catalog(node.value):
            found.append(f"line {node.lineno}: reads catalog.{node.attr}")
    return sorted(found, key=lambda hit: int(hit.split(":")[0].split()[1]))


def _is_catalog(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "catalog") or \
        (isinstance(node, ast.Attribute) and node.attr == "catalog")


def test_the_scanners_write_the_catalog_only_through_its_methods():
    """Every format's scanner and the whole-file decoders: the catalog owns its counters."""
    paths = sorted([*(MIOTUI / "formats").rglob("*.py"), *(MIOTUI / "decoding").glob("*.py")])
    assert MIOPEN / "scan.py" in paths
    offenders = {str(path.relative_to(MIOTUI)): hits for path in paths
                 if (hits := catalog_writes(path.read_text(encoding="utf-8")))}
    assert offenders == {}


def test_the_write_finder_finds_a_counter_poked_from_outside():
    source = ("def feed(self, data):\n    with self.catalog.lock:\n        self.catalog.bytes += len(data)\n"
              "    catalog.finished = 1\n    self.catalog.startup.timed = True\n")
    assert catalog_writes(source) == ["line 2: reads catalog.lock", "line 3: sets catalog.bytes",
                                      "line 4: sets catalog.finished", "line 5: reads catalog.startup"]


def _tracker() -> tuple[Catalog, CallTracker]:
    catalog = Catalog()
    sink = CatalogSink(catalog, "a.log")
    driver = DriverLogTracker()
    return catalog, CallTracker(sink, FirstIteration(sink), driver.current_problem,
                                frozenset({DTYPE_GUESS_WARNING}))


def _conv():
    return parse_driver_args(CONV.split(), log_fn="LogCmdConvolution").problems[0]


def test_the_call_tracker_counts_an_api_block_and_its_command_line_as_one_call():
    catalog, calls = _tracker()
    problem = _conv()
    calls.sighting("t1", Sighting(problem, "execution", "api-trace"), 1, lambda: [(1, "block")])
    calls.sighting("t1", Sighting(problem, "execution", "command"), 9, lambda: [(9, "command")])
    [layer] = catalog.layers()
    assert (layer.executions, layer.sources, layer.files) == (1, ("api-trace", "command"), ("a.log",))
    calls.sighting("t1", Sighting(problem, "execution", "command"), 10, lambda: [(10, "command")])
    assert catalog.layers()[0].executions == 2   # a second Command line is the next call
    calls.sighting("t2", Sighting(problem, "execution", "command"), 11, lambda: [(11, "command")])
    assert catalog.layers()[0].executions == 3   # another thread's call is its own


def test_a_legacy_find_no_line_names_is_counted_by_the_catalog():
    catalog, calls = _tracker()
    calls.open_find("t1", "fwd", 1, "Info [FindConvFwdAlgorithm] requestAlgoCount = 4", 1)
    calls.close_finds(2)
    assert catalog.unknown_finds == 1 and len(catalog) == 0


def test_the_cat_joiner_hands_back_one_call_for_its_lines():
    joiner = CatJoiner()
    assert joiner.flush("t1") is None
    parts = [parse_driver_args(f"catfp32 -dims 4,{n},91 -F 1".split(), log_fn="LogCmdCat") for n in (100, 50)]
    events = [[Sighting(p.problems[0], "execution", "command", p.warnings)] for p in parts]
    assert not joiner.part("t1", [], 1, "no event")
    assert joiner.part("t1", events[0], 1, "cat line 1")
    assert joiner.part("t1", events[1], 2, "cat line 2")
    joined, n, line, raw = joiner.flush("t1")
    assert (n, line, raw()) == (1, "cat line 1", [(1, "cat line 1"), (2, "cat line 2")])
    assert len(joined) == 1 and "2 cat Command lines" in joined[0].warnings[0]
    assert joiner.flush("t1") is None


def test_the_line_cache_quiets_only_cached_lines_and_keeps_them_on_restart():
    cache = LineCache()
    line, c = cache.classify_new("epoch 1 loss 0.5")
    assert c[0] == TEXT
    cache.quiet(line)
    cache.quiet("never read")
    assert cache.entries == {line: (NOISE,)} and cache.quieted == {line}
    cache.restart()
    assert cache.entries == {line: (NOISE,)}

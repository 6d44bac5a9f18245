"""The format registry (issue 20): every format is a package with a FORMAT record, and the
registry alone chooses among them by content."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from miotui.catalog import Catalog
from miotui.formats import FORMATS, Format, FormatRegistry, Role, by_name, choose, claimed
from miotui.formats.cudnn import CudnnScanner
from miotui.formats.miopen.scan import LogScanner
from miotui.formats.torch_profiler import TraceScanner

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
MIOPEN_LINE = b"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 8 -H 8 -W 8 -k 8 -y 3 -x 3\n"
CUDNN_HEAD = b"I! CuDNN (v90100 17) function cudnnConvolutionForward() called:\n"


def test_miopen_is_the_default_and_first():
    assert FORMATS[0].name == "miopen" and FORMATS.default is FORMATS[0]
    assert [f.name for f in FORMATS] == ["miopen", "cudnn", "torch_profiler", "rocprof"]


def test_every_format_package_defines_its_record_and_is_listed():
    packages = sorted(p.name for p in (ROOT / "miotui" / "formats").iterdir()
                      if p.is_dir() and (p / "__init__.py").exists())
    assert packages == sorted(f.name for f in FORMATS)
    for fmt in FORMATS:
        assert isinstance(fmt, Format) and fmt.label and isinstance(fmt.role, Role)
        assert (fmt.scanner is None) == (fmt.role is Role.KERNEL_TRACE)


def test_choice_by_content():
    assert choose(MIOPEN_LINE).name == "miopen"
    assert choose(CUDNN_HEAD).name == "cudnn"
    assert choose(b'{"schemaVersion": 1, "traceEvents": [').name == "torch_profiler"
    assert choose(b"plain chatter of a framework\n").name == "miopen"   # the default
    assert claimed(b"plain chatter of a framework\n") is None
    assert by_name("cudnn").label == "cuDNN"
    with pytest.raises(KeyError, match="there are miopen, cudnn"):
        by_name("nope")


def test_scanners_come_from_the_records():
    for head, kind, label in [(MIOPEN_LINE, LogScanner, "MIOpen"), (CUDNN_HEAD, CudnnScanner, "cuDNN"),
                              (b'{"traceEvents": [', TraceScanner, "PyTorch profiler")]:
        cat = Catalog()
        assert isinstance(FORMATS.scanner_for(head, cat, "x.log"), kind)
        assert list(cat.formats) == [label]


def test_a_new_format_is_one_record_in_a_registry():
    """What "adding a format" means: a record in the list, nothing else to touch."""
    seen = []

    class Scanner:
        def __init__(self, catalog, file):
            self.catalog, self.file = catalog, file

        def feed(self, data: bytes) -> None:
            seen.append(data)

        def finish(self) -> None:
            seen.append(b"<end>")

    toy = Format("toy", "Toy", Role.LOG, lambda text: text.startswith(b"TOY "), Scanner)
    registry = FormatRegistry([*FORMATS, toy])
    assert registry.choose(b"TOY 1\n") is toy and registry.told(b"TOY 1\n")
    assert registry.choose(MIOPEN_LINE).name == "miopen"
    cat = Catalog()
    scanner = registry.scanner_for(b"TOY 1\n", cat, "t.log")
    assert isinstance(scanner, Scanner) and list(cat.formats) == ["Toy"]
    with pytest.raises(ValueError, match="repeat"):
        FormatRegistry([*FORMATS, FORMATS[1]])


def test_traces_are_asked_before_logs():
    """A profiler trace's kernel names can read like a cuDNN record: the trace must win."""
    head = b'{"traceEvents": [{"name": "I! CuDNN (v90100) function cudnnConvolutionForward() called:"}'
    assert choose(head).name == "torch_profiler"


def test_only_the_registry_names_format_packages():
    """Outside miotui/formats/, no module imports a format package but through the registry's
    seam: the decoding of whole files (which joins traces by their Role and splits one MIOpen
    file in ranges) and the poller's trace join are listed; a new importer must be added here
    on purpose."""
    allowed = {"miotui/decoding/whole.py", "miotui/decoding/ranges.py", "miotui/views/live_traces.py"}
    found = {}
    for path in (ROOT / "miotui").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("miotui/formats/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("miotui.formats."):
                found.setdefault(rel, set()).add(node.module)
    assert set(found) <= allowed, {k: v for k, v in found.items() if k not in allowed}


def test_library_lines_are_told_by_the_formats():
    from miotui.record_job import is_library_line
    pattern = FORMATS.line_pattern()
    assert pattern.count("(?:") >= 2   # MIOpen's and cuDNN's, each from its package
    assert is_library_line(MIOPEN_LINE.rstrip())
    assert is_library_line(b"MIOpenDriver conv -n 1")
    assert is_library_line(CUDNN_HEAD.rstrip())
    assert not is_library_line(b"epoch 1 loss 0.3 (MIOpen is fine)")


def test_a_layer_knows_the_format_it_came_from():
    assert FORMATS.format_of({"command"}).name == "miopen"
    assert FORMATS.format_of({"command", "torch-profiler"}).name == "torch_profiler"
    cudnn = FORMATS.by_name("cudnn")
    assert FORMATS.format_of(set(cudnn.sources) | {"torch-profiler"}) is cudnn
    assert FORMATS.translation(cudnn.sources) == cudnn.translation and cudnn.translation
    assert FORMATS.translation({"api-trace"}) is None


@pytest.mark.parametrize("miopen_first", [True, False])
def test_a_file_holding_two_log_formats_gives_both_formats_layers(tmp_path, miopen_first):
    """A MIOpen log and a cuDNN log written to one file: the first chunk is claimed by both, and
    each format's layers are read (the cuDNN one alone was chosen before, and MIOpen's 120
    layers were passed over without a word).  Lines and bytes are counted once."""
    import gzip

    from miotui.decoding.whole import decode_paths
    miopen = (ROOT / "miotui" / "samples" / "resnet50_demo.log").read_bytes()
    with gzip.open(DATA / "profiler" / "joined_cudnn.log.gz", "rb") as fh:
        cudnn = b"".join(fh.readline() for _ in range(3000))
    alone = {name: decode_paths([str(_write(tmp_path / f"{name}.log", text))])
             for name, text in (("miopen", miopen), ("cudnn", cudnn))}
    both = _write(tmp_path / "both.log", miopen + cudnn if miopen_first else cudnn + miopen)
    cat = decode_paths([str(both)])
    want = {s.problem for c in alone.values() for s in c.layers()}
    assert {s.problem for s in cat.layers()} == want and len(want) == 121
    data = both.read_bytes()   # once, not per scanner (MIOpen's counts a lone \r as a line end too)
    assert abs(cat.lines - data.count(b"\n")) <= data.count(b"\r")
    assert cat.bytes == len(miopen) + len(cudnn)
    assert set(cat.formats) == {"MIOpen", "cuDNN"}


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_lines_of_several_files_of_one_format_add_up(tmp_path):
    """The cuDNN and profiler scanners tell the catalog the lines each piece added (it set its
    count to the last file's alone: two cuDNN files read as one file's lines)."""
    import gzip

    from miotui.decoding.whole import decode_paths
    with gzip.open(DATA / "profiler" / "joined_cudnn.log.gz", "rb") as fh:
        text = b"".join(fh.readline() for _ in range(2000))
    paths = [str(_write(tmp_path / f"rank{i}.log", text)) for i in range(2)]
    one = decode_paths(paths[:1])
    two = decode_paths(paths)
    assert one.lines == text.count(b"\n") and two.lines == 2 * one.lines
    assert two.bytes == 2 * len(text)

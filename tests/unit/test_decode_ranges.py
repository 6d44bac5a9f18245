"""``miotui decode FILE`` of one big file in byte ranges at once (issue 25): the merged
catalog, and so every output format, is the serial one, or the ranges are not trusted and
the file is decoded serially.

The boundary cases each cut a log where state crosses the seam (an API block cut in two, a
legacy Find whose layer is named in the next range, a thread's call whose Command line is in
the next range, a MIOpenDriver command whose output is in the next range) and check three
things: with the warm-up the ranges give the serial catalog; merged blindly without a warm-up
they do not (the case really crosses the seam); and the seam check catches that."""

from __future__ import annotations

import gzip
import os
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_decode_parallel import REAL_LOGS, ROOT, SAMPLE_LOGS, UNDECODABLE, assert_same, outputs, state

from miotui.catalog import Catalog
from miotui.decode_cli import decode_main
from miotui.decoding import parallel
from miotui.decoding.ranges import (
    count_line_ends,
    decode_file_in_ranges,
    decode_range,
    decode_ranges_here,
    line_start_at_or_after,
    range_workers,
    ranges_at,
)
from miotui.decoding.whole import decode_paths
from miotui.formats.miopen.clock_fields import lift, lift_fast
from miotui.samplegen import SampleSpec, generate_text

CONV = ("./bin/MIOpenDriver conv -n {n} -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 "
        "-F 1 -t 1")


def blind(path: str, cuts: list[int]) -> Catalog:
    """The ranges without the repair: no warm-up, no seam check, just merged."""
    catalog = Catalog()
    ranges = ranges_at(path, cuts, lookback=0)
    for i, rng in enumerate(ranges):
        catalog.merge(pickle.loads(pickle.dumps(decode_range(path, rng, i == len(ranges) - 1).catalog)))
    return catalog


def seam_case(tmp_path: Path, unit: str, marker: str, times: int = 16) -> tuple[str, int]:
    """``unit`` repeated ``times`` times into a file, and the byte offset of the line that
    starts with ``marker`` in the last repetition but two (the seam)."""
    path = tmp_path / "case.log"
    text = unit * times
    path.write_text(text, encoding="utf-8")
    base = len(unit.encode()) * (times - 3)
    at = unit.index(marker)
    return str(path), base + len(unit[:at].encode())


def check_seam(path: str, cut: int, lookback: int) -> None:
    serial = decode_paths([path])
    repaired = decode_ranges_here(path, ranges_at(path, [cut], lookback))
    assert repaired is not None, "the warm-up did not re-establish the state at the seam"
    assert_same(serial, repaired)
    assert (state(blind(path, [cut])), outputs(blind(path, [cut]))) != (state(serial), outputs(serial)), \
        "the case does not cross the seam"
    assert decode_ranges_here(path, ranges_at(path, [cut], lookback=0)) is None, "the seam check missed it"


def test_an_api_block_cut_in_two(tmp_path):
    unit = Path(REAL_LOGS[0]).read_text(encoding="utf-8")
    assert "miopenConvolutionBackwardData" in unit
    path, cut = seam_case(tmp_path, unit, "dyDesc = 100, 32, 30, 30")
    check_seam(path, cut, lookback=12 * len(unit))


def test_a_find_whose_layer_is_named_in_the_next_range(tmp_path):
    unit = ("MIOpen(HIP): Info [FindConvBwdWeightsAlgorithm] requestAlgoCount = 1, workspace = 0\n"
            "MIOpen(HIP): Info [FindRecordUnsafe] Looking for key: "
            "512-28-28-3x3-512-28-28-64-1x1-1x1-1x1-0-NCHW-FP32-W\n"
            f"MIOpen(HIP): Command [LogCmdConvolution] {CONV.format(n=2)}\n")
    path, cut = seam_case(tmp_path, unit, "MIOpen(HIP): Info [FindRecordUnsafe]")
    check_seam(path, cut, lookback=12 * len(unit))


def test_a_threads_block_open_across_the_seam_while_another_thread_logs(tmp_path):
    head = "{tid} MIOpen(HIP): miopenStatus_t miopenConvolutionForward(miopenHandle_t, ...){{\n"
    params = ("{tid} MIOpen(HIP): \txDesc = 2, 3, 8, 8\n"
              "{tid} MIOpen(HIP): \twDesc = 4, 3, 3, 3\n"
              "{tid} MIOpen(HIP): \tconvDesc = 1, 1, 1, 1, 1, 1\n"
              "{tid} MIOpen(HIP): \tyDesc = 2, 4, 8, 8\n"
              "{tid} MIOpen(HIP): }}\n")
    unit = (head.format(tid=5000) + head.format(tid=5001) + params.format(tid=5001)
            + f"5001 MIOpen(HIP): Command [LogCmdConvolution] {CONV.format(n=2)}\n" + params.format(tid=5000))
    path, cut = seam_case(tmp_path, unit, "5000 MIOpen(HIP): \txDesc")
    check_seam(path, cut, lookback=12 * len(unit))


def test_a_driver_command_whose_output_is_in_the_next_range(tmp_path):
    """Typed MIOpenDriver commands and their output: not trusted in ranges (a text line the
    tracker ignored once is skipped while the line cache holds it, so the result depends on
    the cache's whole history), decoded serially; merged blindly the seam loses the run."""
    unit = Path(next(p for p in REAL_LOGS if "108_" in p)).read_text(encoding="utf-8")
    if not unit.endswith("\n"):
        unit += "\n"
    path, cut = seam_case(tmp_path, unit, "Forward Convolution Verifies")
    serial = decode_paths([path])
    assert state(blind(path, [cut])) != state(serial)
    assert decode_ranges_here(path, ranges_at(path, [cut], 12 * len(unit))) is None
    assert_same(serial, parallel.decode_files([path]))


def test_a_driver_log_whose_ignored_line_comes_back(tmp_path):
    """Found by the test below: a fence line the driver tracker ignored at the top is
    skipped (cached) when it comes back after a command, so the command is recorded two
    lines later; a warm-up that has not met it would record it at the fence."""
    path = next(p for p in REAL_LOGS if "135_" in p)
    assert decode_ranges_here(path, ranges_at(path, [1], 200)) is None


def test_the_clock_of_a_timed_log(tmp_path):
    """A timed log's clock is the sum of every time field before: a range after a warm-up
    does not know it.  A compile in the next range asks for it (its moment on the startup
    timeline): that range is not trusted; merged without that check, the moment is wrong."""
    unit = "".join(f"MIOpen(HIP) {0.25 * i:7.3f}: Command [LogCmdConvolution] {CONV.format(n=i)}\n"
                   for i in range(1, 5))
    compile_lines = ('MIOpen(HIP)   0.010: Info2 [LoadBinary] Unable to load binary for: "a.cpp.o"; args: -DX=1\n'
                     'MIOpen(HIP) 350.100: Info2 [SaveBinary] Saving binary for: "a.cpp.o"; args: -DX=1\n')
    path = tmp_path / "timed.log"
    path.write_text(unit * 16 + compile_lines + unit * 2, encoding="utf-8")
    cut = len(unit.encode()) * 12
    ranges = ranges_at(str(path), [cut], 4 * len(unit))
    results = [decode_range(str(path), rng, i == 1) for i, rng in enumerate(ranges)]
    assert results[0].exit == results[1].entry      # the states agree but for the clock
    assert results[1].clock_asked
    assert decode_ranges_here(str(path), ranges) is None
    unchecked = Catalog()
    for result in results:
        unchecked.merge(result.catalog)
    serial = decode_paths([str(path)])
    assert serial.startup.timeline() and unchecked.startup.timeline() != serial.startup.timeline()


# ---------------------------------------------------------------------- any split


def logs_texts() -> list[str]:
    texts = [Path(p).read_text(encoding="utf-8", errors="replace") for p in SAMPLE_LOGS[:4]]
    texts += [generate_text(SampleSpec(format=f, size=60_000, seed=i, elapsed=False))
              for i, f in enumerate(("command", "trace55", "trace2x", "info", "trace2018"))]
    texts.append(generate_text(SampleSpec(format="command", size=60_000, seed=9, elapsed=True)))   # timed
    texts.append(generate_text(SampleSpec(format="info", size=80_000, seed=10, startup=True)))   # facts, timed
    return texts


LOG_TEXTS = logs_texts()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_split_gives_the_serial_result_or_none(tmp_path_factory, data):
    """Bundled, real and generated logs (repeated, so warm-ups can work) cut at any bytes
    into ranges with any warm-up: the merge is the serial catalog, or not trusted (None)."""
    names = data.draw(st.lists(st.sampled_from(REAL_LOGS), max_size=4))
    pieces = [Path(n).read_text(encoding="utf-8", errors="replace") for n in names]
    pieces += data.draw(st.lists(st.sampled_from(LOG_TEXTS), max_size=2))
    pieces.append(data.draw(st.sampled_from(["", UNDECODABLE])))
    text = "".join(pieces) * data.draw(st.integers(1, 3))
    path = tmp_path_factory.mktemp("split") / "log.log"
    path.write_text(text, encoding="utf-8")
    size = path.stat().st_size
    cuts = data.draw(st.lists(st.integers(0, max(0, size)), min_size=1, max_size=3))
    lookback = data.draw(st.sampled_from([0, 200, 5000, size]))
    result = decode_ranges_here(str(path), ranges_at(str(path), cuts, lookback))
    event("ranges trusted" if result is not None else "decoded serially")
    if result is not None:
        assert_same(decode_paths([str(path)]), result)


@pytest.mark.parametrize(("fmt", "elapsed"), [("command", False), ("command", True), ("info", False),
                                             ("trace55", False)])
def test_a_training_log_splits_at_any_line(tmp_path, fmt, elapsed):
    """Where the log repeats (a training log's iterations), the ranges are trusted, wherever
    the seams fall: the check is not what makes the test above pass.  Timed too: no fact
    after the first iteration asks for the clock."""
    text = generate_text(SampleSpec(format=fmt, iterations=6, seed=3, elapsed=elapsed))
    path = tmp_path / "train.log"
    path.write_text(text, encoding="utf-8")
    serial = decode_paths([str(path)])
    size = path.stat().st_size
    for cuts in ([size // 2], [size // 3, 2 * size // 3], [size * 3 // 5 + 17, size * 4 // 5 + 1]):
        result = decode_ranges_here(str(path), ranges_at(str(path), cuts, lookback=size // 4))
        assert result is not None
        assert_same(serial, result)


# ---------------------------------------------------------------------- pieces


def test_line_ends_counted_as_the_scanner_counts_them(tmp_path):
    path = tmp_path / "ends.log"
    path.write_bytes(b"a\nb\r\nc\rd\r\r\ne\n")
    serial = decode_paths([str(path)])
    with open(path, "rb") as fh:
        assert count_line_ends(fh, 0, path.stat().st_size) == serial.lines == 6
        assert line_start_at_or_after(fh, 3) == 5
        assert line_start_at_or_after(fh, 0) == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r", b"\r\n"] + [b"\r"] * 3 + [b"\r\n"] * 3), max_size=300),
       st.integers(1, 400), st.sampled_from([0, 2, 1024]))
def test_line_ends_counted_across_any_chunking(parts, chunk, few_cr):
    """A "\\r\\n" cut between two chunks is one line end, each lone "\\r" one, whether a
    chunk's "\\r"s are looked at one by one or (past ``few_cr``) counted."""
    import io
    import re
    data = b"".join(parts)
    expected = len(re.findall(rb"\r\n|\r|\n", data))
    assert count_line_ends(io.BytesIO(data), 0, len(data), chunk, few_cr) == expected


def test_progress_bars_read_as_the_same_lines_with_plain_line_ends(tmp_path):
    """A log with tqdm-style "\\r" progress bars (and a "\\r\\n" among them) decodes as the
    same log with every line end "\\n", each "\\r"-ended piece one line (the benchmark's
    Command-line log has such bars in every chunk; its line count is what the ranges'
    line numbers rest on)."""
    import re
    text = generate_text(SampleSpec(format="command", iterations=3, seed=7, elapsed=False))
    lines = re.split(r"\r\n|\r|\n", text.rstrip("\n"))
    ends = ["\r" if i % 7 == 3 and lines[i + 1:i + 2] != [""] else "\r\n" if i % 53 == 5 else "\n"
            for i in range(len(lines))]   # (a "\r" before an empty line's "\n" would be one "\r\n")
    raw = "".join(line + end for line, end in zip(lines, ends, strict=True))
    plain = "".join(line + "\n" for line in lines)
    assert "\r" in raw and "\r\n" in raw
    mixed, flat = tmp_path / "mixed.log", tmp_path / "flat.log"
    mixed.write_text(raw, encoding="utf-8", newline="")
    flat.write_text(plain, encoding="utf-8", newline="")
    one, two = decode_paths([str(mixed)]), decode_paths([str(flat)])
    assert one.lines == two.lines == len(lines) and one.bytes == two.bytes + raw.count("\r\n")
    seen, expected = state(one), state(two)
    for counts in (seen, expected):
        counts.pop("counts")
    assert seen == expected and len(one) == len(two) > 0


def test_a_cached_block_call_holds_its_rows_own_problem():
    """A found block's plain call, cached, holds the very problem object its catalog row is
    keyed by (``BlockCache.share_problem``), so the row is found by identity and not by
    comparing every field (the speed of an API trace); the catalog is the same either way."""
    from miotui.formats.miopen.scan import LogScanner
    text = generate_text(SampleSpec(format="trace55", iterations=3, seed=3, elapsed=False))
    catalog = Catalog()
    scanner = LogScanner(catalog)
    scanner.feed(text.encode())
    scanner.finish()
    plain = [entry.events[0] for entry in scanner.block_cache.entries.values() if entry and entry.plain]
    assert plain
    for sighting in plain:
        row = catalog.existing_row(sighting.problem)
        assert row is not None and Catalog.problem_of(row) is sighting.problem


def test_worker_processes_through_the_cli(tmp_path, capsys, monkeypatch):
    text = generate_text(SampleSpec(format="command", iterations=4, seed=5, elapsed=False))
    path = tmp_path / "big.log"
    path.write_text(text, encoding="utf-8")
    size = path.stat().st_size
    monkeypatch.setattr("miotui.decoding.ranges.MIN_RANGE_BYTES", size // 3)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert range_workers(str(path)) == 2
    gz = tmp_path / "big.log.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    monkeypatch.setattr("miotui.decoding.ranges.MIN_RANGE_BYTES", 1)
    assert range_workers(str(gz)) == 1   # a compressed stream is read from its start
    monkeypatch.setattr("miotui.decoding.ranges.MIN_RANGE_BYTES", size // 3)
    parts = decode_file_in_ranges(str(path), 2, lookback=size // 4, pool_context=parallel._context())
    assert parts is not None
    assert_same(decode_paths([str(path)]), parts)
    for fmt in ("json", "table", "csv", "driver"):
        assert decode_main([str(path), "--format", fmt, "--jobs", "1"]) == 0
        one = capsys.readouterr().out
        assert decode_main([str(path), "--format", fmt]) == 0
        two = capsys.readouterr().out
        if fmt == "json":
            one, two = (t.split('"seconds"')[0] for t in (one, two))
        assert one == two


def test_only_a_plain_utf8_miopen_log_is_split(tmp_path, monkeypatch):
    """A cuDNN log has a scanner of its own and a UTF-16 log is converted before it is
    scanned (its byte offsets are not the text's): both are decoded whole."""
    monkeypatch.setattr("miotui.decoding.ranges.MIN_RANGE_BYTES", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    text = generate_text(SampleSpec(format="command", iterations=2, seed=5, elapsed=False))
    plain, utf16 = tmp_path / "plain.log", tmp_path / "utf16.log"
    plain.write_text(text, encoding="utf-8")
    utf16.write_bytes(text.encode("utf-16"))
    cudnn = next((ROOT / "tests" / "data" / "cudnn" / "public").glob("*.log"))
    assert range_workers(str(plain)) == 2
    assert range_workers(str(utf16)) == 1
    assert range_workers(str(cudnn)) == 1


# ---------------------------------------------------------------------- today's prefix


def test_the_bare_prefix_takes_the_fast_path():
    """ROCm 7's ``MIOpen:`` (no ``(HIP)``) with the elapsed field, Command lines naming
    ``MIOpenDriver``: the fast split, the same text and fields as the general path."""
    hip = "".join(f"MIOpen(HIP) {i:7.3f}: Command [LogCmdConvolution] {CONV.format(n=i)}\n" for i in range(1, 9))
    for text in (hip, hip.replace("MIOpen(HIP)", "MIOpen"), hip.replace("MIOpen(HIP)", "MIOpen(OpenCL)")):
        fast = lift_fast(text)
        assert fast is not None
        general = lift(text + "MIOpen(HIP)   1.000: x\n")   # two spellings: the general path
        assert general[0].startswith(fast[0])
        assert [float(f) for f in general[1].fields[:-1]] == [float(f) for f in fast[1].fields]
        assert "MIOpenDriver conv" in fast[0]


@pytest.mark.parametrize("fmt", ["command", "info"])
def test_a_log_replayed_by_stretches_splits_the_same(tmp_path, fmt):
    """A Command-line or level-6 log big enough that each range replays its iterations by
    their text (``formats.miopen.stretches``: a range's warm-up starts a fresh cache): the
    ranges give the serial catalog, and the serial scan did take that path."""
    from miotui.formats.miopen.scan import LogScanner
    text = generate_text(SampleSpec(format=fmt, size=6_000_000, seed=5))
    path = tmp_path / "train.log"
    path.write_text(text, encoding="utf-8")
    serial = decode_paths([str(path)])
    scanner = LogScanner(Catalog())
    data = path.read_bytes()
    for pos in range(0, len(data), 1 << 20):
        scanner.feed(data[pos:pos + (1 << 20)])
    assert scanner.stretches.hits > 50
    size = len(data)
    for cuts in ([size // 2], [size // 3, 2 * size // 3 + 11]):
        result = decode_ranges_here(str(path), ranges_at(str(path), cuts, lookback=1 << 20))
        assert result is not None
        assert_same(serial, result)

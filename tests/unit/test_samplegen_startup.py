"""The sample generator's first-iteration form (``SampleSpec.startup``, what ``miotui --demo``
replays): the lines it writes have MIOpen's shapes (``tests/unit/test_startup.py`` pins those), and
``miotui decode`` of it gives back what was generated: the counts of compiles, cache hits,
searches and Find-Db misses, their durations from the elapsed-time field, and each layer's
execution-log time."""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections import Counter

import pytest

from miotui import samplegen
from miotui.catalog import Catalog
from miotui.decoding.whole import decode_stream
from miotui.formats.miopen.startup_lines import read_startup_line
from miotui.samplegen import DEMO_SPEC, SampleSpec, generate_text, ground_truth
from miotui.views.timing import layer_times

LEVEL = re.compile(r"^MIOpen\(HIP\) *(?P<ms>\d+\.\d{3}): (?P<level>Info2?|Warning|Command) \[(?P<func>[^\]]*)\] "
                   r"(?P<msg>.*)$")


def decode(text: str) -> Catalog:
    import io
    catalog = Catalog()
    decode_stream(catalog, io.BytesIO(text.encode()))
    return catalog


@pytest.fixture(scope="module")
def demo_text() -> str:
    return generate_text(DEMO_SPEC)


def test_the_demo_is_the_first_iteration_form():
    assert DEMO_SPEC.startup and DEMO_SPEC.use_elapsed and DEMO_SPEC.level == 6


def test_the_form_is_info_only_and_leaves_other_logs_alone(tmp_path):
    with pytest.raises(ValueError, match="info format only"):
        SampleSpec(format="command", startup=True)
    plain = generate_text(SampleSpec(format="info", iterations=1))
    assert "Searching the best solution" not in plain and "LogConvolutionExecution" not in plain
    out = tmp_path / "first.log"
    assert samplegen.main(["--format", "info", "--startup", "--iterations", "1", "--quiet", "--out", str(out)]) == 0
    # bytes: the log has a progress bar's bare CR, which read_text() would turn into a newline
    assert out.read_bytes() == generate_text(SampleSpec(format="info", iterations=1, startup=True)).encode()


def test_writing_to_a_fifo_writes_into_it_and_leaves_it_a_fifo(tmp_path):
    """Regression: the log was written beside the path and renamed onto it, so ``--out
    /dev/null`` run as root replaced the device with a regular file."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = bytearray()
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

    written_all = threading.Event()

    def drain() -> None:
        # a FIFO with no writer reads as end of file: the end is only the end once the writer
        # is done (before it opens the FIFO, this thread would otherwise stop and leave it
        # blocked on a full pipe)
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                time.sleep(0.005)
                continue
            if not chunk:
                if written_all.is_set():
                    return
                time.sleep(0.005)
                continue
            got.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    spec = SampleSpec(format="command", iterations=1)
    written = samplegen.write_log(spec, str(fifo))
    written_all.set()
    reader.join(10)
    os.close(fd)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO is still a FIFO"
    assert bytes(got).decode() == generate_text(spec) and written == len(got)


def test_every_miopen_line_has_the_elapsed_field_and_the_startup_lines_read_as_facts(demo_text):
    kinds: Counter = Counter()
    for line in demo_text.splitlines():
        if not line.startswith("MIOpen"):
            continue
        m = LEVEL.match(line)
        assert m is not None, line
        fact = read_startup_line(m.group("func"), m.group("msg"))
        if fact is not None:
            kinds[fact.kind] += 1
    # every kernel is either loaded from the cache or compiled (a miss, then its save)
    assert kinds["cache_miss"] == kinds["saved"] > 20 and kinds["kernel_from_cache"] > 10
    assert kinds["search_started"] == kinds["search_done"] == 4 and kinds["search_progress"] > 20
    assert kinds["find_db_miss"] == 68 and kinds["solver_measured"] >= 2 * 68
    assert kinds["setting"] == 1


def _elapsed_before(text: str, what: str) -> float:
    """The sum of the elapsed fields of the lines that contain ``what``."""
    return sum(float(m.group("ms")) for m in map(LEVEL.match, text.splitlines()) if m and what in m.group("msg"))


def test_decode_gives_back_the_counts_and_durations_that_were_written(demo_text):
    catalog = decode(demo_text)
    totals = catalog.startup.totals()
    assert totals.kernels_compiled == demo_text.count("Saving binary for:")
    assert totals.kernels_from_cache == demo_text.count("Successfully loaded binary for:")
    assert (totals.searches, totals.find_db_misses, totals.unattributed, totals.timed) == (4, 68, 0, True)
    assert dict(totals.settings) == {"MIOPEN_FIND_MODE": "NORMAL(1)"}
    # a compile spans its Unable-to-load line to its Saving line: the Saving line's elapsed field
    assert totals.compile_ms == pytest.approx(_elapsed_before(demo_text, "Saving binary for:"), rel=1e-6)
    # a search spans its Searching line to its Done line: the heartbeats' and the Done line's fields
    tuning = _elapsed_before(demo_text, "ETA:") + _elapsed_before(demo_text, "Done: ")
    assert totals.tuning_ms == pytest.approx(tuning, rel=1e-6)
    assert totals.searching == (), "every search of a complete log has ended"
    layers = catalog.layers()
    searched = [layer for layer in layers if layer.startup.tuning_ms is not None]
    assert len(searched) == 4 and all(layer.problem.op == "conv" for layer in searched)
    assert all(layer.startup.find_db == "miss" for layer in layers if layer.finds)


def test_each_convolution_is_timed_by_its_execution_lines(demo_text):
    catalog = decode(demo_text)
    layers = catalog.layers()
    times = layer_times(layers)
    convs = [layer for layer in layers if layer.problem.op == "conv"]
    assert convs and all(times[layer.id].source == "execution_log" for layer in convs)
    for layer in convs:   # the execution lines carry the time the layer's Find chose
        assert times[layer.id].per_call_ms == pytest.approx(float(layer.annotation("solver_time_ms")))
    assert sum(t.share for t in times.values() if t.share is not None) == pytest.approx(1.0)
    tuned = [layer for layer in convs if layer.startup.tuning_ms is not None]
    assert all(layer.annotation("perf_config") for layer in tuned), "the tuned config is what later runs report"


def test_executions_are_the_ground_truth(demo_text):
    """At level 6 a call logs its Command line, its LogConvolutionExecution line and its
    invoker line: one execution."""
    catalog = decode(demo_text)
    truth = ground_truth(DEMO_SPEC)
    got: Counter = Counter()
    for layer in catalog.layers():
        got[(layer.problem.op, layer.problem.direction)] += layer.executions
    want: Counter = Counter()
    for op, n in truth.executions.items():
        want[(op.op, op.direction)] += n
    assert +got == +want


def test_an_untimed_first_iteration_counts_without_durations():
    text = generate_text(SampleSpec(format="info", iterations=1, startup=True, elapsed=False, inference=False))
    totals = decode(text).startup.totals()
    assert totals.kernels_compiled > 20 and totals.searches == 4
    assert (totals.compile_ms, totals.tuning_ms, totals.timed) == (None, None, False)

"""Pilot tests of the app on cuDNN logs: a cuDNN log followed while it grows, the status
bar naming the format, the detail showing cuDNN's facts, and the empty state saying which
``CUDNN_*`` variables to set."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest
from pilot_helpers import SIZE, app_for, plain, status_text, table, wait_until

from miotui.catalog import Catalog
from miotui.formats.cudnn import TRANSLATION, CudnnScanner
from miotui.screens.detail import DetailScreen

DATA = Path(__file__).parents[1] / "data" / "cudnn" / "h100"


def variety_v7() -> bytes:
    """PyTorch's legacy path on an H100: 4 conv layers with engines, TF32, warnings."""
    return lzma.decompress((DATA / "small_variety_v7.log.xz").read_bytes())


def layers_while_open(data: bytes) -> int:
    """Layers of the log so far (its last record stays open while the log may grow)."""
    scanner = CudnnScanner(Catalog())
    scanner.feed(data)
    return len(scanner.catalog.layers())


def empty_state(app) -> str:
    return plain(app.layers_screen.query_one("#empty"))


async def test_a_growing_cudnn_log_is_followed_and_the_bar_names_its_format(tmp_path):
    data = variety_v7()
    cut = data.index(b"function cudnnConvolutionBackwardData()")     # the forward convs only, first
    cut = data.rindex(b"\n", 0, cut) + 1
    log = tmp_path / "cudnn.log"
    log.write_bytes(data[:cut])
    app = app_for([log], follow=True)
    async with app.run_test(size=SIZE) as pilot:
        t = table(app)
        first = layers_while_open(data[:cut])
        assert 0 < first < layers_while_open(data)
        await wait_until(pilot, lambda: len(t.model.rows) == first, what=lambda: f"{len(t.model.rows)} rows")
        await wait_until(pilot, lambda: "cuDNN" in status_text(app), what=lambda: status_text(app))
        assert "MIOpen" not in status_text(app)
        with open(log, "ab") as f:
            for at in range(cut, len(data), 4096):
                f.write(data[at:at + 4096])
                f.flush()
        await wait_until(pilot, lambda: len(t.model.rows) == layers_while_open(data),
                         what=lambda: f"{len(t.model.rows)} rows")
        assert all(r["op"] == "conv" for r in (t.row_text(i) for i in t.model.view))


async def test_the_detail_shows_cudnn_facts(tmp_path):
    log = tmp_path / "cudnn.log"
    log.write_bytes(variety_v7())
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        t = table(app)
        await wait_until(pilot, lambda: len(t.model.rows) == 4 and app.last_poll is not None
                         and app.last_poll.finished, what="4 layers read")
        snap = next(app.snapshot(i) for i in t.model.rows if dict(app.snapshot(i).annotations).get("tf32"))
        t.move_cursor_to(snap.index)
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        await wait_until(pilot, lambda: "cuDNN's choice" in " ".join(plain(s) for s in app.screen.query("Static")),
                         what="the detail")
        text = " ".join(plain(s) for s in app.screen.query("Static"))
        notes = dict(snap.annotations)
        for label, name in (("engine (knobs)", "solver"), ("TF32", "tf32"), ("compute type", "compute_type"),
                            ("math type", "math_type"), ("warnings", "cudnn_warning")):
            assert label in text, label
            assert notes[name][:20] in text, name
        assert "MIOpen's choice" not in text
        assert TRANSLATION in text and snap.driver_command in text
        assert "a cuDNN log holds no GPU time" in text and "MIOPEN_LOG_LEVEL" not in text


@pytest.mark.parametrize("kind,wanted,unwanted", [("cuDNN", "CUDNN_LOGLEVEL_DBG=3", "MIOPEN_"),
                                                    ("MIOpen", "MIOPEN_ENABLE_LOGGING_CMD=1", "CUDNN_")])
async def test_the_empty_state_names_the_variables_of_the_log_format(tmp_path, kind, wanted, unwanted):
    log = tmp_path / "job.log"
    if kind == "cuDNN":
        data = lzma.decompress((DATA / "small_ops.log.xz").read_bytes())
        log.write_bytes(data[:data.index(b"function cudnnCreateTensorDescriptor()")])   # version, handle: no layer
    else:
        log.write_bytes(b"MIOpen(HIP): Info [get_device_name] Raw device name: gfx942\n")
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: wanted in empty_state(app), what=lambda: empty_state(app))
        assert unwanted not in empty_state(app)
        assert f"No {kind} layer" in empty_state(app)


async def test_the_empty_state_of_a_log_of_no_known_format_names_both(tmp_path):
    log = tmp_path / "empty.log"
    log.write_bytes(b"")
    app = app_for([log])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "No layer in 0 lines" in empty_state(app), what=lambda: empty_state(app))
        assert "MIOPEN_ENABLE_LOGGING_CMD=1" in empty_state(app) and "CUDNN_LOGLEVEL_DBG=3" in empty_state(app)

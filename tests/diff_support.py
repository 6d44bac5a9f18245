"""A changed copy of the demo log, shared by the diff's headless tests (tests/unit/test_diff.py)
and the compare app's Pilot tests (tests/app/test_diff_app.py)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "miotui" / "samples" / "resnet50_demo.log"
#: the solver the changed layer is said to have run
SLOW = "ConvDirectNaiveConvFwd"


def with_one_layer_changed(tmp_path: Path) -> tuple[Path, str, float]:
    """A copy of the demo log where one GemmFwd1x1_0_1 convolution ran the naive solver at ten
    times the time; (the copy, the old time text, the old time)."""
    from miotui.decoding.whole import decode_paths
    text = DEMO.read_text()
    layers = decode_paths([str(DEMO)]).layers()
    times = [layer.annotation("find_db_time_ms") for layer in layers]
    for layer in sorted(layers, key=lambda s: -s.executions):
        t = layer.annotation("find_db_time_ms")
        if layer.annotation("solver") != "GemmFwd1x1_0_1" or not t or layer.executions < 2:
            continue
        lines = [ln for ln in text.splitlines() if t in ln]
        # the time names this layer alone, on lines of its solver (or its algorithm's Find result)
        if all("GemmFwd1x1_0_1" in ln or "miopenConvolutionFwdAlgoGEMM" in ln for ln in lines) \
                and times.count(t) == 1:
            break
    else:
        raise AssertionError("no GemmFwd1x1_0_1 layer with a time of its own in the demo log")
    slow = f"{float(t) * 10:.6g}"
    out = []
    for ln in text.splitlines(keepends=True):
        if t in ln:
            ln = ln.replace(t, slow).replace("GemmFwd1x1_0_1", SLOW)
        out.append(ln)
    copy = tmp_path / "slower.log"
    copy.write_text("".join(out))
    return copy, t, float(t)

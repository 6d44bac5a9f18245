#!/usr/bin/env python3
"""App responsiveness benchmark (run by hand): the issue's speed targets, measured with Pilot.

What is measured, and how:

``help``        wall time of ``miotui --help`` in a fresh process (best of 5).  Target < 0.3 s.
``first paint`` a fresh process: from interpreter start (before any import) to the end of
                the layers screen's first refresh, and to the first rows on screen.  Target < 1 s.
``follow``      a separate *writer process* appends MIOpen API-trace text (``trace55``, the
                most verbose format) to a log at 20 MB/s while the app follows it.  Every
                0.5 s the writer adds a line with a never-seen layer and records when it was
                written; the benchmark records when that layer reaches the table (the UI
                thread applies it).  Meanwhile keys are pressed (``down``/``up``) and the time
                from the key event to the table's next repaint is taken.  Targets: a new layer
                within 250 ms, a key answered within 100 ms.
``10k``         a log with 10 000 unique layers (read whole): key-to-repaint time of scrolling
                (down, pagedown) and of filtering (typing ``op:conv n:>=8`` one key at a time,
                each key re-filters 10 000 rows).  Target < 100 ms per key.

Keys are sent like a terminal sends them (``driver.send_message(Key)``), not with
``pilot.press`` (which adds its own waits); a repaint is seen through a wrapper around
``LayerTable.render_line`` that notes the time of each call.

    python benchmarks/bench_app.py                 # everything
    python benchmarks/bench_app.py --only follow --rate 20 --seconds 8
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

T_START = time.perf_counter()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
if "--keys-child" in sys.argv:      # the miotui under test is the tree named (an older checkout, say)
    sys.path.insert(0, os.path.abspath(sys.argv[sys.argv.index("--keys-child") + 1]))

SIZE = (160, 45)
MARKER = ("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {n} -c 8 -H 16 -W 16 -k 8 -y 3 "
          "-x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def summary(name: str, ms: list[float]) -> dict:
    return {"what": name, "n": len(ms), "median_ms": round(statistics.median(ms), 1) if ms else None,
            "p95_ms": round(pct(ms, 0.95), 1) if ms else None, "max_ms": round(max(ms), 1) if ms else None}


# ---------------------------------------------------------------------- instrumentation

class RenderClock:
    """Times of LayerTable repaints (render_line calls)."""

    def __init__(self) -> None:
        from miotui.widgets.layer_table import LayerTable
        self.last = 0.0
        original = LayerTable.render_line
        clock = self

        def render_line(table, y):  # type: ignore[no-untyped-def]
            clock.last = time.perf_counter()
            return original(table, y)

        LayerTable.render_line = render_line  # type: ignore[method-assign]


async def key_latency(app, key: str, done, clock: RenderClock, timeout: float = 2.0,
                      char: str | None = None) -> float:
    """Send ``key`` like a terminal; ms until ``done()`` holds and the table repainted after it."""
    from textual import events
    char = char if char is not None else (key if len(key) == 1 else None)
    t0 = time.perf_counter()
    ev = events.Key(key, char)
    ev.set_sender(app)
    app._driver.send_message(ev)
    while True:
        await asyncio.sleep(0.0005)
        now = time.perf_counter()
        if done() and clock.last > t0:
            return (clock.last - t0) * 1000
        if now - t0 > timeout:
            return (now - t0) * 1000


# ---------------------------------------------------------------------- --help and first paint

def bench_help() -> dict:
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "miotui", "--help"], capture_output=True, check=True, cwd=ROOT)
        times.append((time.perf_counter() - t0) * 1000)
    return {"what": "miotui --help (fresh process)", "best_ms": round(min(times), 1),
            "median_ms": round(statistics.median(times), 1)}


def first_paint_child(path: str) -> None:
    """Runs in a fresh process: T_START was taken before miotui or textual was imported."""
    from miotui.app import MiotuiApp
    imported = time.perf_counter()
    marks: dict[str, float] = {}
    original = MiotuiApp.start_background

    def start_background(self):  # called after the layers screen's first refresh
        marks.setdefault("paint", time.perf_counter())
        original(self)

    MiotuiApp.start_background = start_background  # type: ignore[method-assign]
    from miotui.screens.layers import LayersScreen
    applied = LayersScreen.apply_snapshots

    def apply_snapshots(self, snapshots):
        applied(self, snapshots)
        marks.setdefault("applied", time.perf_counter())

    LayersScreen.apply_snapshots = apply_snapshots  # type: ignore[method-assign]

    async def run() -> None:
        app = MiotuiApp([path], find_job=False)
        async with app.run_test(size=SIZE) as pilot:
            while not app.layers_screen.table.model.rows:
                await asyncio.sleep(0.001)
            await pilot.pause()
            marks["rows"] = time.perf_counter()

    asyncio.run(run())
    print(json.dumps({"import_ms": (imported - T_START) * 1000, "paint_ms": (marks["paint"] - T_START) * 1000,
                      "rows_ms": (marks["applied"] - T_START) * 1000}))


def bench_first_paint(tmp: str) -> dict:
    path = os.path.join(tmp, "demo.log")
    from miotui.demo import sample_path
    with open(sample_path(), "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())
    runs = []
    for _ in range(3):
        out = subprocess.run([sys.executable, __file__, "--first-paint-child", path], capture_output=True,
                             text=True, check=True, cwd=ROOT)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    best = min(runs, key=lambda r: r["paint_ms"])
    return {"what": "first paint (fresh process, from interpreter start)",
            "imports_ms": round(best["import_ms"], 1), "first_paint_ms": round(best["paint_ms"], 1),
            "first_rows_ms": round(best["rows_ms"], 1)}


# ---------------------------------------------------------------------- live follow at 20 MB/s

def writer_child(path: str, rate_mb: float, seconds: float, marker_every: float) -> None:
    """A training job: appends API-trace text at ``rate_mb`` MB/s, plus a new layer now and then."""
    from miotui.samplegen import SampleSpec, iter_chunks
    text = "".join(iter_chunks(SampleSpec(format="trace55", size=24 << 20, seed=1))).encode()
    # Cut points just after an API block's closing brace: a marker line never lands inside a block.
    slice_bytes = int(rate_mb * (1 << 20) * 0.01)   # every 10 ms
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    pos = 0
    start = time.perf_counter()
    next_marker = start + 1.0
    marker = 0
    written = 0
    print("ready", flush=True)
    while True:
        now = time.perf_counter()
        if now - start > seconds:
            break
        due = int((now - start) * rate_mb * (1 << 20))
        while written < due:
            end = text.find(b"}\n", pos + slice_bytes)
            if end < 0:
                pos = 0
                continue
            end += 2
            os.write(fd, text[pos:end])
            written += end - pos
            pos = end
        if now >= next_marker:
            marker += 1
            os.write(fd, MARKER.format(n=1000 + marker).encode())
            print(f"marker {1000 + marker} {time.time():.6f}", flush=True)
            next_marker += marker_every
        time.sleep(0.005)
    os.close(fd)
    print(f"done {written}", flush=True)


def bench_follow(tmp: str, rate: float, seconds: float) -> list[dict]:
    from miotui.app import MiotuiApp
    from miotui.screens.layers import LayersScreen
    clock = RenderClock()
    path = os.path.join(tmp, "live.log")
    open(path, "wb").close()
    seen: dict[int, float] = {}
    original = LayersScreen.apply_snapshots

    def apply_snapshots(self, snapshots):  # UI thread: the layer reaches the table here
        original(self, snapshots)
        now = time.time()
        for s in snapshots:
            if s.problem.n >= 1000 and s.problem.n not in seen:
                seen[s.problem.n] = now

    LayersScreen.apply_snapshots = apply_snapshots  # type: ignore[method-assign]
    keys: list[float] = []
    stats: dict = {}

    async def run() -> None:
        writer = subprocess.Popen([sys.executable, __file__, "--writer-child", path, str(rate), str(seconds)],
                                  stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
        app = MiotuiApp([path], follow=True, find_job=False)
        async with app.run_test(size=SIZE) as pilot:
            table = app.layers_screen.table
            t_end = time.perf_counter() + seconds
            await asyncio.sleep(1.0)
            i = 0
            while time.perf_counter() < t_end - 0.3:
                key = "up" if i % 2 == 0 else "down"
                before = table.cursor_id
                keys.append(await key_latency(app, key, lambda b=before: table.cursor_id != b or
                                              len(table.model.view) < 2, clock))
                i += 1
                await asyncio.sleep(0.05)
            await pilot.press("f")
            out, _ = await asyncio.get_running_loop().run_in_executor(None, writer.communicate)
            await pilot.pause(0.5)
            stats["lines"] = app.catalog.lines
            stats["bytes"] = app.catalog.bytes
            stats["markers"] = [ln.split() for ln in out.splitlines() if ln.startswith("marker")]
        LayersScreen.apply_snapshots = original  # type: ignore[method-assign]

    asyncio.run(run())
    latencies = [(seen[int(n)] - float(t)) * 1000 for _, n, t in stats["markers"] if int(n) in seen]
    missing = [n for _, n, _ in stats["markers"] if int(n) not in seen]
    return [
        {**summary(f"follow {rate:g} MB/s API trace: new layer -> table", latencies), "missing": missing,
         "MB_read": round(stats["bytes"] / (1 << 20), 1), "lines_read": stats["lines"]},
        summary(f"follow {rate:g} MB/s API trace: key -> repaint", keys),
    ]


# ---------------------------------------------------------------------- 10 000 unique layers

def ten_k_log(path: str, count: int = 10_000) -> None:
    lines = []
    i = 0
    n_values, c_values, h_values = range(1, 21), (3, 8, 16, 32, 64, 96, 128, 256, 512, 1024), range(7, 64)
    for n in n_values:
        for c in c_values:
            for h in h_values:
                if i >= count:
                    break
                k = (8, 16, 32, 64)[i % 4]
                f = 1 if i % 3 == 0 else 3
                p = 0 if f == 1 else 1
                fwd = (1, 2, 4)[i % 3]
                lines.append(f"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {n} -c {c} "
                             f"-H {h} -W {h} -k {k} -y {f} -x {f} -p {p} -q {p} -u 1 -v 1 -l 1 -j 1 -m conv "
                             f"-g 1 -F {fwd} -t 1\n")
                i += 1
    with open(path, "w") as fh:
        fh.writelines(lines)


def bench_10k(tmp: str) -> list[dict]:
    from miotui.app import MiotuiApp
    clock = RenderClock()
    path = os.path.join(tmp, "10k.log")
    ten_k_log(path)
    res: dict[str, list[float]] = {"down": [], "pagedown": [], "filter": [], "sort": []}
    info: dict = {}

    async def run() -> None:
        t0 = time.perf_counter()
        app = MiotuiApp([path], find_job=False)
        async with app.run_test(size=SIZE) as pilot:
            table = app.layers_screen.table
            while not (app.last_poll is not None and app.last_poll.finished and len(table.model.rows) >= 10_000):
                await asyncio.sleep(0.01)
            info["load_s"] = round(time.perf_counter() - t0, 2)
            info["layers"] = len(table.model.rows)
            await pilot.pause(0.2)
            table.action_first()
            await pilot.pause(0.1)
            for _ in range(40):
                before = table.cursor_id
                res["down"].append(await key_latency(app, "down", lambda b=before: table.cursor_id != b, clock))
            for _ in range(20):
                before = table.cursor_id
                res["pagedown"].append(await key_latency(app, "pagedown",
                                                         lambda b=before: table.cursor_id != b, clock))
            await pilot.press("slash")
            await pilot.pause(0.1)
            typed = ""
            for ch in "op:conv n:>=8 dir:w":
                typed += ch
                target = typed
                key = {" ": "space", ":": "colon", ">": "greater_than_sign", "=": "equals_sign"}.get(ch, ch)
                res["filter"].append(await key_latency(app, key, lambda t=target: table.model.filter.text == t,
                                                       clock, char=ch))
            info["filtered_rows"] = len(table.model.view)
            await pilot.press("enter", "escape")
            await pilot.pause(0.1)
            for _ in range(6):   # S: reverse the sort of all 10 000 rows
                before = table.model.sort_reverse
                res["sort"].append(await key_latency(app, "S", lambda b=before: table.model.sort_reverse != b,
                                                     clock))

    asyncio.run(run())
    return [{"what": "10k unique layers: load (read whole file, table filled)", **info},
            summary("10k: down", res["down"]), summary("10k: pagedown", res["pagedown"]),
            summary("10k: filter, per typed key (re-filters 10 000 rows)", res["filter"]),
            summary("10k: reverse sort (S)", res["sort"])]


# ---------------------------------------------------------------------- keys while following the demo

KEYS_ROUNDS = 12
#: (what, key, the screen that shows it) in the order pressed; then ``r``
KEY_STEPS = (("enter", "enter", "DetailScreen"), ("escape (detail)", "escape", "LayersScreen"),
             ("i", "i", "StartupScreen"), ("escape (i)", "escape", "LayersScreen"))


class DisplayClock:
    """When the app last sent a frame of each screen class (``App._display``: the compositor
    has rendered what changed; a real terminal would get it now)."""

    def __init__(self) -> None:
        from textual.app import App
        self.last: dict[str, float] = {}
        original = App._display
        clock = self

        def _display(app, screen, renderable):  # type: ignore[no-untyped-def]
            if renderable is not None:
                clock.last[type(screen).__name__] = time.perf_counter()
            return original(app, screen, renderable)

        App._display = _display  # type: ignore[method-assign]


async def shown_after(app, key: str, screen_name: str, done, clock: DisplayClock, timeout: float = 5.0) -> float:
    """Send ``key`` like a terminal; ms until ``done()`` holds and a frame of ``screen_name``
    was sent after the key."""
    from textual import events
    t0 = time.perf_counter()
    ev = events.Key(key, key if len(key) == 1 else None)
    ev.set_sender(app)
    app._driver.send_message(ev)
    while True:
        await asyncio.sleep(0.0005)
        now = time.perf_counter()
        if done() and clock.last.get(screen_name, 0.0) > t0:
            return (clock.last[screen_name] - t0) * 1000
        if now - t0 > timeout:
            return (now - t0) * 1000


def keys_child(warmup: float, rounds: int) -> None:
    """Runs in a fresh process whose ``miotui`` is the tree under test (``--tree``): the
    demo's replay writes its log while the app follows it (as ``miotui --demo``), and
    ``enter`` (detail), ``escape`` (back), ``i`` (first iteration), ``escape``, ``r`` (the
    row says queued or running) are pressed in turn, each timed from the key to the frame
    that shows it.  Each press also notes whether a run was computing when it was sent:
    the run started by ``r`` is cancelled, but a reference run stops only at its next check
    (seconds later on a 2-core host), so most later presses share the CPU with it."""
    from miotui.app import MiotuiApp
    from miotui.demo import DemoReplay
    clock = DisplayClock()
    res: dict[str, list[float]] = {"enter": [], "escape (detail)": [], "i": [], "escape (i)": [], "r": []}
    busy: dict[str, list[bool]] = {name: [] for name in res}

    async def run() -> None:
        replay = DemoReplay()
        app = MiotuiApp([replay.path], follow=True, demo=replay, find_job=False)
        replay.start()
        async with app.run_test(size=SIZE) as pilot:
            table = app.layers_screen.table
            end = time.perf_counter() + warmup
            while time.perf_counter() < end or len(table.model.rows) < 5:
                await asyncio.sleep(0.05)
            for i in range(rounds):
                table.move_cursor_to(table.model.view[i % len(table.model.view)])
                await pilot.pause(0.1)
                for name, key, screen in KEY_STEPS:
                    busy[name].append(app.running)
                    res[name].append(await shown_after(app, key, screen,
                                                       lambda s=screen: type(app.screen).__name__ == s, clock))
                    await pilot.pause(0.2)
                layer = table.cursor_id
                busy["r"].append(app.running)
                res["r"].append(await shown_after(
                    app, "r", "LayersScreen",
                    lambda layer=layer: table.row_text(layer).get("verdict", "") in ("queued", "running"), clock))
                app.cancel_runs(None)
                await pilot.pause(0.3)
            app.shutdown_background()

    asyncio.run(run())
    print(json.dumps({"ms": res, "run_busy": busy}))


def bench_keys(trees: list[tuple[str, str]], warmup: float, rounds: int, alternations: int) -> list[dict]:
    """Each tree's key latencies, the trees run alternately (old, new, old, new ...) so
    that a host loaded by other work weighs on both alike."""
    got: dict[str, dict[str, list[float]]] = {name: {} for name, _ in trees}
    busy: dict[str, dict[str, list[bool]]] = {name: {} for name, _ in trees}
    for _ in range(alternations):
        for name, root in trees:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--keys-child", root, str(warmup),
                                  str(rounds)], capture_output=True, text=True, cwd=root,
                                 env={**os.environ, "PYTHONPATH": root})
            if out.returncode != 0:
                raise RuntimeError(f"keys child ({name}) failed: {out.stderr[-2000:]}")
            child = json.loads(out.stdout.strip().splitlines()[-1])
            for key, ms in child["ms"].items():
                got[name].setdefault(key, []).extend(ms)
                busy[name].setdefault(key, []).extend(child["run_busy"][key])
    rows = [summary(f"demo followed, {name}: {key} -> shown", ms) for name, _ in trees
            for key, ms in got[name].items()]
    for name, _ in trees:               # the same presses, by whether a run shared the CPU
        for key, ms in got[name].items():
            for flag, what in ((False, "no run computing"), (True, "a run computing")):
                part = [m for m, b in zip(ms, busy[name][key], strict=True) if b == flag]
                if part:
                    rows.append(summary(f"  {name}: {key}, {what}", part))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("help", "paint", "follow", "10k", "keys"), action="append")
    ap.add_argument("--compare", metavar="OLD_TREE", help="keys: also measure the miotui of another checkout "
                    "(e.g. a `git worktree` of main), alternately with this one")
    ap.add_argument("--rounds", type=int, default=KEYS_ROUNDS, help="keys: presses of each key per process")
    ap.add_argument("--alternations", type=int, default=2, help="keys: processes per tree")
    ap.add_argument("--rate", type=float, default=20.0, help="MB/s written while following")
    ap.add_argument("--seconds", type=float, default=8.0, help="length of the follow run")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--first-paint-child", metavar="PATH", help=argparse.SUPPRESS)
    ap.add_argument("--writer-child", nargs=3, metavar=("PATH", "RATE", "SECONDS"), help=argparse.SUPPRESS)
    ap.add_argument("--keys-child", nargs=3, metavar=("TREE", "WARMUP", "ROUNDS"), help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.keys_child:
        keys_child(float(ns.keys_child[1]), int(ns.keys_child[2]))
        return 0
    if ns.first_paint_child:
        first_paint_child(ns.first_paint_child)
        return 0
    if ns.writer_child:
        path, rate, seconds = ns.writer_child
        writer_child(path, float(rate), float(seconds), 0.5)
        return 0
    only = set(ns.only or ("help", "paint", "follow", "10k", "keys"))
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="miotui-bench-") as tmp:
        if "help" in only:
            results.append(bench_help())
        if "paint" in only:
            results.append(bench_first_paint(tmp))
        if "follow" in only:
            results.extend(bench_follow(tmp, ns.rate, ns.seconds))
        if "10k" in only:
            results.extend(bench_10k(tmp))
        if "keys" in only:
            trees = ([("old", os.path.abspath(ns.compare))] if ns.compare else []) + [("new", ROOT)]
            results.extend(bench_keys(trees, 6.0, ns.rounds, ns.alternations))
    if ns.json:
        print(json.dumps(results, indent=1))
    else:
        import platform
        print(f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs")
        for r in results:
            what = r.pop("what")
            print(f"{what}: " + ", ".join(f"{k}={v}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

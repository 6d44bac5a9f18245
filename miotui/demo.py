"""``miotui --demo``: a training job that is not there, writing a MIOpen log that is.

Why: a new user should see the live app - rows appearing, counters climbing - with
nothing installed but miotui.  A thread replays the bundled sample log
(``miotui/samples/resnet50_demo.log``: a ResNet-50 training run logged with
``MIOPEN_ENABLE_LOGGING_CMD=1 MIOPEN_LOG_LEVEL=5``) into a temporary file, at the pace
such a job writes: MIOpen's ``Find`` searches take a while (the first iteration is
slow), later iterations are fast bursts, and stderr arrives in buffered pieces that
do not respect line ends.  The app follows that file like any other log.

After the whole sample has been written, the replay keeps training: it appends the
sample's steady-state iteration (the longest stretch without Find lines) again and
again with fresh epoch/progress lines, so counters keep climbing until the app quits.
"""

from __future__ import annotations

import os
import random
import tempfile
import threading
from typing import Optional

#: Lines per second while replaying the first (Find-heavy) pass of the sample.
FIRST_PASS_LINES_PER_S = 180.0
#: Extra pause after a line mentioning a Find (MIOpen benchmarks kernels there).
FIND_PAUSE_S = 0.02
#: Seconds per steady-state iteration afterwards (the sample's own ``Time`` is ~0.4 s).
ITERATION_S = 1.5


def sample_path() -> str:
    """The bundled sample log."""
    try:
        from miotui.samplegen import demo_log_path
        return demo_log_path()
    except Exception:  # samplegen missing or broken: the file is package data anyway
        return os.path.join(os.path.dirname(os.path.abspath(__file__)), "samples", "resnet50_demo.log")


def steady_iteration(lines: list[str]) -> list[str]:
    """The longest run of MIOpen lines between two non-MIOpen lines that has no Find.

    In a training log that is one later iteration (every layer executed, nothing
    searched).  Falls back to every MIOpen line without Find when the log has no such
    stretch.
    """
    best: list[str] = []
    cur: list[str] = []
    has_find = False
    for line in lines + ["\n"]:
        if line.startswith("MIOpen"):
            cur.append(line)
            if "Find" in line:
                has_find = True
            continue
        if cur and not has_find and len(cur) > len(best):
            best = cur
        cur, has_find = [], False
    if best:
        return best
    return [ln for ln in lines if ln.startswith("MIOpen") and "Find" not in ln]


class DemoReplay:
    """Writes the sample log into a temporary file in a background thread.

    ``speed`` multiplies the pace (tests use a large value); ``loop`` keeps appending
    steady-state iterations after the sample ends.  ``path`` exists (empty) as soon as
    the object is created, so a follower can open it at once.
    """

    def __init__(self, source: Optional[str] = None, *, speed: float = 1.0, loop: bool = True,
                 directory: Optional[str] = None, seed: int = 0) -> None:
        self.source = source or sample_path()
        with open(self.source, "r", encoding="utf-8", errors="replace", newline="") as fh:
            self.lines = fh.read().splitlines(keepends=True)
        self.speed = max(speed, 1e-6)
        self.loop = loop
        fd, self.path = tempfile.mkstemp(prefix="miotui-demo-", suffix=".log", dir=directory)
        os.close(fd)
        self.written_lines = 0
        self.iterations = 0
        self.done = threading.Event()
        self._stop = threading.Event()
        self._rng = random.Random(seed)
        self._thread = threading.Thread(target=self._run, name="miotui-demo", daemon=True)

    def start(self) -> "DemoReplay":
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def cleanup(self) -> None:
        """Stop and delete the temporary log."""
        self.stop()
        try:
            os.unlink(self.path)
        except OSError:
            pass

    # ------------------------------------------------------------------ writer

    def _sleep(self, seconds: float) -> bool:
        """Sleep (scaled by speed); True when asked to stop."""
        return self._stop.wait(seconds / self.speed)

    def _write_burst(self, fh, text: str) -> None:
        """Write like a buffered stderr: pieces that may end mid-line."""
        data = text.encode("utf-8")
        i = 0
        while i < len(data):
            n = self._rng.randint(200, 4096)
            fh.write(data[i:i + n])
            fh.flush()
            i += n

    def _run(self) -> None:
        try:
            with open(self.path, "ab", buffering=0) as fh:
                self._first_pass(fh)
                if self.loop:
                    self._steady(fh)
        finally:
            self.done.set()

    def _first_pass(self, fh) -> None:
        per_line = 1.0 / FIRST_PASS_LINES_PER_S
        pending: list[str] = []
        delay = 0.0
        for line in self.lines:
            pending.append(line)
            delay += per_line + (FIND_PAUSE_S if "Find" in line else 0.0)
            if delay >= 0.05:
                self._write_burst(fh, "".join(pending))
                self.written_lines += len(pending)
                pending = []
                if self._sleep(delay):
                    return
                delay = 0.0
        if pending:
            self._write_burst(fh, "".join(pending))
            self.written_lines += len(pending)

    def _steady(self, fh) -> None:
        body = steady_iteration(self.lines)
        if not body:
            return
        epoch = 1
        step = 0
        while not self._stop.is_set():
            step += 1
            loss = 6.9 * (0.995 ** (self.iterations + 1))
            progress = (f"Epoch {epoch}: step {step} [{self.iterations + 1} iterations replayed], "
                        f"loss={loss:.3f}\r")
            # Write the iteration in ~10 pieces spread over ITERATION_S.
            pieces = 10
            size = max(1, len(body) // pieces)
            for i in range(0, len(body), size):
                self._write_burst(fh, "".join(body[i:i + size]))
                self.written_lines += len(body[i:i + size])
                if self._sleep(ITERATION_S / pieces):
                    return
            self._write_burst(fh, progress)
            self.iterations += 1
            if step % 50 == 0:
                epoch += 1
                step = 0
                self._write_burst(fh, f"\nEpoch: [{epoch - 1}] done\n")

"""Assembling a log: records to text (prefixes, thread ids, elapsed field), iterations,
size mode, and writing it to a file."""

from __future__ import annotations

import gzip
import io
import os
import random
import re
from typing import Iterator, Sequence

from miotui.output_file import open_output
from miotui.samplegen.network import Call, inference_calls, resnet50_layers, training_calls
from miotui.samplegen.noise import Noise
from miotui.samplegen.render import Renderer
from miotui.samplegen.render_base import SEGMENT, Rec
from miotui.samplegen.render_startup import FIND_MODE_BANNER
from miotui.samplegen.spec import SampleSpec

# --------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------


class Writer:
    """Turns records into text: prefixes, thread ids, elapsed field, interleaving."""

    def __init__(self, spec: SampleSpec, rng: random.Random) -> None:
        self.spec = spec
        self.fmt = spec.format
        self.rng = rng
        self.mpmt = self.fmt == "trace2x"
        self.elapsed = spec.use_elapsed
        base = rng.randrange(20000, 60000)
        self.tids = (base, base + rng.randrange(30, 90))

    def prefix(self, thread: int, delay: float) -> str:
        parts = []
        if self.mpmt:
            parts.append(f"{self.tids[thread]} ")
        parts.append("MIOpen(HIP)")
        if self.elapsed:
            ms = delay + self.rng.expovariate(1 / 0.02)
            parts.append(f"{ms:8.3f}")
        parts.append(": ")
        return "".join(parts)

    def render(self, recs: Sequence[Rec]) -> str:
        out: list[str] = []
        pending = 0.0
        for thread, kind, text, delay in recs:
            if kind == "delay":
                pending += delay
                continue
            if kind == "p":
                out.append(self.prefix(thread, delay + pending) + text)
                pending = 0.0
            else:
                out.append(text)
        out.append("")
        return "\n".join(out)


def interleave(rng: random.Random, a: list[Rec], b: list[Rec]) -> list[Rec]:
    """Random merge of two threads' records, each keeping its order (line-level interleave)."""
    out: list[Rec] = []
    i = j = 0
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and rng.random() < 0.5):
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out


class Generator:
    """Produces one log as text pieces; see ``iter_chunks`` for the public entry point."""

    VARIANTS = 4

    def __init__(self, spec: SampleSpec) -> None:
        self.spec = spec
        self.layers = resnet50_layers(spec.batch)
        self.renderer = Renderer(spec, self.layers)
        self.writer = Writer(spec, random.Random(f"{spec.seed}:writer"))
        self.rng = random.Random(f"{spec.seed}:generator")
        steps = spec.iterations if spec.size is None else -(-1281167 // spec.batch)
        self.noise = Noise(spec, steps)
        self._variants: list[str] = []

    def _records(self, calls: Sequence[Call]) -> list[Rec]:
        render = self.renderer.render
        concurrent = self.spec.format == "trace2x"
        recs: list[Rec] = []
        pending_b: list[Rec] = []
        for call in calls:
            r = render(call)
            if concurrent and call.thread == 1:
                pending_b += r
                continue
            if pending_b:
                # the previous call ran on the other executor thread, concurrently with this one
                if self.rng.random() < 0.35:
                    recs += interleave(self.rng, r, pending_b)
                else:
                    recs += pending_b + r
                pending_b = []
            else:
                recs += r
        recs += pending_b
        return recs

    def _text(self, calls: Sequence[Call], delay_first: float = 0.0) -> str:
        recs = self._records(calls)
        if recs and delay_first:
            t, k, s, d = recs[0]
            recs[0] = (t, k, s, d + delay_first)
        return self.writer.render(recs)

    def preamble(self) -> str:
        text = "\n".join(self.noise.preamble()) + "\n"
        recs: list[Rec] = []
        if self.spec.format == "info":
            recs += [(0, "p", "Info [get_device_name] Raw device name: gfx90a:sramecc+:xnack-", 0.0),
                     (0, "p", "Info [Handle] stream: 0, device_id: 0", 0.0)]
        if self.spec.startup:
            recs.append((0, "p", f"Info [] {FIND_MODE_BANNER}", 0.0))
        if self.spec.format in ("command", "info"):
            # printed at the default level (Warning) when the kernel-cache package is missing
            recs.append((0, "p", "Warning [SQLiteBase] Missing system database file: "
                         "/opt/rocm-5.7.0/share/miopen/db/gfx90a6e.kdb "
                         "Performance may degrade. Please follow instructions to install: "
                         "https://github.com/ROCmSoftwarePlatform/MIOpen#installing-miopen-kernels-package", 0.0))
        return text + (self.writer.render(recs) if recs else "")

    def first_iteration(self) -> str:
        calls = training_calls(self.layers, first=True, concurrent_backward=self.spec.format == "trace2x")
        return self._text(calls, 2500.0) + "\n".join(self.noise.after_iteration(1)) + "\n"

    def _variant(self, index: int) -> str:
        while len(self._variants) <= index:
            v = len(self._variants)
            mem = self.renderer.mem
            if v == 0:
                mem.shift = (1 << 62, 0)
            else:
                total = max(mem.activations, 3)
                mem.shift = (self.rng.randrange(total // 3, total), v * SEGMENT * self.rng.choice((1, 2, 3)))
            calls = training_calls(self.layers, first=False, concurrent_backward=self.spec.format == "trace2x")
            self._variants.append(self._text(calls, self.rng.uniform(60.0, 250.0)))
            mem.shift = (1 << 62, 0)
        return self._variants[index]

    def iteration(self, step: int) -> str:
        """Text of training step ``step`` >= 2 (a cached variant + that step's output)."""
        v = 0 if self.rng.random() < 0.6 else self.rng.randrange(1, self.VARIANTS)
        return self._variant(v) + "\n".join(self.noise.after_iteration(step)) + "\n"

    def inference(self) -> str:
        pre = "\n".join(self.noise.before_inference()) + "\n"
        return pre + self._text(inference_calls(self.layers), 400.0)

    def epilogue(self) -> str:
        return "\n".join(self.noise.epilogue()) + "\n"

    def chunks(self) -> Iterator[str]:
        spec = self.spec
        yield self.preamble()
        yield self.first_iteration()
        if spec.size is None:
            for step in range(2, spec.iterations + 1):
                yield self.iteration(step)
            if spec.inference:
                yield self.inference()
            yield self.epilogue()
            return
        step = 2
        while True:  # size mode: the caller stops reading
            yield self.iteration(step)
            step += 1


def iter_chunks(spec: SampleSpec) -> Iterator[str]:
    """The log as text chunks (an iteration or more each), honouring ``spec.size``.

    In size mode the last chunk is cut after the last complete line that fits, so the
    total is within one line of ``spec.size`` (or the whole log is shorter, never longer).
    """
    gen = Generator(spec)
    if spec.size is None:
        yield from gen.chunks()
        return
    remaining = spec.size
    for chunk in gen.chunks():
        n = len(chunk.encode("utf-8")) if not chunk.isascii() else len(chunk)
        if n <= remaining:
            yield chunk
            remaining -= n
            if remaining == 0:
                return
            continue
        data = chunk.encode("utf-8")[:remaining]
        cut = data.rfind(b"\n")
        if cut >= 0:
            yield data[: cut + 1].decode("utf-8", "ignore")
        return


#: The log behind ``miotui --demo`` (shipped as ``miotui/samples/resnet50_demo.log``): what a
#: user sees with MIOPEN_ENABLE_LOGGING_CMD=1 MIOPEN_LOG_LEVEL=6 MIOPEN_ENABLE_LOGGING_ELAPSED_TIME=1
#: (and MIOPEN_FIND_ENFORCE=SEARCH): a first iteration that compiles and tunes, then a training
#: step (the demo keeps repeating it).  No inference pass: it keeps the file under 500 kB.
DEMO_SPEC = SampleSpec(format="info", level=6, iterations=2, batch=32, seed=0, startup=True, inference=False)


def demo_log_path() -> str:
    """Path of the bundled demo log (generated from ``DEMO_SPEC``; package data)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # miotui/
    return os.path.join(package, "samples", "resnet50_demo.log")


def generate_text(spec: SampleSpec) -> str:
    """The whole log as one string (for small logs: tests, the demo)."""
    return "".join(iter_chunks(spec))


def write_log(spec: SampleSpec, path: str, *, compresslevel: int = 1) -> int:
    """Write the log to ``path`` (gzip-compressed when it ends in ``.gz``).

    Returns the number of uncompressed bytes written.  Writes in multi-megabyte chunks;
    the gzip stream has no timestamp so the same spec gives the same file.  A file is
    written next to itself and renamed into place when complete; anything else at the
    path (``/dev/null``, a FIFO) is written to directly: renaming onto it would replace
    the device itself (as root, ``--out /dev/null`` once made /dev/null a regular file).
    """
    written = 0
    direct = os.path.exists(path) and not os.path.isfile(path)
    tmp = path if direct else path + ".part"
    with open_output(tmp, binary=True, devices=direct) as raw:   # never through a link at the name
        sink: io.BufferedIOBase
        if path.endswith(".gz"):
            sink = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=compresslevel, mtime=0)
        else:
            sink = raw  # type: ignore[assignment]
        buf: list[bytes] = []
        size = 0
        for chunk in iter_chunks(spec):
            data = chunk.encode("utf-8")
            buf.append(data)
            size += len(data)
            if size >= 8 << 20:
                sink.write(b"".join(buf))
                written += size
                buf, size = [], 0
        sink.write(b"".join(buf))
        written += size
        if sink is not raw:
            sink.close()
    if not direct:
        os.replace(tmp, path)
    return written


_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"1G"`` -> 1073741824; K/M/G/T are binary multiples (``1.5M``, ``200k``, ``4096``)."""
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"cannot read size {text!r} (examples: 4096, 200K, 1.5M, 1G)")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    value = int(float(m.group(1)) * mult)
    if value < 1:
        raise ValueError("size must be positive")
    return value

"""The numbers fuzz of issue 26: every numeric flag of every driver subcommand, and every number
of every log form, set to each hostile value, one line at a time.

Why a module of its own: the suite runs a sample of the cases (``tests/unit/test_number_fuzz.py``,
about a minute) and ``benchmarks/fuzz_numbers.py`` runs all of them; both take the cases and
the per-line check from here, so the sample is a true sample of the sweep.

A case is one log line.  The check decodes it in this process into a fresh catalog and writes
every output format (table, JSON, CSV, driver commands, and the driver commands of the oldest
era), and measures the wall time, the peak of memory allocated (tracemalloc: what Python and
numpy allocate, which is what a logged number could make us build) and the output's size.
A case fails when it raises (or a decoder raises and the scanner catches it: "decoder
failed", a MemoryError -- the attempt to build is the bug even when the allocation is refused), takes 2 s or more, allocates 200 MB or more, or writes 64 KB or
more.  An interval timer cuts a case that runs away (a loop over a logged count) so one bad
line cannot stall the sweep; the caller also sets an address-space limit in the process that
runs the cases so one allocation cannot take the machine.
"""

from __future__ import annotations

import io
import re
import signal
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

#: the values the issue names: zero, minus one, just past a C int, past 32 bits, and large enough to build a
#: list no machine holds (10**8 ints) or to overflow anything 32-bit (10**11)
HOSTILE = ("0", "-1", str(2**31), str(2**32 + 1), str(10**8), str(10**11))
MAX_SECONDS = 2.0
MAX_BYTES = 200 * 2**20
MAX_OUTPUT = 64 * 2**10
#: a runaway case is cut after this long (it has failed by then anyway)
CUT_SECONDS = 20.0

NUMERIC_TYPES = frozenset({"int", "float", "double", "vector", "tensor descriptor", "tensor", "vector<int>",
                           "vector<vector<int>>"})
DATA = Path(__file__).resolve().parent / "data"
#: the real lines each log form is fuzzed from (one or a few lines of every form, verbatim from real logs)
FORMS = DATA / "number_fuzz_forms.log"


@dataclass(frozen=True)
class Case:
    """One line to decode, and where it came from (for the failure message)."""

    name: str
    text: str


@dataclass(frozen=True)
class Outcome:
    case: Case
    seconds: float
    peak_bytes: int
    output_bytes: int
    error: str = ""

    @property
    def failures(self) -> list[str]:
        out = []
        if self.error:
            out.append(self.error)
        if self.seconds >= MAX_SECONDS:
            out.append(f"{self.seconds:.1f} s")
        if self.peak_bytes >= MAX_BYTES:
            out.append(f"{self.peak_bytes / 2**20:.0f} MB allocated")
        if self.output_bytes >= MAX_OUTPUT:
            out.append(f"{self.output_bytes / 2**10:.0f} KB of output")
        return out


def _spliced(default: str, value: str) -> list[str]:
    """The value alone, and (for a list or tensor default) each number of the default replaced by it."""
    out = [value]
    numbers = list(re.finditer(r"\d+", default))
    for m in numbers[:4]:
        out.append(default[:m.start()] + value + default[m.end():])
    return out


def driver_cases() -> Iterator[Case]:
    """Every numeric flag of every subcommand (newest driver, every base argument's first
    name), each hostile value, typed as a user types a command and as MIOpen logs one."""
    from miotui.driver.tables import SUBCOMMANDS
    for sub in SUBCOMMANDS:
        base = sub.bases[0].name
        for flag in sub.flags_in(None):
            if flag.type not in NUMERIC_TYPES:
                continue
            for value in HOSTILE:
                for text in dict.fromkeys(_spliced(flag.default, value)):
                    yield Case(f"{base} -{flag.short} {text}", f"$ MIOpenDriver {base} -{flag.short} {text}")
                    yield Case(f"logged {base} -{flag.short} {text}",
                               f"MIOpen(HIP): Command [LogCmd] ./bin/MIOpenDriver {base} -{flag.short} {text}")


def form_cases(path: Path = FORMS) -> Iterator[Case]:
    """Every number of every line of ``path`` (one real line of each log form, or a block of
    lines that belong together, separated by blank lines), each hostile value, one number at a
    time.  A block is decoded whole, so the number sizes what its form builds."""
    blocks = ["\n".join(line for line in b.splitlines() if not line.startswith("#"))
              for b in path.read_text().split("\n\n")]
    for i, block in enumerate(b for b in blocks if b.strip()):
        for m in re.finditer(r"(?<![\w.])-?\d+", block):
            for value in HOSTILE:
                text = block[:m.start()] + value + block[m.end():]
                yield Case(f"form {i} number {m.group()!r}@{m.start()} -> {value}", text)


class _Cut(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001 - the signal handler's signature
    raise _Cut(f"still running after {CUT_SECONDS:.0f} s")


def check(case: Case) -> Outcome:
    """Decode ``case`` and write every format; measure time, peak allocation and output size."""
    from miotui.catalog import Catalog
    from miotui.decode_output import render_to
    from miotui.decoding.whole import decode_stream
    error = ""
    size = 0
    old = signal.signal(signal.SIGALRM, _alarm)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        signal.setitimer(signal.ITIMER_REAL, CUT_SECONDS)
        catalog = Catalog()
        decode_stream(catalog, io.BytesIO((case.text + "\n").encode("utf-8", "surrogateescape")))
        caught = [u.reason for u in catalog.undecoded() if "failed:" in u.reason or "MemoryError" in u.reason]
        if caught:   # a decoder raised and was caught: the line was not judged, it broke something
            error = caught[0][:300]
        for fmt, version in (("table", None), ("json", None), ("csv", None), ("driver", None), ("driver", (2, 0))):
            buf = io.StringIO()
            render_to(buf, catalog, fmt, version)
            size = max(size, len(buf.getvalue().encode("utf-8")))
    except (_Cut, MemoryError, Exception) as e:  # noqa: BLE001 - any escape is the finding
        error = error or f"{type(e).__name__}: {e}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return Outcome(case, seconds, peak, size, error)


def limit_memory(gib: float = 4.0) -> None:
    """Cap this process's address space, so a case that allocates without end fails with
    MemoryError here instead of taking the machine."""
    import resource
    cap = int(gib * 2**30)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def all_cases(forms: Optional[Path] = None) -> list[Case]:
    return list(driver_cases()) + list(form_cases(forms or FORMS))

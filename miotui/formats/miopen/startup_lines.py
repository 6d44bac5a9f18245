"""The lines that say what MIOpen spent its first iteration on, read one at a time.

The lines (``docs/formats.md`` §10.2; ``binary_cache.cpp``, ``generic_search.hpp``,
``find_db.hpp``, ``find_controls.cpp``): kernel binaries loaded from the cache, or not and
then saved after a compile; a developer build's ``Compile Time, ms``; a tuning search's start,
heartbeat and end; ``Find-db regenerating.`` (a Find that measures the solvers); each solver a
Find measured; the settings MIOpen reports (``MIOPEN_FIND_MODE = ...``).  ``read_startup_line``
says which fact a line states; ``miotui.formats.miopen.first_iteration`` gives each fact to the
layer the surrounding lines name, on the log's clock (``has_clock``: whether the log has one).
The JSON records of ``MIOPEN_PERFORMANCE_LOGS`` are read by ``read_perf_record``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Optional

from miotui.events import Annotation, Event, Setting, Undecoded
from miotui.formats.miopen.clock_fields import FIELD_RE, field_clock
from miotui.formats.miopen.lines import PREFIX_RE
from miotui.startup import (
    COMPILE_TIME,
    FIND_DB_MISS,
    KERNEL_FROM_CACHE,
    SEARCH_DONE,
    SEARCH_STARTED,
    SOLVER_MEASURED,
)

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_SEARCHING_RE = re.compile(r"^(\S+?): Searching the best solution among (\d+)( \(spare\))?")
_MONITOR_RE = re.compile(rf"^(\d+)/(\d+)/(\d+) ({_NUM}), best within recent \d+: ({_NUM}) #\d+ .*?, "
                         rf"ETA:\s*({_NUM}) sec")
_PROGRESS_RE = re.compile(rf"^#(\d+)/(\d+)/(\d+)(?: ({_NUM}) < ({_NUM}))?")
_DONE_RE = re.compile(rf"^Done: (\d+)/(\d+)/(\d+), best #\s*(\d+) ({_NUM})")
_COMPILE_TIME_RE = re.compile(rf"Compile Time, ms: ({_NUM})\s*$")
_MEASURED_RE = re.compile(rf"^[^:]+: .+: {_NUM} < {_NUM}\s*$")
_SETTING_RE = re.compile(r"^(MIOPEN_[A-Z_]+) = (\S.*?)\s*$")
_FORCED_RE = re.compile(r"^(MIOPEN_FIND_MODE) is set to (\w+) due to (.*?)\s*$")

#: the Find functions whose ``Chosen Algorithm`` line ends a Find
_CHOSEN_FUNCS = frozenset({"FindConvFwdAlgorithm", "FindConvBwdDataAlgorithm", "FindConvBwdWeightsAlgorithm",
                           "FillFindReturnParameters"})
#: the tuning policies of ``miopenSetTuningPolicy`` (a per-handle MIOPEN_FIND_ENFORCE)
TUNING_POLICIES = {1: "None", 2: "DbUpdate", 3: "Search", 4: "SearchDbUpdate", 5: "DbClean"}

#: fact kinds that only the routing uses (the others are ``miotui.startup``'s)
CACHE_MISS, SAVED, SEARCH_PROGRESS, FIND_CHOSEN, SETTING = ("cache_miss", "saved", "search_progress",
                                                            "find_chosen", "setting")


@dataclass(frozen=True)
class StartupFact:
    """What one level line says about the first iteration."""

    kind: str
    name: str = ""
    value: str = ""
    ms: Optional[float] = None
    done: int = 0
    failed: int = 0
    total: int = 0
    best_ms: Optional[float] = None
    eta_s: Optional[float] = None


def line_clock(line: str) -> tuple[Optional[float], Optional[float]]:
    """(elapsed ms since MIOpen's previous line, wall-clock ms since the epoch) from a line's
    first prefix; None for a field it does not have."""
    m = FIELD_RE.search(line)
    return (None, None) if m is None else field_clock(m.group(2))


def has_clock(text: str) -> Optional[bool]:
    """Whether the MIOpen lines of ``text`` carry a time field; None when it has none of
    MIOpen's prefixed lines to tell by."""
    m = PREFIX_RE.search(text, 0, 1_000_000)
    if m is None:
        return None
    elapsed, wall = line_clock(m.group(0))
    return elapsed is not None or wall is not None


def _float(text: Optional[str]) -> Optional[float]:
    if text is None:
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def read_startup_line(func: str, message: str) -> Optional[StartupFact]:
    """The startup fact a level line states, or None (the cheap answer for most lines)."""
    c = message[:1]
    if func == "LoadBinary":
        if c == "S" and message.startswith("Successfully loaded binary for: "):
            return StartupFact(KERNEL_FROM_CACHE, _kernel(message))
        if c == "U" and message.startswith("Unable to load binary for: "):
            return StartupFact(CACHE_MISS, _kernel(message))
        return None
    if func == "SaveBinary":
        return StartupFact(SAVED, _kernel(message)) if message.startswith("Saving binary for: ") else None
    if func == "Monitor":
        m = _MONITOR_RE.match(message)
        if m is None:
            return None
        return StartupFact(SEARCH_PROGRESS, done=int(m.group(1)), failed=int(m.group(2)), total=int(m.group(3)),
                           best_ms=_float(m.group(5)), eta_s=_float(m.group(6)))
    if func == "GenericSearch" or func == "GetAllConfigs":
        if c == "#":
            m = _PROGRESS_RE.match(message)
            if m is None:
                return None
            return StartupFact(SEARCH_PROGRESS, done=int(m.group(1)), failed=int(m.group(2)), total=int(m.group(3)),
                               best_ms=_float(m.group(4)) if m.group(5) else None)
        if c == "D":
            m = _DONE_RE.match(message)
            if m is None:
                return None
            return StartupFact(SEARCH_DONE, done=int(m.group(1)), failed=int(m.group(2)), total=int(m.group(3)),
                               best_ms=_float(m.group(5)))
        m = _SEARCHING_RE.match(message)
        if m is None:
            return None
        return StartupFact(SEARCH_STARTED, m.group(1), total=int(m.group(2)))
    if func == "TryLoad":
        return StartupFact(FIND_DB_MISS) if message.startswith("Find-db regenerating") else None
    if func == "EvaluateInvokers" or func == "DirConvFindCore":
        if c != "S" and _MEASURED_RE.match(message):
            return StartupFact(SOLVER_MEASURED, message.split(":", 1)[0].strip())
        return None
    if c == "M" and message.startswith("MIOPEN_"):
        m = _SETTING_RE.match(message)
        if m is not None:
            return StartupFact(SETTING, m.group(1), m.group(2))
        m = _FORCED_RE.match(message)
        if m is not None:
            return StartupFact(SETTING, m.group(1), f"{m.group(2)} (forced by {m.group(3)})")
        return None
    if "Chosen Algorithm" in message and (func in _CHOSEN_FUNCS or func.startswith("FindConv")):
        return StartupFact(FIND_CHOSEN)
    if "Compile Time, ms: " in message:
        m = _COMPILE_TIME_RE.search(message)
        if m is not None:
            return StartupFact(COMPILE_TIME, message[:m.start()].strip(), ms=_float(m.group(1)))
    return None


def tuning_policy_block(name: str, p) -> list[Event]:
    """The API block ``miopenSetTuningPolicy(handle, newValue)``: a per-handle
    MIOPEN_FIND_ENFORCE, so a job can tune without any environment variable saying so
    (``p``: the block's ``BlockParams``)."""
    number = (p.get("newValue", "value", "policy") or "").strip()
    label = TUNING_POLICIES.get(int(number)) if number.isascii() and number.isdigit() else None
    return [Setting("tuning policy (miopenSetTuningPolicy)", f"{label}({number})" if label else number or "?")]


def _kernel(message: str) -> str:
    """The kernel file of a binary-cache line, with its build options (the same file is
    built once per option set)."""
    return message.split(": ", 1)[1].strip() if ": " in message else message


def read_perf_record(text: str) -> list[Event]:
    """One ``MIOPEN_PERFORMANCE_LOGS`` JSON record -> annotations of the call it measured:
    the solver, and for an executed solution its mean kernel time (``time_ms``, MIOpen's
    mean after dropping warm-up runs and outliers) and spread."""
    try:
        record = json.loads(text)
    except ValueError as e:
        return [Undecoded(f"MIOPEN_PERFORMANCE_LOGS record cut short or interleaved with other output: {e}")]
    if not isinstance(record, dict) or not isinstance(record.get("solution"), str):
        return [Undecoded("MIOPEN_PERFORMANCE_LOGS record without a solution name")]
    events: list[Event] = [Annotation("solver", record["solution"])]
    phase = record.get("phase")
    configs = record.get("performance_configs")
    config = configs[0] if isinstance(configs, list) and configs and isinstance(configs[0], dict) else {}
    time_ms = config.get("time_ms")
    if phase in ("execution", "unknown", None) and isinstance(time_ms, (int, float)) and math.isfinite(time_ms) \
            and time_ms >= 0:
        events.append(Annotation("perf_time_ms", f"{time_ms:.6g}"))
        std = config.get("time_std_ms")
        if isinstance(std, (int, float)) and math.isfinite(std):
            events.append(Annotation("perf_time_std_ms", f"{std:.6g}"))
    elif isinstance(phase, str):
        events.append(Annotation("perf_phase", phase))
    return events

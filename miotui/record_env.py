"""What ``miotui record`` sets in the job's environment: the logging switches of a level,
for MIOpen or cuDNN, with the variables the user had already set kept as they were.

Why a level and not a list of variables: users know what they want to see (the layers,
their times, the first iteration's compiles), not which of MIOpen's dozen switches gives
it, and each switch costs the job something; the level names the cheapest set that shows
it (``LEVELS``), and ``--help`` and the README say what each costs.

No process is started here and nothing is read but the environment and two device files:
``record_job`` starts the job with the environment made here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal, Mapping, Optional

Level = Literal["layers", "time", "first-iteration", "full"]
Vendor = Literal["amd", "nvidia"]

#: each level's MIOpen variables (each level adds to the one before)
LEVELS: dict[str, tuple[tuple[str, str], ...]] = {
    "layers": (("MIOPEN_ENABLE_LOGGING_CMD", "1"),),
    "time": (("MIOPEN_ENABLE_LOGGING_CMD", "1"), ("MIOPEN_LOG_LEVEL", "5")),
    "first-iteration": (("MIOPEN_ENABLE_LOGGING_CMD", "1"), ("MIOPEN_LOG_LEVEL", "6"),
                        ("MIOPEN_ENABLE_LOGGING_ELAPSED_TIME", "1")),
    "full": (("MIOPEN_ENABLE_LOGGING_CMD", "1"), ("MIOPEN_LOG_LEVEL", "6"),
             ("MIOPEN_ENABLE_LOGGING_ELAPSED_TIME", "1"), ("MIOPEN_ENABLE_LOGGING", "1"),
             ("MIOPEN_ENABLE_LOGGING_MPMT", "1")),
}

#: what each level shows and what it costs the job, in words (``--help`` and the README say the same)
LEVEL_HELP: dict[str, str] = {
    "layers": "every layer, its direction, data type and call count: one Command line per MIOpen call "
              "(MIOPEN_ENABLE_LOGGING_CMD=1); the cheapest, about 200 bytes a call",
    "time": "+ MIOpen's chosen solver and its Find time per layer (MIOPEN_LOG_LEVEL=5: Info lines at every Find "
            "and convolution execution); a few more lines a call",
    "first-iteration": "+ Find-Db hits and misses, tuning searches and kernel compiles with how long each took "
                       "(MIOPEN_LOG_LEVEL=6, MIOPEN_ENABLE_LOGGING_ELAPSED_TIME=1); many lines while the first "
                       "iteration compiles, a clock on every line",
    "full": "+ the API trace of every call with its descriptors (MIOPEN_ENABLE_LOGGING=1, with thread ids); "
            "tens of lines a call: the largest log and the slowest job",
}

#: cuDNN's switches (its debug log, level 3: every API call with its descriptors)
CUDNN_LEVEL = (("CUDNN_LOGLEVEL_DBG", "3"),)
CUDNN_DEST = "CUDNN_LOGDEST_DBG"

#: said wherever a cuDNN log is recorded: what it gives and what it costs
CUDNN_NOTE = ("cuDNN's log is decoded into the same table and followed live like MIOpen's; level 3 (the only "
              "level with the calls) logs every call with its descriptors, which made a ResNet-50 training step "
              "5-6x slower on an H100")


@dataclass(frozen=True)
class Setting:
    """One variable of the job's environment: ``ours`` when record set it, else the
    user's own value kept (``wanted`` is what the level would have set)."""

    name: str
    value: str
    ours: bool
    wanted: str = ""

    def line(self) -> str:
        if self.ours:
            return f"{self.name}={self.value}"
        return f"{self.name}={self.value} (yours, kept; the level sets {self.wanted})" if self.wanted != self.value \
            else f"{self.name}={self.value} (yours, kept)"


@dataclass(frozen=True)
class JobEnvironment:
    """The job's whole environment and what record did to it (for the report)."""

    env: dict[str, str]
    settings: tuple[Setting, ...]
    vendor: Vendor
    vendor_reason: str

    def report(self) -> list[str]:
        """The lines that say what the job gets (printed at start, shown in the app)."""
        head = f"vendor: {self.vendor} ({self.vendor_reason})"
        return [head] + ["  " + s.line() for s in self.settings]


def detect_vendor(env: Mapping[str, str], *, root: str = "/") -> tuple[Vendor, str]:
    """(vendor, why) without starting anything slow: an AMD GPU device (``/dev/kfd``) means
    MIOpen; else a loaded NVIDIA driver, confirmed by torch when it is installed, means cuDNN;
    else MIOpen (what miotui decodes)."""
    if os.path.exists(os.path.join(root, "dev/kfd")):
        return "amd", "/dev/kfd: an AMD GPU"
    if os.path.exists(os.path.join(root, "proc/driver/nvidia/version")):
        cuda = _torch_cuda()
        if cuda is False:
            return "amd", "an NVIDIA driver, but torch reports no CUDA device"
        return "nvidia", "the NVIDIA driver is loaded" + (" and torch reports CUDA" if cuda else "")
    return "amd", "no NVIDIA driver"


def _torch_cuda() -> Optional[bool]:
    """Whether torch reports a CUDA (not ROCm) device; None when torch is not installed."""
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        import torch
        return bool(torch.version.cuda) and not getattr(torch.version, "hip", None) and torch.cuda.is_available()
    except Exception:
        return None


def job_environment(level: str, vendor: Vendor, vendor_reason: str, base: Mapping[str, str], *,
                    extra: Optional[Mapping[str, str]] = None) -> JobEnvironment:
    """The job's environment: ``base`` with the level's variables added where the user has
    not set them (a variable already set is kept and reported), and ``extra`` (record's own
    plumbing, always set).  cuDNN logs to stderr, as MIOpen does: both reach the recorded
    log through the same pipe, in order with the job's own lines."""
    wanted: list[tuple[str, str]] = list(LEVELS[level]) if vendor == "amd" else [*CUDNN_LEVEL]
    if vendor == "nvidia":
        wanted.append((CUDNN_DEST, "stderr"))
    wanted.append(("PYTHONUNBUFFERED", "1"))   # Python's prints in order with the library's lines
    env = dict(base)
    settings = []
    for name, value in wanted:
        if name in base:
            settings.append(Setting(name, base[name], False, value))
        else:
            env[name] = value
            settings.append(Setting(name, value, True))
    for name, value in sorted(base.items()):
        if name.startswith(("MIOPEN_", "CUDNN_")) and name not in dict(wanted):
            settings.append(Setting(name, value, False, value))
    env.update(extra or {})
    return JobEnvironment(env, tuple(settings), vendor, vendor_reason)

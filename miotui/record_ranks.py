"""One log per rank for a multi-rank job (torchrun, mpirun, srun ...): where each rank's
log goes, and the environment that makes the ranks write there.

MIOpen writes its log to stderr and has no per-process log file (its only file is the
error dump ``/tmp/miopen_error_<pid>.log``); cuDNN's ``CUDNN_LOGDEST_DBG`` takes one path
with no per-process pattern.  A launcher merges its ranks' stderr, so a rank's API block is
cut by another rank's lines.  So the split is made in each rank, by the ``sitecustomize``
of :mod:`miotui.record_hook`, put first on the job's ``PYTHONPATH``: a Python rank (one
that finds ``RANK``, ``OMPI_COMM_WORLD_RANK``, ``PMIX_RANK``, ``PMI_RANK`` or
``SLURM_PROCID`` set by its launcher) sends its stderr to ``<log>.rank<N>.log`` and its own
lines also to the stderr it had.  The main log keeps the launcher's output.  The app
follows the main log and the pattern ``<log>.rank*.log`` together, as it follows any glob.

Ranks that are not Python (an MPI program in C++) are not split: their lines stay in the
main log, merged as the launcher merged them.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

import miotui.record_hook as hook

RankMode = Literal["auto", "on", "off"]

#: programs that start ranks (``auto`` splits their jobs' logs per rank)
LAUNCHERS = frozenset({"torchrun", "mpirun", "mpiexec", "orterun", "prterun", "srun", "deepspeed", "accelerate",
                       "horovodrun", "mpiexec.hydra"})
#: ``python -m <module>`` launchers
LAUNCHER_MODULES = frozenset({"torch.distributed.run", "torch.distributed.launch", "deepspeed.launcher.runner"})
#: where a launcher tells a process its rank (the hook reads the first one set)
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
HOOK_DIR = os.path.dirname(os.path.abspath(hook.__file__))


@dataclass(frozen=True)
class RankPlan:
    """How a job's log is split: ``split`` or not, why, the rank logs' pattern and glob."""

    split: bool
    reason: str
    pattern: str = ""         # ``<stem>.rank{rank}.log``, expanded by each rank
    follow_glob: str = ""     # the same as a glob pattern for the reader (the stem escaped)

    def rank_logs(self) -> list[str]:
        """The rank logs written so far, by rank."""
        if not self.split:
            return []
        found = glob.glob(self.follow_glob)
        return sorted(found, key=lambda p: (len(p), p))


def launcher_of(argv: Sequence[str]) -> str:
    """The launcher the command starts with ('' when none): ``torchrun``,
    ``python -m torch.distributed.run`` ..."""
    if not argv:
        return ""
    name = os.path.basename(argv[0])
    if name in LAUNCHERS:
        return name
    if name.startswith("python") and "-m" in argv[1:3]:
        i = list(argv).index("-m")
        if i + 1 < len(argv) and argv[i + 1] in LAUNCHER_MODULES:
            return f"python -m {argv[i + 1]}"
    return ""


def rank_paths(log_path: str) -> tuple[str, str]:
    """(pattern with ``{rank}``, glob) of the rank logs beside ``log_path``."""
    stem = log_path[:-4] if log_path.endswith(".log") else log_path
    return stem + ".rank{rank}.log", glob.escape(stem) + ".rank*.log"


def plan_ranks(mode: RankMode, argv: Sequence[str], log_path: str) -> RankPlan:
    launcher = launcher_of(argv)
    if mode == "off":
        return RankPlan(False, "--ranks off: one log")
    if mode == "auto" and not launcher:
        return RankPlan(False, "one log (no rank launcher in the command; --ranks on splits anyway)")
    pattern, follow = rank_paths(os.path.abspath(log_path))
    why = f"{launcher} starts ranks" if launcher else "--ranks on"
    return RankPlan(True, f"one log per Python rank ({why}): {os.path.basename(pattern)}", pattern, follow)


def rank_environment(plan: RankPlan, base: Mapping[str, str], library_re: str) -> dict[str, str]:
    """The variables that make each rank write its own log (none when not split)."""
    if not plan.split:
        return {}
    path = base.get("PYTHONPATH", "")
    inherited = ",".join(f"{name}={base[name]}" for name in RANK_VARIABLES if name in base)
    return {"PYTHONPATH": HOOK_DIR + (os.pathsep + path if path else ""), "MIOTUI_RECORD_RANK_LOG": plan.pattern,
            "MIOTUI_RECORD_LIBRARY_RE": library_re, "MIOTUI_RECORD_INHERITED": inherited}

"""How much memory this process may still allocate: the machine's free memory, and the
limit of the cgroup it runs in (a container, a systemd scope, a batch job).

``psutil.virtual_memory().available`` is the machine's view: inside a container limited
to 8 GiB on a 512 GiB host it says hundreds of gigabytes, and a run sized by it is
killed by the kernel's OOM killer at 8.  So the memory guard also reads the cgroup
limits that apply to this process, found through ``/proc/self/cgroup``:

* cgroup v2 (``0::/path``): ``memory.max`` (``max`` = none) and ``memory.current``;
* cgroup v1 (``N:...memory...:/path``): ``memory/<path>/memory.limit_in_bytes`` (a huge
  value = none) and ``memory.usage_in_bytes``;

for the process's own cgroup and every ancestor up to the mount root (a limit set on a
parent binds its children), taking the tightest.  Page cache the kernel can drop
(``inactive_file`` in ``memory.stat``) is not counted as used, as ``docker stats`` does.
A container often sees its cgroup as the mount root while ``/proc/self/cgroup`` names
the host's path: when that path does not exist under the mount, the mount root is read.

Where the files are is injectable (:data:`CGROUP_ROOT`, :data:`PROC_SELF_CGROUP`, or the
arguments), so tests read real files in a temporary directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

#: Where the cgroup file systems are mounted (v2 unified, or v1 with one directory per controller).
CGROUP_ROOT = "/sys/fs/cgroup"
#: The file that names this process's cgroups.
PROC_SELF_CGROUP = "/proc/self/cgroup"
#: A v1 limit at or above this means "no limit" (the kernel reports PAGE_COUNTER_MAX pages).
V1_UNLIMITED = 1 << 60


@dataclass(frozen=True)
class CgroupMemory:
    """The binding memory limit: the cgroup directory it is set on, the limit, and what
    that cgroup uses (reclaimable page cache left out)."""

    version: int
    path: str
    limit: int
    usage: int

    @property
    def available(self) -> int:
        return max(0, self.limit - self.usage)


def _read_int(path: str) -> Optional[int]:
    """The integer in a one-value cgroup file; None when absent, ``max`` or unreadable."""
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            text = fh.read(64).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _stat_value(path: str, keys: tuple[str, ...]) -> int:
    """The first of ``keys`` found in a ``memory.stat`` file (0 when none is)."""
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            lines = fh.read(1 << 16).splitlines()
    except OSError:
        return 0
    values = dict(line.split(" ", 1) for line in lines if " " in line)
    for key in keys:
        if values.get(key, "").strip().isdigit():
            return int(values[key])
    return 0


def _own_cgroups(proc_cgroup: str) -> list[tuple[int, str]]:
    """(version, path) of this process's memory cgroups, from ``/proc/self/cgroup``."""
    try:
        with open(proc_cgroup, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(1 << 16).splitlines()
    except OSError:
        return []
    found: list[tuple[int, str]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            found.append((2, path))
        elif "memory" in controllers.split(","):
            found.append((1, path))
    return found


def _levels(base: str, path: str) -> list[str]:
    """The cgroup directory of ``path`` under ``base`` and its ancestors up to ``base``;
    just ``base`` when the path does not exist there (a container's namespaced view)."""
    rel = [p for p in path.split("/") if p and p not in (".", "..")]
    here = os.path.join(base, *rel)
    if not os.path.isdir(here):
        return [base]
    out = []
    for i in range(len(rel), -1, -1):
        out.append(os.path.join(base, *rel[:i]))
    return out


def cgroup_memory(root: Optional[str] = None, proc_cgroup: Optional[str] = None) -> Optional[CgroupMemory]:
    """The tightest cgroup memory limit on this process (the one leaving the least
    memory free), or None when no cgroup sets one (or none can be read)."""
    root = CGROUP_ROOT if root is None else root
    proc_cgroup = PROC_SELF_CGROUP if proc_cgroup is None else proc_cgroup
    best: Optional[CgroupMemory] = None
    for version, path in _own_cgroups(proc_cgroup):
        if version == 2:
            base, limit_file, usage_file, cache_keys = root, "memory.max", "memory.current", ("inactive_file",)
        else:
            base, limit_file, usage_file = (os.path.join(root, "memory"), "memory.limit_in_bytes",
                                            "memory.usage_in_bytes")
            cache_keys = ("total_inactive_file", "inactive_file")
        for directory in _levels(base, path):
            limit = _read_int(os.path.join(directory, limit_file))
            usage = _read_int(os.path.join(directory, usage_file))
            if limit is None or usage is None or (version == 1 and limit >= V1_UNLIMITED):
                continue
            cache = _stat_value(os.path.join(directory, "memory.stat"), cache_keys)
            found = CgroupMemory(version, directory, limit, max(0, usage - min(cache, usage)))
            if best is None or found.available < best.available:
                best = found
    return best

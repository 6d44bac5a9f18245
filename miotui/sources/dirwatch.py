"""Be told when a followed file changes, instead of asking it (Linux inotify, via ctypes).

Why: following 1 000 files by asking each one "did you grow?" every 50 ms costs a core;
asking each one every second costs almost nothing but makes a new line wait up to a
second.  inotify tells the reader at once which file was written, so files can be asked
rarely and new lines still arrive in milliseconds.  One watch per *directory* (not per
file) covers every followed file in it, files that appear later (a new rank's log, a
re-created log) and renames (rotation).

inotify does not see writes made by another machine to a network file system (NFS,
Lustre), nor exist outside Linux: the reader therefore keeps polling every file too,
only less often (see ``miotui.sources.follow``), and :func:`open_watcher` returns None
where inotify cannot be had.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from typing import Optional

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000

#: What a directory watch asks for: writes, creations, deletions, renames inside it.
DIR_MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
            | IN_DELETE_SELF | IN_MOVE_SELF)
#: Changes that can make a new path appear (a glob may match it, a waited-for file exists).
APPEAR_MASK = IN_CREATE | IN_MOVED_TO
_EVENT = struct.Struct("iIII")
_READ_SIZE = 64 * 1024


class DirWatcher:
    """An inotify descriptor watching directories; :meth:`read` says which names changed."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self.fd = fd
        self._dirs: dict[str, int] = {}      # directory -> watch descriptor
        self._by_wd: dict[int, str] = {}
        self.failed: set[str] = set()        # directories that could not be watched (limits)

    def watch(self, directory: str) -> bool:
        """Watch ``directory`` (once); False when it cannot be (missing, no permission, limit)."""
        if directory in self._dirs:
            return True
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(directory), DIR_MASK)
        if wd < 0:
            self.failed.add(directory)
            return False
        self.failed.discard(directory)
        self._dirs[directory] = wd
        self._by_wd[wd] = directory
        return True

    def watching(self, directory: str) -> bool:
        return directory in self._dirs

    def read(self) -> tuple[list[tuple[str, str, int]], bool]:
        """Pending events as (directory, name, mask), and whether the kernel dropped some
        (then every file must be looked at).  Never blocks."""
        out: list[tuple[str, str, int]] = []
        overflow = False
        while True:
            try:
                buf = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                break
            except OSError:
                break
            if not buf:
                break
            pos = 0
            while pos + _EVENT.size <= len(buf):
                wd, mask, _cookie, length = _EVENT.unpack_from(buf, pos)
                name = buf[pos + _EVENT.size:pos + _EVENT.size + length].split(b"\0", 1)[0]
                pos += _EVENT.size + length
                if mask & IN_Q_OVERFLOW:
                    overflow = True
                    continue
                directory = self._by_wd.get(wd)
                if directory is None:
                    continue
                if mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF):
                    # the directory itself went away or moved: watch it again later by name
                    self._dirs.pop(directory, None)
                    self._by_wd.pop(wd, None)
                    overflow = True
                    continue
                out.append((directory, os.fsdecode(name), mask))
            if len(buf) < _READ_SIZE // 2:
                break
        return out, overflow

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


#: File systems whose files other machines write (or a user-space daemon serves): inotify
#: does not see those writes, so their files are polled as if there were no inotify.
REMOTE_FS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "glusterfs",
                       "9p", "afs", "panfs", "wekafs", "orangefs", "pvfs2", "ocfs2", "gfs2", "davfs", "virtiofs",
                       "vboxsf", "vmhgfs", "ncpfs", "coda", "cvfs", "quobyte", "moosefs", "lizardfs"})


def mount_types(text: str) -> list[tuple[str, str]]:
    """(mount point, file system type) of each line of ``/proc/self/mountinfo``'s ``text``,
    the longest mount point first."""
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        out.append((point, right.split()[0]))
    out.sort(key=lambda m: len(m[0]), reverse=True)
    return out


def is_remote(fs_type: str) -> bool:
    return fs_type in REMOTE_FS or fs_type.startswith("fuse")


class MountTable:
    """Which followed directories inotify fully covers (a local file system), read once
    from ``/proc/self/mountinfo``; anything unknown counts as remote (polled)."""

    def __init__(self, mountinfo: str = "/proc/self/mountinfo") -> None:
        try:
            with open(mountinfo, encoding="utf-8", errors="replace") as fh:
                self._mounts = mount_types(fh.read())
        except OSError:
            self._mounts = []
        self._cache: dict[str, bool] = {}

    def local(self, directory: str) -> bool:
        known = self._cache.get(directory)
        if known is not None:
            return known
        real = os.path.realpath(directory)
        answer = False
        for point, fs_type in self._mounts:
            if real == point or real.startswith(point.rstrip("/") + "/"):
                answer = not is_remote(fs_type)
                break
        self._cache[directory] = answer
        return answer


def open_watcher() -> Optional[DirWatcher]:
    """A :class:`DirWatcher`, or None where inotify is not available (not Linux, no libc)."""
    if not hasattr(os, "pread") or not os.path.isdir("/proc/self"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        init = libc.inotify_init1
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_add_watch.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        return None
    return DirWatcher(libc, fd)

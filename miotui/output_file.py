"""Files miotui writes (exports, a layer's script, ``decode -o``, ``run --dump``, the
settings): created without following a link, overwritten without changing their mode.

Why: an export goes to a name the user types or to a fixed default
(``miotui_layers.sh``, ``miotui_layer_3.sh``) in a directory others may write to.  A
symbolic link planted at that name made ``open(path, "w")`` overwrite the link's target,
and the ``chmod 755`` that followed changed its mode (600 became 755).  So:

* a new file is created exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``) with the usual
  mode less the umask (``rw-r--r--``, ``rwxr-xr-x`` for a script);
* a name that is a symbolic link is refused (``O_NOFOLLOW``), whatever it points at;
* a regular file already there is the one the user chose to overwrite: it is truncated
  and written in place, keeping its mode, owner and links;
* anything else (a directory, a device, a FIFO) is refused, unless the caller allows
  devices and FIFOs (``decode -o /dev/null``), which are written as they are.

Only the last part of the path is protected: the directories are the user's choice.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from typing import IO

__all__ = ["open_output", "write_output", "NotWritable"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_EXISTING = os.O_WRONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


class NotWritable(OSError):
    """The path holds something miotui will not write to (a link, a directory ...).

    An ``OSError`` whose ``strerror`` says why in words, so every caller's existing
    ``except OSError as e: ... e.strerror`` message reads right."""


def _open_fd(path: str, executable: bool, devices: bool) -> int:
    for _ in range(8):      # a name that appears and vanishes between the two opens: try again
        try:
            return os.open(path, _NEW, 0o777 if executable else 0o666)
        except FileExistsError:
            pass
        try:
            fd = os.open(path, _EXISTING)
        except FileNotFoundError:
            continue
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
                raise NotWritable(errno.ELOOP, "it is a symbolic link; miotui never writes through one "
                                               "(remove it or choose another name)", path) from None
            if e.errno == errno.ENXIO and devices:    # a FIFO nobody reads yet: wait for its reader
                fd = os.open(path, _EXISTING & ~os.O_NONBLOCK)
            else:
                raise
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISREG(mode):
                os.ftruncate(fd, 0)
            elif not (devices and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode))):
                raise NotWritable(errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL,
                                  "it is not a regular file", path)
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        except BaseException:
            os.close(fd)
            raise
        return fd
    raise NotWritable(errno.EAGAIN, "it keeps appearing and disappearing", path)


def open_output(path: str, *, binary: bool = False, executable: bool = False, devices: bool = False) -> IO:
    """``path`` opened for writing (text in UTF-8, or ``binary``), by the rules above.

    ``executable``: a new file gets the execute bits (less the umask); an existing file
    keeps its mode.  ``devices``: a character device or FIFO at ``path`` is written to.
    Raises ``OSError`` (``NotWritable`` for a link or a non-regular file)."""
    fd = _open_fd(path, executable, devices)
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8")


def write_output(path: str, text: str, *, executable: bool = False) -> None:
    """Write ``text`` to ``path`` by the rules of :func:`open_output`."""
    with open_output(path, executable=executable) as fh:
        fh.write(text)

"""Run by every Python process of a job ``miotui record`` started with per-rank logs (this
directory is first on the job's ``PYTHONPATH``): a rank's stderr goes to a log of its own.

Why in the rank and not in miotui: MIOpen writes to stderr and has no per-process log file,
and a launcher (torchrun, mpirun, srun) merges its ranks' stderr into one stream, where
lines of ranks interleave mid-block.  Only the rank itself knows its rank (``RANK``,
``OMPI_COMM_WORLD_RANK``, ``PMIX_RANK``, ``PMI_RANK``, ``SLURM_PROCID``) before a line is
written, so here, at interpreter start, before any library is loaded, file descriptor 2 is
replaced by a pipe read by a small forked copier: everything goes to the rank's file
(``MIOTUI_RECORD_RANK_LOG`` with ``{rank}`` expanded), and the rank's own lines (not
MIOpen's or cuDNN's: ``MIOTUI_RECORD_LIBRARY_RE``) also go to the stderr it had, so the user
still sees them.  The copier ignores Ctrl-C and SIGTERM and ends when the rank's last
writer closes the pipe, so it loses nothing the rank wrote as it died.

Self-contained (the job's Python need not have miotui installed) and silent: anything that
fails leaves the rank's stderr as it was.  A rank's children find ``MIOTUI_RECORD_RANK_DONE``
set and inherit the redirected stderr.  The ``sitecustomize`` this one hides is imported
after it, so a site's own customisation still runs.
"""

import os
import sys

RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")


def _rank():
    inherited = set(os.environ.get("MIOTUI_RECORD_INHERITED", "").split(","))
    for name in RANK_VARIABLES:
        value = os.environ.get(name)
        if value is not None and value.isdigit() and (name + "=" + value) not in inherited:
            return value
    return None


def _copy(read_fd, log_fd, library):
    """The copier (a forked child): the pipe to the rank's log, its own lines to stderr."""
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    show = True
    carry = b""
    while True:
        try:
            data = os.read(read_fd, 1 << 20)
        except InterruptedError:
            continue
        except OSError:
            break
        if not data:
            break
        view = memoryview(data)
        while view:
            view = view[os.write(log_fd, view):]
        if not show:
            continue
        buf = carry + data
        cut = buf.rfind(b"\n") + 1
        carry = buf[cut:]
        mine = [line for line in buf[:cut].split(b"\n")[:-1] if not library.search(line)]
        if len(carry) > 1 << 16:
            mine.append(carry)
            carry = b""
        if mine:
            try:
                out = memoryview(b"\n".join(mine) + b"\n")
                while out:
                    out = out[os.write(2, out):]
            except OSError:
                show = False
    if carry and show and not library.search(carry):
        try:
            os.write(2, carry + b"\n")
        except OSError:
            pass


def _start():
    pattern = os.environ.get("MIOTUI_RECORD_RANK_LOG")
    rank = _rank() if pattern else None
    if rank is None or os.environ.get("MIOTUI_RECORD_RANK_DONE") == rank:
        return
    import re
    library = re.compile(os.environ.get("MIOTUI_RECORD_LIBRARY_RE", "MIOpen").encode())
    log_fd = os.open(pattern.replace("{rank}", rank), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    read_fd, write_fd = os.pipe()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(write_fd)
            for fd in (0, 1):
                os.close(fd)
            _copy(read_fd, log_fd, library)
        finally:
            os._exit(0)
    os.close(read_fd)
    os.close(log_fd)
    os.dup2(write_fd, 2)
    os.close(write_fd)
    os.environ["MIOTUI_RECORD_RANK_DONE"] = rank


def _chain():
    """Import the ``sitecustomize`` this one hides (a site's own), if there is one."""
    import importlib
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    mine = sys.modules.pop("sitecustomize", None)
    try:
        importlib.import_module("sitecustomize")
    except ImportError as e:
        if e.name != "sitecustomize":
            raise
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    finally:
        sys.path[:] = saved


try:
    _start()
except Exception:   # never break the job: its stderr stays as it was
    pass
_chain()

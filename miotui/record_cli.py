"""``miotui record [options] -- CMD ARGS...``: start a job with the library's logging
switched on, record its log to a file, and watch it live (or, ``--headless``, decode it
when the job ends).  miotui's exit status is the job's.

Why a prefix command: the user otherwise has to know which ``MIOPEN_*`` variables to set,
redirect stderr, start the job and start miotui on the file in another terminal; tools this
audience knows work as a prefix (``rocprofv3 -- python train.py``).  The pieces:
``record_env`` (the variables), ``record_ranks`` (one log per rank), ``record_job`` (the
process, its output, signals), ``record_app`` (the live app with the job's pane).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import textwrap
import time
from typing import Optional, Sequence

from miotui.record_env import CUDNN_NOTE, LEVEL_HELP, LEVELS

TRACE_UNAVAILABLE = ("--trace is not available yet: this miotui cannot read PyTorch profiler traces (the profiler "
                     "support has not landed); record without --trace")

EPILOG = "levels (each adds to the one before; the cost is the job's, in log lines and time):\n" + "\n".join(
    textwrap.fill(text, 100, initial_indent=f"  {name:17}", subsequent_indent=" " * 19)
    for name, text in LEVEL_HELP.items()) + """

The variables you already set are kept (and reported); the level only adds what is missing.
On an NVIDIA machine (--vendor nvidia, or auto: the NVIDIA driver is loaded and torch, if installed,
reports CUDA) cuDNN's switches are set instead: CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=stderr.
""" + textwrap.fill(CUDNN_NOTE + ".", 100) + """

The job's stdout and stderr go, in the order it wrote them, to the log file. Its own lines (not
MIOpen's or cuDNN's) show in the app's job pane, or pass through to miotui's stderr with --headless
(stdout then holds only the decode). Ctrl-C: the first is sent to the job (SIGINT), a second stops it
(SIGTERM, then SIGKILL after --grace seconds); closing the terminal ends both. The job runs in a
process group of its own and reads nothing from the terminal (--headless passes a piped stdin on).

Jobs started by torchrun, mpirun, mpiexec, srun, deepspeed or accelerate get one log per Python rank:
FILE.rankN.log beside the main log (which keeps the launcher's own output); the app follows them all.

examples:
  miotui record -- python train.py --epochs 1
  miotui record --level first-iteration -o resnet.log -- python train.py
  miotui record --headless --format json -- python train.py > layers.json
  miotui record -- torchrun --nproc-per-node 8 train.py"""


def record_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="miotui record", usage="miotui record [options] -- CMD [ARGS...]",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Start CMD with MIOpen's logging switched on, record its log to a file and watch it live. "
                    "miotui's exit status is the job's.")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="the log file (default: miotui-record-DATE-TIME.log in the current folder); an existing "
                        "file is never overwritten unless --force")
    p.add_argument("--force", action="store_true", help="overwrite FILE (and its rank logs) if they exist")
    p.add_argument("--level", choices=tuple(LEVELS), default="layers",
                   help="what MIOpen logs (default: layers; see below for what each costs)")
    p.add_argument("--vendor", choices=("auto", "amd", "nvidia"), default="auto",
                   help="amd: MIOpen's switches; nvidia: cuDNN's (decoded and followed live); auto (default): "
                        "nvidia when the NVIDIA driver is loaded and torch reports CUDA, else amd")
    p.add_argument("--ranks", choices=("auto", "on", "off"), default="auto",
                   help="one log per rank (auto: when CMD is a rank launcher such as torchrun or mpirun)")
    p.add_argument("--headless", action="store_true",
                   help="no app: pass the job's own lines through, decode the whole log when the job ends")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="--headless output (json: the `miotui decode --format json` contract)")
    p.add_argument("--grace", type=float, default=5.0, metavar="SECONDS",
                   help="seconds between SIGTERM and SIGKILL when the job is stopped (default 5)")
    p.add_argument("--trace", action="store_true", help="a PyTorch profiler trace: not available yet (says so)")
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(miotui's options, the job's command): the command is what follows ``--`` (or the first
    word that is not an option)."""
    args = list(argv)
    if "--" in args:
        i = args.index("--")
        return args[:i], args[i + 1:]
    return args, []


#: a new log: created here or not at all (never a file or a link already there), not inherited by the job
NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def default_name(now: Optional[float] = None) -> str:
    return time.strftime("miotui-record-%Y%m%d-%H%M%S", time.localtime(now))


def open_log(output: Optional[str], force: bool, now: Optional[float] = None) -> tuple[str, int]:
    """(path, fd) of a new log file.  The default name gets ``-2``, ``-3`` ... when taken; a
    named FILE that exists (or has rank logs beside it) is refused unless ``force``: a record
    never overwrites a log silently.  Raises FileExistsError (its message says why) or OSError."""
    import glob

    from miotui.record_ranks import rank_paths

    def taken(path: str) -> bool:
        return os.path.lexists(path) or bool(glob.glob(rank_paths(path)[1]))

    if output:
        if taken(output) and not force:
            raise FileExistsError(f"{output} (or a rank log of it) exists: choose another -o, or --force to "
                                  f"overwrite it")
        if not force:
            return output, os.open(output, NEW_FILE, 0o666)
        for old in glob.glob(rank_paths(output)[1]):
            os.unlink(old)
        from miotui.output_file import open_output
        with open_output(output, binary=True) as fh:     # never through a planted link
            return output, os.dup(fh.fileno())
    base = default_name(now)
    for n in range(1, 1000):
        path = f"{base}.log" if n == 1 else f"{base}-{n}.log"
        if taken(path):
            continue
        try:
            return path, os.open(path, NEW_FILE, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(f"{base}*.log: no free name")


def record_main(argv: Sequence[str]) -> int:
    parser = record_parser()
    opts, command = split_command(argv)
    ns = parser.parse_args(opts)
    command = command or list(ns.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        parser.error("no command to record: miotui record [options] -- CMD [ARGS...]")
    if ns.trace:
        print(f"miotui record: {TRACE_UNAVAILABLE}", file=sys.stderr)
        return 2
    if ns.grace < 0:
        parser.error("--grace must be at least 0")
    return record(ns, command)


def record(ns: argparse.Namespace, command: list[str]) -> int:
    from miotui.record_env import detect_vendor, job_environment
    from miotui.record_job import RecordedJob
    from miotui.record_ranks import plan_ranks, rank_environment
    from miotui.safe_text import visible
    if ns.vendor == "auto":
        vendor, why = detect_vendor(os.environ)
    else:
        vendor, why = ns.vendor, "--vendor"
    try:
        path, log_fd = open_log(ns.output, ns.force)
    except OSError as e:
        reason = e.args[0] if isinstance(e, FileExistsError) else f"{e.filename}: {e.strerror or e}"
        print(f"miotui record: cannot write the log: {visible(str(reason))}", file=sys.stderr)
        return 2
    from miotui.record_job import LIBRARY_RE
    plan = plan_ranks(ns.ranks, command, path)
    setup = job_environment(ns.level, vendor, why, os.environ,
                            extra=rank_environment(plan, os.environ, LIBRARY_RE))
    report = [f"recording {shlex.join(command)} to {path}", *setup.report(), plan.reason]
    if vendor == "amd" and ns.level != "layers":
        report.insert(1, f"level {ns.level}: {LEVEL_HELP[ns.level]}")
    if vendor == "nvidia":
        if ns.level != "layers":
            report.append(f"--level {ns.level} is MIOpen's: cuDNN logs every call at CUDNN_LOGLEVEL_DBG=3")
        report.append(CUDNN_NOTE)
    stdin = 0 if ns.headless and not _is_tty(0) else None
    job = RecordedJob(command, setup.env, path, passthrough=2 if ns.headless else None, grace_s=ns.grace,
                      stdin=stdin)
    try:
        job.start(log_fd)
    except OSError as e:
        os.close(log_fd)
        try:
            os.unlink(path)          # made for this job, still empty: no log of a job that never ran
        except OSError:
            pass
        print(f"miotui record: cannot start {visible(command[0])}: {e.strerror or e}", file=sys.stderr)
        return 127 if isinstance(e, FileNotFoundError) else 126
    paths = [path] + ([plan.follow_glob] if plan.split else [])
    if ns.headless:
        return _headless(job, ns.format, report, plan, vendor)
    return _live(job, paths, report, "cuDNN" if vendor == "nvidia" else "MIOpen")


def _is_tty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _say(text: str) -> None:
    from miotui.safe_text import visible
    try:
        print(f"miotui record: {visible(text)}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _headless(job, fmt: str, report: list[str], plan, vendor: str) -> int:
    """Wait for the job (Ctrl-C, SIGTERM and SIGHUP reach it), then print the decode."""
    for line in report:
        _say(line)
    pending: list[int] = []
    old = {sig: signal.signal(sig, lambda signum, frame: pending.append(signum))
           for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        while not job.finished.wait(0.05):
            while pending:
                sig = pending.pop(0)
                if sig == signal.SIGINT and not job.interrupts and not job.stopping:
                    _say(job.interrupt())
                else:
                    _say(job.stop(signal.SIGTERM if sig == signal.SIGINT else sig))
            for note in job.take_notes():
                if note.kind != "exit":
                    _say(note.text)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    for text in job.close():
        _say(text)
    for note in job.take_notes():
        if note.kind != "exit":
            _say(note.text)
    _say(f"{job.status_text()}; log: {job.log_path} ({job.bytes:,} bytes)" +
         (f" and {len(plan.rank_logs())} rank log(s)" if plan.split else ""))
    code = _print_decode([job.log_path, *plan.rank_logs()], fmt)
    return job.exit_code if job.exit_code or code == 0 else code


def _print_decode(paths: list[str], fmt: str) -> int:
    from miotui.decode_cli import write_stdout
    from miotui.decode_output import render_to
    from miotui.decoding.parallel import decode_files
    from miotui.driver.versions import resolve_driver_version
    try:
        catalog = decode_files(paths)
    except OSError as e:
        _say(f"cannot read {e.filename}: {e.strerror or e}")
        return 2
    version = resolve_driver_version(None)
    return write_stdout(lambda out: render_to(out, catalog, fmt, version), "miotui record")


def _live(job, paths: list[str], report: list[str], library: str) -> int:
    from miotui.launch import app_settings, run_app
    from miotui.record_app import RecordApp
    app = RecordApp(job, paths, report, library=library, **app_settings())
    try:
        run_app(app, job=job)
    finally:
        if job.returncode is None:
            _say(f"the job is still running: stopping it (SIGTERM, then SIGKILL after {job.grace_s:g} s)…")
        said = job.close()
    for text in said:
        _say(text)
    _say(f"{job.status_text()}; log: {job.log_path} ({job.bytes:,} bytes)")
    return job.exit_code if job.exit_code is not None else 1

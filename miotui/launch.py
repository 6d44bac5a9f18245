"""Starting and ending the app from the command line: paths and stdin, the keymap and the
remembered theme, ``--check-config``, and the signals that end it.

Why signals are handled by a thread of their own: closing the terminal (SIGHUP) or
``kill`` (SIGTERM) must end miotui, always.  A Python signal handler runs only when the
main thread next executes Python code, and seen in practice: the main thread blocked
in Textual's driver shutdown (its writer thread gone with the terminal), or the handler
itself deadlocked starting a thread while the main thread held a threading lock; the
process then ignored every later SIGTERM and the demo kept writing its temporary log.
So the C-level handler only writes the signal's number to a pipe
(``signal.set_wakeup_fd``, from whichever thread the kernel picked), and a thread
started beforehand, blocked on that pipe, does the work: it stops the demo's writer,
asks the event loop to exit, and when the process is still alive ``EXIT_GRACE_S``
later, restores the terminal as far as it can and leaves with ``os._exit``.  A second
signal leaves at once.
"""

from __future__ import annotations

import glob
import os
import select
import shlex
import signal
import sys
import threading
import time
from typing import Any, Optional, Sequence

from miotui.sources.follow import is_pattern

#: seconds the app gets to exit cleanly after SIGHUP/SIGTERM before it is ended
EXIT_GRACE_S = 0.8
#: what a full-screen app leaves switched on: mouse reporting, the alternate screen, a hidden cursor
_RESET = b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?2004l\x1b[?1049l\x1b[?25h"


def take_stdin() -> tuple[Optional[int], Optional[str]]:
    """Move a piped stdin aside and give fd 0 the terminal, so the keyboard still works.

    Returns (fd of the pipe, None) or (None, error message).
    """
    if os.isatty(0):
        return None, "stdin is a terminal: pipe a log into miotui (python train.py 2>&1 | miotui -)"
    data_fd = os.dup(0)
    try:
        tty = os.open("/dev/tty", os.O_RDONLY)
    except OSError as e:
        os.close(data_fd)
        return None, f"cannot open the terminal for the keyboard (/dev/tty: {e.strerror}); " \
                     f"use `miotui decode -` without a terminal"
    os.dup2(tty, 0)
    os.close(tty)
    return data_fd, None


def _check_paths(paths: list[str]) -> Optional[str]:
    for p in paths:
        if p == "-":
            continue
        if is_pattern(p):
            if not glob.glob(p):
                return f"no file matches {p}"
        elif not os.path.exists(p):
            return f"cannot read {p}: no such file (use --follow to wait for it)"
        elif not os.access(p, os.R_OK):
            return f"cannot read {p}: permission denied"
    return None


def config_report() -> tuple[Any, list[str]]:
    """(the keymap, every problem with it or the settings) for the app and --check-config.
    The keymap returned holds only key names Textual can produce (the others are problems)."""
    from miotui.app import binding_scopes
    from miotui.config import check_keymap, load_keymap, with_valid_keys
    scopes = binding_scopes()
    defaults = {bid: keys for _, bindings in scopes for bid, keys in bindings}
    keymap = with_valid_keys(load_keymap(), is_key_name, defaults)
    return keymap, check_keymap(keymap, scopes)


#: the modifiers Textual puts before a key's name (``ctrl+shift+up``)
_MODIFIERS = frozenset(("shift", "ctrl", "alt", "meta", "super", "hyper"))


def is_key_name(key: str) -> bool:
    """True for a key name a binding can use: a Textual key (``escape``, ``f5``,
    ``ctrl+r``), one printable character (``E``, ``?``), a character's name
    (``question_mark``, ``slash``), each with modifiers (``alt+shift+up``)."""
    from textual.keys import KEY_ALIASES, REPLACED_KEYS, Keys, key_to_character
    *mods, base = key.split("+")
    if len(set(mods)) != len(mods) or not _MODIFIERS.issuperset(mods):
        return False
    if len(base) == 1:
        return base.isprintable() and not base.isspace()
    named = {k.value for k in Keys if not k.value.startswith("<")}
    named.update(alias for aliases in KEY_ALIASES.values() for alias in aliases)
    if base in named or base in REPLACED_KEYS or key in named:
        return True
    return key_to_character(base) is not None


def check_config() -> int:
    """``miotui --check-config``: say what is wrong with the keymap; 1 when anything is."""
    from miotui.config import settings_path
    from miotui.safe_text import visible
    keymap, problems = config_report()     # a problem quotes the file's text: shown visibly
    print(visible(f"keymap: {keymap.path} ({len(keymap.keys)} binding(s) remapped)"))
    print(visible(f"settings: {settings_path()}"))
    for problem in problems:
        print(visible(f"  problem: {problem}"))
    if not problems:
        print("  no problems")
    return 1 if problems else 0


class _Terminal:
    """The terminal's settings before the app changed them, to restore if it hangs."""

    def __init__(self) -> None:
        self.fd: Optional[int] = None
        self.attrs: Any = None
        try:
            import termios
            if os.isatty(sys.__stdin__.fileno()):
                self.fd = sys.__stdin__.fileno()
                self.attrs = termios.tcgetattr(self.fd)
        except (ImportError, OSError, ValueError, AttributeError):
            self.fd = None

    def restore(self) -> None:
        """Best effort, never blocking: the terminal may be gone."""
        try:
            out = sys.__stdout__.fileno()
            if os.isatty(out):
                # a descriptor of our own: non-blocking without changing the shell's
                fd = os.open(os.ttyname(out), os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
                try:
                    os.write(fd, _RESET)
                finally:
                    os.close(fd)
        except (OSError, ValueError, AttributeError):
            pass
        if self.fd is not None and self.attrs is not None:
            try:
                import termios
                termios.tcsetattr(self.fd, termios.TCSANOW, self.attrs)
            except Exception:  # termios.error (not an OSError) when the terminal is gone
                pass


class ExitGuard:
    """Ends the app on SIGHUP/SIGTERM, cleanly when it can, within ``EXIT_GRACE_S`` always."""

    SIGNALS = (signal.SIGHUP, signal.SIGTERM)

    def __init__(self, app: Any, replay: Any, terminal: _Terminal, job: Any = None) -> None:
        self.app = app
        self.replay = replay
        self.terminal = terminal
        #: a recorded job (``miotui record``): stopped with the app (``job.stop``), killed at once
        #: when the app has to be left without waiting (``job.kill_now``)
        self.job = job
        self._read, write = os.pipe()
        os.set_blocking(write, False)
        self._write = write

    def install(self) -> bool:
        """From the main thread, before the app starts its threads."""
        try:
            signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
            for sig in self.SIGNALS:
                signal.signal(sig, self._ignore_here)
        except (ValueError, OSError):  # not the main thread
            return False
        threading.Thread(target=self._watch, name="miotui-signals", daemon=True).start()
        return True

    @staticmethod
    def _ignore_here(signum: int, frame: Any) -> None:
        """The Python-level handler: nothing to do, the watching thread was woken already."""

    def _watch(self) -> None:
        fired: Optional[int] = None
        deadline = float("inf")
        while True:
            timeout = None if fired is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._read], [], [], timeout)
            if not ready:
                self._leave(128 + (fired or signal.SIGTERM))       # the grace is over
            got = [b for b in os.read(self._read, 64) if b in self.SIGNALS]
            if fired is not None:
                got = [b for b in got if b != fired]   # closing a terminal can send SIGHUP twice: the
                # sender's and the kernel's hangup, one event (else the job was killed unwarned)
            if not got:
                continue                       # another signal's wake-up byte (SIGWINCH ...), a repeat
            if fired is not None:
                self._leave(128 + got[0])      # a second, different signal: no more waiting
            fired = got[0]
            deadline = time.monotonic() + EXIT_GRACE_S
            if self.replay is not None:
                threading.Thread(target=self.replay.cleanup, name="miotui-demo-stop", daemon=True).start()
            if self.job is not None:
                # here, before the app is asked to exit: whatever ends miotui next (the grace, a
                # second signal), the job has had its signal first (stop only sends signals)
                self._stop_job(fired)
            threading.Thread(target=self._request_exit, args=(128 + fired,), name="miotui-exit",
                             daemon=True).start()

    def _stop_job(self, sig: int) -> None:
        try:
            self.job.stop(sig)
        except Exception:  # the job is gone or going: miotui's exit must go on
            pass

    def _request_exit(self, code: int) -> None:
        try:
            self.app.call_from_thread(self.app.exit, return_code=code)
        except Exception:  # the app is already gone or going
            pass

    def _leave(self, code: int) -> None:
        try:
            if self.job is not None:
                self.job.kill_now()
        except Exception:
            pass
        try:
            if self.replay is not None:
                self.replay.stop(0.1)
                os.unlink(self.replay.path)
        except Exception:
            pass
        try:
            self.terminal.restore()
        finally:
            os._exit(code)


def app_paths(paths: Sequence[str], traces: Sequence[str] = ()) -> tuple[list[str], list[str], list[str]]:
    """(logs to read, PyTorch profiler traces, rocprofv3 kernel traces) for the app: a trace
    among the paths (told by its first bytes, ``split_traces``) or given with ``--trace``
    times the logs' layers; traces with no log beside them are read as the log (their own
    layers, as ``miotui decode trace.json`` gives).  A path not there yet (``--follow``),
    a pattern or ``-`` is a log."""
    from miotui.decoding.whole import split_traces
    present = [p for p in paths if p != "-" and not is_pattern(p) and os.path.isfile(p)]
    _logs, found, kernel_found = split_traces(present)
    told = set(found) | set(kernel_found)
    logs = [p for p in paths if p not in told]
    if not logs:
        return list(paths) + list(traces), [], []
    return logs, found + list(traces), kernel_found


def launch(paths: list[str], *, follow: bool, demo: bool, pid: Optional[int], driver: Optional[str] = None,
           launcher: Optional[str] = None, traces: Sequence[str] = ()) -> int:
    """Run the app on ``paths`` (files, glob patterns, ``-``); returns the exit status."""
    try:
        launcher_argv = tuple(shlex.split(launcher)) if launcher else ()
    except ValueError as e:
        print(f"miotui: --launcher: {e}", file=sys.stderr)
        return 2
    paths = list(paths)
    if not demo:
        missing = [t for t in traces if not os.path.isfile(t)]   # read once, at start: it must be there
        error = (f"cannot read the trace {missing[0]}: no such file" if missing
                 else None if follow else _check_paths(paths))
        if error:   # it names a path as given: a pasted name may hold an escape
            from miotui.safe_text import visible
            print(f"miotui: {visible(error)}", file=sys.stderr)
            return 2
    stdin_fd = None
    if "-" in paths:
        stdin_fd, error = take_stdin()
        if error:
            print(f"miotui: {error}", file=sys.stderr)
            return 2
    replay = None
    if demo:
        from miotui.demo import DemoReplay
        replay = DemoReplay()          # started once the signals are handled (below)
        paths, follow = [replay.path], True
    from miotui.app import MiotuiApp
    paths, trace_paths, kernel_traces = app_paths(paths, traces) if not demo else (paths, [], [])
    app = MiotuiApp(paths, follow=follow, pid=pid, stdin_fd=stdin_fd, demo=replay, driver_path=driver,
                    launcher=launcher_argv, traces=trace_paths, kernel_traces=kernel_traces, **app_settings())
    return run_app(app, replay=replay)


def app_settings() -> dict[str, Any]:
    """The app's remembered theme, settings file and keymap problems (keyword arguments)."""
    from miotui.config import load_theme, settings_path
    _keymap, problems = config_report()
    return {"theme": load_theme(), "settings_file": settings_path(), "config_problems": problems}


def run_app(app: Any, *, replay: Any = None, job: Any = None) -> int:
    """Run ``app`` with the user's keymap, ended by SIGHUP/SIGTERM (with the demo's writer
    or the recorded ``job``); returns the app's exit status."""
    keymap, _problems = config_report()
    if keymap.keys:
        app.set_keymap(keymap.keys)
    ExitGuard(app, replay, _Terminal(), job).install()
    if replay is not None:
        replay.start()
    try:
        app.run()
    finally:
        app.shutdown_background()
        if replay is not None:
            replay.cleanup()
    return app.return_code or 0

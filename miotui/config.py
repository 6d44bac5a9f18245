"""miotui's configuration files: the keymap a user writes, and the settings the app
remembers (the theme).  No Textual here: ``miotui --check-config`` and the app share it.

Why bounded reads: the keymap path comes from ``$MIOTUI_KEYMAP``; pointed at
``/dev/zero`` an unbounded read grew to 11 GB, and at a FIFO it blocked start-up.  So
only a regular file is read, opened without blocking, and at most ``MAX_CONFIG_BYTES``.

Why problems are returned, not printed: the app runs full-screen, so a message on
stderr is lost behind it (or seen only after exit).  The app shows the problems as a
notification when it starts; ``miotui --check-config`` prints them and fails.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

from miotui.output_file import open_output

#: The largest config file read (a keymap is a few hundred bytes).
MAX_CONFIG_BYTES = 64 * 1024


def config_dir() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "miotui")


def keymap_path() -> str:
    return os.environ.get("MIOTUI_KEYMAP") or os.path.join(config_dir(), "keymap.toml")


def settings_path() -> str:
    return os.path.join(config_dir(), "settings.toml")


def read_small_file(path: str, limit: int = MAX_CONFIG_BYTES) -> tuple[Optional[str], str]:
    """(text, "") or (None, why not).  A missing file is (None, ""): nothing to read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return None, ""
    except OSError as e:
        return None, f"cannot open it: {e.strerror or e}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "not a regular file"
        data = os.read(fd, limit + 1)
    except OSError as e:
        return None, f"cannot read it: {e.strerror or e}"
    finally:
        os.close(fd)
    if len(data) > limit:
        return None, f"larger than {limit // 1024} KiB: not a keymap"
    return data.decode("utf-8", "replace"), ""


def _parse_toml(text: str) -> tuple[Optional[dict], str]:
    try:
        import tomllib
    except ImportError:   # Python 3.10
        return None, "reading TOML needs Python 3.11 or later"
    try:
        return tomllib.loads(text), ""
    except ValueError as e:
        return None, f"invalid TOML: {e}"


# ---------------------------------------------------------------------- keymap


@dataclass(frozen=True)
class Keymap:
    """Binding id -> keys (``"ctrl+r"``, or several: ``"x,ctrl+r"``), and what was wrong
    with the file (each problem one sentence)."""

    path: str
    keys: dict
    problems: tuple[str, ...] = ()


def load_keymap(path: Optional[str] = None) -> Keymap:
    """The keymap from ``path``, ``$MIOTUI_KEYMAP`` or ``~/.config/miotui/keymap.toml``:
    top-level ``"layers.run" = "ctrl+r"`` pairs, or the same under ``[keys]``."""
    path = path or keymap_path()
    text, why = read_small_file(path)
    if text is None:
        return Keymap(path, {}, (f"keymap {path}: {why}; it is ignored",) if why else ())
    data, why = _parse_toml(text)
    if data is None:
        return Keymap(path, {}, (f"keymap {path}: {why}; it is ignored",))
    table = data.get("keys", data)
    if not isinstance(table, dict):
        return Keymap(path, {}, (f"keymap {path}: [keys] must be a table of id = \"key\"; it is ignored",))
    keys: dict[str, str] = {}
    problems: list[str] = []
    for name, value in table.items():
        if name == "keys" and table is data:
            continue
        if not isinstance(value, str) or not value.strip():
            problems.append(f"keymap {path}: {name} = {value!r} is not a key name (e.g. \"ctrl+r\"); ignored")
            continue
        keys[str(name)] = ",".join(k.strip() for k in value.split(",") if k.strip())
    return Keymap(path, keys, tuple(problems))


def with_valid_keys(keymap: Keymap, is_key: Callable[[str], bool], defaults: dict[str, str]) -> Keymap:
    """``keymap`` less the key names ``is_key`` rejects (``"ctrl+rr"``, ``"ctlr+r"``), each
    named in a problem, as an unknown id is.  Why dropped and not passed on: a binding to a
    name no key produces would never run, and the key it replaced would be gone too; an id
    left with no valid key keeps its default (``defaults``: id -> default keys)."""
    keys: dict[str, str] = {}
    problems = list(keymap.problems)
    for bid, spec in keymap.keys.items():
        good = [k for k in _keys(spec) if is_key(k)]
        bad = [k for k in _keys(spec) if not is_key(k)]
        if good:
            keys[bid] = ",".join(good)
        if not bad:
            continue
        if good:
            kept = f"it keeps {','.join(good)!r}"
        else:
            kept = f"it keeps its default key {defaults[bid]!r}" if bid in defaults else "ignored"
        problems.append(f"keymap {keymap.path}: {', '.join(map(repr, bad))} (for {bid}) "
                        f"{'is not a key name' if len(bad) == 1 else 'are not key names'} "
                        f"(e.g. \"ctrl+r\", \"f5\", \"shift+tab\", \"question_mark\"); {kept}")
    return Keymap(keymap.path, keys, tuple(problems))


def check_keymap(keymap: Keymap, scopes: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> list[str]:
    """Problems of a keymap against the app's bindings.

    ``scopes``: (where, [(binding id, default keys)]) for each set of bindings that are
    active together (the layers screen: the app's, the screen's and the table's).
    Reported: ids no binding has, and a remapped key that another binding of the same
    scope also uses (one of them would never run)."""
    problems = list(keymap.problems)
    known = {bid for _, bindings in scopes for bid, _ in bindings}
    for bid in keymap.keys:
        if bid not in known:
            close = sorted(k for k in known if k.split(".")[-1] == bid.split(".")[-1])
            hint = f" (did you mean {', '.join(close)}?)" if close else " (`?` in the app lists every id)"
            problems.append(f"keymap {keymap.path}: unknown binding id {bid!r}{hint}")
    for where, bindings in scopes:
        owners: dict[str, list[str]] = {}
        for bid, default in bindings:
            for key in _keys(keymap.keys.get(bid, default)):
                owners.setdefault(key, []).append(bid)
        for key, ids in owners.items():
            if len(ids) > 1 and any(i in keymap.keys for i in ids):
                problems.append(f"keymap {keymap.path}: key {key!r} is bound to {' and '.join(ids)} in {where}; "
                                f"only one of them can run")
    return problems


def _keys(spec: str) -> Iterable[str]:
    return (k.strip() for k in spec.split(",") if k.strip())


# ---------------------------------------------------------------------- remembered settings


def load_theme(path: Optional[str] = None) -> Optional[str]:
    """The theme the user last chose, or None."""
    text, _ = read_small_file(path or settings_path())
    if text is None:
        return None
    data, _ = _parse_toml(text)
    theme = (data or {}).get("theme")
    return theme if isinstance(theme, str) and theme else None


def save_theme(theme: str, path: Optional[str] = None) -> str:
    """Remember ``theme``; returns "" or why it could not be saved."""
    path = path or settings_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open_output(tmp) as fh:     # never through a link planted at the temporary name
            fh.write("# written by miotui: the settings it remembers\n")
            fh.write(f"theme = {json.dumps(theme)}\n")      # a JSON string is a TOML basic string
        os.replace(tmp, path)
    except OSError as e:
        return f"cannot save the theme to {path}: {e.strerror or e}"
    return ""

"""Key names in the user's keymap: a name no key produces (``"ctlr+r"``, ``"f99"``) was
accepted silently; the binding then never ran and its default key was gone too.  Now each
one is a problem, like an unknown id: notified when the app starts (the problems of
``config_report`` are what the app shows) and printed by ``miotui --check-config``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pilot_helpers import ROOT, app_for, loaded, table, wait_until, write_small_log

from miotui.launch import config_report, is_key_name


@pytest.mark.parametrize("key", ["ctrl+r", "E", "?", "question_mark", "slash", "f5", "shift+tab", "escape", "enter",
                                 "space", "ctrl+shift+up", "alt+x", "pageup", "comma", "full_stop", "newline"])
def test_key_names_textual_produces_are_accepted(key):
    assert is_key_name(key)


@pytest.mark.parametrize("key", ["ctlr+r", "ctrl+rr", "f99", "enterr", "ctrl+ctrl+r", "ctrl+", "Ctrl+R", "<any>",
                                 "\x1b[A", "questionmark"])
def test_names_no_key_produces_are_rejected(key):
    assert not is_key_name(key)


def test_every_default_key_of_the_app_is_a_key_name():
    """The check knows every name the app's own bindings use (else a user copying a
    default into the keymap would be told it is wrong)."""
    from miotui.app import binding_groups
    names = {k.strip() for _, bindings in binding_groups() for b in bindings for k in b.key.split(",")}
    assert names and [k for k in sorted(names) if not is_key_name(k)] == []


def write_keymap(tmp_path: Path) -> Path:
    km = tmp_path / "keymap.toml"
    km.write_text('"layers.run" = "ctlr+r"\n"app.export" = "E,f99"\n"layers.open" = "enter"\n')
    return km


def test_a_bad_key_name_is_a_problem_and_the_binding_keeps_a_key(tmp_path, monkeypatch):
    monkeypatch.setenv("MIOTUI_KEYMAP", str(write_keymap(tmp_path)))
    keymap, problems = config_report()
    text = "\n".join(problems)
    assert "'ctlr+r' (for layers.run) is not a key name" in text
    assert "'f99' (for app.export) is not a key name" in text
    assert "(for layers.run) is not a key name (e.g. \"ctrl+r\", \"f5\", \"shift+tab\", \"question_mark\"); it keeps " \
           "its default key 'r'" in text
    assert "'f99' (for app.export) is not a key name (e.g. \"ctrl+r\", \"f5\", \"shift+tab\", \"question_mark\"); it " \
           "keeps 'E'" in text
    # what the app applies: the valid names only; layers.run is left to its default
    assert keymap.keys == {"app.export": "E", "layers.open": "enter"}


def test_check_config_reports_bad_key_names(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "miotui", "--check-config"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), MIOTUI_KEYMAP=str(write_keymap(tmp_path))))
    assert proc.returncode == 1
    assert "'ctlr+r' (for layers.run) is not a key name" in proc.stdout, proc.stdout
    assert "'f99' (for app.export) is not a key name" in proc.stdout


async def test_the_app_notifies_bad_key_names_when_it_starts(tmp_path, monkeypatch):
    """What ``launch`` does: the problems of ``config_report`` are the notices, the keymap it
    returns is applied; ``r`` still runs the layer (its binding kept its default key)."""
    monkeypatch.setenv("MIOTUI_KEYMAP", str(write_keymap(tmp_path)))
    keymap, problems = config_report()
    app = app_for([write_small_log(tmp_path)], config_problems=problems)
    app.set_keymap(keymap.keys)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await wait_until(pilot, lambda: app._notifications, what="a notification")
        messages = " ".join(n.message for n in app._notifications)
        assert "'ctlr+r' (for layers.run) is not a key name" in messages
        await loaded(pilot, app, 5)
        await pilot.press("r")
        await wait_until(pilot, lambda: table(app).row_text(table(app).cursor_id)["verdict"].startswith("ok"),
                         timeout=30)

"""Files miotui writes never follow a link planted at their name, and a file the user chose
to overwrite keeps its mode (``miotui.output_file``, used by the app's export and ``w``,
``decode -o``, ``run --dump``, the settings and the sample generator).

The attack: someone who can write the export directory puts ``miotui_layers.sh ->
~/.bashrc``; exporting overwrote the link's target and ``chmod 755`` changed its mode."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from miotui.output_file import NotWritable, open_output, write_output

SMALL = "conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1"
LOG = ("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 "
       "-p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def victim(tmp_path: Path, name: str = "victim") -> Path:
    """A private file (mode 600) that a planted link points at."""
    target = tmp_path / name
    target.write_text("precious\n")
    target.chmod(0o600)
    return target


def umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


@pytest.mark.parametrize("executable", [False, True])
def test_a_link_at_the_name_is_refused_and_its_target_untouched(tmp_path, executable):
    target = victim(tmp_path)
    link = tmp_path / "miotui_layers.sh"
    link.symlink_to(target)
    with pytest.raises(NotWritable, match="symbolic link"):
        write_output(str(link), "#!/bin/sh\n", executable=executable)
    assert target.read_text() == "precious\n" and mode(target) == 0o600
    assert link.is_symlink()


def test_a_dangling_link_creates_nothing_at_its_target(tmp_path):
    link = tmp_path / "out.csv"
    link.symlink_to(tmp_path / "elsewhere.csv")
    with pytest.raises(NotWritable):
        write_output(str(link), "x\n")
    assert not (tmp_path / "elsewhere.csv").exists()


def test_a_new_file_gets_the_usual_mode_and_a_script_the_execute_bits(tmp_path):
    mask = umask()
    write_output(str(tmp_path / "a.csv"), "a\n")
    write_output(str(tmp_path / "a.sh"), "b\n", executable=True)
    assert mode(tmp_path / "a.csv") == 0o666 & ~mask
    assert mode(tmp_path / "a.sh") == 0o777 & ~mask
    assert (tmp_path / "a.sh").read_text() == "b\n"


def test_an_existing_file_is_overwritten_in_place_and_keeps_its_mode(tmp_path):
    target = victim(tmp_path, "layers.sh")
    inode = target.stat().st_ino
    write_output(str(target), "short\n", executable=True)     # a script: still not made 755
    assert target.read_text() == "short\n" and mode(target) == 0o600 and target.stat().st_ino == inode


def test_directories_fifos_and_devices(tmp_path):
    with pytest.raises(OSError):
        write_output(str(tmp_path), "x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError):                       # never blocks waiting for a reader
        write_output(str(fifo), "x")
    with pytest.raises(NotWritable, match="not a regular file"):
        write_output("/dev/null", "x")
    with open_output("/dev/null", devices=True) as fh:  # decode -o /dev/null
        fh.write("x" * 100)


def run_cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miotui", *args], capture_output=True, timeout=120, **kw)


def test_decode_output_refuses_a_link_and_keeps_a_files_mode(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(LOG)
    target = victim(tmp_path)
    link = tmp_path / "out.csv"
    link.symlink_to(target)
    r = run_cli("decode", str(log), "--format", "csv", "-o", str(link))
    assert r.returncode == 2 and b"symbolic link" in r.stderr and b"Traceback" not in r.stderr
    assert target.read_text() == "precious\n" and mode(target) == 0o600
    r = run_cli("decode", str(log), "--format", "csv", "-o", str(target))     # a file chosen: overwritten
    assert r.returncode == 0 and target.read_text().startswith("id,op,") and mode(target) == 0o600
    r = run_cli("decode", str(log), "--format", "csv", "-o", "-")             # '-': standard output
    assert r.returncode == 0 and r.stdout.startswith(b"id,op,")


def test_run_dump_refuses_a_link_at_a_tensor_name(tmp_path):
    from miotui.driver import parse_driver_command
    from miotui.execute.backends import RunSettings
    from miotui.execute.runner import clear_cache, run_layer
    (problem,) = parse_driver_command(SMALL).problems
    target = victim(tmp_path)
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "x.npy").symlink_to(target)
    clear_cache()
    res = run_layer(problem, RunSettings(backend="numpy", iters=1, warmup=0, dump_dir=str(dump)))
    assert res.status == "error" and "symbolic link" in res.message, res.message
    assert target.read_text() == "precious\n" and mode(target) == 0o600
    (dump / "x.npy").unlink()
    (dump / "w.npy").write_bytes(b"old")
    (dump / "w.npy").chmod(0o640)
    clear_cache()
    res = run_layer(problem, RunSettings(backend="numpy", iters=1, warmup=0, dump_dir=str(dump)))
    assert res.status == "ok" and len(res.dumped) == 3
    assert np.load(dump / "w.npy").shape == (4, 3, 3, 3) and mode(dump / "w.npy") == 0o640


def test_the_settings_and_the_generator_never_write_through_their_temporary_names(tmp_path):
    from miotui.config import save_theme
    from miotui.samplegen.generator import write_log
    from miotui.samplegen.spec import SampleSpec
    target = victim(tmp_path)
    settings = tmp_path / "settings.toml"
    Path(str(settings) + ".tmp").symlink_to(target)
    assert "symbolic link" in save_theme("nord", str(settings))
    out = tmp_path / "sample.log"
    Path(str(out) + ".part").symlink_to(target)
    with pytest.raises(NotWritable):
        write_log(SampleSpec(iterations=1), str(out))
    assert target.read_text() == "precious\n" and mode(target) == 0o600

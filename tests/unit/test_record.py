"""``miotui record``: the job gets the variables, the log holds its lines in order, the exit
status is the job's, signals reach the job's whole process group, a job that forks and
exits is recorded to its last line, a 50 MB/s writer loses nothing, several ranks get a log
each.  Every job here is a named fake (``tests/fakes/fake_training_job.py``: prints what
MIOpen prints; ``tests/fakes/fake_launcher.py``: a tiny torchrun); miotui runs for real, as
a subprocess, except where the recorder itself is measured.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from miotui.record_cli import open_log, split_command
from miotui.record_env import job_environment
from miotui.record_job import RecordedJob, exit_status, group_members, is_library_line
from miotui.record_ranks import launcher_of, plan_ranks

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="process groups and signals as on Linux")

ROOT = Path(__file__).resolve().parents[2]
FAKE_JOB = str(ROOT / "tests" / "fakes" / "fake_training_job.py")
FAKE_LAUNCHER = ROOT / "tests" / "fakes" / "fake_launcher.py"


def command_line(n: int) -> str:
    """The fake job's Command line of batch size ``n`` (what MIOpen prints)."""
    return (f"MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {n} -c 64 -H 56 -W 56 -k 64 "
            "-y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1")


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MIOPEN_", "CUDNN_", "PYTHONUNBUFFERED"))}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


def record(tmp_path: Path, *args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miotui", "record", *args], cwd=tmp_path, env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout)


def start_record(tmp_path: Path, *args: str) -> subprocess.Popen:
    """miotui record in a session of its own (the test signals it alone)."""
    return subprocess.Popen([sys.executable, "-m", "miotui", "record", *args], cwd=tmp_path, env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def log_says(path: Path, text: str) -> bool:
    return path.exists() and text in path.read_text()


def wait_for(cond, timeout: float = 30.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what or cond}"
        time.sleep(0.02)


# ---------------------------------------------------------------------------- the environment


def test_the_level_reaches_the_job_and_the_users_own_variables_are_kept_and_reported(tmp_path):
    env = clean_env(MIOPEN_LOG_LEVEL="4", MIOPEN_FIND_MODE="1")
    r = record(tmp_path, "--headless", "--vendor", "amd", "--level", "first-iteration", "-o", "x.log", "--",
               sys.executable, FAKE_JOB, "--steps", "1", "--env-file", "env.json", env=env)
    assert r.returncode == 0, r.stderr
    got = json.loads((tmp_path / "env.json").read_text())
    assert got["MIOPEN_ENABLE_LOGGING_CMD"] == "1"
    assert got["MIOPEN_ENABLE_LOGGING_ELAPSED_TIME"] == "1"
    assert got["MIOPEN_LOG_LEVEL"] == "4", "the user's own value is kept"
    assert got["MIOPEN_FIND_MODE"] == "1"
    assert got["PYTHONUNBUFFERED"] == "1"
    assert "MIOPEN_ENABLE_LOGGING" not in got, "the API trace is the full level's only"
    assert "MIOPEN_LOG_LEVEL=4 (yours, kept; the level sets 6)" in r.stderr
    assert "MIOPEN_FIND_MODE=1 (yours, kept)" in r.stderr


def test_nvidia_sets_cudnns_switches_and_says_what_the_log_costs(tmp_path):
    r = record(tmp_path, "--headless", "--vendor", "nvidia", "-o", "x.log", "--", sys.executable, FAKE_JOB,
               "--steps", "1", "--env-file", "env.json")
    got = json.loads((tmp_path / "env.json").read_text())
    assert got["CUDNN_LOGLEVEL_DBG"] == "3" and got["CUDNN_LOGDEST_DBG"] == "stderr"
    assert not any(k.startswith("MIOPEN_") for k in got)
    assert "cuDNN's log is decoded into the same table" in r.stderr and "5-6x slower" in r.stderr


def test_a_recorded_cudnn_log_is_decoded(tmp_path):
    """A job that logs cuDNN records to its stderr (where record points CUDNN_LOGDEST_DBG):
    the headless decode holds its layers, as a decode of the same bytes does."""
    import lzma
    log = tmp_path / "cudnn.log"
    log.write_bytes(lzma.decompress((ROOT / "tests" / "data" / "cudnn" / "h100" / "small_variety_v7.log.xz")
                                    .read_bytes()))
    job = "import sys; sys.stderr.buffer.write(open(sys.argv[1], 'rb').read())"
    r = record(tmp_path, "--headless", "--format", "json", "--vendor", "nvidia", "-o", "x.log", "--", sys.executable, "-c", job,
               str(log))
    assert r.returncode == 0, r.stderr
    layers = json.loads(r.stdout)["layers"]
    decoded = json.loads(subprocess.run([sys.executable, "-m", "miotui", "decode", "--format", "json", str(log)],
                                        capture_output=True, text=True, env=clean_env(), timeout=60).stdout)["layers"]
    assert len(layers) == 4 and {layer["op"] for layer in layers} == {"conv"}
    assert [(x["problem"], x["executions"]) for x in layers] == [(x["problem"], x["executions"]) for x in decoded]


def test_job_environment_keeps_what_is_set_and_adds_what_is_missing():
    setup = job_environment("time", "amd", "test", {"MIOPEN_ENABLE_LOGGING_CMD": "0", "HOME": "/h"})
    assert setup.env["MIOPEN_ENABLE_LOGGING_CMD"] == "0" and setup.env["MIOPEN_LOG_LEVEL"] == "5"
    assert setup.env["HOME"] == "/h"
    assert [s.ours for s in setup.settings if s.name.startswith("MIOPEN")] == [False, True]


def test_trace_says_it_is_not_available_and_starts_nothing(tmp_path):
    r = record(tmp_path, "--trace", "--headless", "--", sys.executable, FAKE_JOB, "--env-file", "env.json")
    assert r.returncode == 2 and "--trace is not available yet" in r.stderr
    assert not (tmp_path / "env.json").exists() and not list(tmp_path.glob("*.log"))


# ---------------------------------------------------------------------------- the log, the exit status


def test_the_log_holds_every_line_in_the_order_the_job_wrote_them_and_the_exit_status_is_the_jobs(tmp_path):
    r = record(tmp_path, "--headless", "--format", "json", "--vendor", "amd", "-o", "x.log", "--",
               sys.executable, FAKE_JOB, "--steps", "4", "--exit", "3")
    assert r.returncode == 3, r.stderr
    expected = []
    for k in range(4):
        expected += [f"step {k} seq {2 * k}", command_line(2 * k + 1)]
    assert (tmp_path / "x.log").read_text().splitlines() == expected
    doc = json.loads(r.stdout)         # stdout holds the decode only: the job's lines went to stderr
    assert sorted(layer["problem"]["n"] for layer in doc["layers"]) == [1, 3, 5, 7]
    assert "step 3 seq 6" in r.stderr and "MIOpenDriver" not in r.stderr, "the job's own lines pass through"
    assert "exited with status 3" in r.stderr


def test_an_existing_log_is_never_overwritten(tmp_path):
    (tmp_path / "x.log").write_text("precious\n")
    r = record(tmp_path, "--headless", "-o", "x.log", "--", sys.executable, FAKE_JOB, "--env-file", "env.json")
    assert r.returncode == 2 and "exists" in r.stderr
    assert (tmp_path / "x.log").read_text() == "precious\n" and not (tmp_path / "env.json").exists()


def test_force_overwrites_a_file_but_never_through_a_link(tmp_path):
    (tmp_path / "x.log").write_text("old\n")
    r = record(tmp_path, "--headless", "--force", "-o", "x.log", "--", sys.executable, FAKE_JOB, "--steps", "1")
    assert r.returncode == 0 and (tmp_path / "x.log").read_text() == f"step 0 seq 0\n{command_line(1)}\n"
    (tmp_path / "target").write_text("precious\n")
    (tmp_path / "link.log").symlink_to(tmp_path / "target")
    r = record(tmp_path, "--headless", "--force", "-o", "link.log", "--", sys.executable, FAKE_JOB)
    assert r.returncode == 2 and "symbolic link" in r.stderr
    assert (tmp_path / "target").read_text() == "precious\n"


def test_the_default_name_is_never_one_already_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    now = time.mktime((2026, 11, 26, 23, 0, 0, 0, 0, -1))
    first, fd1 = open_log(None, False, now)
    second, fd2 = open_log(None, False, now)
    os.close(fd1)
    os.close(fd2)
    assert first == "miotui-record-20261126-230000.log" and second == "miotui-record-20261126-230000-2.log"


def test_a_program_that_does_not_exist_is_said_with_the_shells_status(tmp_path):
    r = record(tmp_path, "--headless", "--", str(tmp_path / "no-such-program"))
    assert r.returncode == 127 and "cannot start" in r.stderr
    assert not list(tmp_path.glob("*.log")), "no empty log is left of a job that never ran"


def test_the_command_is_what_follows_the_double_dash():
    assert split_command(["--level", "time", "--", "python", "-m", "x", "--", "y"]) == (
        ["--level", "time"], ["python", "-m", "x", "--", "y"])


# ---------------------------------------------------------------------------- signals


def test_the_first_ctrl_c_goes_to_the_job_and_its_status_is_miotuis(tmp_path):
    p = start_record(tmp_path, "--headless", "--vendor", "amd", "-o", "x.log", "--", sys.executable, FAKE_JOB,
                     "--steps", "1", "--wait-signal", "sig.txt")
    wait_for(lambda: log_says(tmp_path / "x.log", "waiting for a signal"), what="the job to wait")
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert (tmp_path / "sig.txt").read_text() == "SIGINT\n"
    assert "Sent SIGINT to the job" in err and "interrupted" in (tmp_path / "x.log").read_text()


def test_a_second_ctrl_c_stops_the_job_with_sigterm_then_sigkill(tmp_path):
    p = start_record(tmp_path, "--headless", "--vendor", "amd", "--grace", "0.5", "-o", "x.log", "--",
                     sys.executable, FAKE_JOB, "--steps", "0", "--wait-signal", "sig.txt", "--keep-on-signals")
    wait_for(lambda: log_says(tmp_path / "x.log", "waiting for a signal"), what="the job to wait")
    os.kill(p.pid, signal.SIGINT)
    wait_for(lambda: (tmp_path / "sig.txt").exists(), what="the job's SIGINT")
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert (tmp_path / "sig.txt").read_text() == "SIGINT\nSIGTERM\n"
    assert p.returncode == 128 + signal.SIGKILL, err
    assert "sent SIGKILL" in err and "killed by SIGKILL" in err


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_closing_the_terminal_or_sigterm_ends_the_job_and_miotui_and_leaves_no_process(tmp_path, sig):
    p = start_record(tmp_path, "--headless", "--vendor", "amd", "--grace", "1", "-o", "x.log", "--",
                     sys.executable, FAKE_JOB, "--steps", "0", "--wait-signal", "sig.txt", "--pidfile", "pid.txt")
    wait_for(lambda: log_says(tmp_path / "x.log", "waiting for a signal"), what="the job to wait")
    pid, pgid = map(int, (tmp_path / "pid.txt").read_text().split())
    assert pgid == pid != os.getpgid(p.pid), "the job has a process group of its own"
    os.kill(p.pid, sig)
    out, err = p.communicate(timeout=30)
    assert (tmp_path / "sig.txt").read_text().splitlines()[0] == signal.Signals(sig).name
    # SIGHUP comes with a SIGTERM (a job that ignores SIGHUP must still end): either may end it
    assert p.returncode in {128 + sig, 128 + signal.SIGTERM}, err
    assert group_members(pgid) == []


def test_a_process_that_left_the_jobs_group_is_stopped_with_it(tmp_path):
    """torchrun starts each worker in a session of its own: the job's process group does not
    hold them, but stopping the job must (else they hold the log open and outlive miotui)."""
    p = start_record(tmp_path, "--headless", "--vendor", "amd", "--grace", "0.5", "-o", "x.log", "--",
                     sys.executable, FAKE_JOB, "--steps", "0", "--session-child", "child.txt",
                     "--wait-signal", "sig.txt", "--pidfile", "pid.txt")
    wait_for(lambda: log_says(tmp_path / "x.log", "waiting for a signal") and log_says(tmp_path / "child.txt", ""),
             what="the job and its child")
    child = int((tmp_path / "child.txt").read_text())
    pid, pgid = map(int, (tmp_path / "pid.txt").read_text().split())
    assert os.getpgid(child) != pgid
    os.kill(p.pid, signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert not os.path.exists(f"/proc/{child}") or open(f"/proc/{child}/stat").read().split(") ")[1][0] == "Z"


def test_a_job_that_forks_and_exits_is_recorded_to_its_childs_last_line_and_leaves_no_process(tmp_path):
    r = record(tmp_path, "--headless", "--format", "json", "--vendor", "amd", "-o", "x.log", "--",
               sys.executable, FAKE_JOB, "--steps", "1", "--fork-child", "0.5", "--exit", "4", "--pidfile", "pid.txt")
    assert r.returncode == 4, r.stderr
    lines = (tmp_path / "x.log").read_text().splitlines()
    assert lines[-4:] == [command_line(1000), command_line(1001), command_line(1002), "child done"]
    assert {1, 1000, 1001, 1002} <= {layer["problem"]["n"] for layer in json.loads(r.stdout)["layers"]}
    pid, pgid = map(int, (tmp_path / "pid.txt").read_text().split())
    assert group_members(pgid) == []


def test_what_is_left_of_the_group_at_the_end_is_stopped(tmp_path):
    """A child that closed its output (a daemon) does not hold the recording open, but it
    does not outlive miotui either."""
    script = ("import os, sys, time\n"
              "if os.fork() == 0:\n"
              "    os.close(1); os.close(2); time.sleep(60); os._exit(0)\n"
              "print(os.getpgid(0), flush=True)\n")
    job = RecordedJob([sys.executable, "-c", script], clean_env(), str(tmp_path / "x.log"), grace_s=0.5)
    job.start(os.open(tmp_path / "x.log", os.O_WRONLY | os.O_CREAT))
    assert job.finished.wait(30)
    pgid = int((tmp_path / "x.log").read_text())
    assert len(group_members(pgid)) == 1, "the daemon still runs when the job's output closed"
    said = job.close()
    assert group_members(pgid) == [] and "still running at miotui's end" in said[0]


# ---------------------------------------------------------------------------- volume


def test_a_job_writing_50_mb_a_second_loses_no_line_and_keeps_their_order(tmp_path):
    """The recorder in this process (no decode after): the log must hold every numbered line
    the job wrote, in order; the pane gets only the job's own line.  The rate the job
    reached is printed (not asserted: timings here are noisy)."""
    log = tmp_path / "x.log"
    job = RecordedJob([sys.executable, FAKE_JOB, "--steps", "0", "--mbps", "50", "--seconds", "2"], clean_env(),
                      str(log))
    job.start(os.open(log, os.O_WRONLY | os.O_CREAT))
    assert job.finished.wait(120)
    job.close()
    data = log.read_bytes()
    lines = data.split(b"\n")
    assert lines[-1] == b""
    summary = lines[-2].decode()
    assert summary.startswith("wrote "), summary
    written, count = int(summary.split()[1]), int(summary.split()[3])
    numbers = [int(line.rsplit(b" ", 1)[1]) for line in lines[:-2]]
    assert numbers == list(range(count)), "every line, in order"
    assert len(data) == written + len(summary) + 1 == job.bytes
    pane, _ = job.take_lines()
    assert pane == [summary]
    print(f"\n50 MB/s job: {summary}")


def test_library_lines_are_told_from_the_jobs_own():
    assert is_library_line(command_line(1).encode())
    assert is_library_line(b"host 1234 MIOpen(HIP): Info [Find] x")
    assert is_library_line(b"I! CuDNN (v91900) function cudnnCreate() called:")
    assert not is_library_line(b"epoch 1 loss 0.3 (MIOpen is fine)")
    assert not is_library_line(b"Traceback (most recent call last):")
    assert exit_status(-15) == 143 and exit_status(3) == 3


# ---------------------------------------------------------------------------- ranks


def test_launchers_are_recognised_by_name():
    assert launcher_of(["torchrun", "--nproc-per-node", "8", "train.py"]) == "torchrun"
    assert launcher_of(["/usr/bin/mpirun", "-np", "4", "./a.out"]) == "mpirun"
    assert launcher_of(["python3", "-m", "torch.distributed.run", "x.py"]) == "python -m torch.distributed.run"
    assert launcher_of(["python", "train.py"]) == ""
    assert not plan_ranks("auto", ["python", "train.py"], "x.log").split
    assert plan_ranks("on", ["python", "train.py"], "x.log").split


def test_several_ranks_get_a_log_each_and_are_decoded_together(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    torchrun = bin_dir / "torchrun"
    torchrun.write_text(f"#!{sys.executable}\n" + FAKE_LAUNCHER.read_text())
    torchrun.chmod(0o755)
    r = record(tmp_path, "--headless", "--format", "json", "--vendor", "amd", "-o", "job.log", "--",
               str(torchrun), "--nproc", "3", sys.executable, FAKE_JOB, "--steps", "0", "--rank-lines", "4")
    assert r.returncode == 0, r.stderr
    for rank in range(3):
        text = (tmp_path / f"job.rank{rank}.log").read_text().splitlines()
        assert text == [line for i in range(4) for line in (f"rank {rank} says {i}", command_line(rank + 1))]
    main = (tmp_path / "job.log").read_text()
    assert "fake launcher: starting 3 ranks" in main and "MIOpenDriver" not in main, \
        "the ranks' MIOpen lines are in their own logs only (never counted twice)"
    assert "rank 2 says 3" in main and "rank 2 says 3" in r.stderr, "a rank's own lines are still seen"
    layers = json.loads(r.stdout)["layers"]
    assert sorted((layer["problem"]["n"], layer["executions"]) for layer in layers) == [(1, 4), (2, 4), (3, 4)]


def test_help_says_what_each_level_costs_and_what_cudnn_gives():
    r = subprocess.run([sys.executable, "-m", "miotui", "record", "--help"], capture_output=True, text=True,
                       env=clean_env(), timeout=60)
    text = " ".join(r.stdout.split())
    for level, cost in (("layers", "the cheapest"), ("time", "a few more lines a call"),
                        ("first-iteration", "many lines while the first iteration compiles"),
                        ("full", "the largest log and the slowest job")):
        assert f"{level} " in text and cost in text
    assert "cuDNN's log is decoded into the same table and followed live" in text


def test_the_vendor_is_found_from_the_devices_and_torch(tmp_path):
    from miotui.record_env import detect_vendor
    assert detect_vendor({}, root=str(tmp_path)) == ("amd", "no NVIDIA driver")
    (tmp_path / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (tmp_path / "proc" / "driver" / "nvidia" / "version").write_text("NVRM 560\n")
    import torch
    expected = "nvidia" if torch.version.cuda and torch.cuda.is_available() else "amd"
    assert detect_vendor({}, root=str(tmp_path))[0] == expected
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "kfd").write_text("")
    assert detect_vendor({}, root=str(tmp_path)) == ("amd", "/dev/kfd: an AMD GPU")


def fake_torchrun(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    torchrun = bin_dir / "torchrun"
    torchrun.write_text(f"#!{sys.executable}\n" + FAKE_LAUNCHER.read_text())
    torchrun.chmod(0o755)
    return torchrun


def test_a_sites_own_sitecustomize_still_runs_in_the_ranks(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nif 'MIOTUI_RECORD_JOB' in os.environ:\n"
                                           "    open(os.path.join(os.environ['MARKS'], str(os.getpid())), 'w')\n")
    (tmp_path / "marks").mkdir()
    env = clean_env(MARKS=str(tmp_path / "marks"))
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{site}"
    r = record(tmp_path, "--headless", "--vendor", "amd", "-o", "job.log", "--", str(fake_torchrun(tmp_path)),
               "--nproc", "2", sys.executable, FAKE_JOB, "--steps", "0", "--rank-lines", "1", env=env)
    assert r.returncode == 0, r.stderr
    assert len(list((tmp_path / "marks").iterdir())) == 3, "the launcher and both ranks ran the site's own"
    assert (tmp_path / "job.rank1.log").read_text().splitlines() == ["rank 1 says 0", command_line(2)]


def test_a_rank_variable_miotui_itself_was_given_does_not_split_the_log(tmp_path):
    """Inside an sbatch allocation SLURM_PROCID=0 is set for everything: not a rank of the job."""
    r = record(tmp_path, "--headless", "--vendor", "amd", "--ranks", "on", "-o", "job.log", "--", sys.executable,
               FAKE_JOB, "--steps", "1", env=clean_env(SLURM_PROCID="0"))
    assert r.returncode == 0, r.stderr
    assert not list(tmp_path.glob("job.rank*.log"))
    assert command_line(1) in (tmp_path / "job.log").read_text()

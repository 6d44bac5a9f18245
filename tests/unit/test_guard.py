"""The memory guard: refuse before allocating, suggest a batch that fits."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miotui.execute import guard, host_memory
from miotui.execute.backends import RunSettings, get_backend
from miotui.execute.runner import clear_cache, run_layer
from miotui.problems import ConvProblem, PoolProblem, ProblemError

GiB = 1 << 30

# A 3-D segmentation layer at batch 256: about 64 GiB of fp32 input alone.
HUGE = ConvProblem("fwd", "fp32", 256, 64, 64, (128, 128, 128), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1))
SMALL = ConvProblem("fwd", "fp32", 2, 3, 4, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1))


def test_estimate_grows_with_batch_and_counts_the_fp64_reference():
    one = guard.estimate_bytes(guard.with_batch(HUGE, 1), get_backend("numpy"))
    two = guard.estimate_bytes(guard.with_batch(HUGE, 2), get_backend("numpy"))
    assert two > one
    # fp32 input of one image: 64 * 128**3 * 4 bytes = 512 MiB; the estimate holds it
    # (fp32 run) and its fp64 copy (reference) at least
    assert one >= 64 * 128 ** 3 * (4 + 8)
    assert guard.estimate_bytes(SMALL, get_backend("numpy"), verify=False) < guard.estimate_bytes(SMALL, get_backend("numpy"))
    assert guard.estimate_bytes(SMALL, get_backend("miopen-driver")) == 0


def test_check_refuses_a_huge_layer_and_suggests_the_largest_batch():
    avail = 16 * GiB
    check = guard.check_memory(HUGE, get_backend("numpy"), available=avail)
    assert not check.ok
    n = check.suggested_batch
    assert n is not None and 1 <= n < HUGE.n
    budget = guard.budget_for(avail)
    assert guard.estimate_bytes(guard.with_batch(HUGE, n), get_backend("numpy")) <= budget
    assert guard.estimate_bytes(guard.with_batch(HUGE, n + 1), get_backend("numpy")) > budget
    assert f"--batch {n}" in check.message and "N=256" in check.message
    assert "GiB" in check.message


def test_check_says_when_not_even_one_image_fits():
    check = guard.check_memory(HUGE, get_backend("numpy"), available=1 * GiB)
    assert not check.ok and check.suggested_batch == 0
    assert "even one image" in check.message


def test_small_layer_fits():
    check = guard.check_memory(SMALL, get_backend("numpy"), available=8 * GiB)
    assert check.ok and check.message == ""


def test_torch_gpu_estimate_checks_device_memory():
    check = guard.check_memory(guard.with_batch(HUGE, 4), get_backend("torch"), available=1 << 50, device="cuda",
                               device_available=2 * GiB)
    assert not check.ok and check.where == "device" and "GPU memory" in check.message


def test_runner_refuses_without_allocating(monkeypatch):
    """The refusal comes before inputs are made: the run allocates next to nothing."""
    clear_cache()
    monkeypatch.setattr(guard, "available_memory", lambda: 16 * GiB)
    tracemalloc.start()
    try:
        res = run_layer(HUGE, RunSettings(backend="numpy"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.status == "refused"
    assert "--batch" in res.message
    assert peak < 50 << 20


def test_with_batch_validates():
    assert guard.with_batch(SMALL, 5).n == 5
    assert guard.with_batch(SMALL, 5).key != SMALL.key
    with pytest.raises(ProblemError):
        guard.with_batch(SMALL, 0)


def test_validate_rejects_non_problems():
    assert guard.validate(SMALL) is None
    assert "not a layer" in (guard.validate("conv -n 1") or "")


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 512), c=st.integers(1, 256), hw=st.integers(4, 256), budget_gib=st.integers(1, 64))
def test_suggested_batch_is_the_largest_that_fits(n, c, hw, budget_gib):
    """Property: the suggestion fits and one more image does not (estimates are monotone in N)."""
    p = PoolProblem("fwd", "fp32", n, c, (hw, hw), (2, 2), (0, 0), (2, 2))
    avail = budget_gib * GiB
    budget = guard.budget_for(avail)
    check = guard.check_memory(p, get_backend("numpy"), available=avail)
    if check.ok:
        assert guard.estimate_bytes(p, get_backend("numpy")) <= budget
        return
    k = check.suggested_batch
    assert k is not None and 0 <= k < n
    if k:
        assert guard.estimate_bytes(guard.with_batch(p, k), get_backend("numpy")) <= budget
    assert guard.estimate_bytes(guard.with_batch(p, k + 1), get_backend("numpy")) > budget


# ----------------------------------------------------------------------------- cgroup limits
# Real files in a temporary directory laid out as the kernel lays out /sys/fs/cgroup and
# /proc/self/cgroup; the reading code runs unchanged on them.

MiB = 1 << 20


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _v2(tmp_path, leaf_max: str, leaf_current: int, parent_max: str = "max", parent_current: int = 0,
        inactive_file: int = 0):
    root = tmp_path / "cgroup"
    leaf = root / "system.slice" / "job.scope"
    _write(root / "system.slice" / "memory.max", parent_max + "\n")
    _write(root / "system.slice" / "memory.current", f"{parent_current}\n")
    _write(leaf / "memory.max", leaf_max + "\n")
    _write(leaf / "memory.current", f"{leaf_current}\n")
    _write(leaf / "memory.stat", f"anon 1234\nfile 5678\ninactive_file {inactive_file}\nactive_file 0\n")
    proc = tmp_path / "proc_self_cgroup"
    _write(proc, "0::/system.slice/job.scope\n")
    return str(root), str(proc)


def test_cgroup_v2_limit_and_usage_are_read(tmp_path):
    root, proc = _v2(tmp_path, str(512 * MiB), 200 * MiB, inactive_file=50 * MiB)
    got = host_memory.cgroup_memory(root, proc)
    assert got is not None and got.version == 2 and got.limit == 512 * MiB
    assert got.usage == 150 * MiB   # page cache the kernel can drop is not counted
    assert got.available == 362 * MiB
    assert got.path.endswith("job.scope")


def test_cgroup_v2_limit_on_a_parent_binds_its_children(tmp_path):
    root, proc = _v2(tmp_path, "max", 10 * MiB, parent_max=str(256 * MiB), parent_current=200 * MiB)
    got = host_memory.cgroup_memory(root, proc)
    assert got is not None and got.available == 56 * MiB and got.path.endswith("system.slice")


def test_cgroup_v2_without_a_limit_is_none(tmp_path):
    root, proc = _v2(tmp_path, "max", 10 * MiB)
    assert host_memory.cgroup_memory(root, proc) is None


def test_cgroup_v1_limit_and_a_containers_namespaced_path(tmp_path):
    root = tmp_path / "cgroup"
    proc = tmp_path / "proc_self_cgroup"
    _write(proc, "12:pids:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n")
    # inside the container the memory hierarchy's root is the container's own cgroup:
    # /docker/abc does not exist under the mount, so the mount root is read
    _write(root / "memory" / "memory.limit_in_bytes", f"{1024 * MiB}\n")
    _write(root / "memory" / "memory.usage_in_bytes", f"{900 * MiB}\n")
    _write(root / "memory" / "memory.stat", f"cache 0\ntotal_inactive_file {100 * MiB}\n")
    got = host_memory.cgroup_memory(str(root), str(proc))
    assert got is not None and got.version == 1 and got.available == 224 * MiB
    # the kernel's "no limit" value
    _write(root / "memory" / "memory.limit_in_bytes", "9223372036854771712\n")
    assert host_memory.cgroup_memory(str(root), str(proc)) is None


def test_unreadable_or_missing_cgroup_files_mean_no_limit(tmp_path):
    assert host_memory.cgroup_memory(str(tmp_path / "none"), str(tmp_path / "no_proc_file")) is None
    proc = tmp_path / "proc_self_cgroup"
    _write(proc, "garbage without colons\n0::/x\n")
    assert host_memory.cgroup_memory(str(tmp_path / "none"), str(proc)) is None


def test_the_guard_honours_a_cgroup_limit_smaller_than_free_memory(tmp_path, monkeypatch):
    """Before: inside a container limited to 1 GiB the guard saw the host's free memory
    and let a layer run into the OOM killer."""
    root, proc = _v2(tmp_path, str(1024 * MiB), 100 * MiB)
    monkeypatch.setattr(host_memory, "CGROUP_ROOT", root)
    monkeypatch.setattr(host_memory, "PROC_SELF_CGROUP", proc)
    import psutil
    free = psutil.virtual_memory().available
    assert guard.available_memory() == min(free, 924 * MiB)
    big = ConvProblem("fwd", "fp32", 64, 64, 64, (128, 128), (3, 3), (1, 1), (1, 1), (1, 1))
    if guard.estimate_bytes(big, get_backend("numpy")) >= guard.budget_for(free):
        pytest.skip("this machine has too little free memory to show the difference")
    check = guard.check_memory(big, get_backend("numpy"))
    assert not check.ok and check.available_bytes == 924 * MiB
    assert "cgroup v2 memory limit" in check.message and "job.scope" in check.message
    assert check.suggested_batch is not None and 1 <= check.suggested_batch < 64

"""The probe inside real cgroup v1 quotas (root; see testkit/realcgroup.py).

These run ``python -m advisor probe --format json`` as a child placed in a fresh group, which is
exactly how a user's container sees its quota, so the numbers checked are what a user's pod sees.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from testkit.realcgroup import CPU_ROOT, PREFIX, RealCgroup, cgroup_unavailable, real_cgroup
from tests.support import REPO
from tests.support.real_parts import missing_real_part

PROBE = [sys.executable, "-m", "advisor", "probe", "--format", "json"]


@pytest.fixture
def cgroups() -> Iterator[None]:
    reason = cgroup_unavailable()
    if reason is not None:
        missing_real_part(reason)
    yield


def _probe_in(group: RealCgroup, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TFTA_")}
    done = subprocess.run(
        group.command([*prefix, *PROBE]),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.mark.cgroup
@pytest.mark.usefixtures("cgroups")
def test_one_and_a_half_cpu_quota() -> None:
    with real_cgroup(1.5) as group:
        data = _probe_in(group)
    assert data["quota_cpus"] == 1.5
    assert data["effective_cpus"] == min(1.5, len(os.sched_getaffinity(0)))
    assert data["cgroup"]["version"] == 1
    assert data["cgroup"]["limiting_path"] == "/" + group.path.name
    assert data["cgroup"]["path"] == "/" + group.path.name
    assert data["warnings"] == []


@pytest.mark.cgroup
@pytest.mark.usefixtures("cgroups")
def test_child_without_quota_of_a_half_cpu_parent() -> None:
    with real_cgroup(0.5) as parent, real_cgroup(None, parent) as child:
        data = _probe_in(child)
    assert data["quota_cpus"] == 0.5
    assert data["effective_cpus"] == 0.5
    assert data["cgroup"]["path"] == f"/{parent.path.name}/{child.path.name}"
    assert data["cgroup"]["limiting_path"] == f"/{parent.path.name}"
    states = [level["state"] for level in data["cgroup"]["levels"]]
    assert states == ["unlimited", "limited", "unlimited"]


@pytest.mark.cgroup
@pytest.mark.usefixtures("cgroups")
def test_kernel_keeps_v1_children_within_their_parent() -> None:
    # Why a child *looser* than its parent exists only in fixture trees (nested-v1, nested-v2):
    # cgroup v1 refuses a child quota above the parent's, and a parent below a child's.
    with real_cgroup(0.5) as parent, real_cgroup(None, parent) as child:
        with pytest.raises(OSError) as refused:
            (child.path / "cpu.cfs_quota_us").write_text("100000\n")
        assert refused.value.errno == errno.EINVAL
    with real_cgroup(None) as parent, real_cgroup(0.8, parent) as child:
        with pytest.raises(OSError) as refused:
            (parent.path / "cpu.cfs_quota_us").write_text("50000\n")
        assert refused.value.errno == errno.EINVAL


@pytest.mark.cgroup
@pytest.mark.usefixtures("cgroups")
def test_taskset_one_cpu_without_quota() -> None:
    with real_cgroup(None) as group:
        data = _probe_in(group, ("taskset", "-c", "0"))
    assert data["affinity_cpus"] == [0]
    assert data["quota_cpus"] is None
    assert data["effective_cpus"] == 1.0


BUSY = """
import json, sys, time
from advisor.probe import read_throttling
before = read_throttling()
end = time.monotonic() + 0.6
while time.monotonic() < end:
    pass
after = read_throttling()
print(json.dumps([before, after]))
"""


@pytest.mark.cgroup
@pytest.mark.usefixtures("cgroups")
@pytest.mark.parametrize("nested", [False, True], ids=["own-quota", "parent-quota"])
def test_read_throttling_moves_under_a_busy_loop(nested: bool) -> None:
    with real_cgroup(0.2) as tight, real_cgroup(None, tight) as child:
        group = child if nested else tight
        done = subprocess.run(
            group.command([sys.executable, "-c", BUSY]),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        stat = tight.cpu_stat()
    before, after = json.loads(done.stdout)
    assert before is not None
    assert after is not None
    periods, throttled, throttled_ms = (a - b for a, b in zip(after, before, strict=True))
    assert periods > 0
    assert throttled > 0
    assert throttled_ms > 0
    # the counters read are the binding group's, as the helper reads them directly
    assert stat["nr_throttled"] >= after[1] > 0


@pytest.mark.cgroup
@pytest.mark.usefixtures("cgroups")
def test_cleanup_kills_leftover_tasks_and_removes_children_first() -> None:
    parent_cm = real_cgroup(0.5)
    parent = parent_cm.__enter__()
    child_cm = real_cgroup(None, parent)
    child = child_cm.__enter__()
    sleeper = subprocess.Popen(child.command(["sleep", "60"]))
    deadline = time.monotonic() + 5
    while not child.tasks() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert child.tasks() == [sleeper.pid]
    parent_cm.__exit__(None, None, None)  # the parent first: the child must go too
    assert sleeper.wait(timeout=5) == -9
    assert not child.path.exists()
    assert not parent.path.exists()
    child_cm.__exit__(None, None, None)  # already gone: a no-op
    assert not list(CPU_ROOT.glob(f"{PREFIX}{os.getpid()}-*"))

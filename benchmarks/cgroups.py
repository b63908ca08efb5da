"""Real cgroup v1 CPU quotas for the benchmark, on top of testkit/realcgroup.py.

The benchmark needs one thing the test helper does not do: move a long-lived measuring process
(every thread of it, via ``cgroup.procs``) into a scenario's group and back out before the group
is removed, because leaving the group's context kills whatever is still inside it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from testkit.realcgroup import CPU_ROOT, RealCgroup, cgroup_unavailable, real_cgroup

__all__ = ["RealCgroup", "cgroup_unavailable", "home_group", "maybe_quota", "move", "real_cgroup"]


def move(group: RealCgroup, pid: int) -> None:
    """Move every thread of ``pid`` into ``group`` (cgroup v1 ``cgroup.procs``)."""
    (group.path / "cgroup.procs").write_text(f"{pid}\n")


def home_group(root: Path = CPU_ROOT) -> RealCgroup:
    """The cpu cgroup this process runs in: where measuring processes go back to."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            candidate = root / path.lstrip("/")
            if (candidate / "cgroup.procs").is_file():
                return RealCgroup(candidate)
    return RealCgroup(root)


@contextlib.contextmanager
def maybe_quota(quota: float | None) -> Iterator[RealCgroup | None]:
    """A real cgroup with ``quota`` CPUs for the block, or None (and no cgroup) without one."""
    if quota is None:
        yield None
        return
    with real_cgroup(quota) as group:
        yield group

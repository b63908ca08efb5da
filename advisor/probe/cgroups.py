"""The cgroup side of the profile: the binding quota over the leaf and all its ancestors, the
relative weight, the cpuset, and the throttling counters of the group that binds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from advisor.models import CgroupInfo, CgroupLevel
from advisor.probe import cgroup_v1, cgroup_v2
from advisor.probe.cgroup_path import CgroupLocation, locate
from advisor.probe.cpulist import parse_cpulist
from advisor.probe.files import HostFiles, excerpt
from advisor.probe.mountinfo import Mount, read_mountinfo
from advisor.probe.proc_cgroup import ProcCgroups, read_proc_cgroup
from advisor.probe.quota import tightest
from advisor.probe.throttling import Throttling, parse_flat_keyed, throttling_from_stat

T = TypeVar("T")


def _files_for(version: int) -> ModuleType:
    return cgroup_v1 if version == 1 else cgroup_v2


def read_levels(files: HostFiles, location: CgroupLocation) -> list[CgroupLevel]:
    """Every level's quota, leaf first."""
    module = _files_for(location.version)
    return [module.read_level(files, lvl.name, lvl.directory) for lvl in location.levels]


def binding_directory(location: CgroupLocation, levels: list[CgroupLevel]) -> Path:
    """The directory of the group whose quota binds, else the leaf's (its cpu.stat is ours)."""
    bound = tightest(levels)
    for level_dir, level in zip(location.levels, levels, strict=True):
        if level is bound:
            return level_dir.directory
    return location.leaf.directory


def read_throttling_at(files: HostFiles, version: int, directory: Path) -> Throttling | None:
    text = files.read(directory / _files_for(version).STAT_FILE, required=False)
    return None if text is None else throttling_from_stat(parse_flat_keyed(text))


def read_cgroup_info(files: HostFiles) -> CgroupInfo:
    """Everything the cgroup files prove; what they do not is left null with a warning."""
    mounts, procs = _read_tables(files)
    if mounts is None or procs is None:
        return CgroupInfo()
    location = locate(files, "cpu", mounts, procs)
    if location is None:
        return CgroupInfo()
    module = _files_for(location.version)
    levels = read_levels(files, location)
    bound = tightest(levels)
    weight = files.read_int(location.leaf.directory / module.WEIGHT_FILE, required=False)
    throttling = read_throttling_at(files, location.version, binding_directory(location, levels))
    return CgroupInfo(
        version=location.version,
        mount_point=location.mount_point,
        path=location.path,
        levels=levels,
        quota_cpus=None if bound is None else bound.quota_cpus,
        limiting_path=None if bound is None else bound.path,
        shares=weight if location.version == 1 else None,
        weight=weight if location.version == 2 else None,
        cpuset_cpus=_read_cpuset(files, mounts, procs),
        nr_throttled=None if throttling is None else throttling.nr_throttled,
        throttled_time_ms=None if throttling is None else throttling.throttled_time_ms,
    )


def _read_tables(files: HostFiles) -> tuple[list[Mount] | None, ProcCgroups | None]:
    return (
        _read_table(files, "/proc/self/mountinfo", read_mountinfo),
        _read_table(files, "/proc/self/cgroup", read_proc_cgroup),
    )


def _read_table(files: HostFiles, name: str, reader: Callable[[Path], T]) -> T | None:
    try:
        return reader(files.root)
    except (OSError, UnicodeDecodeError) as exc:
        problem = getattr(exc, "strerror", None) or type(exc).__name__
        files.warn(files.path(name), f"unreadable ({problem}); cgroup limits unknown")
        return None


def _read_cpuset(files: HostFiles, mounts: list[Mount], procs: ProcCgroups) -> list[int] | None:
    """The leaf's cpuset; on v1 the cpuset controller has its own hierarchy and mount."""
    location = locate(files, "cpuset", mounts, procs)
    if location is None:
        return None
    path = location.leaf.directory / _files_for(location.version).CPUSET_FILE
    text = files.read(path, required=False)
    if text is None:
        return None
    try:
        cpus = parse_cpulist(text)
    except ValueError as exc:
        files.warn(path, f"{exc}; cpuset unknown")
        return None
    if not cpus:
        files.warn(path, f"empty cpuset {excerpt(text)}; the affinity mask is used as is")
        return None
    return cpus

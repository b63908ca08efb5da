"""Where the process's cgroup directory is for one controller, and its ancestors up to the mount.

The directory is ``mount_point + relpath(cgroup_path, mount_root)``: the mount root from
mountinfo is what makes this right inside docker/podman on cgroup v1, where /proc/self/cgroup
shows the host's path but the container's mount is already rooted at that group.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from advisor.probe.files import HostFiles
from advisor.probe.mountinfo import Mount, find_cgroup_mount
from advisor.probe.proc_cgroup import ProcCgroups


@dataclass(frozen=True)
class CgroupLevelDir:
    """One cgroup on the walk: its name in the hierarchy and its directory under the host root."""

    name: str
    directory: Path


@dataclass(frozen=True)
class CgroupLocation:
    """The process's cgroup for one controller."""

    version: Literal[1, 2]
    mount_point: str
    path: str
    levels: tuple[CgroupLevelDir, ...]
    """leaf first, then each ancestor up to (and including) the mount point"""

    @property
    def leaf(self) -> CgroupLevelDir:
        return self.levels[0]


def locate(
    files: HostFiles, controller: str, mounts: list[Mount], procs: ProcCgroups
) -> CgroupLocation | None:
    """The location for ``controller`` ("cpu", "cpuset"), or None (with a warning for cpu)."""
    mountinfo_path = files.path("/proc/self/mountinfo")
    cgroup_path_file = files.path("/proc/self/cgroup")
    mount = find_cgroup_mount(mounts, controller)
    if mount is None:
        if controller == "cpu":
            files.warn(mountinfo_path, "no cgroup mount with the cpu controller; quota unknown")
        return None
    version: Literal[1, 2] = 2 if mount.fstype == "cgroup2" else 1
    path = procs.path_for(controller, version)
    if path is None:
        files.warn(
            cgroup_path_file, f"no cgroup v{version} entry for {controller}; using the mount point"
        )
        path = mount.root
    relative = posixpath.relpath(posixpath.normpath(path), posixpath.normpath(mount.root))
    base = files.path(mount.mount_point)
    if relative.startswith(".."):
        # The process sits outside the mounted subtree (e.g. a container whose mount root is its
        # own group while /proc/self/cgroup names another one): the mount point is the best proof.
        files.warn(
            cgroup_path_file,
            f"cgroup {path} is outside the mount root {mount.root} of {mount.mount_point}; "
            "using the mount point",
        )
        relative = "."
    parts = [] if relative == "." else relative.split("/")
    leaf_dir = base.joinpath(*parts)
    if parts and not leaf_dir.is_dir():
        # An ancestor that exists still binds the process; deeper levels cannot be read.
        while parts and not base.joinpath(*parts).is_dir():
            parts.pop()
        nearest = posixpath.join(mount.root, *parts)
        files.warn(leaf_dir, f"cgroup directory missing; using its nearest ancestor {nearest}")
    levels = [
        CgroupLevelDir(
            name=posixpath.join(mount.root, *parts[:depth]) if depth else mount.root,
            directory=base.joinpath(*parts[:depth]),
        )
        for depth in range(len(parts), -1, -1)
    ]
    return CgroupLocation(
        version=version,
        mount_point=mount.mount_point,
        path=levels[0].name,
        levels=tuple(levels),
    )

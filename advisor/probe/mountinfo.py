"""/proc/self/mountinfo: where each cgroup controller is mounted, and which group is its root.

The root field is what makes containers work: on cgroup v1 a docker/podman container's
``/sys/fs/cgroup/cpu`` is a bind mount of its own cgroup (root ``/docker/<id>``) while
``/proc/self/cgroup`` still shows that host path, so the directory of the process's cgroup is
``mount_point + (cgroup_path - root)``, as uber-go/automaxprocs does it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")

#: mount points under this prefix are the conventional ones; other bind mounts of the same
#: hierarchy (e.g. inside a container runtime's state dir) are only used when none is there.
_CONVENTIONAL_PREFIX = "/sys/fs/cgroup"


@dataclass(frozen=True)
class Mount:
    """One line of mountinfo, reduced to what the cgroup lookup needs."""

    root: str
    mount_point: str
    fstype: str
    super_options: tuple[str, ...]

    def has_controller(self, controller: str) -> bool:
        """True for a cgroup v1 mount carrying ``controller`` (e.g. "cpu" in "rw,cpu,cpuacct")."""
        return self.fstype == "cgroup" and controller in self.super_options


def parse_mountinfo(text: str) -> list[Mount]:
    """Every well-formed line; malformed lines are skipped (the kernel never writes them)."""
    mounts: list[Mount] = []
    for line in text.splitlines():
        fields = line.split()
        try:
            separator = fields.index("-", 6)
        except ValueError:
            continue
        if len(fields) < separator + 3:
            continue
        mounts.append(
            Mount(
                root=_unescape(fields[3]),
                mount_point=_unescape(fields[4]),
                fstype=fields[separator + 1],
                super_options=tuple(fields[separator + 3].split(",")),
            )
        )
    return mounts


def read_mountinfo(host_root: Path) -> list[Mount]:
    """The mounts of the process, or OSError if the file cannot be read."""
    return parse_mountinfo((host_root / "proc/self/mountinfo").read_text(encoding="utf-8"))


def find_cgroup_mount(mounts: list[Mount], controller: str) -> Mount | None:
    """The cgroup v1 mount carrying ``controller``, else the cgroup2 mount, else None.

    v1 wins on hybrid hosts: a controller attached to a v1 hierarchy is absent from v2.
    """
    v1 = [m for m in mounts if m.has_controller(controller)]
    if v1:
        return _prefer_conventional(v1)
    v2 = [m for m in mounts if m.fstype == "cgroup2"]
    if v2:
        return _prefer_conventional(v2)
    return None


def _prefer_conventional(candidates: list[Mount]) -> Mount:
    for mount in candidates:
        if mount.mount_point.startswith(_CONVENTIONAL_PREFIX):
            return mount
    return candidates[0]


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \040, \011, \012, \134.
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)

"""/proc/self/cgroup: the process's cgroup path in each hierarchy.

Lines are ``hierarchy-id:controller,list:path``; cgroup v2 is the single ``0::path`` line. On a
hybrid host both kinds appear, and a controller listed on a v1 line is not usable in v2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcCgroups:
    """Paths by v1 controller, plus the v2 path (None when there is no ``0::`` line)."""

    v1: dict[str, str]
    v2: str | None

    def path_for(self, controller: str, version: int) -> str | None:
        return self.v1.get(controller) if version == 1 else self.v2


def parse_proc_cgroup(text: str) -> ProcCgroups:
    """Parse the file; lines that do not have three fields are skipped."""
    v1: dict[str, str] = {}
    v2: str | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy_id, controllers, path = parts
        if hierarchy_id == "0" and controllers == "":
            v2 = path
            continue
        for controller in controllers.split(","):
            if controller:
                v1[controller] = path
    return ProcCgroups(v1=v1, v2=v2)


def read_proc_cgroup(host_root: Path) -> ProcCgroups:
    """The process's cgroups, or OSError if the file cannot be read."""
    return parse_proc_cgroup((host_root / "proc/self/cgroup").read_text(encoding="utf-8"))

"""The memory cgroup's OOM-kill counters, to tell an OOM kill from any other SIGKILL."""

from __future__ import annotations

from pathlib import Path

from advisor.probe.cgroup_path import locate
from advisor.probe.files import HostFiles
from advisor.probe.mountinfo import read_mountinfo
from advisor.probe.proc_cgroup import read_proc_cgroup


def oom_kills() -> tuple[int, ...] | None:
    """oom_kill counters of this process's memory cgroup and its ancestors (children share it)."""
    try:
        files = HostFiles(Path("/"))
        location = locate(files, "memory", read_mountinfo(files.root), read_proc_cgroup(files.root))
        if location is None:
            return None
        name = "memory.oom_control" if location.version == 1 else "memory.events"
        counts = []
        for level in location.levels:
            text = files.read(level.directory / name, required=False) or ""
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit():
                    counts.append(int(value))
        return tuple(counts)
    except Exception:  # only a hint for the reason: never let it fail a trial
        return None

"""CPU topology from /sys/devices/system/cpu (and NUMA nodes from /sys/devices/system/node).

Counted over *online* CPUs only: with SMT switched off the sibling threads are offline, so
threads_per_core becomes 1 exactly when the hardware really runs one thread per core.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from advisor.models import Topology
from advisor.probe.cpulist import parse_cpulist
from advisor.probe.files import HostFiles, excerpt

CPU_DIR = "/sys/devices/system/cpu"
NODE_DIR = "/sys/devices/system/node"
_CPU_NAME = re.compile(r"cpu(\d+)")
_NODE_NAME = re.compile(r"node(\d+)")


@dataclass
class TopologyReading:
    """The topology plus each online CPU's (package, core), to count cores under an affinity."""

    topology: Topology
    core_of: dict[int, tuple[int, int]] = field(default_factory=dict)

    def physical_cores_of(self, cpus: list[int]) -> int | None:
        """Distinct physical cores under ``cpus``; None unless every one of them is known."""
        if not cpus or any(cpu not in self.core_of for cpu in cpus):
            return None
        return len({self.core_of[cpu] for cpu in cpus})


def read_topology(files: HostFiles) -> TopologyReading:
    """What sysfs proves; without /sys/devices/system/cpu everything is unknown, with a warning."""
    base = files.path(CPU_DIR)
    if not base.is_dir():
        files.warn(base, "missing; CPU topology unknown")
        return TopologyReading(Topology())
    online = _online_cpus(files, base)
    core_of: dict[int, tuple[int, int]] = {}
    missing: list[int] = []
    for cpu in online:
        topo = base / f"cpu{cpu}" / "topology"
        package = _int_or_none(topo / "physical_package_id")
        core = _int_or_none(topo / "core_id")
        if package is None or core is None:
            missing.append(cpu)
        else:
            core_of[cpu] = (package, core)
    if missing:
        files.warn(
            base / f"cpu{missing[0]}" / "topology",
            f"physical_package_id/core_id unreadable for {len(missing)} online CPU(s); "
            "sockets and cores unknown",
        )
        core_of = {}
    threads: dict[tuple[int, int], int] = {}
    for key in core_of.values():
        threads[key] = threads.get(key, 0) + 1
    complete = bool(core_of)
    topology = Topology(
        online_cpus=online,
        sockets=len({package for package, _ in core_of.values()}) if complete else None,
        physical_cores=len(threads) if complete else None,
        threads_per_core=max(threads.values()) if complete else None,
        smt_active=_smt_active(files, base),
        numa_nodes=_numa_nodes(files),
    )
    return TopologyReading(topology, core_of)


def _online_cpus(files: HostFiles, base: Path) -> list[int]:
    path = base / "online"
    text = files.read(path, required=False)
    if text is not None:
        try:
            cpus = parse_cpulist(text)
        except ValueError as exc:
            files.warn(path, f"{exc}; using the cpuN directories")
        else:
            if cpus:
                return cpus
            files.warn(path, "empty; using the cpuN directories")
    # Fallback: every cpuN directory whose online flag is not 0 (cpu0 often has no flag).
    cpus = []
    for entry in base.iterdir():
        match = _CPU_NAME.fullmatch(entry.name)
        if match and entry.is_dir() and _int_or_none(entry / "online") != 0:
            cpus.append(int(match.group(1)))
    return sorted(cpus)


def _smt_active(files: HostFiles, base: Path) -> bool | None:
    path = base / "smt" / "active"
    text = files.read(path, required=False)
    if text is None:
        return None
    if text in {"0", "1"}:
        return text == "1"
    files.warn(path, f"expected 0 or 1, got {excerpt(text)}")
    return None


def _numa_nodes(files: HostFiles) -> int | None:
    """Nodes that have CPUs; None where the kernel exposes no node directory (no NUMA)."""
    base = files.path(NODE_DIR)
    if not base.is_dir():
        return None
    count = 0
    for entry in base.iterdir():
        if not _NODE_NAME.fullmatch(entry.name):
            continue
        text = files.read(entry / "cpulist", required=False)
        try:
            if text and parse_cpulist(text):
                count += 1
        except ValueError as exc:
            files.warn(entry / "cpulist", str(exc))
    return count or None


def _int_or_none(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None

"""What a TensorFlow process started here really has: affinity, CFS quota, topology.

``probe_node`` assembles the small readers in this package into a ``NodeProfile``;
``read_throttling`` is the cheap, never-raising cpu.stat reading the trial child takes before and
after measuring. Every reader takes a host root (default "/") so tests point it at fixture trees.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path

from advisor.models import CPU_DECIMALS, NodeProfile, Topology
from advisor.probe.affinity import is_live_root, read_affinity
from advisor.probe.cgroup_path import locate
from advisor.probe.cgroups import binding_directory, read_cgroup_info, read_levels
from advisor.probe.cgroups import read_throttling_at as _read_throttling_at
from advisor.probe.cpuinfo import read_cpuinfo
from advisor.probe.downward import cross_check, read_downward
from advisor.probe.files import HostFiles
from advisor.probe.mountinfo import read_mountinfo
from advisor.probe.proc_cgroup import read_proc_cgroup
from advisor.probe.throttling import Throttling
from advisor.probe.topology import read_topology

__all__ = ["Throttling", "probe_node", "read_throttling"]


def probe_node(
    host_root: Path = Path("/"),
    *,
    env: Mapping[str, str] | None = None,
    affinity: Collection[int] | None = None,
) -> NodeProfile:
    """Profile the calling process (or the fixture tree at ``host_root``).

    ``env`` (default ``os.environ``) supplies the Downward API values; ``affinity`` overrides
    the mask (default: ``os.sched_getaffinity(0)`` on "/", ``Cpus_allowed_list`` of
    ``<root>/proc/self/status`` elsewhere). Raises ProbeError only when the affinity is unknown.
    """
    files = HostFiles(Path(host_root))
    affinity_cpus, affinity_source = read_affinity(files, affinity)
    cgroup = read_cgroup_info(files)
    reading = read_topology(files)
    cpuinfo = read_cpuinfo(files)
    topology = reading.topology
    if cpuinfo is not None:
        topology = topology.model_copy(
            update={"cpu_model": cpuinfo.model, "isa_flags": cpuinfo.isa_flags}
        )
    logical_cpus = _logical_cpus(files, topology, cpuinfo.processors if cpuinfo else 0)
    logical_cpus = max(logical_cpus, len(affinity_cpus))
    if cgroup.cpuset_cpus is not None and not set(affinity_cpus) <= set(cgroup.cpuset_cpus):
        files.warnings.append(
            "affinity includes CPUs outside the cgroup cpuset; the affinity mask is used"
        )
    effective = float(len(affinity_cpus))
    if cgroup.quota_cpus is not None:
        effective = min(effective, cgroup.quota_cpus)
    warnings = files.warnings
    environment = os.environ if env is None else env
    downward = read_downward(environment, warnings)
    warnings.extend(cross_check(downward, cgroup.quota_cpus, logical_cpus))
    return NodeProfile(
        logical_cpus=logical_cpus,
        affinity_cpus=affinity_cpus,
        affinity_source=affinity_source,
        affinity_physical_cores=reading.physical_cores_of(affinity_cpus),
        quota_cpus=cgroup.quota_cpus,
        effective_cpus=max(round(effective, CPU_DECIMALS), 10.0**-CPU_DECIMALS),
        cgroup=cgroup,
        topology=topology,
        downward_api=downward,
        warnings=warnings,
    )


def read_throttling(host_root: Path = Path("/")) -> Throttling | None:
    """The calling process's cpu.stat counters, from the group whose quota binds (else the leaf).

    The binding group is the one CFS throttles: with a quota on a parent only, the leaf's own
    counters stay at zero. Cheap (a handful of small reads) and never raises: None when unknown.
    """
    try:
        files = HostFiles(Path(host_root))
        location = locate(files, "cpu", read_mountinfo(files.root), read_proc_cgroup(files.root))
        if location is None:
            return None
        directory = binding_directory(location, read_levels(files, location))
        return _read_throttling_at(files, location.version, directory)
    except Exception:  # the trial must never fail because of a counter
        return None


def _logical_cpus(files: HostFiles, topology: Topology, processors: int) -> int:
    if topology.online_cpus:
        return len(topology.online_cpus)
    if processors:
        return processors
    if is_live_root(files.root):
        return os.cpu_count() or 1
    return 1

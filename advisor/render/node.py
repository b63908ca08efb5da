"""A node profile in a few lines: what ``probe`` prints for people."""

from __future__ import annotations

from collections.abc import Iterable

from advisor.models import NodeProfile


def node_summary(profile: NodeProfile) -> str:
    """E.g. "2 CPUs allowed (0-1), quota 1.5 CPUs (cgroup v1, /kubepods/x): effective 1.5"."""
    allowed = (
        f"{_cpus(len(profile.affinity_cpus))} allowed "
        f"({format_cpulist(profile.affinity_cpus)} of {profile.logical_cpus})"
    )
    cgroup = profile.cgroup
    where = f"cgroup v{cgroup.version}" if cgroup.version else "no cgroup cpu controller"
    if profile.quota_cpus is not None:
        quota = f"quota {_cpus(profile.quota_cpus)} ({where}, {cgroup.limiting_path})"
    elif any(level.state == "unknown" for level in cgroup.levels):
        quota = f"quota unknown ({where}, see warnings)"
    else:
        quota = f"no quota ({where})"
    lines = [f"{allowed}, {quota}: effective {profile.effective_cpus:g}"]
    topo = profile.topology
    if topo.physical_cores is not None:
        lines.append(
            f"topology: {topo.sockets} socket(s), {topo.physical_cores} core(s), "
            f"{topo.threads_per_core} thread(s)/core, NUMA nodes {topo.numa_nodes or '?'}"
        )
    if topo.isa_flags:
        lines.append(f"ISA: {' '.join(topo.isa_flags)}")
    lines.extend(f"warning: {warning}" for warning in profile.warnings)
    return "\n".join(lines)


def format_cpulist(cpus: Iterable[int]) -> str:
    """The kernel's compact CPU list form ("0-3,8-11"; ``advisor.probe.cpulist`` parses it)."""
    ordered = sorted(set(cpus))
    runs: list[str] = []
    start = prev = None
    for cpu in ordered:
        if start is None:
            start = prev = cpu
        elif prev is not None and cpu == prev + 1:
            prev = cpu
        else:
            runs.append(_run(start, prev))
            start = prev = cpu
    if start is not None:
        runs.append(_run(start, prev))
    return ",".join(runs)


def _run(start: int, end: int | None) -> str:
    return str(start) if end is None or end == start else f"{start}-{end}"


def _cpus(count: float) -> str:
    return f"{count:g} CPU" + ("" if count == 1 else "s")

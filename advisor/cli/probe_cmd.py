"""``tf-thread-advisor probe``: print what a TF process started here really has to run on."""

from __future__ import annotations

import argparse
from typing import Any

from advisor.cli._args import add_host_root
from advisor.cli._output import FORMATS, emit, render
from advisor.models import NodeProfile
from advisor.probe import probe_node
from advisor.probe.cpulist import format_cpulist


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "probe",
        help="show affinity, CFS quota and topology, and the effective CPU count",
        description="Profile this process's CPUs: affinity mask, the tightest cgroup CPU quota "
        "of its group and every ancestor, topology and ISA flags. Nothing is written.",
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    add_host_root(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    profile = probe_node(args.host_root)
    emit(render(profile, args.format, summary) + "\n")
    return 0


def summary(profile: NodeProfile) -> str:
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


def _cpus(count: float) -> str:
    return f"{count:g} CPU" + ("" if count == 1 else "s")

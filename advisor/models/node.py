"""What the probe found out about the node: the CPUs a TensorFlow process started here really has
(filled by ``advisor.probe``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from advisor.models.base import StrictModel

#: cgroup quotas are rounded to this many decimals: CFS works in microseconds of a 100 ms period,
#: so finer digits are noise, and 1.5 must print as 1.5.
CPU_DECIMALS = 3


QuotaState = Literal["limited", "unlimited", "unknown"]


class CgroupLevel(StrictModel):
    """One cgroup on the path from the process's leaf up to the mount root."""

    path: str = Field(description="cgroup path as the kernel names it in the hierarchy")
    state: QuotaState = Field(
        description="limited: a quota is set; unlimited: none; unknown: the files were unusable"
    )
    quota_cpus: float | None = Field(
        default=None, gt=0, description="quota/period in CPUs at this level; null unless limited"
    )
    quota_us: int | None = Field(default=None, description="raw quota in microseconds, if limited")
    period_us: int | None = Field(default=None, gt=0, description="raw CFS period in microseconds")


class CgroupInfo(StrictModel):
    """What the cgroup CPU controller says about the process."""

    version: Literal[1, 2] | None = Field(
        default=None, description="cgroup version of the cpu controller; null if none was found"
    )
    mount_point: str | None = Field(default=None, description="where the cpu controller is mounted")
    path: str | None = Field(default=None, description="the process's cgroup (leaf) path")
    levels: list[CgroupLevel] = Field(
        default_factory=list, description="leaf first, then each ancestor up to the mount root"
    )
    quota_cpus: float | None = Field(
        default=None, ge=0, description="tightest quota of the leaf and its ancestors, in CPUs"
    )
    limiting_path: str | None = Field(
        default=None, description="the cgroup whose quota binds (the tightest)"
    )
    shares: int | None = Field(default=None, description="cgroup v1 cpu.shares (relative weight)")
    weight: int | None = Field(default=None, description="cgroup v2 cpu.weight (relative weight)")
    cpuset_cpus: list[int] | None = Field(
        default=None,
        description="CPUs the cpuset controller allows (informational: the kernel already "
        "applies it to the affinity mask), if it could be read",
    )
    nr_throttled: int | None = Field(default=None, ge=0, description="throttled periods so far")
    throttled_time_ms: float | None = Field(
        default=None, ge=0, description="time spent throttled so far, in milliseconds"
    )


class Topology(StrictModel):
    """CPU topology from /sys/devices/system/cpu and /proc/cpuinfo (whole machine)."""

    online_cpus: list[int] = Field(default_factory=list, description="online logical CPUs")
    sockets: int | None = Field(default=None, ge=1, description="physical packages")
    physical_cores: int | None = Field(default=None, ge=1, description="distinct (socket, core)")
    threads_per_core: int | None = Field(default=None, ge=1, description="SMT siblings per core")
    smt_active: bool | None = Field(default=None, description="/sys/devices/system/cpu/smt/active")
    numa_nodes: int | None = Field(default=None, ge=1, description="NUMA nodes with CPUs")
    cpu_model: str | None = Field(default=None, description="model name from /proc/cpuinfo")
    isa_flags: list[str] = Field(
        default_factory=list,
        description="inference-relevant ISA flags present (avx2, avx512f, avx512_vnni, ...)",
    )


class DownwardAPI(StrictModel):
    """Values a pod may be given through the Kubernetes Downward API (a cross-check only)."""

    node_name: str | None = Field(default=None, description="spec.nodeName")
    pod_name: str | None = Field(default=None, description="metadata.name")
    pod_namespace: str | None = Field(default=None, description="metadata.namespace")
    cpu_limit_cpus: float | None = Field(
        default=None, ge=0, description="limits.cpu (resourceFieldRef, divisor 1m), in CPUs"
    )
    cpu_request_cpus: float | None = Field(
        default=None, ge=0, description="requests.cpu (resourceFieldRef, divisor 1m), in CPUs"
    )


class NodeProfile(StrictModel):
    """What a TensorFlow process started here really has to run on."""

    logical_cpus: int = Field(ge=1, description="logical CPUs online on the machine")
    affinity_cpus: list[int] = Field(
        min_length=1, description="CPUs in the process's affinity mask (what TF sizes pools from)"
    )
    quota_cpus: float | None = Field(
        default=None, ge=0, description="tightest CFS quota in CPUs; null when unlimited/unknown"
    )
    effective_cpus: float = Field(
        gt=0, description="min(len(affinity), quota), fractional kept: what the process can use"
    )
    affinity_source: str = Field(
        description="where affinity_cpus came from: sched_getaffinity, a caller, or a file"
    )
    affinity_physical_cores: int | None = Field(
        default=None, ge=1, description="distinct physical cores under the affinity CPUs"
    )
    cgroup: CgroupInfo = Field(default_factory=CgroupInfo)
    topology: Topology = Field(default_factory=Topology)
    downward_api: DownwardAPI | None = Field(
        default=None, description="Downward API values, when the pod was given them"
    )
    warnings: list[str] = Field(
        default_factory=list, description="what could not be read or proven, naming the file"
    )

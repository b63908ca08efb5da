"""Kubernetes Downward API values from the environment: a cross-check, never the truth.

The Job manifest exposes them as (``divisor: 1m`` makes CPU values integer millicores)::

    TFTA_CPU_LIMIT      resourceFieldRef: {resource: limits.cpu,   divisor: 1m}
    TFTA_CPU_REQUEST    resourceFieldRef: {resource: requests.cpu, divisor: 1m}
    TFTA_NODE_NAME      fieldRef: {fieldPath: spec.nodeName}
    TFTA_POD_NAME       fieldRef: {fieldPath: metadata.name}
    TFTA_POD_NAMESPACE  fieldRef: {fieldPath: metadata.namespace}

The cgroup files are what the kernel enforces; a limit that disagrees with them is reported as a
warning (a stale manifest, a runtime that ignores limits, or a limit without CFS quota).
"""

from __future__ import annotations

from collections.abc import Mapping

from advisor.models import CPU_DECIMALS, DownwardAPI

CPU_LIMIT = "TFTA_CPU_LIMIT"
CPU_REQUEST = "TFTA_CPU_REQUEST"
NODE_NAME = "TFTA_NODE_NAME"
POD_NAME = "TFTA_POD_NAME"
POD_NAMESPACE = "TFTA_POD_NAMESPACE"
ENV_NAMES = (CPU_LIMIT, CPU_REQUEST, NODE_NAME, POD_NAME, POD_NAMESPACE)

#: quota and limit agree if they differ by less than this many CPUs (kubelet converts
#: millicores to a quota exactly, so this only absorbs rounding)
TOLERANCE_CPUS = 0.001


def read_downward(env: Mapping[str, str], warnings: list[str]) -> DownwardAPI | None:
    """The values present in ``env``; None when the pod was given none of them."""
    if not any(env.get(name) for name in ENV_NAMES):
        return None
    return DownwardAPI(
        node_name=env.get(NODE_NAME) or None,
        pod_name=env.get(POD_NAME) or None,
        pod_namespace=env.get(POD_NAMESPACE) or None,
        cpu_limit_cpus=_millicores(env, CPU_LIMIT, warnings),
        cpu_request_cpus=_millicores(env, CPU_REQUEST, warnings),
    )


def cross_check(
    downward: DownwardAPI | None, quota_cpus: float | None, logical_cpus: int
) -> list[str]:
    """Warnings where the Downward API limit and the cgroup quota disagree."""
    if downward is None or downward.cpu_limit_cpus is None:
        return []
    limit = downward.cpu_limit_cpus
    if quota_cpus is None:
        # Without limits.cpu the Downward API reports node allocatable: no quota is consistent.
        if limit >= logical_cpus - TOLERANCE_CPUS:
            return []
        # Below the node size it is either allocatable (no limits.cpu: common, harmless) or a
        # limit the kubelet does not enforce (cpuCFSQuota off): say both, it cannot tell which.
        return [
            f"{CPU_LIMIT}={limit:g} CPUs but no cgroup CPU quota was found: the pod has no "
            "limits.cpu (the value is node allocatable) or the kubelet does not enforce CFS "
            "quotas; the cgroup files are used"
        ]
    if abs(limit - quota_cpus) > TOLERANCE_CPUS:
        return [
            f"{CPU_LIMIT}={limit:g} CPUs but the cgroup quota is {quota_cpus:g} CPUs; "
            "the cgroup quota is used"
        ]
    return []


def _millicores(env: Mapping[str, str], name: str, warnings: list[str]) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    text = raw.removesuffix("m")
    try:
        # isdigit() alone lets through what int() refuses (superscripts, over 4300 digits)
        # and what no float holds
        cpus = round(int(text) / 1000, CPU_DECIMALS) if text.isdigit() else None
    except (ValueError, OverflowError):
        cpus = None
    if cpus is None:
        warnings.append(
            f"${name}: expected integer millicores (divisor 1m), got {raw[:40]!r}; ignored"
        )
    return cpus

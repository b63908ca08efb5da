"""The one rule for the CPU quota a serving container runs under, as ``status`` checks it and as
``plan`` measures under it.

Kubernetes turns a container's CPU limit into its CFS quota; a pod-level limit (Kubernetes
1.32+) caps every container of the pod, so the tightest of the two applies. A container without
either gets no quota: it is guaranteed its CPU request on a busy node, so the advice for it is
measured under that request as a limit. A request of 0 guarantees nothing and is no request: the
pod-level request, if any, is the one the scheduler then shares among the pod's containers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor.consumers.quantity import cpu_quantity
from advisor.models import QUOTA_TOLERANCE, CpuFrom


@dataclass(frozen=True)
class CpuQuota:
    """The quota to measure under: ``cpus``, from a limit or (without one) a request, and
    ``quantity`` as the serving pod wrote it (what the calibration container is given)."""

    cpus: float
    cpu_from: CpuFrom
    quantity: Any


def same_quota(a: float | None, b: float | None) -> bool:
    """Whether two CPU quotas (in CPUs; None: no quota) are one: both absent, or both present
    and closer than CFS rounding (``QUOTA_TOLERANCE``). Every comparison of a quota measured under
    with one run under (``check``, ``run``'s target, ``status``, ``plan``) asks this."""
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= QUOTA_TOLERANCE


def cpu_limit(container: Mapping[str, Any], pod: Mapping[str, Any]) -> float | None:
    """The tightest declared CPU limit of a container's and its pod's ``resources`` blocks; None
    when neither declares one."""
    declared = [
        value
        for value in (
            cpu_quantity(_amount(container, "limits")),
            cpu_quantity(_amount(pod, "limits")),
        )
        if value is not None
    ]
    return min(declared) if declared else None


def cpu_request(container: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[float, Any] | None:
    """The CPUs the container is guaranteed and the quantity that says so: its request, else the
    pod-level one; None when neither requests more than 0."""
    for block in (container, pod):
        quantity = _amount(block, "requests")
        cpus = cpu_quantity(quantity)
        if cpus is not None and cpus > 0:
            return cpus, quantity
    return None


def cpu_quota(container: Mapping[str, Any], pod: Mapping[str, Any]) -> CpuQuota | None:
    """The quota a container runs under (its limit) or, without one, the one it is measured
    under (its request); None when it declares neither."""
    limit = cpu_limit(container, pod)
    if limit is not None:
        return CpuQuota(limit, "limit", None)
    request = cpu_request(container, pod)
    if request is None:
        return None
    return CpuQuota(request[0], "request", request[1])


def _amount(resources: Mapping[str, Any], kind: str) -> Any:
    """``<kind>.cpu`` of a ``resources`` block (None when absent or malformed)."""
    found = resources.get(kind)
    return found.get("cpu") if isinstance(found, Mapping) else None

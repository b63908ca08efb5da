"""What the calibration Job copies of the serving pod's shape: the CPU quota it measures under
(and the resources that give it), the nodes it may run on, and the pod-level settings that go
with them.

The rest of the serving pod is left out (see ``derive``): it would place or empower a serving
replica, not measure one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from advisor.consumers.quantity import cpu_quantity
from advisor.fleet.advisor_pod import ADVISOR_UID, JobSettings
from advisor.fleet.errors import DeriveError
from advisor.fleet.naming import hash_of
from advisor.models import CpuFrom

# --------------------------------------------------------------------------------------------------
# The pod


def pod_spec(pod: Mapping[str, Any], settings: JobSettings) -> dict[str, Any]:
    """The calibration pod's own settings and what it copies of the serving pod's placement."""
    security: dict[str, Any] = {
        "runAsNonRoot": True,
        "runAsUser": ADVISOR_UID,
        "runAsGroup": ADVISOR_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # the groups a volume's files are readable by: the copy reads the PVC as the server does
    serving_security = _dict(pod.get("securityContext"))
    for key in ("fsGroup", "fsGroupChangePolicy", "supplementalGroups"):
        if serving_security.get(key) is not None:
            security[key] = copy.deepcopy(serving_security[key])
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "serviceAccountName": settings.service_account,
        # the token is mounted by hand into the advisor container only (TOKEN_VOLUME)
        "automountServiceAccountToken": False,
        "securityContext": security,
    }
    for key in ("nodeSelector", "tolerations", "runtimeClassName", "imagePullSecrets"):
        if pod.get(key):
            spec[key] = copy.deepcopy(pod[key])
    node_affinity = _dict(_dict(pod.get("affinity")).get("nodeAffinity"))
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": copy.deepcopy(node_affinity)}
    pod_resources = _requests_limits(pod.get("resources"))
    if pod_resources:
        spec["resources"] = pod_resources
    return spec


# --------------------------------------------------------------------------------------------------
# Resources


def advisor_resources(
    container: Mapping[str, Any], pod: Mapping[str, Any]
) -> tuple[dict[str, Any], float, CpuFrom]:
    """The serving container's resources, the quota they give and what it stands for.

    The quota is the tightest CPU limit (the container's, a pod-level one); without any, the CPU
    request becomes the advisor's limit: the CPUs it is guaranteed on a busy node, a real quota
    to measure under instead of a whole idle node the server never gets."""
    resources = _requests_limits(container.get("resources"))
    pod_resources = _dict(pod.get("resources"))
    limits = [
        value
        for value in (
            cpu_quantity(_dict(resources.get("limits")).get("cpu")),
            cpu_quantity(_dict(pod_resources.get("limits")).get("cpu")),
        )
        if value is not None
    ]
    if limits:
        return resources, min(limits), "limit"
    for holder in (resources, pod_resources):
        request = _dict(holder.get("requests")).get("cpu")
        cpus = cpu_quantity(request)
        if cpus is not None and cpus > 0:
            resources.setdefault("limits", {})["cpu"] = copy.deepcopy(request)
            return resources, cpus, "request"
    raise DeriveError(
        f"container {container.get('name')} declares neither a CPU limit nor a CPU request: "
        "nothing to measure for (its threads may run on any share of any node)"
    )


def _requests_limits(value: Any) -> dict[str, Any]:
    """``requests`` and ``limits`` of a resources block; ``claims`` name the serving pod's
    resourceClaims, which the Job does not have."""
    resources = _dict(value)
    return {
        key: copy.deepcopy(resources[key])
        for key in ("requests", "limits")
        if isinstance(resources.get(key), dict) and resources[key]
    }


# --------------------------------------------------------------------------------------------------
# Node pool


def node_pool(pod: Mapping[str, Any]) -> tuple[str, str]:
    """The nodes the serving pods may run on, readable, and a hash of their exact terms."""
    selector = {str(k): str(v) for k, v in _dict(pod.get("nodeSelector")).items()}
    node_affinity = _dict(_dict(pod.get("affinity")).get("nodeAffinity"))
    required = _dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = _list(required.get("nodeSelectorTerms"))
    parts = []
    if selector:
        parts.append(",".join(f"{k}={v}" for k, v in sorted(selector.items())))
    if terms:
        parts.append("required node affinity")
    readable = " + ".join(parts) or "any node"
    return readable, hash_of({"nodeSelector": selector, "nodeSelectorTerms": terms})


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []

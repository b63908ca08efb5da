"""What the calibration Job copies of the serving pod's shape: the CPU quota it measures under
(and the resources that give it), its QoS class, the nodes it may run on, and the pod-level
settings that go with them.

The rest of the serving pod is left out (see ``derive``): it would place or empower a serving
replica, not measure one.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Mapping
from typing import Any, Literal

from advisor.consumers.quantity import cpu_quantity
from advisor.consumers.quota import cpu_quota
from advisor.fleet.advisor_pod import ADVISOR_UID, JobSettings
from advisor.fleet.errors import DeriveError
from advisor.fleet.naming import hash_of
from advisor.models import CpuFrom
from advisor.models.kube import Container, PodSpec, mapping, sequence

# --------------------------------------------------------------------------------------------------
# The pod


def pod_spec(pod: PodSpec, settings: JobSettings) -> dict[str, Any]:
    """The calibration pod's own settings and what it copies of the serving pod's placement."""
    security: dict[str, Any] = {
        "runAsNonRoot": True,
        "runAsUser": ADVISOR_UID,
        "runAsGroup": ADVISOR_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # the groups a volume's files are readable by: the copy reads the PVC as the server does
    serving_security = pod.security_context
    for key in ("fsGroup", "fsGroupChangePolicy", "supplementalGroups"):
        if serving_security.get(key) is not None:
            security[key] = copy_of(serving_security[key])
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "serviceAccountName": settings.service_account,
        # the token is mounted by hand into the advisor container only (TOKEN_VOLUME)
        "automountServiceAccountToken": False,
        "securityContext": security,
    }
    placement = {
        "nodeSelector": pod.node_selector,
        "tolerations": pod.tolerations,
        "runtimeClassName": pod.runtime_class,
    }
    for key, value in placement.items():
        if value:
            spec[key] = copy_of(value)
    # the serving pod's pull the serving image (the copy), plan's the advisor image: the
    # ServiceAccount's are added by the API server only to a pod that names none
    serving_secrets = [ref.get("name") for ref in pod.image_pull_secrets]
    pull_secrets = [
        *(name for name in serving_secrets if isinstance(name, str) and name),
        *settings.image_pull_secrets,
    ]
    if pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in dict.fromkeys(pull_secrets)]
    if settings.priority_class:
        spec["priorityClassName"] = settings.priority_class
    node_affinity = pod.node_affinity
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": copy_of(node_affinity)}
    pod_resources = pod_level_resources(pod)
    if pod_resources:
        spec["resources"] = pod_resources
    return spec


# --------------------------------------------------------------------------------------------------
# Resources


def advisor_resources(container: Container, pod: PodSpec) -> tuple[dict[str, Any], float, CpuFrom]:
    """The serving container's resources, the quota they give and what it stands for.

    The quota is ``status``'s (``consumers.quota``): the tightest CPU limit; without any, the
    CPU request becomes the advisor's limit: the CPUs it is guaranteed on a busy node, a real
    quota to measure under instead of a whole idle node the server never gets."""
    resources = _requests_limits(container.resources)
    found = cpu_quota(resources, pod.resources)
    if found is not None:
        if found.cpu_from == "request":
            resources.setdefault("limits", {})["cpu"] = copy_of(found.quantity)
        return resources, found.cpus, found.cpu_from
    raise DeriveError(
        f"container {container.name} declares neither a CPU limit nor a CPU request: "
        "nothing to measure for (its threads may run on any share of any node)"
    )


# --------------------------------------------------------------------------------------------------
# QoS class
#
# The kubelet sizes a pod's cgroups by its QoS class, and the static CPU manager gives exclusive
# cores only to the integer-CPU containers of a Guaranteed pod: the calibration pod must have the
# serving pod's class, or the advice is measured in another CPU setup than the one it is for.

QosClass = Literal["Guaranteed", "Burstable", "BestEffort"]
#: the resources the QoS class is computed from
QOS_RESOURCES = ("cpu", "memory")


def qos_class(pod: PodSpec, pod_resources: Mapping[str, Any] | None = None) -> QosClass:
    """The class the kubelet gives a pod of this spec, as the API server defaults it: from its
    pod-level resources when it declares some, else from every container (init ones too).
    ``pod_resources``: the pod's ``pod_level_resources``, when the caller has them already."""
    if pod_resources is None:
        pod_resources = pod_level_resources(pod)
    shapes: list[tuple[Mapping[str, Any], Mapping[str, Any]]]
    if pod_resources:
        shapes = [(mapping(pod_resources.get("requests")), mapping(pod_resources.get("limits")))]
    else:
        shapes = [_defaulted(c) for c in (*pod.containers, *pod.init_containers)]
    # each block's amounts above zero, as numbers: read once, compared twice
    declared = [(_positive(requests), _positive(limits)) for requests, limits in shapes]
    if not any(requests or limits for requests, limits in declared):
        return "BestEffort"
    for requests, limits in declared:
        if set(limits) != set(QOS_RESOURCES) or requests != limits:
            return "Burstable"
    return "Guaranteed"


def pod_level_resources(pod: PodSpec) -> dict[str, Any]:
    """The pod-level ``requests`` and ``limits`` as the API server defaults them: a request left
    out where there is a limit is the containers' requests added up, else the limit. Stated in
    full on the calibration pod, whose containers differ from the serving pod's."""
    resources = _requests_limits(pod.resources)
    limits = mapping(resources.get("limits"))
    if not limits:
        return resources
    requests = resources.setdefault("requests", {})
    for name in QOS_RESOURCES:
        if name in requests:
            continue
        if (asked := _containers_request(pod, name)) is not None:
            requests[name] = _quantity_text(asked, name)
        elif name in limits:
            requests[name] = copy_of(limits[name])
    return resources


def _containers_request(pod: PodSpec, name: str) -> float | None:
    """What the pod's containers request of ``name`` together, as the scheduler adds it up: the
    main containers and native sidecars run side by side, each init container with the sidecars
    started before it; None when none requests it."""
    asked = False
    sidecars = 0.0
    init_peak = 0.0
    for init in pod.init_containers:
        value = _defaulted(init)[0].get(name)
        asked = asked or value is not None
        if init.restart_policy == "Always":
            sidecars += _number(value)
        else:
            init_peak = max(init_peak, sidecars + _number(value))
    main = 0.0
    for container in pod.containers:
        value = _defaulted(container)[0].get(name)
        asked = asked or value is not None
        main += _number(value)
    return max(main + sidecars, init_peak) if asked else None


def _defaulted(container: Container) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """A container's requests and limits as the API server stores them (a request left out is
    its limit), to read, not to copy."""
    resources = container.resources
    requests, limits = mapping(resources.get("requests")), mapping(resources.get("limits"))
    return ({**limits, **requests} if limits else requests), limits


def _positive(amounts: Mapping[str, Any]) -> dict[str, float]:
    """The QoS resources of a requests or limits block that are above zero, as numbers."""
    return {name: number for name in QOS_RESOURCES if (number := _number(amounts.get(name))) > 0}


def _number(value: Any) -> float:
    return cpu_quantity(value) or 0.0


def _quantity_text(value: float, name: str) -> str:
    """A quantity as the API server reads it, rounded up so the pod's request is never below its
    containers': CPUs whole or in milli-units, memory in the largest binary unit that divides
    it."""
    if name == "cpu":
        return str(int(value)) if float(value).is_integer() else f"{math.ceil(value * 1000)}m"
    amount = math.ceil(value)
    for power, suffix in reversed(list(enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), 1))):
        if amount and amount % 1024**power == 0:
            return f"{amount // 1024**power}{suffix}"
    return str(amount)


def _requests_limits(value: Any) -> dict[str, Any]:
    """``requests`` and ``limits`` of a resources block; ``claims`` name the serving pod's
    resourceClaims, which the Job does not have."""
    resources = mapping(value)
    return {
        key: copied_amounts(resources[key])
        for key in ("requests", "limits")
        if isinstance(resources.get(key), dict) and resources[key]
    }


def copied_amounts(amounts: Mapping[str, Any]) -> dict[str, Any]:
    """A ``requests`` or ``limits`` block, copied."""
    return {name: copy_of(amount) for name, amount in amounts.items()}


def copy_of(value: Any) -> Any:
    """A block the API sent, copied: its mappings and lists anew, its text and numbers as they
    are (they cannot change). ``plan`` copies a few blocks of every workload, and
    ``copy.deepcopy``'s memo and dispatch cost more than such a copy; anything else is
    deep-copied."""
    if isinstance(value, dict):
        return {key: copy_of(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_of(item) for item in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    return copy.deepcopy(value)


# --------------------------------------------------------------------------------------------------
# Node pool


def node_pool(pod: PodSpec) -> tuple[str, str]:
    """The nodes the serving pods may run on, readable, and a hash of their exact terms."""
    selector = tuple(sorted(pod.selector.items()))
    terms = sequence(pod.required_node_affinity.get("nodeSelectorTerms"))
    return _node_pool(selector, terms) if terms else _selected_pool(selector)


@functools.lru_cache(maxsize=256)
def _selected_pool(selector: tuple[tuple[str, str], ...]) -> tuple[str, str]:
    """A pool a nodeSelector alone names: a fleet's workloads share a few, each hashed once."""
    return _node_pool(selector, [])


def _node_pool(selector: tuple[tuple[str, str], ...], terms: list[Any]) -> tuple[str, str]:
    parts = []
    if selector:
        parts.append(",".join(f"{k}={v}" for k, v in selector))
    if terms:
        parts.append("required node affinity")
    readable = " + ".join(parts) or "any node"
    return readable, hash_of({"nodeSelector": dict(selector), "nodeSelectorTerms": terms})

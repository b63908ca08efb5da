"""Whether an advice still fits a container that reads it: the problems ``status`` reports.

The advice holds for the CPU quota, the node pool and the moment it was measured. Each check
compares one of those with what the consumer declares or runs with, and says both sides:

- ``cpu-limit-differs`` / ``no-cpu-limit``: the quota TensorFlow's pools were sized for;
- ``cpu-request-differs``: the same quota, when the advice says (``provenance.target.cpu_from``)
  it was measured for a container without a limit, under a quota equal to its CPU request: such
  a container is guaranteed its request on a busy node, which is what its pools should fit;
- ``node-pool-differs``: the Job's recorded nodeSelector against the consumer's nodeSelector and
  required node affinity (a preferred affinity pins nothing);
- ``advice-overridden``: an ``envFrom`` prefix, the container's own ``env`` entry of the
  same name, or TF Serving's own ``--tensorflow_intra_op_parallelism=N`` (inter-op too) on its
  command line keeps the advice's values from TensorFlow;
- ``resize-restarts-nothing``: an in-place CPU resize without a restart leaves the pools sized
  for the old limit, and the env is not read again;
- ``pods-predate-advice``: env is read when a container starts, so a container started before
  the advice's data last changed runs the old values, unless the built-in restart has already
  rolled it for this advice or Reloader is set up to.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from advisor.consumers import quota
from advisor.consumers.mounts import Mount
from advisor.keys import ADVICE_HASH_ANNOTATION, RELOADER_AUTO, RELOADER_RELOAD, RELOADER_SEARCH
from advisor.models import (
    TENSORFLOW,
    Consumer,
    Problem,
    Provenance,
    WorkloadKind,
)
from advisor.models.kube import (
    Container,
    ContainerStatus,
    KubePod,
    KubeWorkload,
    PodSpec,
    mapping,
    mappings,
)
from advisor.models.times import timestamp
from advisor.recommend import ParsedAdvice, content_hash

#: pods named in a pods-predate-advice message; the rest are counted
NAMED_PODS = 3


def consumer(advice: ParsedAdvice | None, mount: Mount, *, reloader_match: bool) -> Consumer:
    """The row of one container reading ``advice`` (None: an advice that does not validate,
    which leaves only the checks that do not need it). ``reloader_match``: the advice carries
    Reloader's search-mode match annotation."""
    limit = cpu_limit(mount)
    found = []
    if advice is not None:
        prov = advice.recommendation.provenance
        if prov.target is not None and prov.target.cpu_from == "request":
            found += request_problems(prov, limit, cpu_request(mount), mount)
        else:
            found += cpu_problems(prov, limit, mount)
        found += node_pool_problems(prov.node_selector, mount.workload.pod_spec)
    found += shadow_problems(mount.container, mount.configmap)
    found += resize_problems(mount.container)
    if advice is not None:
        found += predate_problems(advice, mount, reloader_match=reloader_match)
    return _row(mount, limit, found)


def missing(mount: Mount) -> Consumer:
    """The row of a container whose required reference names a ConfigMap that does not exist."""
    problem = Problem(
        code="advice-missing",
        message=f"it requires ConfigMap {mount.configmap}, which does not exist in namespace "
        f"{mount.workload.namespace}: its new pods cannot start until the advisor writes it "
        "(or the reference is fixed)",
    )
    return _row(mount, cpu_limit(mount), [problem])


def _row(mount: Mount, limit: float | None, problems: list[Problem]) -> Consumer:
    return Consumer(
        kind=mount.workload.kind,
        name=mount.workload.name,
        container=mount.container_name,
        cpu_limit=limit,
        cpu_request=cpu_request(mount),
        problems=problems,
    )


# --------------------------------------------------------------------------------------------------
# CPU limit


def cpu_limit(mount: Mount) -> float | None:
    """The quota the container runs under: its limit, capped by a pod-level limit; without
    either, the limit its running pods were admitted with (a LimitRange default)."""
    declared = quota.cpu_limit(mount.container.resources, mount.workload.pod_spec.resources)
    if declared is not None:
        return declared
    admitted = [_pod_limit(pod, mount.container_name) for pod in mount.workload.pods]
    return next((value for value in admitted if value is not None), None)


def cpu_problems(prov: Provenance, limit: float | None, mount: Mount) -> list[Problem]:
    measured = prov.measured_cpus
    if limit is None:
        if measured is None:
            return []  # measured without a quota, runs without one: as measured
        return [
            Problem(
                code="no-cpu-limit",
                message=f"it has no CPU limit, so the advice's quota of {measured:g} CPUs does "
                "not apply: its threads may spread over every CPU of the node",
            )
        ]
    if measured is None:
        return [
            Problem(
                code="cpu-limit-differs",
                message=f"its CPU limit is {limit:g}, but the advice was measured without one "
                f"({prov.effective_cpus:g} CPUs usable)",
            )
        ]
    if not quota.same_quota(limit, measured):
        return [
            Problem(
                code="cpu-limit-differs",
                message=f"its CPU limit is {limit:g}, the advice was measured under {measured:g}",
            )
        ]
    resized = [
        f"{_pod_name(pod)} ({actual:g})"
        for pod in mount.workload.pods
        if (actual := _pod_limit(pod, mount.container_name)) is not None
        and not quota.same_quota(actual, measured)
    ]
    if not resized:
        return []
    return [
        Problem(
            code="cpu-limit-differs",
            message=f"its CPU limit is {limit:g} as measured, but some of its pods run under "
            f"another (resized in place, or not rolled out yet): {', '.join(resized)}",
        )
    ]


# --------------------------------------------------------------------------------------------------
# CPU request (advice measured for a container without a limit)


def cpu_request(mount: Mount) -> float | None:
    """The CPUs the container is guaranteed: its request, else the pod-level request (which
    the scheduler then shares among the pod's containers)."""
    request = quota.cpu_request(mount.container.resources, mount.workload.pod_spec.resources)
    return None if request is None else request[0]


def request_problems(
    prov: Provenance, limit: float | None, request: float | None, mount: Mount
) -> list[Problem]:
    """The advice was measured for a container without a CPU limit, under a quota equal to its
    request: a container like it fits when its request is that quota. One that has a limit runs
    under that limit, which must then be the quota (and is checked as a limit is)."""
    measured = prov.measured_cpus
    if limit is not None:
        if measured is not None and not quota.same_quota(limit, measured):
            return [
                Problem(
                    code="cpu-limit-differs",
                    message=f"its CPU limit is {limit:g}, but the advice was measured for a "
                    f"container without one, under its CPU request of {measured:g}",
                )
            ]
        return cpu_problems(prov, limit, mount)
    if measured is None:
        return []  # measured without a quota, runs without one: as measured
    if request is None:
        return [
            Problem(
                code="cpu-request-differs",
                message="it has neither a CPU limit nor a CPU request, but the advice was "
                f"measured for a request of {measured:g} CPUs: nothing guarantees it those",
            )
        ]
    if not quota.same_quota(request, measured):
        return [
            Problem(
                code="cpu-request-differs",
                message=f"its CPU request is {request:g}, the advice was measured for a "
                f"request of {measured:g}",
            )
        ]
    return []


def _pod_limit(pod: KubePod, container: str) -> float | None:
    """The container's CPU limit in one pod: the kubelet's report of what it applied (status,
    Kubernetes 1.33+), else the pod's spec (what admission and a resize left there)."""
    found: list[ContainerStatus | Container] = [*pod.container_statuses, *pod.spec.containers]
    for entry in found:
        if entry.name == container:
            value = quota.cpu_limit(entry.resources, {})
            if value is not None:
                return value
    return None


# --------------------------------------------------------------------------------------------------
# node pool


def node_pool_problems(selector: dict[str, str] | None, pod_spec: PodSpec) -> list[Problem]:
    """Each pair of the Job's nodeSelector must be required of the consumer's pods too: by its
    nodeSelector, or by every term of its required node affinity (terms are ORed, so one term
    without the pair lets pods elsewhere)."""
    if not selector:
        return []
    node_selector = pod_spec.node_selector
    terms = mappings(pod_spec.required_node_affinity.get("nodeSelectorTerms"))
    unmet = []
    for key, value in sorted(selector.items()):
        if node_selector.get(key) == value or (terms and all(_pins(t, key, value) for t in terms)):
            continue
        if key in node_selector:
            unmet.append(f"{key}={value} (its nodeSelector says {key}={node_selector[key]})")
        else:
            unmet.append(f"{key}={value} (nothing it requires pins {key})")
    if not unmet:
        return []
    return [
        Problem(
            code="node-pool-differs",
            message="its pods may run outside the node pool the advice was measured on: "
            + ", ".join(unmet),
        )
    ]


def _pins(term: dict[str, Any], key: str, value: str) -> bool:
    """The term allows only nodes with ``key=value``."""
    return any(
        isinstance(e, dict)
        and e.get("key") == key
        and e.get("operator") == "In"
        and set(e.get("values") or []) == {value}
        for e in term.get("matchExpressions") or []
    )


# --------------------------------------------------------------------------------------------------
# advice that never reaches TensorFlow


def shadow_problems(container: Container, configmap: str) -> list[Problem]:
    """The container reads the advice, but TensorFlow does not see its values: an ``envFrom``
    prefix renames every key, and an ``env`` entry of the same name wins over ``envFrom``
    (unless it is itself a key reference to this advice)."""
    found = []
    for source in container.env_from:
        ref = mapping(source.get("configMapRef"))
        prefix = source.get("prefix")
        if ref.get("name") == configmap and isinstance(prefix, str) and prefix:
            found.append(
                Problem(
                    code="advice-overridden",
                    message=f"its envFrom adds the prefix {prefix!r} to the advice's keys "
                    f"({prefix}{TENSORFLOW.intra_op}, ...): TensorFlow reads none of them",
                )
            )
    own = []
    for env in container.env:
        name = env.get("name")
        if name not in TENSORFLOW.advice_keys:
            continue
        ref = mapping(mapping(env.get("valueFrom")).get("configMapKeyRef"))
        if ref.get("name") == configmap and ref.get("key") == name:
            continue  # reads the advice's own value
        own.append(str(name))
    if own:
        found.append(
            Problem(
                code="advice-overridden",
                message=f"its env sets {', '.join(own)} itself, which wins over envFrom: the "
                "advice's value never reaches TensorFlow",
            )
        )
    flags = serving_thread_flags(container)
    if flags:
        found.append(
            Problem(
                code="advice-overridden",
                message=f"its command line sets {', '.join(flags)} itself, which wins over the "
                "advice's env: pass $(TF_NUM_INTRAOP_THREADS) and $(TF_NUM_INTEROP_THREADS) "
                "instead",
            )
        )
    return found


#: TF Serving's flags that size the pools themselves; 0 (the default) leaves it to the env
_SERVING_THREAD_FLAG = re.compile(
    r"--?(tensorflow_(?:intra|inter)_op_parallelism)=(?P<value>[^\s'\"]+)"
)


def serving_thread_flags(container: Container) -> list[str]:
    """TF Serving's thread flags the container's command or args set to a number of its own
    (``--tensorflow_intra_op_parallelism=2``), a shell command line's too; a value read from the
    env (``$(TF_NUM_INTRAOP_THREADS)``) or 0 leaves the advice in force."""
    words = [w for w in (*container.command, *container.args) if isinstance(w, str)]
    found = []
    for word in words:
        for match in _SERVING_THREAD_FLAG.finditer(word):
            value = match.group("value")
            if "$" not in value and value.strip("0") != "":
                found.append(match.group(0))
    return found


# --------------------------------------------------------------------------------------------------
# in-place resize


def resize_problems(container: Container) -> list[Problem]:
    for policy in container.resize_policy:
        if (
            policy.get("resourceName") == "cpu"
            and policy.get("restartPolicy") == "RestartContainer"
        ):
            return []
    return [
        Problem(
            code="resize-restarts-nothing",
            message="it has no resizePolicy with restartPolicy RestartContainer for cpu: an "
            "in-place resize (on by default from Kubernetes 1.33, GA in 1.35, where the default "
            "is NotRequired) changes its CPU quota without a restart, and TensorFlow's pools stay "
            "sized for the old limit",
        )
    ]


# --------------------------------------------------------------------------------------------------
# pods started before the advice


def predate_problems(advice: ParsedAdvice, mount: Mount, *, reloader_match: bool) -> list[Problem]:
    changed = advice.data_changed_at
    workload = mount.workload
    if (
        changed is None
        or restarts_on(workload, advice)
        or reloads_on(workload, advice.name, reloader_match=reloader_match)
    ):
        return []
    started = {
        _pod_name(pod): when
        for pod in workload.pods
        if (when := _container_started(pod, mount.container_name)) is not None
    }
    old = sorted(name for name, when in started.items() if when < changed)
    if not old:
        return []
    named = ", ".join(old[:NAMED_PODS])
    if len(old) > NAMED_PODS:
        named += f" and {len(old) - NAMED_PODS} more"
    fix = (
        "recreate the pod"
        if workload.kind is WorkloadKind.POD
        else f"kubectl rollout restart {workload.ref}, or let run --restart or Reloader do it"
    )
    at = timestamp(changed)
    return [
        Problem(
            code="pods-predate-advice",
            message=f"{len(old)} of its {len(started)} running pod(s) started before the "
            f"advice's data changed at {at} and still run the old values ({named}): {fix}",
        )
    ]


def restarts_on(workload: KubeWorkload, advice: ParsedAdvice) -> bool:
    """The built-in restart (``run --restart``) has set this advice's hash on the template, so
    a rollout to the current values is under way or done."""
    annotations = workload.template_metadata.annotations
    return bool(annotations.get(ADVICE_HASH_ANNOTATION) == content_hash(advice.recommendation.env))


def reloads_on(workload: KubeWorkload, configmap: str, *, reloader_match: bool) -> bool:
    """Stakater Reloader is set up to restart this workload when ``configmap`` changes: named by
    ``configmap.reloader.stakater.com/reload``, auto mode, or search mode with the advice's
    match annotation. Reloader reads the workload's annotations and its pod template's; it
    restarts no bare pod."""
    if workload.kind is WorkloadKind.POD:
        return False
    template = workload.template_metadata.annotations
    for marks in (workload.annotations, template):
        named = str(marks.get(RELOADER_RELOAD, "")).split(",")
        if configmap in (name.strip() for name in named):
            return True
        if any(str(marks.get(key, "")).lower() == "true" for key in RELOADER_AUTO):
            return True
        if reloader_match and str(marks.get(RELOADER_SEARCH, "")).lower() == "true":
            return True
    return False


def _container_started(pod: KubePod, container: str) -> datetime | None:
    """When the container now running in ``pod`` started (None: not running)."""
    if pod.phase != "Running":
        return None
    for entry in pod.container_statuses:
        if entry.name == container:
            return entry.running_since
    return None


def _pod_name(pod: KubePod) -> str:
    return pod.metadata.name or "?"

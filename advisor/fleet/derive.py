"""The calibration Job of one opted-in workload container, derived from its pod template.

The advice holds for the CPUs it was measured on, so the Job measures the serving container in
its own shape: its exact resources (the CPU quota TensorFlow's pools are sized for), on the nodes
its pods may run on (nodeSelector, node affinity, tolerations, runtime class), with the very model
it serves, copied out of its image or its volume by an init container that runs the serving image.
The rest of the serving pod is left out: pod (anti-)affinity, spreading, host namespaces, its
priority, its ServiceAccount and a fixed nodeName place or empower a serving replica, and would
only keep the calibration pod from running or give it what it must not have.

The Job carries the settings of the shipped Job (deploy/job.yaml, the chart's
``tfta.jobSpecSettings``): the exit-code policy, the Downward API env, the restricted security
contexts, a /tmp emptyDir. Its API credentials are a projected token mounted into the advisor
container alone: the serving image's code (the copy) gets none.

Pure: plain dicts in (the workload as the API server returns it), a plain dict out.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from advisor import recommend
from advisor.consumers.quantity import cpu_quantity
from advisor.errors import (
    AdviceKeptError,
    AdvisorError,
    CalibrationError,
    CheckMismatchError,
    ClusterRejectedError,
    ClusterUnreachableError,
    ConflictError,
    ForbiddenError,
    InvalidAdviceError,
    ModelError,
    OutputError,
    ProbeError,
    RestartFailedError,
    RestartTargetError,
    UsageError,
)
from advisor.fleet.optin import ANN_CONTAINER as ANN_ASK_CONTAINER
from advisor.fleet.optin import CalibrationAsk
from advisor.models import CpuFrom, ServingTarget
from advisor.recommend import ANNOTATION_PREFIX, APP_NAME

WorkloadKind = Literal["Deployment", "StatefulSet"]

#: labels every planned Job carries (a list selects them with PLANNED_SELECTOR): the keys the
#: advice ConfigMap's labels use
LABEL_NAME = recommend.LABEL_NAME
LABEL_COMPONENT = recommend.LABEL_COMPONENT
LABEL_MANAGED_BY = recommend.LABEL_MANAGED_BY
COMPONENT = "calibration"
MANAGED_BY = "tf-thread-advisor-plan"
PLANNED_SELECTOR = f"{LABEL_NAME}={APP_NAME},{LABEL_COMPONENT}={COMPONENT}"
#: the hashes as labels, to select by (a label value holds 63 characters at most, so the readable
#: values go in annotations)
LABEL_SPEC_HASH = ANNOTATION_PREFIX + "spec-hash"
LABEL_POOL_HASH = ANNOTATION_PREFIX + "pool-hash"
#: the full values, as annotations on the Job
ANN_WORKLOAD = ANNOTATION_PREFIX + "workload"  # deployment/NAME
ANN_CONTAINER = ANNOTATION_PREFIX + "container"
ANN_CONFIGMAP = ANNOTATION_PREFIX + "configmap"
ANN_POOL = ANNOTATION_PREFIX + "pool"  # readable: "pool=a" or "any node"

#: where the init container copies the model and the advisor reads it
MODEL_MOUNT = "/tfta-model"

#: the containers of the Job and the volumes it defines itself
ADVISOR_CONTAINER = "advisor"
COPY_CONTAINER = "copy-model"
MODEL_VOLUME = "model"
TMP_VOLUME = "tmp"
TOKEN_VOLUME = "kube-api-access"
TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
#: the expiry the kubelet gives the token it injects itself (it renews it long before)
TOKEN_EXPIRATION_S = 3607
#: the advisor image's user (the shipped manifests' runAsUser)
ADVISOR_UID = 65532
#: what the Job's deadline adds to the budget: image pulls, the model copy, TF start-up, publishing
DEADLINE_MARGIN_S = 300
#: the writable /tmp of the advisor (Python, Keras and the trial children write there)
TMP_SIZE_LIMIT = "1Gi"
#: the copy's own resources (a cp, not a measurement)
COPY_RESOURCES = {
    "requests": {"cpu": "100m", "memory": "128Mi"},
    "limits": {"cpu": "1", "memory": "512Mi"},
}
#: hex digits of the spec and pool hashes (a label value and the tail of a Job name)
HASH_LENGTH = 10
#: a Job name is a DNS-1123 label: its pods' names and the job-name label derive from it
NAME_LIMIT = 63

#: exit codes a retry cannot fix: the Job fails at once (README, "Exit codes", retry no)
FAIL_JOB_EXIT_CODES = sorted(
    e.exit_code
    for e in (
        AdvisorError,
        UsageError,
        ProbeError,
        ModelError,
        InvalidAdviceError,
        ForbiddenError,
        ClusterRejectedError,
        CheckMismatchError,
        OutputError,
        AdviceKeptError,
        RestartTargetError,
        RestartFailedError,
    )
)
#: retried, counting towards backoffLimit: a noisy node, an unreachable API server, a conflict.
#: Interrupted (130) is in no rule, so a drained pod's SIGTERM reaches the DisruptionTarget rule
COUNT_EXIT_CODES = sorted(
    e.exit_code for e in (CalibrationError, ClusterUnreachableError, ConflictError)
)

#: checkov's resource checks on a container: (check, requests|limits, resource)
_RESOURCE_CHECKS = (
    ("CKV_K8S_10", "requests", "cpu"),
    ("CKV_K8S_11", "limits", "cpu"),
    ("CKV_K8S_12", "requests", "memory"),
    ("CKV_K8S_13", "limits", "memory"),
)
#: an env var a subPathExpr reads: $(NAME)
_ENV_REFERENCE = re.compile(r"\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


class DeriveError(ValueError):
    """The workload cannot be calibrated as it is; the message says why (a ``skipped``)."""


@dataclass(frozen=True)
class JobSettings:
    """``plan``'s flags that shape every Job it derives."""

    image: str
    service_account: str
    image_pull_policy: str = "IfNotPresent"
    ttl_s: int = 86400
    backoff_limit: int = 3
    #: appended to the advisor's ``run`` arguments (e.g. a --configmap-annotation)
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class DerivedJob:
    """One calibration Job and what the planner compares and counts it by."""

    name: str
    spec_hash: str
    #: the node pool the Job is pinned to, readable, and its hash (the label)
    pool: str
    pool_hash: str
    #: the quota the Job runs under and what it stands for
    cpu: float
    cpu_from: CpuFrom
    target: ServingTarget
    manifest: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# The serving container


def serving_container(pod_spec: Mapping[str, Any], ask: CalibrationAsk) -> dict[str, Any]:
    """The container the ask is about; DeriveError when it is not there or not unique.

    Init containers are never it, native sidecars (restartPolicy Always) included: the model is
    served by a main container."""
    containers = [c for c in _list(pod_spec.get("containers")) if isinstance(c, dict)]
    names = [str(c.get("name")) for c in containers]
    if ask.container is not None:
        for container in containers:
            if container.get("name") == ask.container:
                return container
        init = {
            str(c.get("name")) for c in _list(pod_spec.get("initContainers")) if isinstance(c, dict)
        }
        why = (
            " is an init container (or a native sidecar), never the serving one;"
            if ask.container in init
            else " is not"
        )
        raise DeriveError(
            f"annotation {ANN_ASK_CONTAINER}={ask.container!r}{why} its containers are: "
            + ", ".join(names)
        )
    if len(containers) == 1:
        return containers[0]
    if not containers:
        raise DeriveError("its pod template has no containers")
    raise DeriveError(
        f"its pod has {len(containers)} containers ({', '.join(names)}): set annotation "
        f"{ANN_ASK_CONTAINER} to the one that serves the model"
    )


# --------------------------------------------------------------------------------------------------
# The Job


def derive_job(
    kind: WorkloadKind,
    workload: Mapping[str, Any],
    ask: CalibrationAsk,
    *,
    configmap: str,
    settings: JobSettings,
) -> DerivedJob:
    """The Job that measures ``workload``'s serving container in its own pod shape."""
    metadata = _dict(workload.get("metadata"))
    name = str(metadata.get("name") or "")
    namespace = str(metadata.get("namespace") or "")
    uid = str(metadata.get("uid") or "")
    if not name or not namespace:
        raise DeriveError("the workload has no name or namespace")
    if not uid:
        raise DeriveError(
            f"{kind.lower()}/{name} has no uid (not read from the API server?): the Job's owner "
            "reference needs one, so that deleting the workload deletes its calibrations"
        )
    template = _dict(_dict(workload.get("spec")).get("template"))
    pod = _dict(template.get("spec"))
    if not pod:
        raise DeriveError(f"{kind.lower()}/{name} has no pod template")

    container = serving_container(pod, ask)
    container_name = str(container.get("name"))
    image = container.get("image")
    if not isinstance(image, str) or not image:
        raise DeriveError(f"container {container_name} has no image to copy the model from")
    model_path = _model_path(ask.model_path)
    resources, quota, cpu_from = _advisor_resources(container, pod)
    pool, pool_hash = _pool(pod)
    ref = f"{kind.lower()}/{name}"

    copy_mounts, source_volumes, copy_env = _model_source(
        kind, workload, pod, container, model_path
    )
    spec = _pod_spec(pod, settings)
    spec["initContainers"] = [
        _copy_container(container, pod, model_path=model_path, mounts=copy_mounts, env=copy_env)
    ]
    args = _args(
        ask,
        configmap=configmap,
        model_path=model_path,
        pod=pod,
        ref=ref,
        container=container_name,
        image=image,
        cpu_from=cpu_from,
    )
    args.extend(settings.extra_args)
    spec["containers"] = [_advisor_container(settings, args, resources)]
    spec["volumes"] = [*_own_volumes(), *source_volumes]

    job_spec = _job_spec_settings(ask, settings)
    spec_hash = _hash({"template": spec, "job": job_spec})
    # the spec names the hash computed on it without it, after --cpu-from as run's flags go
    args.insert(args.index(f"--cpu-from={cpu_from}") + 1, f"--spec-hash={spec_hash}")

    job_name = _job_name(name, container_name, spec_hash)
    manifest: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name,
            "namespace": namespace,
            "labels": {
                LABEL_NAME: APP_NAME,
                LABEL_COMPONENT: COMPONENT,
                LABEL_MANAGED_BY: MANAGED_BY,
                LABEL_SPEC_HASH: spec_hash,
                LABEL_POOL_HASH: pool_hash,
            },
            "annotations": {
                ANN_WORKLOAD: ref,
                ANN_CONTAINER: container_name,
                ANN_CONFIGMAP: configmap,
                ANN_POOL: pool,
                **_checkov_skips(spec),
            },
            # not the controller: the workload's controller must not adopt or count the Job;
            # deleting the workload still garbage-collects it
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": kind,
                    "name": name,
                    "uid": uid,
                    "controller": False,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": {
            **job_spec,
            "template": {
                "metadata": {
                    "labels": {
                        LABEL_NAME: APP_NAME,
                        LABEL_COMPONENT: COMPONENT,
                        LABEL_SPEC_HASH: spec_hash,
                    }
                },
                "spec": spec,
            },
        },
    }
    target = ServingTarget(
        workload=ref,
        container=container_name,
        image=image,
        model_path=model_path,
        cpu_from=cpu_from,
        spec_hash=spec_hash,
    )
    return DerivedJob(
        name=job_name,
        spec_hash=spec_hash,
        pool=pool,
        pool_hash=pool_hash,
        cpu=quota,
        cpu_from=cpu_from,
        target=target,
        manifest=manifest,
    )


def _job_spec_settings(ask: CalibrationAsk, settings: JobSettings) -> dict[str, Any]:
    """The Job-level settings of the shipped Job (the chart's ``tfta.jobSpecSettings``)."""
    return {
        "backoffLimit": settings.backoff_limit,
        # the sweep's budget plus image pulls, the copy, TF start-up and the publish: a deadline
        # at the budget would kill a run before it writes anything
        "activeDeadlineSeconds": math.ceil(ask.options.budget_s) + DEADLINE_MARGIN_S,
        "ttlSecondsAfterFinished": settings.ttl_s,
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "FailJob",
                    "onExitCodes": {
                        "containerName": ADVISOR_CONTAINER,
                        "operator": "In",
                        "values": FAIL_JOB_EXIT_CODES,
                    },
                },
                {
                    "action": "Count",
                    "onExitCodes": {
                        "containerName": ADVISOR_CONTAINER,
                        "operator": "In",
                        "values": COUNT_EXIT_CODES,
                    },
                },
                # eviction, preemption, node drain: not the advisor's fault, retried uncounted
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                },
            ]
        },
    }


def _pod_spec(pod: Mapping[str, Any], settings: JobSettings) -> dict[str, Any]:
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


def _advisor_resources(
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


def _copy_resources(pod_resources: Mapping[str, Any]) -> dict[str, Any]:
    """COPY_RESOURCES, within a pod-level budget when the pod declares one (no container may
    ask for more than the pod)."""
    result = copy.deepcopy(COPY_RESOURCES)
    for kind in ("requests", "limits"):
        pod_side = _dict(pod_resources.get(kind))
        for name, ours in list(result[kind].items()):
            theirs = pod_side.get(name)
            if theirs is not None and _quantity(theirs) < _quantity(ours):
                result[kind][name] = copy.deepcopy(theirs)
    for name, limit in result["limits"].items():
        if _quantity(result["requests"][name]) > _quantity(limit):
            result["requests"][name] = limit
    return result


def _quantity(value: Any) -> float:
    number = cpu_quantity(value)
    return math.inf if number is None else number


# --------------------------------------------------------------------------------------------------
# Node pool


def _pool(pod: Mapping[str, Any]) -> tuple[str, str]:
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
    return readable, _hash({"nodeSelector": selector, "nodeSelectorTerms": terms})


# --------------------------------------------------------------------------------------------------
# Model


def _model_path(path: str) -> str:
    normal = posixpath.normpath(path)
    if not posixpath.isabs(normal) or normal == "/":
        raise DeriveError(f"model path {path!r} must be an absolute path below '/'")
    if _under(MODEL_MOUNT, normal) is not None:
        raise DeriveError(
            f"model path {path!r} is inside {MODEL_MOUNT}, where the calibration pod puts its "
            "copy of the model"
        )
    return normal


def _under(mount_path: str, path: str) -> int | None:
    """How many path components of ``path`` the mount covers; None when it does not."""
    mount = [part for part in posixpath.normpath(mount_path).split("/") if part]
    parts = [part for part in path.split("/") if part]
    return len(mount) if parts[: len(mount)] == mount else None


def _model_source(
    kind: WorkloadKind,
    workload: Mapping[str, Any],
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    model_path: str,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The serving container's volumeMount the model lives under (the longest mountPath that
    covers it), the volume it mounts and the env its subPathExpr reads; nothing when the model
    is in the image."""
    covering = [
        (depth, mount)
        for mount in _list(container.get("volumeMounts"))
        if isinstance(mount, dict)
        and (depth := _under(str(mount.get("mountPath", "")), model_path)) is not None
    ]
    if not covering:
        return [], [], []
    _, mount = max(covering, key=lambda item: item[0])
    volume = _source_volume(kind, workload, pod, str(mount.get("name")))
    own = {MODEL_VOLUME, TMP_VOLUME, TOKEN_VOLUME}
    if volume["name"] in own:
        volume["name"] = f"serving-{volume['name']}"
    copied: dict[str, Any] = {
        "name": volume["name"],
        "mountPath": mount["mountPath"],
        "readOnly": True,
    }
    for key in ("subPath", "subPathExpr"):
        if mount.get(key):
            copied[key] = mount[key]
    env = _subpath_env(str(mount.get("subPathExpr") or ""), container)
    return [copied], [volume], env


def _source_volume(
    kind: WorkloadKind, workload: Mapping[str, Any], pod: Mapping[str, Any], name: str
) -> dict[str, Any]:
    """The volume ``name`` as the calibration pod can mount it, read-only where it says so."""
    spec = _dict(workload.get("spec"))
    if kind == "StatefulSet":
        # the StatefulSet controller gives each replica its claim, over a pod volume of the
        # same name: the Job reads the first replica's
        for claim_template in _list(spec.get("volumeClaimTemplates")):
            if _dict(_dict(claim_template).get("metadata")).get("name") == name:
                sts = _dict(workload.get("metadata")).get("name")
                first = _dict(spec.get("ordinals")).get("start") or 0
                return {
                    "name": name,
                    "persistentVolumeClaim": {
                        "claimName": f"{name}-{sts}-{first}",
                        "readOnly": True,
                    },
                }
    for volume in _list(pod.get("volumes")):
        if not isinstance(volume, dict) or volume.get("name") != name:
            continue
        result = copy.deepcopy(volume)
        if "emptyDir" in result:
            raise DeriveError(
                f"the model is in volume {name}, an emptyDir: the serving pod fills it at run "
                "time, and another pod cannot read it"
            )
        ephemeral = _dict(_dict(result.get("ephemeral")).get("volumeClaimTemplate")).get("spec")
        if "ephemeral" in result and not (
            _dict(ephemeral).get("dataSource") or _dict(ephemeral).get("dataSourceRef")
        ):
            raise DeriveError(
                f"the model is in volume {name}, an ephemeral volume without a data source: "
                "each pod gets a new empty one, filled at run time"
            )
        if "persistentVolumeClaim" in result:
            result["persistentVolumeClaim"]["readOnly"] = True
        if "projected" in result:
            # the copy runs the serving image's code: it gets no API credentials, and a model is
            # never a token
            sources = [
                s
                for s in _list(result["projected"].get("sources"))
                if not _dict(s).get("serviceAccountToken")
            ]
            if not sources:
                raise DeriveError(
                    f"the model is in volume {name}, which projects only a ServiceAccount token"
                )
            result["projected"]["sources"] = sources
        return result
    raise DeriveError(
        f"the model's volumeMount names volume {name}, which the pod template does not define"
    )


def _subpath_env(expression: str, container: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The env a subPathExpr expands, copied so the copy reads the directory the server reads;
    only what resolves the same in another pod of the namespace (a value, the namespace)."""
    env = {str(_dict(e).get("name")): _dict(e) for e in _list(container.get("env"))}
    copied = []
    for name in dict.fromkeys(_ENV_REFERENCE.findall(expression)):
        entry = env.get(name)
        if entry is None:
            raise DeriveError(
                f"the model's volumeMount has subPathExpr {expression!r}, which reads $({name}): "
                "the container's env does not set it, so another pod cannot resolve it the same"
            )
        field_path = _dict(_dict(entry.get("valueFrom")).get("fieldRef")).get("fieldPath")
        if "value" not in entry and field_path != "metadata.namespace":
            raise DeriveError(
                f"the model's volumeMount has subPathExpr {expression!r}, which reads $({name}) "
                "from the serving pod itself: the calibration pod would read another directory"
            )
        copied.append(copy.deepcopy(entry))
    return copied


def _copy_container(
    serving: Mapping[str, Any],
    pod: Mapping[str, Any],
    *,
    model_path: str,
    mounts: list[dict[str, Any]],
    env: list[dict[str, Any]],
) -> dict[str, Any]:
    """Copies the model out of the serving image (or its volume) into the Job's emptyDir, with
    no other volume of the serving pod and no credentials."""
    container: dict[str, Any] = {"name": COPY_CONTAINER, "image": serving["image"]}
    if serving.get("imagePullPolicy"):
        container["imagePullPolicy"] = serving["imagePullPolicy"]
    container["command"] = ["cp", "-R", model_path, MODEL_MOUNT + "/"]
    if env:
        container["env"] = env
    container["resources"] = _copy_resources(_dict(pod.get("resources")))
    container["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
        **_copy_identity(serving, pod),
    }
    container["volumeMounts"] = [{"name": MODEL_VOLUME, "mountPath": MODEL_MOUNT}, *mounts]
    return container


def _copy_identity(serving: Mapping[str, Any], pod: Mapping[str, Any]) -> dict[str, Any]:
    """The user the server runs as (its container's, else its pod's), so the copy reads what the
    server reads; the advisor's where the serving pod leaves it to the image."""
    container_security = _dict(serving.get("securityContext"))
    pod_security = _dict(pod.get("securityContext"))

    def setting(key: str) -> Any:
        for holder in (container_security, pod_security):
            if holder.get(key) is not None:
                return holder[key]
        return None

    user = setting("runAsUser")
    group = setting("runAsGroup")
    identity: dict[str, Any] = {
        "runAsUser": ADVISOR_UID if user is None else user,
        "runAsGroup": ADVISOR_UID if group is None else group,
    }
    non_root = setting("runAsNonRoot")
    # a server that runs as root is copied as root: the pod's runAsNonRoot would refuse it
    identity["runAsNonRoot"] = identity["runAsUser"] != 0 if non_root is None else non_root
    return identity


# --------------------------------------------------------------------------------------------------
# The advisor container


def _args(
    ask: CalibrationAsk,
    *,
    configmap: str,
    model_path: str,
    pod: Mapping[str, Any],
    ref: str,
    container: str,
    image: str,
    cpu_from: CpuFrom,
) -> list[str]:
    """``run``'s arguments (without --spec-hash and the extra args, added once hashed)."""
    options = ask.options
    args = [
        "run",
        f"--configmap={configmap}",
        "--namespace=$(TFTA_POD_NAMESPACE)",
        f"--budget={_number(options.budget_s)}",
        f"--objective={options.objective}",
    ]
    if options.p99_slo_ms is not None:
        args.append(f"--p99-ms={_number(options.p99_slo_ms)}")
    args += [
        f"--batch-size={options.batch_size}",
        f"--concurrency={options.concurrency}",
        f"--model={MODEL_MOUNT}/{posixpath.basename(model_path)}",
    ]
    # the Job's node pool, recorded in the advice: status reports consumers not pinned to it
    selector = _dict(pod.get("nodeSelector"))
    args += [f"--node-selector={k}={v}" for k, v in sorted(selector.items())]
    args += [
        f"--for-workload={ref}",
        f"--for-container={container}",
        f"--serving-image={image}",
        f"--serving-model-path={model_path}",
        f"--cpu-from={cpu_from}",
    ]
    if ask.restart:
        args.append(f"--restart={ref}")
    return args


def _advisor_container(
    settings: JobSettings, args: list[str], resources: dict[str, Any]
) -> dict[str, Any]:
    return {
        "name": ADVISOR_CONTAINER,
        "image": settings.image,
        "imagePullPolicy": settings.image_pull_policy,
        "args": args,
        # Downward API: the probe cross-checks the cgroup quota against the pod's CPU limit and
        # the advice records the node it was measured on
        "env": [
            _field_env("TFTA_NODE_NAME", "spec.nodeName"),
            _field_env("TFTA_POD_NAME", "metadata.name"),
            _field_env("TFTA_POD_NAMESPACE", "metadata.namespace"),
            _resource_env("TFTA_CPU_LIMIT", "limits.cpu"),
            _resource_env("TFTA_CPU_REQUEST", "requests.cpu"),
        ],
        # exactly the serving container's: the advice holds for the CPUs it was measured on
        "resources": resources,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "privileged": False,
            "runAsNonRoot": True,
            "runAsUser": ADVISOR_UID,
            "runAsGroup": ADVISOR_UID,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": TMP_VOLUME, "mountPath": "/tmp"},
            {"name": MODEL_VOLUME, "mountPath": MODEL_MOUNT, "readOnly": True},
            {"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT, "readOnly": True},
        ],
    }


def _field_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _resource_env(name: str, resource: str) -> dict[str, Any]:
    ref = {"containerName": ADVISOR_CONTAINER, "resource": resource, "divisor": "1m"}
    return {"name": name, "valueFrom": {"resourceFieldRef": ref}}


def _own_volumes() -> list[dict[str, Any]]:
    return [
        # the only writable path of the advisor
        {"name": TMP_VOLUME, "emptyDir": {"sizeLimit": TMP_SIZE_LIMIT}},
        # the copy of the model
        {"name": MODEL_VOLUME, "emptyDir": {}},
        # what the kubelet injects when automounting, for the advisor container alone
        {
            "name": TOKEN_VOLUME,
            "projected": {
                "sources": [
                    {
                        "serviceAccountToken": {
                            "path": "token",
                            "expirationSeconds": TOKEN_EXPIRATION_S,
                        }
                    },
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "path": "namespace",
                                    "fieldRef": {
                                        "apiVersion": "v1",
                                        "fieldPath": "metadata.namespace",
                                    },
                                }
                            ]
                        }
                    },
                ]
            },
        },
    ]


# --------------------------------------------------------------------------------------------------
# Names, hashes, lint exceptions


def _job_name(workload: str, container: str, spec_hash: str) -> str:
    """``tfta-<workload>-<container>-<hash>``, a DNS-1123 label: the readable part is cut to
    fit, the hash keeps two long names apart."""
    readable = re.sub(r"[^a-z0-9-]", "-", f"tfta-{workload}-{container}".lower())
    readable = readable[: NAME_LIMIT - len(spec_hash) - 1].rstrip("-")
    return f"{readable}-{spec_hash}"


def _hash(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_LENGTH]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _checkov_skips(spec: Mapping[str, Any]) -> dict[str, str]:
    """Security-lint exceptions the derived pod needs, each with its reason (as deploy/job.yaml
    carries them): only those its shape really triggers."""
    reasons: list[str] = []
    containers = [*spec.get("initContainers", []), *spec.get("containers", [])]
    if any("@" not in str(c.get("image", "")) for c in containers):
        reasons.append(
            "CKV_K8S_43=the advisor image is plan's --image and the copy runs the serving "
            "image as the workload names it; pin digests there"
        )
    if any(c.get("imagePullPolicy") != "Always" for c in containers):
        reasons.append(
            "CKV_K8S_15=the pull policies are plan's --image-pull-policy and the serving "
            "container's own, so the copy pulls the image as the server does"
        )
    resources = _dict(spec["containers"][0].get("resources"))
    pod_resources = _dict(spec.get("resources"))
    for check, key, what in _RESOURCE_CHECKS:
        if what in _dict(resources.get(key)):
            continue
        declared = (
            "; the pod-level resources declare one" if what in _dict(pod_resources.get(key)) else ""
        )
        reasons.append(
            f"{check}=the advisor runs with exactly the serving container's resources, which "
            f"declare no {what} {key[:-1]}{declared}"
        )
    return {f"checkov.io/skip{i}": reason for i, reason in enumerate(reasons, start=1)}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []

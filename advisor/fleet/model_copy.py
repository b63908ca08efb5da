"""The init container that copies the served model out of the serving image (or its volume)
into the calibration Job, and the one volume of the serving pod it mounts to do so.

The copy runs the serving image's code, so it gets no API credentials and no other volume of the
serving pod; it runs as the server's user, so it reads what the server reads, on a small budget of
its own (a cp, not a measurement).
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from advisor.consumers.quantity import cpu_quantity
from advisor.fleet.advisor_pod import ADVISOR_UID
from advisor.fleet.errors import DeriveError
from advisor.fleet.naming import (
    COPY_CONTAINER,
    MODEL_MOUNT,
    MODEL_VOLUME,
    TMP_VOLUME,
    TOKEN_VOLUME,
)
from advisor.fleet.serving_shape import copied_amounts, copy_of, pod_level_resources, qos_class
from advisor.fleet.storage import claim_problem, object_storage_problem, serving_model_problem
from advisor.fleet.tf_serving import BASE_PATH_ENV, BASE_PATH_FLAG, NAME_ENV, served_model
from advisor.keys import ANN_MODEL
from advisor.models import WorkloadKind
from advisor.models.kube import Container, KubeClaim, KubeWorkload, PodSpec, mapping, sequence

#: the copy's own resources (a cp, not a measurement). Its CPU limit is a fraction: on a Guaranteed
#: pod an integer would take exclusive cores from the static CPU manager (and, with its
#: full-pcpus-only option, be refused as an odd number of hyperthreads), a fraction runs in the
#: shared pool whatever the node's policy
COPY_RESOURCES = {
    "requests": {"cpu": "100m", "memory": "128Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}
#: an env var a subPathExpr reads: $(NAME)
_ENV_REFERENCE = re.compile(r"\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


# --------------------------------------------------------------------------------------------------
# Where the model is


def serving_model_path(annotated: str | None, container: Container) -> str:
    """The model's path in the serving container, normalised: the annotation's, else the base
    path a TF Serving container names itself (``fleet.tf_serving``). DeriveError when there is
    neither, or it is one the copy cannot take (object storage, a relative path)."""
    if annotated is not None:
        return checked_model_path(annotated)
    name = container.label
    if problem := serving_model_problem(container):
        raise DeriveError(problem)
    served = served_model(container)
    if served is None:
        raise DeriveError(
            f"annotation {ANN_MODEL} is required: the model's path in the container (container "
            f"{name} is no TF Serving server that names its model with {BASE_PATH_FLAG} or "
            f"{BASE_PATH_ENV}/{NAME_ENV})"
        )
    where = f"container {name}'s model ({served.named_by})"
    if problem := object_storage_problem(served.path, where):
        raise DeriveError(problem)
    return checked_model_path(served.path, where)


def checked_model_path(path: str, where: str = "model path") -> str:
    """The model path, normalised; DeriveError when it is not one the copy can take."""
    normal = posixpath.normpath(path)
    if not posixpath.isabs(normal) or normal == "/":
        raise DeriveError(f"{where} {path!r} must be an absolute path below '/'")
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


def model_source(
    workload: KubeWorkload,
    container: Container,
    model_path: str,
    *,
    claims: Mapping[str, KubeClaim] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The serving container's volumeMount the model lives under (the longest mountPath that
    covers it), the volume it mounts and the env its subPathExpr reads; nothing when the model
    is in the image. DeriveError when the server reads its model from object storage, or from
    a claim the calibration pod cannot mount (``claims``: the namespace's PersistentVolumeClaims
    by name; None: not read, a pod volume's claim is then not checked)."""
    if problem := serving_model_problem(container):
        raise DeriveError(problem)
    covering = [
        (depth, mount)
        for mount in container.volume_mounts
        if (depth := _under(str(mount.get("mountPath", "")), model_path)) is not None
    ]
    if not covering:
        return [], [], []
    _, mount = max(covering, key=lambda item: item[0])
    volume = _source_volume(workload, str(mount.get("name")), claims)
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
    workload: KubeWorkload,
    name: str,
    claims: Mapping[str, KubeClaim] | None,
) -> dict[str, Any]:
    """The volume ``name`` as the calibration pod can mount it, read-only where it says so; a
    claim only when any node may mount it (fleet.storage)."""
    if workload.kind is WorkloadKind.STATEFULSET:
        # the StatefulSet controller gives each replica its claim, over a pod volume of the
        # same name: the Job reads the first replica's
        for claim_template in workload.claim_templates:
            if mapping(claim_template.get("metadata")).get("name") == name:
                claim_name = f"{name}-{workload.name}-{workload.first_ordinal}"
                modes = sequence(mapping(claim_template.get("spec")).get("accessModes"))
                problem = claim_problem(
                    name, claim_name, claims, template_modes=modes, template=name
                )
                if problem:
                    raise DeriveError(problem)
                return {
                    "name": name,
                    "persistentVolumeClaim": {"claimName": claim_name, "readOnly": True},
                }
    for volume in workload.pod_spec.volumes:
        if volume.get("name") != name:
            continue
        result: dict[str, Any] = copy_of(volume)
        if "emptyDir" in result:
            raise DeriveError(
                f"the model is in volume {name}, an emptyDir: the serving pod fills it at run "
                "time, and another pod cannot read it"
            )
        ephemeral = mapping(mapping(result.get("ephemeral")).get("volumeClaimTemplate")).get("spec")
        if "ephemeral" in result and not (
            mapping(ephemeral).get("dataSource") or mapping(ephemeral).get("dataSourceRef")
        ):
            raise DeriveError(
                f"the model is in volume {name}, an ephemeral volume without a data source: "
                "each pod gets a new empty one, filled at run time"
            )
        if "persistentVolumeClaim" in result:
            claim_name = str(mapping(result["persistentVolumeClaim"]).get("claimName"))
            if problem := claim_problem(name, claim_name, claims):
                raise DeriveError(problem)
            result["persistentVolumeClaim"]["readOnly"] = True
        if "projected" in result:
            # the copy runs the serving image's code: it gets no API credentials, and a model is
            # never a token
            sources = [
                s
                for s in sequence(result["projected"].get("sources"))
                if not mapping(s).get("serviceAccountToken")
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


def _subpath_env(expression: str, container: Container) -> list[dict[str, Any]]:
    """The env a subPathExpr expands, copied so the copy reads the directory the server reads;
    only what resolves the same in another pod of the namespace (a value, the namespace)."""
    env = {str(e.get("name")): e for e in container.env}
    copied = []
    for name in dict.fromkeys(_ENV_REFERENCE.findall(expression)):
        entry = env.get(name)
        if entry is None:
            raise DeriveError(
                f"the model's volumeMount has subPathExpr {expression!r}, which reads $({name}): "
                "the container's env does not set it, so another pod cannot resolve it the same"
            )
        field_path = mapping(mapping(entry.get("valueFrom")).get("fieldRef")).get("fieldPath")
        if "value" not in entry and field_path != "metadata.namespace":
            raise DeriveError(
                f"the model's volumeMount has subPathExpr {expression!r}, which reads $({name}) "
                "from the serving pod itself: the calibration pod would read another directory"
            )
        copied.append(copy_of(entry))
    return copied


# --------------------------------------------------------------------------------------------------
# The copy


def copy_container(
    serving: Container,
    pod: PodSpec,
    *,
    model_path: str,
    mounts: list[dict[str, Any]],
    env: list[dict[str, Any]],
) -> dict[str, Any]:
    """Copies the model out of the serving image (or its volume) into the Job's emptyDir, with
    no other volume of the serving pod and no credentials."""
    container: dict[str, Any] = {"name": COPY_CONTAINER, "image": serving.image}
    if serving.image_pull_policy:
        container["imagePullPolicy"] = serving.image_pull_policy
    # -L: a model directory reached through symlinks (a ConfigMap volume's ..data, a "current"
    # link to a version) is copied as the files it points to; without it the copy holds links
    # into a volume the advisor does not mount. busybox's cp and coreutils' both take -RL
    container["command"] = ["cp", "-RL", model_path, MODEL_MOUNT + "/"]
    # a failing cp's last lines become the container's termination message (kubectl describe)
    container["terminationMessagePolicy"] = "FallbackToLogsOnError"
    if env:
        container["env"] = env
    container["resources"] = _copy_resources(serving, pod)
    container["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
        **_copy_identity(serving, pod),
    }
    container["volumeMounts"] = [{"name": MODEL_VOLUME, "mountPath": MODEL_MOUNT}, *mounts]
    return container


def _copy_identity(serving: Container, pod: PodSpec) -> dict[str, Any]:
    """The user the server runs as (its container's, else its pod's), so the copy reads what the
    server reads; the advisor's where the serving pod leaves it to the image."""
    container_security = serving.security_context
    pod_security = pod.security_context

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


def _copy_resources(serving: Container, pod: PodSpec) -> dict[str, Any]:
    """COPY_RESOURCES, within the serving pod's budget (no container may ask for more than a
    pod-level limit or request). In a Guaranteed pod the copy asks for what it may use, as every
    container of such a pod does, and for no more than the serving container: the calibration
    pod keeps the serving pod's QoS class and asks the scheduler for what a replica asks."""
    pod_resources = pod_level_resources(pod)
    if qos_class(pod, pod_resources) == "Guaranteed":
        bounds = [
            mapping(pod_resources.get("requests")),
            mapping(pod_resources.get("limits")),
            mapping(serving.resources.get("limits")),
        ]
        size = _within(COPY_RESOURCES["limits"], *bounds)
        return {"requests": size, "limits": copied_amounts(size)}
    limits = _within(COPY_RESOURCES["limits"], mapping(pod_resources.get("limits")))
    requests = _within(COPY_RESOURCES["requests"], mapping(pod_resources.get("requests")), limits)
    return {"requests": requests, "limits": limits}


def _within(amounts: Mapping[str, Any], *bounds: Mapping[str, Any]) -> dict[str, Any]:
    """``amounts``, each cut to the smallest bound that names it."""
    result = dict(amounts)
    for bound in bounds:
        for name, ours in result.items():
            theirs = bound.get(name)
            if theirs is not None and _quantity(theirs) < _quantity(ours):
                result[name] = theirs
    return copied_amounts(result)


def _quantity(value: Any) -> float:
    number = cpu_quantity(value)
    return math.inf if number is None else number

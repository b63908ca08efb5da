"""What a real API server does to a Job on create before it stores it (testkit/fakeapi/jobs.py
serves the requests): the defaults of a Job and of its pod template, with the generated selector
and the pod-template labels, then the validation (every cause, joined into one 422 there).
"""

from __future__ import annotations

from typing import Any

from testkit.fakeapi import meta as meta_checks
from testkit.fakeapi import schema

#: the labels a real server adds to the pod template (and the selector picks by the uid)
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
RESTART_POLICIES = ("OnFailure", "Never")
DEFAULT_BACKOFF_LIMIT = 6
#: the token lifetime bounds of a projected serviceAccountToken
MIN_TOKEN_S, MAX_TOKEN_S = 600, 2**32


def default(obj: dict[str, Any]) -> None:
    """What defaulting and the Job strategy's PrepareForCreate add before validation."""
    meta, spec = obj["metadata"], obj.setdefault("spec", {}) or {}
    obj["spec"] = spec
    template = spec.setdefault("template", {}) or {}
    spec["template"] = template
    template_meta = template.setdefault("metadata", {}) or {}
    template["metadata"] = template_meta
    pod = template.setdefault("spec", {}) or {}
    template["spec"] = pod
    if not meta.get("labels") and template_meta.get("labels"):
        meta["labels"] = dict(template_meta["labels"])
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec.update(completions=1, parallelism=1)
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimitPerIndex") is None:
        spec.setdefault("backoffLimit", DEFAULT_BACKOFF_LIMIT)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if not spec.get("podFailurePolicy"):
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    if not spec.get("manualSelector"):
        uid, name = meta["uid"], str(meta.get("name") or "")
        labels = template_meta.setdefault("labels", {}) or {}
        template_meta["labels"] = labels
        labels.update(
            {CONTROLLER_UID: uid, LEGACY_CONTROLLER_UID: uid, JOB_NAME: name, LEGACY_JOB_NAME: name}
        )
        if not spec.get("selector"):
            spec["selector"] = {"matchLabels": {CONTROLLER_UID: uid}}
    pod.setdefault("restartPolicy", "Always")
    pod.setdefault("dnsPolicy", "ClusterFirst")
    pod.setdefault("schedulerName", "default-scheduler")
    pod.setdefault("terminationGracePeriodSeconds", 30)
    pod.setdefault("securityContext", {})
    for container in (pod.get("initContainers") or []) + (pod.get("containers") or []):
        if not isinstance(container, dict):
            continue
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        image = str(container.get("image") or "")
        tag = image.rpartition("/")[2].partition("@")[0].partition(":")[2]
        latest = "@" not in image and tag in ("", "latest")
        container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")


def invalid_causes(obj: dict[str, Any]) -> list[str]:
    meta, spec = obj["metadata"], obj["spec"]
    name = str(meta.get("name") or "")
    if not name:
        causes = ["metadata.name: Required value: name or generateName is required"]
    else:
        causes = meta_checks.subdomain_causes(name, "metadata.name")
    if len(name) > 63:
        # the job-name label the server puts on the pod template is where a real server says it
        causes.append(
            f'spec.template.labels: Invalid value: "{name}": must be no more than 63 characters'
        )
    causes += meta_checks.label_causes(meta.get("labels") or {})
    causes += meta_checks.annotation_causes(meta.get("annotations") or {})
    causes += meta_checks.owner_reference_causes(meta.get("ownerReferences") or [])
    for key in ("parallelism", "completions", "backoffLimit", "ttlSecondsAfterFinished"):
        value = spec.get(key)
        if value is not None and value < 0:
            causes.append(f"spec.{key}: Invalid value: {value}: must be greater than or equal to 0")
    causes += _selector_causes(spec)
    template = spec["template"]
    template_meta = template["metadata"]
    causes += meta_checks.label_causes(template_meta.get("labels") or {}, "spec.template.labels")
    causes += meta_checks.annotation_causes(
        template_meta.get("annotations") or {}, "spec.template.annotations"
    )
    return causes + _pod_causes(template["spec"], "spec.template.spec")


def _selector_causes(spec: dict[str, Any]) -> list[str]:
    selector = spec.get("selector") or {}
    labels = spec["template"]["metadata"].get("labels") or {}
    if not spec.get("manualSelector"):
        generated = {CONTROLLER_UID: labels.get(CONTROLLER_UID)}
        if selector != {"matchLabels": generated}:
            return [f"spec.selector: Invalid value: {selector}: `selector` not auto-generated"]
        return []
    if not selector:
        return ["spec.selector: Required value"]
    wanted = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in wanted.items()):
        return [
            f"spec.template.metadata.labels: Invalid value: {labels}: `selector` does not "
            "match template `labels`"
        ]
    return []


def _pod_causes(pod: dict[str, Any], path: str) -> list[str]:
    causes = []
    policy = pod.get("restartPolicy")
    if policy not in RESTART_POLICIES:
        causes.append(
            f'{path}.restartPolicy: Unsupported value: "{policy}": supported values: '
            '"OnFailure", "Never"'
        )
    causes += meta_checks.label_causes(pod.get("nodeSelector") or {}, f"{path}.nodeSelector")
    volumes, volume_causes = _volumes(pod.get("volumes") or [], f"{path}.volumes")
    causes += volume_causes
    containers = pod.get("containers") or []
    if not containers:
        causes.append(f"{path}.containers: Required value")
    names: set[str] = set()
    for field_name in ("initContainers", "containers"):
        for index, container in enumerate(pod.get(field_name) or []):
            where = f"{path}.{field_name}[{index}]"
            causes += _container_causes(container, where, names, volumes)
    return causes


def _volumes(raw: list[dict[str, Any]], path: str) -> tuple[set[str], list[str]]:
    names: set[str] = set()
    causes = []
    for index, volume in enumerate(raw):
        where = f"{path}[{index}]"
        name = volume.get("name")
        causes += dns_label(name, f"{where}.name")
        if name in names:
            causes.append(f'{where}.name: Duplicate value: "{name}"')
        names.add(str(name))
        sources = [key for key, value in volume.items() if key != "name" and value is not None]
        if not sources:
            causes.append(f"{where}: Required value: must specify a volume type")
        elif len(sources) > 1:
            causes.append(
                f"{where}.{sources[1]}: Forbidden: may not specify more than 1 volume type"
            )
        for j, source in enumerate((volume.get("projected") or {}).get("sources") or []):
            token = source.get("serviceAccountToken")
            if token is None:
                continue
            at = f"{where}.projected.sources[{j}].serviceAccountToken"
            seconds = token.get("expirationSeconds", 3600)
            if seconds < MIN_TOKEN_S:
                causes.append(
                    f"{at}.expirationSeconds: Invalid value: {seconds}: may not specify a "
                    "duration less than 10 minutes"
                )
            if seconds > MAX_TOKEN_S:
                causes.append(
                    f"{at}.expirationSeconds: Invalid value: {seconds}: may not specify a "
                    "duration larger than 2^32 seconds"
                )
            if not token.get("path"):
                causes.append(f"{at}.path: Required value")
    return names, causes


def dns_label(name: Any, path: str) -> list[str]:
    if not name:
        return [f"{path}: Required value"]
    return meta_checks.dns_label_causes(name, path)


def _container_causes(
    container: dict[str, Any], where: str, names: set[str], volumes: set[str]
) -> list[str]:
    name = container.get("name")
    causes = dns_label(name, f"{where}.name")
    if name in names:
        causes.append(f'{where}.name: Duplicate value: "{name}"')
    names.add(str(name))
    if not container.get("image"):
        causes.append(f"{where}.image: Required value")
    paths: set[str] = set()
    for index, mount in enumerate(container.get("volumeMounts") or []):
        at = f"{where}.volumeMounts[{index}]"
        if mount.get("name") not in volumes:
            causes.append(f'{at}.name: Not found: "{mount.get("name")}"')
        mount_path = mount.get("mountPath")
        if not mount_path:
            causes.append(f"{at}.mountPath: Required value")
        elif mount_path in paths:
            causes.append(f'{at}.mountPath: Invalid value: "{mount_path}": must be unique')
        paths.add(str(mount_path))
    resources = container.get("resources") or {}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    for resource, value in requests.items():
        if resource in limits and schema.quantity(value) > schema.quantity(limits[resource]):
            causes.append(
                f'{where}.resources.requests: Invalid value: "{value}": must be less than or '
                f"equal to {resource} limit of {limits[resource]}"
            )
    return causes

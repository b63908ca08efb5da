"""batch/v1 Jobs for the fake API server: what ``plan`` lists and creates (the list itself:
testkit/fakeapi/lists.py).

As strict as a real server for the requests a planner sends: GET and DELETE on one named Job,
POST to a namespace's Jobs, authorized by the server's rules (group ``batch``), with

- decoding against the Job's schema (testkit/fakeapi/schema.py): a wrong type is 400, an
  undeclared field 400 with ``fieldValidation=Strict``, dropped with a ``Warning`` otherwise;
- the validation a real server does on create (422 ``Invalid``, every cause joined): the name (a
  DNS subdomain, 63 characters at most, as the ``job-name`` label it becomes on the pods must be
  a label value), labels, annotations, ownerReferences' shape, a pod template with containers
  (named, unique, with an image), ``restartPolicy`` Never or OnFailure (an absent one defaults to
  Always, which a Job refuses), volumes (named, unique, one source each; projected token
  lifetimes), volume mounts naming a volume, requests not above limits, no hand-written
  ``selector`` without ``manualSelector``; a ``metadata.namespace`` other than the path's is 400;
- what the server adds: uid, creationTimestamp, resourceVersion, generation, the generated
  selector and the pod-template labels ``batch.kubernetes.io/controller-uid`` and
  ``batch.kubernetes.io/job-name`` (and their legacy forms), the defaults of a Job and of its pod
  template, and ``status: {}``; the Job's own labels default to the template's;
- validating admission after validation (testkit/fakeapi/admission.py: Pod Security warnings,
  webhook denials, a ResourceQuota on ``count/jobs.batch``);
- 409 ``AlreadyExists`` for a name in use (after validation and admission, as storage comes
  last), 404 for a Job that does not exist; ``dryRun=All``: authorized, validated and admitted,
  never stored (and no resourceVersion, as a real dry run);
- DELETE with ``propagationPolicy`` (query or DeleteOptions body): batch/v1's default is Orphan,
  with the real server's warning; uid/resourceVersion preconditions (409).

The Job controller is not modelled: tests set what it would report (``set_running``,
``set_condition``).
"""

from __future__ import annotations

import copy
import random
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from testkit.fakeapi import meta as meta_checks
from testkit.fakeapi import schema
from testkit.fakeapi.admission import Admission
from testkit.fakeapi.errors import ApiError, not_found

ITEM = re.compile(r"^/apis/batch/v1/namespaces/([^/]+)/jobs/([^/]+)$")
RESTART_POLICIES = ("OnFailure", "Never")
#: the labels a real server adds to the pod template (and the selector picks by the uid)
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
#: what a real server says when batch/v1's default propagation keeps the pods
ORPHAN_WARNING = (
    '299 - "child pods are preserved by default when jobs are deleted; set '
    "propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress "
    'this warning"'
)
PROPAGATION = ("Orphan", "Background", "Foreground")
DEFAULT_BACKOFF_LIMIT = 6
#: the token lifetime bounds of a projected serviceAccountToken
MIN_TOKEN_S, MAX_TOKEN_S = 600, 2**32
#: what generateName appends (apiserver's SimpleNameGenerator alphabet)
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
#: what a create may be sent as; none at all is JSON, the server's first media type (the client
#: sends no Content-Type with a create)
_CONTENT_TYPES = (None, "application/json", "application/yaml")


def owner_reference(owner: dict[str, Any], *, controller: bool = True) -> dict[str, Any]:
    """The ownerReference to a stored object (with its uid), as a controller sets it."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def job(
    namespace: str,
    name: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: dict[str, Any] | None = None,
    container: dict[str, Any] | None = None,
    pod_spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A minimal valid Job: one container ``advisor`` (``container``'s keys added to it,
    ``pod_spec``'s to the template's spec), restartPolicy Never, owned by ``owner`` (a stored
    workload) when given."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    if owner is not None:
        meta["ownerReferences"] = [owner_reference(owner)]
    advisor = {"name": "advisor", "image": "registry.example.com/advisor:1", **(container or {})}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "backoffLimit": 1,
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [advisor], **(pod_spec or {})}
            },
        },
    }


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Jobs:
    """The batch/v1 Jobs of one fake server (it holds the lock while calling in)."""

    def __init__(self, next_rv: Callable[[], str]) -> None:
        self.next_rv = next_rv
        #: (namespace, name) -> the stored Job; the garbage collector deletes from it too
        self.store: dict[tuple[str, str], dict[str, Any]] = {}
        #: what admission answers for a create (a seed, ``put``, is not admitted: it exists)
        self.admission = Admission()

    # ---------------------------------------------------------------------------------------------
    # test helpers

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.store.get((namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def all(self) -> list[dict[str, Any]]:
        """Every stored Job, in (namespace, name) order (also the list's input)."""
        return [self.store[key] for key in sorted(self.store)]

    def put(self, body: dict[str, Any]) -> dict[str, Any]:
        """Store ``body`` as created by someone else: decoded, defaulted and validated as a POST
        is (ApiError when the seed itself is not a valid Job)."""
        namespace = body["metadata"]["namespace"]
        obj, _ = self.create(body, namespace, {}, admit=False)
        return obj

    def set_running(self, namespace: str, name: str, active: int = 1) -> dict[str, Any]:
        """What the Job controller reports while pods run: ``status.active``."""
        obj = self._stored(namespace, name)
        status = obj.setdefault("status", {})
        status.setdefault("startTime", _now())
        status.update(active=active, ready=0, terminating=0, uncountedTerminatedPods={})
        obj["metadata"]["resourceVersion"] = self.next_rv()
        return copy.deepcopy(obj)

    def set_condition(
        self,
        namespace: str,
        name: str,
        type: str = "Complete",
        *,
        reason: str | None = None,
        message: str | None = None,
        failed: int | None = None,
    ) -> dict[str, Any]:
        """A finished Job as the controller leaves it: ``Complete`` (succeeded 1, after a
        ``SuccessCriteriaMet`` condition) or ``Failed`` (``failed`` pods, backoffLimit + 1 by
        default, after a ``FailureTarget``); no pod is active any more."""
        if type not in ("Complete", "Failed"):
            raise ValueError(f"a Job finishes Complete or Failed, not {type!r}")
        obj = self._stored(namespace, name)
        now = _now()
        old = obj.get("status") or {}
        status: dict[str, Any] = {
            "startTime": old.get("startTime", now),
            "ready": 0,
            "terminating": 0,
            "uncountedTerminatedPods": {},
        }
        if type == "Complete":
            reason = reason or "CompletionsReached"
            message = message or "Reached expected number of succeeded pods"
            status.update(succeeded=1, completionTime=now)
            first = "SuccessCriteriaMet"
        else:
            reason = reason or "BackoffLimitExceeded"
            message = message or "Job has reached the specified backoff limit"
            limit = obj["spec"].get("backoffLimit", DEFAULT_BACKOFF_LIMIT)
            status["failed"] = failed if failed is not None else limit + 1
            first = "FailureTarget"
        status["conditions"] = [
            {
                "type": kind,
                "status": "True",
                "lastProbeTime": now,
                "lastTransitionTime": now,
                "reason": reason,
                "message": message,
            }
            for kind in (first, type)
        ]
        obj["status"] = status
        obj["metadata"]["resourceVersion"] = self.next_rv()
        return copy.deepcopy(obj)

    # ---------------------------------------------------------------------------------------------
    # requests

    def handle(
        self,
        request: Any,
        namespace: str,
        name: str | None,
        *,
        authorize: Callable[..., None],
        namespace_exists: Callable[[str], None],
        deleted: Callable[[dict[str, Any], str], None],
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """One request (the server's ``Recorded``) for a named Job, or a POST (``name`` None);
        ``deleted(job, propagationPolicy)`` runs after a Job is removed (its dependents)."""
        method = request.method
        if name is None:
            if method != "POST":
                raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed")
            if request.content_type not in _CONTENT_TYPES:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types "
                    f"include: {', '.join(filter(None, _CONTENT_TYPES))}",
                )
            authorize("create", namespace, None, "batch", "jobs")
            namespace_exists(namespace)
            obj, headers = self.create(
                request.body, namespace, request.query, dry_run=request.query.get("dryRun") == "All"
            )
            return 201, obj, headers
        if method == "GET":
            authorize("get", namespace, name, "batch", "jobs")
            return 200, self._stored(namespace, name), {}
        if method != "DELETE":
            raise ApiError(405, "MethodNotAllowed", f"the fake does not serve {method} here")
        authorize("delete", namespace, name, "batch", "jobs")
        policy = _propagation(request)
        current = self._stored(namespace, name)
        failure = meta_checks.precondition_failure(request.body, current, f'jobs.batch "{name}"')
        if failure is not None:
            raise ApiError(409, "Conflict", failure)
        headers = {"Warning": ORPHAN_WARNING} if policy is None else {}
        if request.query.get("dryRun") != "All":
            del self.store[(namespace, name)]
            deleted(current, policy or "Orphan")
        return 200, _success(name, current), headers

    def create(
        self,
        body: Any,
        namespace: str,
        query: dict[str, str],
        *,
        dry_run: bool = False,
        admit: bool = True,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """Decode, default, validate, admit (unless not ``admit``) and (unless ``dry_run``) store
        one Job; (object, headers)."""
        headers: dict[str, str] = {}
        obj = self._decode(body, query, headers)
        meta = obj.setdefault("metadata", {})
        meta_checks.in_namespace(meta, namespace)
        if meta.get("resourceVersion"):
            raise ApiError(
                400, "BadRequest", "resourceVersion should not be set on objects to be created"
            )
        meta["namespace"] = namespace
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choice(_NAME_ALPHABET) for _ in range(5))
            meta["name"] = f"{meta['generateName']}{suffix}"
        name = str(meta.get("name") or "")
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
        for server_owned in ("deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(server_owned, None)
        _default(obj)
        causes = _invalid_causes(obj)
        if causes:
            raise ApiError(
                422,
                "Invalid",
                f'Job.batch "{name}" is invalid: {"; ".join(causes)}',
                {"name": name, "group": "batch", "kind": "Job"},
            )
        if admit:
            used = sum(1 for where, _ in self.store if where == namespace)
            admitted = self.admission.admit_job(obj, used)
            if admitted:
                headers["Warning"] = ", ".join(
                    filter(None, (headers.get("Warning"), *admitted.values()))
                )
        if (namespace, name) in self.store:
            raise ApiError(
                409,
                "AlreadyExists",
                f'jobs.batch "{name}" already exists',
                {"name": name, "group": "batch", "kind": "jobs"},
            )
        if dry_run:
            return obj, headers
        meta["resourceVersion"] = self.next_rv()
        self.store[(namespace, name)] = obj
        return copy.deepcopy(obj), headers

    # ---------------------------------------------------------------------------------------------

    def _decode(self, body: Any, query: dict[str, str], headers: dict[str, str]) -> dict[str, Any]:
        obj = schema.decode_request(
            body, query, headers, api_version="batch/v1", kind="Job", model="V1Job"
        )
        obj["status"] = {}  # a create ignores status; the controller fills it
        return obj

    def _stored(self, namespace: str, name: str) -> dict[str, Any]:
        found = self.store.get((namespace, name))
        if found is None:
            raise not_found("jobs", name, "batch")
        return found


def _default(obj: dict[str, Any]) -> None:
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


def _invalid_causes(obj: dict[str, Any]) -> list[str]:
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


def _propagation(request: Any) -> str | None:
    """The propagationPolicy asked for (query or DeleteOptions body), None for the default."""
    body = request.body if isinstance(request.body, dict) else {}
    policy = request.query.get("propagationPolicy") or body.get("propagationPolicy")
    if policy is not None and policy not in PROPAGATION:
        raise ApiError(
            400,
            "BadRequest",
            f'propagationPolicy: Unsupported value: "{policy}": supported values: '
            '"Foreground", "Background", "Orphan"',
        )
    return str(policy) if policy is not None else None


def _success(name: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": name,
            "group": "batch",
            "kind": "jobs",
            "uid": obj["metadata"]["uid"],
        },
    }

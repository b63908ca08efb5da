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
- what the server adds (testkit/fakeapi/jobspec.py, with the validation above): uid,
  creationTimestamp, resourceVersion, generation, the generated selector and the pod-template
  labels ``batch.kubernetes.io/controller-uid`` and
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

from testkit.fakeapi import jobspec, schema
from testkit.fakeapi import meta as meta_checks
from testkit.fakeapi.admission import Admission
from testkit.fakeapi.errors import ApiError, not_found
from testkit.fakeapi.jobspec import DEFAULT_BACKOFF_LIMIT

ITEM = re.compile(r"^/apis/batch/v1/namespaces/([^/]+)/jobs/([^/]+)$")
#: what a real server says when batch/v1's default propagation keeps the pods
ORPHAN_WARNING = (
    '299 - "child pods are preserved by default when jobs are deleted; set '
    "propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress "
    'this warning"'
)
PROPAGATION = ("Orphan", "Background", "Foreground")
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
        ``SuccessCriteriaMet`` condition) or ``Failed`` (``failed`` pods, after a
        ``FailureTarget``; by default backoffLimit + 1, or 1 for a ``PodFailurePolicy`` reason:
        a FailJob rule ends the Job at its first matching pod, as the real controller does);
        no pod is active any more."""
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
            first_match = 1 if reason == "PodFailurePolicy" else limit + 1
            status["failed"] = failed if failed is not None else first_match
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
        jobspec.default(obj)
        causes = jobspec.invalid_causes(obj)
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

"""A strict fake Kubernetes API server for ConfigMaps, over real HTTP on 127.0.0.1.

No real API server can run on the test machine (see the shared REAL-PARTS notes), so the writer is
driven through the official ``kubernetes`` client against this one. It does what the real server
does for the requests the advisor may send, in the real order (authentication, fault injection
where priority-and-fairness would answer 429, authorization, namespace, validation, storage):

- bearer-token authentication (401), authorization from the rules of deploy/rbac.yaml (403), with
  the create-on-apply check: a server-side apply PATCH that creates is authorized as ``patch``
  and then as ``create`` with the name;
- GET 200/404, POST 201/409 AlreadyExists, PUT 200/404/409 Conflict, DELETE 200/404 (409 on a
  failed uid/resourceVersion precondition), server-side apply (``application/apply-patch+yaml``,
  ``fieldManager`` required, ``force``) with field ownership per data/label/annotation key, 201
  on create, 200 on update, 409 on a stale ``metadata.resourceVersion`` or a conflict with
  another manager without ``force``;
- ``dryRun=All`` (validated and authorized, never stored), 422 on invalid names/keys/labels;
- strictness: unknown paths 404, unknown methods 405, other content types 415, unknown query
  parameters 400;
- faults: a status (429 with Retry-After, 500/503, ...) for the next N requests, a never-answering
  mode, and a hook that runs between two requests to simulate a concurrent writer;
- lists of ConfigMaps, Pods, ServiceAccounts, Deployments, StatefulSets and DaemonSets
  (namespaced, and across all namespaces when ``cluster_rules`` from a ClusterRole allow it) and
  of Namespaces (testkit/fakeapi/scope.py) with label and field selectors, pages and
  metadata-only answers, as strict as a real server (testkit/fakeapi/lists.py);
- apps/v1 Deployments, StatefulSets and DaemonSets, GET, PATCH and DELETE
  (testkit/fakeapi/apps.py); Pods are only listed;
- batch/v1 Jobs, GET, POST and DELETE (testkit/fakeapi/jobs.py), and lists of them, with
  validating admission on create as a test sets it up (testkit/fakeapi/admission.py: a
  ResourceQuota on count/jobs.batch, an admission webhook's denial, Pod Security warnings);
- core/v1 Events, POST and lists (testkit/fakeapi/events.py);
- v1 PersistentVolumeClaims, GET (testkit/fakeapi/claims.py), and lists of them;
- the garbage collector (testkit/fakeapi/garbage.py): a Job whose owner is deleted, or
  never existed, goes away as on a real cluster.

Every request is recorded (method, path, query, content type, body) for assertions.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from testkit.fakeapi import apps, claims, events, garbage, jobs, lists, scope
from testkit.fakeapi import meta as meta_checks
from testkit.fakeapi.admission import JobQuota, PolicyDenial, WebhookDenial
from testkit.fakeapi.errors import ApiError
from testkit.fakeapi.rbac import SERVICE_ACCOUNT, Rule, role_rules

_ITEM = re.compile(r"^/api/v1/namespaces/([^/]+)/configmaps/([^/]+)$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_ALLOWED_QUERY = {
    "dryRun",
    "fieldManager",
    "force",
    "pretty",
    "fieldValidation",
    "labelSelector",
    "fieldSelector",
    "limit",
    "continue",
    "propagationPolicy",
    "gracePeriodSeconds",
}
_APPLY = "application/apply-patch+yaml"
_OWNED_MAPS = (("data",), ("binaryData",), ("metadata", "labels"), ("metadata", "annotations"))


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    content_type: str | None
    body: Any
    status: int | None = None
    accept: str | None = None


@dataclass
class Fault:
    status: int
    times: int
    retry_after: str | None = None
    method: str | None = None


@dataclass
class _Stored:
    obj: dict[str, Any]
    #: (map path, key) -> field manager owning it
    owners: dict[tuple[tuple[str, ...], str], str] = field(default_factory=dict)


class FakeApiServer:
    """Start with ``with FakeApiServer(...) as api:``; ``api.kubeconfig`` is a real kubeconfig."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        namespaces: tuple[str, ...] = ("ml",),
        role_namespace: str = "ml",
        rules: list[Rule] | None = None,
        cluster_rules: list[Rule] | None = None,
        configmap_name: str | None = None,
        token: str = "s3cret-token",
        service_account: str = SERVICE_ACCOUNT,
    ) -> None:
        self.namespaces = set(namespaces)
        self.role_namespace = role_namespace
        self.rules = rules if rules is not None else role_rules(configmap_name=configmap_name)
        #: rules granted in every namespace (a ClusterRole through a ClusterRoleBinding)
        self.cluster_rules = cluster_rules or []
        self.token = token
        #: who the token is: the ServiceAccount ``rules`` were bound to (403 messages name it)
        self.user = f"system:serviceaccount:{role_namespace}:{service_account}"
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.hang_next = 0
        #: called (with the server) before each write is processed; tests use it to race
        self.before_write: Callable[[FakeApiServer], None] | None = None
        self._store: dict[tuple[str, str], _Stored] = {}
        self._rv = itertools.count(1000)
        self.workloads = apps.Workloads(lambda: str(next(self._rv)))
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self._jobs = jobs.Jobs(lambda: str(next(self._rv)))
        self.claims = claims.Claims(lambda: str(next(self._rv)))
        self._events = events.Events(lambda: str(next(self._rv)))
        #: the Namespaces' labels and the ServiceAccounts (testkit/fakeapi/scope.py)
        self.scope = scope.Scope(lambda: str(next(self._rv)))
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._tmp = tmp_path
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        # a short poll: stop() waits for it, once per test
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.kubeconfig = self.write_kubeconfig(tmp_path / "kubeconfig", token=token)

    # ---------------------------------------------------------------------------------------------
    # lifecycle and test helpers

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def write_kubeconfig(self, path: Path, *, token: str, server: str | None = None) -> Path:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": server or self.url}}],
            "users": [{"name": "advisor", "user": {"token": token}}],
            "contexts": [
                {
                    "name": "fake",
                    "context": {"cluster": "fake", "user": "advisor", "namespace": "ml"},
                }
            ],
            "current-context": "fake",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def inject(
        self, status: int, times: int = 1, retry_after: str | None = None, method: str | None = None
    ) -> None:
        """The next ``times`` requests (of ``method``, if given) get ``status``."""
        with self._lock:
            self.faults.append(Fault(status, times, retry_after, method))

    def hang(self, times: int = 1) -> None:
        """The next ``times`` requests are read and never answered (until the server stops)."""
        with self._lock:
            self.hang_next += times

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            stored = self._store.get((namespace, name))
            return copy.deepcopy(stored.obj) if stored else None

    def put(self, obj: dict[str, Any], manager: str = "kubectl") -> dict[str, Any]:
        """Store ``obj`` as if another client had created or replaced it (a seed or a race)."""
        with self._lock:
            meta = obj["metadata"]
            key = (meta["namespace"], meta["name"])
            stored = self._store.get(key)
            new = self._finish(copy.deepcopy(obj), stored.obj if stored else None)
            owners = {(path, k): manager for path in _OWNED_MAPS for k in _get_map(new, path)}
            self._store[key] = _Stored(new, owners)
            return copy.deepcopy(new)

    def put_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        """A Namespace that exists (requests in it are accepted), with ``labels``."""
        with self._lock:
            self.namespaces.add(name)
            self.scope.label(name, labels or {})

    def put_service_account(self, namespace: str, name: str) -> dict[str, Any]:
        with self._lock:
            return self.scope.put_service_account(namespace, name)

    def put_workload(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a Deployment/StatefulSet (``apps.workload(...)``) as created by someone else."""
        with self._lock:
            return self.workloads.put(obj)

    def put_pod(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a Pod (``pods.pod_of(...)``, ``pods.bare_pod(...)``) as the cluster made it."""
        with self._lock:
            obj = copy.deepcopy(obj)
            meta = obj["metadata"]
            meta.setdefault("uid", str(uuid.uuid4()))
            meta["resourceVersion"] = str(next(self._rv))
            self.pods[(meta["namespace"], meta["name"])] = obj
            return copy.deepcopy(obj)

    def workload(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self.workloads.get(resource, namespace, name)

    def delete_workload(
        self, resource: str, namespace: str, name: str, propagation: str = "Background"
    ) -> dict[str, Any]:
        """Delete a Deployment/StatefulSet as another client would (``kubectl delete``): its
        Jobs go with it (Background, apps/v1's default), or stay without the reference (Orphan)."""
        with self._lock:
            removed = self.workloads.remove(resource, namespace, name)
            if removed is None:
                raise KeyError(f"no {resource}/{name} in {namespace}")
            self._deleted(removed, propagation)
            return removed

    def put_job(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a Job (``jobs.job(...)``) as created by someone else, validated as a POST is."""
        with self._lock:
            try:
                return self._jobs.put(obj)
            except ApiError as exc:
                raise ValueError(f"not a valid Job: {exc.message}") from None

    def put_claim(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a PersistentVolumeClaim (``claims.claim(...)``), validated as a create is."""
        with self._lock:
            try:
                return self.claims.put(obj)
            except ApiError as exc:
                raise ValueError(f"not a valid PersistentVolumeClaim: {exc.message}") from None

    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._jobs.get(namespace, name)

    def jobs(self) -> list[dict[str, Any]]:
        """Every stored Job, in (namespace, name) order."""
        with self._lock:
            return copy.deepcopy(self._jobs.all())

    def set_job_running(self, namespace: str, name: str, active: int = 1) -> dict[str, Any]:
        """``status.active`` as the Job controller reports it while the pod runs."""
        with self._lock:
            return self._jobs.set_running(namespace, name, active)

    def set_job_condition(
        self,
        namespace: str,
        name: str,
        type: str = "Complete",
        *,
        reason: str | None = None,
        message: str | None = None,
        failed: int | None = None,
    ) -> dict[str, Any]:
        """A finished Job as the Job controller leaves it (``jobs.Jobs.set_condition``)."""
        with self._lock:
            return self._jobs.set_condition(
                namespace, name, type, reason=reason, message=message, failed=failed
            )

    def add_job_quota(self, namespace: str, jobs: int, name: str = "jobs") -> None:
        """A ResourceQuota ``name`` with ``hard: {count/jobs.batch: jobs}`` in ``namespace``."""
        with self._lock:
            self._jobs.admission.quotas.append(JobQuota(name, namespace, jobs))

    def deny_jobs(self, denial: WebhookDenial | PolicyDenial) -> None:
        """A validating admission webhook, or a ValidatingAdmissionPolicy, that denies the Job
        creates ``denial`` applies to."""
        with self._lock:
            self._jobs.admission.denials.append(denial)

    def warn_pod_security(self, namespace: str, text: str) -> None:
        """Pod Security admission's warning on every Job created in ``namespace`` (the real
        plugin's text, e.g. ``would violate PodSecurity "restricted:latest": ...``)."""
        with self._lock:
            self._jobs.admission.pod_security_warnings.append((namespace, text))

    def events(self) -> list[dict[str, Any]]:
        """Every stored Event, in (namespace, name) order."""
        with self._lock:
            return copy.deepcopy(self._events.all())

    def collect_garbage(self) -> list[dict[str, Any]]:
        """Run the garbage collector now (it also runs before every request); what it deleted."""
        with self._lock:
            return garbage.collect(self._dependents(), self._lookup)

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method != "GET"]

    # ---------------------------------------------------------------------------------------------
    # request handling

    def handle(
        self, request: Recorded, auth: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, body, extra headers) for one request; raising ApiError gives a Status."""
        self.collect_garbage()
        if auth != f"Bearer {self.token}":
            raise ApiError(401, "Unauthorized", "Unauthorized")
        self._inject_fault(request)
        item, listing = _ITEM.match(request.path), lists.collection(request.path)
        workload = apps.ITEM.match(request.path)
        job = jobs.ITEM.match(request.path)
        claim = claims.ITEM.match(request.path)
        if not item and not listing and not workload and not job and not claim:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        _check_query(request)
        if request.method != "GET" and self.before_write is not None:
            self.before_write(self)
        if workload:
            return self._handle_workload(request, workload)
        if job:
            return self._handle_job(request, job.group(1), job.group(2))
        if claim:
            with self._lock:
                return self.claims.handle(request, claim, self._authorize)
        if listing is not None and listing[1] in ("jobs", "events") and request.method == "POST":
            return self._create_in(request, listing[1], listing[2])
        if listing is not None and request.method != "POST":
            if request.method != "GET":
                raise ApiError(405, "MethodNotAllowed", f"{request.method} is not allowed")
            return self._list(request, *listing)
        return self._handle_configmap(request, item, listing)

    def _inject_fault(self, request: Recorded) -> None:
        """The injected fault this request gets, if any (where priority-and-fairness answers)."""
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method in (None, request.method):
                    fault.times -= 1
                    headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                    raise _FaultError(fault.status, headers)

    def _handle_configmap(
        self,
        request: Recorded,
        item: re.Match[str] | None,
        listing: tuple[str, str, str | None] | None,
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """One ConfigMap by name, or a POST to a namespace's ConfigMaps."""
        if item is not None:
            namespace, name = item.group(1), item.group(2)
            handlers = {
                "GET": self._get,
                "PUT": self._put,
                "PATCH": self._patch,
                "DELETE": self._delete,
            }
        else:
            assert listing is not None
            _, resource, where = listing
            if resource != "configmaps" or where is None:
                raise ApiError(405, "MethodNotAllowed", f"{request.method} is not allowed")
            namespace, name, handlers = where, "", {"POST": self._post}
        handler = handlers.get(request.method)
        if handler is None:
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow {request.method}")
        with self._lock:
            return handler(request, namespace, name)

    def _handle_workload(
        self, request: Recorded, workload: re.Match[str]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A request for one Deployment, StatefulSet or DaemonSet."""
        with self._lock:
            if request.method == "DELETE":
                removed, policy, response = self.workloads.delete(
                    request, workload, self._authorize
                )
                if removed is not None:
                    self._deleted(removed, policy)
                return 200, response, {}
            return self.workloads.handle(request, workload, self._authorize)

    def _handle_job(
        self, request: Recorded, namespace: str | None, name: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A request for one Job, or a POST to a namespace's Jobs (not to all namespaces')."""
        if namespace is None:
            raise ApiError(405, "MethodNotAllowed", f"{request.method} is not allowed")
        with self._lock:
            return self._jobs.handle(
                request,
                namespace,
                name,
                authorize=self._authorize,
                namespace_exists=self._namespace_exists,
                deleted=self._deleted,
            )

    def _create_in(
        self, request: Recorded, resource: str, namespace: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A POST to a namespace's Jobs or Events (never to all namespaces')."""
        if resource == "jobs":
            return self._handle_job(request, namespace, None)
        if namespace is None:
            raise ApiError(405, "MethodNotAllowed", f"{request.method} is not allowed")
        _require_json(request)
        with self._lock:
            self._authorize("create", namespace, None, "", "events")
            self._namespace_exists(namespace)
            return self._events.create(request, namespace)

    def _deleted(self, obj: dict[str, Any], propagation: str) -> None:
        """After ``obj`` was removed: its dependents go (Background, Foreground) or lose the
        reference (Orphan)."""
        if propagation == "Orphan":
            garbage.orphan(self._dependents(), obj["metadata"]["uid"])
        else:
            garbage.collect(self._dependents(), self._lookup)

    def _dependents(self) -> list[garbage.Dependents]:
        """What the collector looks after: Jobs, and the pods of Jobs."""
        next_rv = lambda: str(next(self._rv))  # noqa: E731
        return [
            garbage.Dependents(self._jobs.store, next_rv=next_rv),
            garbage.Dependents(self.pods, frozenset({("batch", "Job")}), next_rv),
        ]

    def _lookup(self, group: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A stored object by kind and name (the collector's view of the owners)."""
        if (group, kind) == ("", "ConfigMap"):
            stored = self._store.get((namespace, name))
            return stored.obj if stored else None
        if (group, kind) == ("", "Pod"):
            return self.pods.get((namespace, name))
        if (group, kind) == ("batch", "Job"):
            return self._jobs.store.get((namespace, name))
        resource = {v: k for k, v in apps.KINDS.items()}.get(kind)
        return self.workloads.get(resource, namespace, name) if resource else None

    def _authorize(
        self,
        verb: str,
        namespace: str | None,
        name: str | None,
        group: str = "",
        resource: str = "configmaps",
    ) -> None:
        """RBAC: the Role's rules in its namespace, the ClusterRole's everywhere; a request
        across all namespaces (``namespace`` None) only by the ClusterRole."""
        in_role = namespace == self.role_namespace and any(
            rule.allows(verb, group, resource, name) for rule in self.rules
        )
        allowed = in_role or any(
            rule.allows(verb, group, resource, name) for rule in self.cluster_rules
        )
        if not allowed:
            qualified = f"{resource}.{group}" if group else resource
            target = f'{qualified} "{name}" is forbidden' if name else f"{qualified} is forbidden"
            scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
            raise ApiError(
                403,
                "Forbidden",
                f'{target}: User "{self.user}" cannot {verb} resource "{resource}" in API group '
                f'"{group}" {scope}',
                {"name": name or "", "group": group, "kind": resource},
            )

    def _namespace_exists(self, namespace: str) -> None:
        if namespace not in self.namespaces:
            raise ApiError(
                404,
                "NotFound",
                f'namespaces "{namespace}" not found',
                {"name": namespace, "kind": "namespaces"},
            )

    def _not_found(self, name: str) -> ApiError:
        return ApiError(
            404, "NotFound", f'configmaps "{name}" not found', {"name": name, "kind": "configmaps"}
        )

    def _get(self, request: Recorded, namespace: str, name: str) -> Any:
        self._authorize("get", namespace, name)
        stored = self._store.get((namespace, name))
        if stored is None:
            raise self._not_found(name)
        return 200, copy.deepcopy(stored.obj), {}

    def _list(
        self, request: Recorded, group: str, resource: str, namespace: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            self._authorize("list", namespace, None, group, resource)
            if resource == "configmaps":
                objects = [stored.obj for stored in self._store.values()]
            elif resource == "pods":
                objects = list(self.pods.values())
            elif resource == "jobs":
                objects = self._jobs.all()
            elif resource == "events":
                objects = self._events.all()
            elif resource == claims.RESOURCE:
                objects = self.claims.all()
            elif resource in scope.RESOURCES:
                objects = self.scope.objects(resource, self.namespaces)
            else:
                objects = self.workloads.all(resource)
            body = lists.serve(
                objects,
                group=group,
                resource=resource,
                namespace=namespace,
                query=request.query,
                accept=request.accept,
                resource_version=str(next(self._rv)),
            )
        return 200, body, {}

    def _delete(self, request: Recorded, namespace: str, name: str) -> Any:
        self._authorize("delete", namespace, name)
        if (namespace, name) not in self._store:
            raise self._not_found(name)
        failure = meta_checks.precondition_failure(
            request.body, self._store[(namespace, name)].obj, f'configmaps "{name}"'
        )
        if failure is not None:
            raise ApiError(409, "Conflict", failure)
        if request.query.get("dryRun") != "All":
            del self._store[(namespace, name)]
        return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}, {}

    def _post(self, request: Recorded, namespace: str, name: str) -> Any:
        _require_json(request)
        self._authorize("create", namespace, None)  # the name is not in the URL
        self._namespace_exists(namespace)
        obj = self._decode(request.body, namespace, None)
        name = obj["metadata"]["name"]
        if (namespace, name) in self._store:
            raise ApiError(
                409,
                "AlreadyExists",
                f'configmaps "{name}" already exists',
                {"name": name, "kind": "configmaps"},
            )
        if obj["metadata"].get("resourceVersion"):
            raise ApiError(
                400, "BadRequest", "resourceVersion should not be set on objects to be created"
            )
        return self._store_new(request, namespace, obj, manager=request.query.get("fieldManager"))

    def _put(self, request: Recorded, namespace: str, name: str) -> Any:
        _require_json(request)
        self._authorize("update", namespace, name)
        self._namespace_exists(namespace)
        obj = self._decode(request.body, namespace, name)
        stored = self._store.get((namespace, name))
        if stored is None:
            raise self._not_found(name)
        _check_resource_version(obj, stored.obj, name)
        new = self._finish(obj, stored.obj)
        if request.query.get("dryRun") != "All":
            manager = request.query.get("fieldManager") or "unknown"
            owners = {(p, k): manager for p in _OWNED_MAPS for k in _get_map(new, p)}
            self._store[(namespace, name)] = _Stored(new, owners)
        return 200, copy.deepcopy(new), {}

    def _patch(self, request: Recorded, namespace: str, name: str) -> Any:
        if request.content_type != _APPLY:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media "
                f"types include: {_APPLY}",
            )
        manager = request.query.get("fieldManager")
        force = request.query.get("force")
        if force not in (None, "true", "false"):
            raise ApiError(400, "BadRequest", f"force: invalid value {force!r}")
        self._authorize("patch", namespace, name)
        if not manager:
            raise ApiError(
                400,
                "BadRequest",
                "PatchOptions.meta.k8s.io is invalid: fieldManager: Required value: "
                "is required for apply patch",
            )
        stored = self._store.get((namespace, name))
        if stored is None:
            # create-on-apply: a second authorization, verb create WITH the name from the URL
            self._authorize("create", namespace, name)
            self._namespace_exists(namespace)
        obj = self._decode(request.body, namespace, name)
        if stored is None:
            if obj["metadata"].get("resourceVersion"):
                raise ApiError(
                    409,
                    "Conflict",
                    f'configmaps "{name}" not found with the '
                    "given resourceVersion; it was deleted or never existed",
                )
            return self._store_new(request, namespace, obj, manager=manager)
        _check_resource_version(obj, stored.obj, name)
        merged, owners = _apply(stored, obj, manager, force=force == "true")
        new = self._finish(merged, stored.obj)
        if new == stored.obj:
            return 200, copy.deepcopy(stored.obj), {}
        if request.query.get("dryRun") != "All":
            self._store[(namespace, name)] = _Stored(new, owners)
        return 200, copy.deepcopy(new), {}

    def _store_new(
        self, request: Recorded, namespace: str, obj: dict[str, Any], manager: str | None
    ) -> Any:
        obj["metadata"].pop("resourceVersion", None)
        new = self._finish(obj, None)
        if request.query.get("dryRun") == "All":
            return 201, new, {}
        owner = manager or "unknown"
        owners = {(p, k): owner for p in _OWNED_MAPS for k in _get_map(new, p)}
        self._store[(namespace, new["metadata"]["name"])] = _Stored(new, owners)
        return 201, copy.deepcopy(new), {}

    def _finish(self, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """Server-owned metadata: uid and creation kept from ``old``, a new resourceVersion."""
        meta = obj["metadata"]
        if old is not None:
            meta["uid"] = old["metadata"]["uid"]
            meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
            comparable = copy.deepcopy(obj)
            comparable["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            if comparable == old:
                return comparable
        else:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        meta["resourceVersion"] = str(next(self._rv))
        return obj

    def _decode(self, body: Any, namespace: str, url_name: str | None) -> dict[str, Any]:
        """The object in ``body``, validated like the API server validates a ConfigMap."""
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the request body is not an object")
        if body.get("apiVersion") != "v1" or body.get("kind") != "ConfigMap":
            raise ApiError(
                400,
                "BadRequest",
                f"expected v1 ConfigMap, got {body.get('apiVersion')}/{body.get('kind')}",
            )
        unknown = set(body) - {"apiVersion", "kind", "metadata", "data", "binaryData", "immutable"}
        if unknown:
            raise ApiError(
                400, "BadRequest", f".{sorted(unknown)[0]}: field not declared in schema"
            )
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        name = meta.get("name") or url_name
        if url_name is not None and meta.get("name") not in (None, url_name):
            raise ApiError(
                400,
                "BadRequest",
                f"the name of the object ({meta.get('name')}) does "
                f"not match the name on the URL ({url_name})",
            )
        if meta.get("namespace") not in (None, namespace):
            raise ApiError(
                400,
                "BadRequest",
                "the namespace of the provided object does not "
                "match the namespace sent on the request",
            )
        meta["name"], meta["namespace"] = name, namespace
        causes = _invalid_causes(obj)
        if causes:
            raise ApiError(
                422,
                "Invalid",
                f'ConfigMap "{name}" is invalid: {"; ".join(causes)}',
                {"name": name or "", "kind": "ConfigMap"},
            )
        return obj


def _check_query(request: Recorded) -> None:
    unknown = set(request.query) - _ALLOWED_QUERY
    if unknown:
        raise ApiError(400, "BadRequest", f"unknown query parameters: {sorted(unknown)}")
    dry_run = request.query.get("dryRun")
    if dry_run not in (None, "All"):
        raise ApiError(400, "BadRequest", f'dryRun: Unsupported value: "{dry_run}"')


class _FaultError(Exception):
    def __init__(self, status: int, headers: dict[str, str]) -> None:
        super().__init__(status)
        self.status, self.headers = status, headers


def _get_map(obj: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    node: Any = obj
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _set_map(obj: dict[str, Any], path: tuple[str, ...], value: dict[str, Any]) -> None:
    node = obj
    for part in path[:-1]:
        node = node.setdefault(part, {})
    if value:
        node[path[-1]] = value
    else:
        node.pop(path[-1], None)


def _apply(
    stored: _Stored, applied: dict[str, Any], manager: str, *, force: bool
) -> tuple[dict[str, Any], dict[tuple[tuple[str, ...], str], str]]:
    """Server-side apply at key granularity: the manager owns what it applies; keys it owned
    before and no longer applies are removed; a key owned by someone else with a different value
    is a conflict unless forced."""
    merged = copy.deepcopy(stored.obj)
    owners = dict(stored.owners)
    conflicts = []
    for path in _OWNED_MAPS:
        current = dict(_get_map(stored.obj, path))
        wanted = _get_map(applied, path)
        for key, value in wanted.items():
            owner = owners.get((path, key))
            if owner not in (None, manager) and current.get(key) != value and not force:
                conflicts.append(f'conflict with "{owner}": .{".".join(path)}.{key}')
        for key in [k for k in current if owners.get((path, k)) == manager and k not in wanted]:
            del current[key]
            owners.pop((path, key), None)
        current.update(wanted)
        for key in wanted:
            owners[(path, key)] = manager
        _set_map(merged, path, current)
    if conflicts:
        raise ApiError(
            409,
            "Conflict",
            f"Apply failed with {len(conflicts)} conflict(s): " + "; ".join(conflicts),
        )
    if "immutable" in applied:
        merged["immutable"] = applied["immutable"]
    return merged, owners


def _check_resource_version(obj: dict[str, Any], current: dict[str, Any], name: str) -> None:
    wanted = obj["metadata"].get("resourceVersion")
    if wanted and wanted != current["metadata"]["resourceVersion"]:
        raise ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on configmaps "{name}": '
            "the object has been modified; please apply your changes to the latest "
            "version and try again",
            {"name": name, "kind": "configmaps"},
        )
    if current.get("immutable"):
        raise ApiError(
            422,
            "Invalid",
            f'ConfigMap "{name}" is invalid: data: Forbidden: field '
            "is immutable when `immutable` is set",
        )


def _invalid_causes(obj: dict[str, Any]) -> list[str]:
    meta = obj["metadata"]
    causes = meta_checks.subdomain_causes(meta.get("name") or "", "metadata.name")
    data = obj.get("data") or {}
    if not isinstance(data, dict):
        causes.append("data: must be an object")
        data = {}
    for key, value in data.items():
        if not isinstance(value, str):
            causes.append(f"data[{key}]: Invalid value: must be a string")
        if len(key) > 253 or not _CONFIG_KEY.match(key) or key in (".", ".."):
            causes.append(
                f'data[{key}]: Invalid value: "{key}": a valid config key must consist '
                "of alphanumeric characters, '-', '_' or '.'"
            )
    causes += meta_checks.label_causes(meta.get("labels") or {})
    causes += meta_checks.annotation_causes(meta.get("annotations") or {})
    causes += meta_checks.owner_reference_causes(meta.get("ownerReferences") or [])
    if sum(len(k) + len(str(v)) for k, v in data.items()) > 1024 * 1024:
        causes.append("data: Too long: must have at most 1048576 bytes")
    return causes


def _require_json(request: Recorded) -> None:
    # no Content-Type is JSON, the server's first media type (the official client sends none)
    if request.content_type not in (None, "application/json"):
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format: {request.content_type}",
        )


def _status(code: int, reason: str, message: str, details: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "code": code,
    }
    if reason:  # omitted when empty, as a webhook that gives none leaves it
        body["reason"] = reason
    if details:
        body["details"] = details
    return body


_FAULT_REASONS = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}


def _handler_for(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            # headers and body are two writes: without this, Nagle's algorithm holds the body
            # until the client's delayed ACK, 40 ms per request on a kept-alive connection
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _serve(self) -> None:
            split = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip() or None
            try:
                body = yaml.safe_load(raw) if raw else None
            except yaml.YAMLError:
                body = raw.decode(errors="replace")
            accept = self.headers.get("Accept")
            recorded = Recorded(self.command, split.path, query, content_type, body, accept=accept)
            with server._lock:
                server.requests.append(recorded)
                hang = server.hang_next > 0
                if hang:
                    server.hang_next -= 1
            if hang:
                server._stopping.wait()
                self.close_connection = True
                return
            headers: dict[str, str] = {}
            try:
                status, payload, headers = server.handle(
                    recorded, self.headers.get("Authorization")
                )
            except ApiError as err:
                status, payload = err.code, _status(err.code, err.reason, err.message, err.details)
                headers = err.headers
            except _FaultError as fault:
                status, headers = fault.status, fault.headers
                reason = _FAULT_REASONS.get(fault.status, "InternalError")
                payload = _status(status, reason, f"injected fault {status}", {})
            recorded.status = status
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def do_OPTIONS(self) -> None:
            self._method_not_allowed()

        def do_HEAD(self) -> None:
            self._method_not_allowed()

        def _method_not_allowed(self) -> None:
            data = json.dumps(_status(405, "MethodNotAllowed", "method not allowed", {})).encode()
            self.send_response(405)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def refused_port() -> int:
    """A local port nothing listens on (bound, then closed): connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

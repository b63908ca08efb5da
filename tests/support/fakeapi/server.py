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
- lists of ConfigMaps, Pods, Deployments, StatefulSets and DaemonSets (namespaced, and across
  all namespaces when ``cluster_rules`` from a ClusterRole allow it) with label and field
  selectors, pages and metadata-only answers, as strict as a real server
  (tests/support/fakeapi/lists.py);
- apps/v1 Deployments, StatefulSets and DaemonSets, GET and PATCH
  (tests/support/fakeapi/apps.py); Pods are only listed.

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

from tests.support.fakeapi import apps, lists
from tests.support.fakeapi.rbac import SERVICE_ACCOUNT, Rule, role_rules

_ITEM = re.compile(r"^/api/v1/namespaces/([^/]+)/configmaps/([^/]+)$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
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


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}


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
    ) -> None:
        self.namespaces = set(namespaces)
        self.role_namespace = role_namespace
        self.rules = rules if rules is not None else role_rules(configmap_name=configmap_name)
        #: rules granted in every namespace (a ClusterRole through a ClusterRoleBinding)
        self.cluster_rules = cluster_rules or []
        self.token = token
        self.user = f"system:serviceaccount:{role_namespace}:{SERVICE_ACCOUNT}"
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.hang_next = 0
        #: called (with the server) before each write is processed; tests use it to race
        self.before_write: Callable[[FakeApiServer], None] | None = None
        self._store: dict[tuple[str, str], _Stored] = {}
        self._rv = itertools.count(1000)
        self.workloads = apps.Workloads(lambda: str(next(self._rv)))
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
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

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method != "GET"]

    # ---------------------------------------------------------------------------------------------
    # request handling

    def handle(
        self, request: Recorded, auth: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, body, extra headers) for one request; raising ApiError gives a Status."""
        if auth != f"Bearer {self.token}":
            raise ApiError(401, "Unauthorized", "Unauthorized")
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method in (None, request.method):
                    fault.times -= 1
                    headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                    raise _FaultError(fault.status, headers)
        item, listing = _ITEM.match(request.path), lists.collection(request.path)
        workload = apps.ITEM.match(request.path)
        if not item and not listing and not workload:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        unknown = set(request.query) - _ALLOWED_QUERY
        if unknown:
            raise ApiError(400, "BadRequest", f"unknown query parameters: {sorted(unknown)}")
        dry_run = request.query.get("dryRun")
        if dry_run not in (None, "All"):
            raise ApiError(400, "BadRequest", f'dryRun: Unsupported value: "{dry_run}"')
        if request.method != "GET" and self.before_write is not None:
            self.before_write(self)
        if workload:
            return self._handle_workload(request, workload)
        if listing is not None and request.method != "POST":
            if request.method != "GET":
                raise ApiError(405, "MethodNotAllowed", f"{request.method} is not allowed")
            return self._list(request, *listing)
        return self._handle_configmap(request, item, listing)

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
            try:
                return self.workloads.handle(request, workload, self._authorize)
            except apps.WorkloadError as exc:
                raise ApiError(exc.code, exc.reason, exc.message, exc.details) from None

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
            else:
                objects = self.workloads.all(resource)
            try:
                body = lists.serve(
                    objects,
                    group=group,
                    resource=resource,
                    namespace=namespace,
                    query=request.query,
                    accept=request.accept,
                    resource_version=str(next(self._rv)),
                )
            except lists.ListError as exc:
                raise ApiError(exc.code, exc.reason, exc.message) from None
        return 200, body, {}

    def _delete(self, request: Recorded, namespace: str, name: str) -> Any:
        self._authorize("delete", namespace, name)
        if (namespace, name) not in self._store:
            raise self._not_found(name)
        _check_preconditions(request.body, self._store[(namespace, name)].obj, name)
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


def _check_preconditions(body: Any, current: dict[str, Any], name: str) -> None:
    """DeleteOptions.preconditions: the uid/resourceVersion the client saw, else 409."""
    given = (body.get("preconditions") or {}) if isinstance(body, dict) else {}
    for key, field_name in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
        expected, actual = given.get(key), current["metadata"].get(key)
        if expected is not None and expected != actual:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on configmaps "{name}": Precondition failed: '
                f"{field_name} in precondition: {expected}, {field_name} in object meta: {actual}",
            )


def _invalid_causes(obj: dict[str, Any]) -> list[str]:
    meta = obj["metadata"]
    causes = []
    name = meta.get("name") or ""
    if not name or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        causes.append(
            f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 subdomain '
            "must consist of lower case alphanumeric characters, '-' or '.'"
        )
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
    for key, value in (meta.get("labels") or {}).items():
        prefix, _, short = key.rpartition("/")
        bad_prefix = prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix))
        if bad_prefix or len(short) > 63 or not _QUALIFIED.match(short):
            causes.append(f'metadata.labels: Invalid value: "{key}": name part must be valid')
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(f'metadata.labels: Invalid value: "{value}": a valid label value')
    annotations = meta.get("annotations") or {}
    size = sum(len(k) + len(str(v).encode()) for k, v in annotations.items())
    if size > 256 * 1024:
        causes.append(f"metadata.annotations: Too long: must have at most 262144 bytes ({size})")
    if sum(len(k) + len(str(v)) for k, v in data.items()) > 1024 * 1024:
        causes.append("data: Too long: must have at most 1048576 bytes")
    return causes


def _require_json(request: Recorded) -> None:
    if request.content_type != "application/json":
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
        "reason": reason,
        "code": code,
    }
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

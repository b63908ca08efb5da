"""v1 ConfigMaps for the fake API server: what ``run`` writes and ``status`` reads (lists:
testkit/fakeapi/lists.py).

GET 200/404, POST 201/409 AlreadyExists, PUT 200/404/409 Conflict, DELETE 200/404 (409 on a
failed uid/resourceVersion precondition), server-side apply (``application/apply-patch+yaml``,
``fieldManager`` required, ``force``) with field ownership per data/label/annotation key, 201 on
create, 200 on update, 409 on a stale ``metadata.resourceVersion`` or a conflict with another
manager without ``force``; ``dryRun=All`` validated and authorized, never stored; 422 on invalid
names, keys, labels and annotations.
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from testkit.fakeapi import meta as meta_checks
from testkit.fakeapi.errors import ApiError
from testkit.fakeapi.recorded import Recorded, require_json

ITEM = re.compile(r"^/api/v1/namespaces/([^/]+)/configmaps/([^/]+)$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_APPLY = "application/apply-patch+yaml"
OWNED_MAPS: tuple[tuple[str, ...], ...] = (
    ("data",),
    ("binaryData",),
    ("metadata", "labels"),
    ("metadata", "annotations"),
)


#: (status, body, extra headers), as the server answers
Response = tuple[int, dict[str, Any], dict[str, str]]


@dataclass
class Stored:
    obj: dict[str, Any]
    #: (map path, key) -> field manager owning it
    owners: dict[tuple[tuple[str, ...], str], str] = field(default_factory=dict)


class ConfigMaps:
    """The stored ConfigMaps; requests are authorized by the server's rules (``authorize``)."""

    def __init__(
        self,
        next_rv: Callable[[], str],
        *,
        authorize: Callable[..., None],
        namespace_exists: Callable[[str], None],
    ) -> None:
        self.store: dict[tuple[str, str], Stored] = {}
        self._next_rv = next_rv
        self._authorize = authorize
        self._namespace_exists = namespace_exists

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        stored = self.store.get((namespace, name))
        return copy.deepcopy(stored.obj) if stored else None

    def put(self, obj: dict[str, Any], manager: str) -> dict[str, Any]:
        """Store ``obj`` as if another client had created or replaced it (a seed or a race)."""
        meta = obj["metadata"]
        key = (meta["namespace"], meta["name"])
        stored = self.store.get(key)
        new = self._finish(copy.deepcopy(obj), stored.obj if stored else None)
        owners = {(path, k): manager for path in OWNED_MAPS for k in _get_map(new, path)}
        self.store[key] = Stored(new, owners)
        return copy.deepcopy(new)

    def all(self) -> list[dict[str, Any]]:
        return [stored.obj for stored in self.store.values()]

    def handle(self, request: Recorded, namespace: str, name: str) -> Response:
        """One request for a named ConfigMap, or a POST to a namespace's (``name`` empty)."""
        handlers: dict[str, Callable[[Recorded, str, str], Response]] = (
            {
                "GET": self._get,
                "PUT": self._put,
                "PATCH": self._patch,
                "DELETE": self._delete,
            }
            if name
            else {"POST": self._post}
        )
        handler = handlers.get(request.method)
        if handler is None:
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow {request.method}")
        return handler(request, namespace, name)

    def _not_found(self, name: str) -> ApiError:
        return ApiError(
            404, "NotFound", f'configmaps "{name}" not found', {"name": name, "kind": "configmaps"}
        )

    def _get(self, request: Recorded, namespace: str, name: str) -> Response:
        self._authorize("get", namespace, name)
        stored = self.store.get((namespace, name))
        if stored is None:
            raise self._not_found(name)
        return 200, copy.deepcopy(stored.obj), {}

    def _delete(self, request: Recorded, namespace: str, name: str) -> Response:
        self._authorize("delete", namespace, name)
        if (namespace, name) not in self.store:
            raise self._not_found(name)
        failure = meta_checks.precondition_failure(
            request.body, self.store[(namespace, name)].obj, f'configmaps "{name}"'
        )
        if failure is not None:
            raise ApiError(409, "Conflict", failure)
        if request.query.get("dryRun") != "All":
            del self.store[(namespace, name)]
        return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}, {}

    def _post(self, request: Recorded, namespace: str, name: str) -> Response:
        require_json(request)
        self._authorize("create", namespace, None)  # the name is not in the URL
        self._namespace_exists(namespace)
        obj = self._decode(request.body, namespace, None)
        name = obj["metadata"]["name"]
        if (namespace, name) in self.store:
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

    def _put(self, request: Recorded, namespace: str, name: str) -> Response:
        require_json(request)
        self._authorize("update", namespace, name)
        self._namespace_exists(namespace)
        obj = self._decode(request.body, namespace, name)
        stored = self.store.get((namespace, name))
        if stored is None:
            raise self._not_found(name)
        _check_resource_version(obj, stored.obj, name)
        new = self._finish(obj, stored.obj)
        if request.query.get("dryRun") != "All":
            manager = request.query.get("fieldManager") or "unknown"
            owners = {(p, k): manager for p in OWNED_MAPS for k in _get_map(new, p)}
            self.store[(namespace, name)] = Stored(new, owners)
        return 200, copy.deepcopy(new), {}

    def _patch(self, request: Recorded, namespace: str, name: str) -> Response:
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
        stored = self.store.get((namespace, name))
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
            self.store[(namespace, name)] = Stored(new, owners)
        return 200, copy.deepcopy(new), {}

    def _store_new(
        self, request: Recorded, namespace: str, obj: dict[str, Any], manager: str | None
    ) -> Response:
        obj["metadata"].pop("resourceVersion", None)
        new = self._finish(obj, None)
        if request.query.get("dryRun") == "All":
            return 201, new, {}
        owner = manager or "unknown"
        owners = {(p, k): owner for p in OWNED_MAPS for k in _get_map(new, p)}
        self.store[(namespace, new["metadata"]["name"])] = Stored(new, owners)
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
        meta["resourceVersion"] = self._next_rv()
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
    stored: Stored, applied: dict[str, Any], manager: str, *, force: bool
) -> tuple[dict[str, Any], dict[tuple[tuple[str, ...], str], str]]:
    """Server-side apply at key granularity: the manager owns what it applies; keys it owned
    before and no longer applies are removed; a key owned by someone else with a different value
    is a conflict unless forced."""
    merged = copy.deepcopy(stored.obj)
    owners = dict(stored.owners)
    conflicts = []
    for path in OWNED_MAPS:
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

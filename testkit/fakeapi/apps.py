"""apps/v1 Deployments, StatefulSets and DaemonSets for the fake API server: what ``run
--restart`` touches and ``status`` lists (the lists themselves: testkit/fakeapi/lists.py); and
``reads``, the container of a consumer of an advice ConfigMap.

As strict as the ConfigMap side, for the requests a restart sends: GET and PATCH on one named
workload, authorized by the server's rules (group ``apps``), and DELETE (what takes a planned
Job's owner away: apps/v1's default propagation is Background, the server then runs the garbage
collector), with

- the patch content types the official client sends: strategic merge (its choice for a dict
  body, and kubectl's for ``rollout restart``), merge patch and JSON patch (a list of
  operations); anything else is 415. A strategic patch containing a list is refused (400) rather
  than merged wrongly: the fake merges maps only;
- ``dryRun=All``: authorized, applied and validated, never stored;
- ``metadata.generation`` bumped only when ``spec`` really changes (that is what starts a
  rollout), ``resourceVersion`` only when anything changes: a patch that sets what is already
  there changes neither;
- 404 with ``details.kind`` for a workload that does not exist, 422 for a patch that breaks the
  object (a renamed object, non-string annotations, template labels the selector no longer
  matches).
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from advisor.models import KINDS as WORKLOAD_KINDS
from testkit.fakeapi.errors import ApiError, not_found
from testkit.fakeapi.meta import precondition_failure

#: resource -> kind of the apps/v1 workloads, from the advisor's own table of kinds
KINDS = {
    facts.resource: kind.value
    for kind, facts in WORKLOAD_KINDS.items()
    if facts.api_version == "apps/v1"
}
ITEM = re.compile(rf"^/apis/apps/v1/namespaces/([^/]+)/({'|'.join(KINDS)})/([^/]+)$")
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
PATCH_TYPES = (STRATEGIC, MERGE, JSON_PATCH)


#: a container's resizePolicy that restarts it on an in-place CPU resize (TensorFlow sizes its
#: pools once, at start-up)
RESIZE_ON_CPU = [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]


def reads(
    configmap: str = "tf-advice",
    *,
    cpu: str | None = "4",
    resize: bool = True,
    optional: bool | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The keys of a container that reads the advice ``configmap`` with envFrom (for
    ``workload(container=...)``): a CPU limit of ``cpu`` (None: none), ``RESIZE_ON_CPU`` unless
    not ``resize``, ``optional`` on the reference when given, and ``extra``'s keys."""
    ref: dict[str, Any] = {"name": configmap}
    if optional is not None:
        ref["optional"] = optional
    container: dict[str, Any] = {"envFrom": [{"configMapRef": ref}], **extra}
    if cpu is not None:
        container["resources"] = {"limits": {"cpu": cpu, "memory": "4Gi"}}
    if resize:
        container["resizePolicy"] = RESIZE_ON_CPU
    return container


def workload(
    resource: str,
    namespace: str,
    name: str,
    *,
    container: dict[str, Any] | None = None,
    pod_spec: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    **annotations: str,
) -> dict[str, Any]:
    """A minimal valid Deployment, StatefulSet or DaemonSet (pod-template ``annotations``
    optional): one container ``server``, with ``container``'s keys added to it, ``pod_spec``'s
    to the pod template's spec and ``metadata``'s to the workload's own."""
    labels = {"app.kubernetes.io/name": name}
    server = {"name": "server", "image": "registry.example.com/m:1", **(container or {})}
    template: dict[str, Any] = {
        "metadata": {"labels": dict(labels)},
        "spec": {"containers": [server], **(pod_spec or {})},
    }
    if annotations:
        template["metadata"]["annotations"] = dict(annotations)
    spec: dict[str, Any] = {"selector": {"matchLabels": labels}, "template": template}
    if resource != "daemonsets":
        spec["replicas"] = 2
    if resource == "statefulsets":
        spec["serviceName"] = name
    return {
        "apiVersion": "apps/v1",
        "kind": KINDS[resource],
        "metadata": {"name": name, "namespace": namespace, **(metadata or {})},
        "spec": spec,
    }


class Workloads:
    """The apps/v1 objects of one fake server (it holds the lock while calling ``handle``)."""

    def __init__(self, next_rv: Callable[[], str]) -> None:
        self._next_rv = next_rv
        self._store: dict[tuple[str, str, str], dict[str, Any]] = {}

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store ``obj`` (from ``workload()``) as created by someone else: generation 1."""
        obj = copy.deepcopy(obj)
        resource = {v: k for k, v in KINDS.items()}[obj["kind"]]
        meta = obj["metadata"]
        meta.update(
            uid=str(uuid.uuid4()),
            creationTimestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            generation=1,
            resourceVersion=self._next_rv(),
        )
        obj["status"] = {"observedGeneration": 1}
        self._store[(resource, meta["namespace"], meta["name"])] = obj
        return copy.deepcopy(obj)

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = self._store.get((resource, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def remove(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Forget the object (a deletion); what was stored, None when nothing was."""
        return self._store.pop((resource, namespace, name), None)

    def delete(
        self,
        request: Any,
        match: re.Match[str],
        authorize: Callable[[str, str, str, str, str], None],
    ) -> tuple[dict[str, Any] | None, str, dict[str, Any]]:
        """A DELETE: (the removed object, None on a dry run; the propagationPolicy; the
        answer). The caller runs the garbage collector with the policy."""
        namespace, resource, name = match.group(1), match.group(2), match.group(3)
        authorize("delete", namespace, name, "apps", resource)
        body = request.body if isinstance(request.body, dict) else {}
        policy = request.query.get("propagationPolicy") or body.get("propagationPolicy")
        if policy not in (None, "Orphan", "Background", "Foreground"):
            raise ApiError(
                400,
                "BadRequest",
                f'propagationPolicy: Unsupported value: "{policy}": supported values: '
                '"Foreground", "Background", "Orphan"',
            )
        current = self._stored(resource, namespace, name)
        failure = precondition_failure(request.body, current, f'{resource}.apps "{name}"')
        if failure is not None:
            raise ApiError(409, "Conflict", failure)
        removed = None
        if request.query.get("dryRun") != "All":
            removed = self.remove(resource, namespace, name)
        answer = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {
                "name": name,
                "group": "apps",
                "kind": resource,
                "uid": current["metadata"]["uid"],
            },
        }
        return removed, str(policy or "Background"), answer

    def all(self, resource: str) -> list[dict[str, Any]]:
        """Every stored object of ``resource`` (the list's input)."""
        return [obj for (res, _, _), obj in self._store.items() if res == resource]

    def handle(
        self,
        request: Any,
        match: re.Match[str],
        authorize: Callable[[str, str, str, str, str], None],
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """One request (the server's ``Recorded``) for the workload in ``match`` (``ITEM``)."""
        method, content_type, body = request.method, request.content_type, request.body
        namespace, resource, name = match.group(1), match.group(2), match.group(3)
        if method == "GET":
            authorize("get", namespace, name, "apps", resource)
            return 200, self._stored(resource, namespace, name), {}
        if method != "PATCH":
            raise ApiError(405, "MethodNotAllowed", f"the fake does not serve {method} here")
        if content_type not in PATCH_TYPES:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {', '.join(PATCH_TYPES)}",
            )
        authorize("patch", namespace, name, "apps", resource)
        current = self._stored(resource, namespace, name)
        if content_type == JSON_PATCH:
            patched = _json_patch(current, body)
        else:
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "a merge patch must be a JSON object")
            if content_type == STRATEGIC and _has_list(body):
                raise ApiError(
                    400, "BadRequest", "the fake merges maps only: a strategic patch with a list"
                )
            patched = _merge(current, body)
        patched["status"] = current["status"]  # the main resource ignores status changes
        _validate(patched, current, resource, name)
        if patched == current:
            return 200, current, {}
        meta = patched["metadata"]
        meta["resourceVersion"] = self._next_rv()
        if patched["spec"] != current["spec"]:
            meta["generation"] = current["metadata"]["generation"] + 1
        if request.query.get("dryRun") != "All":
            self._store[(resource, namespace, name)] = copy.deepcopy(patched)
        return 200, patched, {}

    def _stored(self, resource: str, namespace: str, name: str) -> dict[str, Any]:
        found = self.get(resource, namespace, name)
        if found is None:
            raise not_found(resource, name, "apps")
        return found


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 merge patch: maps merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def _has_list(value: Any) -> bool:
    if isinstance(value, list):
        return True
    return isinstance(value, dict) and any(_has_list(v) for v in value.values())


def _json_patch(target: dict[str, Any], ops: Any) -> dict[str, Any]:
    """RFC 6902 add/replace/remove/test on objects (array indices are not needed here: 422)."""
    if not isinstance(ops, list):
        raise ApiError(400, "BadRequest", "a JSON patch must be a list of operations")
    result = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or op.get("op") not in ("add", "replace", "remove", "test"):
            raise ApiError(400, "BadRequest", f"unsupported JSON patch operation: {op!r}")
        parts = [
            p.replace("~1", "/").replace("~0", "~") for p in str(op.get("path", "")).split("/")[1:]
        ]
        if not parts:
            raise ApiError(422, "Invalid", "a JSON patch path must not be the root")
        parent: Any = result
        for part in parts[:-1]:
            parent = parent.get(part) if isinstance(parent, dict) else None
            if parent is None:
                raise ApiError(422, "Invalid", f"path {op['path']} does not exist")
        if not isinstance(parent, dict):
            raise ApiError(422, "Invalid", f"path {op['path']} is not in an object")
        last, value = parts[-1], copy.deepcopy(op.get("value"))
        if op["op"] == "test":
            if parent.get(last) != value:
                raise ApiError(422, "Invalid", f"test failed at {op['path']}")
            continue
        if op["op"] in ("replace", "remove") and last not in parent:
            raise ApiError(422, "Invalid", f"path {op['path']} does not exist")
        if op["op"] == "remove":
            del parent[last]
        else:
            parent[last] = value
    return result


_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _validate(obj: dict[str, Any], old: dict[str, Any], resource: str, name: str) -> None:
    causes = []
    for key in ("apiVersion", "kind"):
        if obj.get(key) != old[key]:
            causes.append(f"{key}: may not be changed")
    meta = obj.get("metadata") or {}
    for key in ("name", "namespace", "uid"):
        if meta.get(key) != old["metadata"][key]:
            causes.append(f"metadata.{key}: field is immutable")
    template = (obj.get("spec") or {}).get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    if not isinstance(annotations, dict):
        causes.append("spec.template.metadata.annotations: must be an object")
        annotations = {}
    for key, value in annotations.items():
        if not isinstance(value, str):
            causes.append(f"spec.template.metadata.annotations[{key}]: must be a string")
        if len(key) > 316 or not _KEY.match(key):
            causes.append(f'spec.template.metadata.annotations: Invalid value: "{key}"')
    selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        causes.append("spec.template.metadata.labels: `selector` does not match template `labels`")
    if causes:
        raise ApiError(
            422,
            "Invalid",
            f'{KINDS[resource]}.apps "{name}" is invalid: {"; ".join(causes)}',
            {"name": name, "group": "apps", "kind": resource},
        )

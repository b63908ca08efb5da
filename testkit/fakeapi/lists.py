"""Lists as the API server serves them, for the fake: every collection ``status`` reads.

- routes: ``/api/v1[/namespaces/NS]/{configmaps,pods,persistentvolumeclaims,serviceaccounts,
  events}``, ``/api/v1/namespaces`` (cluster-scoped: no namespaced path),
  ``/apis/apps/v1[/namespaces/NS]/{deployments,statefulsets,daemonsets}`` and
  ``/apis/batch/v1[/namespaces/NS]/jobs``; a resource under the wrong group is 404, as on a real
  server;
- ``labelSelector``: equality-based terms (``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``); set-based
  ones are refused (400) rather than misread;
- ``fieldSelector``: ``=``, ``==``, ``!=`` on the fields the real server supports per resource
  (every resource: metadata.name and metadata.namespace; pods also spec.nodeName, status.phase
  and the rest below; jobs status.successful); any other field is 400 ``field label not
  supported``;
- ``limit`` and ``continue``: pages in (namespace, name) order, ``metadata.continue`` while more
  remain; a token that is not one the fake gave out is 400;
- ``Accept: ...;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1``: metadata only, as
  ``PartialObjectMetadata`` items; any other ``as=`` is 406;
- items carry no apiVersion/kind, as a real list's items do not.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from testkit.fakeapi.errors import ApiError

COLLECTION = re.compile(
    r"^/(?P<prefix>api/v1|apis/apps/v1|apis/batch/v1)"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<resource>[a-z]+)$"
)
RESOURCES = {
    "api/v1": {
        "configmaps": "ConfigMap",
        "pods": "Pod",
        "persistentvolumeclaims": "PersistentVolumeClaim",
        "namespaces": "Namespace",
        "serviceaccounts": "ServiceAccount",
        "events": "Event",
    },
    "apis/apps/v1": {
        "deployments": "Deployment",
        "statefulsets": "StatefulSet",
        "daemonsets": "DaemonSet",
    },
    "apis/batch/v1": {"jobs": "Job"},
}
KINDS = {resource: kind for by_group in RESOURCES.values() for resource, kind in by_group.items()}
#: resources that live in no namespace: listed only at /api/v1/<resource>
CLUSTER_SCOPED = frozenset({"namespaces"})
_EVERY_RESOURCE = ("metadata.name", "metadata.namespace")
#: the pod fields the API server can select on (pkg/registry/core/pod/strategy.go)
_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
#: what else the API server can select per resource (pkg/registry/*/strategy.go)
_RESOURCE_FIELDS = {"pods": _POD_FIELDS, "jobs": ("status.successful",)}
METADATA_LIST = ("as=partialobjectmetadatalist", "g=meta.k8s.io", "v=v1")


def collection(path: str) -> tuple[str, str, str | None] | None:
    """(API group, resource, namespace or None) of a list path; None for any other path."""
    match = COLLECTION.match(path)
    if match is None or match["resource"] not in RESOURCES[match["prefix"]]:
        return None
    if match["namespace"] is not None and match["resource"] in CLUSTER_SCOPED:
        return None
    group = "" if match["prefix"] == "api/v1" else match["prefix"].split("/")[1]
    return group, match["resource"], match["namespace"]


def serve(
    objects: Iterable[dict[str, Any]],
    *,
    group: str,
    resource: str,
    namespace: str | None,
    query: dict[str, str],
    accept: str | None,
    resource_version: str,
) -> dict[str, Any]:
    """The list body for ``objects`` (every stored one of ``resource``), as asked by ``query``."""
    metadata_only = _metadata_only(accept)
    labels = selector(query.get("labelSelector", ""))
    fields = _field_selector(query.get("fieldSelector", ""), resource)
    chosen = sorted(
        (
            obj
            for obj in objects
            if namespace in (None, obj["metadata"].get("namespace"))
            and all(match(obj["metadata"].get("labels") or {}) for match in labels)
            and all(match(obj) for match in fields)
        ),
        key=_key,
    )
    chosen = _after(chosen, query.get("continue"))
    limit = _limit(query.get("limit"))
    meta: dict[str, Any] = {"resourceVersion": resource_version}
    if limit and len(chosen) > limit:
        chosen = chosen[:limit]
        meta["continue"] = _token(_key(chosen[-1]))
    prefix = "v1" if not group else f"{group}/v1"
    kind = KINDS[resource]
    if metadata_only:
        return {
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadataList",
            "metadata": meta,
            "items": [
                {
                    "apiVersion": "meta.k8s.io/v1",
                    "kind": "PartialObjectMetadata",
                    "metadata": copy.deepcopy(obj["metadata"]),
                }
                for obj in chosen
            ],
        }
    items = []
    for obj in chosen:
        item = copy.deepcopy(obj)
        item.pop("apiVersion", None)
        item.pop("kind", None)
        items.append(item)
    return {"apiVersion": prefix, "kind": f"{kind}List", "metadata": meta, "items": items}


def selector(text: str) -> list[Callable[[dict[str, str]], bool]]:
    """Equality-based label selector terms; set-based forms are 400."""
    terms: list[Callable[[dict[str, str]], bool]] = []
    for raw in filter(None, (t.strip() for t in text.split(","))):
        if re.search(r"\s(in|notin)\s", raw) or "(" in raw:
            raise ApiError(400, "BadRequest", f"the fake supports equality selectors only: {raw}")
        if "!=" in raw:
            key, value = raw.split("!=", 1)
            terms.append(_label_is(key, value, equal=False))
        elif "=" in raw:
            key, value = raw.replace("==", "=").split("=", 1)
            terms.append(_label_is(key, value, equal=True))
        elif raw.startswith("!"):
            terms.append(_label_set(raw[1:], present=False))
        else:
            terms.append(_label_set(raw, present=True))
    return terms


def _label_is(key: str, value: str, *, equal: bool) -> Callable[[dict[str, str]], bool]:
    """``key=value`` (``equal``) or ``key!=value``; a missing label is not equal to any value."""
    return lambda labels: (labels.get(key) == value) == equal


def _label_set(key: str, *, present: bool) -> Callable[[dict[str, str]], bool]:
    """``key`` (``present``) or ``!key``."""
    return lambda labels: (key in labels) == present


def _field_selector(text: str, resource: str) -> list[Callable[[dict[str, Any]], bool]]:
    allowed = _EVERY_RESOURCE + _RESOURCE_FIELDS.get(resource, ())
    terms: list[Callable[[dict[str, Any]], bool]] = []
    for raw in filter(None, (t.strip() for t in text.split(","))):
        negate = "!=" in raw
        name, sep, value = raw.replace("!=", "=").replace("==", "=").partition("=")
        if not sep:
            raise ApiError(400, "BadRequest", f"invalid field selector: {raw!r}")
        if name not in allowed:
            raise ApiError(400, "BadRequest", f'field label not supported: "{name}"')
        terms.append(_field_is(name, value, negate=negate))
    return terms


def _field_is(name: str, value: str, *, negate: bool) -> Callable[[dict[str, Any]], bool]:
    return lambda obj: (_field(obj, name) == value) != negate


def _field(obj: dict[str, Any], path: str) -> str:
    if path == "status.successful":  # a Job's succeeded count, 0 when absent
        return str((obj.get("status") or {}).get("succeeded") or 0)
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, bool):
        return "true" if node else "false"
    return "" if node is None else str(node)


def _metadata_only(accept: str | None) -> bool:
    """Whether ``accept`` asks for PartialObjectMetadataList; 406 for another ``as=``."""
    for media in (accept or "").split(","):
        params = [p.strip().lower() for p in media.split(";")[1:]]
        if not any(p.startswith("as=") for p in params):
            continue
        if all(p in params for p in METADATA_LIST):
            return True
        raise ApiError(406, "NotAcceptable", f"only PartialObjectMetadataList, not {media!r}")
    return False


def _limit(text: str | None) -> int:
    if text is None:
        return 0
    if not text.isdigit():
        raise ApiError(400, "BadRequest", f"limit: invalid value {text!r}")
    return int(text)


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return (str(meta.get("namespace", "")), str(meta["name"]))


def _token(key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": list(key)}).encode()).decode()


def _after(objects: list[dict[str, Any]], token: str | None) -> list[dict[str, Any]]:
    if token is None:
        return objects
    try:
        after = tuple(json.loads(base64.urlsafe_b64decode(token.encode()))["after"])
    except (ValueError, KeyError, TypeError):
        raise ApiError(400, "BadRequest", "continue key is not valid") from None
    return [obj for obj in objects if _key(obj) > after]

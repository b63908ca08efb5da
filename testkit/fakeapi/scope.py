"""Namespaces and ServiceAccounts for the fake API server: what ``plan --all-namespaces`` lists
(the lists themselves are served by testkit/fakeapi/lists.py).

- a Namespace as the real server shows it: the ``kubernetes.io/metadata.name`` label the API
  server sets on every namespace (1.21+), ``status.phase: Active``, the labels a test gives it;
  the fake's namespaces are its ``namespaces`` set (a test may discard one), so a Namespace
  exists exactly when requests in it are accepted;
- Namespaces are cluster-scoped: ``/api/v1/namespaces`` lists them, a namespaced path for them is
  404 as on a real server;
- ServiceAccounts as ``kubectl create serviceaccount`` leaves them (no token Secret: 1.24+),
  listed per namespace and across all namespaces, selectable by ``metadata.name``.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: the list resources this module holds
RESOURCES = frozenset({"namespaces", "serviceaccounts"})
#: the label the API server puts on every Namespace
NAME_LABEL = "kubernetes.io/metadata.name"


class Scope:
    """The Namespaces' labels and the ServiceAccounts of one fake server."""

    def __init__(self, next_rv: Callable[[], str]) -> None:
        self._next_rv = next_rv
        self._labels: dict[str, dict[str, str]] = {}
        self._created: dict[str, str] = {}
        self._accounts: dict[tuple[str, str], dict[str, Any]] = {}

    def label(self, name: str, labels: Mapping[str, str]) -> None:
        """Set the labels of Namespace ``name`` (``kubectl label namespace``)."""
        self._labels[name] = {str(k): str(v) for k, v in labels.items()}

    def put_service_account(self, namespace: str, name: str) -> dict[str, Any]:
        obj = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": str(uuid.uuid4()),
                "resourceVersion": self._next_rv(),
                "creationTimestamp": _now(),
            },
        }
        self._accounts[(namespace, name)] = obj
        return copy.deepcopy(obj)

    def objects(self, resource: str, namespaces: Iterable[str]) -> list[dict[str, Any]]:
        """Every stored object of ``resource``, given the namespaces that exist now."""
        existing = set(namespaces)
        if resource == "serviceaccounts":
            return [obj for (ns, _), obj in self._accounts.items() if ns in existing]
        return [self._namespace(name) for name in sorted(existing)]

    def _namespace(self, name: str) -> dict[str, Any]:
        created = self._created.setdefault(name, _now())
        return {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"namespace/{name}")),
                "resourceVersion": "1",
                "creationTimestamp": created,
                "labels": {**self._labels.get(name, {}), NAME_LABEL: name},
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

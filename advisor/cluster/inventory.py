"""What may consume an advice, read-only for ``status``: the Deployments, StatefulSets and
DaemonSets of a namespace (or of the cluster), its pods that are not finished, and the names of
its ConfigMaps.

``envFrom`` cannot cross namespaces, so a consumer is always in its advice's namespace and one
set of lists per scope is enough, whatever the number of advice. Lists are paged like kubectl's
(``limit``/``continue``), so a namespace with thousands of pods costs several answers of bounded
size, not one huge one. ConfigMaps are listed as metadata only (PartialObjectMetadataList):
``status`` needs their names, to tell a reference to a missing ConfigMap from one to a ConfigMap
that is not advice, never their data.

Needs ``list`` on deployments, statefulsets, daemonsets (apps) and pods; the Role in
deploy/examples/advice-reader.yaml has it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from advisor.cluster.config import Connection
from advisor.cluster.http import Target, final_error, request
from advisor.cluster.listing import READER_HINT
from advisor.cluster.retry import Deadline, RetryPolicy
from advisor.errors import Opt

#: kind -> (API group, resource): the pod-owning workloads a consumer can be
WORKLOAD_RESOURCES = {
    "Deployment": ("apps", "deployments"),
    "StatefulSet": ("apps", "statefulsets"),
    "DaemonSet": ("apps", "daemonsets"),
}
#: a finished pod runs nothing and is never restarted: leave it out on the server
LIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
#: kubectl's page size
PAGE_SIZE = 500
#: the API server's metadata-only list (names and labels, no data)
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


@dataclass(frozen=True)
class Inventory:
    """Everything in one scope that can read an advice, and which ConfigMaps exist there."""

    #: Deployments, StatefulSets and DaemonSets, each with its ``kind`` (lists leave it out)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    #: pods not Succeeded or Failed
    pods: list[dict[str, Any]] = field(default_factory=list)
    #: (namespace, name) of every ConfigMap
    configmaps: frozenset[tuple[str, str]] = frozenset()


def list_inventory(
    connection: Connection,
    namespace: str | None,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
) -> Inventory:
    """The inventory of ``namespace`` (None: all namespaces), within one deadline."""
    from kubernetes import client

    policy = policy or RetryPolicy()
    lister = _Lister(connection, namespace, policy, Deadline(policy), page_size)
    apps = client.AppsV1Api(connection.api_client)
    core = client.CoreV1Api(connection.api_client)
    workloads: list[dict[str, Any]] = []
    for kind, (group, resource) in WORKLOAD_RESOURCES.items():
        snake = {"StatefulSet": "stateful_set", "DaemonSet": "daemon_set"}.get(kind, "deployment")
        items = lister.items(group, resource, _method(apps, snake, namespace is None))
        workloads += [{"apiVersion": "apps/v1", "kind": kind, **item} for item in items]
    pods = lister.items(
        "", "pods", _method(core, "pod", namespace is None), field_selector=LIVE_PODS
    )
    configmaps = lister.items(
        "",
        "configmaps",
        _method(core, "config_map", namespace is None),
        _headers={"Accept": METADATA_ONLY},
    )
    names = frozenset(
        (str(meta.get("namespace", "")), str(meta.get("name", "")))
        for meta in (item.get("metadata") or {} for item in configmaps)
    )
    return Inventory(workloads, [{"apiVersion": "v1", "kind": "Pod", **p} for p in pods], names)


def _method(api: Any, snake: str, everywhere: bool) -> Callable[..., Any]:
    """The client's list method: ``list_namespaced_pod`` or ``list_pod_for_all_namespaces``."""
    name = f"list_{snake}_for_all_namespaces" if everywhere else f"list_namespaced_{snake}"
    method: Callable[..., Any] = getattr(api, name)
    return method


@dataclass
class _Lister:
    """One scope's lists, paged, under one deadline; a final answer becomes a typed error."""

    connection: Connection
    namespace: str | None
    policy: RetryPolicy
    deadline: Deadline
    page_size: int

    def items(
        self, group: str, resource: str, method: Callable[..., Any], **params: Any
    ) -> list[dict[str, Any]]:
        where = f"namespace {self.namespace}" if self.namespace else "all namespaces"
        attempt = f"list {resource} in {where}"
        scope: tuple[Any, ...] = (self.namespace,) if self.namespace else ()
        params = {key: value for key, value in params.items() if value is not None}
        found: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = dict(params, limit=self.page_size, _preload_content=False)
            if token:
                page["_continue"] = token

            def call(timeout: float, page: dict[str, Any] = page) -> Any:
                return method(*scope, **page, _request_timeout=timeout)

            resp = request(self.connection, self.policy, self.deadline, attempt, call)
            if resp.status != 200:
                target = self._target(f"{resource}.{group}" if group else resource)
                raise final_error(resp, "list", attempt, self.connection, target)
            body = resp.body or {}
            found += [item for item in body.get("items") or [] if isinstance(item, dict)]
            token = (body.get("metadata") or {}).get("continue") or None
            if token is None:
                return found

    def _target(self, resource: str) -> Target:
        """What a 403 names: the resource refused and the rule that would allow all the lists."""
        qualified = "deployments, statefulsets, daemonsets (apiGroup apps) and pods"
        scope = (
            f"a Role in {self.namespace} allowing verb list on {qualified}"
            if self.namespace
            else f"a ClusterRole allowing verb list on {qualified} in every namespace"
        )
        return Target(
            resource,
            self.namespace or "(all)",
            (
                f"status needs {scope} to find the consumers ({READER_HINT}), or run it with ",
                Opt("consumers=False"),
            ),
        )

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
from advisor.cluster.http import PAGE_SIZE, Target, list_all, with_kind
from advisor.cluster.listing import READER_HINT
from advisor.cluster.rest import Resource, lister
from advisor.errors import Opt
from advisor.models import POD_OWNER_KINDS, WorkloadKind
from advisor.models.kube import KubePod, KubeWorkload
from advisor.retry import Deadline, RetryPolicy

#: a finished pod runs nothing and is never restarted: leave it out on the server
LIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
#: the API server's metadata-only list (names and labels, no data)
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


@dataclass(frozen=True)
class Inventory:
    """Everything in one scope that can read an advice, and which ConfigMaps exist there."""

    #: Deployments, StatefulSets and DaemonSets, each read with its ``kind`` (lists leave it out)
    workloads: list[KubeWorkload] = field(default_factory=list)
    #: pods not Succeeded or Failed
    pods: list[KubePod] = field(default_factory=list)
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
    policy = policy or RetryPolicy()
    lists = _Lister(connection, namespace, policy, Deadline(policy), page_size)
    everywhere = namespace is None

    def of(api_version: str, resource: str) -> Callable[..., Any]:
        return lister(connection.api_client, Resource(api_version, resource), everywhere)

    workloads: list[KubeWorkload] = []
    for kind in POD_OWNER_KINDS:
        items = lists.items(kind.group, kind.resource, of(kind.api_version, kind.resource))
        for item in with_kind(items, kind.api_version, kind.value):
            view = KubeWorkload.read(item)
            if view is not None:  # always: the kind is one the advisor reads
                workloads.append(view)
    pod = WorkloadKind.POD
    pods = lists.items(
        pod.group, pod.resource, of(pod.api_version, pod.resource), field_selector=LIVE_PODS
    )
    configmaps = lists.items(
        "",
        "configmaps",
        of("v1", "configmaps"),
        _headers={"Accept": METADATA_ONLY},
    )
    names = frozenset(
        (str(meta.get("namespace", "")), str(meta.get("name", "")))
        for meta in (item.get("metadata") or {} for item in configmaps)
    )
    listed = [KubePod.read(item) for item in with_kind(pods, pod.api_version, pod.value)]
    return Inventory(workloads, listed, names)


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
        scope: tuple[Any, ...] = (self.namespace,) if self.namespace else ()
        return list_all(
            self.connection,
            self.policy,
            self.deadline,
            f"list {resource} in {where}",
            method,
            *scope,
            target=self._target(f"{resource}.{group}" if group else resource),
            page_size=self.page_size,
            **params,
        )

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

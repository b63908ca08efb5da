"""What ``plan`` lists in one namespace (or, with ``--all-namespaces``, in all of them): the
opted-in Deployments and StatefulSets, the ConfigMaps that may hold their advice, the
PersistentVolumeClaims their models may be on (a claim only one node may mount cannot be copied
from, and only the claim says its access modes) and the calibration Jobs already there
(``status`` lists the Jobs too).

Thin over the official client like the rest of this package: every list is paged and goes through
``http.list_all`` (bounded retries, one deadline per operation); the authorizer's 403 names the
Role rule that is missing (``planner_role.rule``).

Needs in the namespace (deploy/components/fleet binds such a Role to the ServiceAccount
tf-thread-advisor-planner): get, list on deployments and statefulsets (apps); get, list on
configmaps and persistentvolumeclaims; get, list on jobs (batch). ``plan --all-namespaces`` lists
the workloads and Jobs of every namespace at once (a namespace of None), which only a ClusterRole
allows.
"""

from __future__ import annotations

from typing import Any

from advisor.cluster import listing
from advisor.cluster.config import Connection
from advisor.cluster.http import PAGE_SIZE, Target, list_all, with_kind
from advisor.cluster.planner_role import rule
from advisor.cluster.rest import Resource, lister
from advisor.models import CALIBRATED_KINDS
from advisor.retry import Deadline, RetryPolicy


def list_jobs(
    connection: Connection,
    namespace: str | None,
    selector: str,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
) -> list[dict[str, Any]]:
    """The Jobs of ``namespace`` (None: of every namespace) matching the label ``selector``,
    with apiVersion and kind."""
    policy = policy or RetryPolicy()
    items = _labelled(
        connection,
        policy,
        Deadline(policy),
        Resource("batch/v1", "jobs"),
        namespace=namespace,
        selector=selector,
        page_size=page_size,
    )
    return with_kind(items, "batch/v1", "Job")


def list_workloads(
    connection: Connection,
    namespace: str | None,
    selector: str,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
) -> list[dict[str, Any]]:
    """The Deployments, then the StatefulSets, of ``namespace`` (None: of every namespace, one
    paged list each) matching the label ``selector``, each with apiVersion and kind (a list's
    items have neither), within one deadline."""
    policy = policy or RetryPolicy()
    deadline = Deadline(policy)
    found: list[dict[str, Any]] = []
    for kind in CALIBRATED_KINDS:
        items = _labelled(
            connection,
            policy,
            deadline,
            Resource(kind.api_version, kind.resource),
            namespace=namespace,
            selector=selector,
            page_size=page_size,
            target=f"{kind.resource}.{kind.group}",
        )
        found += with_kind(items, kind.api_version, kind.value)
    return found


def list_configmaps(
    connection: Connection,
    namespace: str,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
    cluster: bool = False,
) -> list[dict[str, Any]]:
    """Every ConfigMap of ``namespace`` as a full object (the planner reads the advice in
    them, and needs to see a name taken by a ConfigMap that is not advice); ``cluster``: asked
    by ``plan --all-namespaces``, whose ClusterRole allows it."""
    return _every("ConfigMap", connection, namespace, policy, page_size=page_size, cluster=cluster)


def list_claims(
    connection: Connection,
    namespace: str,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
    cluster: bool = False,
) -> list[dict[str, Any]]:
    """Every PersistentVolumeClaim of ``namespace``, with apiVersion and kind (``cluster``:
    asked by ``plan --all-namespaces``, whose ClusterRole allows it)."""
    return _every(
        "PersistentVolumeClaim", connection, namespace, policy, page_size=page_size, cluster=cluster
    )


def _labelled(
    connection: Connection,
    policy: RetryPolicy,
    deadline: Deadline,
    resource: Resource,
    *,
    namespace: str | None,
    selector: str,
    page_size: int,
    target: str | None = None,
) -> list[dict[str, Any]]:
    """The ``resource`` objects of ``namespace`` (None: of every namespace) matching the label
    ``selector``, as the server sends them; a 403 names ``target`` (default: the resource)."""
    everywhere = namespace is None
    group = resource.api_version.rpartition("/")[0]
    return list_all(
        connection,
        policy,
        deadline,
        f"list {resource.resource} in {_where(namespace)}",
        lister(connection.api_client, resource, everywhere),
        *((namespace,) if namespace else ()),
        target=Target(
            target or resource.resource,
            namespace or "(all)",
            rule("list", resource.resource, group, cluster=everywhere),
        ),
        page_size=page_size,
        label_selector=selector,
    )


def _every(
    kind: str,
    connection: Connection,
    namespace: str,
    policy: RetryPolicy | None,
    *,
    page_size: int,
    cluster: bool,
) -> list[dict[str, Any]]:
    """Every core ``kind`` object of ``namespace``, whole."""
    return listing.list_core(
        connection,
        kind,
        namespace,
        policy,
        rule=rule("list", f"{kind.lower()}s", "", cluster=cluster),
        page_size=page_size,
    )


def _where(namespace: str | None) -> str:
    return f"namespace {namespace}" if namespace else "all namespaces"

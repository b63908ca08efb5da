"""What ``plan`` lists in one namespace (or, with ``--all-namespaces``, in all of them): the
opted-in Deployments and StatefulSets, the ConfigMaps that may hold their advice and the
calibration Jobs already there (``status`` lists the Jobs too).

Thin over the official client like the rest of this package: every list is paged and goes through
``http.list_all`` (bounded retries, one deadline per operation); the authorizer's 403 names the
Role rule that is missing (``planner_role.rule``).

Needs in the namespace (deploy/components/fleet binds such a Role to the ServiceAccount
tf-thread-advisor-planner): get, list on deployments and statefulsets (apps); get, list on
configmaps; get, list on jobs (batch). ``plan --all-namespaces`` lists the workloads and Jobs of
every namespace at once (a namespace of None), which only a ClusterRole allows.
"""

from __future__ import annotations

from typing import Any

from advisor.cluster import listing
from advisor.cluster.config import Connection
from advisor.cluster.http import PAGE_SIZE, Target, list_all
from advisor.cluster.planner_role import rule
from advisor.cluster.rest import Resource, lister
from advisor.models import CALIBRATED_KINDS
from advisor.retry import Deadline, RetryPolicy


def _where(namespace: str | None) -> str:
    return f"namespace {namespace}" if namespace else "all namespaces"


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
    everywhere = namespace is None
    items = list_all(
        connection,
        policy,
        Deadline(policy),
        f"list jobs in {_where(namespace)}",
        lister(connection.api_client, Resource("batch/v1", "jobs"), everywhere),
        *((namespace,) if namespace else ()),
        target=Target(
            "jobs", namespace or "(all)", rule("list", "jobs", "batch", cluster=everywhere)
        ),
        page_size=page_size,
        label_selector=selector,
    )
    return [{"apiVersion": "batch/v1", "kind": "Job", **item} for item in items]


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
    everywhere = namespace is None
    for kind in CALIBRATED_KINDS:
        group, resource = kind.group, kind.resource
        items = list_all(
            connection,
            policy,
            deadline,
            f"list {resource} in {_where(namespace)}",
            lister(connection.api_client, Resource(kind.api_version, resource), everywhere),
            *((namespace,) if namespace else ()),
            target=Target(
                f"{resource}.{group}",
                namespace or "(all)",
                rule("list", resource, group, cluster=everywhere),
            ),
            page_size=page_size,
            label_selector=selector,
        )
        found += [{"apiVersion": kind.api_version, "kind": kind.value, **item} for item in items]
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
    return listing.list_core(
        connection,
        "ConfigMap",
        namespace,
        policy,
        rule=rule("list", "configmaps", "", cluster=cluster),
        page_size=page_size,
    )

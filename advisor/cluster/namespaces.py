"""What ``plan --all-namespaces`` reads beyond the workloads: the Namespaces that opted in, and
the namespaces where the calibration ServiceAccount exists. One paged list each, whatever the
number of namespaces, so planning a cluster costs a handful of requests more than one namespace.

Needs a ClusterRole (bound with a ClusterRoleBinding): list on namespaces and on serviceaccounts
(core). A ServiceAccount list shows names and pull secrets, no token: since Kubernetes 1.24 none
is stored in it.
"""

from __future__ import annotations

from typing import Any

from advisor.cluster.config import Connection
from advisor.cluster.http import PAGE_SIZE, Target, list_all
from advisor.cluster.planner_role import rule
from advisor.cluster.rest import Resource, lister
from advisor.retry import Deadline, RetryPolicy


def list_namespaces(
    connection: Connection, selector: str, policy: RetryPolicy | None = None
) -> list[dict[str, Any]]:
    """The Namespaces matching the label ``selector``, as the list gives them."""
    return _list_everywhere(
        connection, "namespaces", f"labelled {selector}", policy, label_selector=selector
    )


def namespaces_with_service_account(
    connection: Connection, name: str, policy: RetryPolicy | None = None
) -> set[str]:
    """The namespaces holding a ServiceAccount ``name``: one list across all namespaces,
    selected by name on the server."""
    items = _list_everywhere(
        connection,
        "serviceaccounts",
        f"named {name} in all namespaces",
        policy,
        field_selector=f"metadata.name={name}",
    )
    return {
        str(meta["namespace"])
        for meta in _metadata(items)
        if meta.get("name") == name and meta.get("namespace")
    }


def _list_everywhere(
    connection: Connection,
    resource: str,
    what: str,
    policy: RetryPolicy | None,
    *,
    page_size: int = PAGE_SIZE,
    **selectors: str,
) -> list[dict[str, Any]]:
    """Every core ``resource`` of the cluster matching ``selectors``, paged."""
    method = lister(connection.api_client, Resource("v1", resource), everywhere=True)
    policy = policy or RetryPolicy()
    return list_all(
        connection,
        policy,
        Deadline(policy),
        f"list {resource} {what}",
        method,
        target=Target(resource, "(all)", rule("list", resource, "", cluster=True)),
        page_size=page_size,
        **selectors,
    )


def _metadata(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [meta for item in items if isinstance(meta := item.get("metadata"), dict)]

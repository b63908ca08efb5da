"""The PersistentVolumeClaims of one namespace, for ``plan``: a model on a claim only one node may
mount is not calibrated, and only the claim says which access modes it has.

Thin over the official client as the rest of this package (paged, one deadline, a 403 naming the
Role rule). Needs in the namespace: list on persistentvolumeclaims (deploy/components/fleet and
the chart's planner Role grant get, list).
"""

from __future__ import annotations

from typing import Any

from advisor.cluster import listing
from advisor.cluster.config import Connection
from advisor.cluster.http import PAGE_SIZE
from advisor.cluster.planner_role import rule
from advisor.retry import RetryPolicy


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
    return listing.list_core(
        connection,
        "PersistentVolumeClaim",
        namespace,
        policy,
        rule=rule("list", "persistentvolumeclaims", "", cluster=cluster),
        page_size=page_size,
    )

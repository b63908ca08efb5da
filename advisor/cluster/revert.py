"""Writing a reverted advice back: ``plan --apply`` replaces one advice ConfigMap it read with the
previous advice it keeps (``advisor.recommend.previous``).

A PUT carrying the resourceVersion read: if anything wrote the ConfigMap since (a calibration Job
publishing new advice), the server answers 409 and nothing is reverted; the next plan judges the
new advice on its own. Needs ``update`` on configmaps (the planner's Role, where production is on).
"""

from __future__ import annotations

from typing import Any

from advisor.cluster.config import Connection
from advisor.cluster.http import Target, final_error, request
from advisor.cluster.planner_role import rule
from advisor.cluster.rest import Resource, send
from advisor.retry import Deadline, RetryPolicy


def replace_configmap(
    connection: Connection,
    namespace: str,
    configmap: dict[str, Any],
    policy: RetryPolicy | None = None,
) -> bool:
    """Replace the ConfigMap (its ``metadata.resourceVersion`` the one read); False when it
    changed since (409), True when written. Any other refusal is a typed error."""
    policy = policy or RetryPolicy()
    name = str((configmap.get("metadata") or {}).get("name") or "")
    attempt = f"update configmaps/{name} in namespace {namespace}"
    resp = request(
        connection,
        policy,
        Deadline(policy),
        attempt,
        lambda timeout: send(
            connection.api_client,
            "PUT",
            Resource("v1", "configmaps").path(namespace, name),
            body=configmap,
            timeout=timeout,
        ),
    )
    if resp.status == 200:
        return True
    if resp.status == 409:
        return False
    target = Target(f"configmaps/{name}", namespace, rule("update", "configmaps", ""))
    raise final_error(resp, "update", attempt, connection, target)

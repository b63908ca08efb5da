"""What ``plan``'s Role must allow, as a 403 tells the user to grant it.

Every call of the planner's cluster client (its lists, its Jobs, its Events, its revert) names the
rule it needed when the authorizer refuses it: deploy/components/fleet binds such a Role to the
ServiceAccount tf-thread-advisor-planner; ``plan --all-namespaces`` needs a ClusterRole.
"""

from __future__ import annotations

PLANNER_SERVICE_ACCOUNT = "tf-thread-advisor-planner"
PLANNER_RBAC = "deploy/components/fleet"


def rule(verbs: str, resource: str, group: str, *, cluster: bool = False) -> str:
    """What a 403 tells the user to grant: ``create jobs (batch)`` and where the Role is (with
    ``cluster``: the ClusterRole ``plan --all-namespaces`` needs)."""
    if cluster:
        return (
            f"plan --all-namespaces needs a ClusterRole (bound with a ClusterRoleBinding) "
            f"allowing {verbs} {resource} ({group or 'core'}); the chart's planner.scope=cluster "
            "grants one to its planner"
        )
    return (
        f"plan needs a Role allowing {verbs} {resource} ({group or 'core'}); {PLANNER_RBAC} "
        f"binds one to the ServiceAccount {PLANNER_SERVICE_ACCOUNT}"
    )

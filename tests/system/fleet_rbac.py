"""What fleet mode's two identities may do, evaluated as the API server would (the Rule semantics
of the fake API server, testkit/fakeapi/rbac.py) over rendered Role and RoleBinding docs: the
chart's (test_chart_fleet.py) and the kustomize component's (test_manifests_tools.py) must pass the
same check.
"""

from __future__ import annotations

from typing import Any

from testkit.fakeapi.rbac import Rule, parse_rules
from tests.support import k8s_checks as k8s

#: what the planner's Role must allow (get/list the opted-in workloads, their advice and the Jobs
#: already there; create Jobs) and the calibration Role (write any advice ConfigMap); each
#: feature's rights below, allowed only where the feature is on
PLANNER_MAY = [
    ("get", "apps", "deployments", "web"),
    ("list", "apps", "deployments", None),
    ("get", "apps", "statefulsets", "db"),
    ("list", "apps", "statefulsets", None),
    ("get", "", "configmaps", "web-thread-advice"),
    ("list", "", "configmaps", None),
    ("get", "batch", "jobs", "web-calibrate-1a2b3c"),
    ("list", "batch", "jobs", None),
    ("create", "batch", "jobs", None),
    # the access modes of the claim a model is on
    ("get", "", "persistentvolumeclaims", "models"),
    ("list", "", "persistentvolumeclaims", None),
]
PLANNER_MAY_NOT = [
    ("create", "", "configmaps", None),
    # a server-side apply that creates is authorized as create with the name
    ("create", "", "configmaps", "web-thread-advice"),
    ("patch", "", "configmaps", "web-thread-advice"),
    ("update", "", "configmaps", "web-thread-advice"),
    ("patch", "apps", "deployments", "web"),
    ("update", "apps", "deployments", "web"),
    ("patch", "apps", "statefulsets", "db"),
    ("patch", "batch", "jobs", "web-calibrate-1a2b3c"),
    ("patch", "", "events", "web.1"),
    ("delete", "", "events", "web.1"),
    ("create", "", "pods", None),
    ("get", "", "secrets", "anything"),
    ("list", "", "secrets", None),
    ("create", "batch", "cronjobs", None),
    ("create", "", "persistentvolumeclaims", None),
    ("delete", "", "persistentvolumeclaims", "models"),
]
CALIBRATION_MAY = [
    # any name: fleet mode's ConfigMap names come from the workloads
    ("get", "", "configmaps", "any-name-at-all"),
    ("create", "", "configmaps", "any-name-at-all"),
    ("patch", "", "configmaps", "web-thread-advice"),
]
CALIBRATION_MAY_NOT = [
    ("create", "batch", "jobs", None),
    ("list", "batch", "jobs", None),
    ("list", "", "configmaps", None),
    ("delete", "", "configmaps", "web-thread-advice"),
    ("update", "apps", "deployments", "web"),
    ("delete", "apps", "deployments", "web"),
    ("list", "apps", "deployments", None),
    ("create", "", "pods", None),
    ("get", "", "secrets", "anything"),
    ("create", "", "events", None),
    ("list", "", "persistentvolumeclaims", None),
]
#: (identity, feature) -> the rights that feature adds, and only it
FEATURES: dict[tuple[str, str], list[tuple[str, str, str, str | None]]] = {
    ("planner", "events"): [("create", "", "events", None)],
    ("planner", "retry_failed"): [("delete", "batch", "jobs", "web-calibrate-1a2b3c")],
    ("calibration", "restart"): [
        ("get", "apps", "deployments", "web"),
        ("patch", "apps", "deployments", "web"),
        ("get", "apps", "statefulsets", "db"),
        ("patch", "apps", "statefulsets", "db"),
    ],
}


#: what the planner's ClusterRole (planner.scope cluster) allows beyond its Role's rules: the
#: opted-in Namespaces and where the calibration ServiceAccount exists, names only
PLANNER_CLUSTER_MAY = [
    ("list", "", "namespaces", None),
    ("list", "", "serviceaccounts", None),
]
PLANNER_CLUSTER_MAY_NOT = [
    ("get", "", "namespaces", "team-a"),
    ("patch", "", "namespaces", "team-a"),
    ("get", "", "serviceaccounts", "default"),
    ("create", "", "serviceaccounts", None),
    # a token for any ServiceAccount would be a shortcut past the Jobs
    ("create", "", "serviceaccounts/token", "default"),
    ("create", "rbac.authorization.k8s.io", "rolebindings", None),
]


def granted(docs: list[dict[str, Any]], account: str, namespace: str | None = None) -> list[Rule]:
    """The rules every RoleBinding in ``docs`` (in ``namespace``, if given) grants
    ServiceAccount ``account``."""
    roles = {
        (r["metadata"].get("namespace"), r["metadata"]["name"]): r
        for r in k8s.by_kind(docs, "Role")
    }
    rules: list[Rule] = []
    for binding in k8s.by_kind(docs, "RoleBinding"):
        where = binding["metadata"].get("namespace")
        if namespace is not None and where != namespace:
            continue
        if any(s["kind"] == "ServiceAccount" and s["name"] == account for s in binding["subjects"]):
            assert binding["roleRef"]["kind"] == "Role"
            rules += parse_rules(roles[(where, binding["roleRef"]["name"])]["rules"])
    return rules


def granted_everywhere(docs: list[dict[str, Any]], account: str) -> list[Rule]:
    """The rules every ClusterRoleBinding in ``docs`` grants ServiceAccount ``account``."""
    roles = {r["metadata"]["name"]: r for r in k8s.by_kind(docs, "ClusterRole")}
    rules: list[Rule] = []
    for binding in k8s.by_kind(docs, "ClusterRoleBinding"):
        if any(s["kind"] == "ServiceAccount" and s["name"] == account for s in binding["subjects"]):
            assert binding["roleRef"]["kind"] == "ClusterRole"
            rules += parse_rules(roles[binding["roleRef"]["name"]]["rules"])
    return rules


def allowed(rules: list[Rule], verb: str, group: str, resource: str, name: str | None) -> bool:
    return any(rule.allows(verb, group, resource, name) for rule in rules)


def assert_fleet_rbac(
    docs: list[dict[str, Any]],
    planner: str,
    calibration: str,
    *,
    cluster: bool = False,
    namespace: str | None = None,
    events: bool = True,
    retry_failed: bool = False,
    restart: bool = False,
) -> None:
    """What each identity may do, as the API server would evaluate the rendered Roles (the
    planner's ClusterRole with ``cluster``; the calibration Role in ``namespace``, if given),
    with the features on that are (each feature's rights allowed exactly when it is)."""
    planner_rules = granted_everywhere(docs, planner) if cluster else granted(docs, planner)
    calibration_rules = granted(docs, calibration, namespace)
    for request in PLANNER_CLUSTER_MAY:  # scope namespace: the release namespace's rules only
        assert allowed(planner_rules, *request) == cluster, f"planner {cluster=} and {request}"
    for request in PLANNER_CLUSTER_MAY_NOT:
        assert not allowed(planner_rules, *request), f"planner may {request}"
    on = {"events": events, "retry_failed": retry_failed, "restart": restart}
    rules = {"planner": planner_rules, "calibration": calibration_rules}
    for (who, feature), requests in FEATURES.items():
        for request in requests:
            assert allowed(rules[who], *request) == on[feature], (
                f"{who} {'may not' if on[feature] else 'may'} {request} with {feature} "
                f"{'on' if on[feature] else 'off'}"
            )
    assert planner_rules and calibration_rules
    for request in PLANNER_MAY:
        assert allowed(planner_rules, *request), f"planner may not {request}"
    for request in PLANNER_MAY_NOT:
        assert not allowed(planner_rules, *request), f"planner may {request}"
    for request in CALIBRATION_MAY:
        assert allowed(calibration_rules, *request), f"calibration may not {request}"
    for request in CALIBRATION_MAY_NOT:
        assert not allowed(calibration_rules, *request), f"calibration may {request}"

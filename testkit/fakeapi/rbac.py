"""RBAC as the API server evaluates it, for the rules shipped in deploy/rbac.yaml (or any
rendered Role: the chart's, a kustomize overlay's, the read-only example's, fleet mode's for the
planner and the calibration Jobs), picked by the ServiceAccount a RoleBinding binds.

The fake server authorizes every request with these rules, so a test that passes proves the
shipped Role is enough, and a Role missing a verb makes the same test see 403.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testkit import REPO

RBAC_FILE = REPO / "deploy" / "rbac.yaml"
#: fleet mode's two identities, the planner and the calibration Jobs' ServiceAccount
FLEET = REPO / "deploy" / "components" / "fleet"
SERVICE_ACCOUNT = "tf-thread-advisor"


@dataclass(frozen=True)
class Rule:
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()

    def allows(self, verb: str, api_group: str, resource: str, name: str | None) -> bool:
        """Upstream semantics: every list matches or holds '*'; resourceNames, when present,
        must contain the request's name (so a request without a name never matches)."""
        if not ({api_group, "*"} & set(self.api_groups)):
            return False
        if not ({resource, "*"} & set(self.resources)):
            return False
        if not ({verb, "*"} & set(self.verbs)):
            return False
        return not self.resource_names or (name is not None and name in self.resource_names)


def load_documents(path: Path = RBAC_FILE) -> list[dict[str, Any]]:
    """Every document of a YAML file, or of every ``*.yaml`` file of a directory (a component's
    folder), in file-name order."""
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    return [doc for file in files for doc in yaml.safe_load_all(file.read_text()) if doc]


def role_rules(
    docs: list[dict[str, Any]] | None = None,
    *,
    configmap_name: str | None = None,
    service_account: str = SERVICE_ACCOUNT,
) -> list[Rule]:
    """The rules the RoleBindings among ``docs`` (default: the shipped deploy/rbac.yaml) grant
    ``service_account`` in their namespace: each binding's Role (or ClusterRole, bound in the
    namespace) must be among ``docs``, and at least one binding must name the account.

    ``configmap_name`` renames the resourceNames of the ConfigMap rule the way kustomize/Helm
    users do (the rule is the same, only the name differs), so tests can use another ConfigMap
    name. Rules on other resources (the restart rules on workloads) keep their names.
    """
    docs = copy.deepcopy(docs if docs is not None else load_documents())
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        by_kind.setdefault(str(doc.get("kind")), []).append(doc)
    bindings = [
        binding
        for binding in by_kind.get("RoleBinding", [])
        if {"kind": "ServiceAccount", "name": service_account}
        in [{"kind": s.get("kind"), "name": s.get("name")} for s in binding.get("subjects") or []]
    ]
    assert bindings, f"no RoleBinding binds the ServiceAccount {service_account}"
    rules: list[Rule] = []
    for binding in bindings:
        ref = binding["roleRef"]
        assert ref["kind"] in ("Role", "ClusterRole"), ref
        (role,) = [r for r in by_kind.get(ref["kind"], []) if r["metadata"]["name"] == ref["name"]]
        rules += parse_rules(role.get("rules") or [])
    if configmap_name is not None:
        rules = [
            Rule(r.api_groups, r.resources, r.verbs, (configmap_name,))
            if r.resource_names and "configmaps" in r.resources
            else r
            for r in rules
        ]
    return rules


def cluster_role_rules(docs: list[dict[str, Any]], service_account: str) -> list[Rule]:
    """The rules the ClusterRoleBindings among ``docs`` grant ``service_account`` in every
    namespace and at the cluster scope (the fake server's ``cluster_rules``): each binding's
    ClusterRole must be among ``docs``, and at least one binding must name the account."""
    roles = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "ClusterRole"}
    rules: list[Rule] = []
    for binding in (d for d in docs if d.get("kind") == "ClusterRoleBinding"):
        subjects = binding.get("subjects") or []
        if not any(
            s.get("kind") == "ServiceAccount" and s.get("name") == service_account for s in subjects
        ):
            continue
        ref = binding["roleRef"]
        assert ref["kind"] == "ClusterRole", ref  # a ClusterRoleBinding binds a ClusterRole only
        rules += parse_rules(roles[ref["name"]].get("rules") or [])
    assert rules, f"no ClusterRoleBinding grants the ServiceAccount {service_account} anything"
    return rules


def role_documents(
    service_account: str, rules: list[dict[str, Any]], *, name: str | None = None
) -> list[dict[str, Any]]:
    """A ServiceAccount, a Role with ``rules`` and the RoleBinding between them, as rendered
    manifests are (for ``role_rules``, when a test writes the Role in place)."""
    name = name or service_account
    rbac = "rbac.authorization.k8s.io"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": service_account}},
        {"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": {"name": name}, "rules": rules},
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": service_account}],
        },
    ]


def fleet_rules(service_account_suffix: str) -> list[Rule]:
    """The rules the fleet component's RoleBinding grants the ServiceAccount whose name ends with
    ``-planner`` or ``-calibration``."""
    docs = [d for path in sorted(FLEET.glob("*.yaml")) for d in load_documents(path)]
    roles = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "Role"}
    for binding in (d for d in docs if d.get("kind") == "RoleBinding"):
        names = [s["name"] for s in binding["subjects"]]
        if any(n.endswith(service_account_suffix) for n in names):
            return parse_rules(roles[binding["roleRef"]["name"]]["rules"])
    raise AssertionError(f"no RoleBinding for a ServiceAccount *{service_account_suffix}")


def parse_rules(raw_rules: list[dict[str, Any]]) -> list[Rule]:
    """A Role's or ClusterRole's ``rules`` as Rule objects."""
    return [
        Rule(
            api_groups=tuple(raw["apiGroups"]),
            resources=tuple(raw["resources"]),
            verbs=tuple(raw["verbs"]),
            resource_names=tuple(raw.get("resourceNames", ())),
        )
        for raw in raw_rules
    ]


def without_verb(rules: list[Rule], verb: str) -> list[Rule]:
    return [
        Rule(r.api_groups, r.resources, tuple(v for v in r.verbs if v != verb), r.resource_names)
        for r in rules
    ]

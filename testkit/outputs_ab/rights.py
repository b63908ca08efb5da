"""Who runs each compared command (the rules of the shipped Roles and ClusterRoles, bound
everywhere or in one namespace: ``RIGHTS``), and what the API server's admission says to the Jobs
a plan creates (``SETUPS``, set up on a scene built for one command)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.fleet import PLANNER
from testkit import REPO
from testkit.fakeapi.admission import PolicyDenial, WebhookDenial
from testkit.fakeapi.rbac import Rule, cluster_role_rules, load_documents, parse_rules
from testkit.fakeapi.server import FakeApiServer
from testkit.outputs_ab.fixed import HOME, ML, WEB


def _role(path: str, kind: str) -> list[Rule]:
    docs = load_documents(REPO / path)
    return parse_rules(next(d["rules"] for d in docs if d["kind"] == kind))


PLANNER_RULES = cluster_role_rules(
    load_documents(REPO / "deploy" / "examples" / "planner-cluster.yaml"), PLANNER
)
PRODUCTION_RULES = _role("deploy/components/production/rbac.yaml", "Role")
READER_RULES = _role("deploy/examples/advice-reader.yaml", "ClusterRole")


@dataclass(frozen=True)
class Rights:
    """The rules a command runs with: ``cluster`` everywhere (a ClusterRoleBinding), ``role``
    in ``role_namespace`` only (a RoleBinding)."""

    cluster: tuple[Rule, ...] = ()
    role: tuple[Rule, ...] = ()
    role_namespace: str = HOME

    def grant(self, api: FakeApiServer) -> None:
        api.cluster_rules = list(self.cluster)
        api.rules = list(self.role)
        api.role_namespace = self.role_namespace


RIGHTS = {
    # plan -A as deploy/examples/planner-cluster.yaml binds it
    "planner": Rights(cluster=tuple(PLANNER_RULES)),
    # plan --prometheus-url: and the production Role (deploy/components/production) everywhere
    "planner+production": Rights(cluster=(*PLANNER_RULES, *PRODUCTION_RULES)),
    # status -A: the ClusterRole of deploy/examples/advice-reader.yaml
    "reader": Rights(cluster=tuple(READER_RULES)),
    # status --namespace web: the Role of the same file, bound in web only
    "reader-role": Rights(role=tuple(READER_RULES), role_namespace=WEB),
    # a reader without list jobs: status says the calibration Jobs are left out
    "reader-without-jobs": Rights(
        cluster=tuple(r for r in READER_RULES if "jobs" not in r.resources)
    ),
    # get/list on configmaps only: status needs --no-consumers
    "configmaps-only": Rights(cluster=(Rule(("",), ("configmaps",), ("get", "list")),)),
    # what cleanup needs: get and delete on the ConfigMaps
    "cleanup": Rights(cluster=(Rule(("",), ("configmaps",), ("get", "delete")),)),
}


# --------------------------------------------------------------------------------------------------
# what the API server's admission says to the Jobs a plan creates (set up on a fresh scene)

PSA = (
    'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
    '(container "copy-model" must set securityContext.allowPrivilegeEscalation=false)'
)


def _of(name: str) -> Callable[[dict[str, Any]], bool]:
    """A denial's ``applies``: the Jobs of ``name`` (deployment/NAME)."""
    return lambda job: job["metadata"]["annotations"]["tf-thread-advisor.io/workload"] == name


SETUPS: dict[str, Callable[[FakeApiServer], None]] = {
    # ml holds 3 Jobs: one more may be created
    "job-quota": lambda api: api.add_job_quota(ML, 4),
    "webhook-denial": lambda api: api.deny_jobs(
        WebhookDenial("policy.example.com", "no GPUs here", applies=_of("deployment/b"))
    ),
    "policy-denial": lambda api: api.deny_jobs(
        PolicyDenial(
            "require-team-label",
            "require-team-label-binding",
            "Jobs need a team label",
            applies=_of("deployment/a"),
        )
    ),
    "pod-security": lambda api: api.warn_pod_security(ML, PSA),
}

"""One planner for many namespaces (``advisor.fleet.scope``): which workloads are planned, the
namespace each decision names, a namespace without the calibration ServiceAccount, and one
``--max-running`` budget per node pool across namespaces."""

from __future__ import annotations

import copy
from typing import Any

from advisor.fleet.decide import Planned, to_create
from advisor.fleet.jobs import planned_job
from advisor.fleet.scope import by_namespace, opted_in_namespaces, without_service_account
from advisor.keys import NAMESPACE_SELECTOR
from advisor.models.kube import KubeJob, KubeWorkload, ObjectMeta
from advisor.render.plan_reasons import plan_reason_text
from tests.unit.fleet.test_decide import deployment, measured_for, plan

POOL = {"nodeSelector": {"pool": "shared"}}


def in_namespace(namespace: str, name: str, **kw: Any) -> dict[str, Any]:
    obj = deployment(name, limits={"cpu": "1"}, configmap=f"advice-{name}", pod=POOL, **kw)
    obj["metadata"]["namespace"] = namespace
    return obj


def test_namespaces_opt_in_with_the_workloads_label_set_to_true() -> None:
    assert NAMESPACE_SELECTOR == "tf-thread-advisor.io/calibrate"  # listed by key

    def namespace(name: str, value: str | None) -> dict[str, Any]:
        labels = {} if value is None else {"tf-thread-advisor.io/calibrate": value}
        return {"metadata": {"name": name, "labels": labels}}

    listed = [
        namespace("b", "true"),
        namespace("a", "true"),
        namespace("off", "false"),
        namespace("unlabelled", None),
        namespace("typo", "True"),
        {"metadata": {}},
    ]
    names, problems = opted_in_namespaces(ObjectMeta.read(obj["metadata"]) for obj in listed)
    assert names == ["a", "b"]
    (problem,) = problems
    assert problem.startswith("namespace typo is not planned: ") and "'True'" in problem


def test_only_the_opted_in_namespaces_workloads_are_kept_each_under_its_namespace() -> None:
    a, b, quiet = in_namespace("a", "web"), in_namespace("b", "api"), in_namespace("q", "x")
    broken = {"kind": "Deployment", "metadata": "broken"}
    listed = [KubeWorkload.read(obj) for obj in (quiet, b, a, broken)]
    grouped = by_namespace(listed, ["b", "a", "empty"])
    assert list(grouped) == ["a", "b", "empty"]  # sorted, an empty one kept
    assert grouped == {"a": [KubeWorkload.read(a)], "b": [KubeWorkload.read(b)], "empty": []}


def test_each_decision_names_its_workloads_namespace() -> None:
    (one,) = plan([in_namespace("team-a", "web")])
    assert one.namespace == "team-a"
    no_model = {"tf-thread-advisor.io/model": ""}
    (skipped,) = plan([in_namespace("team-b", "web", annotations=no_model)])
    assert (skipped.decision, skipped.namespace) == ("skipped", "team-b")


def test_without_the_service_account_a_calibration_is_skipped_saying_what_to_install() -> None:
    (one,) = plan([in_namespace("team-c", "web")])
    skipped = without_service_account(one, "team-c", "tfta-calibration")
    assert (skipped.decision, skipped.job, skipped.job_name) == ("skipped", None, None)
    reason = plan_reason_text(skipped.reason)
    assert "namespace team-c has no ServiceAccount tfta-calibration" in reason
    assert "planner.namespaces" in reason and "deploy/components/fleet" in reason
    assert plan_reason_text(one.reason) in reason  # what it would have done
    # nothing to start: to_create leaves it alone
    start, _ = to_create([skipped], [], max_running=5)
    assert start == []


def test_without_the_service_account_other_decisions_stand() -> None:
    web = in_namespace("ml", "web")
    (fits,) = plan([web], [measured_for(web)])
    assert fits.decision == "fits"
    assert without_service_account(fits, "ml", "tfta-calibration") is fits


def test_max_running_is_one_budget_per_pool_across_namespaces() -> None:
    decided: list[Planned] = [
        *plan([in_namespace("team-a", "web")]),
        *plan([in_namespace("team-b", "api")]),
    ]
    start, shown = to_create(decided, [], max_running=1)
    assert [p.namespace for p in start] == ["team-a"]
    assert "waits: 1 calibration(s)" in plan_reason_text(shown[1].reason)
    # a Job running in a third namespace on the same pool holds the budget for both
    (other,) = plan([in_namespace("team-z", "z")])
    assert other.job is not None
    running = planned_job(
        KubeJob.read({**copy.deepcopy(other.job.manifest), "status": {"active": 1}})
    )
    assert running.namespace == "team-z"
    start, _ = to_create(decided, [running], max_running=1)
    assert start == []
    start, _ = to_create(decided, [running], max_running=3)
    assert len(start) == 2

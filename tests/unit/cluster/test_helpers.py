"""The parts of the cluster code that decide without a server: the pod template's annotations,
the labels cleanup trusts, the writer's guard over the stored advice, the
outcome of a Job create, and the messages that name the Role rule a refusal lacks.

The writer and the restarter are built on a real client that never sends anything here.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from advisor import __version__
from advisor.cluster.cleanup import ADVICE_LABELS, foreign_labels
from advisor.cluster.config import Connection
from advisor.cluster.http import Response
from advisor.cluster.jobs import CreateOutcome
from advisor.cluster.planner_role import rule
from advisor.cluster.restart import Restarted, WorkloadRestarter, _template_annotations
from advisor.cluster.writer import ConfigMapWriter
from advisor.errors import (
    AdviceKeptError,
    ClusterRejectedError,
    ForbiddenError,
    InvalidAdviceError,
    RestartTargetError,
)
from advisor.keys import ADVICE_HASH_ANNOTATION, ADVICE_SELECTOR
from advisor.models import WorkloadKind, WorkloadRef
from advisor.recommend import build_recommendation, parse_configmap, render_configmap
from testkit.fakeapi.samples import FIXED_NOW, calibration_result

#: a real client pointed nowhere: nothing in this file sends a request
CONNECTION = Connection(client.ApiClient(client.Configuration()), "https://k8s.example", "test")


# --------------------------------------------------------------------------------------------------
# the restarter


@pytest.mark.parametrize(
    ("obj", "annotations"),
    [
        ({"spec": {"template": {"metadata": {"annotations": {"a": "1"}}}}}, {"a": "1"}),
        (None, {}),
        ({}, {}),
        ({"spec": None}, {}),
        ({"spec": {"template": "junk"}}, {}),
        ({"spec": {"template": {"metadata": {"annotations": ["a"]}}}}, {}),
        ({"metadata": {"annotations": {"a": "1"}}}, {}),  # the workload's own: not the template's
    ],
)
def test_template_annotations_of_a_workload(obj: Any, annotations: dict[str, Any]) -> None:
    assert _template_annotations(obj) == annotations


def restarter(*names: str) -> WorkloadRestarter:
    return WorkloadRestarter(CONNECTION, "ml", [WorkloadRef.parse(n) for n in names])


def test_progress_says_which_were_restarted_and_which_not() -> None:
    found = restarter("deploy/a", "sts/b", "deploy/c")
    assert found.progress() == (
        "restarted: none; not restarted: deployment/a, statefulset/b, deployment/c"
    )
    found.done = [Restarted(WorkloadRef(WorkloadKind.DEPLOYMENT, "a"), rolled=True, generation=4)]
    assert found.progress() == "restarted: deployment/a; not restarted: statefulset/b, deployment/c"
    found.done += [Restarted(r, rolled=False, generation=None) for r in found.workloads[1:]]
    assert found.progress().endswith("; not restarted: none")


def test_a_missing_or_forbidden_workload_before_the_sweep_is_a_restart_target_error() -> None:
    found = restarter("deploy/web")
    (ref,) = found.workloads
    gone = found._target_error("get", ref, Response(404, {"details": {"kind": "deployments"}}, {}))
    assert isinstance(gone, RestartTargetError) and gone.exit_code == 14
    assert str(gone) == "restart deployment/web: no deployment named web in namespace ml"
    denied = found._target_error("patch", ref, Response(403, None, {}), dry_run=True)
    assert isinstance(denied, RestartTargetError)
    assert str(denied).startswith(
        "restart deployment/web: forbidden: cannot patch deployments/web in namespace ml; "
        "the Role bound to the advisor's ServiceAccount must allow verbs get, patch on "
        "deployments (apiGroup apps) with resourceNames [web]"
    )
    # a missing namespace is no fault of the workload's name
    no_ns = found._target_error("get", ref, Response(404, {"details": {"kind": "namespaces"}}, {}))
    assert type(no_ns) is ClusterRejectedError
    assert str(no_ns) == "get deployments/web in namespace ml: namespace ml not found"


def test_the_hash_annotation_is_under_the_projects_prefix() -> None:
    assert ADVICE_HASH_ANNOTATION == "tf-thread-advisor.io/advice-hash"


# --------------------------------------------------------------------------------------------------
# what cleanup deletes, what status lists


def test_advice_labels_are_both_labels_the_renderer_sets() -> None:
    rec = build_recommendation(calibration_result(), advisor_version=__version__, now=FIXED_NOW)
    rendered = render_configmap(rec, "tf-advice", "ml")
    assert foreign_labels(rendered) is None
    labels = rendered["metadata"]["labels"]
    assert ADVICE_LABELS.items() <= labels.items()
    # status's selector holds exactly the labels every rendered advice carries
    for pair in ADVICE_SELECTOR.split(","):
        key, value = pair.split("=")
        assert labels[key] == value


@pytest.mark.parametrize(
    ("labels", "why"),
    [
        (None, "label app.kubernetes.io/name is missing"),
        (
            {"app.kubernetes.io/name": "tf-thread-advisor"},
            "app.kubernetes.io/managed-by is missing",
        ),
        (
            {"app.kubernetes.io/name": "web", "app.kubernetes.io/managed-by": "tf-thread-advisor"},
            "label app.kubernetes.io/name is 'web'",
        ),
        (
            {"app.kubernetes.io/name": "tf-thread-advisor", "app.kubernetes.io/managed-by": "Helm"},
            "label app.kubernetes.io/managed-by is 'Helm'",
        ),
    ],
)
def test_foreign_labels_say_which_label_is_wrong(labels: Any, why: str) -> None:
    found = foreign_labels({"metadata": {"labels": labels}})
    assert found is not None and found.startswith("not written by tf-thread-advisor (")
    assert found.endswith(f"{why})")


def test_an_object_without_metadata_is_foreign() -> None:
    assert foreign_labels({}) == foreign_labels({"metadata": {"labels": None}}) is not None


# --------------------------------------------------------------------------------------------------
# the writer's guard


def stored(budget_s: float) -> dict[str, Any]:
    rec = build_recommendation(
        calibration_result(budget_s=budget_s), advisor_version=__version__, now=FIXED_NOW
    )
    return render_configmap(rec, "tf-advice", "ml")


def writer() -> ConfigMapWriter:
    return ConfigMapWriter(CONNECTION, "tf-advice", "ml")


@pytest.mark.parametrize("budget_s", [120.0, 300.0])
def test_the_guard_lets_a_run_with_as_big_a_budget_replace_the_advice(budget_s: float) -> None:
    writer()._guard(stored(120.0), budget_s=budget_s, force=False)
    writer()._guard(None, budget_s=1.0, force=False)  # nothing stored


def test_the_guard_keeps_advice_measured_longer_unless_forced() -> None:
    with pytest.raises(AdviceKeptError) as caught:
        writer()._guard(stored(300.0), budget_s=120.0, force=False)
    assert caught.value.exit_code == 13
    assert str(caught.value) == (
        "configmaps/tf-advice in namespace ml holds advice measured with a 300s budget, more than "
        "this run's 120s; kept it (pass force=True to replace it)"
    )
    assert caught.value.spelled(lambda opt: "--force").endswith("(pass --force to replace it)")
    writer()._guard(stored(300.0), budget_s=120.0, force=True)


def test_the_guard_keeps_a_configmap_that_is_not_ours() -> None:
    theirs = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tf-advice"}}
    with pytest.raises(AdviceKeptError, match="was not written by tf-thread-advisor; kept it"):
        writer()._guard(theirs, budget_s=600.0, force=False)
    writer()._guard(theirs, budget_s=600.0, force=True)


def test_the_guard_replaces_our_own_advice_that_no_longer_validates() -> None:
    ours = stored(60.0)
    ours["data"]["TF_NUM_INTRAOP_THREADS"] = "7"  # edited by hand: the hash no longer matches
    with pytest.raises(InvalidAdviceError, match="edited by hand"):
        parse_configmap(ours)
    writer()._guard(ours, budget_s=1.0, force=False)  # ours by its label: replaced


def test_a_refused_dry_run_names_the_writers_role_and_verbs() -> None:
    found = writer()._error("patch", Response(403, None, {}), dry_run=True)
    assert isinstance(found, ForbiddenError)
    assert str(found) == (
        "forbidden: cannot patch configmaps/tf-advice in namespace ml; the Role "
        "tf-thread-advisor (deploy/rbac.yaml) bound to the advisor's ServiceAccount must allow "
        "verbs get, patch, create on configmaps with resourceNames [tf-advice] in ml"
    )
    rejected = writer()._error("patch", Response(422, {"message": "bad"}, {}), dry_run=True)
    assert str(rejected) == (
        "patch configmaps/tf-advice in namespace ml (dry run): refused with HTTP 422: bad"
    )


# --------------------------------------------------------------------------------------------------
# plan's Jobs


@pytest.mark.parametrize(
    ("action", "created", "exists"),
    [("created", True, False), ("would create", False, False), ("exists", False, True)],
)
def test_create_outcome_says_created_only_when_stored(
    action: Any, created: bool, exists: bool
) -> None:
    outcome = CreateOutcome("tfta-web", action)
    assert (outcome.created, outcome.already_exists, outcome.job) == (created, exists, None)


def test_a_planner_rule_names_the_group_and_where_the_role_is() -> None:
    assert rule("create", "jobs", "batch") == (
        "plan needs a Role allowing create jobs (batch); deploy/components/fleet binds one to "
        "the ServiceAccount tf-thread-advisor-planner"
    )
    assert rule("list", "configmaps", "").startswith(
        "plan needs a Role allowing list configmaps (core);"
    )

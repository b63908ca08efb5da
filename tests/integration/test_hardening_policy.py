"""The retry contract: README's exit-code table (with its retry column), each error class's
classification in advisor/errors.py and the podFailurePolicy of deploy/job.yaml, of the Helm chart
and of the planner's CronJob must say the same thing.

The chart's policy is read from its template text (no helm needed); test_chart.py checks the
rendered chart against tests/support/k8s_checks.py, which this file also holds to the README.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

import advisor.cli  # noqa: F401  (every module that could define an error class, loaded)
from advisor import errors
from tests.support import REPO, k8s_checks

HELPERS = REPO / "charts" / "tf-thread-advisor" / "templates" / "_helpers.tpl"


def readme_retry() -> dict[int, bool | None]:
    """code -> retry? (None for the blank cell of code 0), from README's table."""
    section = (REPO / "README.md").read_text().split("## Exit codes", 1)[1]
    rows = re.findall(
        r"^\|\s*(\d+)\s*\|\s*([a-z]+)\s*\|[^|]*\|\s*(yes|no|)\s*\|\s*$", section, flags=re.M
    )
    table = {int(code): {"yes": True, "no": False, "": None}[retry] for code, _, retry in rows}
    kinds = {kind: int(code) for code, kind, _ in rows}
    assert kinds == errors.EXIT_CODES, "every exit code has exactly one row with a retry cell"
    return table


def exit_code_rules(policy: dict[str, Any]) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for rule in policy["rules"]:
        codes = rule.get("onExitCodes")
        if codes:
            assert (codes["operator"], codes.get("containerName")) == ("In", "advisor")
            found.setdefault(rule["action"], set()).update(codes["values"])
    return found


def job_policy() -> dict[str, Any]:
    job = yaml.safe_load((REPO / "deploy" / "job.yaml").read_text())
    policy: dict[str, Any] = job["spec"]["podFailurePolicy"]
    return policy


def chart_policy() -> dict[str, Any]:
    """The podFailurePolicy block of the chart's shared Job settings (plain YAML, no templating
    inside it), as the Job and the CronJob render it."""
    text = HELPERS.read_text()
    block = text.split('{{- define "tfta.jobSpecSettings" -}}', 1)[1].split("{{- end -}}", 1)[0]
    assert "{{" not in block.split("podFailurePolicy:", 1)[1], "the policy is not templated"
    policy: dict[str, Any] = yaml.safe_load(
        "podFailurePolicy:" + block.split("podFailurePolicy:", 1)[1]
    )
    return policy["podFailurePolicy"]


POLICIES = {"deploy/job.yaml": job_policy, "chart": chart_policy}


@pytest.mark.parametrize("where", POLICIES)
def test_the_job_fails_at_once_exactly_on_the_codes_the_readme_says_not_to_retry(
    where: str,
) -> None:
    retry = readme_retry()
    rules = exit_code_rules(POLICIES[where]())
    assert rules.get("FailJob") == {code for code, again in retry.items() if again is False}


@pytest.mark.parametrize("where", POLICIES)
def test_retryable_codes_are_counted_and_interrupted_reaches_the_disruption_rule(
    where: str,
) -> None:
    retry = readme_retry()
    policy = POLICIES[where]()
    rules = exit_code_rules(policy)
    interrupted = errors.InterruptedRunError.exit_code
    assert rules.get("Count") == {c for c, again in retry.items() if again} - {interrupted}
    # A drained node's SIGTERM ends the run with 130: no exit-code rule may take it before the
    # DisruptionTarget rule does (rules match in order), and that rule must ignore it.
    assert all(interrupted not in codes for codes in rules.values())
    assert any(
        rule["action"] == "Ignore"
        and {"type": "DisruptionTarget", "status": "True"} in rule.get("onPodConditions", [])
        for rule in policy["rules"]
    )


def test_retried_codes_can_be_retried() -> None:
    job = yaml.safe_load((REPO / "deploy" / "job.yaml").read_text())
    assert job["spec"]["backoffLimit"] >= 1
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    values = yaml.safe_load((REPO / "charts" / "tf-thread-advisor" / "values.yaml").read_text())
    assert values["job"]["backoffLimit"] >= 1


def test_the_shared_manifest_checks_hold_the_readme_line() -> None:
    # test_manifests.py and test_chart.py (rendered chart) check against these
    retry = readme_retry()
    assert {c for c, again in retry.items() if again is False} == k8s_checks.NO_RETRY_CODES
    assert retry[k8s_checks.RETRY_CODE] is True


def test_every_error_class_exits_with_its_documented_code() -> None:
    retry = readme_retry()
    for cls in vars(errors).values():
        if isinstance(cls, type) and issubclass(cls, errors.AdvisorError):
            assert cls.exit_code in retry, cls
            assert errors.EXIT_CODES[cls.kind] == cls.exit_code


def all_error_classes() -> list[type[errors.AdvisorError]]:
    """Every subclass of AdvisorError loaded, wherever it is defined."""
    found: list[type[errors.AdvisorError]] = []
    pending = [errors.AdvisorError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda cls: cls.__name__)
def test_every_error_class_is_classified(cls: type[errors.AdvisorError]) -> None:
    """A class with an exit code of its own says itself what the Jobs do with it (a new one
    would otherwise inherit its parent's retry); one that shares a code shares the rest."""
    own = vars(cls)
    if "exit_code" in own or cls is errors.AdvisorError:
        assert "retry" in own, f"{cls.__name__} does not say whether the Job retries it"
        assert "planner_fails" in own, f"{cls.__name__} does not say what the planner does"
    assert isinstance(cls.retry, errors.Retry)
    assert isinstance(cls.planner_fails, bool)
    assert cls in errors.error_classes(), "defined in advisor/errors.py, so the policy has it"
    (same,) = {
        (c.kind, c.retry, c.planner_fails)
        for c in all_error_classes()
        if c.exit_code == cls.exit_code
    }
    assert same == (cls.kind, cls.retry, cls.planner_fails)


def test_the_readme_retry_column_is_each_class_s_classification() -> None:
    retry = {
        code: {True: "yes", False: "no", None: ""}[again] for code, again in readme_retry().items()
    }
    assert retry == {
        errors.EXIT_OK: "",
        **{cls.exit_code: cls.retry.readme for cls in errors.error_classes()},
    }


def planner_policies() -> dict[str, dict[str, Any]]:
    """The podFailurePolicy of the planner's CronJob: the kustomize component's, and the chart
    template's (plain YAML inside, as the Job settings' are)."""
    component = yaml.safe_load(
        (REPO / "deploy" / "components" / "fleet" / "planner.yaml").read_text()
    )
    text = (HELPERS.parent / "planner-cronjob.yaml").read_text()
    block = text.split("podFailurePolicy:", 1)[1].split("template:", 1)[0]
    assert "{{" not in block, "the planner's policy is not templated"
    return {
        "deploy/components/fleet": component["spec"]["jobTemplate"]["spec"]["podFailurePolicy"],
        "chart": yaml.safe_load("podFailurePolicy:" + block)["podFailurePolicy"],
    }


@pytest.mark.parametrize("where", ["deploy/components/fleet", "chart"])
def test_the_planner_fails_at_once_where_a_second_plan_would_decide_the_same(where: str) -> None:
    """plan's own codes: a bug, bad flags, a rule the Role lacks, a refusal, a failed decision
    (17, plan's, never run's) and --max-reverts reached (19: a retry would revert more) are not
    retried; an unreachable API server is."""
    policy = planner_policies()[where]
    (fail_job,) = [r for r in policy["rules"] if r["action"] == "FailJob"]
    assert fail_job["onExitCodes"]["containerName"] == "planner"
    assert fail_job["onExitCodes"]["values"] == errors.planner_fail_codes()
    assert set(errors.planner_fail_codes()) == {
        errors.AdvisorError.exit_code,
        errors.UsageError.exit_code,
        errors.ForbiddenError.exit_code,
        errors.ClusterRejectedError.exit_code,
        errors.DecisionsFailedError.exit_code,
        errors.RevertsLimitedError.exit_code,
    }
    # the run's Job policy never sees plan's codes
    run_codes = set().union(*exit_code_rules(job_policy()).values())
    assert errors.DecisionsFailedError.exit_code not in run_codes
    assert errors.RevertsLimitedError.exit_code not in run_codes

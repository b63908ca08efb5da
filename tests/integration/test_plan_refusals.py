"""``plan`` in a namespace that says no, through the real CLI against the strict fake API server
(the scene of test_plan.py: opted-in Deployments ``a`` and ``b`` need a calibration, ``c`` fits).

What the API server refuses that is not the planner's Role (a ResourceQuota, an admission
webhook, a ValidatingAdmissionPolicy) is that workload's ``failed`` decision with the server's own
message, and the plan goes on; a rule the planner's Role lacks stops it (exit 8) after printing
what it created. Any failed decision exits 17. ``--dry-run=server`` asks the server without
creating anything; ``--apply`` records Events on the workloads; ``--retry-failed`` deletes a failed
Job and creates it again.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from testkit.fakeapi.admission import PolicyDenial, WebhookDenial
from testkit.fakeapi.rbac import Rule, without_verb
from testkit.fakeapi.server import FakeApiServer
from tests.integration.test_plan import NS, PLANNER, api, created_jobs, plan

__all__ = ["api"]  # the scene's server, as test_plan.py sets it up

FAILED = 17
PSA = (
    'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
    '(container "copy-model" must set securityContext.allowPrivilegeEscalation=false)'
)


def run(
    capsys: pytest.CaptureFixture[str], api: FakeApiServer, *argv: str
) -> tuple[int, dict[str, dict[str, Any]], str]:
    """(exit code, the decisions by workload, stderr) of ``plan --format json``."""
    code, out, err = plan(capsys, api, "--format", "json", *argv)
    assert "Traceback" not in err
    rows = {row["workload"]: row for row in json.loads(out)["decisions"]}
    return code, rows, err


def of(workload: str) -> Any:
    """A webhook's ``applies``: the Jobs of ``workload`` (deployment/NAME)."""
    return lambda job: job["metadata"]["annotations"]["tf-thread-advisor.io/workload"] == workload


def stored_jobs(api: FakeApiServer) -> set[str]:
    return {j["metadata"]["annotations"]["tf-thread-advisor.io/workload"] for j in api.jobs()}


def job_of(api: FakeApiServer, workload: str) -> str:
    """The name of the Job the plan created for ``workload``."""
    (name,) = {
        j["metadata"]["name"]
        for j in created_jobs(api)
        if j["metadata"]["annotations"]["tf-thread-advisor.io/workload"] == workload
    }
    return name


def events_by_workload(api: FakeApiServer) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for event in api.events():
        involved = event["involvedObject"]
        found.setdefault(f"{involved['kind'].lower()}/{involved['name']}", []).append(event)
    return found


# --------------------------------------------------------------------------------------------------
# refusals are decisions


def test_an_exceeded_job_quota_fails_that_decision_and_the_plan_goes_on(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add_job_quota(NS, 1, name="batch-quota")
    code, rows, err = run(capsys, api, "--apply")
    assert code == FAILED, err
    # a (first by name) was created; b met the quota, with the server's own words
    assert rows["deployment/a"]["decision"] == "calibrate"
    assert "created Job" in rows["deployment/a"]["reason"]
    assert rows["deployment/b"]["decision"] == "failed"
    assert (
        f'jobs.batch "{rows["deployment/b"]["job"]}" is forbidden: exceeded quota: batch-quota, '
        "requested: count/jobs.batch=1, used: count/jobs.batch=1, limited: count/jobs.batch=1"
    ) in rows["deployment/b"]["reason"]
    assert "HTTP 403" in rows["deployment/b"]["reason"]
    assert rows["deployment/c"]["decision"] == "fits"
    assert stored_jobs(api) == {"deployment/a"}
    assert "1 decision(s) failed: deployment/b (server)" in err
    assert "Role" not in err


@pytest.mark.parametrize(
    ("denial", "status", "says"),
    [
        (
            WebhookDenial(
                "validation.gatekeeper.sh",
                '[k8srequiredlabels] you must provide labels: {"owner"}',
                code=403,
                reason="Forbidden",
                applies=of("deployment/b"),
            ),
            403,
            'admission webhook "validation.gatekeeper.sh" denied the request: '
            '[k8srequiredlabels] you must provide labels: {"owner"}',
        ),
        (
            # Kyverno answers without a code: the API server makes it 400, and gives no reason
            WebhookDenial(
                "validate.kyverno.svc-fail",
                "resource Job/ml/x was blocked due to the following policies require-team: "
                "check-team: 'validation error: label team is required'",
                code=0,
                applies=of("deployment/b"),
            ),
            400,
            'admission webhook "validate.kyverno.svc-fail" denied the request: resource Job',
        ),
        (
            PolicyDenial(
                "jobs-need-deadline",
                "jobs-need-deadline-binding",
                "failed expression: object.spec.activeDeadlineSeconds <= 3600",
                applies=of("deployment/b"),
            ),
            422,
            "ValidatingAdmissionPolicy 'jobs-need-deadline' with binding "
            "'jobs-need-deadline-binding' denied request: failed expression",
        ),
    ],
    ids=["gatekeeper-403", "kyverno-400", "policy-422"],
)
def test_an_admission_denial_fails_that_decision_with_the_servers_message(
    api: FakeApiServer,
    capsys: pytest.CaptureFixture[str],
    denial: WebhookDenial | PolicyDenial,
    status: int,
    says: str,
) -> None:
    api.deny_jobs(denial)
    code, rows, err = run(capsys, api, "--apply")
    assert code == FAILED, err
    assert rows["deployment/b"]["decision"] == "failed"
    assert f"refused with HTTP {status}: {says}" in rows["deployment/b"]["reason"]
    assert rows["deployment/a"]["decision"] == "calibrate"
    assert stored_jobs(api) == {"deployment/a"}
    # the next plan finds a's Job (pending) and is refused b's again: still failed, still 17
    code, rows, _ = run(capsys, api, "--apply")
    assert (code, rows["deployment/a"]["decision"], rows["deployment/b"]["decision"]) == (
        FAILED,
        "pending",
        "failed",
    )


def revoke_create_after_the_first_job(api: FakeApiServer) -> None:
    """The second Job's create finds the planner's Role without the rule (an admin changed it
    meanwhile); Events stay allowed."""
    writes: list[str] = []

    def hook(server: FakeApiServer) -> None:
        writes.append("write")
        if len(writes) == 2:
            server.rules = [*without_verb(PLANNER, "create"), Rule(("",), ("events",), ("create",))]

    api.before_write = hook


def test_a_rule_the_role_lacks_midway_stops_with_8_and_the_jobs_created_are_reported(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    revoke_create_after_the_first_job(api)
    code, rows, err = run(capsys, api, "--apply")
    assert code == 8
    assert "cannot create jobs in namespace ml" in err and "create jobs (batch)" in err
    assert rows["deployment/a"]["decision"] == "calibrate"
    assert "created Job" in rows["deployment/a"]["reason"]
    assert rows["deployment/b"]["decision"] == "calibrate"
    assert "not created: the plan stopped" in rows["deployment/b"]["reason"]
    assert stored_jobs(api) == {"deployment/a"}
    # what it did create is told on the workload too
    assert [e["reason"] for e in api.events()] == ["CalibrationStarted"]


def test_an_api_server_gone_midway_stops_with_7_and_the_jobs_created_are_reported(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    writes: list[str] = []

    def unavailable_after_the_first_job(server: FakeApiServer) -> None:
        writes.append("write")
        if len(writes) == 1:
            server.inject(503, times=10_000)  # every request after this one

    api.before_write = unavailable_after_the_first_job
    code, rows, err = run(capsys, api, "--apply", "--cluster-timeout", "1")
    assert code == 7, err
    assert "created Job" in rows["deployment/a"]["reason"]
    assert "not created: the plan stopped" in rows["deployment/b"]["reason"]
    assert stored_jobs(api) == {"deployment/a"}
    assert err.count("no Events recorded") == 1  # one try, not one per Event


def test_print_jobs_prints_the_jobs_created_before_the_stop(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    revoke_create_after_the_first_job(api)
    code, out, err = plan(capsys, api, "--apply", "--print-jobs")
    assert code == 8, err
    (printed,) = [doc for doc in yaml.safe_load_all(out) if doc]
    assert printed["metadata"]["annotations"]["tf-thread-advisor.io/workload"] == "deployment/a"
    assert stored_jobs(api) == {"deployment/a"}


def test_a_failed_calibration_exits_17_without_apply_too(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, api, "--apply")[0] == 0
    api.set_job_condition(NS, job_of(api, "deployment/a"), type="Failed")
    code, rows, err = run(capsys, api)
    assert code == FAILED
    assert rows["deployment/a"]["decision"] == "failed"
    assert set(rows) == {"deployment/a", "deployment/b", "deployment/c"}  # all printed first
    assert "1 decision(s) failed: deployment/a (server)" in err
    code, table, _ = plan(capsys, api)
    assert code == FAILED and "deployment/a" in table and "deployment/c" in table


# --------------------------------------------------------------------------------------------------
# --dry-run=server


def test_a_server_dry_run_shows_refusals_and_warnings_and_creates_nothing(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.warn_pod_security(NS, PSA)
    api.deny_jobs(WebhookDenial("policy.example.com", "no", applies=of("deployment/b")))
    code, rows, err = run(capsys, api, "--dry-run=server")
    assert code == FAILED, err
    a, b = rows["deployment/a"], rows["deployment/b"]
    assert a["decision"] == "calibrate"
    assert f"the API server would create Job {a['job']}" in a["reason"]
    assert f"the API server warns: {PSA}" in a["reason"]
    assert b["decision"] == "failed"
    assert "(dry run): refused with HTTP 403" in b["reason"]
    assert 'admission webhook "policy.example.com" denied the request: no' in b["reason"]
    posts = [r for r in api.requests if r.method == "POST"]
    assert len(posts) == 2 and all(r.query.get("dryRun") == "All" for r in posts)
    assert api.jobs() == [] and api.events() == []
    code, table, _ = plan(capsys, api, "--dry-run=server")
    assert code == FAILED and "nothing was created" in table


def test_a_server_dry_run_counts_the_quota_and_changes_no_usage(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add_job_quota(NS, 1)
    code, rows, err = run(capsys, api, "--dry-run=server")
    # each dry run is checked against the Jobs there (none), and stores none: both would pass
    assert code == 0, err
    assert {rows[w]["decision"] for w in ("deployment/a", "deployment/b")} == {"calibrate"}
    assert api.jobs() == []
    api.add_job_quota(NS, 0, name="none-at-all")
    code, rows, _ = run(capsys, api, "--dry-run=server")
    assert code == FAILED
    assert "exceeded quota: none-at-all" in rows["deployment/a"]["reason"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--apply", "--dry-run=server"], "--dry-run=server previews what --apply does"),
        (["--apply", "--dry-run=client"], "--dry-run=client previews what --apply does"),
        (["--dry-run=serverr"], "--dry-run"),
    ],
)
def test_dry_run_with_apply_is_a_usage_error(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, out, err = plan(capsys, api, *argv)
    assert (code, out) == (2, "")
    assert says in err
    assert not api.requests


# --------------------------------------------------------------------------------------------------
# Events


def test_apply_records_an_event_on_each_workload_it_acted_on(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.deny_jobs(WebhookDenial("policy.example.com", "no GPUs here", applies=of("deployment/b")))
    assert run(capsys, api, "--apply")[0] == FAILED
    events = events_by_workload(api)
    assert set(events) == {"deployment/a", "deployment/b"}  # c fits: nothing to tell
    (started,) = events["deployment/a"]
    (refused,) = events["deployment/b"]
    for event, name in ((started, "a"), (refused, "b")):
        stored = api.workload("deployments", NS, name)
        assert stored is not None
        assert event["involvedObject"] == {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": name,
            "namespace": NS,
            "uid": stored["metadata"]["uid"],
        }
        assert event["metadata"]["namespace"] == NS
        assert event["source"] == {"component": "tf-thread-advisor"}
        assert event["count"] == 1 and event["firstTimestamp"] == event["lastTimestamp"]
    assert (started["reason"], started["type"]) == ("CalibrationStarted", "Normal")
    assert "created Job" in started["message"] and "(container server)" in started["message"]
    assert (refused["reason"], refused["type"]) == ("CalibrationRefused", "Warning")
    assert "no GPUs here" in refused["message"]
    # no Events without --apply
    before = len(api.events())
    run(capsys, api)
    assert len(api.events()) == before


def test_a_failed_calibration_is_told_once_per_failed_job(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, api, "--apply")[0] == 0
    job_b = job_of(api, "deployment/b")
    api.set_job_condition(NS, job_b, type="Failed", reason="DeadlineExceeded")
    for _ in range(3):  # the nightly plans that see the failed Job
        assert run(capsys, api, "--apply")[0] == FAILED
    failed = [e for e in events_by_workload(api)["deployment/b"] if e["type"] == "Warning"]
    assert len(failed) == 1
    assert failed[0]["reason"] == "CalibrationFailed"
    assert failed[0]["metadata"]["name"] == f"{job_b}.failed"
    assert f"calibration Job {job_b} failed: DeadlineExceeded" in failed[0]["message"]


def test_an_event_the_role_may_not_write_is_a_warning_line_not_a_failed_plan(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.rules = [r for r in PLANNER if "events" not in r.resources]
    code, _, err = run(capsys, api, "--apply")
    assert code == 0, err
    assert stored_jobs(api) == {"deployment/a", "deployment/b"}
    assert "no Events recorded" in err and "create events (core)" in err
    assert err.count("no Events recorded") == 1
    assert api.events() == []
    # and --no-events does not try
    api.rules = PLANNER
    for name in ("a", "b"):
        api.delete_workload("deployments", NS, name, propagation="Background")
    requests = len(api.requests)
    run(capsys, api, "--apply", "--no-events")
    assert not [r for r in api.requests[requests:] if r.path.endswith("/events")]


# --------------------------------------------------------------------------------------------------
# --retry-failed


def test_retry_failed_deletes_the_failed_job_and_creates_it_again(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, api, "--apply")[0] == 0
    job_b = job_of(api, "deployment/b")
    failed_uid = api.set_job_condition(NS, job_b, type="Failed")["metadata"]["uid"]
    # a preview says what it would do, and deletes nothing
    code, rows, _ = run(capsys, api, "--retry-failed")
    assert (code, rows["deployment/b"]["decision"]) == (0, "calibrate")
    assert f"retried: Job {job_b} is deleted and created again" in rows["deployment/b"]["reason"]
    assert not [r for r in api.requests if r.method == "DELETE"]
    # the planner's Role without delete: stops, naming the rule
    code, _, err = run(capsys, api, "--apply", "--retry-failed")
    assert code == 8 and "delete jobs (batch)" in err
    api.rules = [*PLANNER, Rule(("batch",), ("jobs",), ("delete",))]
    code, rows, err = run(capsys, api, "--apply", "--retry-failed")
    assert code == 0, err
    assert rows["deployment/b"]["decision"] == "calibrate"
    (delete,) = [r for r in api.requests if r.method == "DELETE" and r.status == 200]
    assert delete.path.endswith(f"/jobs/{job_b}")
    assert delete.query.get("propagationPolicy") == "Background"
    again = api.job(NS, job_b)
    assert again is not None and again["metadata"]["uid"] != failed_uid
    assert again["status"] == {}  # a new Job, not the failed one
    started = [
        e for e in events_by_workload(api)["deployment/b"] if e["reason"] != "CalibrationFailed"
    ]
    assert len(started) == 2  # the first Job and the retried one


def test_without_retry_failed_a_failed_job_blocks_its_spec(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.rules = [*PLANNER, Rule(("batch",), ("jobs",), ("delete",))]
    assert run(capsys, api, "--apply")[0] == 0
    job_a = job_of(api, "deployment/a")
    api.set_job_condition(NS, job_a, type="Failed")
    code, rows, _ = run(capsys, api, "--apply")
    assert (code, rows["deployment/a"]["decision"]) == (FAILED, "failed")
    assert not [r for r in api.requests if r.method == "DELETE"]

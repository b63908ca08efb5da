"""Admission and Events in the strict fake API server, over real HTTP with the official client:
a ResourceQuota on count/jobs.batch, admission webhooks' and policies' denials, Pod Security
warnings, core/v1 Events. What plan's tests rely on must be what a real API server answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from advisor.cluster.rest import Resource, send
from testkit.fakeapi.admission import PolicyDenial, WebhookDenial
from testkit.fakeapi.jobs import job
from testkit.fakeapi.rbac import Rule
from testkit.fakeapi.server import FakeApiServer
from tests.integration.test_fakeapi_jobs import raw

NS = "ml"
RULES = [Rule(("batch",), ("jobs",), ("*",)), Rule(("",), ("events",), ("create", "list"))]
PSA = 'would violate PodSecurity "restricted:latest": runAsNonRoot != true'


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(
        tmp_path, namespaces=(NS, "other"), rules=RULES, cluster_rules=RULES
    ) as server:
        yield server


def batch(api: FakeApiServer) -> client.BatchV1Api:
    return client.BatchV1Api(config.new_client_from_config(str(api.kubeconfig)))


def core(api: FakeApiServer) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(str(api.kubeconfig)))


def create(api: FakeApiServer, name: str, **kw: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
    return raw(batch(api).create_namespaced_job, NS, job(NS, name), **kw)


# --------------------------------------------------------------------------------------------------
# ResourceQuota


def test_a_job_quota_counts_the_jobs_there_and_a_dry_run_changes_no_usage(
    api: FakeApiServer,
) -> None:
    api.put_job(job(NS, "seeded"))  # a Job someone else created counts
    api.add_job_quota(NS, 2, name="jobs")
    assert create(api, "one", dry_run="All")[0] == 201
    assert create(api, "two", dry_run="All")[0] == 201  # the dry run before stored nothing
    assert create(api, "one")[0] == 201
    status, body, _ = create(api, "three", dry_run="All")
    assert status == 403
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'jobs.batch "three" is forbidden: exceeded quota: jobs, requested: '
        "count/jobs.batch=1, used: count/jobs.batch=2, limited: count/jobs.batch=2",
        "reason": "Forbidden",
        "details": {"name": "three", "group": "batch", "kind": "jobs"},
        "code": 403,
    }
    assert {j["metadata"]["name"] for j in api.jobs()} == {"seeded", "one"}
    # in another namespace the quota does not apply
    assert raw(batch(api).create_namespaced_job, "other", job("other", "x"))[0] == 201


def test_validation_answers_before_admission_and_storage_after_it(api: FakeApiServer) -> None:
    api.add_job_quota(NS, 0)
    invalid = job(NS, "bad")
    invalid["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert raw(batch(api).create_namespaced_job, NS, invalid)[0] == 422
    api.put_job(job(NS, "taken"))
    # a name in use meets the quota first: storage is the last step
    assert create(api, "taken")[0] == 403


# --------------------------------------------------------------------------------------------------
# webhooks and policies


def test_a_webhook_denial_is_wrapped_as_the_api_server_wraps_it(api: FakeApiServer) -> None:
    api.deny_jobs(
        WebhookDenial(
            "validation.gatekeeper.sh",
            "[k8srequiredlabels] you must provide labels",
            code=403,
            reason="Forbidden",
            applies=lambda obj: obj["metadata"]["name"] == "denied",
        )
    )
    api.deny_jobs(WebhookDenial("kyverno", "blocked", code=200))  # a code below 400: 400
    status, body, _ = create(api, "denied")
    assert (status, body["reason"], body["code"]) == (403, "Forbidden", 403)
    assert body["message"] == (
        'admission webhook "validation.gatekeeper.sh" denied the request: '
        "[k8srequiredlabels] you must provide labels"
    )
    status, body, _ = create(api, "other-job", dry_run="All")
    assert status == 400 and "reason" not in body  # the webhook gave none
    assert body["message"] == 'admission webhook "kyverno" denied the request: blocked'
    assert api.jobs() == []


def test_a_policy_denial_is_422_invalid_in_the_servers_words(api: FakeApiServer) -> None:
    api.deny_jobs(PolicyDenial("p", "p-binding", "failed expression: false"))
    status, body, _ = create(api, "x")
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        "ValidatingAdmissionPolicy 'p' with binding 'p-binding' denied request: "
        "failed expression: false"
    )


def test_pod_security_warns_on_a_job_created_or_refused(api: FakeApiServer) -> None:
    api.warn_pod_security(NS, PSA)
    status, _, headers = create(api, "warned", dry_run="All")
    assert status == 201
    assert (
        headers["Warning"]
        == '299 - "would violate PodSecurity \\"restricted:latest\\": runAsNonRoot != true"'
    )
    api.add_job_quota(NS, 0)
    status, _, headers = create(api, "refused")
    assert status == 403 and "PodSecurity" in headers["Warning"]
    # not in a namespace without the label's warning
    assert "Warning" not in raw(batch(api).create_namespaced_job, "other", job("other", "x"))[2]


# --------------------------------------------------------------------------------------------------
# Events


def event(name: str, namespace: str = NS, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": "Deployment", "name": "web", "namespace": namespace},
        "reason": "CalibrationStarted",
        "message": "created",
        "type": "Normal",
        **extra,
    }


def test_events_are_created_once_by_name_and_listed(api: FakeApiServer) -> None:
    events = core(api)
    status, body, _ = raw(events.create_namespaced_event, NS, event("web.1"))
    assert status == 201 and body["metadata"]["uid"]
    status, body, _ = raw(events.create_namespaced_event, NS, event("web.1"))
    assert (status, body["reason"], body["message"]) == (
        409,
        "AlreadyExists",
        'events "web.1" already exists',
    )
    assert raw(events.create_namespaced_event, NS, event("web.2"), dry_run="All")[0] == 201
    status, body, _ = raw(events.list_namespaced_event, NS)
    assert status == 200 and [e["metadata"]["name"] for e in body["items"]] == ["web.1"]
    assert [e["metadata"]["name"] for e in api.events()] == ["web.1"]


def test_an_event_is_validated_and_authorized_as_a_real_server_does(api: FakeApiServer) -> None:
    events = core(api)
    wrong = event("web.3")
    wrong["involvedObject"]["namespace"] = "other"
    status, body, _ = raw(events.create_namespaced_event, NS, wrong)
    assert (status, body["reason"]) == (422, "Invalid")
    assert (
        'involvedObject.namespace: Invalid value: "other": does not match event.namespace'
        in (body["message"])
    )
    assert raw(events.create_namespaced_event, NS, event("Web_4"))[0] == 422
    # sent as the advisor sends it: unchecked by the client's models
    status, body, _ = raw(
        lambda *args, **kw: send(
            events.api_client,
            "POST",
            Resource("v1", "events").path(NS),
            query={"fieldValidation": "Strict"},
            body=event("web.5", bogus=1),
        )
    )
    assert status == 400 and 'unknown field "bogus"' in body["message"]
    status, body, _ = raw(events.create_namespaced_event, "absent", event("web.6", "absent"))
    assert (status, body["message"]) == (404, 'namespaces "absent" not found')
    api.rules = api.cluster_rules = [RULES[0]]
    status, body, _ = raw(events.create_namespaced_event, NS, event("web.7"))
    assert status == 403
    assert (
        'cannot create resource "events" in API group "" in the namespace "ml"' in body["message"]
    )
    assert api.events() == []

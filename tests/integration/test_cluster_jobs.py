"""The planner's cluster calls (advisor/cluster/plan_lists.py and jobs.py) through the real
kubernetes client, over real HTTP, against the strict fake API server authorizing as the
planner's Role would."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.cluster import RetryPolicy, connect
from advisor.cluster.config import Connection
from advisor.cluster.jobs import CreateOutcome, create_job
from advisor.cluster.plan_lists import list_configmaps, list_jobs, list_workloads
from advisor.errors import ClusterRejectedError, ClusterUnreachableError, ForbiddenError
from testkit.fakeapi.apps import workload
from testkit.fakeapi.jobs import job
from testkit.fakeapi.rbac import role_documents, role_rules
from testkit.fakeapi.server import FakeApiServer, refused_port

NS = "ml"
PLANNER = "tf-thread-advisor-planner"
OPTED_IN = "tf-thread-advisor.io/calibrate=true"
PLANNED = "app.kubernetes.io/component=calibration"
#: the planner's Role as the common brief fixes it
PLANNER_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["apps"],
        "resources": ["deployments", "statefulsets"],
        "verbs": ["get", "list"],
    },
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "create"]},
]


def fast_policy(**kw: Any) -> RetryPolicy:
    defaults: dict[str, Any] = {
        "total_s": 5.0,
        "request_timeout_s": 1.0,
        "base_delay_s": 0.02,
        "max_delay_s": 0.1,
    }
    return RetryPolicy(**{**defaults, **kw})


def planner_server(tmp_path: Path, rules: list[dict[str, Any]] | None = None) -> FakeApiServer:
    docs = role_documents(PLANNER, PLANNER_RULES if rules is None else rules)
    return FakeApiServer(
        tmp_path,
        namespaces=(NS, "other"),
        rules=role_rules(docs, service_account=PLANNER),
        service_account=PLANNER,
    )


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with planner_server(tmp_path) as server:
        yield server


@pytest.fixture
def connection(api: FakeApiServer) -> Connection:
    return connect(api.kubeconfig)


def opted_in(resource: str, name: str, **labels: str) -> dict[str, Any]:
    obj = workload(resource, NS, name)
    obj["metadata"]["labels"] = {"tf-thread-advisor.io/calibrate": "true", **labels}
    return obj


def planned(name: str, **kw: Any) -> dict[str, Any]:
    return job(NS, name, labels={"app.kubernetes.io/component": "calibration"}, **kw)


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objects]


# --------------------------------------------------------------------------------------------------
# success


def test_list_workloads_finds_opted_in_deployments_and_statefulsets_with_their_kind(
    api: FakeApiServer, connection: Connection
) -> None:
    api.put_workload(opted_in("deployments", "web"))
    api.put_workload(opted_in("statefulsets", "db"))
    api.put_workload(workload("deployments", NS, "not-opted-in"))
    api.put_workload(opted_in("daemonsets", "agent"))  # not a kind the planner calibrates
    other = opted_in("deployments", "elsewhere")
    other["metadata"]["namespace"] = "other"
    api.put_workload(other)
    found = list_workloads(connection, NS, OPTED_IN, fast_policy())
    assert [(w["kind"], w["apiVersion"], w["metadata"]["name"]) for w in found] == [
        ("Deployment", "apps/v1", "web"),
        ("StatefulSet", "apps/v1", "db"),
    ]
    stored = api.workload("deployments", NS, "web")
    assert stored is not None and found[0]["spec"] == stored["spec"]
    assert {r.query["labelSelector"] for r in api.requests} == {OPTED_IN}
    assert {r.method for r in api.requests} == {"GET"}


def test_list_configmaps_gives_full_objects_of_the_namespace(
    api: FakeApiServer, connection: Connection
) -> None:
    for ns, name in ((NS, "tf-advice-web"), (NS, "unrelated"), ("other", "tf-advice-x")):
        api.put(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns},
                "data": {"K": name},
            }
        )
    found = list_configmaps(connection, NS, fast_policy())
    assert names(found) == ["tf-advice-web", "unrelated"]
    assert {(c["apiVersion"], c["kind"]) for c in found} == {("v1", "ConfigMap")}
    assert found[0]["data"] == {"K": "tf-advice-web"}  # not metadata only


def test_list_jobs_selects_by_label(api: FakeApiServer, connection: Connection) -> None:
    api.put_job(planned("calib-a"))
    api.put_job(planned("calib-b"))
    api.put_job(job(NS, "someone-elses"))
    found = list_jobs(connection, NS, PLANNED, fast_policy())
    assert names(found) == ["calib-a", "calib-b"]
    assert {(j["apiVersion"], j["kind"]) for j in found} == {("batch/v1", "Job")}


def test_create_job_creates_once_and_a_taken_name_is_already_exists(
    api: FakeApiServer, connection: Connection
) -> None:
    outcome = create_job(connection, NS, planned("calib-web"), policy=fast_policy())
    assert (outcome.action, outcome.created, outcome.already_exists) == ("created", True, False)
    stored = api.job(NS, "calib-web")
    assert stored is not None and outcome.job == stored
    again = create_job(connection, NS, planned("calib-web"), policy=fast_policy())
    assert again == CreateOutcome("calib-web", "exists")
    assert (again.created, again.already_exists) == (False, True)
    assert api.job(NS, "calib-web") == stored
    (post, *_) = [r for r in api.requests if r.method == "POST"]
    assert post.query["fieldValidation"] == "Strict"


def test_a_dry_run_is_checked_by_the_server_and_stores_nothing(
    api: FakeApiServer, connection: Connection
) -> None:
    outcome = create_job(connection, NS, planned("calib-web"), dry_run=True, policy=fast_policy())
    assert (outcome.action, outcome.created) == ("would create", False)
    assert outcome.job is not None and outcome.job["metadata"]["uid"]
    assert api.jobs() == []
    assert [r.query.get("dryRun") for r in api.requests] == ["All"]
    api.put_job(planned("calib-web"))
    taken = create_job(connection, NS, planned("calib-web"), dry_run=True, policy=fast_policy())
    assert taken.already_exists


def test_the_manifest_goes_to_the_server_as_it_is(
    api: FakeApiServer, connection: Connection
) -> None:
    """The client's own models are not the judge: a quantity written as a number (which they
    refuse) is a valid Job; a field no schema knows is refused by the server, by name."""
    manifest = planned("calib-web")
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 2}}
    assert create_job(connection, NS, manifest, policy=fast_policy()).created
    typo = planned("calib-db")
    typo["spec"]["template"]["spec"]["restartPolicyy"] = "Never"
    with pytest.raises(ClusterRejectedError) as info:
        create_job(connection, NS, typo, policy=fast_policy())
    assert str(info.value) == (
        "create jobs/calib-db in namespace ml: refused with HTTP 400: strict decoding error: "
        'unknown field "spec.template.spec.restartPolicyy"'
    )


# --------------------------------------------------------------------------------------------------
# paging


def test_every_list_is_paged(api: FakeApiServer, connection: Connection) -> None:
    for index in range(5):
        api.put_workload(opted_in("deployments", f"web-{index}"))
        api.put_job(planned(f"calib-{index}"))
        api.put(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{index}", "namespace": NS},
            }
        )
    workloads = list_workloads(connection, NS, OPTED_IN, fast_policy(), page_size=2)
    jobs = list_jobs(connection, NS, PLANNED, fast_policy(), page_size=2)
    configmaps = list_configmaps(connection, NS, fast_policy(), page_size=2)
    assert names(workloads) == [f"web-{i}" for i in range(5)]
    assert names(jobs) == [f"calib-{i}" for i in range(5)]
    assert names(configmaps) == [f"cm-{i}" for i in range(5)]
    for path in (
        "/apis/apps/v1/namespaces/ml/deployments",
        "/apis/batch/v1/namespaces/ml/jobs",
        "/api/v1/namespaces/ml/configmaps",
    ):
        pages = [r for r in api.requests if r.path == path]
        assert [r.query.get("limit") for r in pages] == ["2", "2", "2"], path
        assert ["continue" in r.query for r in pages] == [False, True, True], path


# --------------------------------------------------------------------------------------------------
# errors


def _without(resource: str, verb: str) -> list[dict[str, Any]]:
    """The planner's rules with ``verb`` on ``resource`` taken out."""
    rules = []
    for raw in PLANNER_RULES:
        if resource not in raw["resources"]:
            rules.append(raw)
            continue
        others = [r for r in raw["resources"] if r != resource]
        if others:
            rules.append({**raw, "resources": others})
        rules.append(
            {**raw, "resources": [resource], "verbs": [v for v in raw["verbs"] if v != verb]}
        )
    return rules


FORBIDDEN = {
    "list deployments": (
        "deployments",
        "list",
        lambda c: list_workloads(c, NS, OPTED_IN, fast_policy()),
        "forbidden: cannot list deployments.apps in namespace ml; plan needs a Role allowing "
        "list deployments (apps)",
    ),
    "list statefulsets": (
        "statefulsets",
        "list",
        lambda c: list_workloads(c, NS, OPTED_IN, fast_policy()),
        "cannot list statefulsets.apps in namespace ml; plan needs a Role allowing list "
        "statefulsets (apps)",
    ),
    "list configmaps": (
        "configmaps",
        "list",
        lambda c: list_configmaps(c, NS, fast_policy()),
        "cannot list configmaps in namespace ml; plan needs a Role allowing list configmaps (core)",
    ),
    "list jobs": (
        "jobs",
        "list",
        lambda c: list_jobs(c, NS, PLANNED, fast_policy()),
        "cannot list jobs in namespace ml; plan needs a Role allowing list jobs (batch)",
    ),
    "create jobs": (
        "jobs",
        "create",
        lambda c: create_job(c, NS, planned("calib"), policy=fast_policy()),
        "cannot create jobs in namespace ml; plan needs a Role allowing create jobs (batch)",
    ),
    "create jobs (dry run)": (
        "jobs",
        "create",
        lambda c: create_job(c, NS, planned("calib"), dry_run=True, policy=fast_policy()),
        "cannot create jobs in namespace ml; plan needs a Role allowing create jobs (batch)",
    ),
}


@pytest.mark.parametrize("case", sorted(FORBIDDEN))
def test_a_missing_rule_is_forbidden_and_named(tmp_path: Path, case: str) -> None:
    resource, verb, call, expected = FORBIDDEN[case]
    with planner_server(tmp_path, _without(resource, verb)) as api:
        with pytest.raises(ForbiddenError) as info:
            call(connect(api.kubeconfig))
        message = str(info.value)
        assert expected in message
        assert message.endswith(
            "deploy/components/fleet binds one to the ServiceAccount tf-thread-advisor-planner"
        )
        assert "\n" not in message
        assert api.requests[-1].status == 403
        assert api.jobs() == []


def test_the_servers_refusals_are_cluster_rejected_with_its_message(
    api: FakeApiServer, connection: Connection
) -> None:
    invalid = planned("calib-web")
    invalid["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(ClusterRejectedError) as info:
        create_job(connection, NS, invalid, policy=fast_policy())
    assert str(info.value) == (
        'create jobs/calib-web in namespace ml: refused with HTTP 422: Job.batch "calib-web" '
        'is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": supported '
        'values: "OnFailure", "Never"'
    )
    with pytest.raises(
        ClusterRejectedError, match=r"refused with HTTP 422: .*uid must not be empty"
    ):
        dangling = planned("calib-db")
        dangling["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "db", "uid": ""}
        ]
        create_job(connection, NS, dangling, dry_run=True, policy=fast_policy())
    with pytest.raises(ClusterRejectedError, match="refused with HTTP 400: the namespace of"):
        create_job(connection, NS, job("other", "calib"), policy=fast_policy())
    api.cluster_rules = role_rules(role_documents(PLANNER, PLANNER_RULES), service_account=PLANNER)
    with pytest.raises(ClusterRejectedError) as info:
        create_job(connection, "absent", job("absent", "calib"), policy=fast_policy())
    assert str(info.value) == "create jobs/calib in namespace absent: namespace absent not found"
    assert api.jobs() == []


# --------------------------------------------------------------------------------------------------
# retries and an unreachable server


def test_429_and_503_are_retried_within_the_bound(
    api: FakeApiServer, connection: Connection
) -> None:
    api.put_workload(opted_in("deployments", "web"))
    api.inject(429, times=2, retry_after="0")
    assert names(list_workloads(connection, NS, OPTED_IN, fast_policy())) == ["web"]
    api.inject(503, times=2)
    assert list_jobs(connection, NS, PLANNED, fast_policy()) == []
    api.inject(503, times=1)
    assert list_configmaps(connection, NS, fast_policy()) == []
    api.inject(503, times=2, method="POST")
    assert create_job(connection, NS, planned("calib-web"), policy=fast_policy()).created
    assert names(api.jobs()) == ["calib-web"]
    statuses = [r.status for r in api.requests]
    assert statuses.count(429) == 2 and statuses.count(503) == 5
    # a server that keeps failing is given up on within the policy's bound
    api.inject(503, times=1000)
    started = time.monotonic()
    with pytest.raises(ClusterUnreachableError, match=r"create jobs/calib-db .* HTTP 503"):
        create_job(connection, NS, planned("calib-db"), policy=fast_policy(total_s=1.0))
    assert time.monotonic() - started < 3.0
    with pytest.raises(ClusterUnreachableError, match="list jobs in namespace ml"):
        list_jobs(connection, NS, PLANNED, fast_policy(total_s=1.0))


def test_a_create_whose_answer_was_lost_is_already_exists_on_the_retry(
    api: FakeApiServer, connection: Connection
) -> None:
    """The client saw a 503 where the API server had stored the Job (the answer was lost): the
    retry's 409 is an outcome, so the planner does not fail on its own Job."""

    def stored_meanwhile(server: FakeApiServer) -> None:
        server.before_write = None
        server.put_job(planned("calib-web"))

    api.inject(503, times=1, method="POST")
    api.before_write = stored_meanwhile
    outcome = create_job(connection, NS, planned("calib-web"), policy=fast_policy())
    assert outcome.already_exists and names(api.jobs()) == ["calib-web"]
    assert [r.status for r in api.requests] == [503, 409]


@pytest.mark.parametrize(
    "call",
    [
        lambda c, p: list_workloads(c, NS, OPTED_IN, p),
        lambda c, p: list_configmaps(c, NS, p),
        lambda c, p: list_jobs(c, NS, PLANNED, p),
        lambda c, p: create_job(c, NS, planned("calib"), policy=p),
    ],
    ids=["list_workloads", "list_configmaps", "list_jobs", "create_job"],
)
def test_an_unreachable_server_is_cluster_unreachable(tmp_path: Path, call: Any) -> None:
    with planner_server(tmp_path) as api:
        kubeconfig = api.write_kubeconfig(
            tmp_path / "refused", token=api.token, server=f"http://127.0.0.1:{refused_port()}"
        )
    policy = fast_policy(total_s=10.0, unreachable_s=0.3)
    started = time.monotonic()
    with pytest.raises(ClusterUnreachableError, match="cannot reach the API server"):
        call(connect(kubeconfig), policy)
    assert time.monotonic() - started < 3.0

"""``plan --all-namespaces`` and ``status --all-namespaces`` through the real CLI against the
strict fake API server, the planner authorized by the shipped cluster-scope ClusterRole
(deploy/examples/planner-cluster.yaml; the chart renders the same rules) and nothing else.

The scene: the planner runs in ``ml-platform``. ``team-a`` and ``team-b`` opted in (Namespace
label) and each has an opted-in Deployment on the shared node pool ``pool=shared``; ``team-c``
opted in but has no calibration ServiceAccount; ``quiet`` has an opted-in Deployment and did not
opt in as a namespace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.cluster.planner_role import PLANNER_SERVICE_ACCOUNT
from advisor.errors import ForbiddenError
from advisor.pipeline.plan import DEFAULT_SERVICE_ACCOUNT
from advisor.recommend import build_recommendation, render_configmap
from testkit.fakeapi.apps import workload
from testkit.fakeapi.claims import claim
from testkit.fakeapi.rbac import Rule, cluster_role_rules, load_documents
from testkit.fakeapi.samples import calibration_result
from testkit.fakeapi.server import FakeApiServer
from tests.integration.status_cli import reader_rules, status
from tests.integration.test_plan import NO_MEASURING, PLANNER, created_jobs
from tests.support import REPO

IMAGE = "registry.example.com/tf-thread-advisor:1"
HOME = "ml-platform"
OPT_IN = {"tf-thread-advisor.io/calibrate": "true"}
CLUSTER_PLANNER = cluster_role_rules(
    load_documents(REPO / "deploy" / "examples" / "planner-cluster.yaml"), PLANNER_SERVICE_ACCOUNT
)
SERVING = {"team-a": "web", "team-b": "api", "team-c": "svc", "quiet": "other"}


def opted_in(namespace: str, name: str) -> dict[str, Any]:
    container = {
        "image": f"registry.example.com/{name}-serving:3",
        "resources": {
            "requests": {"cpu": "2", "memory": "1Gi"},
            "limits": {"cpu": "2", "memory": "1Gi"},
        },
        "envFrom": [{"configMapRef": {"name": f"advice-{name}"}}],
    }
    obj = workload(
        "deployments",
        namespace,
        name,
        container=container,
        pod_spec={"nodeSelector": {"pool": "shared"}},
    )
    obj["metadata"]["labels"] = dict(OPT_IN)
    obj["metadata"]["annotations"] = {"tf-thread-advisor.io/model": f"/opt/model/{name}"}
    return obj


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    namespaces = (HOME, *SERVING)
    with FakeApiServer(
        tmp_path,
        namespaces=namespaces,
        role_namespace=HOME,
        rules=PLANNER,
        cluster_rules=CLUSTER_PLANNER,
        service_account=PLANNER_SERVICE_ACCOUNT,
    ) as fake:
        for namespace in ("team-a", "team-b", "team-c"):
            fake.put_namespace(namespace, OPT_IN)
        fake.put_namespace("quiet", {"team": "quiet"})
        for namespace, name in SERVING.items():
            fake.put_workload(opted_in(namespace, name))
        # not opted in, in an opted-in namespace
        fake.put_workload(workload("deployments", "team-a", "batch"))
        for namespace in (HOME, "team-a", "team-b", "quiet"):
            fake.put_service_account(namespace, DEFAULT_SERVICE_ACCOUNT)
        fake.put_service_account("team-c", "default")
        yield fake


def plan(capsys: pytest.CaptureFixture[str], api: FakeApiServer, *argv: str) -> Any:
    code = main(
        ["plan", "--kubeconfig", str(api.kubeconfig), "--image", IMAGE, *argv],
        instruments=NO_MEASURING,
    )
    out, err = capsys.readouterr()
    return code, out, err


def decisions(
    capsys: pytest.CaptureFixture[str], api: FakeApiServer, *argv: str
) -> dict[tuple[str, str], dict[str, Any]]:
    code, out, err = plan(capsys, api, "-A", "--max-running", "1", "--format", "json", *argv)
    rows = json.loads(out)["decisions"]
    # a failed decision (a Job that completed without fitting advice) is plan's exit 17
    assert code == (17 if any(d["decision"] == "failed" for d in rows) else 0), err
    assert "no Events recorded" not in err, err  # the ClusterRole may write them everywhere
    return {(d["namespace"], d["workload"]): d for d in rows}


def created(api: FakeApiServer) -> list[str]:
    """The namespace of every Job created (the fake refuses a body whose namespace is not the
    URL's, so it is where it was sent)."""
    return [job["metadata"]["namespace"] for job in created_jobs(api)]


def test_one_planner_plans_the_opted_in_namespaces_with_one_budget_per_pool(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = decisions(capsys, api)
    assert set(rows) == {
        ("team-a", "deployment/web"),
        ("team-b", "deployment/api"),
        ("team-c", "deployment/svc"),
    }  # quiet did not opt in; team-a's batch did not either
    first, second = rows[("team-a", "deployment/web")], rows[("team-b", "deployment/api")]
    assert (first["decision"], second["decision"]) == ("calibrate", "calibrate")
    assert "waits" not in first["reason"]
    # the two namespaces share pool=shared: --max-running 1 starts one Job for both
    assert "waits: 1 calibration(s) already running on node pool pool=shared" in second["reason"]
    missing = rows[("team-c", "deployment/svc")]
    assert missing["decision"] == "skipped" and missing["job"] is None
    assert f"no ServiceAccount {DEFAULT_SERVICE_ACCOUNT}" in missing["reason"]
    assert "planner.namespaces" in missing["reason"] and "no advice yet" in missing["reason"]
    assert all(r.method == "GET" for r in api.requests), "plan without --apply wrote something"
    # a fixed number of lists, whatever the number of workloads: none per workload
    listed = sorted(r.path for r in api.requests)
    assert listed == [
        "/api/v1/namespaces",
        "/api/v1/namespaces/team-a/configmaps",
        "/api/v1/namespaces/team-a/persistentvolumeclaims",
        "/api/v1/namespaces/team-b/configmaps",
        "/api/v1/namespaces/team-b/persistentvolumeclaims",
        "/api/v1/namespaces/team-c/configmaps",
        "/api/v1/namespaces/team-c/persistentvolumeclaims",
        "/api/v1/serviceaccounts",
        "/apis/apps/v1/deployments",
        "/apis/apps/v1/statefulsets",
        "/apis/batch/v1/jobs",
    ]
    queries = {r.path: r.query for r in api.requests}
    # the label's key: a value neither "true" nor "false" is named, not silently left out
    assert queries["/api/v1/namespaces"]["labelSelector"] == "tf-thread-advisor.io/calibrate"
    assert queries["/api/v1/serviceaccounts"]["fieldSelector"] == (
        f"metadata.name={DEFAULT_SERVICE_ACCOUNT}"
    )


def test_apply_creates_each_job_in_its_workloads_namespace_and_counts_every_namespace(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = decisions(capsys, api, "--apply")
    assert created(api) == ["team-a"]
    (job,) = api.jobs()
    assert job["metadata"]["namespace"] == "team-a"
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == DEFAULT_SERVICE_ACCOUNT
    assert rows[("team-a", "deployment/web")]["job"] == job["metadata"]["name"]
    # team-a's Job runs on the shared pool: team-b's waits for it, though in another namespace
    rows = decisions(capsys, api, "--apply")
    assert created(api) == ["team-a"]
    assert "waits: 1 calibration(s)" in rows[("team-b", "deployment/api")]["reason"]
    api.set_job_condition("team-a", job["metadata"]["name"], "Complete")
    decisions(capsys, api, "--apply")
    assert created(api) == ["team-a", "team-b"]
    assert {j["metadata"]["namespace"] for j in api.jobs()} == {"team-a", "team-b"}


def test_each_namespace_is_judged_by_its_own_claims(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two claims of one name in two namespaces: each workload's model is on its own."""
    for namespace, name in (("team-a", "web"), ("team-b", "api")):
        obj = opted_in(namespace, name)
        pod = obj["spec"]["template"]["spec"]
        pod["volumes"] = [{"name": "models", "persistentVolumeClaim": {"claimName": "models"}}]
        pod["containers"][0]["volumeMounts"] = [{"name": "models", "mountPath": "/models"}]
        obj["metadata"]["annotations"]["tf-thread-advisor.io/model"] = f"/models/{name}"
        api.put_workload(obj)
    api.put_claim(claim("team-a", "models", ["ReadWriteOnce"], bound_modes=["ReadWriteOnce"]))
    api.put_claim(claim("team-b", "models", ["ReadOnlyMany"], bound_modes=["ReadOnlyMany"]))
    rows = decisions(capsys, api)
    web, served = rows[("team-a", "deployment/web")], rows[("team-b", "deployment/api")]
    assert web["decision"] == "skipped" and "ReadWriteOnce" in web["reason"]
    assert served["decision"] == "calibrate", served["reason"]


def test_the_table_names_the_namespace_only_across_namespaces(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, table, err = plan(capsys, api, "--all-namespaces")
    assert code == 0, err
    lines = table.splitlines()
    header = ["NAMESPACE", "WORKLOAD", "CONTAINER", "CONFIGMAP", "DECISION", "JOB"]
    assert lines[0].split() == header
    assert lines[1].split()[:2] == ["team-a", "deployment/web"]
    assert any(line.startswith("team-c/deployment/svc (server): ") for line in lines)
    code, table, err = plan(capsys, api, "--namespace", "team-a")
    assert code == 0, err
    lines = table.splitlines()
    assert lines[0].split() == ["WORKLOAD", "CONTAINER", "CONFIGMAP", "DECISION", "JOB"]
    assert any(line.startswith("deployment/web (server): ") for line in lines)
    code, _, err = plan(capsys, api, "-A", "--namespace", "team-a")
    assert code == 2 and "not allowed with" in err


def test_nothing_opted_in_says_how_to_opt_in(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put_namespace("team-a", {})
    api.put_namespace("team-b", {})
    api.put_namespace("team-c", {"tf-thread-advisor.io/calibrate": "false"})
    code, out, err = plan(capsys, api, "-A")
    assert (code, err) == (0, "")
    assert "no namespace is labelled tf-thread-advisor.io/calibrate=true" in out
    assert [r.path for r in api.requests if "/namespaces/" in r.path] == []
    # a value that is neither "true" nor "false": not planned, and said so
    api.put_namespace("team-c", {"tf-thread-advisor.io/calibrate": "True"})
    code, out, err = plan(capsys, api, "-A")
    assert code == 0 and "no namespace is labelled" in out
    (line,) = err.splitlines()
    assert "namespace team-c is not planned" in line and "'True'" in line


def test_a_namespaced_role_with_all_namespaces_is_exit_8_naming_the_rule(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.cluster_rules = []
    code, out, err = plan(capsys, api, "-A")
    assert (code, out) == (ForbiddenError.exit_code, "")
    (line,) = err.splitlines()
    assert "cannot list namespaces" in line
    assert "plan --all-namespaces needs a ClusterRole" in line and "planner.scope=cluster" in line
    # the rules one by one: without the ServiceAccount list, that rule is named
    api.cluster_rules = [r for r in CLUSTER_PLANNER if "serviceaccounts" not in r.resources]
    api.cluster_rules.append(Rule(("",), ("namespaces",), ("list",)))
    code, _, err = plan(capsys, api, "-A")
    assert code == ForbiddenError.exit_code
    assert "cannot list serviceaccounts" in err and "ClusterRole" in err
    # and the namespaced Role still plans its own namespace
    api.cluster_rules = []
    code, _, err = plan(capsys, api, "--namespace", HOME)
    assert code == 0, err


def test_status_all_namespaces_shows_the_calibration_jobs(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = render_configmap(
        build_recommendation(calibration_result(), advisor_version="0.0.1"), "advice-web", "team-a"
    )
    api.put(stale, manager="tf-thread-advisor")
    decisions(capsys, api, "--apply")
    (job,) = api.jobs()
    api.cluster_rules = reader_rules("ClusterRole")
    code, out, err = status(capsys, api, "-A", "--format", "json")
    assert (code, err) == (0, "")
    (row,) = [r for r in json.loads(out) if r["name"] == "advice-web"]
    assert row["namespace"] == "team-a"
    assert (row["calibration_job"], row["calibration_state"]) == (
        job["metadata"]["name"],
        "running",
    )
    assert "/apis/batch/v1/jobs" in {r.path for r in api.requests}
    # a ClusterRole without jobs: every advice, the Jobs not shown, one line, not a failure
    api.cluster_rules = [r for r in reader_rules("ClusterRole") if "jobs" not in r.resources]
    code, out, err = status(capsys, api, "-A", "--format", "json")
    assert code == 0
    (row,) = [r for r in json.loads(out) if r["name"] == "advice-web"]
    assert row["calibration_job"] is None
    (line,) = err.splitlines()
    assert "calibration Jobs not shown" in line and "list jobs" in line


def test_the_fake_lists_namespaces_and_service_accounts_as_a_real_server(
    api: FakeApiServer,
) -> None:
    import requests

    headers = {"Authorization": f"Bearer {api.token}"}

    def get(path: str, **query: str) -> Any:
        return requests.get(api.url + path, params=query, headers=headers, timeout=5)

    found = get("/api/v1/namespaces", labelSelector="tf-thread-advisor.io/calibrate=true").json()
    assert found["kind"] == "NamespaceList"
    assert [n["metadata"]["name"] for n in found["items"]] == ["team-a", "team-b", "team-c"]
    assert found["items"][0]["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team-a"
    assert "kind" not in found["items"][0]
    # Namespaces are cluster-scoped: no namespaced path serves them
    assert get("/api/v1/namespaces/team-a/namespaces").status_code == 404
    accounts = get("/api/v1/serviceaccounts", fieldSelector="metadata.name=default").json()
    assert [(a["metadata"]["namespace"], a["metadata"]["name"]) for a in accounts["items"]] == [
        ("team-c", "default")
    ]
    assert get("/api/v1/namespaces/team-a/serviceaccounts").json()["items"][0]["metadata"][
        "name"
    ] == (DEFAULT_SERVICE_ACCOUNT)
    # a Role in one namespace does not list across all of them
    api.cluster_rules = []
    refused = get("/api/v1/serviceaccounts")
    assert refused.status_code == 403
    assert refused.json()["message"].endswith(
        'cannot list resource "serviceaccounts" in API group "" at the cluster scope'
    )

"""batch/v1 Jobs in the strict fake API server, over real HTTP with the official client: what the
planner's tests rely on must be what a real API server does (codes, validation, defaults, RBAC,
the garbage collector)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from testkit.fakeapi.apps import workload
from testkit.fakeapi.jobs import ORPHAN_WARNING, job, owner_reference
from testkit.fakeapi.jobspec import CONTROLLER_UID, JOB_NAME
from testkit.fakeapi.pods import bare_pod
from testkit.fakeapi.rbac import Rule, load_documents, role_documents, role_rules
from testkit.fakeapi.server import FakeApiServer

NS = "ml"
PLANNER = "tf-thread-advisor-planner"
EVERYTHING = [
    Rule(("batch",), ("jobs",), ("*",)),
    Rule(("apps",), ("deployments", "statefulsets"), ("*",)),
]


def batch(api: FakeApiServer) -> client.BatchV1Api:
    return client.BatchV1Api(config.new_client_from_config(str(api.kubeconfig)))


def apps_api(api: FakeApiServer) -> client.AppsV1Api:
    return client.AppsV1Api(config.new_client_from_config(str(api.kubeconfig)))


def raw(call: Any, *args: Any, **kw: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, body, headers) of a client call, whatever the status."""
    try:
        resp = call(*args, _preload_content=False, **kw)
        return resp.status, json.loads(resp.data), dict(resp.headers)
    except ApiException as exc:
        return int(exc.status), json.loads(exc.body), dict(exc.headers or {})


def post(
    api: FakeApiServer, body: Any, query: str = "", namespace: str = NS
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """A create sent as raw JSON: the official client refuses some bodies (a wrong type, an
    undeclared field, a missing required one) before sending them, a server must too."""
    path = f"{api.url}/apis/batch/v1/namespaces/{namespace}/jobs{query}"
    request = urllib.request.Request(path, data=json.dumps(body).encode(), method="POST")
    request.add_header("Authorization", f"Bearer {api.token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, json.loads(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), dict(err.headers)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(tmp_path, namespaces=(NS, "other"), rules=EVERYTHING) as server:
        yield server


def names(body: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


# --------------------------------------------------------------------------------------------------
# create, read, delete


def test_create_sets_what_the_server_sets_and_get_list_delete_see_it(api: FakeApiServer) -> None:
    jobs = batch(api)
    manifest = job(NS, "calib-web", labels={"team": "ml"})
    manifest["spec"]["template"]["metadata"] = {"labels": {"app": "calib"}}
    status, created, _ = raw(jobs.create_namespaced_job, NS, manifest)
    assert status == 201
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] and meta["resourceVersion"]
    assert (meta["generation"], meta["labels"]) == (1, {"team": "ml"})
    assert created["status"] == {}
    spec = created["spec"]
    # the generated selector and the labels it selects, as a real server adds them
    assert spec["selector"] == {"matchLabels": {CONTROLLER_UID: meta["uid"]}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels["app"] == "calib"
    assert (labels[CONTROLLER_UID], labels[JOB_NAME]) == (meta["uid"], "calib-web")
    assert (labels["controller-uid"], labels["job-name"]) == (meta["uid"], "calib-web")
    # defaults: the sent backoffLimit stays; the rest is filled in
    assert (spec["backoffLimit"], spec["completions"], spec["parallelism"]) == (1, 1, 1)
    assert (spec["completionMode"], spec["suspend"]) == ("NonIndexed", False)
    (container,) = spec["template"]["spec"]["containers"]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert api.job(NS, "calib-web") == created

    read = jobs.read_namespaced_job("calib-web", NS)
    assert read.metadata.uid == meta["uid"]
    assert raw(jobs.read_namespaced_job, "absent", NS)[:2][0] == 404
    listed = jobs.list_namespaced_job(NS)
    assert [j.metadata.name for j in listed.items] == ["calib-web"]

    status, body, headers = raw(jobs.delete_namespaced_job, "calib-web", NS)
    assert (status, body["status"], body["details"]["kind"]) == (200, "Success", "jobs")
    assert headers["Warning"] == ORPHAN_WARNING  # batch/v1 keeps the pods by default
    assert api.job(NS, "calib-web") is None
    status, body, _ = raw(jobs.delete_namespaced_job, "calib-web", NS)
    assert (status, body["reason"], body["message"]) == (
        404,
        "NotFound",
        'jobs.batch "calib-web" not found',
    )


def test_a_job_without_labels_takes_its_templates(api: FakeApiServer) -> None:
    manifest = job(NS, "j")
    manifest["spec"]["template"]["metadata"] = {"labels": {"app": "calib"}}
    created = batch(api).create_namespaced_job(NS, manifest)
    assert created.metadata.labels == {"app": "calib"}


def test_an_existing_name_is_409_already_exists_and_the_stored_job_is_kept(
    api: FakeApiServer,
) -> None:
    jobs = batch(api)
    first = api.put_job(job(NS, "calib-web"))
    status, body, _ = raw(jobs.create_namespaced_job, NS, job(NS, "calib-web", labels={"x": "1"}))
    assert (status, body["reason"], body["message"]) == (
        409,
        "AlreadyExists",
        'jobs.batch "calib-web" already exists',
    )
    assert body["details"] == {"name": "calib-web", "group": "batch", "kind": "jobs"}
    assert api.job(NS, "calib-web") == first
    # the same name in another namespace is another Job
    api.cluster_rules = EVERYTHING
    assert raw(jobs.create_namespaced_job, "other", job("other", "calib-web"))[0] == 201


def test_dry_run_is_validated_and_authorized_but_never_stored(tmp_path: Path) -> None:
    rules = [Rule(("batch",), ("jobs",), ("get", "list", "create"))]
    with FakeApiServer(tmp_path, rules=rules) as api:
        jobs = batch(api)
        status, body, _ = raw(jobs.create_namespaced_job, NS, job(NS, "d"), dry_run="All")
        assert status == 201 and body["metadata"]["uid"]
        assert "resourceVersion" not in body["metadata"]
        assert api.jobs() == [] and jobs.list_namespaced_job(NS).items == []
        bad = job(NS, "d")
        bad["spec"]["template"]["spec"]["restartPolicy"] = "Always"
        assert raw(jobs.create_namespaced_job, NS, bad, dry_run="All")[0] == 422
        api.put_job(job(NS, "taken"))
        status, body, _ = raw(jobs.create_namespaced_job, NS, job(NS, "taken"), dry_run="All")
        assert (status, body["reason"]) == (409, "AlreadyExists")
        api.rules = [Rule(("batch",), ("jobs",), ("get", "list"))]
        assert raw(jobs.create_namespaced_job, NS, job(NS, "d"), dry_run="All")[0] == 403
        assert raw(jobs.create_namespaced_job, NS, job(NS, "d"), dry_run="Some")[0] == 400


def _with(change: Any) -> dict[str, Any]:
    manifest = job(NS, "calib-web")
    change(manifest)
    return manifest


def _pod(manifest: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = manifest["spec"]["template"]["spec"]
    return spec


def _container(manifest: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = _pod(manifest)["containers"][0]
    return container


INVALID = {
    "uppercase name": (
        lambda m: m["metadata"].update(name="Calib"),
        'metadata.name: Invalid value: "Calib"',
    ),
    "a name longer than 63": (
        lambda m: m["metadata"].update(name="c" * 64),
        "must be no more than 63 characters",
    ),
    "no template": (lambda m: m["spec"].pop("template"), "spec.template.spec.containers: Required"),
    "no containers": (
        lambda m: _pod(m).update(containers=[]),
        "spec.template.spec.containers: Required value",
    ),
    "restartPolicy Always": (
        lambda m: _pod(m).update(restartPolicy="Always"),
        'restartPolicy: Unsupported value: "Always"',
    ),
    "no restartPolicy (defaults to Always)": (
        lambda m: _pod(m).pop("restartPolicy"),
        'restartPolicy: Unsupported value: "Always"',
    ),
    "a label value with a space": (
        lambda m: m["metadata"].update(labels={"tf-thread-advisor.io/spec-hash": "a b"}),
        'metadata.labels: Invalid value: "a b"',
    ),
    "an annotation key with two slashes": (
        lambda m: m["metadata"].update(annotations={"a/b/c": "x"}),
        'metadata.annotations: Invalid value: "a/b/c"',
    ),
    "an ownerReference without uid": (
        lambda m: m["metadata"].update(
            ownerReferences=[
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": ""}
            ]
        ),
        'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
    ),
    "an ownerReference without a version": (
        lambda m: m["metadata"].update(
            ownerReferences=[{"apiVersion": "apps/", "kind": "Deployment", "name": "w", "uid": "u"}]
        ),
        'metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty',
    ),
    "two controllers": (
        lambda m: m["metadata"].update(
            ownerReferences=[
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": n,
                    "uid": n,
                    "controller": True,
                }
                for n in ("a", "b")
            ]
        ),
        "Only one reference can have Controller set to true",
    ),
    "a container without image": (
        lambda m: _container(m).pop("image"),
        "spec.template.spec.containers[0].image: Required value",
    ),
    "a mount of no volume": (
        lambda m: _container(m).update(volumeMounts=[{"name": "model", "mountPath": "/m"}]),
        'volumeMounts[0].name: Not found: "model"',
    ),
    "a request above the limit": (
        lambda m: _container(m).update(
            resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}}
        ),
        "must be less than or equal to cpu limit of 1500m",
    ),
    "a token living less than 10 minutes": (
        lambda m: _pod(m).update(
            volumes=[
                {
                    "name": "kube-api-access",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"path": "token", "expirationSeconds": 60}}
                        ]
                    },
                }
            ]
        ),
        "may not specify a duration less than 10 minutes",
    ),
    "a hand-written selector": (
        lambda m: m["spec"].update(selector={"matchLabels": {"app": "x"}}),
        "`selector` not auto-generated",
    ),
    "a negative backoffLimit": (
        lambda m: m["spec"].update(backoffLimit=-1),
        "spec.backoffLimit: Invalid value: -1",
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_jobs_are_422_with_the_cause(api: FakeApiServer, case: str) -> None:
    change, cause = INVALID[case]
    # raw JSON: the client itself refuses a Job without template before sending it
    status, body, _ = post(api, _with(change))
    assert (status, body["reason"]) == (422, "Invalid"), body
    assert body["message"].startswith('Job.batch "'), body["message"]
    assert cause in body["message"]
    assert body["details"]["kind"] == "Job"
    assert api.jobs() == []


def test_what_a_real_server_accepts_the_fake_accepts(api: FakeApiServer) -> None:
    """The other side of the 422s: a dotted name (a DNS subdomain) of 63 characters, OnFailure,
    a projected token of 3607 s mounted from a declared volume, requests equal to limits."""
    name = "calib.web-" + "x" * 53
    manifest = job(NS, name)
    pod = _pod(manifest)
    pod["restartPolicy"] = "OnFailure"
    pod["volumes"] = [
        {
            "name": "kube-api-access",
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                ]
            },
        }
    ]
    pod["automountServiceAccountToken"] = False
    _container(manifest).update(
        volumeMounts=[
            {"name": "kube-api-access", "mountPath": "/var/run/secrets", "readOnly": True}
        ],
        resources={"requests": {"cpu": "500m"}, "limits": {"cpu": 0.5}},
    )
    status, body, _ = post(api, manifest)  # a number as a quantity: the client sends only strings
    assert status == 201, body
    assert len(name) == 63 and api.job(NS, name) is not None


def test_decoding_is_strict_where_the_server_is(api: FakeApiServer) -> None:
    jobs = batch(api)
    elsewhere = job("other", "j")
    status, body, _ = raw(jobs.create_namespaced_job, NS, elsewhere)
    assert (status, body["reason"]) == (400, "BadRequest")
    assert "does not match the namespace" in body["message"]
    # what the client refuses to send, as raw JSON
    wrong_type = job(NS, "j")
    wrong_type["spec"]["backoffLimit"] = "3"
    status, body, _ = post(api, wrong_type)
    assert status == 400 and "cannot unmarshal string" in body["message"]
    typo = job(NS, "j")
    _pod(typo)["restartPolicyy"] = "Never"
    status, body, _ = post(api, typo, "?fieldValidation=Strict")
    assert status == 400
    assert body["message"] == (
        'strict decoding error: unknown field "spec.template.spec.restartPolicyy"'
    )
    # without Strict the server drops the field (and warns): the Job still validates
    status, body, headers = post(api, typo, "?fieldValidation=Warn")
    assert status == 201 and "restartPolicyy" not in body["spec"]["template"]["spec"]
    assert headers["Warning"] == '299 - "unknown field \\"spec.template.spec.restartPolicyy\\""'
    typo["metadata"]["name"] = "k"
    assert post(api, typo, "?fieldValidation=Ignore")[0] == 201
    assert post(api, typo, "?fieldValidation=Loose")[0] == 400
    assert api.requests[-1].status == 400
    not_a_job = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    assert post(api, not_a_job)[0] == 400
    api.cluster_rules = EVERYTHING
    status, body, _ = raw(jobs.create_namespaced_job, "absent", job("absent", "j"))
    assert (status, body["message"]) == (404, 'namespaces "absent" not found')


# --------------------------------------------------------------------------------------------------
# lists


def test_lists_select_page_and_refuse_what_a_server_refuses(api: FakeApiServer) -> None:
    jobs = batch(api)
    for name in ("a", "b", "c", "d"):
        api.put_job(job(NS, name, labels={"app.kubernetes.io/component": "calibration"}))
    api.put_job(job(NS, "foreign"))
    api.put_job(job("other", "e", labels={"app.kubernetes.io/component": "calibration"}))
    selector = "app.kubernetes.io/component=calibration"
    status, body, _ = raw(jobs.list_namespaced_job, NS, label_selector=selector)
    assert (status, body["kind"], names(body)) == (200, "JobList", ["a", "b", "c", "d"])
    assert "kind" not in body["items"][0] and "apiVersion" not in body["items"][0]
    status, first, _ = raw(jobs.list_namespaced_job, NS, label_selector=selector, limit=3)
    assert names(first) == ["a", "b", "c"]
    token = first["metadata"]["continue"]
    _, rest, _ = raw(
        jobs.list_namespaced_job, NS, label_selector=selector, limit=3, _continue=token
    )
    assert names(rest) == ["d"] and "continue" not in rest["metadata"]
    _, body, _ = raw(jobs.list_namespaced_job, NS, field_selector="metadata.name=b")
    assert names(body) == ["b"]
    _, body, _ = raw(jobs.list_namespaced_job, NS, field_selector="metadata.namespace=other")
    assert names(body) == []
    # Complete Jobs by the field the server indexes
    api.set_job_condition(NS, "c", "Complete")
    _, body, _ = raw(jobs.list_namespaced_job, NS, field_selector="status.successful=1")
    assert names(body) == ["c"]
    status, body, _ = raw(jobs.list_namespaced_job, NS, field_selector="status.phase=Running")
    assert (status, body["message"]) == (400, 'field label not supported: "status.phase"')
    assert raw(jobs.list_namespaced_job, NS, _continue="bogus")[0] == 400
    assert raw(jobs.list_job_for_all_namespaces)[0] == 403  # no ClusterRole
    api.cluster_rules = [Rule(("batch",), ("jobs",), ("list",))]
    _, body, _ = raw(jobs.list_job_for_all_namespaces, label_selector=selector)
    assert names(body) == ["a", "b", "c", "d", "e"]


def test_status_helpers_report_what_the_job_controller_does(api: FakeApiServer) -> None:
    jobs = batch(api)
    api.put_job(job(NS, "run"))
    before = api.job(NS, "run")
    assert before is not None
    running = api.set_job_running(NS, "run")
    assert running["status"]["active"] == 1 and running["status"]["startTime"]
    assert running["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    done = jobs.read_namespaced_job("run", NS)
    assert done.status.active == 1 and not done.status.conditions
    api.set_job_condition(NS, "run", "Complete")
    done = jobs.read_namespaced_job("run", NS)
    assert (done.status.succeeded, done.status.active) == (1, None)
    assert [(c.type, c.status) for c in done.status.conditions] == [
        ("SuccessCriteriaMet", "True"),
        ("Complete", "True"),
    ]
    api.put_job(job(NS, "bad"))
    failed = api.set_job_condition(
        NS, "bad", "Failed", reason="PodFailurePolicy", message="exit code 8", failed=1
    )
    assert failed["status"]["failed"] == 1
    last = failed["status"]["conditions"][-1]
    assert (last["type"], last["reason"], last["message"]) == (
        "Failed",
        "PodFailurePolicy",
        "exit code 8",
    )
    # a FailJob rule ends the Job at its first matching pod, whatever backoffLimit allows (seen
    # on the real cluster: tests/e2e/test_faults.py)
    api.put_job(job(NS, "at-once"))
    at_once = api.set_job_condition(NS, "at-once", "Failed", reason="PodFailurePolicy")
    assert at_once["status"]["failed"] == 1
    api.put_job(job(NS, "limit"))  # backoffLimit 1: the controller gives up after 2 pods
    assert api.set_job_condition(NS, "limit", "Failed")["status"]["failed"] == 2
    with pytest.raises(ValueError):
        api.set_job_condition(NS, "limit", "Running")
    with pytest.raises(ValueError, match="not a valid Job"):
        api.put_job(_with(lambda m: _pod(m).update(restartPolicy="Always")))


# --------------------------------------------------------------------------------------------------
# RBAC


PLANNER_DOCS = role_documents(
    PLANNER,
    [
        {
            "apiGroups": ["apps"],
            "resources": ["deployments", "statefulsets"],
            "verbs": ["get", "list"],
        },
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "create"]},
    ],
) + role_documents(
    "tf-thread-advisor-calibration",
    [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "patch"]}],
    name="calibration",
)


def test_role_rules_pick_the_binding_of_the_named_service_account() -> None:
    planner = role_rules(PLANNER_DOCS, service_account=PLANNER)
    assert Rule(("batch",), ("jobs",), ("get", "list", "create")) in planner
    calibration = role_rules(PLANNER_DOCS, service_account="tf-thread-advisor-calibration")
    assert calibration == [Rule(("",), ("configmaps",), ("get", "create", "patch"))]
    with pytest.raises(AssertionError, match="no RoleBinding binds"):
        role_rules(PLANNER_DOCS, service_account="nobody")


def test_a_components_folder_is_read_whole(tmp_path: Path) -> None:
    """deploy/components/<name>/ as rendered files: every *.yaml, the kustomization among them."""
    import yaml

    folder = tmp_path / "fleet"
    folder.mkdir()
    (folder / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [rbac.yaml]\n"
    )
    (folder / "rbac.yaml").write_text(yaml.safe_dump_all(PLANNER_DOCS))
    (folder / "notes.txt").write_text("not a manifest")
    docs = load_documents(folder)
    assert [d["kind"] for d in docs] == ["Component", *(d["kind"] for d in PLANNER_DOCS)]
    assert role_rules(docs, service_account=PLANNER) == role_rules(
        PLANNER_DOCS, service_account=PLANNER
    )


def test_the_planners_role_allows_get_list_create_and_nothing_else(tmp_path: Path) -> None:
    rules = role_rules(PLANNER_DOCS, service_account=PLANNER)
    with FakeApiServer(tmp_path, rules=rules, service_account=PLANNER) as api:
        jobs = batch(api)
        assert raw(jobs.create_namespaced_job, NS, job(NS, "j"))[0] == 201
        assert raw(jobs.read_namespaced_job, "j", NS)[0] == 200
        assert raw(jobs.list_namespaced_job, NS)[0] == 200
        status, body, _ = raw(jobs.delete_namespaced_job, "j", NS)
        assert (status, body["reason"]) == (403, "Forbidden")
        assert body["message"] == (
            f'jobs.batch "j" is forbidden: User "system:serviceaccount:{NS}:{PLANNER}" cannot '
            'delete resource "jobs" in API group "batch" in the namespace "ml"'
        )
        assert body["details"] == {"name": "j", "group": "batch", "kind": "jobs"}
        status, body, _ = raw(jobs.create_namespaced_job, "other", job("other", "j"))
        assert (status, body["message"]) == (
            403,
            f'jobs.batch is forbidden: User "system:serviceaccount:{NS}:{PLANNER}" cannot '
            'create resource "jobs" in API group "batch" in the namespace "other"',
        )
        # a rule on jobs of another group allows nothing here
        api.rules = [Rule(("",), ("jobs",), ("*",))]
        assert raw(jobs.list_namespaced_job, NS)[0] == 403


# --------------------------------------------------------------------------------------------------
# the garbage collector


def _owned_job(api: FakeApiServer, owner: dict[str, Any], name: str = "calib") -> dict[str, Any]:
    created = batch(api).create_namespaced_job(NS, job(NS, name, owner=owner))
    assert created.metadata.owner_references[0].uid == owner["metadata"]["uid"]
    return api.job(NS, name) or {}


def test_deleting_a_workload_deletes_its_jobs_and_orphan_keeps_them(api: FakeApiServer) -> None:
    web = api.put_workload(workload("deployments", NS, "web"))
    db = api.put_workload(workload("statefulsets", NS, "db"))
    _owned_job(api, web, "calib-web")
    _owned_job(api, db, "calib-db")
    api.put_job(job(NS, "unowned"))
    status, _, _ = raw(apps_api(api).delete_namespaced_deployment, "web", NS)
    assert status == 200 and api.workload("deployments", NS, "web") is None
    assert [j["metadata"]["name"] for j in api.jobs()] == ["calib-db", "unowned"]
    assert raw(apps_api(api).delete_namespaced_deployment, "web", NS)[0] == 404
    # Orphan: the Job stays, without the reference
    status, _, _ = raw(
        apps_api(api).delete_namespaced_stateful_set, "db", NS, propagation_policy="Orphan"
    )
    assert status == 200
    kept = api.job(NS, "calib-db")
    assert kept is not None and "ownerReferences" not in kept["metadata"]
    # the test helper deletes as another client would
    api.put_workload(workload("deployments", NS, "api"))
    owner = api.workload("deployments", NS, "api")
    assert owner is not None
    _owned_job(api, owner, "calib-api")
    api.delete_workload("deployments", NS, "api")
    assert api.job(NS, "calib-api") is None


def test_a_workload_delete_needs_the_rule_and_a_dry_run_deletes_nothing(tmp_path: Path) -> None:
    rules = [Rule(("apps",), ("deployments",), ("get",)), Rule(("batch",), ("jobs",), ("*",))]
    with FakeApiServer(tmp_path, rules=rules) as api:
        web = api.put_workload(workload("deployments", NS, "web"))
        _owned_job(api, web)
        status, body, _ = raw(apps_api(api).delete_namespaced_deployment, "web", NS)
        assert (status, body["reason"]) == (403, "Forbidden")
        api.rules = [*rules, Rule(("apps",), ("deployments",), ("delete",))]
        status, _, _ = raw(apps_api(api).delete_namespaced_deployment, "web", NS, dry_run="All")
        assert status == 200 and api.workload("deployments", NS, "web") is not None
        assert api.job(NS, "calib") is not None


def test_a_job_owned_by_a_gone_workload_is_accepted_then_collected(api: FakeApiServer) -> None:
    """The planner read the workload, someone deleted it, the planner creates its Job: the API
    server accepts it (it does not check owners) and the collector removes it soon after."""
    web = api.put_workload(workload("deployments", NS, "web"))
    api.delete_workload("deployments", NS, "web")
    jobs = batch(api)
    status, _created, _ = raw(jobs.create_namespaced_job, NS, job(NS, "calib", owner=web))
    assert status == 201 and api.job(NS, "calib") is not None  # stored, for now
    assert jobs.list_namespaced_job(NS).items == []  # the next request sees it gone
    assert api.job(NS, "calib") is None
    # a workload re-created under the same name is another owner (another uid)
    api.put_workload(workload("deployments", NS, "web"))
    assert raw(jobs.create_namespaced_job, NS, job(NS, "calib", owner=web))[0] == 201
    assert raw(jobs.read_namespaced_job, "calib", NS)[0] == 404


def test_a_job_keeps_living_while_one_owner_does(api: FakeApiServer) -> None:
    web = api.put_workload(workload("deployments", NS, "web"))
    db = api.put_workload(workload("statefulsets", NS, "db"))
    manifest = job(NS, "calib")
    manifest["metadata"]["ownerReferences"] = [
        owner_reference(web),
        owner_reference(db, controller=False),
    ]
    api.put_job(manifest)
    api.delete_workload("deployments", NS, "web")
    kept = api.job(NS, "calib")
    assert kept is not None
    assert [r["name"] for r in kept["metadata"]["ownerReferences"]] == ["db"]
    # an owner of a kind the fake does not store is left alone: it cannot be resolved
    foreign = job(NS, "foreign")
    foreign["metadata"]["ownerReferences"] = [
        {"apiVersion": "example.com/v1", "kind": "Model", "name": "m", "uid": "u-1"}
    ]
    api.put_job(foreign)
    assert api.collect_garbage() == [] and api.job(NS, "foreign") is not None


def test_deleting_a_job_orphans_its_pods_unless_asked_to_cascade(api: FakeApiServer) -> None:
    jobs = batch(api)
    from datetime import datetime, timezone

    started = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for name in ("keep", "drop"):
        owner = api.put_job(job(NS, name))
        pod = bare_pod(NS, f"{name}-abcde", container={}, started=started)
        pod["metadata"]["ownerReferences"] = [owner_reference(owner)]
        api.put_pod(pod)
    assert raw(jobs.delete_namespaced_job, "keep", NS)[0] == 200
    orphaned = api.pods[(NS, "keep-abcde")]
    assert "ownerReferences" not in orphaned["metadata"]
    status, _, headers = raw(
        jobs.delete_namespaced_job, "drop", NS, propagation_policy="Background"
    )
    assert status == 200 and "Warning" not in headers
    assert (NS, "drop-abcde") not in api.pods
    assert raw(jobs.delete_namespaced_job, "x", NS, propagation_policy="Later")[0] == 400

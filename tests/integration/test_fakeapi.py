"""The fake API server is only worth something if it is as strict as the real one: these tests
speak raw HTTP to it and check the answers the writer tests rely on."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from testkit.fakeapi.apps import workload
from testkit.fakeapi.rbac import Rule, load_documents, role_rules
from testkit.fakeapi.server import FakeApiServer

CM = "/api/v1/namespaces/ml/configmaps"


def call(
    api: FakeApiServer,
    method: str,
    path: str,
    body: Any = None,
    *,
    content_type: str | None = "application/json",
    token: str | None = None,
    accept: str | None = None,
) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(api.url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token or api.token}")
    if content_type and data is not None:
        request.add_header("Content-Type", content_type)
    if accept:
        request.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def cm(name: str = "tf-advice", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


APPLY = "application/apply-patch+yaml"


@pytest.fixture
def api(tmp_path: Path) -> Any:
    everything = [Rule(("",), ("configmaps",), ("*",))]
    with FakeApiServer(tmp_path, rules=everything) as server:
        yield server


def test_shipped_role_is_one_named_rule() -> None:
    (rule,) = role_rules()
    assert rule.resource_names == ("tf-thread-advice",)
    assert set(rule.verbs) == {"get", "patch", "create"}
    kinds = [d["kind"] for d in load_documents()]
    assert sorted(kinds) == ["Role", "RoleBinding", "ServiceAccount"]


def test_rbac_names_restrict_post_but_not_apply(tmp_path: Path) -> None:
    with FakeApiServer(tmp_path, configmap_name="tf-advice") as api:
        status, body = call(api, "POST", CM, cm())
        assert (status, body["reason"]) == (403, "Forbidden")
        status, _ = call(
            api, "PATCH", f"{CM}/tf-advice?fieldManager=m", cm(A="1"), content_type=APPLY
        )
        assert status == 201
        status, _ = call(
            api, "PATCH", f"{CM}/other?fieldManager=m", cm("other"), content_type=APPLY
        )
        assert status == 403
        status, _ = call(api, "GET", CM)  # list is not granted
        assert status == 403


def test_crud_codes(api: FakeApiServer) -> None:
    assert call(api, "GET", f"{CM}/x")[0] == 404
    assert call(api, "POST", CM, cm("x", A="1"))[0] == 201
    status, body = call(api, "POST", CM, cm("x", A="1"))
    assert (status, body["reason"]) == (409, "AlreadyExists")
    status, stored = call(api, "GET", f"{CM}/x")
    assert status == 200
    stale = cm("x", A="2")
    stale["metadata"]["resourceVersion"] = "1"
    status, body = call(api, "PUT", f"{CM}/x", stale)
    assert (status, body["reason"]) == (409, "Conflict")
    fresh = cm("x", A="2")
    fresh["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    assert call(api, "PUT", f"{CM}/x", fresh)[0] == 200
    assert call(api, "PUT", f"{CM}/nope", cm("nope"))[0] == 404
    assert call(api, "DELETE", f"{CM}/x")[0] == 200
    assert call(api, "GET", f"{CM}/x")[0] == 404


def test_apply_semantics(api: FakeApiServer) -> None:
    path = f"{CM}/a?fieldManager=advisor&force=true"
    assert call(api, "PATCH", path, cm("a", A="1", B="2"), content_type=APPLY)[0] == 201
    status, body = call(api, "PATCH", path, cm("a", A="3"), content_type=APPLY)
    assert status == 200 and body["data"] == {"A": "3"}  # B was ours and is no longer applied
    # another manager's key survives our apply; conflicting without force is a 409
    assert (
        call(api, "PATCH", f"{CM}/a?fieldManager=kubectl", cm("a", C="9"), content_type=APPLY)[0]
        == 200
    )
    status, body = call(api, "PATCH", path, cm("a", A="3"), content_type=APPLY)
    assert body["data"] == {"A": "3", "C": "9"}
    status, body = call(api, "PATCH", f"{CM}/a?fieldManager=x", cm("a", C="1"), content_type=APPLY)
    assert (status, body["reason"]) == (409, "Conflict")
    stale = cm("a", A="4")
    stale["metadata"]["resourceVersion"] = "1"
    assert call(api, "PATCH", path, stale, content_type=APPLY)[0] == 409
    assert (
        call(api, "PATCH", f"{CM}/a", cm("a"), content_type=APPLY)[0] == 400
    )  # fieldManager required


def test_dry_run_stores_nothing(api: FakeApiServer) -> None:
    status, body = call(
        api, "PATCH", f"{CM}/d?fieldManager=m&dryRun=All", cm("d", A="1"), content_type=APPLY
    )
    assert status == 201 and body["data"] == {"A": "1"}
    assert api.get("ml", "d") is None
    assert (
        call(api, "PATCH", f"{CM}/d?fieldManager=m&dryRun=Some", cm("d"), content_type=APPLY)[0]
        == 400
    )


def test_validation_is_422(api: FakeApiServer) -> None:
    assert call(api, "POST", CM, cm("Bad_Name"))[0] == 422
    status, body = call(api, "POST", CM, cm("ok", **{"bad key": "1"}))
    assert (status, body["reason"]) == (422, "Invalid")
    labelled = cm("ok2")
    labelled["metadata"]["labels"] = {"a": "not valid!"}
    assert call(api, "POST", CM, labelled)[0] == 422
    assert (
        call(api, "PATCH", f"{CM}/mismatch?fieldManager=m", cm("other"), content_type=APPLY)[0]
        == 400
    )
    assert call(api, "GET", f"{CM}/")[0] == 404


def test_strictness(api: FakeApiServer) -> None:
    assert call(api, "GET", "/api/v1/namespaces/ml/secrets/x")[0] == 404
    # resources under the wrong API group do not exist
    assert call(api, "GET", "/apis/apps/v1/namespaces/ml/configmaps")[0] == 404
    assert call(api, "GET", "/api/v1/namespaces/ml/deployments")[0] == 404
    assert call(api, "POST", f"{CM}/x", cm("x"))[0] == 405
    merge = "application/merge-patch+json"
    assert call(api, "PATCH", f"{CM}/x?fieldManager=m", cm("x"), content_type=merge)[0] == 415
    assert call(api, "POST", CM, cm("y"), content_type="text/plain")[0] == 415
    assert call(api, "GET", f"{CM}/x?watch=true")[0] == 400
    status, body = call(api, "GET", f"{CM}/x", token="wrong")
    assert (status, body["reason"]) == (401, "Unauthorized")


def test_faults_are_served_then_cleared(api: FakeApiServer) -> None:
    api.inject(429, times=1, retry_after="3")
    request = urllib.request.Request(api.url + f"{CM}/x")
    request.add_header("Authorization", f"Bearer {api.token}")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 429 and info.value.headers["Retry-After"] == "3"
    assert call(api, "GET", f"{CM}/x")[0] == 404
    assert [r.status for r in api.requests] == [429, 404]


# --------------------------------------------------------------------------------------------------
# apps/v1 workloads (run --restart) and lists (status)

DEPLOY = "/apis/apps/v1/namespaces/ml/deployments"
SMP = "application/strategic-merge-patch+json"


def template_patch(value: str) -> dict[str, Any]:
    return {"spec": {"template": {"metadata": {"annotations": {"k.io/h": value}}}}}


@pytest.fixture
def apps_api(tmp_path: Path) -> Any:
    rules = [Rule(("apps",), ("deployments",), ("get", "patch"), ("web", "ghost"))]
    with FakeApiServer(tmp_path, rules=rules) as server:
        server.put_workload(workload("deployments", "ml", "web"))
        server.put_workload(workload("deployments", "ml", "other"))
        yield server


def test_a_workload_patch_bumps_generation_only_when_the_spec_changes(apps_api: Any) -> None:
    status, before = call(apps_api, "GET", f"{DEPLOY}/web")
    assert (status, before["metadata"]["generation"]) == (200, 1)
    status, body = call(apps_api, "PATCH", f"{DEPLOY}/web", template_patch("a"), content_type=SMP)
    assert (status, body["metadata"]["generation"]) == (200, 2)
    assert body["spec"]["template"]["spec"] == before["spec"]["template"]["spec"]
    rv = body["metadata"]["resourceVersion"]
    # the same value again: nothing changes, not even the resourceVersion
    status, body = call(apps_api, "PATCH", f"{DEPLOY}/web", template_patch("a"), content_type=SMP)
    assert (body["metadata"]["generation"], body["metadata"]["resourceVersion"]) == (2, rv)
    # metadata only: a new resourceVersion, no new generation (no rollout)
    labels = {"metadata": {"labels": {"team": "ml"}}}
    merge = "application/merge-patch+json"
    status, body = call(apps_api, "PATCH", f"{DEPLOY}/web", labels, content_type=merge)
    assert body["metadata"]["generation"] == 2 and body["metadata"]["resourceVersion"] != rv
    ops = [{"op": "add", "path": "/spec/template/metadata/annotations/k.io~1h", "value": "b"}]
    jp = "application/json-patch+json"
    status, body = call(apps_api, "PATCH", f"{DEPLOY}/web", ops, content_type=jp)
    assert (status, body["metadata"]["generation"]) == (200, 3)
    assert body["spec"]["template"]["metadata"]["annotations"] == {"k.io/h": "b"}


def test_a_workload_dry_run_stores_nothing_and_the_fake_is_strict(apps_api: Any) -> None:
    path = f"{DEPLOY}/web?dryRun=All&fieldManager=m"
    status, body = call(apps_api, "PATCH", path, template_patch("x"), content_type=SMP)
    assert (status, body["metadata"]["generation"]) == (200, 2)
    assert apps_api.workload("deployments", "ml", "web")["metadata"]["generation"] == 1
    status, body = call(apps_api, "GET", f"{DEPLOY}/ghost")
    assert (status, body["reason"], body["details"]["kind"]) == (404, "NotFound", "deployments")
    assert call(apps_api, "GET", f"{DEPLOY}/other")[0] == 403  # not in resourceNames
    assert call(apps_api, "PATCH", f"{DEPLOY}/web", template_patch("x"), content_type=APPLY)[0] == (
        415
    )
    assert call(apps_api, "PUT", f"{DEPLOY}/web", template_patch("x"))[0] == 405
    listy = {"spec": {"template": {"spec": {"containers": []}}}}
    assert call(apps_api, "PATCH", f"{DEPLOY}/web", listy, content_type=SMP)[0] == 400
    bad = {"spec": {"template": {"metadata": {"annotations": {"k": 1}}}}}
    assert call(apps_api, "PATCH", f"{DEPLOY}/web", bad, content_type=SMP)[0] == 422
    renamed = {"metadata": {"name": "web2"}}
    assert call(apps_api, "PATCH", f"{DEPLOY}/web", renamed, content_type=SMP)[0] == 422
    unmatched = {"spec": {"template": {"metadata": {"labels": {"app.kubernetes.io/name": "x"}}}}}
    assert call(apps_api, "PATCH", f"{DEPLOY}/web", unmatched, content_type=SMP)[0] == 422


def test_lists_select_by_label_and_all_namespaces_need_a_cluster_role(tmp_path: Path) -> None:
    reader = [Rule(("",), ("configmaps",), ("get", "list"))]
    with FakeApiServer(tmp_path, namespaces=("ml", "web"), rules=reader) as api:
        for ns, name, labels in [
            ("ml", "a", {"x": "1"}),
            ("ml", "b", {}),
            ("web", "c", {"x": "1"}),
        ]:
            api.put({**cm(name), "metadata": {"name": name, "namespace": ns, "labels": labels}})
        status, body = call(api, "GET", f"{CM}?labelSelector=x%3D1")
        assert status == 200 and [i["metadata"]["name"] for i in body["items"]] == ["a"]
        assert "kind" not in body["items"][0] and "apiVersion" not in body["items"][0]
        status, body = call(api, "GET", f"{CM}?labelSelector=x%21%3D1")
        assert [i["metadata"]["name"] for i in body["items"]] == ["b"]
        assert call(api, "GET", f"{CM}?labelSelector=x%20in%20%281%29")[0] == 400
        assert call(api, "GET", "/api/v1/configmaps")[0] == 403  # the Role is one namespace's
        assert call(api, "GET", "/api/v1/namespaces/web/configmaps")[0] == 403
        api.cluster_rules = reader
        status, body = call(api, "GET", "/api/v1/configmaps?labelSelector=x")
        assert [i["metadata"]["name"] for i in body["items"]] == ["a", "c"]


def test_lists_of_workloads_and_pods_are_as_strict_as_a_real_server(tmp_path: Path) -> None:
    """What ``status`` relies on: field selectors only on the fields the API server supports,
    pages with continue tokens, metadata-only lists, and list rules per resource."""
    from testkit.fakeapi.pods import bare_pod

    rules = [
        Rule(("apps",), ("deployments", "daemonsets"), ("list",)),
        Rule(("",), ("pods", "configmaps"), ("list",)),
    ]
    with FakeApiServer(tmp_path, rules=rules) as api:
        for name in ("a", "b", "c"):
            api.put_workload(workload("deployments", "ml", name))
        api.put_workload(workload("daemonsets", "ml", "agent"))
        api.put({**cm("x"), "metadata": {"name": "x", "namespace": "ml"}})
        started = datetime(2026, 1, 1, tzinfo=timezone.utc)
        api.put_pod(bare_pod("ml", "up", container={}, started=started))
        api.put_pod(bare_pod("ml", "done", container={}, started=started, phase="Succeeded"))
        pods = "/api/v1/namespaces/ml/pods"
        status, body = call(api, "GET", f"{pods}?fieldSelector=status.phase%21%3DSucceeded")
        assert (status, [i["metadata"]["name"] for i in body["items"]]) == (200, ["up"])
        assert body["kind"] == "PodList" and "kind" not in body["items"][0]
        status, body = call(api, "GET", f"{pods}?fieldSelector=spec.containers%3Dx")
        assert (status, body["message"]) == (400, 'field label not supported: "spec.containers"')
        # a deployment cannot be selected by a pod's field
        assert call(api, "GET", f"{DEPLOY}?fieldSelector=status.phase%3DRunning")[0] == 400
        status, first = call(api, "GET", f"{DEPLOY}?limit=2")
        assert [i["metadata"]["name"] for i in first["items"]] == ["a", "b"]
        token = first["metadata"]["continue"]
        status, rest = call(api, "GET", f"{DEPLOY}?limit=2&continue={token}")
        assert [i["metadata"]["name"] for i in rest["items"]] == ["c"]
        assert "continue" not in rest["metadata"]
        assert call(api, "GET", f"{DEPLOY}?limit=2&continue=bogus")[0] == 400
        assert call(api, "GET", f"{DEPLOY}?limit=two")[0] == 400
        status, body = call(api, "GET", "/apis/apps/v1/namespaces/ml/daemonsets")
        assert (status, body["kind"], len(body["items"])) == (200, "DaemonSetList", 1)
        assert call(api, "GET", "/apis/apps/v1/namespaces/ml/statefulsets")[0] == 403
        assert call(api, "GET", "/apis/apps/v1/deployments")[0] == 403  # no ClusterRole
        assert call(api, "POST", DEPLOY, {})[0] == 405
        # metadata only, when asked as the API server's PartialObjectMetadataList
        meta = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
        status, body = call(api, "GET", CM, accept=meta)
        assert (status, body["kind"]) == (200, "PartialObjectMetadataList")
        (item,) = body["items"]
        assert set(item) == {"apiVersion", "kind", "metadata"} and item["metadata"]["name"] == "x"
        table = "application/json;as=Table;g=meta.k8s.io;v=v1"
        assert call(api, "GET", CM, accept=table)[0] == 406

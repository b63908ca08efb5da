"""v1 PersistentVolumeClaims in the strict fake API server, over real HTTP with the official client,
and ``cluster.plan_lists.list_claims`` against it: what plan's storage decisions rely on must be
what a real API server answers (lists, reads, 404, RBAC, a claim no real server would store)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from advisor.cluster import RetryPolicy, connect
from advisor.cluster.plan_lists import list_claims
from advisor.errors import ForbiddenError
from testkit.fakeapi.claims import claim
from testkit.fakeapi.rbac import Rule
from testkit.fakeapi.server import FakeApiServer

NS = "ml"
READ = [Rule(("",), ("persistentvolumeclaims",), ("get", "list"))]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(tmp_path, namespaces=(NS, "other"), rules=READ) as server:
        yield server


def core(api: FakeApiServer) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(str(api.kubeconfig)))


def raw(call: Any, *args: Any) -> tuple[int, dict[str, Any]]:
    try:
        resp = call(*args, _preload_content=False)
        return resp.status, json.loads(resp.data)
    except ApiException as exc:
        return int(exc.status), json.loads(exc.body)


def fast() -> RetryPolicy:
    return RetryPolicy(total_s=5.0, request_timeout_s=1.0, base_delay_s=0.02, max_delay_s=0.1)


def test_claims_are_listed_and_read_as_the_server_keeps_them(api: FakeApiServer) -> None:
    api.put_claim(
        claim(NS, "models", ["ReadWriteOnce"], bound_modes=["ReadWriteOnce", "ReadOnlyMany"])
    )
    api.put_claim(claim(NS, "scratch", ["ReadWriteOncePod"]))
    api.put_claim(claim("other", "elsewhere", ["ReadWriteMany"]))
    pvcs = core(api)
    listed = pvcs.list_namespaced_persistent_volume_claim(NS)
    assert [c.metadata.name for c in listed.items] == ["models", "scratch"]
    bound = pvcs.read_namespaced_persistent_volume_claim("models", NS)
    assert bound.spec.access_modes == ["ReadWriteOnce"]
    assert bound.status.phase == "Bound"
    # the PersistentVolume's modes, which may allow more than the claim asked for
    assert bound.status.access_modes == ["ReadWriteOnce", "ReadOnlyMany"]
    assert bound.spec.volume_mode == "Filesystem" and bound.metadata.uid
    pending = pvcs.read_namespaced_persistent_volume_claim("scratch", NS)
    assert pending.status.phase == "Pending" and pending.status.access_modes is None
    status, body = raw(pvcs.read_namespaced_persistent_volume_claim, "gone", NS)
    assert (status, body["reason"], body["message"]) == (
        404,
        "NotFound",
        'persistentvolumeclaims "gone" not found',
    )
    assert body["details"] == {"name": "gone", "kind": "persistentvolumeclaims"}


def test_reading_claims_needs_the_rule(api: FakeApiServer) -> None:
    api.put_claim(claim(NS, "models", ["ReadWriteMany"]))
    api.rules = [Rule(("",), ("configmaps",), ("get", "list"))]
    pvcs = core(api)
    status, body = raw(pvcs.list_namespaced_persistent_volume_claim, NS)
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == (
        'persistentvolumeclaims is forbidden: User "system:serviceaccount:ml:tf-thread-advisor" '
        'cannot list resource "persistentvolumeclaims" in API group "" in the namespace "ml"'
    )
    assert raw(pvcs.read_namespaced_persistent_volume_claim, "models", NS)[0] == 403
    # the Role's namespace only
    api.rules = READ
    assert raw(pvcs.list_namespaced_persistent_volume_claim, "other")[0] == 403


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            claim(NS, "c", []),
            "spec.accessModes: Required value: at least 1 access mode is required",
        ),
        (
            claim(NS, "c", ["ReadWriteSome"]),
            'spec.accessModes: Unsupported value: "ReadWriteSome": supported values: '
            '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
        ),
        (
            claim(NS, "c", ["ReadWriteOncePod", "ReadOnlyMany"]),
            "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
        ),
        (
            {**claim(NS, "c", ["ReadWriteMany"]), "spec": {"accessModes": ["ReadWriteMany"]}},
            "spec.resources[storage]: Required value",
        ),
        (claim(NS, "Bad_Name", ["ReadWriteMany"]), 'metadata.name: Invalid value: "Bad_Name"'),
        (
            {**claim(NS, "c", ["ReadWriteMany"]), "spec": {"accessModes": "ReadWriteMany"}},
            "cannot unmarshal string into Go struct field .spec.accessModes",
        ),
        (
            {**claim(NS, "c", ["ReadWriteMany"]), "mode": "shared"},
            'strict decoding error: unknown field "mode"',
        ),
    ],
    ids=["no-mode", "unknown-mode", "rwop-with-others", "no-storage", "name", "type", "field"],
)
def test_a_claim_no_real_server_would_store_is_refused(
    api: FakeApiServer, body: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match="not a valid PersistentVolumeClaim") as caught:
        api.put_claim(body)
    assert message in str(caught.value)


def test_list_claims_pages_and_puts_back_kind(api: FakeApiServer) -> None:
    for index in range(5):
        api.put_claim(claim(NS, f"c-{index}", ["ReadWriteMany"]))
    found = list_claims(connect(api.kubeconfig), NS, fast(), page_size=2)
    assert [c["metadata"]["name"] for c in found] == [f"c-{i}" for i in range(5)]
    assert {(c["apiVersion"], c["kind"]) for c in found} == {("v1", "PersistentVolumeClaim")}
    pages = [r for r in api.requests if r.path == f"/api/v1/namespaces/{NS}/persistentvolumeclaims"]
    assert [r.query.get("limit") for r in pages] == ["2", "2", "2"]


def test_list_claims_forbidden_names_the_rule(api: FakeApiServer) -> None:
    api.rules = []
    with pytest.raises(ForbiddenError) as caught:
        list_claims(connect(api.kubeconfig), NS, fast())
    assert (
        "cannot list persistentvolumeclaims in namespace ml; plan needs a Role allowing list "
        "persistentvolumeclaims (core); deploy/components/fleet binds one" in str(caught.value)
    )

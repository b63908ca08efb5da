"""``plan`` and where the model is, through the real CLI against the strict fake API server under
the planner's Role of the shipped kustomize component: a model only one node (or one pod) may
mount, or one in object storage, is skipped; a claim any node may mount is calibrated; the claims
are listed once, with the rule the Role grants.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import ForbiddenError
from testkit.fakeapi.apps import workload
from testkit.fakeapi.claims import claim
from testkit.fakeapi.rbac import Rule, fleet_rules
from testkit.fakeapi.server import FakeApiServer
from tests.integration.test_plan import NS, decisions, opted_in, plan, server

PLANNER = fleet_rules("-planner")
CLAIMS = "persistentvolumeclaims"


def on_claim(name: str, claim_name: str) -> dict[str, Any]:
    """An opted-in Deployment serving /models/<name> from a mount of ``claim_name``."""
    return opted_in(
        name,
        server(name, "1", model_mount=True),
        {"volumes": [{"name": "models", "persistentVolumeClaim": {"claimName": claim_name}}]},
        **{"tf-thread-advisor.io/model": f"/models/{name}"},
    )


def statefulset(name: str, modes: list[str]) -> dict[str, Any]:
    """An opted-in StatefulSet whose model is on its claim template ``models`` (``modes``)."""
    obj = workload("statefulsets", NS, name, container=server(name, "1", model_mount=True))
    obj["metadata"]["labels"] = {"tf-thread-advisor.io/calibrate": "true"}
    obj["metadata"]["annotations"] = {"tf-thread-advisor.io/model": f"/models/{name}"}
    obj["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "models"},
            "spec": {"accessModes": modes, "resources": {"requests": {"storage": "5Gi"}}},
        }
    ]
    return obj


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(tmp_path, namespaces=(NS,), rules=PLANNER) as fake:
        fake.put_workload(on_claim("shared", "models-shared"))
        fake.put_claim(claim(NS, "models-shared", ["ReadWriteMany"], bound_modes=["ReadWriteMany"]))
        fake.put_workload(statefulset("db", ["ReadWriteOnce"]))
        # the controller made replica 0's claim from the template, bound on one node
        fake.put_claim(claim(NS, "models-db-0", ["ReadWriteOnce"], bound_modes=["ReadWriteOnce"]))
        yield fake


def claim_lists(api: FakeApiServer) -> list[str]:
    return [r.path for r in api.requests if r.path.endswith(f"/{CLAIMS}")]


def test_a_read_write_once_claim_template_is_skipped_a_read_write_many_claim_calibrated(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    decided = decisions(capsys, api, "--apply")
    db = decided["statefulset/db"]
    assert db["decision"] == "skipped"
    for said in ("models-db-0", "ReadWriteOnce", "ReadOnlyMany or ReadWriteMany", "image"):
        assert said in db["reason"], db["reason"]
    assert decided["deployment/shared"]["decision"] == "calibrate"
    created = [
        r.body
        for r in api.requests
        if r.method == "POST" and r.path.endswith("/jobs") and r.status == 201
    ]
    assert [j["metadata"]["annotations"]["tf-thread-advisor.io/workload"] for j in created] == [
        "deployment/shared"
    ]
    (volume,) = [
        v for v in created[0]["spec"]["template"]["spec"]["volumes"] if "persistentVolumeClaim" in v
    ]
    assert volume["persistentVolumeClaim"] == {"claimName": "models-shared", "readOnly": True}
    # one list of the namespace's claims per plan, whatever the number of workloads
    assert claim_lists(api) == [f"/api/v1/namespaces/{NS}/{CLAIMS}"]


def test_a_claim_bound_to_a_volume_any_node_may_mount_is_calibrated(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The claim asked for ReadWriteOnce, its PersistentVolume (status) also allows
    ReadOnlyMany: the attach controller lets other nodes mount it."""
    api.put_workload(on_claim("nfs", "models-nfs"))
    api.put_claim(
        claim(NS, "models-nfs", ["ReadWriteOnce"], bound_modes=["ReadWriteOnce", "ReadOnlyMany"])
    )
    api.put_workload(on_claim("single", "models-single"))
    api.put_claim(claim(NS, "models-single", ["ReadWriteOncePod"]))
    api.put_workload(on_claim("gone", "models-gone"))
    decided = decisions(capsys, api)
    assert decided["deployment/nfs"]["decision"] == "calibrate", decided["deployment/nfs"]
    single = decided["deployment/single"]
    assert single["decision"] == "skipped"
    assert "ReadWriteOncePod" in single["reason"] and "only one pod" in single["reason"]
    gone = decided["deployment/gone"]
    assert gone["decision"] == "skipped"
    assert "models-gone" in gone["reason"] and "does not exist" in gone["reason"]


def test_a_model_in_object_storage_is_skipped_with_what_to_do(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    tf_serving = server("gcs", "1")
    tf_serving["args"] = ["--model_name=resnet", "--model_base_path=gs://models/resnet"]
    api.put_workload(
        opted_in("gcs", tf_serving, **{"tf-thread-advisor.io/model": "/models/resnet"})
    )
    api.put_workload(
        opted_in("s3", server("s3", "1"), **{"tf-thread-advisor.io/model": "s3://models/x"})
    )
    decided = decisions(capsys, api)
    for name, scheme in (("deployment/gcs", "gs://"), ("deployment/s3", "s3://")):
        assert decided[name]["decision"] == "skipped"
        reason = decided[name]["reason"]
        assert f"object storage ({scheme})" in reason and "docs/deploy.md" in reason, reason


def test_without_the_rule_on_claims_the_plan_stops_naming_it(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert Rule(("",), (CLAIMS,), ("get", "list")) in PLANNER  # what the component grants
    api.rules = [r for r in PLANNER if CLAIMS not in r.resources]
    code, _, err = plan(capsys, api, "--apply")
    assert code == ForbiddenError.exit_code
    assert f"list {CLAIMS}" in err and "deploy/components/fleet" in err, err
    assert not [r for r in api.requests if r.method == "POST"], "a Job was created anyway"

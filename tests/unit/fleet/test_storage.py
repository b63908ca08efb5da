"""Where the model is: a claim only one node (ReadWriteOnce) or one pod (ReadWriteOncePod) may
mount, as a pod volume or a StatefulSet's claim template, and object storage, are refused with
what to use instead; a claim any node may mount is copied from."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from advisor.fleet.decide import decide
from advisor.fleet.derive import DerivedJob, DeriveError, derive_job
from advisor.fleet.optin import Defaults, OptInError, read_ask
from advisor.fleet.storage import object_storage_scheme
from advisor.keys import ANN_MODEL
from advisor.models.kube import KubeClaim, KubeWorkload
from advisor.render.plan_reasons import plan_reason_text
from tests.support.fleet_workloads import SETTINGS, container, deployment, statefulset, view

MODEL = "/models/resnet/1"
INSTEAD = ("ReadOnlyMany or ReadWriteMany claim", "serving image", "image volume", "ConfigMap")


def pvc(name: str, modes: list[str], bound: list[str] | None = None) -> KubeClaim:
    """A claim as the API server lists it, as plan reads it: bound ones carry their volume's
    modes."""
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"accessModes": modes, "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"},
    }
    if bound is not None:
        obj["status"] = {"phase": "Bound", "accessModes": bound}
    return KubeClaim.read(obj)


def on_volume(claim: str = "models") -> dict[str, Any]:
    return deployment(
        container(mounts=[{"name": "store", "mountPath": "/models"}]),
        volumes=[{"name": "store", "persistentVolumeClaim": {"claimName": claim}}],
    )


def on_template(modes: list[str]) -> dict[str, Any]:
    workload = statefulset(
        container(mounts=[{"name": "data", "mountPath": "/models"}]),
        name="db",
        claim_templates=("data",),
    )
    workload["spec"]["volumeClaimTemplates"][0]["spec"]["accessModes"] = modes
    return workload


def derive(
    workload: dict[str, Any],
    claims: dict[str, KubeClaim] | None,
    kind: str = "Deployment",
) -> DerivedJob:
    return derive_job(
        view(workload, kind),
        read_ask({ANN_MODEL: MODEL}),
        configmap="advice",
        settings=SETTINGS,
        claims=claims,
    )


def claim_of(job: DerivedJob, volume: str) -> dict[str, Any]:
    volumes = {v["name"]: v for v in job.manifest["spec"]["template"]["spec"]["volumes"]}
    claim: dict[str, Any] = volumes[volume]["persistentVolumeClaim"]
    return claim


# --------------------------------------------------------------------------------------------------
# A claim mounted as a pod volume


@pytest.mark.parametrize(
    ("modes", "reach"),
    [
        (["ReadWriteOnce"], "only pods on the node it is attached to"),
        (["ReadWriteOncePod"], "only one pod may mount it"),
    ],
)
def test_a_model_on_a_claim_only_one_node_or_pod_may_mount_is_refused(
    modes: list[str], reach: str
) -> None:
    with pytest.raises(DeriveError) as caught:
        derive(on_volume(), {"models": pvc("models", modes, bound=modes)})
    message = str(caught.value)
    assert f"PersistentVolumeClaim models, whose access mode is {modes[0]}:" in message
    assert "volume store" in message and reach in message
    for what in INSTEAD:
        assert what in message


@pytest.mark.parametrize(
    ("modes", "bound"),
    [
        (["ReadOnlyMany"], ["ReadOnlyMany"]),
        (["ReadWriteMany"], ["ReadWriteMany"]),
        (["ReadWriteOnce", "ReadOnlyMany"], None),  # asked for both, not bound yet
        # asked for ReadWriteOnce; its volume also allows ReadWriteMany (an NFS share)
        (["ReadWriteOnce"], ["ReadWriteOnce", "ReadWriteMany"]),
    ],
)
def test_a_claim_any_node_may_mount_is_copied_from_read_only(
    modes: list[str], bound: list[str] | None
) -> None:
    job = derive(on_volume(), {"models": pvc("models", modes, bound)})
    assert claim_of(job, "store") == {"claimName": "models", "readOnly": True}


def test_both_access_mode_lists_are_named_when_neither_is_shared() -> None:
    with pytest.raises(DeriveError, match="access modes are ReadWriteOnce and ReadWriteOncePod"):
        derive(on_volume(), {"models": pvc("models", ["ReadWriteOnce"], ["ReadWriteOncePod"])})


def test_a_claim_that_does_not_exist_is_refused_by_name() -> None:
    others = {"other": pvc("other", ["ReadWriteMany"])}
    with pytest.raises(DeriveError, match="PersistentVolumeClaim models, which does not exist"):
        derive(on_volume(), others)


def test_claims_not_read_leave_a_pod_volumes_claim_unchecked() -> None:
    """derive_job without the namespace's claims (a caller that did not list them)."""
    assert claim_of(derive(on_volume(), None), "store")["claimName"] == "models"


# --------------------------------------------------------------------------------------------------
# A StatefulSet's claim template


@pytest.mark.parametrize("mode", ["ReadWriteOnce", "ReadWriteOncePod"])
def test_a_claim_template_only_one_node_or_pod_may_mount_is_refused(mode: str) -> None:
    with pytest.raises(DeriveError) as caught:
        derive(on_template([mode]), None, kind="StatefulSet")
    message = str(caught.value)
    assert "PersistentVolumeClaim data-db-0 (from the StatefulSet's claim template data)" in (
        message
    )
    assert f"access mode is {mode}" in message
    for what in INSTEAD:
        assert what in message


@pytest.mark.parametrize(
    "modes", [["ReadOnlyMany"], ["ReadWriteMany"], ["ReadWriteOnce", "ReadOnlyMany"]]
)
def test_a_claim_template_any_node_may_mount_gives_the_first_replicas_claim(
    modes: list[str],
) -> None:
    claims = {"data-db-0": pvc("data-db-0", modes, bound=modes)}
    job = derive(on_template(modes), claims, kind="StatefulSet")
    assert claim_of(job, "data") == {"claimName": "data-db-0", "readOnly": True}


def test_a_replicas_claim_bound_to_a_shared_volume_is_copied_from() -> None:
    """The template asked for ReadWriteOnce; the claim made from it is bound to a volume that
    also allows ReadOnlyMany."""
    claims = {"data-db-0": pvc("data-db-0", ["ReadWriteOnce"], ["ReadWriteOnce", "ReadOnlyMany"])}
    job = derive(on_template(["ReadWriteOnce"]), claims, kind="StatefulSet")
    assert claim_of(job, "data")["claimName"] == "data-db-0"


def test_a_claim_template_whose_first_replicas_claim_is_missing_is_refused() -> None:
    with pytest.raises(DeriveError, match=r"data-db-0 .*which does not exist"):
        derive(on_template(["ReadWriteMany"]), {}, kind="StatefulSet")


# --------------------------------------------------------------------------------------------------
# Object storage


@pytest.mark.parametrize(
    "fields",
    [
        {"args": ["--port=8500", "--model_base_path=gs://models/resnet"]},
        {"args": ["--model_base_path", "s3://models/resnet"]},
        {"command": ["tensorflow_model_server", "--model_base_path=az://acct/models"]},
        {"command": ["/bin/sh", "-c"], "args": ["exec x --model_base_path='hdfs://nn/m' --x=1"]},
        {"args": ["--model_base_path=https://models.example.com/resnet"]},
        {"env": [{"name": "MODEL_BASE_PATH", "value": "gs://models"}]},
    ],
    ids=["args=", "args-space", "command", "shell", "https", "env"],
)
def test_a_server_reading_its_model_from_object_storage_is_refused(fields: dict[str, Any]) -> None:
    workload = deployment(container(**fields))
    with pytest.raises(DeriveError) as caught:
        derive(workload, {})
    message = str(caught.value)
    assert "the server reads its model from object storage" in message
    assert "calibration pod's copy cannot read" in message
    assert "from a volume or the image" in message and "docs/deploy.md" in message


@pytest.mark.parametrize(
    "fields",
    [
        {"args": ["--model_base_path=/models/resnet"]},
        # the config file names the base paths: the planner cannot read it, so leaves it
        {"args": ["--model_config_file=/config/models.conf"]},
        {"args": ["--model_base_path_prefix=gs://not-the-flag"]},
        {"env": [{"name": "MODEL_BASE_PATH", "value": "/models"}]},
    ],
)
def test_a_local_model_path_is_not_object_storage(fields: dict[str, Any]) -> None:
    assert derive(deployment(container(**fields)), {}).name


@pytest.mark.parametrize(
    ("path", "scheme"),
    [
        ("gs://b/m", "gs"),
        ("S3://b/m", "s3"),
        ("http://h/m", "http"),
        ("hdfs://nn/m", "hdfs"),
        ("/models/gs://odd", None),
        ("file:///models", None),
        ("models", None),
    ],
)
def test_object_storage_schemes(path: str, scheme: str | None) -> None:
    assert object_storage_scheme(path) == scheme


def test_a_model_annotation_in_object_storage_says_so() -> None:
    with pytest.raises(OptInError) as caught:
        read_ask({ANN_MODEL: "gs://models/resnet"})
    message = str(caught.value)
    assert f"annotation {ANN_MODEL} is 'gs://models/resnet'" in message
    assert "object storage (gs://)" in message and "must be an absolute path" not in message
    with pytest.raises(OptInError, match="must be an absolute path"):
        read_ask({ANN_MODEL: "models/resnet"})


# --------------------------------------------------------------------------------------------------
# As plan decides


def test_plan_skips_each_with_its_reason_and_calibrates_the_shared_claim() -> None:
    def named(workload: dict[str, Any], name: str) -> dict[str, Any]:
        workload["metadata"]["name"] = name
        return workload

    workloads = [
        named(on_volume("rwo"), "a"),
        named(on_volume("rwx"), "b"),
        named(on_template(["ReadWriteOnce"]), "c"),
        named(deployment(container(args=["--model_base_path=gs://m"])), "d"),
    ]
    for obj in workloads:  # each reads its own advice ConfigMap
        name = obj["metadata"]["name"]
        obj["metadata"]["annotations"]["tf-thread-advisor.io/configmap"] = f"advice-{name}"
    claims = {"rwo": pvc("rwo", ["ReadWriteOnce"]), "rwx": pvc("rwx", ["ReadWriteMany"])}
    decided = decide(
        [KubeWorkload.read(obj) for obj in workloads],
        {},
        [],
        defaults=Defaults(),
        settings=SETTINGS,
        now=datetime(2026, 1, 1, tzinfo=timezone.utc),
        claims=claims,
    )
    verdicts = {str(p.workload): (p.decision, plan_reason_text(p.reason)) for p in decided}
    assert verdicts["deployment/b"][0] == "calibrate"
    assert verdicts["deployment/a"][0] == "skipped" and "Claim rwo," in verdicts["deployment/a"][1]
    assert verdicts["statefulset/c"][0] == "skipped"
    assert "data-c-0" in verdicts["statefulset/c"][1]
    assert verdicts["deployment/d"][0] == "skipped" and "gs://" in verdicts["deployment/d"][1]

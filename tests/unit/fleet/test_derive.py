"""The calibration Job derived from a workload: its labels and annotations, who owns it, the
target it names, a manifest of plain data, and which container is the serving one."""

from __future__ import annotations

import copy

import pytest
import yaml

from advisor.fleet import derive as derive_module
from advisor.fleet.derive import DeriveError, serving_container
from advisor.keys import (
    ANN_CONFIGMAP,
    ANN_CONTAINER,
    ANN_JOB_POOL,
    ANN_JOB_WORKLOAD,
    LABEL_POOL_HASH,
    LABEL_SPEC_HASH,
    PLANNED_SELECTOR,
)
from advisor.models.kube import PodSpec
from tests.support.fleet_workloads import (
    MODEL,
    SERVING_IMAGE,
    advisor,
    ask,
    container,
    copier,
    deployment,
    derive,
    pod,
    pvc_deployment,
)

# --------------------------------------------------------------------------------------------------
# The Job: the shipped settings, metadata, ownership


def test_labels_and_annotations_say_what_the_job_calibrates() -> None:
    job = derive(pvc_deployment(nodeSelector={"pool": "cpu-a"}), configmap="resnet-advice")
    metadata = job.manifest["metadata"]
    assert metadata["namespace"] == "ml"
    assert metadata["labels"] == {
        "app.kubernetes.io/name": "tf-thread-advisor",
        "app.kubernetes.io/component": "calibration",
        "app.kubernetes.io/managed-by": "tf-thread-advisor-plan",
        LABEL_SPEC_HASH: job.spec_hash,
        LABEL_POOL_HASH: job.pool_hash,
    }
    annotations = metadata["annotations"]
    assert annotations[ANN_JOB_WORKLOAD] == "deployment/resnet"
    assert annotations[ANN_CONTAINER] == "server"
    assert annotations[ANN_CONFIGMAP] == "resnet-advice"
    assert annotations[ANN_JOB_POOL] == "pool=cpu-a"
    assert job.manifest["spec"]["template"]["metadata"]["labels"] == {
        "app.kubernetes.io/name": "tf-thread-advisor",
        "app.kubernetes.io/component": "calibration",
        LABEL_SPEC_HASH: job.spec_hash,
        # the meshes' opt-outs (test_advisor_pod.py)
        "sidecar.istio.io/inject": "false",
        "kuma.io/sidecar-injection": "disabled",
    }
    # the planner's list selector finds the Job and its pods
    for labels in (metadata["labels"], job.manifest["spec"]["template"]["metadata"]["labels"]):
        for pair in PLANNED_SELECTOR.split(","):
            key, value = pair.split("=")
            assert labels[key] == value


def test_the_workload_owns_its_calibrations_without_controlling_them() -> None:
    workload = deployment()
    job = derive(workload)
    assert job.manifest["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "resnet",
            "uid": workload["metadata"]["uid"],
            "controller": False,
            "blockOwnerDeletion": False,
        }
    ]


def test_a_workload_without_uid_is_refused() -> None:
    with pytest.raises(DeriveError, match="uid"):
        derive(deployment(uid=None))


def test_the_target_names_the_serving_container() -> None:
    job = derive(pvc_deployment())
    target = job.target
    assert str(target.workload) == "deployment/resnet"
    assert target.container == "server"
    assert target.image == SERVING_IMAGE
    assert target.model_path == MODEL
    assert target.cpu_from == "limit"
    assert target.spec_hash == job.spec_hash


def test_the_manifest_is_plain_data_and_the_input_is_untouched() -> None:
    workload = pvc_deployment(
        nodeSelector={"pool": "a"}, tolerations=[{"key": "k", "operator": "Exists"}]
    )
    before = copy.deepcopy(workload)
    job = derive(workload)
    assert workload == before
    assert yaml.safe_load(yaml.safe_dump(job.manifest)) == job.manifest
    # the manifest shares nothing with the workload: editing one leaves the other
    pod(job)["nodeSelector"]["pool"] = "b"
    pod(job)["tolerations"][0]["key"] = "x"
    advisor(job)["resources"]["limits"]["cpu"] = "8"
    assert workload == before


def test_the_manifest_is_built_when_first_asked_for_and_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a plan whose advice fits asks for the Job's name, hashes, pool and quota alone
    built: list[str] = []
    real = derive_module.pod_spec
    monkeypatch.setattr(
        derive_module, "pod_spec", lambda *a, **k: built.append("pod") or real(*a, **k)
    )
    job = derive(pvc_deployment(nodeSelector={"pool": "a"}))
    assert job.name and job.spec_hash and job.pool_hash and job.cpu
    assert built == []
    assert job.manifest["metadata"]["name"] == job.name
    assert job.manifest is job.manifest and job.printed["metadata"]["name"] == job.name
    assert built == ["pod"]


# --------------------------------------------------------------------------------------------------
# The serving container


def test_the_only_container_is_the_serving_one() -> None:
    spec = deployment(container("tf"))["spec"]["template"]["spec"]
    assert serving_container(PodSpec.read(spec), ask()).raw["name"] == "tf"


def test_init_containers_and_native_sidecars_are_never_the_serving_one() -> None:
    workload = deployment(
        container("tf"),
        initContainers=[
            container("fetch", command=["true"]),
            container("proxy", restartPolicy="Always"),
        ],
    )
    job = derive(workload)
    assert job.target.container == "tf"
    # neither is carried into the Job: it runs the copy and the advisor only
    assert [c["name"] for c in pod(job)["initContainers"]] == ["copy-model"]
    with pytest.raises(DeriveError, match="init container") as caught:
        derive(workload, ask(**{ANN_CONTAINER: "proxy"}))
    assert "tf" in str(caught.value)


def test_the_annotation_picks_among_several_containers() -> None:
    workload = deployment(
        container("metrics", image="exporter:1", resources={"limits": {"cpu": "100m"}}),
        container("tf", image="serving:2", resources={"limits": {"cpu": "3"}}),
    )
    job = derive(workload, ask(**{ANN_CONTAINER: "tf"}))
    assert job.target.container == "tf"
    assert job.target.image == "serving:2"
    assert copier(job)["image"] == "serving:2"
    assert job.cpu == 3.0
    assert job.name.startswith("tfta-resnet-tf-")


def test_several_containers_without_the_annotation_are_refused_by_name() -> None:
    workload = deployment(container("metrics"), container("tf"))
    with pytest.raises(DeriveError) as caught:
        derive(workload)
    message = str(caught.value)
    assert "metrics" in message
    assert "tf" in message
    assert ANN_CONTAINER in message


def test_an_annotation_naming_no_container_lists_them() -> None:
    workload = deployment(
        container("metrics"), container("tf"), initContainers=[container("fetch")]
    )
    with pytest.raises(DeriveError) as caught:
        derive(workload, ask(**{ANN_CONTAINER: "serving"}))
    assert str(caught.value) == (
        "annotation tf-thread-advisor.io/container='serving' names no container of its pod "
        "(containers: metrics, tf)"
    )
    with pytest.raises(DeriveError) as caught:
        derive(workload, ask(**{ANN_CONTAINER: "fetch"}))
    assert str(caught.value) == (
        "annotation tf-thread-advisor.io/container='fetch' names an init container (or a "
        "native sidecar), never the serving one (containers: metrics, tf)"
    )

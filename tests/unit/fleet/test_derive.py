"""The calibration Job derived from a workload's pod template: what it copies of the serving pod
(resources, placement, the model's one volume), what it leaves out, the shipped Job's settings,
its credentials, its arguments, its hashes and its name."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from advisor.fleet.derive import DerivedJob, DeriveError, JobSettings, derive_job, serving_container
from advisor.fleet.naming import MODEL_MOUNT, hash_of
from advisor.fleet.optin import CalibrationAsk, read_ask
from advisor.keys import (
    ANN_ASK_CONTAINER,
    ANN_BATCH_SIZE,
    ANN_BUDGET,
    ANN_CONCURRENCY,
    ANN_JOB_CONFIGMAP,
    ANN_JOB_CONTAINER,
    ANN_JOB_POOL,
    ANN_JOB_WORKLOAD,
    ANN_MODEL,
    ANN_OBJECTIVE,
    ANN_P99_MS,
    ANN_RESTART,
    LABEL_POOL_HASH,
    LABEL_SPEC_HASH,
    PLANNED_SELECTOR,
)
from advisor.models import WorkloadKind
from tests.support import REPO, run_python
from tests.support.fleet_workloads import (
    SERVING_IMAGE,
    SETTINGS,
    container,
    deployment,
    shapes,
    statefulset,
)

MODEL = "/models/resnet/1"
TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SHIPPED_JOB = yaml.safe_load((REPO / "deploy" / "job.yaml").read_text())


def ask(model: str = MODEL, **annotations: str) -> CalibrationAsk:
    return read_ask({ANN_MODEL: model, **annotations})


def derive(
    workload: dict[str, Any],
    the_ask: CalibrationAsk | None = None,
    *,
    kind: str = "Deployment",
    settings: JobSettings = SETTINGS,
    configmap: str = "resnet-advice",
) -> DerivedJob:
    return derive_job(
        WorkloadKind(kind),
        workload,
        the_ask if the_ask is not None else ask(),
        configmap=configmap,
        settings=settings,
    )


def pod(job: DerivedJob) -> dict[str, Any]:
    spec: dict[str, Any] = job.manifest["spec"]["template"]["spec"]
    return spec


def advisor(job: DerivedJob) -> dict[str, Any]:
    (only,) = pod(job)["containers"]
    assert only["name"] == "advisor"
    return dict(only)


def copier(job: DerivedJob) -> dict[str, Any]:
    (only,) = pod(job)["initContainers"]
    assert only["name"] == "copy-model"
    return dict(only)


def volumes(job: DerivedJob) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in pod(job)["volumes"]}


def mounts(c: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in c.get("volumeMounts", [])}


def arg(job: DerivedJob, flag: str) -> list[str]:
    return [a.split("=", 1)[1] for a in advisor(job)["args"] if a.startswith(flag + "=")]


def pvc_deployment(**pod_fields: Any) -> dict[str, Any]:
    return deployment(
        container(mounts=[{"name": "models", "mountPath": "/models"}]),
        volumes=[{"name": "models", "persistentVolumeClaim": {"claimName": "resnet-models"}}],
        **pod_fields,
    )


# --------------------------------------------------------------------------------------------------
# The Job: the shipped settings, metadata, ownership


def test_the_job_carries_the_shipped_jobs_settings() -> None:
    job = derive(deployment(), ask(**{ANN_BUDGET: "600"}))
    spec = job.manifest["spec"]
    assert job.manifest["apiVersion"] == "batch/v1"
    assert job.manifest["kind"] == "Job"
    # the shipped Job's rules, then the copy's own (test_advisor_pod.py)
    shipped_rules = SHIPPED_JOB["spec"]["podFailurePolicy"]["rules"]
    assert spec["podFailurePolicy"]["rules"][: len(shipped_rules)] == shipped_rules
    assert spec["backoffLimit"] == 3
    assert spec["ttlSecondsAfterFinished"] == 86400
    assert spec["activeDeadlineSeconds"] == 1500  # the 600 s sweep + the 900 s start-up allowance
    shipped_pod = SHIPPED_JOB["spec"]["template"]["spec"]
    (shipped,) = shipped_pod["containers"]
    assert pod(job)["restartPolicy"] == "Never"
    assert advisor(job)["env"] == shipped["env"]
    assert advisor(job)["securityContext"].items() >= shipped["securityContext"].items()
    assert pod(job)["securityContext"] == shipped_pod["securityContext"]
    (tmp,) = [m for m in advisor(job)["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert volumes(job)[tmp["name"]] == {"name": tmp["name"], "emptyDir": {"sizeLimit": "1Gi"}}


def test_plans_settings_shape_the_job() -> None:
    settings = JobSettings(
        image="mirror.example/tfta@sha256:" + "a" * 64,
        service_account="calibrator",
        image_pull_policy="Always",
        ttl_s=600,
        backoff_limit=1,
        extra_args=("--configmap-annotation=reloader.stakater.com/match=true",),
    )
    job = derive(deployment(), settings=settings)
    assert job.manifest["spec"]["backoffLimit"] == 1
    assert job.manifest["spec"]["ttlSecondsAfterFinished"] == 600
    assert advisor(job)["image"] == settings.image
    assert advisor(job)["imagePullPolicy"] == "Always"
    assert pod(job)["serviceAccountName"] == "calibrator"
    assert advisor(job)["args"][-1] == "--configmap-annotation=reloader.stakater.com/match=true"


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
    assert annotations[ANN_JOB_CONTAINER] == "server"
    assert annotations[ANN_JOB_CONFIGMAP] == "resnet-advice"
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


# --------------------------------------------------------------------------------------------------
# Arguments


def test_the_advisor_runs_with_exactly_the_documented_arguments() -> None:
    workload = pvc_deployment(nodeSelector={"zone": "b", "pool": "cpu"})
    the_ask = ask(
        **{
            ANN_OBJECTIVE: "slo",
            ANN_P99_MS: "25.5",
            ANN_BATCH_SIZE: "8",
            ANN_CONCURRENCY: "2",
            ANN_BUDGET: "450",
            ANN_RESTART: "true",
        }
    )
    settings = JobSettings(
        image=SETTINGS.image,
        service_account=SETTINGS.service_account,
        extra_args=("--configmap-annotation=team=ml",),
    )
    job = derive(workload, the_ask, settings=settings, configmap="resnet-advice")
    # the volume the copy reads the model from, as the calibration pod mounts it
    copied_from = {
        "volumes": [volumes(job)["models"]],
        "mounts": [mounts(copier(job))["models"]],
        "env": [],
    }
    assert advisor(job)["args"] == [
        "run",
        "--configmap=resnet-advice",
        "--namespace=$(TFTA_POD_NAMESPACE)",
        "--budget=450",
        "--objective=slo",
        "--p99-ms=25.5",
        "--batch-size=8",
        "--concurrency=2",
        "--model=/tfta-model/1",
        "--node-selector=pool=cpu",
        "--node-selector=zone=b",
        "--for-workload=deployment/resnet",
        "--for-container=server",
        f"--serving-image={SERVING_IMAGE}",
        "--serving-model-path=/models/resnet/1",
        "--cpu-from=limit",
        f"--spec-hash={job.spec_hash}",
        # the spec it measures, field by field: the provenance has the image, the model path
        # and the options already; a long value goes as its hash
        "--spec-field=node-selector=pool=cpu,zone=b",
        "--spec-field=requests.cpu=4",
        "--spec-field=requests.memory=4Gi",
        "--spec-field=limits.cpu=4",
        "--spec-field=limits.memory=4Gi",
        f"--spec-field=model-volume=#{hash_of(copied_from)}",
        "--spec-field=budget=450",
        "--spec-field=trial-mode=auto",
        "--spec-field=sweep-onednn=off",
        "--restart=deployment/resnet",
        "--configmap-annotation=team=ml",
    ]


def test_defaults_leave_out_the_bound_the_selector_and_the_restart() -> None:
    job = derive(deployment(), kind="Deployment")
    args = advisor(job)["args"]
    assert not any(a.startswith(("--p99-ms", "--node-selector", "--restart")) for a in args)
    assert arg(job, "--budget") == ["300"]
    assert arg(job, "--objective") == ["latency"]


def test_a_statefulset_is_named_and_restarted_as_kubectl_names_it() -> None:
    job = derive(statefulset(name="db"), ask(**{ANN_RESTART: "true"}), kind="StatefulSet")
    assert arg(job, "--for-workload") == ["statefulset/db"]
    assert arg(job, "--restart") == ["statefulset/db"]
    assert str(job.target.workload) == "statefulset/db"
    assert job.manifest["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"


def test_a_fractional_budget_gets_a_whole_second_deadline() -> None:
    job = derive(deployment(), ask(**{ANN_BUDGET: "90.5"}))
    assert arg(job, "--budget") == ["90.5"]
    assert job.manifest["spec"]["activeDeadlineSeconds"] == 91 + 900


# --------------------------------------------------------------------------------------------------
# Resources and the CPU quota


def test_the_advisor_gets_the_serving_containers_exact_resources() -> None:
    resources = {
        "requests": {"cpu": "3500m", "memory": "6Gi", "ephemeral-storage": "2Gi"},
        "limits": {"cpu": "3500m", "memory": "6Gi", "ephemeral-storage": "4Gi"},
    }
    job = derive(deployment(container(resources=resources)))
    assert advisor(job)["resources"] == resources
    assert job.cpu == 3.5
    assert job.cpu_from == "limit"
    assert arg(job, "--cpu-from") == ["limit"]


def test_a_pod_level_limit_below_the_containers_is_the_quota() -> None:
    pod_resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "2"}}
    job = derive(deployment(resources=pod_resources))
    assert pod(job)["resources"] == pod_resources
    assert advisor(job)["resources"]["limits"]["cpu"] == "4"  # the container's, as it is
    assert job.cpu == 2.0
    assert job.cpu_from == "limit"


def test_a_pod_level_limit_alone_is_the_quota() -> None:
    job = derive(
        deployment(
            container(resources={"requests": {"memory": "1Gi"}}),
            resources={"limits": {"cpu": "6", "memory": "8Gi"}},
        )
    )
    assert job.cpu == 6.0
    assert job.cpu_from == "limit"
    assert "cpu" not in advisor(job)["resources"].get("limits", {})
    # the requests the API server would default for the serving pod, stated
    assert pod(job)["resources"] == {
        "requests": {"cpu": "6", "memory": "1Gi"},
        "limits": {"cpu": "6", "memory": "8Gi"},
    }


def test_without_a_limit_the_request_becomes_the_quota() -> None:
    job = derive(deployment(container(resources={"requests": {"cpu": "1500m", "memory": "2Gi"}})))
    assert advisor(job)["resources"] == {
        "requests": {"cpu": "1500m", "memory": "2Gi"},
        "limits": {"cpu": "1500m"},
    }
    assert job.cpu == 1.5
    assert job.cpu_from == "request"
    assert job.target.cpu_from == "request"
    assert arg(job, "--cpu-from") == ["request"]


def test_without_a_limit_a_pod_level_request_becomes_the_quota() -> None:
    job = derive(
        deployment(
            container(resources={"limits": {"memory": "2Gi"}}),
            resources={"requests": {"cpu": "3"}},
        )
    )
    assert advisor(job)["resources"]["limits"] == {"memory": "2Gi", "cpu": "3"}
    assert job.cpu == 3.0
    assert job.cpu_from == "request"


@pytest.mark.parametrize(
    "resources",
    [{}, {"requests": {"memory": "1Gi"}, "limits": {"memory": "1Gi"}}, {"requests": {"cpu": "0"}}],
)
def test_neither_limit_nor_request_is_refused(resources: dict[str, Any]) -> None:
    with pytest.raises(DeriveError, match="neither a CPU limit nor a CPU request"):
        derive(deployment(container(resources=resources)))


def test_resource_claims_stay_with_the_serving_pod() -> None:
    resources = {"limits": {"cpu": "2"}, "claims": [{"name": "gpu"}]}
    job = derive(deployment(container(resources=resources), resourceClaims=[{"name": "gpu"}]))
    assert advisor(job)["resources"] == {"limits": {"cpu": "2"}}
    assert "resourceClaims" not in pod(job)


def test_the_copy_stays_within_a_small_pod_level_budget() -> None:
    job = derive(
        pvc_deployment(resources={"requests": {"cpu": "50m"}, "limits": {"cpu": "500m"}}),
    )
    assert copier(job)["resources"] == {
        "requests": {"cpu": "50m", "memory": "128Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }


# --------------------------------------------------------------------------------------------------
# Placement: what is copied, what is dropped, the pool


def test_placement_is_copied_and_the_serving_pods_wiring_dropped() -> None:
    node_affinity = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["cpu"]}]}
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "preference": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
                },
            }
        ],
    }
    tolerations = [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]
    workload = pvc_deployment(
        nodeSelector={"kubernetes.io/arch": "amd64"},
        affinity={
            "nodeAffinity": node_affinity,
            "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []},
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "resnet"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            },
        },
        tolerations=tolerations,
        runtimeClassName="gvisor",
        imagePullSecrets=[{"name": "registry-creds"}],
        topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        hostNetwork=True,
        hostPID=True,
        hostIPC=True,
        priorityClassName="serving-critical",
        serviceAccountName="resnet-serving",
        automountServiceAccountToken=True,
        nodeName="node-7",
        dnsPolicy="ClusterFirstWithHostNet",
        schedulerName="bin-packer",
        terminationGracePeriodSeconds=120,
        shareProcessNamespace=True,
        hostAliases=[{"ip": "10.0.0.1", "hostnames": ["models"]}],
    )
    spec = pod(derive(workload))
    assert spec["nodeSelector"] == {"kubernetes.io/arch": "amd64"}
    assert spec["affinity"] == {"nodeAffinity": node_affinity}
    assert spec["tolerations"] == tolerations
    assert spec["runtimeClassName"] == "gvisor"
    assert spec["imagePullSecrets"] == [{"name": "registry-creds"}]
    assert spec["serviceAccountName"] == SETTINGS.service_account
    assert spec["automountServiceAccountToken"] is False
    assert set(spec) == {
        "restartPolicy",
        "serviceAccountName",
        "automountServiceAccountToken",
        "securityContext",
        "nodeSelector",
        "affinity",
        "tolerations",
        "runtimeClassName",
        "imagePullSecrets",
        "initContainers",
        "containers",
        "volumes",
    }


def test_a_plain_pod_gets_no_placement() -> None:
    spec = pod(derive(deployment(affinity={"podAntiAffinity": {}})))
    for key in ("nodeSelector", "affinity", "tolerations", "runtimeClassName", "imagePullSecrets"):
        assert key not in spec


@pytest.mark.parametrize(
    ("pod_fields", "pool"),
    [
        ({}, "any node"),
        ({"nodeSelector": {"pool": "a"}}, "pool=a"),
        ({"nodeSelector": {"k2": "v2", "k": "v"}}, "k=v,k2=v2"),
        (
            {
                "nodeSelector": {"k": "v"},
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "z", "operator": "Exists"}]}
                            ]
                        }
                    }
                },
            },
            "k=v + required node affinity",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 1,
                                "preference": {
                                    "matchExpressions": [{"key": "z", "operator": "Exists"}]
                                },
                            }
                        ]
                    }
                }
            },
            "any node",
        ),
    ],
)
def test_the_pool_reads_as_what_pins_the_pods(pod_fields: dict[str, Any], pool: str) -> None:
    job = derive(deployment(**pod_fields))
    assert job.pool == pool
    assert job.manifest["metadata"]["annotations"][ANN_JOB_POOL] == pool
    assert re.fullmatch(r"[0-9a-f]{10}", job.pool_hash)


def _required(values: list[str]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": values}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def test_the_pool_hash_is_the_pool_not_the_workload() -> None:
    one = derive(deployment(name="a", nodeSelector={"pool": "x"}))
    other = derive(
        deployment(
            container(resources={"limits": {"cpu": "1"}}), name="b", nodeSelector={"pool": "x"}
        )
    )
    assert one.pool_hash == other.pool_hash
    assert one.spec_hash != other.spec_hash
    elsewhere = derive(deployment(name="a", nodeSelector={"pool": "y"}))
    assert elsewhere.pool_hash != one.pool_hash
    # the same readable pool, pinned to other nodes: another pool
    first = derive(deployment(affinity=_required(["a"])))
    second = derive(deployment(affinity=_required(["b"])))
    assert first.pool == second.pool == "required node affinity"
    assert first.pool_hash != second.pool_hash
    # a preference pins nothing
    assert (
        derive(deployment()).pool_hash
        == derive(
            deployment(
                affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
            )
        ).pool_hash
    )


# --------------------------------------------------------------------------------------------------
# The serving container


def test_the_only_container_is_the_serving_one() -> None:
    spec = deployment(container("tf"))["spec"]["template"]["spec"]
    assert serving_container(spec, ask())["name"] == "tf"


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
        derive(workload, ask(**{ANN_ASK_CONTAINER: "proxy"}))
    assert "tf" in str(caught.value)


def test_the_annotation_picks_among_several_containers() -> None:
    workload = deployment(
        container("metrics", image="exporter:1", resources={"limits": {"cpu": "100m"}}),
        container("tf", image="serving:2", resources={"limits": {"cpu": "3"}}),
    )
    job = derive(workload, ask(**{ANN_ASK_CONTAINER: "tf"}))
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
    assert ANN_ASK_CONTAINER in message


def test_an_annotation_naming_no_container_lists_them() -> None:
    workload = deployment(
        container("metrics"), container("tf"), initContainers=[container("fetch")]
    )
    with pytest.raises(DeriveError) as caught:
        derive(workload, ask(**{ANN_ASK_CONTAINER: "serving"}))
    assert str(caught.value) == (
        "annotation tf-thread-advisor.io/container='serving' names no container of its pod "
        "(containers: metrics, tf)"
    )
    with pytest.raises(DeriveError) as caught:
        derive(workload, ask(**{ANN_ASK_CONTAINER: "fetch"}))
    assert str(caught.value) == (
        "annotation tf-thread-advisor.io/container='fetch' names an init container (or a "
        "native sidecar), never the serving one (containers: metrics, tf)"
    )


# --------------------------------------------------------------------------------------------------
# The model


def test_a_model_on_a_pvc_is_copied_from_a_read_only_claim() -> None:
    workload = deployment(
        container(
            imagePullPolicy="IfNotPresent",
            mounts=[
                {"name": "config", "mountPath": "/etc/serving"},
                {"name": "models", "mountPath": "/models"},
                {"name": "cache", "mountPath": "/var/cache"},
            ],
        ),
        volumes=[
            {"name": "config", "configMap": {"name": "serving-config"}},
            {"name": "models", "persistentVolumeClaim": {"claimName": "resnet-models"}},
            {"name": "cache", "emptyDir": {}},
        ],
    )
    job = derive(workload)
    copy_model = copier(job)
    assert copy_model["image"] == SERVING_IMAGE
    assert copy_model["imagePullPolicy"] == "IfNotPresent"
    assert copy_model["command"] == ["cp", "-RL", "/models/resnet/1", "/tfta-model/"]
    # only the model's volume reaches the copy, read-only, where the server has it
    assert copy_model["volumeMounts"] == [
        {"name": "model", "mountPath": MODEL_MOUNT},
        {"name": "models", "mountPath": "/models", "readOnly": True},
    ]
    assert volumes(job)["models"] == {
        "name": "models",
        "persistentVolumeClaim": {"claimName": "resnet-models", "readOnly": True},
    }
    assert set(volumes(job)) == {"tmp", "model", "kube-api-access", "models"}
    assert volumes(job)["model"] == {"name": "model", "emptyDir": {}}
    assert mounts(advisor(job))["model"] == {
        "name": "model",
        "mountPath": MODEL_MOUNT,
        "readOnly": True,
    }
    assert "models" not in mounts(advisor(job))
    assert arg(job, "--model") == ["/tfta-model/1"]
    assert "env" not in copy_model


def test_a_sub_path_is_mounted_as_the_server_mounts_it() -> None:
    workload = deployment(
        container(
            mounts=[{"name": "store", "mountPath": "/models/resnet", "subPath": "resnet/v7"}]
        ),
        volumes=[{"name": "store", "persistentVolumeClaim": {"claimName": "model-store"}}],
    )
    job = derive(workload, ask("/models/resnet"))
    assert mounts(copier(job))["store"] == {
        "name": "store",
        "mountPath": "/models/resnet",
        "subPath": "resnet/v7",
        "readOnly": True,
    }
    assert copier(job)["command"] == ["cp", "-RL", "/models/resnet", "/tfta-model/"]
    assert arg(job, "--model") == ["/tfta-model/resnet"]


def test_the_deepest_mount_holding_the_model_is_the_one_copied() -> None:
    workload = deployment(
        container(
            mounts=[
                {"name": "all", "mountPath": "/models"},
                {"name": "resnet", "mountPath": "/models/resnet/"},
                {"name": "other", "mountPath": "/models/resnet2"},
            ]
        ),
        volumes=[
            {"name": "all", "persistentVolumeClaim": {"claimName": "all-models"}},
            {"name": "resnet", "configMap": {"name": "resnet-model"}},
            {"name": "other", "persistentVolumeClaim": {"claimName": "other"}},
        ],
    )
    job = derive(workload)
    assert [m["name"] for m in copier(job)["volumeMounts"]] == ["model", "resnet"]
    assert set(volumes(job)) == {"tmp", "model", "kube-api-access", "resnet"}


def test_a_mount_covers_whole_path_components_only() -> None:
    workload = deployment(
        container(mounts=[{"name": "m", "mountPath": "/models/res"}]),
        volumes=[{"name": "m", "persistentVolumeClaim": {"claimName": "c"}}],
    )
    job = derive(workload)  # /models/resnet/1 is not under /models/res: baked into the image
    assert copier(job)["volumeMounts"] == [{"name": "model", "mountPath": MODEL_MOUNT}]
    assert set(volumes(job)) == {"tmp", "model", "kube-api-access"}


def test_a_model_in_a_configmap_volume_is_copied_as_declared() -> None:
    volume = {
        "name": "model-files",
        "configMap": {"name": "tiny-model", "items": [{"key": "m.keras", "path": "m.keras"}]},
    }
    workload = deployment(
        container(mounts=[{"name": "model-files", "mountPath": "/models"}]), volumes=[volume]
    )
    job = derive(workload, ask("/models/m.keras"))
    assert volumes(job)["model-files"] == volume
    assert arg(job, "--model") == ["/tfta-model/m.keras"]


def test_a_model_baked_into_the_image_needs_no_volume() -> None:
    workload = deployment(
        container(
            mounts=[{"name": "config", "mountPath": "/etc/serving"}],
            securityContext={"runAsUser": 1000},
        ),
        volumes=[{"name": "config", "configMap": {"name": "c"}}],
    )
    job = derive(workload)
    assert copier(job)["volumeMounts"] == [{"name": "model", "mountPath": MODEL_MOUNT}]
    assert set(volumes(job)) == {"tmp", "model", "kube-api-access"}
    assert "imagePullPolicy" not in copier(job)  # the serving container's default, as it has


def test_a_serving_volume_named_like_the_jobs_own_is_renamed() -> None:
    workload = deployment(
        container(mounts=[{"name": "model", "mountPath": "/models"}]),
        volumes=[{"name": "model", "persistentVolumeClaim": {"claimName": "resnet"}}],
    )
    job = derive(workload)
    names = [v["name"] for v in pod(job)["volumes"]]
    assert len(names) == len(set(names))
    assert volumes(job)["model"] == {"name": "model", "emptyDir": {}}
    (source,) = [m for m in copier(job)["volumeMounts"] if m["mountPath"] == "/models"]
    assert volumes(job)[source["name"]]["persistentVolumeClaim"]["claimName"] == "resnet"


def test_a_model_in_an_empty_dir_is_refused() -> None:
    workload = deployment(
        container(mounts=[{"name": "scratch", "mountPath": "/models"}]),
        volumes=[{"name": "scratch", "emptyDir": {"medium": "Memory"}}],
    )
    with pytest.raises(DeriveError, match="emptyDir") as caught:
        derive(workload)
    assert "scratch" in str(caught.value)


def test_a_model_in_an_ephemeral_volume_needs_a_data_source() -> None:
    def ephemeral(spec: dict[str, Any]) -> dict[str, Any]:
        return deployment(
            container(mounts=[{"name": "eph", "mountPath": "/models"}]),
            volumes=[{"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}],
        )

    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    with pytest.raises(DeriveError, match="ephemeral"):
        derive(ephemeral(claim))
    snapshot = {
        "kind": "VolumeSnapshot",
        "name": "resnet-v7",
        "apiGroup": "snapshot.storage.k8s.io",
    }
    job = derive(ephemeral({**claim, "dataSource": snapshot}))
    assert volumes(job)["eph"]["ephemeral"]["volumeClaimTemplate"]["spec"]["dataSource"] == snapshot


def test_a_mount_of_a_missing_volume_is_refused() -> None:
    workload = deployment(container(mounts=[{"name": "ghost", "mountPath": "/models"}]))
    with pytest.raises(DeriveError, match="ghost"):
        derive(workload)


def test_a_model_inside_the_copys_destination_is_refused() -> None:
    with pytest.raises(DeriveError, match=MODEL_MOUNT):
        derive(deployment(), ask("/tfta-model/resnet"))


def test_a_statefulsets_claim_is_the_first_replicas() -> None:
    workload = statefulset(
        container(mounts=[{"name": "data", "mountPath": "/models"}]),
        name="resnet-db",
        claim_templates=("data",),
        # a pod volume of the same name: the StatefulSet controller replaces it with the claim
        volumes=[{"name": "data", "emptyDir": {}}],
    )
    job = derive(workload, kind="StatefulSet")
    assert volumes(job)["data"] == {
        "name": "data",
        "persistentVolumeClaim": {"claimName": "data-resnet-db-0", "readOnly": True},
    }
    workload["spec"]["ordinals"] = {"start": 5}
    job = derive(workload, kind="StatefulSet")
    assert volumes(job)["data"]["persistentVolumeClaim"]["claimName"] == "data-resnet-db-5"


def test_a_deployment_has_no_claim_templates() -> None:
    """volumeClaimTemplates mean something on a StatefulSet only."""
    workload = statefulset(
        container(mounts=[{"name": "data", "mountPath": "/models"}]), claim_templates=("data",)
    )
    with pytest.raises(DeriveError, match="data"):
        derive(workload, kind="Deployment")


def test_a_projected_volume_loses_its_token_for_the_copy() -> None:
    projected = {
        "sources": [
            {"configMap": {"name": "model-part"}},
            {"serviceAccountToken": {"path": "token", "audience": "models"}},
        ]
    }
    workload = deployment(
        container(mounts=[{"name": "bundle", "mountPath": "/models"}]),
        volumes=[{"name": "bundle", "projected": projected}],
    )
    job = derive(workload)
    assert volumes(job)["bundle"]["projected"] == {
        "sources": [{"configMap": {"name": "model-part"}}]
    }


def test_a_sub_path_expression_reads_the_same_env_in_the_copy() -> None:
    env = [
        {"name": "VERSION", "value": "v7"},
        {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "UNRELATED", "value": "x"},
    ]
    workload = deployment(
        container(
            env=env,
            mounts=[{"name": "s", "mountPath": "/models", "subPathExpr": "$(NS)/$(VERSION)"}],
        ),
        volumes=[{"name": "s", "persistentVolumeClaim": {"claimName": "c"}}],
    )
    job = derive(workload)
    assert copier(job)["env"] == [env[1], env[0]]
    assert mounts(copier(job))["s"]["subPathExpr"] == "$(NS)/$(VERSION)"


@pytest.mark.parametrize(
    "env",
    [
        [],
        [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    ],
)
def test_a_sub_path_expression_another_pod_resolves_otherwise_is_refused(
    env: list[dict[str, Any]],
) -> None:
    workload = deployment(
        container(env=env, mounts=[{"name": "s", "mountPath": "/models", "subPathExpr": "$(POD)"}]),
        volumes=[{"name": "s", "persistentVolumeClaim": {"claimName": "c"}}],
    )
    with pytest.raises(DeriveError, match=r"\$\(POD\)"):
        derive(workload)


def test_the_copy_is_hardened_and_reads_as_the_server() -> None:
    workload = pvc_deployment(securityContext={"fsGroup": 2000, "supplementalGroups": [3000]})
    workload["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {
        "runAsUser": 1001,
        "runAsGroup": 1002,
        "runAsNonRoot": True,
    }
    job = derive(workload)
    assert copier(job)["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsUser": 1001,
        "runAsGroup": 1002,
        "runAsNonRoot": True,
    }
    # a Guaranteed serving pod: requests equal to limits
    assert copier(job)["resources"] == {
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }
    security = pod(job)["securityContext"]
    assert security["fsGroup"] == 2000
    assert security["supplementalGroups"] == [3000]
    assert security["runAsUser"] == 65532  # the advisor's own


def test_the_copy_takes_the_pods_user_when_the_container_sets_none() -> None:
    workload = pvc_deployment(securityContext={"runAsUser": 3000})
    assert copier(derive(workload))["securityContext"]["runAsUser"] == 3000


def test_the_copy_runs_as_the_advisor_when_the_server_leaves_it_to_the_image() -> None:
    identity = copier(derive(pvc_deployment()))["securityContext"]
    assert (identity["runAsUser"], identity["runAsGroup"], identity["runAsNonRoot"]) == (
        65532,
        65532,
        True,
    )


def test_a_server_running_as_root_is_copied_as_root() -> None:
    """The pod's runAsNonRoot would keep a root copy from starting at all."""
    workload = pvc_deployment()
    workload["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"runAsUser": 0}
    identity = copier(derive(workload))["securityContext"]
    assert identity["runAsUser"] == 0
    assert identity["runAsNonRoot"] is False
    assert identity["capabilities"] == {"drop": ["ALL"]}


# --------------------------------------------------------------------------------------------------
# Credentials


def test_the_token_reaches_the_advisor_container_alone() -> None:
    job = derive(pvc_deployment())
    assert pod(job)["automountServiceAccountToken"] is False
    assert volumes(job)["kube-api-access"] == {
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
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ]
        },
    }
    assert mounts(advisor(job))["kube-api-access"] == {
        "name": "kube-api-access",
        "mountPath": TOKEN_MOUNT,
        "readOnly": True,
    }
    copy_mounts = copier(job)["volumeMounts"]
    assert all(m["name"] != "kube-api-access" for m in copy_mounts)
    assert all(not m["mountPath"].startswith("/var/run/secrets") for m in copy_mounts)


# --------------------------------------------------------------------------------------------------
# Spec hash and name


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


def test_the_spec_hash_is_one_value_everywhere() -> None:
    job = derive(pvc_deployment())
    assert re.fullmatch(r"[0-9a-f]{10}", job.spec_hash)
    assert job.name.endswith("-" + job.spec_hash)
    assert arg(job, "--spec-hash") == [job.spec_hash]
    assert job.manifest["metadata"]["labels"][LABEL_SPEC_HASH] == job.spec_hash
    template_labels = job.manifest["spec"]["template"]["metadata"]["labels"]
    assert template_labels[LABEL_SPEC_HASH] == job.spec_hash


def test_the_spec_hash_ignores_key_order() -> None:
    workload = pvc_deployment(
        nodeSelector={"a": "1", "b": "2"},
        affinity=_required(["x"]),
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
    )
    job = derive(workload)
    again = derive(_reversed_keys(workload))
    assert again.spec_hash == job.spec_hash
    assert again.manifest == job.manifest


def test_the_spec_hash_is_the_same_in_another_process() -> None:
    """No per-process salt (Python's hash()): a planner run tomorrow finds today's Job."""
    code = (
        "import json\n"
        "from advisor.fleet.derive import derive_job\n"
        "from advisor.fleet.optin import read_ask\n"
        "from tests.support.fleet_workloads import SETTINGS, shapes\n"
        "out = {}\n"
        "for name, (kind, workload) in shapes().items():\n"
        "    annotations = workload['metadata']['annotations']\n"
        "    job = derive_job(kind, workload, read_ask(annotations), configmap='cm',"
        " settings=SETTINGS)\n"
        "    out[name] = [job.spec_hash, job.pool_hash, job.name]\n"
        "print(json.dumps(out))\n"
    )
    here = {
        name: [job.spec_hash, job.pool_hash, job.name]
        for name, (kind, workload) in shapes().items()
        if (
            job := derive_job(
                kind,
                workload,
                read_ask(workload["metadata"]["annotations"]),
                configmap="cm",
                settings=SETTINGS,
            )
        )
    }
    assert json.loads(run_python(code)) == here
    assert len({spec for spec, _, _ in here.values()}) == len(here)


def test_the_spec_hash_ignores_what_the_job_does_not_copy() -> None:
    base = derive(pvc_deployment())
    workload = pvc_deployment(
        affinity={"podAntiAffinity": {}},
        topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        priorityClassName="high",
        serviceAccountName="other",
    )
    workload["spec"]["replicas"] = 10
    workload["metadata"]["uid"] = "another-uid"
    workload["spec"]["template"]["metadata"]["labels"]["version"] = "2"
    assert derive(workload).spec_hash == base.spec_hash


def test_the_spec_hash_ignores_what_does_not_change_the_measurement() -> None:
    """Replicas, labels, the restart annotation, the advice ConfigMap's extra annotations and
    the advisor's own image and Job settings measure nothing: the same Job name."""
    base = derive(pvc_deployment())
    workload = pvc_deployment()
    workload["spec"]["replicas"] = 7
    workload["metadata"]["labels"]["team"] = "ml"
    workload["metadata"]["annotations"]["deploy.example.com/revision"] = "42"
    settings = _settings(
        image="registry.example.com/tfta:2",
        image_pull_policy="Always",
        backoff_limit=5,
        ttl_s=60,
        extra_args=("--configmap-annotation=reloader.stakater.com/match=true",),
    )
    changed = derive(workload, ask(**{ANN_RESTART: "true"}), settings=settings)
    assert changed.spec_hash == base.spec_hash
    assert changed.name == base.name
    assert changed.target.spec == base.target.spec


def _serving(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    serving: dict[str, Any] = spec["containers"][0]
    return serving


def _pod_of(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def _settings(**fields: Any) -> JobSettings:
    return JobSettings(
        **{"image": SETTINGS.image, "service_account": SETTINGS.service_account, **fields}
    )


#: one thing the measurement depends on, changed: (edit of the workload, the ask, the settings)
CHANGES: dict[str, tuple[Callable[[dict[str, Any]], None] | None, CalibrationAsk, JobSettings]] = {
    "image": (lambda w: _serving(w).update(image=SERVING_IMAGE + "-rc1"), ask(), SETTINGS),
    "cpu": (lambda w: _serving(w)["resources"]["limits"].update(cpu="3"), ask(), SETTINGS),
    "memory": (lambda w: _serving(w)["resources"]["limits"].update(memory="8Gi"), ask(), SETTINGS),
    "model": (None, ask("/models/resnet/2"), SETTINGS),
    "claim": (
        lambda w: _pod_of(w)["volumes"][0]["persistentVolumeClaim"].update(claimName="b"),
        ask(),
        SETTINGS,
    ),
    "node-selector": (lambda w: _pod_of(w).update(nodeSelector={"pool": "b"}), ask(), SETTINGS),
    "required-affinity": (
        lambda w: _pod_of(w).update(affinity=_required(["a"])),
        ask(),
        SETTINGS,
    ),
    "runtime-class": (lambda w: _pod_of(w).update(runtimeClassName="kata"), ask(), SETTINGS),
    "concurrency": (None, ask(**{ANN_CONCURRENCY: "4"}), SETTINGS),
    "objective": (None, ask(**{ANN_OBJECTIVE: "throughput"}), SETTINGS),
    "budget": (None, ask(**{ANN_BUDGET: "301"}), SETTINGS),
    "tolerations": (
        lambda w: _pod_of(w).update(tolerations=[{"key": "gpu", "operator": "Exists"}]),
        ask(),
        SETTINGS,
    ),
    "memory-request": (
        lambda w: _serving(w)["resources"]["requests"].update(memory="1Gi"),
        ask(),
        SETTINGS,
    ),
    "pod-resources": (
        lambda w: _pod_of(w).update(resources={"limits": {"memory": "16Gi"}}),
        ask(),
        SETTINGS,
    ),
    "batch": (None, ask(**{ANN_BATCH_SIZE: "8"}), SETTINGS),
    "p99": (None, ask(**{ANN_OBJECTIVE: "slo", ANN_P99_MS: "30"}), SETTINGS),
    "trial-mode": (None, ask(), _settings(extra_args=("--trial-mode=fork",))),
    "onednn": (None, ask(), _settings(extra_args=("--sweep-onednn",))),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_spec_hash_changes_with_what_is_measured(change: str) -> None:
    base = derive(pvc_deployment())
    edit, the_ask, settings = CHANGES[change]
    workload = pvc_deployment()
    if edit is not None:
        edit(workload)
    changed = derive(workload, the_ask, settings=settings)
    assert changed.spec_hash != base.spec_hash
    assert changed.name != base.name


def test_a_short_name_is_readable() -> None:
    job = derive(deployment(name="resnet"))
    assert job.name == f"tfta-resnet-server-{job.spec_hash}"
    assert job.manifest["metadata"]["name"] == job.name


def test_long_names_are_cut_to_a_valid_label_and_stay_apart() -> None:
    prefix = "recommendation-ranking-model-serving-" + "x" * 40
    one = derive(deployment(name=prefix + "-eu"))
    two = derive(deployment(name=prefix + "-us"))
    for job in (one, two):
        assert len(job.name) <= 63
        assert DNS_LABEL.match(job.name), job.name
        assert job.name.startswith("tfta-recommendation-ranking")
        assert job.name.endswith("-" + job.spec_hash)
    assert one.name != two.name


def test_a_cut_never_leaves_a_dash_before_the_hash() -> None:
    for length in range(40, 70):
        name = ("ab-" * 30)[:length].strip("-")
        job = derive(deployment(name=name))
        assert len(job.name) <= 63
        assert DNS_LABEL.match(job.name), job.name
        assert "--" not in job.name[-12:], job.name


def test_dots_in_a_workload_name_become_dashes() -> None:
    job = derive(deployment(name="resnet.v2"))
    assert DNS_LABEL.match(job.name)
    assert job.name.startswith("tfta-resnet-v2-server-")
    assert str(job.target.workload) == "deployment/resnet.v2"  # the real name where it is looked up

"""The init container that copies the model into the calibration Job: the one volume of the serving
pod it mounts (a claim, a sub-path, a ConfigMap, the image itself; what is refused), its resources
and the identity it runs as."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.fleet.derive import DeriveError
from advisor.fleet.naming import MODEL_MOUNT
from tests.support.fleet_workloads import (
    SERVING_IMAGE,
    advisor,
    arg,
    ask,
    container,
    copier,
    deployment,
    derive,
    mounts,
    pod,
    pvc_deployment,
    statefulset,
    volumes,
)


def test_the_copy_stays_within_a_small_pod_level_budget() -> None:
    job = derive(
        pvc_deployment(resources={"requests": {"cpu": "50m"}, "limits": {"cpu": "500m"}}),
    )
    assert copier(job)["resources"] == {
        "requests": {"cpu": "50m", "memory": "128Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }


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

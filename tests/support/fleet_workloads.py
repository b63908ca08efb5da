"""Opted-in workloads as the API server returns them, for fleet mode's tests: a serving container,
a Deployment or StatefulSet around it, and the pod shapes a cluster really has (a model on a PVC,
in a ConfigMap, baked into the image, a StatefulSet's claim, a pod with sidecars). The unit tests
of advisor/fleet/ and the schema and lint tests of the Jobs it derives build on them; the Job
derived from a workload, and its parts, are read here for the unit tests.
"""

from __future__ import annotations

from typing import Any

from advisor.fleet.derive import DerivedJob, JobSettings, derive_job
from advisor.fleet.optin import CalibrationAsk, read_ask
from advisor.keys import ANN_CONTAINER, ANN_MODEL, LABEL_CALIBRATE
from advisor.models import WorkloadKind
from advisor.models.kube import KubeWorkload

SETTINGS = JobSettings(
    image="registry.example.com/tf-thread-advisor:0.1.0",
    service_account="tf-thread-advisor-calibration",
)
SERVING_IMAGE = "registry.example.com/resnet-serving:1.4.2"
NAMESPACE = "ml"
MODEL = "/models/resnet/1"


def container(
    name: str = "server",
    *,
    image: str = SERVING_IMAGE,
    resources: dict[str, Any] | None = None,
    mounts: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A serving container; 4 CPUs and 4Gi requested and limited unless ``resources`` says."""
    if resources is None:
        resources = {
            "requests": {"cpu": "4", "memory": "4Gi"},
            "limits": {"cpu": "4", "memory": "4Gi"},
        }
    result: dict[str, Any] = {"name": name, "image": image, "resources": resources}
    if mounts:
        result["volumeMounts"] = mounts
    result.update(fields)
    return result


def _metadata(name: str, annotations: dict[str, str] | None, uid: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "labels": {"app": name, LABEL_CALIBRATE: "true"},
        "annotations": {ANN_MODEL: "/models/resnet/1", **(annotations or {})},
        "resourceVersion": "4711",
        "generation": 3,
    }
    if uid is not None:
        metadata["uid"] = uid
    return metadata


def deployment(
    *containers: dict[str, Any],
    name: str = "resnet",
    annotations: dict[str, str] | None = None,
    uid: str | None = "0d5c1f0e-6a4b-4c1e-9a57-3b1f4c2d9e10",
    **pod: Any,
) -> dict[str, Any]:
    """A Deployment whose pod template has ``containers`` (one default serving container when
    none is given) and the pod fields ``pod``."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(name, annotations, uid),
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": list(containers) or [container()], **pod},
            },
        },
    }


def statefulset(
    *containers: dict[str, Any],
    name: str = "resnet",
    claim_templates: tuple[str, ...] = (),
    annotations: dict[str, str] | None = None,
    **pod: Any,
) -> dict[str, Any]:
    """A StatefulSet with a volumeClaimTemplate for each name in ``claim_templates``."""
    result = deployment(*containers, name=name, annotations=annotations, **pod)
    result["kind"] = "StatefulSet"
    result["spec"]["serviceName"] = name
    result["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": claim},
            "spec": {
                "accessModes": ["ReadOnlyMany"],
                "resources": {"requests": {"storage": "10Gi"}},
            },
        }
        for claim in claim_templates
    ]
    return result


def shapes() -> dict[str, tuple[WorkloadKind, dict[str, Any]]]:
    """Pod shapes a cluster has, each as (kind, workload): what the derived Jobs are checked on."""
    pvc = deployment(
        container(mounts=[{"name": "models", "mountPath": "/models"}]),
        volumes=[{"name": "models", "persistentVolumeClaim": {"claimName": "resnet-models"}}],
        nodeSelector={"node.kubernetes.io/instance-type": "c7i.4xlarge"},
        tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
        ],
        securityContext={"fsGroup": 2000, "supplementalGroups": [3000]},
    )
    subpath = deployment(
        container(
            mounts=[{"name": "store", "mountPath": "/models/resnet", "subPath": "resnet/v7"}],
            securityContext={"runAsUser": 10001, "runAsGroup": 10001, "runAsNonRoot": True},
        ),
        volumes=[{"name": "store", "persistentVolumeClaim": {"claimName": "model-store"}}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["cpu"]}]}
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "preference": {
                            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
                        },
                    }
                ],
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "resnet"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            },
        },
    )
    configmap = deployment(
        container(
            resources={"requests": {"cpu": "1500m", "memory": "1Gi"}},
            mounts=[{"name": "model-files", "mountPath": "/models/resnet"}],
        ),
        volumes=[{"name": "model-files", "configMap": {"name": "tiny-model"}}],
        runtimeClassName="kata",
        imagePullSecrets=[{"name": "registry-creds"}],
    )
    baked = deployment(
        container("server", imagePullPolicy="Always"),
        container(
            "metrics",
            image="registry.example.com/exporter:2.0",
            resources={"limits": {"cpu": "100m", "memory": "64Mi"}},
        ),
        annotations={ANN_CONTAINER: "server"},
        initContainers=[
            container(
                "log-shipper",
                image="registry.example.com/shipper:1.1",
                restartPolicy="Always",
                resources={"limits": {"cpu": "100m", "memory": "64Mi"}},
            )
        ],
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "resnet"}},
            }
        ],
        priorityClassName="serving-critical",
        serviceAccountName="resnet-serving",
    )
    sts = statefulset(
        container(mounts=[{"name": "data", "mountPath": "/models"}]),
        name="resnet-db",
        claim_templates=("data",),
    )
    return {
        "pvc": (WorkloadKind.DEPLOYMENT, pvc),
        "pvc-subpath-affinity": (WorkloadKind.DEPLOYMENT, subpath),
        "configmap-request-only": (WorkloadKind.DEPLOYMENT, configmap),
        "image-sidecars": (WorkloadKind.DEPLOYMENT, baked),
        "statefulset-claim": (WorkloadKind.STATEFULSET, sts),
    }


# --------------------------------------------------------------------------------------------------
# The Job derived from a workload, and its parts, for the unit tests of advisor/fleet/


def ask(model: str = MODEL, **annotations: str) -> CalibrationAsk:
    return read_ask({ANN_MODEL: model, **annotations})


def view(workload: dict[str, Any], kind: str | None = None) -> KubeWorkload:
    """``workload`` as the planner reads it once listed (``kind``: read as another kind than its
    own)."""
    found = KubeWorkload.read(workload if kind is None else {**workload, "kind": kind})
    assert found is not None, "not a workload's kind"
    return found


def derive(
    workload: dict[str, Any],
    the_ask: CalibrationAsk | None = None,
    *,
    kind: str = "Deployment",
    settings: JobSettings = SETTINGS,
    configmap: str = "resnet-advice",
) -> DerivedJob:
    return derive_job(
        view(workload, kind),
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


def _required(values: list[str]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": values}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }

"""What the calibration Job copies of the serving pod's shape: the advisor container gets the
serving container's exact resources (the CPU quota it measures under, from the container's or the
pod's limit or request), the pod its placement (and not the serving pod's wiring) and the node
pool it reads as; the calibration pod has the serving pod's QoS class, and its advisor container
the exclusive cores the server's container gets from the static CPU manager.

The class is checked by this file's own reading of Kubernetes' rules (the API server's defaulting,
then the kubelet's ComputePodQOS and the static CPU manager's guaranteedCPUs), not by the code's.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from advisor.consumers.quantity import cpu_quantity
from advisor.fleet.derive import DerivedJob, DeriveError, derive_job
from advisor.fleet.optin import read_ask
from advisor.fleet.serving_shape import qos_class
from advisor.keys import (
    ANN_CONTAINER,
    ANN_JOB_POOL,
)
from advisor.models.kube import PodSpec
from tests.support.fleet_workloads import (
    SETTINGS,
    _required,
    advisor,
    arg,
    container,
    deployment,
    derive,
    pod,
    pvc_deployment,
    view,
)

QOS = ("cpu", "memory")


def _amount(value: Any) -> float:
    number = cpu_quantity(value)
    assert number is not None, value
    return number


def _as_defaulted(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod spec as the API server stores it: a container's missing request is its limit; a
    pod-level request missing beside a pod-level limit is the containers' effective request
    (the larger of the main containers plus native sidecars and each init container plus the
    sidecars before it), else the pod-level limit."""
    pod = copy.deepcopy(pod)
    for c in [*pod.get("containers", []), *pod.get("initContainers", [])]:
        resources = c.setdefault("resources", {})
        for name, limit in resources.get("limits", {}).items():
            resources.setdefault("requests", {}).setdefault(name, limit)
    level = pod.get("resources")
    if level and level.get("limits"):
        for name in QOS:
            if name in level.setdefault("requests", {}):
                continue
            inits = pod.get("initContainers", [])
            said = [
                c["resources"]["requests"][name]
                for c in [*pod["containers"], *inits]
                if name in c["resources"].get("requests", {})
            ]
            if said:
                sidecars_before: list[float] = []
                peaks = []
                for c in inits:
                    mine = _amount(c["resources"].get("requests", {}).get(name, 0))
                    if c.get("restartPolicy") == "Always":
                        sidecars_before.append(mine)
                    else:
                        peaks.append(mine + sum(sidecars_before))
                mains = sum(
                    _amount(c["resources"].get("requests", {}).get(name, 0))
                    for c in pod["containers"]
                )
                level["requests"][name] = max([mains + sum(sidecars_before), *peaks])
            elif name in level["limits"]:
                level["requests"][name] = level["limits"][name]
    return pod


def kubernetes_qos(pod: dict[str, Any]) -> str:
    """ComputePodQOS: sums of the positive cpu and memory requests and limits (pod-level ones
    when the pod has them), Guaranteed when every holder limits both and the sums are equal."""
    pod = _as_defaulted(pod)
    requests: dict[str, float] = {}
    limits: dict[str, float] = {}
    guaranteed = True
    level = pod.get("resources")
    holders = [level] if level else [c["resources"] for c in pod["containers"]]
    if not level:
        holders += [c["resources"] for c in pod.get("initContainers", [])]
    for holder in holders:
        for name, value in holder.get("requests", {}).items():
            if name in QOS and _amount(value) > 0:
                requests[name] = requests.get(name, 0) + _amount(value)
        found = set()
        for name, value in holder.get("limits", {}).items():
            if name in QOS and _amount(value) > 0:
                found.add(name)
                limits[name] = limits.get(name, 0) + _amount(value)
        if (holder.get("limits") or not level) and not found >= set(QOS):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    same = all(limits.get(name) == value for name, value in requests.items())
    if guaranteed and same and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def exclusive_cpus(pod: dict[str, Any], name: str) -> int:
    """guaranteedCPUs of the static CPU manager: a Guaranteed pod's container with a whole
    number of CPUs requested gets that many cores of its own."""
    if kubernetes_qos(pod) != "Guaranteed":
        return 0
    (found,) = [c for c in _as_defaulted(pod)["containers"] if c["name"] == name]
    cpus = _amount(found["resources"].get("requests", {}).get("cpu", 0))
    return int(cpus) if cpus.is_integer() else 0


def amounts(resources: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {k: {n: _amount(v) for n, v in resources.get(k, {}).items()} for k in resources}


def derive_annotated(workload: dict[str, Any]) -> DerivedJob:
    return derive_job(
        view(workload, "Deployment"),
        read_ask(workload["metadata"]["annotations"]),
        configmap="resnet-advice",
        settings=SETTINGS,
    )


def job_pod(job: DerivedJob) -> dict[str, Any]:
    spec: dict[str, Any] = job.manifest["spec"]["template"]["spec"]
    return spec


def serving_pod(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def with_model_on_pvc(workload: dict[str, Any]) -> dict[str, Any]:
    pod = serving_pod(workload)
    pod["volumes"] = [{"name": "models", "persistentVolumeClaim": {"claimName": "resnet-models"}}]
    pod["containers"][0]["volumeMounts"] = [{"name": "models", "mountPath": "/models"}]
    return workload


def guaranteed(cpu: str, memory: str = "4Gi") -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


EXPORTER = container("exporter", image="exporter:1", resources=guaranteed("100m", "64Mi"))

#: serving pod shapes: (the workload, the serving pod's class, its server's exclusive cores)
SHAPES: dict[str, tuple[dict[str, Any], str, int]] = {
    "guaranteed, whole CPUs": (deployment(container(resources=guaranteed("4"))), "Guaranteed", 4),
    "guaranteed by limits alone": (
        deployment(container(resources={"limits": {"cpu": "2", "memory": "2Gi"}})),
        "Guaranteed",
        2,
    ),
    "guaranteed, a fraction of a CPU": (
        deployment(container(resources=guaranteed("1500m"))),
        "Guaranteed",
        0,
    ),
    "guaranteed, smaller than the copy": (
        deployment(container(resources=guaranteed("250m", "256Mi"))),
        "Guaranteed",
        0,
    ),
    "guaranteed with a sidecar": (
        deployment(
            container(resources=guaranteed("2")),
            EXPORTER,
            annotations={ANN_CONTAINER: "server"},
        ),
        "Guaranteed",
        2,
    ),
    "burstable: requests below limits": (
        deployment(
            container(
                resources={
                    "requests": {"cpu": "2", "memory": "2Gi"},
                    "limits": {"cpu": "4", "memory": "4Gi"},
                }
            )
        ),
        "Burstable",
        0,
    ),
    "burstable: a sidecar without limits": (
        deployment(
            container(resources=guaranteed("2")),
            container("exporter", image="exporter:1", resources={"requests": {"cpu": "50m"}}),
            annotations={ANN_CONTAINER: "server"},
        ),
        "Burstable",
        0,
    ),
    "burstable: requests alone": (
        deployment(container(resources={"requests": {"cpu": "2", "memory": "2Gi"}})),
        "Burstable",
        0,
    ),
    "burstable: no memory limit": (
        deployment(container(resources={"limits": {"cpu": "2"}})),
        "Burstable",
        0,
    ),
    "best-effort container, pod-level requests": (
        deployment(container(resources={}), resources={"requests": {"cpu": "2"}}),
        "Burstable",
        0,
    ),
    "pod-level limits alone": (
        deployment(container(resources={}), resources={"limits": {"cpu": "3", "memory": "3Gi"}}),
        "Guaranteed",
        0,
    ),
    "pod-level limits, containers request less": (
        deployment(
            container(resources={"requests": {"cpu": "1", "memory": "1Gi"}}),
            resources={"limits": {"cpu": "3", "memory": "3Gi"}},
        ),
        "Burstable",
        0,
    ),
    "pod-level requests equal to limits": (
        deployment(container(resources={}), resources=guaranteed("3", "3Gi")),
        "Guaranteed",
        0,
    ),
    "pod-level requests below limits": (
        deployment(
            container(resources={}),
            resources={
                "requests": {"cpu": "1", "memory": "1Gi"},
                "limits": {"cpu": "3", "memory": "3Gi"},
            },
        ),
        "Burstable",
        0,
    ),
}


@pytest.mark.parametrize("model_on_pvc", [False, True], ids=["model in image", "model on pvc"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_calibration_pod_has_the_serving_pods_qos_class(shape: str, model_on_pvc: bool) -> None:
    workload, expected, cores = copy.deepcopy(SHAPES[shape])
    if model_on_pvc:
        with_model_on_pvc(workload)
    # the shapes say what Kubernetes makes of the serving pod: the oracle agrees
    assert kubernetes_qos(serving_pod(workload)) == expected
    assert exclusive_cpus(serving_pod(workload), "server") == cores
    job = derive_annotated(workload)
    assert kubernetes_qos(job_pod(job)) == expected
    # the advisor gets the cores the server gets
    assert exclusive_cpus(job_pod(job), "advisor") == cores
    # the code's own reading agrees with Kubernetes'
    assert qos_class(PodSpec.read(serving_pod(workload))) == expected
    assert qos_class(PodSpec.read(job_pod(job))) == expected


@pytest.mark.parametrize("shape", sorted(s for s in SHAPES if SHAPES[s][1] == "Guaranteed"))
def test_every_container_of_a_guaranteed_calibration_pod_asks_what_it_may_use(
    shape: str,
) -> None:
    job = derive_annotated(copy.deepcopy(SHAPES[shape][0]))
    pod = job_pod(job)
    for c in [*pod["initContainers"], *pod["containers"]]:
        limits = c["resources"].get("limits", {})
        requests = c["resources"].get("requests", limits)
        assert {k: v for k, v in requests.items() if k in QOS} == {
            k: v for k, v in limits.items() if k in QOS
        }, c["name"]
    # the copy takes no core of its own, whatever the node's CPU manager policy
    assert exclusive_cpus({**pod, "containers": pod["initContainers"]}, "copy-model") == 0


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_calibration_pod_asks_the_scheduler_for_what_a_replica_asks(shape: str) -> None:
    """With the copy no larger than the server, the pod's effective request is the server's:
    the calibration fits where a replica fits."""
    workload = copy.deepcopy(SHAPES[shape][0])
    served = _as_defaulted(serving_pod(workload))
    calibrating = _as_defaulted(job_pod(derive_annotated(workload)))
    if served.get("resources"):
        assert amounts(calibrating["resources"]) == amounts(served["resources"])
        return
    (server,) = [c for c in served["containers"] if c["name"] == "server"]
    (copier,) = calibrating["initContainers"]
    (advisor,) = calibrating["containers"]
    for name in QOS:
        asked = _amount(server["resources"].get("requests", {}).get(name, 0))
        assert _amount(advisor["resources"].get("requests", {}).get(name, 0)) == asked
        if SHAPES[shape][1] == "Guaranteed":
            assert _amount(copier["resources"]["requests"][name]) <= asked


def test_the_oracle_tells_a_burstable_copy_apart() -> None:
    """A copy asking for less than its limit, as it once did, makes a Guaranteed pod Burstable:
    the check above can fail."""
    job = derive_annotated(deployment(container(resources=guaranteed("4"))))
    pod = copy.deepcopy(job_pod(job))
    pod["initContainers"][0]["resources"]["requests"] = {"cpu": "100m", "memory": "128Mi"}
    assert kubernetes_qos(pod) == "Burstable"
    assert exclusive_cpus(pod, "advisor") == 0


def test_a_pod_level_budget_states_the_defaulted_requests() -> None:
    """Pod-level limits alone default the pod's requests to its containers' requests: the
    calibration pod's containers differ, so it states the serving pod's requests."""
    workload = deployment(
        container(resources={}), resources={"limits": {"cpu": "3", "memory": "3Gi"}}
    )
    pod = job_pod(derive_annotated(workload))
    assert pod["resources"] == guaranteed("3", "3Gi")
    # no container above the pod
    (copier,) = pod["initContainers"]
    assert copier["resources"] == guaranteed("500m", "512Mi")


def test_a_small_guaranteed_server_bounds_the_copy() -> None:
    pod = job_pod(derive_annotated(deployment(container(resources=guaranteed("250m", "256Mi")))))
    assert pod["initContainers"][0]["resources"] == guaranteed("250m", "256Mi")


def test_a_burstable_copy_stays_small() -> None:
    pod = job_pod(derive_annotated(deployment(container(resources={"requests": {"cpu": "2"}}))))
    assert pod["initContainers"][0]["resources"] == {
        "requests": {"cpu": "100m", "memory": "128Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }


def test_a_best_effort_server_has_nothing_to_measure_for() -> None:
    workload = deployment(container(resources={}))
    assert kubernetes_qos(serving_pod(workload)) == "BestEffort"
    assert qos_class(PodSpec.read(serving_pod(workload))) == "BestEffort"
    with pytest.raises(DeriveError, match="neither a CPU limit nor a CPU request"):
        derive_annotated(workload)


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

"""The views of what the API server lists: every field read leniently (missing or malformed is
empty, never an error), the dict kept for what a manifest copies."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from advisor.models import WorkloadKind, WorkloadRef
from advisor.models.kube import (
    Container,
    JobCondition,
    KubeClaim,
    KubeConfigMap,
    KubeJob,
    KubePod,
    KubeWorkload,
    ObjectMeta,
    PodSpec,
    mapping,
    mappings,
    sequence,
)


def test_a_deployment_reads_its_metadata_template_and_containers() -> None:
    server = {
        "name": "server",
        "image": "tf:1",
        "resources": {"limits": {"cpu": "2"}},
        "env": [{"name": "A", "value": "1"}, "junk"],
        "envFrom": [{"configMapRef": {"name": "advice"}}],
        "volumeMounts": [{"name": "models", "mountPath": "/models"}],
        "args": ["--port=8500"],
        "securityContext": {"runAsUser": 1000},
    }
    obj = {
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "ml",
            "uid": "u-1",
            "labels": {"app": "web"},
            "annotations": {"a": "b"},
            "creationTimestamp": "2026-11-25T10:00:00Z",
        },
        "spec": {
            "replicas": 2,
            "template": {
                "metadata": {"annotations": {"t": "1"}},
                "spec": {
                    "containers": [server, 7],
                    "initContainers": [{"name": "init"}],
                    "nodeSelector": {"pool": "cpu"},
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [{}]
                            }
                        }
                    },
                    "resources": {"limits": {"cpu": "4"}},
                },
            },
        },
    }
    view = KubeWorkload.read(obj)
    assert view is not None
    assert view.kind is WorkloadKind.DEPLOYMENT
    assert (view.kind, view.metadata.name, view.metadata.namespace, view.metadata.uid) == (
        "Deployment",
        "web",
        "ml",
        "u-1",
    )
    assert view.metadata.created == datetime(2026, 11, 25, 10, tzinfo=timezone.utc)
    assert view.template_metadata.annotations == {"t": "1"}
    assert view.spec["replicas"] == 2 and view.raw is obj
    (container,) = view.pod_spec.containers
    assert container.raw is server and (container.name, container.image) == ("server", "tf:1")
    assert container.env == ({"name": "A", "value": "1"},)
    assert container.env_from[0]["configMapRef"] == {"name": "advice"}
    assert container.volume_mounts[0]["mountPath"] == "/models"
    assert (container.args, container.command) == (["--port=8500"], [])
    assert container.security_context == {"runAsUser": 1000}
    assert [c.name for c in view.pod_spec.init_containers] == ["init"]
    assert view.pod_spec.selector == {"pool": "cpu"}
    assert view.pod_spec.required_node_affinity == {"nodeSelectorTerms": [{}]}
    assert view.pod_spec.resources == {"limits": {"cpu": "4"}}


def test_anything_malformed_reads_as_empty() -> None:
    for junk in (None, "x", 3, [], {"metadata": "x", "spec": []}, {"kind": "ReplicaSet"}):
        assert KubeWorkload.read(junk) is None  # no kind the advisor reads: no workload
    view = KubeWorkload.read({"kind": "StatefulSet", "metadata": "x", "spec": []})
    assert view is not None
    assert (view.ref, view.metadata, view.pod_spec, view.pods) == (
        WorkloadRef(WorkloadKind.STATEFULSET, ""),
        ObjectMeta(),
        PodSpec(),
        (),
    )
    assert view.kind is WorkloadKind.STATEFULSET and view.pod_spec.empty
    assert (view.claim_templates, view.first_ordinal) == ((), 0)
    assert Container.read({"name": 5, "image": None, "env": "x"}).name is None
    assert Container.read({}).env == ()
    assert ObjectMeta.read({"creationTimestamp": "yesterday"}).created is None
    assert (mapping([1]), sequence({}), mappings([{}, 1, "a"])) == ({}, [], ({},))


def test_a_pod_and_a_job() -> None:
    pod = KubePod.read(
        {
            "metadata": {"name": "web-1", "ownerReferences": [{"kind": "ReplicaSet"}, "x"]},
            "status": {
                "phase": "Running",
                "startTime": "2026-11-25T10:00:00Z",
                "containerStatuses": [
                    {
                        "name": "server",
                        "resources": {"limits": {"cpu": "2"}},
                        "state": {"running": {"startedAt": "2026-11-25T10:00:05Z"}},
                    },
                    {"name": "sidecar", "state": {"waiting": {}}},
                    "junk",
                ],
            },
        }
    )
    assert (pod.metadata.name, pod.phase) == ("web-1", "Running")
    assert pod.started == datetime(2026, 11, 25, 10, tzinfo=timezone.utc)
    server, sidecar = pod.container_statuses
    assert (server.name, server.resources) == ("server", {"limits": {"cpu": "2"}})
    assert server.running_since == datetime(2026, 11, 25, 10, 0, 5, tzinfo=timezone.utc)
    assert (sidecar.name, sidecar.resources, sidecar.running_since) == ("sidecar", {}, None)
    assert pod.metadata.owner_references == ({"kind": "ReplicaSet"},)
    assert pod.metadata.controller is None  # only controller: true makes one
    job = KubeJob.read(
        {
            "metadata": {"name": "j"},
            "status": {"conditions": [{"type": "Failed", "status": True, "reason": None}]},
        }
    )
    assert (job.metadata.name, job.conditions) == ("j", (JobCondition("Failed", "True", "", ""),))
    assert KubeJob.read({"status": None}).conditions == ()


def test_the_controller_is_the_owner_reference_that_says_so() -> None:
    meta = ObjectMeta.read(
        {
            "ownerReferences": [
                {"kind": "Node", "name": "n", "controller": "true"},  # text: not the boolean
                {"kind": "ReplicaSet", "name": "web-7c9d", "controller": True},
            ]
        }
    )
    assert meta.controller == ("ReplicaSet", "web-7c9d")


def test_a_bare_pod_is_a_workload_whose_template_and_one_pod_are_itself() -> None:
    obj = {
        "kind": "Pod",
        "metadata": {"name": "debug", "namespace": "ml", "annotations": {"a": "b"}},
        "spec": {"containers": [{"name": "main", "imagePullPolicy": "Always"}]},
    }
    view = KubeWorkload.read(obj)
    assert view is not None
    assert (str(view.ref), view.namespace, view.annotations) == ("pod/debug", "ml", {"a": "b"})
    assert view.template_metadata is view.metadata and view.raw is obj
    (pod,) = view.pods
    assert pod.spec is view.pod_spec and pod.raw is obj
    assert view == KubeWorkload.of_pod(pod)
    (main,) = view.pod_spec.containers
    assert (main.label, main.image_pull_policy, main.restart_policy) == ("main", "Always", None)
    assert Container.read({}).label == "?"


def test_a_claim_has_the_modes_it_asked_for_and_those_its_volume_allows() -> None:
    claim = KubeClaim.read(
        {
            "metadata": {"name": "models"},
            "spec": {"accessModes": ["ReadWriteOnce"]},
            "status": {"accessModes": ["ReadWriteOnce", "ReadOnlyMany"]},
        }
    )
    assert (claim.metadata.name, claim.access_modes) == (
        "models",
        ("ReadWriteOnce", "ReadOnlyMany"),
    )
    assert KubeClaim.read({"spec": {"accessModes": "junk"}}).access_modes == ()


def test_a_field_is_read_when_first_asked_for_and_kept() -> None:
    raw: dict[str, Any] = {"containers": [{"name": "a"}], "nodeSelector": {"pool": "x"}}
    spec = PodSpec.read(raw)
    assert "containers" not in vars(spec)  # reading the view read none of its fields
    first = spec.containers
    assert [c.name for c in first] == ["a"] and spec.selector == {"pool": "x"}
    raw["containers"], raw["nodeSelector"] = [], {}
    assert spec.containers is first and spec.selector == {"pool": "x"}
    assert PodSpec.read(raw).containers == () and PodSpec.read(raw).selector == {}
    # the views compare by what they were read from, not by what was asked of them
    assert PodSpec.read({"containers": []}) == PodSpec.read({"containers": []})


def test_a_configmap_reads_its_metadata_when_asked_and_keeps_the_dict() -> None:
    obj = {
        "kind": "ConfigMap",
        "metadata": {
            "name": "advice",
            "namespace": "ml",
            "labels": {"app.kubernetes.io/managed-by": "tf-thread-advisor"},
            "annotations": {"a": "b"},
        },
        "data": {"TF_NUM_INTRAOP_THREADS": "2"},
    }
    view = KubeConfigMap.read(obj)
    assert "labels" not in vars(view)  # read when first asked for
    assert (view.name, view.namespace, view.annotations) == ("advice", "ml", {"a": "b"})
    assert view.managed_by == "tf-thread-advisor" and view.raw is obj
    assert view.labels is view.labels
    junk = KubeConfigMap.read({"metadata": {"name": 7, "labels": ["x"]}})
    assert (junk.name, junk.labels, junk.managed_by) == ("", {}, None)
    assert KubeConfigMap.read("junk").raw == {}

"""The views of what the API server lists: every field read leniently (missing or malformed is
empty, never an error), the dict kept for what a manifest copies."""

from __future__ import annotations

from datetime import datetime, timezone

from advisor.models.kube import (
    Container,
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
    for junk in (None, "x", 3, [], {"metadata": "x", "spec": []}):
        view = KubeWorkload.read(junk)
        assert (view.kind, view.metadata, view.pod_spec) == ("", ObjectMeta(), PodSpec())
    assert Container.read({"name": 5, "image": None, "env": "x"}).name is None
    assert Container.read({}).env == ()
    assert ObjectMeta.read({"creationTimestamp": "yesterday"}).created is None
    assert (mapping([1]), sequence({}), mappings([{}, 1, "a"])) == ({}, [], ({},))


def test_a_pod_and_a_job() -> None:
    pod = KubePod.read(
        {
            "metadata": {"name": "web-1", "ownerReferences": [{"kind": "ReplicaSet"}, "x"]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "server"}]},
        }
    )
    assert (pod.metadata.name, pod.phase, pod.container_statuses) == (
        "web-1",
        "Running",
        ({"name": "server"},),
    )
    assert pod.metadata.owner_references == ({"kind": "ReplicaSet"},)
    job = KubeJob.read(
        {"metadata": {"name": "j"}, "status": {"conditions": [{"type": "Complete"}]}}
    )
    assert (job.metadata.name, job.conditions) == ("j", ({"type": "Complete"},))
    assert KubeJob.read({"status": None}).conditions == ()

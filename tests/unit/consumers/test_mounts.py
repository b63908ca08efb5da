"""Who reads which ConfigMap: workloads tied to their pods by owner references, bare pods, and the
references that count (every key of ``envFrom``, only advice keys of a key reference).

Inputs are objects as a list returns them, with their ``kind`` put back, written here as dicts.
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor.consumers.mounts import mounts, references, workloads
from advisor.models.kube import Container, KubePod, KubeWorkload


def workload(kind: str, name: str, *containers: dict[str, Any], ns: str = "ml") -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": ns, "annotations": {"team": "search"}},
        "spec": {
            "template": {
                "metadata": {"annotations": {"rolled": "1"}},
                "spec": {"containers": list(containers) or [reader("server", "tf-advice")]},
            }
        },
    }


def owned(
    name: str,
    kind: str,
    owner: str,
    *,
    template_hash: str | None = None,
    controller: Any = True,
    ns: str = "ml",
) -> dict[str, Any]:
    """A pod whose controller (``controller``: the flag on its owner reference) is ``kind``
    ``owner``."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "ownerReferences": [{"kind": kind, "name": owner, "controller": controller}],
    }
    if template_hash is not None:
        meta["labels"] = {"pod-template-hash": template_hash}
    return {"metadata": meta, "spec": {"containers": [reader("server", "tf-advice")]}}


def bare(name: str, ns: str = "ml") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "annotations": {"owner": "me"}},
        "spec": {"containers": [reader("main", "tf-advice")]},
    }


def reader(name: str, configmap: str, *, optional: bool | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": configmap}
    if optional is not None:
        ref["optional"] = optional
    return {"name": name, "envFrom": [{"configMapRef": ref}]}


def key_ref(configmap: str, key: str, *, optional: bool | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": configmap, "key": key}
    if optional is not None:
        ref["optional"] = optional
    return {"name": "X", "valueFrom": {"configMapKeyRef": ref}}


def listed(objects: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[KubeWorkload]:
    """``workloads`` over the objects read as the inventory lists them (another kind is no
    workload's view)."""
    views = [view for o in objects if (view := KubeWorkload.read(o)) is not None]
    return workloads(views, [KubePod.read(p) for p in pods])


def pod_names(found: KubeWorkload) -> list[str]:
    return [p.raw["metadata"]["name"] for p in found.pods]


# --------------------------------------------------------------------------------------------------
# owners


def test_a_deployments_pods_are_found_through_the_replicaset_name_and_template_hash() -> None:
    objects = [workload("Deployment", "my-web-app"), workload("Deployment", "my-web")]
    pods = [
        owned("a", "ReplicaSet", "my-web-app-7c9d", template_hash="7c9d"),
        owned("b", "ReplicaSet", "my-web-app-5f00", template_hash="5f00"),  # an older rollout
        owned("c", "ReplicaSet", "my-web-6b", template_hash="6b"),
    ]
    app, web = listed(objects, pods)
    assert (app.name, pod_names(app)) == ("my-web-app", ["a", "b"])
    assert (web.name, pod_names(web)) == ("my-web", ["c"])


def test_a_replicaset_not_named_for_its_hash_belongs_to_no_deployment() -> None:
    objects = [workload("Deployment", "web")]
    pods = [
        owned("a", "ReplicaSet", "web-7c9d", template_hash="other"),
        owned("b", "ReplicaSet", "web-7c9d"),  # no pod-template-hash label
        owned("c", "ReplicaSet", "web"),  # a ReplicaSet of its own, named like the Deployment
    ]
    (found,) = listed(objects, pods)  # and none of them is bare either
    assert pod_names(found) == []


def test_statefulset_and_daemonset_pods_by_owner_kind_name_and_namespace() -> None:
    objects = [
        workload("StatefulSet", "db"),
        workload("DaemonSet", "db"),
        workload("StatefulSet", "db", ns="other"),
    ]
    pods = [
        owned("db-0", "StatefulSet", "db"),
        owned("db-x1", "DaemonSet", "db"),
        owned("db-1", "StatefulSet", "db", ns="other"),
    ]
    sts, ds, other = listed(objects, pods)
    assert (sts.kind, pod_names(sts)) == ("StatefulSet", ["db-0"])
    assert (ds.kind, pod_names(ds)) == ("DaemonSet", ["db-x1"])
    assert (other.namespace, pod_names(other)) == ("other", ["db-1"])


def test_only_the_controller_reference_ties_a_pod_to_a_workload() -> None:
    objects = [workload("StatefulSet", "db")]
    pods = [
        owned("a", "StatefulSet", "db", controller=False),
        owned("b", "StatefulSet", "db", controller="true"),  # not the boolean: not a controller
    ]
    found = listed(objects, pods)
    # without a controller a pod is bare: it runs on its own and is its own workload
    assert [(w.kind, w.name) for w in found] == [("StatefulSet", "db"), ("Pod", "a"), ("Pod", "b")]
    assert pod_names(found[0]) == []


def test_a_jobs_pods_are_neither_bare_nor_a_workloads() -> None:
    found = listed([workload("Deployment", "web")], [owned("j-1", "Job", "web")])
    assert [(w.kind, w.name, pod_names(w)) for w in found] == [("Deployment", "web", [])]


def test_a_bare_pod_is_a_workload_of_its_own_with_its_metadata_and_spec() -> None:
    pod = bare("debug")
    (found,) = listed([], [pod])
    assert (found.kind, found.namespace, found.name, str(found.ref)) == (
        "Pod",
        "ml",
        "debug",
        "pod/debug",
    )
    assert found.annotations == {"owner": "me"}
    assert found.template_metadata.raw is pod["metadata"]  # a bare pod's template is itself
    assert (found.pod_spec.raw, [p.raw for p in found.pods]) == (pod["spec"], [pod])


def test_workloads_keep_their_order_then_bare_pods_other_kinds_are_skipped() -> None:
    objects = [
        workload("StatefulSet", "b"),
        workload("ReplicaSet", "rs"),
        workload("Job", "j"),
        {"kind": "Deployment"},  # no metadata, no spec
        workload("Deployment", "a"),
    ]
    found = listed(objects, [bare("p")])
    assert [str(w.ref) for w in found] == ["statefulset/b", "deployment/", "deployment/a", "pod/p"]
    first = found[0]
    assert (first.annotations, first.template_metadata.raw) == (
        {"team": "search"},
        {"annotations": {"rolled": "1"}},
    )
    assert found[1].pod_spec.raw == {} and found[1].namespace == ""


def test_junk_metadata_and_owner_references_are_read_as_absent() -> None:
    objects = [{"kind": "Deployment", "metadata": "junk", "spec": {"template": "junk"}}]
    pods = [
        {"metadata": {"name": "a", "ownerReferences": ["junk", None]}},
        {
            "metadata": {
                "name": "b",
                "labels": "junk",
                "ownerReferences": [{"kind": "ReplicaSet", "name": "x-1", "controller": True}],
            }
        },
    ]
    found = listed(objects, pods)
    assert [(w.kind, w.name) for w in found] == [("Deployment", ""), ("Pod", "a")]


# --------------------------------------------------------------------------------------------------
# references


def test_envfrom_reads_every_key_a_key_reference_only_the_advice_keys() -> None:
    box = {
        "name": "server",
        "envFrom": [{"configMapRef": {"name": "whole"}}, {"secretRef": {"name": "secret"}}],
        "env": [
            key_ref("threads", "TF_NUM_INTRAOP_THREADS"),
            key_ref("onednn", "TF_ENABLE_ONEDNN_OPTS"),
            key_ref("settings", "LOG_LEVEL"),
            {"name": "PLAIN", "value": "1"},
            {"name": "FIELD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    }
    assert references(Container.read(box)) == {"whole": False, "threads": False, "onednn": False}


@pytest.mark.parametrize(
    ("refs", "optional"),
    [
        pytest.param([True], True, id="optional"),
        pytest.param([False], False, id="required"),
        pytest.param([None], False, id="unsaid"),
        pytest.param([True, True], True, id="both-optional"),
        pytest.param([True, False], False, id="one-required"),
        pytest.param([True, None], False, id="one-unsaid"),
    ],
)
def test_a_configmap_is_optional_only_when_every_reference_says_so(
    refs: list[bool | None], optional: bool
) -> None:
    first, *rest = refs
    box = reader("server", "tf-advice", optional=first)
    box["env"] = [key_ref("tf-advice", "OMP_NUM_THREADS", optional=o) for o in rest]
    assert references(Container.read(box)) == {"tf-advice": optional}


def test_junk_references_are_skipped() -> None:
    box = {
        "envFrom": ["junk", {"configMapRef": "junk"}, {"configMapRef": {"name": 3}}],
        "env": [None, {"valueFrom": "junk"}, {"valueFrom": {"configMapKeyRef": ["x"]}}],
    }
    assert references(Container.read(box)) == {}


def test_mounts_group_containers_by_namespace_and_configmap_in_workload_order() -> None:
    objects = [
        workload(
            "Deployment",
            "web",
            reader("server", "tf-advice"),
            reader("sidecar", "tf-advice", optional=True),
            "junk",  # type: ignore[arg-type]
            {"name": "plain"},
        ),
        workload("StatefulSet", "db", reader("db", "tf-advice")),
        workload("Deployment", "web", reader("server", "tf-advice"), ns="other"),
    ]
    found = mounts(listed(objects, [bare("debug")]))
    assert sorted(found) == [("ml", "tf-advice"), ("other", "tf-advice")]
    here = found[("ml", "tf-advice")]
    assert [(str(m.workload.ref), m.container_name, m.optional) for m in here] == [
        ("deployment/web", "server", False),
        ("deployment/web", "sidecar", True),
        ("statefulset/db", "db", False),
        ("pod/debug", "main", False),
    ]
    assert all(m.configmap == "tf-advice" for m in here)
    (there,) = found[("other", "tf-advice")]
    assert there.workload.namespace == "other"


def test_a_container_without_a_name_is_named_by_a_question_mark() -> None:
    objects = [workload("Deployment", "web", {"envFrom": [{"configMapRef": {"name": "a"}}]})]
    ((found,),) = mounts(listed(objects, [])).values()
    assert found.container_name == "?"

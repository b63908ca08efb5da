"""Who mounts which ConfigMap: the containers of a scope's workloads and bare pods that read one
into their env, and the running pods behind each workload.

A container reads a ConfigMap through ``envFrom[].configMapRef`` (every key) or
``env[].valueFrom.configMapKeyRef``; a key reference counts only when its key is one of the
advice's env names, since no other key can be in an advice. Pods are tied to their workload by
their controller's owner reference (a Deployment's pods belong to its ReplicaSet
``<deployment>-<pod-template-hash>``), not by label selector, so two workloads with overlapping
selectors never share pods and no ReplicaSet has to be listed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from advisor.models import (
    ADVICE_ENV_NAMES,
    ENV_ONEDNN,
    POD_OWNER_KINDS,
    WorkloadKind,
    WorkloadRef,
)
from advisor.models.kube import Container, KubePod, KubeWorkload, ObjectMeta, PodSpec, mapping

#: the keys an advice can hold, so a key reference to any other key is not advice
ADVICE_KEYS = frozenset((*ADVICE_ENV_NAMES, ENV_ONEDNN))


@dataclass(frozen=True)
class Workload:
    """A Deployment, StatefulSet, DaemonSet or bare Pod, with what the checks read of it."""

    kind: WorkloadKind
    namespace: str
    name: str
    #: the workload's own annotations (where Reloader is configured)
    annotations: dict[str, Any] = field(default_factory=dict)
    #: the pod template's metadata (a bare pod's own)
    template_metadata: ObjectMeta = field(default_factory=ObjectMeta)
    pod_spec: PodSpec = field(default_factory=PodSpec)
    #: its pods that are not finished (a bare pod: itself)
    pods: list[KubePod] = field(default_factory=list)

    @property
    def ref(self) -> WorkloadRef:
        return WorkloadRef(self.kind, self.name)


@dataclass(frozen=True)
class Mount:
    """One container of a workload reading one ConfigMap."""

    workload: Workload
    container: Container
    configmap: str
    #: every reference to the ConfigMap in this container is ``optional: true``
    optional: bool

    @property
    def container_name(self) -> str:
        return str(self.container.raw.get("name") or "?")


def workloads(objects: Iterable[KubeWorkload], pods: Iterable[KubePod]) -> list[Workload]:
    """The workloads among ``objects`` with their pods, then every pod without a controller."""
    pods = list(pods)
    owned: dict[tuple[str, str, str], list[KubePod]] = {}
    bare: list[Workload] = []
    for pod in pods:
        owner = _owner(pod)
        if owner is None:
            bare.append(_bare(pod))
        else:
            owned.setdefault(owner, []).append(pod)
    found = []
    for view in objects:
        if view.kind not in POD_OWNER_KINDS:
            continue
        kind = WorkloadKind(view.kind)
        namespace, name = view.metadata.namespace, view.metadata.name
        found.append(
            Workload(
                kind=kind,
                namespace=namespace,
                name=name,
                annotations=view.metadata.annotations,
                template_metadata=view.template_metadata,
                pod_spec=view.pod_spec,
                pods=owned.get((kind, namespace, name), []),
            )
        )
    return found + bare


def mounts(found: Iterable[Workload]) -> dict[tuple[str, str], list[Mount]]:
    """(namespace, ConfigMap name) -> the containers reading it, in workload order."""
    by_configmap: dict[tuple[str, str], list[Mount]] = {}
    for workload in found:
        for container in workload.pod_spec.containers:
            for name, optional in references(container).items():
                by_configmap.setdefault((workload.namespace, name), []).append(
                    Mount(workload, container, name, optional)
                )
    return by_configmap


def references(container: Container) -> dict[str, bool]:
    """ConfigMap name -> whether every reference to it is optional, for one container."""
    found: dict[str, bool] = {}

    def add(ref: Any) -> None:
        if isinstance(ref, dict) and isinstance(ref.get("name"), str):
            optional = ref.get("optional") is True
            found[ref["name"]] = found.get(ref["name"], True) and optional

    for source in container.env_from:
        add(source.get("configMapRef"))
    for env in container.env:
        ref = mapping(env.get("valueFrom")).get("configMapKeyRef")
        if isinstance(ref, dict) and ref.get("key") in ADVICE_KEYS:
            add(ref)
    return found


def _owner(pod: KubePod) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of the workload a pod belongs to; None for a pod without a
    controller. A pod of a ReplicaSet is its Deployment's when the ReplicaSet's name is
    ``<deployment>-<pod-template-hash>``; other controllers (Jobs, bare ReplicaSets) are kept
    as owners that match no workload."""
    meta = pod.metadata
    for ref in meta.owner_references:
        if ref.get("controller") is not True:
            continue
        kind, name, namespace = str(ref.get("kind", "")), str(ref.get("name", "")), meta.namespace
        template_hash = meta.labels.get("pod-template-hash")
        if kind == "ReplicaSet" and template_hash and name.endswith(f"-{template_hash}"):
            return (WorkloadKind.DEPLOYMENT, namespace, name.removesuffix(f"-{template_hash}"))
        return (kind, namespace, name)
    return None


def _bare(pod: KubePod) -> Workload:
    return Workload(
        kind=WorkloadKind.POD,
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        annotations=pod.metadata.annotations,
        template_metadata=pod.metadata,
        pod_spec=pod.spec,
        pods=[pod],
    )

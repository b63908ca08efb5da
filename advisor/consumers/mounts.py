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
from dataclasses import dataclass, replace
from typing import Any

from advisor.models import (
    POD_OWNER_KINDS,
    TENSORFLOW,
    WorkloadKind,
)
from advisor.models.kube import Container, KubePod, KubeWorkload, mapping


@dataclass(frozen=True)
class Mount:
    """One container of a workload reading one ConfigMap."""

    workload: KubeWorkload
    container: Container
    configmap: str
    #: every reference to the ConfigMap in this container is ``optional: true``
    optional: bool

    @property
    def container_name(self) -> str:
        return self.container.label


def workloads(objects: Iterable[KubeWorkload], pods: Iterable[KubePod]) -> list[KubeWorkload]:
    """The workloads among ``objects`` (those that own pods through a template) with their pods,
    then every pod without a controller, as a workload of its own."""
    owned: dict[tuple[str, str, str], list[KubePod]] = {}
    bare: list[KubeWorkload] = []
    for pod in pods:
        owner = _owner(pod)
        if owner is None:
            bare.append(KubeWorkload.of_pod(pod))
        else:
            owned.setdefault(owner, []).append(pod)
    found = [
        replace(view, pods=tuple(owned.get((view.kind, view.namespace, view.name), ())))
        for view in objects
        if view.kind in POD_OWNER_KINDS
    ]
    return found + bare


def mounts(found: Iterable[KubeWorkload]) -> dict[tuple[str, str], list[Mount]]:
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
        if isinstance(ref, dict) and ref.get("key") in TENSORFLOW.advice_keys:
            add(ref)
    return found


def _owner(pod: KubePod) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of the workload a pod belongs to; None for a pod without a
    controller. A pod of a ReplicaSet is its Deployment's when the ReplicaSet's name is
    ``<deployment>-<pod-template-hash>``; other controllers (Jobs, bare ReplicaSets) are kept
    as owners that match no workload."""
    meta = pod.metadata
    controller = meta.controller
    if controller is None:
        return None
    kind, name = controller
    template_hash = meta.labels.get("pod-template-hash")
    if kind == "ReplicaSet" and template_hash and name.endswith(f"-{template_hash}"):
        return (WorkloadKind.DEPLOYMENT, meta.namespace, name.removesuffix(f"-{template_hash}"))
    return (kind, meta.namespace, name)

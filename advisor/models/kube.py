"""Typed views of the Kubernetes objects the advisor reads: a workload, its pod template and pod
spec, a container, a pod and a Job, each built once from the API's dict where it is listed.

The API server's objects are read leniently: a field that is missing or of the wrong type reads
as empty (``{}``, ``()``, ``""``, None), never as an error, since a check or a plan says what a
workload lacks in its own words. The views keep the dict they were read from (``raw``) for what
is copied into a manifest unchanged. A pod spec and a container read each field when it is first
asked for, and keep it: reading such a view costs nothing (``plan`` derives thousands of Jobs).
``mapping`` and ``sequence`` are the one lenient reader of the nested blocks no view names (a
volume's source, an affinity's terms).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from advisor.models.times import kube_time


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping the API sent, else ``{}``."""
    return value if isinstance(value, dict) else {}


def sequence(value: Any) -> list[Any]:
    """``value`` when it is a list the API sent, else ``[]``."""
    return value if isinstance(value, list) else []


def mappings(value: Any) -> tuple[dict[str, Any], ...]:
    """The mappings in a list the API sent (its other entries are not objects, so no object)."""
    return tuple(entry for entry in sequence(value) if isinstance(entry, dict))


@dataclass(frozen=True)
class ObjectMeta:
    """An object's ``metadata``."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, Any] = field(default_factory=dict)
    owner_references: tuple[dict[str, Any], ...] = ()
    created: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, value: Any) -> ObjectMeta:
        meta = mapping(value)
        return cls(
            name=_text(meta.get("name")),
            namespace=_text(meta.get("namespace")),
            uid=_text(meta.get("uid")),
            labels=mapping(meta.get("labels")),
            annotations=mapping(meta.get("annotations")),
            owner_references=mappings(meta.get("ownerReferences")),
            created=kube_time(meta.get("creationTimestamp")),
            raw=meta,
        )


@dataclass(frozen=True)
class Container:
    """A container (or init container) of a pod spec, as the advisor reads it."""

    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, value: Any) -> Container:
        return cls(mapping(value))

    @cached_property
    def name(self) -> str | None:
        """None when it has none (the API server never stores such a container)."""
        name = self.raw.get("name")
        return name if isinstance(name, str) else None

    @cached_property
    def image(self) -> str | None:
        image = self.raw.get("image")
        return image if isinstance(image, str) else None

    @cached_property
    def resources(self) -> dict[str, Any]:
        return mapping(self.raw.get("resources"))

    @cached_property
    def env(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("env"))

    @cached_property
    def env_from(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("envFrom"))

    @cached_property
    def volume_mounts(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("volumeMounts"))

    @cached_property
    def command(self) -> list[Any]:
        return sequence(self.raw.get("command"))

    @cached_property
    def args(self) -> list[Any]:
        return sequence(self.raw.get("args"))

    @cached_property
    def security_context(self) -> dict[str, Any]:
        return mapping(self.raw.get("securityContext"))


@dataclass(frozen=True)
class PodSpec:
    """A pod's (or a pod template's) ``spec``, as the advisor reads it."""

    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, value: Any) -> PodSpec:
        return cls(mapping(value))

    @cached_property
    def containers(self) -> tuple[Container, ...]:
        return tuple(Container(c) for c in mappings(self.raw.get("containers")))

    @cached_property
    def init_containers(self) -> tuple[Container, ...]:
        return tuple(Container(c) for c in mappings(self.raw.get("initContainers")))

    @cached_property
    def volumes(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("volumes"))

    @cached_property
    def node_selector(self) -> dict[str, Any]:
        return mapping(self.raw.get("nodeSelector"))

    @cached_property
    def affinity(self) -> dict[str, Any]:
        return mapping(self.raw.get("affinity"))

    @cached_property
    def tolerations(self) -> list[Any]:
        return sequence(self.raw.get("tolerations"))

    @cached_property
    def resources(self) -> dict[str, Any]:
        return mapping(self.raw.get("resources"))

    @cached_property
    def security_context(self) -> dict[str, Any]:
        return mapping(self.raw.get("securityContext"))

    @cached_property
    def image_pull_secrets(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("imagePullSecrets"))

    @property
    def node_affinity(self) -> dict[str, Any]:
        return mapping(self.affinity.get("nodeAffinity"))

    @property
    def required_node_affinity(self) -> dict[str, Any]:
        """The node affinity the scheduler must meet (its ``nodeSelectorTerms`` are ORed)."""
        return mapping(self.node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))

    @property
    def selector(self) -> dict[str, str]:
        """``nodeSelector`` as text pairs."""
        return {str(k): str(v) for k, v in self.node_selector.items()}


@dataclass(frozen=True)
class KubeWorkload:
    """A Deployment, StatefulSet or DaemonSet as listed: its metadata, ``spec`` and pod template.
    A bare pod reads as one whose template is itself (``template_metadata`` its own)."""

    kind: str
    metadata: ObjectMeta
    spec: dict[str, Any]
    template_metadata: ObjectMeta
    pod_spec: PodSpec
    raw: dict[str, Any]

    @classmethod
    def read(cls, value: Any) -> KubeWorkload:
        raw = mapping(value)
        spec = mapping(raw.get("spec"))
        template = mapping(spec.get("template"))
        return cls(
            kind=_text(raw.get("kind")),
            metadata=ObjectMeta.read(raw.get("metadata")),
            spec=spec,
            template_metadata=ObjectMeta.read(template.get("metadata")),
            pod_spec=PodSpec.read(template.get("spec")),
            raw=raw,
        )


@dataclass(frozen=True)
class KubePod:
    """A pod as listed: its metadata, spec and ``status`` (phase, container statuses)."""

    metadata: ObjectMeta
    spec: PodSpec
    phase: str
    container_statuses: tuple[dict[str, Any], ...]
    raw: dict[str, Any]

    @classmethod
    def read(cls, value: Any) -> KubePod:
        raw = mapping(value)
        status = mapping(raw.get("status"))
        return cls(
            metadata=ObjectMeta.read(raw.get("metadata")),
            spec=PodSpec.read(raw.get("spec")),
            phase=_text(status.get("phase")),
            container_statuses=mappings(status.get("containerStatuses")),
            raw=raw,
        )


@dataclass(frozen=True)
class KubeJob:
    """A Job as listed: its metadata and its status's conditions."""

    metadata: ObjectMeta
    conditions: tuple[dict[str, Any], ...]

    @classmethod
    def read(cls, value: Any) -> KubeJob:
        raw = mapping(value)
        return cls(
            metadata=ObjectMeta.read(raw.get("metadata")),
            conditions=mappings(mapping(raw.get("status")).get("conditions")),
        )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""

"""Typed views of the Kubernetes objects the advisor reads: a workload, its pod template and pod
spec, a container and its status, a pod, a ConfigMap, a PersistentVolumeClaim and a Job, each
built once from the API's dict where it is listed (the pipeline, the cluster client) and passed
down as it is: ``fleet``, ``consumers`` and production read these views and build none of their
own.

One workload view serves every reader: ``KubeWorkload`` is a Deployment, StatefulSet, DaemonSet
or bare pod with its identity (``WorkloadRef``: kind and name, its namespace beside it), its pod
template and, once joined (``consumers.mounts``), the pods running it.

The API server's objects are read leniently: a field that is missing or of the wrong type reads
as empty (``{}``, ``()``, ``""``, None), never as an error, since a check or a plan says what a
workload lacks in its own words. The views keep the dict they were read from (``raw``), which only
this module, the cluster client and the advice's parser read (a unit test keeps it so): what a
manifest copies unchanged is asked of a view's property. A pod spec, a container and a ConfigMap
read each field when it is first asked for, and keep it (``read_once``): reading such a view
costs nothing (``plan`` derives thousands of Jobs). ``mapping`` and ``sequence`` are the one
lenient reader of the nested blocks no view names (a volume's source, an affinity's terms).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar, overload

from advisor.keys import LABEL_MANAGED_BY
from advisor.models.times import kube_time
from advisor.models.workload import WorkloadKind, WorkloadRef

_T = TypeVar("_T")


class read_once(Generic[_T]):
    """A view's field, read from ``raw`` when first asked for and kept in the instance (a frozen
    dataclass's ``__dict__``, which no ``__setattr__`` guards), where later reads find it
    without calling this descriptor again.

    ``functools.cached_property`` does the same, but before Python 3.12 takes a lock on every
    first read, which measured dearer per read, and ``plan`` makes about 20 a workload (the
    figures: docs/benchmark.md, "Fleet planning"). A view is read by one thread, and reading a
    field twice gives the same value anyway."""

    def __init__(self, read: Callable[[Any], _T]) -> None:
        self.read = read
        self.name = read.__name__
        self.__doc__ = read.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> read_once[_T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.read(instance)
        return value


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

    @property
    def controller(self) -> tuple[str, str] | None:
        """(kind, name) of the owner reference that is the object's controller; None without
        one (only ``controller: true``, the boolean, makes one)."""
        for ref in self.owner_references:
            if ref.get("controller") is True:
                return str(ref.get("kind", "")), str(ref.get("name", ""))
        return None


@dataclass(frozen=True)
class Container:
    """A container (or init container) of a pod spec, as the advisor reads it."""

    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, value: Any) -> Container:
        return cls(mapping(value))

    @read_once
    def name(self) -> str | None:
        """None when it has none (the API server never stores such a container)."""
        name = self.raw.get("name")
        return name if isinstance(name, str) else None

    @property
    def label(self) -> str:
        """Its name as a reason or a row shows it ("?" without one)."""
        return self.name or "?"

    @read_once
    def image(self) -> str | None:
        image = self.raw.get("image")
        return image if isinstance(image, str) else None

    @read_once
    def resources(self) -> dict[str, Any]:
        return mapping(self.raw.get("resources"))

    @read_once
    def env(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("env"))

    @read_once
    def env_from(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("envFrom"))

    @read_once
    def volume_mounts(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("volumeMounts"))

    @read_once
    def command(self) -> list[Any]:
        return sequence(self.raw.get("command"))

    @read_once
    def args(self) -> list[Any]:
        return sequence(self.raw.get("args"))

    @read_once
    def security_context(self) -> dict[str, Any]:
        return mapping(self.raw.get("securityContext"))

    @read_once
    def image_pull_policy(self) -> str | None:
        policy = self.raw.get("imagePullPolicy")
        return policy if isinstance(policy, str) and policy else None

    @read_once
    def resize_policy(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("resizePolicy"))

    @read_once
    def restart_policy(self) -> str | None:
        """An init container's ``Always``: a native sidecar."""
        policy = self.raw.get("restartPolicy")
        return policy if isinstance(policy, str) else None


@dataclass(frozen=True)
class ContainerStatus:
    """A pod's report of one of its containers (``status.containerStatuses``)."""

    name: str | None
    #: what the kubelet applied (Kubernetes 1.33+; empty before)
    resources: dict[str, Any]
    #: when the container now running started (None: not running)
    running_since: datetime | None

    @classmethod
    def read(cls, value: Any) -> ContainerStatus:
        raw = mapping(value)
        name = raw.get("name")
        running = mapping(mapping(raw.get("state")).get("running"))
        return cls(
            name=name if isinstance(name, str) else None,
            resources=mapping(raw.get("resources")),
            running_since=kube_time(running.get("startedAt")),
        )


@dataclass(frozen=True)
class PodSpec:
    """A pod's (or a pod template's) ``spec``, as the advisor reads it."""

    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, value: Any) -> PodSpec:
        return cls(mapping(value))

    @read_once
    def containers(self) -> tuple[Container, ...]:
        return tuple(Container(c) for c in mappings(self.raw.get("containers")))

    @read_once
    def init_containers(self) -> tuple[Container, ...]:
        return tuple(Container(c) for c in mappings(self.raw.get("initContainers")))

    @read_once
    def volumes(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("volumes"))

    @read_once
    def node_selector(self) -> dict[str, Any]:
        return mapping(self.raw.get("nodeSelector"))

    @read_once
    def affinity(self) -> dict[str, Any]:
        return mapping(self.raw.get("affinity"))

    @read_once
    def tolerations(self) -> list[Any]:
        return sequence(self.raw.get("tolerations"))

    @read_once
    def resources(self) -> dict[str, Any]:
        return mapping(self.raw.get("resources"))

    @read_once
    def security_context(self) -> dict[str, Any]:
        return mapping(self.raw.get("securityContext"))

    @read_once
    def image_pull_secrets(self) -> tuple[dict[str, Any], ...]:
        return mappings(self.raw.get("imagePullSecrets"))

    @read_once
    def runtime_class(self) -> str | None:
        name = self.raw.get("runtimeClassName")
        return name if isinstance(name, str) and name else None

    @property
    def empty(self) -> bool:
        """No spec at all (a workload without a pod template)."""
        return not self.raw

    @property
    def node_affinity(self) -> dict[str, Any]:
        return mapping(self.affinity.get("nodeAffinity"))

    @property
    def required_node_affinity(self) -> dict[str, Any]:
        """The node affinity the scheduler must meet (its ``nodeSelectorTerms`` are ORed)."""
        return mapping(self.node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))

    @read_once
    def selector(self) -> dict[str, str]:
        """``nodeSelector`` as text pairs (the node pool, the calibration spec and the fit of
        the advice each read it)."""
        return {str(k): str(v) for k, v in self.node_selector.items()}


@dataclass(frozen=True)
class KubeWorkload:
    """A Deployment, StatefulSet, DaemonSet or bare pod: its identity, metadata, ``spec``, pod
    template and the pods running it. A bare pod is one whose template is itself (its own
    metadata and spec) and whose one pod is itself.

    ``pods`` is empty as listed: ``consumers.mounts.workloads`` joins a scope's pods to their
    workloads by owner reference."""

    ref: WorkloadRef
    metadata: ObjectMeta
    spec: dict[str, Any]
    template_metadata: ObjectMeta
    pod_spec: PodSpec
    raw: dict[str, Any]
    #: its pods that are not finished, once joined (a bare pod: itself)
    pods: tuple[KubePod, ...] = ()

    @classmethod
    def read(cls, value: Any) -> KubeWorkload | None:
        """The view of a listed object (its ``kind`` put back, as lists leave it out); None for
        a kind the advisor does not read (a ReplicaSet, a Job)."""
        raw = mapping(value)
        try:
            kind = WorkloadKind(_text(raw.get("kind")))
        except ValueError:
            return None
        if kind is WorkloadKind.POD:
            return cls.of_pod(KubePod.read(raw))
        metadata = ObjectMeta.read(raw.get("metadata"))
        spec = mapping(raw.get("spec"))
        template = mapping(spec.get("template"))
        return cls(
            ref=WorkloadRef(kind, metadata.name),
            metadata=metadata,
            spec=spec,
            template_metadata=ObjectMeta.read(template.get("metadata")),
            pod_spec=PodSpec.read(template.get("spec")),
            raw=raw,
        )

    @classmethod
    def of_pod(cls, pod: KubePod) -> KubeWorkload:
        """A pod nothing controls, as the workload of its own."""
        return cls(
            ref=WorkloadRef(WorkloadKind.POD, pod.metadata.name),
            metadata=pod.metadata,
            spec=pod.spec.raw,
            template_metadata=pod.metadata,
            pod_spec=pod.spec,
            raw=pod.raw,
            pods=(pod,),
        )

    @property
    def kind(self) -> WorkloadKind:
        return self.ref.kind

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def annotations(self) -> dict[str, Any]:
        """The workload's own annotations (where the opt-in's options and Reloader are set)."""
        return self.metadata.annotations

    @property
    def claim_templates(self) -> tuple[dict[str, Any], ...]:
        """A StatefulSet's ``volumeClaimTemplates`` (each replica's claims)."""
        return mappings(self.spec.get("volumeClaimTemplates"))

    @property
    def first_ordinal(self) -> Any:
        """A StatefulSet's first replica's ordinal (``spec.ordinals.start``, else 0)."""
        return mapping(self.spec.get("ordinals")).get("start") or 0


@dataclass(frozen=True)
class KubePod:
    """A pod as listed: its metadata, spec and ``status`` (phase, start, container statuses)."""

    metadata: ObjectMeta
    spec: PodSpec
    phase: str
    container_statuses: tuple[ContainerStatus, ...]
    #: when the kubelet started it (None: not started)
    started: datetime | None
    raw: dict[str, Any]

    @classmethod
    def read(cls, value: Any) -> KubePod:
        raw = mapping(value)
        status = mapping(raw.get("status"))
        return cls(
            metadata=ObjectMeta.read(raw.get("metadata")),
            spec=PodSpec.read(raw.get("spec")),
            phase=_text(status.get("phase")),
            container_statuses=tuple(
                ContainerStatus.read(entry) for entry in mappings(status.get("containerStatuses"))
            ),
            started=kube_time(status.get("startTime")),
            raw=raw,
        )


@dataclass(frozen=True)
class KubeConfigMap:
    """A ConfigMap as listed: its name, and its namespace, labels and annotations, each read when
    first asked for (``plan`` lists every ConfigMap of a namespace and asks most only their name).

    The advice it may carry is not read here: ``advisor.recommend.stored`` parses it from the
    dict whole, by the advice's strict rules, once per ConfigMap."""

    raw: dict[str, Any] = field(default_factory=dict)
    #: read as listed: what the ConfigMaps are found by
    name: str = ""

    @classmethod
    def read(cls, value: Any) -> KubeConfigMap:
        raw = mapping(value)
        return cls(raw, _text(mapping(raw.get("metadata")).get("name")))

    @read_once
    def _metadata(self) -> dict[str, Any]:
        return mapping(self.raw.get("metadata"))

    @read_once
    def namespace(self) -> str:
        return _text(self._metadata.get("namespace"))

    @read_once
    def labels(self) -> dict[str, Any]:
        return mapping(self._metadata.get("labels"))

    @read_once
    def annotations(self) -> dict[str, Any]:
        return mapping(self._metadata.get("annotations"))

    @property
    def managed_by(self) -> Any:
        """Its ``app.kubernetes.io/managed-by`` label as stored (the advisor's advice:
        ``tf-thread-advisor``), None without one."""
        return self.labels.get(LABEL_MANAGED_BY)


@dataclass(frozen=True)
class KubeClaim:
    """A PersistentVolumeClaim as listed: its metadata and the access modes it has."""

    metadata: ObjectMeta
    #: asked for (``spec``) and, once bound, those of its PersistentVolume (``status``), which
    #: may allow more; each once, in that order
    access_modes: tuple[str, ...]

    @classmethod
    def read(cls, value: Any) -> KubeClaim:
        raw = mapping(value)
        modes = [
            *sequence(mapping(raw.get("spec")).get("accessModes")),
            *sequence(mapping(raw.get("status")).get("accessModes")),
        ]
        return cls(
            metadata=ObjectMeta.read(raw.get("metadata")),
            access_modes=tuple(dict.fromkeys(str(mode) for mode in modes)),
        )


@dataclass(frozen=True)
class JobCondition:
    """One of a Job's ``status.conditions`` (each field as text, "" when absent)."""

    type: str
    status: str
    reason: str
    message: str

    @classmethod
    def read(cls, value: Any) -> JobCondition:
        raw = mapping(value)
        return cls(*(_shown(raw.get(key)) for key in ("type", "status", "reason", "message")))


@dataclass(frozen=True)
class KubeJob:
    """A Job as listed: its metadata and its status's conditions."""

    metadata: ObjectMeta
    conditions: tuple[JobCondition, ...]

    @classmethod
    def read(cls, value: Any) -> KubeJob:
        raw = mapping(value)
        conditions = mappings(mapping(raw.get("status")).get("conditions"))
        return cls(
            metadata=ObjectMeta.read(raw.get("metadata")),
            conditions=tuple(JobCondition.read(c) for c in conditions),
        )


def _shown(value: Any) -> str:
    """A field as the text it shows; "" when it is absent or empty."""
    return str(value) if value else ""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""

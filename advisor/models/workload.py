"""Which workload: its kind, as the API names it, and kubectl's ``deployment/NAME``.

Every layer names workloads: ``run --restart`` and ``--for-workload`` parse them, the cluster
client reads and patches them, ``status`` finds the containers of each kind that read an advice,
``plan`` derives a calibration Job from one and records it in the Job's annotations and in the
advice's provenance, and render prints them. They all take the kinds from ``KINDS`` and the
text from ``WorkloadRef``, so ``deployment/web`` is parsed and printed in one place and the
advice, the Jobs and the plan compare typed references, never text. A listed object's reference
is its view's (``advisor.models.kube.KubeWorkload.ref``), read once where it is listed.

A new kind is one row of ``KINDS`` (its API resource, apiVersion and kubectl's short name), and
``calibrated`` when ``plan`` derives Jobs from it and ``run`` may restart it; the cluster client
reads it by its resource (the Role then needs that resource).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from advisor.kubenames import dns1123_subdomain_problem


class WorkloadKind(StrEnum):
    """A workload's ``kind`` as the API names it (what an object, an owner reference and the
    output of ``status`` say)."""

    DEPLOYMENT = "Deployment"
    STATEFULSET = "StatefulSet"
    DAEMONSET = "DaemonSet"
    POD = "Pod"

    @property
    def facts(self) -> KindFacts:
        return KINDS[self]

    @property
    def resource(self) -> str:
        """The API resource (what a Role's ``resources`` and a URL name)."""
        return KINDS[self].resource

    @property
    def api_version(self) -> str:
        return KINDS[self].api_version

    @property
    def group(self) -> str:
        """The API group (a Role's ``apiGroups``; "" for the core group)."""
        group, _, _ = KINDS[self].api_version.rpartition("/")
        return group

    @property
    def calibrated(self) -> bool:
        return KINDS[self].calibrated


@dataclass(frozen=True)
class KindFacts:
    """What the advisor knows of one kind."""

    resource: str
    api_version: str
    #: kubectl's short names (``run --restart deploy/web``)
    short_names: tuple[str, ...]
    #: ``plan`` derives calibration Jobs from it and ``run`` restarts it (``--restart``,
    #: ``--for-workload``); the others are only read, as consumers of an advice (``status``)
    calibrated: bool


#: every kind the advisor reads: the pods' owners ``status`` looks into, and pods nothing owns
KINDS: Mapping[WorkloadKind, KindFacts] = MappingProxyType(
    {
        WorkloadKind.DEPLOYMENT: KindFacts("deployments", "apps/v1", ("deploy",), calibrated=True),
        WorkloadKind.STATEFULSET: KindFacts("statefulsets", "apps/v1", ("sts",), calibrated=True),
        WorkloadKind.DAEMONSET: KindFacts("daemonsets", "apps/v1", ("ds",), calibrated=False),
        WorkloadKind.POD: KindFacts("pods", "v1", ("po",), calibrated=False),
    }
)
#: the kinds ``plan`` calibrates and ``run`` restarts
CALIBRATED_KINDS = tuple(kind for kind in WorkloadKind if kind.calibrated)
#: the kinds that own pods through a pod template (listed for ``status``; a bare pod is its own)
POD_OWNER_KINDS = tuple(kind for kind in WorkloadKind if kind is not WorkloadKind.POD)


@dataclass(frozen=True, order=True)
class WorkloadRef:
    """One workload of a namespace (the namespace is beside it where one is needed: an advice
    and the workloads reading it share one, since envFrom cannot cross namespaces). Printed and
    stored as kubectl names it, ``deployment/NAME``."""

    kind: WorkloadKind
    name: str

    def __post_init__(self) -> None:
        # the kind as the API names it ("Deployment") is the kind: a caller may pass the text
        object.__setattr__(self, "kind", WorkloadKind(self.kind))

    def __str__(self) -> str:
        return f"{self.kind.value.lower()}/{self.name}"

    @property
    def resource(self) -> str:
        return self.kind.resource

    @classmethod
    def parse(cls, text: str) -> WorkloadRef:
        """A workload ``run`` may name: ``deployment/NAME`` or ``statefulset/NAME``, kubectl's
        plurals and short names too; ValueError with the reason otherwise."""
        kind_text, sep, name = text.partition("/")
        kind = _ALIASES.get(kind_text.lower())
        if not sep or kind is None or not kind.calibrated:
            choices = " or ".join(f"{kind.value.lower()}/NAME" for kind in CALIBRATED_KINDS)
            raise ValueError(f"must be {choices}")
        problem = dns1123_subdomain_problem(name)
        if problem:
            raise ValueError(f"name {name!r} {problem}")
        return cls(kind, name)

    @classmethod
    def read(cls, text: str) -> WorkloadRef | None:
        """A reference as the advisor wrote it (any kind of ``KINDS``; kubectl's names too);
        None when ``text`` is not one."""
        kind_text, sep, name = text.partition("/")
        kind = _ALIASES.get(kind_text.lower())
        if not sep or kind is None or not name:
            return None
        return cls(kind, name)

    # A model field of this type holds the text (``deployment/NAME``): the stored provenance and
    # the plan's output read and write exactly what they did when it was a string.
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _validate, serialization=core_schema.to_string_ser_schema()
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "minLength": 1}


#: kubectl's names of each kind (singular, plural, short) -> the kind
_ALIASES: Mapping[str, WorkloadKind] = MappingProxyType(
    {
        alias: kind
        for kind, facts in KINDS.items()
        for alias in (kind.value.lower(), facts.resource, *facts.short_names)
    }
)


def _validate(value: Any) -> WorkloadRef:
    if isinstance(value, WorkloadRef):
        return value
    ref = WorkloadRef.read(value) if isinstance(value, str) else None
    if ref is None:
        raise ValueError("must be kind/NAME, as kubectl names a workload (deployment/NAME)")
    return ref

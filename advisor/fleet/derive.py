"""The calibration Job of one opted-in workload container, derived from its pod template.

(Interface fixed by the lead; the body is being written: see the helper's task.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from advisor.fleet.optin import CalibrationAsk
from advisor.models import CpuFrom, ServingTarget
from advisor.recommend import ANNOTATION_PREFIX

WorkloadKind = Literal["Deployment", "StatefulSet"]

#: labels every planned Job carries (a list selects them with PLANNED_SELECTOR)
LABEL_NAME = "app.kubernetes.io/name"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
COMPONENT = "calibration"
MANAGED_BY = "tf-thread-advisor-plan"
PLANNED_SELECTOR = f"{LABEL_NAME}=tf-thread-advisor,{LABEL_COMPONENT}={COMPONENT}"
#: short hashes as labels (label values are 63 characters at most; names may be 253)
LABEL_SPEC_HASH = ANNOTATION_PREFIX + "spec-hash"
LABEL_POOL_HASH = ANNOTATION_PREFIX + "pool-hash"
#: the full values, as annotations on the Job
ANN_WORKLOAD = ANNOTATION_PREFIX + "workload"  # deployment/NAME
ANN_CONTAINER = ANNOTATION_PREFIX + "container"
ANN_CONFIGMAP = ANNOTATION_PREFIX + "configmap"
ANN_POOL = ANNOTATION_PREFIX + "pool"  # readable: "pool=a" or "any node"

#: where the init container copies the model and the advisor reads it
MODEL_MOUNT = "/tfta-model"


class DeriveError(ValueError):
    """The workload cannot be calibrated as it is; the message says why (a ``skipped``)."""


@dataclass(frozen=True)
class JobSettings:
    """``plan``'s flags that shape every Job it derives."""

    image: str
    service_account: str
    image_pull_policy: str = "IfNotPresent"
    ttl_s: int = 86400
    backoff_limit: int = 3
    #: appended to the advisor's ``run`` arguments (e.g. a --configmap-annotation)
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class DerivedJob:
    """One calibration Job and what the planner compares and counts it by."""

    name: str
    spec_hash: str
    #: the node pool the Job is pinned to, readable, and its hash (the label)
    pool: str
    pool_hash: str
    #: the quota the Job runs under and what it stands for
    cpu: float
    cpu_from: CpuFrom
    target: ServingTarget
    manifest: dict[str, Any] = field(default_factory=dict)


def serving_container(pod_spec: Mapping[str, Any], ask: CalibrationAsk) -> dict[str, Any]:
    """The container the ask is about; DeriveError when it is not there or not unique."""
    raise NotImplementedError


def derive_job(
    kind: WorkloadKind,
    workload: Mapping[str, Any],
    ask: CalibrationAsk,
    *,
    configmap: str,
    settings: JobSettings,
) -> DerivedJob:
    """The Job that measures ``workload``'s serving container in its own pod shape."""
    raise NotImplementedError

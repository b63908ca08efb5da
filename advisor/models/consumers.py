"""The containers that read an advice and how they do not fit it (filled by ``advisor.pipeline``
for ``status``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from advisor.models.base import StrictModel
from advisor.models.production import Production
from advisor.models.workload import WorkloadKind, WorkloadRef

#: how a consuming container does not fit the advice it mounts (see ``Problem.code``)
ProblemCode = Literal[
    "cpu-limit-differs",
    "cpu-request-differs",
    "no-cpu-limit",
    "node-pool-differs",
    "advice-overridden",
    "resize-restarts-nothing",
    "pods-predate-advice",
    "advice-missing",
]


class Problem(StrictModel):
    """One reason the advice may not hold for a container that reads it."""

    code: ProblemCode = Field(
        description="cpu-limit-differs: its CPU limit (or a pod's, after an in-place resize) is "
        "not the quota the advice was measured under; no-cpu-limit: the advice was measured under "
        "a quota and it has none; cpu-request-differs: the advice was measured for a container "
        "without a CPU limit under its CPU request, and its request is not that quota; "
        "node-pool-differs: its nodeSelector and required node affinity "
        "do not pin it to the Job's recorded nodeSelector; advice-overridden: an envFrom prefix "
        "or its own env entry of the same name keeps the advice's values from TensorFlow; "
        "resize-restarts-nothing: no "
        "resizePolicy restarts it on a CPU resize; pods-predate-advice: running pods started "
        "before the advice's data last changed and neither the built-in restart nor Reloader "
        "replaces them; advice-missing: a required reference to a ConfigMap that does not exist"
    )
    message: str = Field(min_length=1, description="one sentence naming both sides")


class Consumer(StrictModel):
    """One container that reads an advice into its env (``envFrom`` or a key reference)."""

    kind: WorkloadKind
    name: str = Field(min_length=1)
    container: str = Field(min_length=1)
    cpu_limit: float | None = Field(
        default=None,
        ge=0,
        description="CPUs: the container's limits.cpu, else the pod-level limit, else what its "
        "running pods were admitted with (a LimitRange default); null: no limit",
    )
    cpu_request: float | None = Field(
        default=None,
        ge=0,
        description="CPUs: the container's requests.cpu, else the pod-level request; null: none",
    )
    problems: list[Problem] = Field(default_factory=list)
    production: Production | None = Field(
        default=None,
        description="its serving pods' metrics before and after the advice (only with "
        "Prometheus; left out of the output without it)",
    )

    @property
    def ref(self) -> WorkloadRef:
        return WorkloadRef(self.kind, self.name)

    @model_serializer(mode="wrap")
    def _without_unread_production(self, handler: SerializerFunctionWrapHandler) -> Any:
        # status without Prometheus prints what it printed before production existed
        dumped = handler(self)
        if isinstance(dumped, dict) and dumped.get("production", 0) is None:
            del dumped["production"]
        return dumped

"""Fleet mode's plan: every opted-in workload container and what ``plan`` does about its advice
(filled by ``advisor.pipeline.plan``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from advisor.models.base import StrictModel
from advisor.models.workload import WorkloadRef

#: what ``plan`` decides for one opted-in workload container
PlanVerdict = Literal["calibrate", "fits", "pending", "failed", "skipped", "revert", "suggested"]


class PlanDecision(StrictModel):
    """One opted-in workload container and what ``plan`` does about its advice."""

    workload: WorkloadRef = Field(description="kubectl's name: deployment/NAME")
    container: str | None = Field(default=None, description="the serving container")
    configmap: str | None = Field(default=None, description="the advice ConfigMap it reads")
    decision: PlanVerdict = Field(
        description="calibrate: its advice is missing or was measured for another shape; fits: "
        "the advice matches it; pending: a calibration Job for it has not finished; failed: the "
        "last calibration Job for this spec failed; skipped: it cannot be calibrated; revert: "
        "its serving pods did worse in production on this advice (Prometheus), so the advice "
        "it replaced is written back; suggested: not opted in, but throttled in production "
        "above --suggest-throttled"
    )
    reason: str = Field(min_length=1, description="one line: why")
    job: str | None = Field(
        default=None, description="the calibration Job created, to create, running or failed"
    )
    namespace: str | None = Field(
        default=None, description="the workload's namespace (where its calibration Job runs)"
    )


class PlanResult(StrictModel):
    """Every opted-in workload container of a namespace (or of every opted-in namespace) with its
    decision (``plan``)."""

    decisions: list[PlanDecision] = Field(default_factory=list)

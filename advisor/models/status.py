"""What ``status`` reports, as pydantic models: one row per advice ConfigMap, and the result.

The pipeline fills them from the stored provenance and the cluster's workloads and Jobs; render
shows them in every output format; ``model_dump(mode="json")`` of a row is what ``status
--format json`` prints for it, key for key and in this order. Values the advice does not say
are None, so an older advice (or one that does not validate) still makes a row.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from advisor.models.base import StrictModel
from advisor.models.calibration import StopReason
from advisor.models.consumers import Consumer
from advisor.models.recommendation import NearBestRange, ServingTarget

#: where a calibration Job stands, as its conditions say (``advisor.fleet.jobs``)
JobState = Literal["running", "complete", "failed"]


class AdviceStatus(StrictModel):
    """One advice ConfigMap as ``status`` shows it (None where the advice does not say)."""

    name: str = Field(description="the ConfigMap's name")
    namespace: str | None = Field(description="the ConfigMap's namespace")
    intra_op_threads: int | None = None
    inter_op_threads: int | None = None
    stale: bool = Field(default=False, description="stale_reasons is not empty")
    stale_reasons: list[str] = Field(
        default_factory=list,
        description="why the advice may no longer hold: the advisor or TensorFlow changed, it "
        "is older than --max-age, or it does not validate",
    )
    node: str | None = Field(default=None, description="the node it was measured on")
    node_labels: dict[str, str] = Field(
        default_factory=dict, description="that node's pool labels, as recorded"
    )
    cpu_model: str | None = None
    effective_cpus: float | None = None
    quota_cpus: float | None = None
    cpus_exclusive: bool | None = Field(
        default=None,
        description="it was measured on CPUs of its own (the static CPU manager's exclusive "
        "cores; null: not known)",
    )
    within_noise: NearBestRange | None = Field(
        default=None, description="the settings measured within noise of the best (newer advice)"
    )
    range: str | None = Field(default=None, description="within_noise in words, for the table")
    objective: str | None = None
    gain: float | None = Field(default=None, description="chosen vs TF's default, >1 = better")
    gain_within_noise: bool | None = None
    trials: int | None = None
    budget_s: float | None = None
    elapsed_s: float | None = Field(default=None, description="what its calibration took, s")
    stopped: StopReason | None = Field(
        default=None,
        description="settled: its calibration ended when more measurement could not change "
        "the advice; budget: the budget ended it (older advice: null)",
    )
    took: str | None = Field(
        default=None, description="elapsed_s and stopped in words, for the table: 38 s, settled"
    )
    tf_version: str | None = None
    advisor_version: str | None = None
    created_at: str | None = Field(default=None, description="when it was built, ISO 8601 UTC")
    age: str | None = Field(default=None, description="kubectl's style: 3d4h")
    age_s: int | None = None
    error: str | None = Field(
        default=None, description="why it does not validate, or which containers miss it"
    )
    node_selector: dict[str, str] | None = Field(
        default=None,
        description="the Job's nodeSelector, as recorded (the pool consumers must be pinned to)",
    )
    data_changed_at: str | None = Field(
        default=None, description="when its data last changed (older advice: null)"
    )
    target: ServingTarget | None = Field(
        default=None,
        description="the serving container it was measured for (fleet mode); its cpu_from says "
        "whether the quota stands for a CPU limit or a CPU request",
    )
    consumers: list[Consumer] | None = Field(
        default=None, description="the containers reading it (null: not looked up)"
    )
    unused: bool | None = Field(default=None, description="nobody reads it (null: not looked up)")
    missing: bool = Field(
        default=False, description="no such ConfigMap: listed because a container requires it"
    )
    calibration_job: str | None = Field(
        default=None,
        description="fleet mode: the newest calibration Job plan created for it (null: none, "
        "or Jobs were not looked up)",
    )
    calibration_state: JobState | None = Field(
        default=None, description="where that Job stands: running, complete or failed"
    )
    calibration_reason: str | None = Field(default=None, description="why that Job failed")

    @property
    def problems(self) -> int:
        """Problems of all its consumers."""
        return sum(len(c.problems) for c in self.consumers or [])


class StatusResult(StrictModel):
    """Every advice of a namespace or the cluster, sorted by namespace and name, then the missing
    advice containers require (``status``)."""

    rows: list[AdviceStatus] = Field(default_factory=list)

    @property
    def problems(self) -> int:
        """Problems of every consumer of every advice."""
        return sum(row.problems for row in self.rows)

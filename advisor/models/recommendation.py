"""The advice as published: env values for ``envFrom`` and the provenance that justifies them
(filled by ``advisor.recommend``), with the rules every write enforces."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import Field, model_validator

from advisor.models.base import StrictModel
from advisor.models.calibration import (
    IncumbentOutcome,
    Measurement,
    NearBest,
    OnednnVerdict,
    StopReason,
    SubjectInfo,
    TrialStatus,
)
from advisor.models.options import ObjectiveName
from advisor.models.setting import ThreadSetting
from advisor.models.stored_setting import FlatSetting
from advisor.models.tf_env import TENSORFLOW
from advisor.models.workload import WorkloadRef

#: POSIX-portable env var names (what ``envFrom`` turns ConfigMap keys into without a warning).
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: schema of the Recommendation (and of the provenance annotation); bumped on incompatible change.
SCHEMA_VERSION: Literal["v1"] = "v1"

#: at most this many trials are kept in the provenance: the annotation must stay far below the
#: API server's 256 KiB limit for all annotations of an object, whatever the budget was.
MAX_PROVENANCE_TRIALS = 200
#: at most this many fields of a calibration spec are recorded (``ServingTarget.spec``)
MAX_SPEC_FIELDS = 64


class TrialSummary(FlatSetting):
    """One trial as the provenance keeps it: the setting (stored as ``intra``/``inter``, null for
    TF's default) and its headline numbers, no prose."""

    round: int = Field(default=0, ge=0)
    status: TrialStatus
    p50_ms: float | None = Field(default=None, ge=0)
    p99_ms: float | None = Field(default=None, ge=0)
    throughput_rps: float | None = Field(default=None, ge=0)
    threads: int | None = Field(default=None, ge=0, description="thread count of the child")
    nr_throttled: int | None = Field(default=None, ge=0)


class NearBestRange(StrictModel):
    """The settings within noise of the best, as bounds (small enough for an annotation)."""

    intra: list[int] = Field(min_length=2, max_length=2, description="[lowest, highest]")
    inter: list[int] = Field(min_length=2, max_length=2, description="[lowest, highest]")
    settings: int = Field(ge=1, description="how many settings the range holds")
    default: bool = Field(default=False, description="TF's default is one of them")
    #: the one noise band (``advisor.calibrate.statistics``): the result's ``noise_band``
    band: float | None = Field(default=None, ge=0, description="the noise band, relative")

    @classmethod
    def of(cls, near: list[NearBest], band: float | None = None) -> NearBestRange | None:
        """The bounds of ``near`` (None when empty)."""
        if not near:
            return None
        intras, inters = [n.counts[0] for n in near], [n.counts[1] for n in near]
        return cls(
            intra=[min(intras), max(intras)],
            inter=[min(inters), max(inters)],
            settings=len(near),
            default=any(n.setting.is_default for n in near),
            band=band,
        )

    def describe(self) -> str:
        """``intra 2-3, inter 1-2 (3 settings)``: what a table shows."""
        spans = []
        for pool, (low, high) in (("intra", self.intra), ("inter", self.inter)):
            spans.append(f"{pool} {low}" + (f"-{high}" if high != low else ""))
        count = f"{self.settings} setting{'s' if self.settings != 1 else ''}"
        if self.default:
            count += ", TF's default among them"
        return f"{', '.join(spans)} ({count})"


class TopologySummary(StrictModel):
    """The parts of the node's CPU topology that make an advice portable or not."""

    sockets: int | None = Field(default=None, ge=1)
    physical_cores: int | None = Field(default=None, ge=1)
    threads_per_core: int | None = Field(default=None, ge=1)
    smt_active: bool | None = None
    numa_nodes: int | None = Field(default=None, ge=1)
    isa_flags: list[str] = Field(default_factory=list)


#: what the CPU quota an advice was measured under stands for: the serving container's CPU limit,
#: or (a workload with requests and no limit) its CPU request, what it is guaranteed on a busy node
CpuFrom = Literal["limit", "request"]


class ServingTarget(StrictModel):
    """The serving container an advice was measured for. Fleet mode's calibration Jobs record it
    (``run --for-workload ...``) and ``plan`` compares it with the workload as it is now; advice
    from a hand-written target carries none."""

    workload: WorkloadRef = Field(description="kubectl's name: deployment/NAME")
    container: str = Field(min_length=1, description="the serving container's name")
    image: str | None = Field(default=None, description="the serving container's image")
    model_path: str | None = Field(
        default=None, description="the model's path inside the serving container"
    )
    cpu_from: CpuFrom = Field(
        default="limit",
        description="limit: measured under the container's CPU limit; request: it has no limit, "
        "so it was measured under a quota equal to its CPU request",
    )
    spec_hash: str | None = Field(
        default=None, description="hash of the derived calibration spec (in the Job's name)"
    )
    spec: dict[str, str] | None = Field(
        default=None,
        max_length=MAX_SPEC_FIELDS,
        description="the calibration spec it was measured for, field by field: a short value "
        "as it is, a long one as # and its hash (plan names the fields that changed; older "
        "advice: none)",
    )


class Provenance(StrictModel):
    """Where and how the advice was measured, kept with it so a consumer can check it applies."""

    node_name: str | None = Field(default=None, description="spec.nodeName (Downward API)")
    node_labels: dict[str, str] = Field(
        default_factory=dict, description="node labels given with --node-label k=v"
    )
    node_selector: dict[str, str] | None = Field(
        default=None,
        description="the calibration Job's nodeSelector (--node-selector k=v; the chart passes "
        "its target's): the node pool a consumer must be pinned to for the advice to hold. "
        "Null when not given, so advice without one reads as before",
    )
    cpu_model: str | None = Field(default=None, description="model name from /proc/cpuinfo")
    logical_cpus: int = Field(ge=1, description="logical CPUs online on the machine")
    affinity_cpus: list[int] = Field(min_length=1, description="the advisor's affinity mask")
    quota_cpus: float | None = Field(default=None, ge=0, description="tightest CFS quota, CPUs")
    effective_cpus: float = Field(gt=0, description="min(len(affinity), quota)")
    cpus_exclusive: bool | None = Field(
        default=None,
        description="the run had CPUs of its own (the static CPU manager's exclusive cores): "
        "its affinity mask held as many CPUs as its whole-CPU quota, fewer than the node's. "
        "Null: no quota to tell by (older advice: none)",
    )
    topology: TopologySummary = Field(default_factory=TopologySummary)
    tf_version: str | None = Field(default=None, description="TensorFlow version measured with")
    objective: ObjectiveName
    p99_slo_ms: float | None = Field(default=None, gt=0)
    subject: SubjectInfo = Field(alias="workload")
    baseline: Measurement = Field(description="TF defaults on this node")
    chosen: Measurement = Field(description="the advised setting on this node")
    gain: float | None = Field(default=None, description="chosen vs baseline, >1 = better")
    onednn: OnednnVerdict | None = Field(
        default=None, description="the TF_ENABLE_ONEDNN_OPTS verdict, when it was swept"
    )
    gain_within_noise: bool = Field(
        default=False, description="chosen and baseline within noise (older advice: false)"
    )
    near_best: NearBestRange | None = Field(
        default=None, description="the settings within noise of the best (older advice: none)"
    )
    #: the one noise band (``advisor.calibrate.statistics``): the result's ``gain_band``
    gain_band: float | None = Field(
        default=None, ge=0, description="the noise band of the gain, relative (older: none)"
    )
    incumbent: IncumbentOutcome | None = Field(
        default=None,
        description="the advice in force before this run and whether it was confirmed (older "
        "advice: none)",
    )
    target: ServingTarget | None = Field(
        default=None,
        description="the serving container it was measured for (fleet mode; older advice and "
        "hand-written targets: none)",
    )
    trials_total: int = Field(ge=0, description="trials run (the list below may be truncated)")
    trials: list[TrialSummary] = Field(
        default_factory=list, max_length=MAX_PROVENANCE_TRIALS, description="compact trial table"
    )
    budget_s: float = Field(gt=0, description="the sweep's wall-clock budget: its ceiling")
    elapsed_s: float = Field(ge=0, description="what the calibration took, s")
    stopped: StopReason | None = Field(
        default=None,
        description="settled: it ended as soon as more measurement could not change the advice; "
        "budget: the budget ended it (older advice: none)",
    )
    advisor_version: str = Field(min_length=1)
    created_at: datetime = Field(description="when the advice was built (UTC)")

    @property
    def measured_cpus(self) -> float | None:
        """The CPU cap the advice was measured under, to compare with a container's: the CFS
        quota or, on CPUs of its own and no quota, as many CPUs as it had. Since 1.34 the
        kubelet sets no CFS quota on a container the static CPU manager gives exclusive CPUs
        (seen on the e2e tier's real node), where its whole-CPU limit is that count. None:
        measured with no cap at all."""
        if self.quota_cpus is not None:
            return self.quota_cpus
        if self.cpus_exclusive:
            return float(len(self.affinity_cpus))
        return None


class Recommendation(StrictModel):
    """The advice: env values for ``envFrom`` plus the provenance that justifies them.

    Validation (what ``validate`` and every write enforce):
    - ``env`` holds exactly TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS and OMP_NUM_THREADS;
      every name matches ``[A-Za-z_][A-Za-z0-9_]*``;
    - every value is a positive decimal integer string, at most
      ``thread_cap(len(provenance.affinity_cpus))`` = max(2 x affinity CPUs, 4), capped at
      MAX_THREADS (1024);
    - it may also hold TF_ENABLE_ONEDNN_OPTS (``--sweep-onednn`` found a winner), as 0 or 1.
    """

    schema_version: Literal["v1"] = SCHEMA_VERSION
    env: dict[str, str] = Field(
        description="env var name -> value, exactly TENSORFLOW.thread_names (and any knob)"
    )
    provenance: Provenance

    @model_validator(mode="after")
    def _env_is_sane(self) -> Recommendation:
        for name in self.env:
            if not re.fullmatch(ENV_NAME_PATTERN, name):
                raise ValueError(f"env name {name!r} is not a valid environment variable name")
        problem = TENSORFLOW.advice_problem(self.env, len(self.provenance.affinity_cpus))
        if problem is not None:
            raise ValueError(problem)
        return self

    @property
    def env_names(self) -> tuple[str, ...]:
        """The env names this advice sets, in a stable order."""
        return TENSORFLOW.env_names(self.env)

    @property
    def setting(self) -> ThreadSetting:
        return TENSORFLOW.env_setting(self.env)

    @property
    def intra_op_threads(self) -> int:
        return self._counts()[0]

    @property
    def inter_op_threads(self) -> int:
        return self._counts()[1]

    def _counts(self) -> tuple[int, int]:
        """Both counts: validation holds that the advice sets both."""
        setting = self.setting
        assert setting.intra is not None and setting.inter is not None
        return setting.intra, setting.inter

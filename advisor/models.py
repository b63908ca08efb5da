"""The data the advisor measures and publishes, as pydantic v2 models.

This module is the single place where limits and field docs live: the probe fills ``NodeProfile``,
calibration fills ``CalibrationResult``, and publishing validates a ``Recommendation`` before
anything is written anywhere. All models forbid unknown fields so a typo in a stored ConfigMap
annotation or a hand-edited file is an error, not a silently ignored value.

Sections (each owned by the layer that fills it):
- node profile (probe)
- calibration (calibrate)
- recommendation (recommend / publish)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from advisor.errors import InvalidOptionsError, Opt
from advisor.objectives import DEFAULT_OBJECTIVE, OBJECTIVES, bounded_names, named


class StrictModel(BaseModel):
    """Base for every model here: unknown fields are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------------------------------
# Node profile (filled by advisor.probe)
# --------------------------------------------------------------------------------------------------

#: cgroup quotas are rounded to this many decimals: CFS works in microseconds of a 100 ms period,
#: so finer digits are noise, and 1.5 must print as 1.5.
CPU_DECIMALS = 3


QuotaState = Literal["limited", "unlimited", "unknown"]


class CgroupLevel(StrictModel):
    """One cgroup on the path from the process's leaf up to the mount root."""

    path: str = Field(description="cgroup path as the kernel names it in the hierarchy")
    state: QuotaState = Field(
        description="limited: a quota is set; unlimited: none; unknown: the files were unusable"
    )
    quota_cpus: float | None = Field(
        default=None, gt=0, description="quota/period in CPUs at this level; null unless limited"
    )
    quota_us: int | None = Field(default=None, description="raw quota in microseconds, if limited")
    period_us: int | None = Field(default=None, gt=0, description="raw CFS period in microseconds")


class CgroupInfo(StrictModel):
    """What the cgroup CPU controller says about the process."""

    version: Literal[1, 2] | None = Field(
        default=None, description="cgroup version of the cpu controller; null if none was found"
    )
    mount_point: str | None = Field(default=None, description="where the cpu controller is mounted")
    path: str | None = Field(default=None, description="the process's cgroup (leaf) path")
    levels: list[CgroupLevel] = Field(
        default_factory=list, description="leaf first, then each ancestor up to the mount root"
    )
    quota_cpus: float | None = Field(
        default=None, ge=0, description="tightest quota of the leaf and its ancestors, in CPUs"
    )
    limiting_path: str | None = Field(
        default=None, description="the cgroup whose quota binds (the tightest)"
    )
    shares: int | None = Field(default=None, description="cgroup v1 cpu.shares (relative weight)")
    weight: int | None = Field(default=None, description="cgroup v2 cpu.weight (relative weight)")
    cpuset_cpus: list[int] | None = Field(
        default=None,
        description="CPUs the cpuset controller allows (informational: the kernel already "
        "applies it to the affinity mask), if it could be read",
    )
    nr_throttled: int | None = Field(default=None, ge=0, description="throttled periods so far")
    throttled_time_ms: float | None = Field(
        default=None, ge=0, description="time spent throttled so far, in milliseconds"
    )


class Topology(StrictModel):
    """CPU topology from /sys/devices/system/cpu and /proc/cpuinfo (whole machine)."""

    online_cpus: list[int] = Field(default_factory=list, description="online logical CPUs")
    sockets: int | None = Field(default=None, ge=1, description="physical packages")
    physical_cores: int | None = Field(default=None, ge=1, description="distinct (socket, core)")
    threads_per_core: int | None = Field(default=None, ge=1, description="SMT siblings per core")
    smt_active: bool | None = Field(default=None, description="/sys/devices/system/cpu/smt/active")
    numa_nodes: int | None = Field(default=None, ge=1, description="NUMA nodes with CPUs")
    cpu_model: str | None = Field(default=None, description="model name from /proc/cpuinfo")
    isa_flags: list[str] = Field(
        default_factory=list,
        description="inference-relevant ISA flags present (avx2, avx512f, avx512_vnni, ...)",
    )


class DownwardAPI(StrictModel):
    """Values a pod may be given through the Kubernetes Downward API (a cross-check only)."""

    node_name: str | None = Field(default=None, description="spec.nodeName")
    pod_name: str | None = Field(default=None, description="metadata.name")
    pod_namespace: str | None = Field(default=None, description="metadata.namespace")
    cpu_limit_cpus: float | None = Field(
        default=None, ge=0, description="limits.cpu (resourceFieldRef, divisor 1m), in CPUs"
    )
    cpu_request_cpus: float | None = Field(
        default=None, ge=0, description="requests.cpu (resourceFieldRef, divisor 1m), in CPUs"
    )


class NodeProfile(StrictModel):
    """What a TensorFlow process started here really has to run on."""

    logical_cpus: int = Field(ge=1, description="logical CPUs online on the machine")
    affinity_cpus: list[int] = Field(
        min_length=1, description="CPUs in the process's affinity mask (what TF sizes pools from)"
    )
    quota_cpus: float | None = Field(
        default=None, ge=0, description="tightest CFS quota in CPUs; null when unlimited/unknown"
    )
    effective_cpus: float = Field(
        gt=0, description="min(len(affinity), quota), fractional kept: what the process can use"
    )
    affinity_source: str = Field(
        description="where affinity_cpus came from: sched_getaffinity, a caller, or a file"
    )
    affinity_physical_cores: int | None = Field(
        default=None, ge=1, description="distinct physical cores under the affinity CPUs"
    )
    cgroup: CgroupInfo = Field(default_factory=CgroupInfo)
    topology: Topology = Field(default_factory=Topology)
    downward_api: DownwardAPI | None = Field(
        default=None, description="Downward API values, when the pod was given them"
    )
    warnings: list[str] = Field(
        default_factory=list, description="what could not be read or proven, naming the file"
    )


# --------------------------------------------------------------------------------------------------
# Calibration (filled by advisor.calibrate)
# --------------------------------------------------------------------------------------------------


def _known_objective(name: str) -> str:
    named(name)  # ValueError naming the known ones
    return name


#: an objective's name, one of ``advisor.objectives.OBJECTIVES``: stored (and hashed, in the
#: ConfigMap's provenance) as the plain string it is
ObjectiveName = Annotated[
    str,
    AfterValidator(_known_objective),
    WithJsonSchema({"type": "string", "enum": list(OBJECTIVES)}),
]
TrialStatus = Literal["ok", "failed", "timeout", "crashed", "oom", "skipped"]

#: The sweep's default budget, in seconds, re-derived in issue 10 as the smallest that gives up
#: nothing 60 s had. Measured side by side on CI's 2-CPU machine (benchmarks/advice_quality.py
#: --short-everywhere), 30 s gave advice as near the grid's best as 60 s (15 of 24 each, on the
#: same grid) at half the cost; the floor is set by bigger nodes: only from 45 s does the simulated
#: sweep (benchmarks/scaling.py, forked trials) measure every candidate on every node size from 2
#: to 256 CPUs (42 s misses two of 18 on 256 CPUs).
DEFAULT_BUDGET_S = 45.0

#: quotas closer than this (in CPUs) are the same quota (CFS rounding)
QUOTA_TOLERANCE = 0.01

#: The smallest budget accepted, in seconds: inspecting the model (one child: TF start-up and a
#: model load, ~4-5 s here) plus the baseline and two settings at the screen's longest trial, as
#: spawned trials (the fallback) cost them: 3.5 s of start-up + 0.2 s warm-up + a 1.2 s window,
#: planned with 20% headroom: 5 + 3 x 5.9 = 22.6, rounded up with room for a slow inspection.
#: Anything less cannot compare even two settings with the TF default.
MIN_BUDGET_S = 25.0

#: thread counts above this are refused everywhere: no node TF runs on has more logical CPUs,
#: and a typo (40000 for 4) must not reach a ConfigMap.
MAX_THREADS = 1024

#: how trial processes start: forked from a server that has imported TensorFlow once (fast), a
#: fresh interpreter each (slow, always works), or fork with a fallback to spawn (the default).
TrialMode = Literal["auto", "fork", "spawn"]

#: oneDNN's graph optimisations in TF CPU builds: read once, at ``import tensorflow``, so the
#: sweep measures each value in a process (and fork server) of its own. Only "0" and "1" mean
#: anything to TF.
ENV_ONEDNN = "TF_ENABLE_ONEDNN_OPTS"
OnednnValue = Literal["0", "1"]
ONEDNN_VALUES: tuple[OnednnValue, ...] = ("0", "1")


class CalibrationOptions(StrictModel):
    """What the user asked to calibrate, and how long it may take.

    The rules a calibration's options obey live here, for the CLI and Python callers alike: the
    budget floor, the SLO bound that objective ``slo`` needs and no other takes. They are checked
    when the options are made, before anything starts, not after a minute of trials.
    """

    model_path: str | None = Field(
        default=None, description="SavedModel directory or .keras file; null = built-in workload"
    )
    signature: str = Field(
        default="serving_default", min_length=1, description="SavedModel signature"
    )
    batch_size: int = Field(default=1, ge=1, le=65536, description="fills unknown batch dimensions")
    concurrency: int = Field(default=1, ge=1, le=256, description="requests kept in flight")
    objective: ObjectiveName = Field(
        default=DEFAULT_OBJECTIVE, description="what the sweep optimises"
    )
    p99_slo_ms: float | None = Field(
        default=None, gt=0, description="with objective 'slo': the p99 bound in milliseconds"
    )
    budget_s: float = Field(
        default=DEFAULT_BUDGET_S, gt=0, le=86400, description="hard wall-clock limit, s"
    )
    trial_mode: TrialMode = Field(
        default="auto",
        description="fork: trials forked from one TensorFlow-importing server; spawn: a new "
        "process each; auto: fork, falling back to spawn if the server fails",
    )
    sweep_onednn: bool = Field(
        default=False,
        description="also measure TF_ENABLE_ONEDNN_OPTS=0 against =1 for the advised setting",
    )

    @field_validator("model_path")
    @classmethod
    def _model_path_names_something(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise InvalidOptionsError(Opt("model_path"), " must not be empty")
        return value

    @field_validator("budget_s")
    @classmethod
    def _budget_can_measure(cls, value: float) -> float:
        if value < MIN_BUDGET_S:
            raise InvalidOptionsError(
                Opt("budget_s"),
                f" {value:g} s is too small to measure anything: at least {MIN_BUDGET_S:g} s "
                "are needed for the model check, the TF default and two settings",
            )
        return value

    @model_validator(mode="after")
    def _slo_has_its_bound(self) -> CalibrationOptions:
        # the search ranks an SLO by it: without one, choosing would fail after the whole sweep;
        # a bound for another objective would be silently ignored
        bounded = named(self.objective).bounded_by is not None
        if bounded and self.p99_slo_ms is None:
            raise InvalidOptionsError(
                Opt("objective"),
                f" {self.objective} needs ",
                Opt("p99_slo_ms"),
                " (the p99 bound in milliseconds)",
            )
        if not bounded and self.p99_slo_ms is not None:
            raise InvalidOptionsError(
                Opt("p99_slo_ms"),
                " only applies to ",
                Opt("objective"),
                " " + bounded_names(),
            )
        return self


#: which loader a model needs (``advisor.trials.modelfile`` decides, the child loads)
WorkloadKind = Literal["builtin", "savedmodel", "keras"]


class TrialRequest(StrictModel):
    """What the parent asks one trial child to do, in its request file (as JSON).

    ``inspect`` loads the workload and describes it; ``trial`` measures it, and needs the
    window's lengths. A forked child touches ``loaded_marker`` once the workload is loaded, so
    the parent can tell a child that failed to start from a trial that failed.
    """

    mode: Literal["trial", "inspect"]
    kind: WorkloadKind
    path: str | None = Field(default=None, description="model path; null for builtin")
    signature: str = Field(min_length=1)
    batch_size: int = Field(ge=1)
    concurrency: int = Field(ge=1)
    warmup_s: float | None = Field(default=None, ge=0)
    measure_s: float | None = Field(default=None, ge=0)
    min_requests: int = Field(default=0, ge=0)
    max_measure_s: float | None = Field(default=None, ge=0)
    loaded_marker: str | None = None

    @model_validator(mode="after")
    def _a_trial_has_its_window(self) -> TrialRequest:
        if self.mode == "trial" and (self.warmup_s is None or self.measure_s is None):
            raise ValueError("a trial request needs warmup_s and measure_s")
        return self


class Progress(StrictModel):
    """One step of a sweep as it happens: inspecting, a trial started or finished, a round planned.

    The search's steps carry how much of its budget is spent, so a terminal can draw a bar from
    the numbers themselves; elsewhere ``line`` is what is logged.
    """

    text: str = Field(description="what happens, in words")
    elapsed_s: float | None = Field(default=None, description="seconds of the budget spent")
    budget_s: float | None = Field(default=None, description="the budget the search plans in")

    @property
    def line(self) -> str:
        """``[ 11/60 s] round 0 trial 2/5: ...`` for a step of the search, else the text."""
        if self.elapsed_s is None or self.budget_s is None:
            return self.text
        return f"[{self.elapsed_s:3.0f}/{self.budget_s:.0f} s] {self.text}"


#: receives the sweep's events as they happen (the CLI: a bar on a terminal; else they are logged)
ProgressFn = Callable[[Progress], None]


class WorkloadInfo(StrictModel):
    """Which workload was measured, so a ConfigMap says what its numbers are about."""

    kind: WorkloadKind
    path: str | None = Field(default=None, description="model path as given; null for builtin")
    signature: str | None = Field(default=None, description="SavedModel signature used")
    signature_digest: str | None = Field(
        default=None, description="sha256 of the input/output specs (names, dtypes, shapes)"
    )
    inputs: dict[str, str] = Field(
        default_factory=dict, description="input name -> dtype[shape] as synthesised"
    )
    batch_size: int = Field(default=1, ge=1)
    concurrency: int = Field(default=1, ge=1)
    tf_version: str | None = Field(default=None, description="TensorFlow that loaded the model")


class Measurement(StrictModel):
    """The headline numbers of one configuration."""

    p50_ms: float | None = Field(default=None, ge=0)
    p99_ms: float | None = Field(default=None, ge=0)
    throughput_rps: float | None = Field(default=None, ge=0)


class TrialResult(StrictModel):
    """One trial: one child process with one setting, measured for a fixed time."""

    intra_op_threads: int | None = Field(
        default=None, ge=1, le=MAX_THREADS, description="null = TF default (the baseline)"
    )
    inter_op_threads: int | None = Field(
        default=None, ge=1, le=MAX_THREADS, description="null = TF default (the baseline)"
    )
    round: int = Field(
        default=0, ge=0, description="0: the screen (short windows); 1, 2, ...: race rounds"
    )
    status: TrialStatus
    reason: str | None = Field(default=None, description="why a trial did not succeed")
    measure_s: float | None = Field(default=None, ge=0, description="measured window, seconds")
    requests: int | None = Field(default=None, ge=0, description="requests completed in the window")
    p50_ms: float | None = Field(default=None, ge=0)
    p90_ms: float | None = Field(default=None, ge=0)
    p99_ms: float | None = Field(default=None, ge=0)
    max_ms: float | None = Field(default=None, ge=0)
    throughput_rps: float | None = Field(default=None, ge=0)
    cpu_time_s: float | None = Field(default=None, ge=0, description="user+system CPU of the child")
    threads: int | None = Field(default=None, ge=0, description="thread count of the child process")
    nr_throttled: int | None = Field(default=None, ge=0, description="throttled periods in window")
    throttled_time_ms: float | None = Field(default=None, ge=0)
    involuntary_switches_per_request: float | None = Field(
        default=None,
        ge=0,
        description="involuntary context switches of the child's threads in the window (all of "
        "them, getrusage), per request: a thread preempted while it still had work, as when "
        "more threads are runnable than CPUs or quota allow. A symptom, not a verdict: TF's "
        "intra-op pool shows them whenever it has 2+ threads, also where it is not slower; "
        "null: older results",
    )
    peak_rss_mib: float | None = Field(
        default=None,
        ge=0,
        description="the child's peak resident memory over its life, model load included, MiB "
        "(VmHWM). Compare settings of one run: a forked child does not count "
        "what the trial server faulted in and it did not touch; null: older results",
    )
    onednn: OnednnValue | None = Field(
        default=None, description="TF_ENABLE_ONEDNN_OPTS the trial ran with; null: not set by us"
    )

    @property
    def is_baseline(self) -> bool:
        return self.intra_op_threads is None and self.inter_op_threads is None


class OnednnVerdict(StrictModel):
    """TF_ENABLE_ONEDNN_OPTS=0 against =1 on the advised thread setting, measured in pairs."""

    value: OnednnValue | None = Field(
        description="the value that won beyond noise (the advice sets it); null: neither did"
    )
    medians: dict[str, float] = Field(
        default_factory=dict, description="value -> median of the objective over its trials"
    )
    pairs: int = Field(ge=0, description="interleaved 0/1 pairs measured")
    band: float | None = Field(default=None, ge=0, description="the noise band used, relative")
    reason: str = Field(description="one line: what was measured and why this verdict")


class NearBest(StrictModel):
    """One setting measured within the noise band of the best (the advice is the cheapest)."""

    intra: int = Field(ge=1, le=MAX_THREADS)
    inter: int = Field(ge=1, le=MAX_THREADS)
    default: bool = Field(
        default=False, description="TF's own default (the baseline), its thread counts spelled out"
    )
    p99_ms: float | None = Field(default=None, ge=0, description="median over its windows")
    throughput_rps: float | None = Field(default=None, ge=0, description="median, req/s")
    cv: float | None = Field(
        default=None, ge=0, description="stdev/mean of the objective's value over its windows"
    )
    windows: int = Field(default=0, ge=0, description="windows behind the medians")


class Incumbent(StrictModel):
    """The advice in force, which a new measurement must beat beyond noise to replace.

    Read from the stored advice before the sweep (the ConfigMap ``run`` will write, the file it
    will replace, or ``--incumbent``), and measured in the race as a named arm beside TF's default.
    Without one, TF's default is the incumbent: a tool that publishes into running pods must be
    boring when nothing changed.
    """

    intra_op_threads: int = Field(ge=1, le=MAX_THREADS)
    inter_op_threads: int = Field(ge=1, le=MAX_THREADS)
    onednn: OnednnValue | None = Field(
        default=None, description="TF_ENABLE_ONEDNN_OPTS the stored advice sets, if any"
    )
    source: str = Field(min_length=1, description="where it was read, for people")


class IncumbentOutcome(StrictModel):
    """How the advice in force fared against this run's measurement."""

    intra: int = Field(ge=1, le=MAX_THREADS)
    inter: int = Field(ge=1, le=MAX_THREADS)
    default: bool = Field(
        description="the incumbent is TF's own default (nothing stored, or the stored advice "
        "spells TF's default out)"
    )
    source: str = Field(min_length=1, description="where the incumbent was read")
    kept: bool = Field(
        description="confirmed: no setting beat it beyond the noise band of the two (and by at "
        "least 5%), so its values are published again unchanged"
    )
    onednn: OnednnValue | None = Field(default=None, description="its TF_ENABLE_ONEDNN_OPTS")
    measured: Measurement | None = Field(
        default=None, description="its medians in this run; null when it could not be measured"
    )
    versus: float | None = Field(
        default=None,
        description="replaced: the new advice against it as a ratio of medians (>1 = better)",
    )
    band: float | None = Field(
        default=None, ge=0, description="the noise band of the two it was judged with, relative"
    )
    reason: str = Field(description="one line: why it was kept or replaced")


class CalibrationResult(StrictModel):
    """The outcome of a sweep: the advice, the baseline it beat, and every trial behind it."""

    intra_op_threads: int = Field(ge=1, le=MAX_THREADS)
    inter_op_threads: int = Field(ge=1, le=MAX_THREADS)
    objective: ObjectiveName
    p99_slo_ms: float | None = Field(default=None, gt=0)
    baseline: Measurement
    chosen: Measurement
    gain: float | None = Field(
        default=None,
        description="objective improvement over the baseline, as a ratio of medians (>1 = "
        "better); exactly 1.0 when the advice is the default or within noise of it",
    )
    gain_within_noise: bool = Field(
        default=False,
        description="the advice measured within the noise band of the TF default: no measurable "
        "gain (the advice may still be cheaper)",
    )
    spread: float | None = Field(
        default=None,
        ge=0,
        description="coefficient of variation (stdev/mean) of the chosen setting's objective "
        "over its windows",
    )
    noise_band: float | None = Field(
        default=None,
        ge=0,
        description="relative band within which a setting's median cannot be told from the "
        "best's: two standard errors of the difference of the best's and the baseline's "
        "medians, 5-25%",
    )
    gain_band: float | None = Field(
        default=None,
        ge=0,
        description="the noise band of the advice and TF's default, relative: the +- of the gain",
    )
    incumbent: IncumbentOutcome | None = Field(
        default=None,
        description="the advice in force before this run (TF's default when none was stored) "
        "and whether it was kept",
    )
    near_best: list[NearBest] = Field(
        default_factory=list,
        description="every setting within the noise band of the best, best first (the advice "
        "is the cheapest of them within 5% of the best)",
    )
    unstable: list[str] = Field(
        default_factory=list,
        description="settings (intra/inter) whose windows still disagree by a CV over 10%",
    )
    slo_met: bool | None = Field(
        default=None, description="objective 'slo': whether the chosen setting met the p99 bound"
    )
    rounds: int = Field(
        default=0, ge=0, description="rounds run: the screen (round 0) and each race round"
    )
    kept_default: bool = Field(
        default=False,
        description="the TF default was the pick (best, or the cheapest within noise and 5% of "
        "the best); the advice spells it out (intra = inter = the affinity count, what TF picks by "
        "itself) and its gain is 1.0",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="what a reader should know: ties broken, SLO missed, settings left unmeasured",
    )
    trials: list[TrialResult]
    workload: WorkloadInfo
    budget_s: float = Field(gt=0)
    elapsed_s: float = Field(ge=0)
    tf_version: str | None = None
    trial_mode: Literal["fork", "spawn"] | None = Field(
        default=None, description="how the trials were started (after any fallback)"
    )
    onednn: OnednnVerdict | None = Field(
        default=None, description="with --sweep-onednn: the TF_ENABLE_ONEDNN_OPTS verdict"
    )
    onednn_trials: list[TrialResult] = Field(
        default_factory=list,
        description="with --sweep-onednn: the 0/1 pairs on the advised setting (not in trials)",
    )
    node: NodeProfile


# --------------------------------------------------------------------------------------------------
# Recommendation (filled by advisor.recommend)
# --------------------------------------------------------------------------------------------------

#: the env names the advice sets; a ConfigMap's ``data`` holds exactly these and nothing else,
#: so ``envFrom`` injects nothing a consumer did not ask for. OMP_NUM_THREADS follows the intra-op
#: count: oneDNN/OpenMP kernels in TF CPU builds size their team from it.
ENV_INTRA_OP = "TF_NUM_INTRAOP_THREADS"
ENV_INTER_OP = "TF_NUM_INTEROP_THREADS"
ENV_OMP = "OMP_NUM_THREADS"
ADVICE_ENV_NAMES: tuple[str, ...] = (ENV_INTRA_OP, ENV_INTER_OP, ENV_OMP)

#: POSIX-portable env var names (what ``envFrom`` turns ConfigMap keys into without a warning).
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: thread counts as env values: a plain positive decimal, no sign, no leading zero, no spaces.
THREAD_VALUE_PATTERN = r"^[1-9][0-9]*$"

#: the smallest thread cap any node gets, so a 1-CPU pod may still be advised 2 inter-op threads
#: (they mostly wait) without failing validation.
MIN_THREAD_CAP = 4

#: schema of the Recommendation (and of the provenance annotation); bumped on incompatible change.
SCHEMA_VERSION: Literal["v1"] = "v1"

#: at most this many trials are kept in the provenance: the annotation must stay far below the
#: API server's 256 KiB limit for all annotations of an object, whatever the budget was.
MAX_PROVENANCE_TRIALS = 200


def thread_cap(affinity_count: int) -> int:
    """The largest thread count the advice may carry for a process with this affinity.

    Rule: ``min(MAX_THREADS, max(2 * len(affinity_cpus), MIN_THREAD_CAP))``. TF itself sizes its
    pools from the affinity mask, so a count above twice that mask is never a measured optimum,
    only a typo or an advice copied from a bigger node.
    """
    return min(MAX_THREADS, max(2 * affinity_count, MIN_THREAD_CAP))


def over_cap(value: str, cap: int) -> bool:
    """A thread value (``THREAD_VALUE_PATTERN``) above ``cap``; longer than the cap's digits is
    above it without ``int()``, which refuses strings of more than 4300 digits."""
    return len(value) > len(str(cap)) or int(value) > cap


class TrialSummary(StrictModel):
    """One trial as the provenance keeps it: the setting and its headline numbers, no prose."""

    intra: int | None = Field(default=None, ge=1, le=MAX_THREADS, description="null = TF default")
    inter: int | None = Field(default=None, ge=1, le=MAX_THREADS, description="null = TF default")
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
    band: float | None = Field(default=None, ge=0, description="the noise band, relative")

    @classmethod
    def of(cls, near: list[NearBest], band: float | None = None) -> NearBestRange | None:
        """The bounds of ``near`` (None when empty)."""
        if not near:
            return None
        intras, inters = [n.intra for n in near], [n.inter for n in near]
        return cls(
            intra=[min(intras), max(intras)],
            inter=[min(inters), max(inters)],
            settings=len(near),
            default=any(n.default for n in near),
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

    workload: str = Field(min_length=1, description="kubectl's name: deployment/NAME")
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
    topology: TopologySummary = Field(default_factory=TopologySummary)
    tf_version: str | None = Field(default=None, description="TensorFlow version measured with")
    objective: ObjectiveName
    p99_slo_ms: float | None = Field(default=None, gt=0)
    workload: WorkloadInfo
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
    budget_s: float = Field(gt=0, description="the sweep's wall-clock budget")
    elapsed_s: float = Field(ge=0)
    advisor_version: str = Field(min_length=1)
    created_at: datetime = Field(description="when the advice was built (UTC)")


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
    env: dict[str, str] = Field(description="env var name -> value, exactly ADVICE_ENV_NAMES")
    provenance: Provenance

    @model_validator(mode="after")
    def _env_is_sane(self) -> Recommendation:
        for name in self.env:
            if not re.fullmatch(ENV_NAME_PATTERN, name):
                raise ValueError(f"env name {name!r} is not a valid environment variable name")
        missing = [n for n in ADVICE_ENV_NAMES if n not in self.env]
        extra = sorted(set(self.env) - {*ADVICE_ENV_NAMES, ENV_ONEDNN})
        onednn = self.env.get(ENV_ONEDNN)
        if onednn is not None and onednn not in ONEDNN_VALUES:
            raise ValueError(f"{ENV_ONEDNN}={onednn!r} must be 0 or 1")
        if missing or extra:
            raise ValueError(
                f"env must hold exactly {', '.join(ADVICE_ENV_NAMES)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unexpected {', '.join(extra)}" if extra else "")
            )
        cap = thread_cap(len(self.provenance.affinity_cpus))
        for name in ADVICE_ENV_NAMES:
            value = self.env[name]
            if not re.fullmatch(THREAD_VALUE_PATTERN, value):
                raise ValueError(f"{name}={value!r} is not a positive integer")
            if over_cap(value, cap):
                raise ValueError(
                    f"{name}={value} exceeds {cap}, the cap for "
                    f"{len(self.provenance.affinity_cpus)} affinity CPUs (max(2 x CPUs, 4))"
                )
        return self

    @property
    def env_names(self) -> tuple[str, ...]:
        """The env names this advice sets, in a stable order."""
        return ADVICE_ENV_NAMES + ((ENV_ONEDNN,) if ENV_ONEDNN in self.env else ())

    @property
    def intra_op_threads(self) -> int:
        return int(self.env[ENV_INTRA_OP])

    @property
    def inter_op_threads(self) -> int:
        return int(self.env[ENV_INTER_OP])


# --------------------------------------------------------------------------------------------------
# Consumers (filled by advisor.pipeline, for ``status``)
# --------------------------------------------------------------------------------------------------

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
#: the workloads ``status`` looks into: what owns pods directly, and pods nothing owns
ConsumerKind = Literal["Deployment", "StatefulSet", "DaemonSet", "Pod"]


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

    kind: ConsumerKind
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


# --------------------------------------------------------------------------------------------------
# Fleet plan (filled by advisor.pipeline.plan)
# --------------------------------------------------------------------------------------------------

#: what ``plan`` decides for one opted-in workload container
PlanVerdict = Literal["calibrate", "fits", "pending", "failed", "skipped"]


class PlanDecision(StrictModel):
    """One opted-in workload container and what ``plan`` does about its advice."""

    workload: str = Field(min_length=1, description="kubectl's name: deployment/NAME")
    container: str | None = Field(default=None, description="the serving container")
    configmap: str | None = Field(default=None, description="the advice ConfigMap it reads")
    decision: PlanVerdict = Field(
        description="calibrate: its advice is missing or was measured for another shape; fits: "
        "the advice matches it; pending: a calibration Job for it has not finished; failed: the "
        "last calibration Job for this spec failed; skipped: it cannot be calibrated"
    )
    reason: str = Field(min_length=1, description="one line: why")
    job: str | None = Field(
        default=None, description="the calibration Job created, to create, running or failed"
    )


class PlanResult(StrictModel):
    """Every opted-in workload container of a namespace with its decision (``plan``)."""

    decisions: list[PlanDecision] = Field(default_factory=list)

"""What a benchmark run records, typed: the ``--json`` output and what the report reads.

A run is written as JSON and read back by ``replay``, ``repeatability`` and the report, also years
later: the recorded runs in benchmarks/runs/ predate some parts (the trials' windows, the looks,
the A/A arms, the machine), so those parts default to absent. ``dump`` writes only what a run set,
so a recorded run reads back and writes out as the very same JSON.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    """A part of a recorded run: immutable, and no key the run does not know."""

    #: a field named otherwise in code keeps its recorded key as its alias (a scenario's
    #: ``subject`` is its ``"workload"``), so older runs still read and new ones write the same
    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_by_name=True, serialize_by_alias=True
    )

    def dump(self) -> dict[str, Any]:
        """The JSON-ready dict, only what was set (a part an older run lacks stays absent)."""
        return self.model_dump(exclude_unset=True)


class Pick(Record):
    """A setting's key and its figure in the scenario's objective."""

    setting: str
    value: float


class Pooled(Record):
    """One setting's rounds pooled (``report.pool_rounds``). The judge's arithmetic reads only
    some figures, so each may be left out where a caller has no use for it."""

    p50_ms: float | None = None
    p99_ms: float | None = None
    throughput_rps: float | None = None
    requests: int = 0
    rounds: int = 0
    round_p99_ms: list[float] = Field(default_factory=list)
    round_rps: list[float] = Field(default_factory=list)
    cpu_s: float = 0.0
    nr_throttled: int = 0


class Ratios(Record):
    advice_vs_default: float | None
    advice_vs_grid_best: float | None


class Calibration(Record):
    """The scenario's ``tf-thread-advisor calibrate`` run: what it cost and what it said."""

    argv: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    error: str | None = None
    wall_s: float = 0.0
    reported_elapsed_s: float | None = None
    #: why it ended: settled (the stopping rule) or budget (absent before the rule)
    stopped: str | None = None
    #: where its time went: TF start, model load, screen, race, the rest (absent before)
    time_split: dict[str, Any] | None = None
    trials: int | None = None
    ok_trials: int | None = None
    trial_mode: str | None = None
    peak_tree_rss_mib: float = 0.0
    max_process_rss_mib: float | None = None
    #: the advisor's own ``baseline`` and ``chosen``, as its result JSON has them
    its_own_baseline: Any = None
    its_own_chosen: Any = None
    #: every trial as [intra, inter, round, status, p99 ms, req/s] (absent in the oldest run)
    windows: list[list[Any]] | None = None
    #: the advisor's own ``workload`` section (its subject): what it measured, with which inputs
    its_own_subject: Any = Field(default=None, alias="its_own_workload")


class GridTime(Record):
    start_s: float = 0.0
    measure_s: float = 0.0
    total_s: float


class Rerun(Record):
    """The scenario calibrated again another way (spawned trials, a shorter budget), judged by the
    same grid."""

    exit_code: int | None = None
    error: str | None = None
    wall_s: float = 0.0
    trials: int | None = None
    ok_trials: int | None = None
    advice: str | None = None
    advice_value: float | None = None
    advice_vs_grid_best: float | None = None
    peak_tree_rss_mib: float = 0.0
    budget_s: float | None = None
    reported_elapsed_s: float | None = None
    stopped: str | None = None


class Repeat(Rerun):
    """Calibrated again with the first run's advice as the incumbent."""

    incumbent_kept: bool | None = None
    same_data: bool = False


class Look(Record):
    """The grid's best and adv/best from some rounds alone (the first look, the held-out one)."""

    grid_best: Pick
    advice_vs_grid_best: float | None
    advice_value: float | None = None
    rounds: int = 0


class SecondLook(Record):
    """The judge's second look: how many more rounds, of which settings, in how long."""

    rounds: int
    settings: list[str]
    measure_s: float


class AA(Record):
    """The advice measured as two arms (benchmarks/arms.py)."""

    setting: str
    arms: list[str]
    values: list[float]
    rounds: list[int]
    noise: float | None
    beyond_tolerance: bool | None


class ScenarioResult(Record):
    """One scenario's row: values, ratios (advice / other, in objective units), targets."""

    scenario: str
    subject: str = Field(alias="workload")
    quota_cpus: float | None
    objective: str
    concurrency: int
    batch_size: int
    direction: str
    default: Pick
    rule: Pick
    advice: Pick | None
    grid_best: Pick
    ratios: Ratios
    calibrate: Calibration
    grid_time: GridTime
    calibrate_vs_grid: float | None
    settings: dict[str, Pooled]
    spawn: Rerun | None = None
    short: Rerun | None = None
    repeat: Repeat | None = None
    first_look: Look | None = None
    second_look: SecondLook | None = None
    held_out: Look | None = None
    #: key -> the key of the process whose windows it shares
    shared_windows: dict[str, str] = Field(default_factory=dict)
    aa: AA | None = None
    #: target name -> PASS, MISS or n/a
    targets: dict[str, str]


class ReplayCost(Record):
    """One model calibrated twice in the same quota: replaying its warmup requests (the
    advisor's default for a TF Serving version that has them), and on inputs it synthesises of
    the same shapes (``--requests none``): what the replay costs the sweep in measured trials
    per minute."""

    subject: str = Field(alias="workload")
    quota_cpus: float | None
    batch_size: int
    requests: int
    replay: Calibration
    synthesised: Calibration
    replay_per_60s: float | None
    synthesised_per_60s: float | None
    #: replay's ok trials per 60 s over the synthesised run's
    ratio: float | None
    #: PASS, MISS or n/a (a run failed)
    target: str


class ScalingRow(Record):
    """One simulated node size (benchmarks/scaling.py)."""

    launcher: str
    overhead_s: float
    cpus: int
    quota_cpus: float | None
    candidates: int
    measured: int
    trials: int
    race_rounds: int
    simulated_s: float
    advice: str
    kept_default: bool
    model_best: str
    advice_vs_best: float
    default_vs_best: float


class Machine(Record):
    """The machine a run ran on (``benchmarks.machine.describe``)."""

    cpu_model: str | None
    logical_cpus: int | None
    affinity_cpus: int
    physical_cores: int | None
    sockets: int | None
    kernel: str
    cgroup_version: int | None
    python: str
    tensorflow: str | None
    commit: str | None


class Host(Record):
    affinity: int
    logical_cpus: int | None = None
    sockets: int = 1
    loadavg_start: tuple[float, float, float]
    #: absent in runs recorded before machines were named
    machine: Machine | None = None
    loadavg_end: tuple[float, float, float] | None = None


class Run(Record):
    """A whole benchmark run, as ``quality --json`` writes it."""

    mode: str
    #: which scenarios (benchmarks/plan.py FAMILIES); absent in runs recorded before families
    family: str | None = None
    command: str = ""
    started_utc: str
    host: Host | None = None
    #: the plan's ``Effort``, field by field
    effort: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    #: target name -> what it asks
    targets: dict[str, str] = Field(default_factory=dict)
    scenarios: list[ScenarioResult] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    #: subject -> setting key -> the measuring child's start-up time and what it said
    children: dict[str, dict[str, Any]] = Field(default_factory=dict)
    scaling: list[ScalingRow] | None = None
    replay_cost: ReplayCost | None = None
    wall_s: float | None = None

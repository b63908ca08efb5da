"""One scenario's result from its calibrate runs and the judge's figures: values, ratios (advice /
other, in objective units), the looks, the A/A arms and the targets' verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor.models import DEFAULT_BUDGET_S
from benchmarks import arms, figures
from benchmarks.calibrate_run import CalibrateRun
from benchmarks.plan import Scenario
from benchmarks.pool import DEFAULT, Arm
from benchmarks.results import (
    AA,
    Calibration,
    GridTime,
    Look,
    Pick,
    Pooled,
    Ratios,
    Repeat,
    Rerun,
    ScenarioResult,
    SecondLook,
)


@dataclass(frozen=True)
class Calibrations:
    """A scenario's calibrate runs: the first, and each other way it was calibrated (None where
    the plan did not ask for it)."""

    first: CalibrateRun
    spawned: CalibrateRun | None = None
    short: CalibrateRun | None = None
    repeat: CalibrateRun | None = None

    @property
    def every(self) -> list[CalibrateRun]:
        return [r for r in (self.first, self.spawned, self.short, self.repeat) if r is not None]

    def advice_keys(self) -> list[str]:
        """The keys of what the first, spawned and short runs advised: the judge's contenders."""
        runs = (self.first, self.spawned, self.short)
        return [Arm.of(*r.advice).key for r in runs if r is not None and r.advice is not None]


@dataclass(frozen=True)
class Looks:
    """What the judge's two looks said about one scenario."""

    first: Look
    second: SecondLook
    held_out: Look | None


def kill_after(budget_s: float | None) -> float:
    """How long a calibrate run with ``budget_s`` (None: the advisor's default) may take before
    the benchmark kills it: twice the budget and two minutes, room for a loaded machine."""
    return 2 * (budget_s or DEFAULT_BUDGET_S) + 120


def scenario_figures(
    scenario: Scenario,
    stats: Mapping[str, Pooled],
    *,
    rule: Arm,
    calibrations: Calibrations,
    grid_keys: list[str],
    grid_time: GridTime,
    the_arms: arms.Arms | None = None,
    looks: Looks | None = None,
) -> ScenarioResult:
    """One scenario's row: values, ratios (advice / other, in objective units), targets.
    ``grid_time`` unrounded: the ratios and targets use it so; the row records it to 10 ms."""
    objective = scenario.objective
    value = figures.objective_value
    run = calibrations.first
    default = value(stats[DEFAULT.key], objective)
    best_key, best = figures.best_of(stats, grid_keys, objective)
    advice = None
    if run.advice is not None:
        key = Arm.of(*run.advice).key
        advice = Pick(setting=key, value=value(stats[key], objective))
    advice_value = None if advice is None else advice.value
    wall = run.wall_s if run.exit_code == 0 else None
    short = _rerun(calibrations.short, stats, objective, best)
    targets = figures.targets(
        scenario,
        advice=advice_value,
        default=default,
        best=best,
        calibrate_wall_s=wall,
        grid_s=grid_time.total_s,
        peak_rss_mib=run.peak_tree_rss_mib if run.exit_code == 0 else None,
        ok_trials_per_60s=figures.per_60s(run.ok_trials, wall),
        short_advice=None if short is None else short.advice_value,
        short_ran=short is not None,
        inputs_kind=figures.inputs_kind(None if run.result is None else run.result.get("workload")),
    )
    return ScenarioResult(
        scenario=scenario.name,
        subject=scenario.subject,
        quota_cpus=scenario.quota_cpus,
        objective=objective,
        concurrency=scenario.concurrency,
        batch_size=scenario.batch_size,
        direction="lower is better" if figures.lower_is_better(objective) else "higher is better",
        default=Pick(setting=DEFAULT.key, value=default),
        rule=Pick(setting=rule.key, value=value(stats[rule.key], objective)),
        advice=advice,
        grid_best=Pick(setting=best_key, value=best),
        ratios=Ratios(
            advice_vs_default=None if advice_value is None else round(advice_value / default, 3),
            advice_vs_grid_best=None if advice_value is None else round(advice_value / best, 3),
        ),
        calibrate=calibration_of(run),
        grid_time=GridTime(
            start_s=round(grid_time.start_s, 2),
            measure_s=round(grid_time.measure_s, 2),
            total_s=round(grid_time.total_s, 2),
        ),
        calibrate_vs_grid=None if wall is None else round(wall / grid_time.total_s, 3),
        settings=dict(stats),
        spawn=_rerun(calibrations.spawned, stats, objective, best),
        short=short,
        repeat=_repeat(calibrations.repeat, run, stats, objective, best),
        first_look=None if looks is None else looks.first,
        second_look=None if looks is None else looks.second,
        held_out=None if looks is None else looks.held_out,
        shared_windows={} if the_arms is None else dict(the_arms.shared),
        aa=aa_of(stats, the_arms, advice, objective),
        targets=targets,
    )


def calibration_of(run: CalibrateRun) -> Calibration:
    """A calibrate run as its run records it."""
    result = run.result
    return Calibration(
        argv=run.argv[1:],
        exit_code=run.exit_code,
        error=run.error,
        wall_s=round(run.wall_s, 2),
        reported_elapsed_s=None if result is None else result.get("elapsed_s"),
        stopped=None if result is None else result.get("stopped"),
        time_split=None if result is None else result.get("time_split"),
        trials=run.trial_count,
        ok_trials=run.ok_trials,
        trial_mode=None if result is None else result.get("trial_mode"),
        peak_tree_rss_mib=round(run.peak_tree_rss_mib, 1),
        max_process_rss_mib=None
        if run.max_process_rss_mib is None
        else round(run.max_process_rss_mib, 1),
        its_own_baseline=None if result is None else result.get("baseline"),
        its_own_chosen=None if result is None else result.get("chosen"),
        windows=_windows(run),
        its_own_subject=None if result is None else result.get("workload"),
    )


def aa_of(
    stats: Mapping[str, Pooled], the_arms: arms.Arms | None, advice: Pick | None, objective: str
) -> AA | None:
    """The advice measured as two arms (benchmarks/arms.py), beside its near-best verdict."""
    if the_arms is None or advice is None:
        return None
    pair = the_arms.pair(advice.setting)
    if pair is None or not set(pair) <= set(stats):
        return None
    aa = arms.aa_figures(stats, pair, objective)
    noise = aa["noise"]
    return AA(
        setting=advice.setting,
        **aa,
        beyond_tolerance=None if noise is None else noise > figures.GRID_BEST_TOLERANCE,
    )


def _windows(run: CalibrateRun) -> list[list[Any]] | None:
    """Every trial of the sweep as [intra, inter, round, status, p99 ms, req/s] (the baseline's
    threads as null): enough to replay the choice offline with another rule."""
    if run.result is None:
        return None
    return [
        [
            t.get("intra_op_threads"),
            t.get("inter_op_threads"),
            t.get("round"),
            t.get("status"),
            t.get("p99_ms"),
            t.get("throughput_rps"),
        ]
        for t in run.result.get("trials", [])
    ]


def _rerun_fields(
    run: CalibrateRun, stats: Mapping[str, Pooled], objective: str, best: float
) -> dict[str, Any]:
    """The same calibration run again another way (every trial spawned: what the fork server
    saves; a shorter budget: what a short sweep is worth), judged by the same grid."""
    key = None if run.advice is None else Arm.of(*run.advice).key
    value = None if key is None else figures.objective_value(stats[key], objective)
    return {
        "exit_code": run.exit_code,
        "error": run.error,
        "wall_s": round(run.wall_s, 2),
        "trials": run.trial_count,
        "ok_trials": run.ok_trials,
        "advice": key,
        "advice_value": value,
        "advice_vs_grid_best": None if value is None else round(value / best, 3),
        "peak_tree_rss_mib": round(run.peak_tree_rss_mib, 1),
        "budget_s": None if run.result is None else run.result.get("budget_s"),
        "reported_elapsed_s": None if run.result is None else run.result.get("elapsed_s"),
        "stopped": None if run.result is None else run.result.get("stopped"),
    }


def _rerun(
    run: CalibrateRun | None, stats: Mapping[str, Pooled], objective: str, best: float
) -> Rerun | None:
    return None if run is None else Rerun(**_rerun_fields(run, stats, objective, best))


def _repeat(
    run: CalibrateRun | None,
    first: CalibrateRun,
    stats: Mapping[str, Pooled],
    objective: str,
    best: float,
) -> Repeat | None:
    """The scenario calibrated again with the first run's advice as the incumbent."""
    if run is None:
        return None
    return Repeat(
        **_rerun_fields(run, stats, objective, best),
        incumbent_kept=run.kept_incumbent,
        same_data=run.data is not None and run.data == first.data,
    )

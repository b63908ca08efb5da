"""The result's account of every setting: the statistics the advice was decided on and what
became of each setting (``SettingStats``), and the settings within noise of the best
(``NearBest``), so that what a person reads is what was decided, never recomputed."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from advisor.calibrate.choice import Choice
from advisor.calibrate.statistics import SCREEN_ROUND, ConfigStats
from advisor.models import NearBest, SettingStats, SettingVerdict, ThreadSetting, TrialResult
from advisor.objectives import Measure


def near_best(stats: ConfigStats, measure: Measure, affinity_cpus: int) -> NearBest:
    """One setting within noise of the best, TF's default spelled out as the counts it runs."""
    return NearBest(
        **NearBest.measured_as(stats.setting, affinity_cpus),
        p99_ms=stats.p99_ms,
        throughput_rps=stats.throughput_rps,
        cv=stats.cv(measure),
        windows=stats.windows,
    )


def judged_settings(
    trials: Sequence[TrialResult],
    ranked: Sequence[ConfigStats],
    choice: Choice,
    *,
    dropped: Collection[ThreadSetting],
    unstable: Collection[ThreadSetting],
) -> list[SettingStats]:
    """Every setting tried, best first as ``ranked`` (the objective's order), then the ones no
    trial of which produced numbers, each with its statistics and verdict."""
    near = {s.setting for s in choice.near_best}
    out = [
        _judged(
            s,
            _verdict(s, choice, near, dropped),
            trials=trials,
            choice=choice,
            near=near,
            unstable=unstable,
        )
        for s in ranked
    ]
    measured = {s.setting for s in ranked}
    last: dict[ThreadSetting, TrialResult] = {}
    for trial in trials:
        if trial.setting not in measured:
            last[trial.setting] = trial
    for setting, trial in last.items():
        out.append(
            SettingStats(
                setting=setting,
                verdict="failed",
                status=trial.status,
                reason=trial.reason,
            )
        )
    return out


def _verdict(
    s: ConfigStats,
    choice: Choice,
    near: Collection[ThreadSetting],
    dropped: Collection[ThreadSetting],
) -> SettingVerdict:
    if s is choice.chosen:
        return "chosen"
    if s.is_baseline:
        return "baseline"
    if s.setting in near:
        return "within noise"
    if s.setting in dropped:
        return "dropped"
    return "raced" if s.raced else "screened"


def _judged(
    s: ConfigStats,
    verdict: SettingVerdict,
    *,
    trials: Sequence[TrialResult],
    choice: Choice,
    near: Collection[ThreadSetting],
    unstable: Collection[ThreadSetting],
) -> SettingStats:
    # throttling of the windows it was judged by (the race's if raced, else the screen's)
    throttled = [
        t.nr_throttled
        for t in trials
        if t.setting == s.setting
        and t.status == "ok"
        and (t.round > SCREEN_ROUND) == s.raced
        and t.nr_throttled is not None
    ]
    return SettingStats(
        setting=s.setting,
        verdict=verdict,
        best=s is choice.leader,
        within_noise=s.setting in near,
        unstable=s.setting in unstable,
        raced=s.raced,
        windows=s.windows,
        trials=s.trials,
        threads=s.threads or None,
        p50_ms=s.p50_ms,
        p99_ms=s.p99_ms,
        throughput_rps=s.throughput_rps,
        cv=s.cv(choice.measure),
        switches_per_request=s.switches_per_request,
        nr_throttled=max(throttled) if throttled else None,
    )

"""The judge's arithmetic: pooled figures, which setting is best, and the targets' verdicts.

Pure functions over a run's figures (``benchmarks.results``), so the arithmetic (pooled
percentiles, ratio directions, PASS/MISS) is tested without running anything. What "best" means is
the advisor's (``advisor.objectives``): latency ranks by the p99 in ms, lower is better; throughput
by completed requests per second, higher is better. A percentile is the advisor's too
(``advisor.calibrate.percentile``, nearest rank), so the judge's p99 and a trial's are the same
statistic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from advisor.calibrate.percentile import percentile
from advisor.calibrate.statistics import coefficient_of_variation
from advisor.objectives import Measure, named
from benchmarks.results import Pooled

#: the advice's quality targets (measured and reported, never asserted, never tuned toward)
P99_VS_DEFAULT_MAX = 0.60
GRID_BEST_TOLERANCE = 0.05
CALIBRATE_MAX_S = 60.0
CALIBRATE_MAX_GRID_SHARE = 0.25
RSS_MAX_MIB = 1.5 * 1024
MIN_OK_TRIALS_PER_60S = 30
SHORT_BUDGET_S = 30.0
#: replaying recorded requests keeps at least this share of the trials per minute measured
#: against synthesised inputs of the same shapes (issue 38's second target)
REPLAY_COST_MIN_SHARE = 0.80
REPLAY_COST_TARGET = (
    f"replaying warmup requests keeps >= {REPLAY_COST_MIN_SHARE:.0%} of the measured (ok) trials "
    "per 60 s against synthesised inputs of the same shapes"
)

TARGETS = {
    "1cpu_p99": f"1-CPU latency: advice p99 <= {P99_VS_DEFAULT_MAX:.2f} x default p99",
    "near_best": f"advice within {GRID_BEST_TOLERANCE:.0%} of grid best (its objective)",
    "cal_60s": f"calibrate wall <= {CALIBRATE_MAX_S:.0f} s",
    "cal_25pct": f"calibrate wall <= {CALIBRATE_MAX_GRID_SHARE:.0%} of grid time",
    "rss": f"peak RSS of the calibrate tree <= {RSS_MAX_MIB / 1024:.1f} GiB (builtin)",
    "trials_60s": f">= {MIN_OK_TRIALS_PER_60S} measured (ok) trials per 60 s "
    "(builtin, 1-CPU quota, latency)",
    "near_best_30s": f"a {SHORT_BUDGET_S:g} s sweep's advice within {GRID_BEST_TOLERANCE:.0%} of "
    "grid best (no quota, latency)",
    "from_warmup": "the calibration replayed the model's own warmup requests (serving family)",
}

__all__ = ["percentile"]  # re-exported: the judge's percentile is the advisor's


@dataclass(frozen=True)
class Figures:
    """One setting's pooled figures as the advisor's objectives read them. ``threads`` is 0 for
    all, so settings an objective ranks equal keep the order they were given in (the grid's:
    fewer threads first)."""

    p50_ms: float | None = None
    p99_ms: float | None = None
    throughput_rps: float | None = None
    threads: int = 0

    @classmethod
    def of(cls, stats: Pooled) -> Figures:
        return cls(stats.p50_ms, stats.p99_ms, stats.throughput_rps)

    @classmethod
    def alone(cls, value: float) -> Figures:
        """A bare figure, read by whichever measure asks (for comparing two of them)."""
        return cls(value, value, value)


def measure_of(objective: str) -> Measure:
    """The measure the advisor ranks ``objective``'s settings by (p99 ms, req/s)."""
    return named(objective).measure()


def pool_rounds(samples: Iterable[Mapping[str, Any]]) -> Pooled:
    """One setting's rounds pooled: percentiles over every latency, throughput over all windows."""
    rounds = list(samples)
    latencies = sorted(x for r in rounds for x in r["latencies_ms"])
    completed = sum(int(r["completed"]) for r in rounds)
    window = sum(float(r["window_s"]) for r in rounds)
    per_round_p99 = [percentile(sorted(r["latencies_ms"]), 99) for r in rounds if r["latencies_ms"]]
    per_round_rps = [int(r["completed"]) / float(r["window_s"]) for r in rounds]
    return Pooled(
        p50_ms=round(percentile(latencies, 50), 3),
        p99_ms=round(percentile(latencies, 99), 3),
        throughput_rps=round(completed / window, 2),
        requests=len(latencies),
        rounds=len(rounds),
        round_p99_ms=[round(x, 3) for x in per_round_p99],
        round_rps=[round(x, 2) for x in per_round_rps],
        cpu_s=round(sum(float(r.get("cpu_s", 0.0)) for r in rounds), 3),
        nr_throttled=sum(int(r.get("nr_throttled", 0)) for r in rounds),
    )


def objective_value(stats: Pooled, objective: str) -> float:
    return measure_of(objective).value(Figures.of(stats))


def lower_is_better(objective: str) -> bool:
    return named(objective).lower_is_better()


def ranked(stats_by_key: Mapping[str, Pooled], keys: Iterable[str], objective: str) -> list[str]:
    """``keys`` best first for ``objective``, by the advisor's measure of it; ties keep their
    order."""
    measure = measure_of(objective)
    return sorted(keys, key=lambda key: measure.key(Figures.of(stats_by_key[key])))


def best_of(
    stats_by_key: Mapping[str, Pooled], keys: Iterable[str], objective: str
) -> tuple[str, float]:
    """The best of ``keys`` for ``objective``; ties go to the first key (fewer threads first)."""
    key = ranked(stats_by_key, keys, objective)[0]
    return key, objective_value(stats_by_key[key], objective)


def contenders(
    stats_by_key: Mapping[str, Pooled],
    grid_keys: Iterable[str],
    objective: str,
    top: int,
    also: Iterable[str] = (),
) -> list[str]:
    """What the judge looks at again: the ``top`` best grid settings and every setting in
    ``also`` (the advice), once each, best first.

    Only these can change a near-best verdict: the advice's figure, and the figure it is held
    against. A setting outside the top few would need to beat all of them on a second look.
    """
    ordered = ranked(stats_by_key, grid_keys, objective)
    return list(dict.fromkeys([*ordered[:top], *also]))


def within_of_best(advice: float, best: float, objective: str, tolerance: float) -> bool:
    """``advice`` on the good side of ``best`` loosened by ``tolerance``, as the objective's
    measure compares."""
    return measure_of(objective).within(Figures.alone(advice), best, tolerance)


#: standard errors of the difference between two grid figures that count as "told apart"
GRID_Z = 2.0


def near_best(value: float | None, best: float, objective: str) -> bool:
    """An advice's grid value within the target's tolerance of the grid's best; no advice is not."""
    return value is not None and within_of_best(value, best, objective, GRID_BEST_TOLERANCE)


def done_when_short(quota_cpus: float | None, objective: str) -> bool:
    """The scenarios the done-when's 30 s sweep is about: no quota, latency."""
    return quota_cpus is None and objective == "latency"


def grid_noise(one: Pooled, other: Pooled, objective: str) -> float | None:
    """How far apart two settings' grid figures can be by the grid's own noise, as a fraction.

    Each figure pools its rounds; its relative standard error is estimated from the spread of
    its per-round figures (stdev / mean / sqrt(rounds)). Two figures closer than ``GRID_Z``
    standard errors of their difference cannot be told apart by this grid, so an adv/best inside
    that band is a 1.00 as far as this run can say. None without at least two rounds each.
    """
    errors = []
    for stats in (one, other):
        rounds = stats.round_p99_ms if lower_is_better(objective) else stats.round_rps
        cv = coefficient_of_variation(rounds)
        if cv is None:
            return None
        errors.append(cv / math.sqrt(len(rounds)))
    return GRID_Z * math.hypot(*errors)


def change_noise(grid: float | None, aa: float | None) -> float | None:
    """How far apart two figures of one judge can be by noise alone, for a change's verdict: the
    larger of the grid noise of the two settings (``grid_noise``) and the A/A noise of the new
    one (its two arms apart, ``benchmarks.arms.aa_figures``); None when neither was measured."""
    known = [x for x in (grid, aa) if x is not None]
    return max(known) if known else None


def change_verdict(ratio: float, noise: float | None, objective: str) -> tuple[str, str]:
    """Whether a change of the stored advice held, from ``ratio`` (the new setting's figure over
    the old one's, measured in the same rounds) and ``noise`` (``change_noise``).

    ``confirmed``: the new setting no worse than the old beyond noise (for latency: ratio <=
    1 + noise); ``refuted``: worse beyond it; ``n/a``: no noise figure to tell by. The second
    item says where the ratio fell: ``better beyond noise`` (a claimed gain the rounds
    reproduce), ``within noise`` (no gain, no loss the judge can tell), ``worse beyond noise``."""
    if noise is None:
        return "n/a", "no noise figure"
    if lower_is_better(objective):
        worse, better = ratio > 1 + noise, ratio < 1 - noise
    else:
        worse, better = ratio < 1 - noise, ratio > 1 + noise
    if worse:
        return "refuted", "worse beyond noise"
    return "confirmed", "better beyond noise" if better else "within noise"


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


class Judged(Protocol):
    """What the targets read of a scenario (``benchmarks.plan.Scenario``, which imports this
    module for its budgets: a protocol keeps the two from importing each other)."""

    @property
    def workload(self) -> str: ...

    @property
    def quota_cpus(self) -> float | None: ...

    @property
    def objective(self) -> str: ...

    @property
    def serving_kind(self) -> str | None: ...


def targets(
    scenario: Judged,
    *,
    advice: float | None,
    default: float,
    best: float,
    calibrate_wall_s: float | None,
    grid_s: float,
    peak_rss_mib: float | None,
    ok_trials_per_60s: float | None = None,
    short_advice: float | None = None,
    short_ran: bool = False,
    inputs_kind: str | None = None,
) -> dict[str, str]:
    """PASS / MISS / n/a for each target in ``TARGETS`` (n/a: not this scenario's, or no advice).

    ``short_advice``: the grid's value of the advice of the short-budget sweep, when one ran
    (``short_ran``; no advice from it is a miss). Its target is the done-when's, the no-quota
    latency scenarios; elsewhere a short sweep is compared in ``budget_table``.
    ``inputs_kind``: where the calibration says its inputs came from (``warmup``, ``file``,
    ``synthesised``; None: it says nothing, or it failed)."""
    objective = scenario.objective
    has_advice = advice is not None
    one_cpu = scenario.quota_cpus == 1.0 and objective == "latency"
    builtin_one_cpu = one_cpu and scenario.workload == "builtin"
    return {
        "1cpu_p99": _verdict(
            (advice is not None and advice <= P99_VS_DEFAULT_MAX * default) if one_cpu else None
        ),
        "near_best": _verdict(near_best(advice, best, objective)),
        "cal_60s": _verdict(
            calibrate_wall_s <= CALIBRATE_MAX_S if calibrate_wall_s and has_advice else False
        ),
        "cal_25pct": _verdict(
            calibrate_wall_s <= CALIBRATE_MAX_GRID_SHARE * grid_s
            if calibrate_wall_s and has_advice
            else False
        ),
        "rss": _verdict(
            (peak_rss_mib is not None and peak_rss_mib <= RSS_MAX_MIB)
            if scenario.workload == "builtin"
            else None
        ),
        "trials_60s": _verdict(
            (ok_trials_per_60s is not None and ok_trials_per_60s >= MIN_OK_TRIALS_PER_60S)
            if builtin_one_cpu
            else None
        ),
        "near_best_30s": _verdict(
            near_best(short_advice, best, objective)
            if short_ran and done_when_short(scenario.quota_cpus, objective)
            else None
        ),
        "from_warmup": _verdict(
            inputs_kind == "warmup" if scenario.serving_kind is not None else None
        ),
    }


def inputs_kind(workload: Mapping[str, Any] | None) -> str | None:
    """Where a calibration's inputs came from, as its result's ``workload`` says
    (``inputs_source.kind``); None where it says nothing."""
    source = (workload or {}).get("inputs_source") or {}
    kind = source.get("kind") if isinstance(source, Mapping) else None
    return kind if isinstance(kind, str) else None


def per_60s(ok_trials: int | None, wall_s: float | None) -> float | None:
    """Measured (ok) trials per 60 s of calibration wall time."""
    if ok_trials is None or not wall_s:
        return None
    return ok_trials * 60.0 / wall_s


def replay_cost_verdict(
    replay_per_60s: float | None, synthesised_per_60s: float | None, replayed: bool = True
) -> str:
    """PASS when the replay keeps ``REPLAY_COST_MIN_SHARE`` of the synthesised run's rate; n/a
    when either run measured nothing, or the replay run did not replay (``replayed``)."""
    if not replay_per_60s or not synthesised_per_60s or not replayed:
        return "n/a"
    return _verdict(replay_per_60s >= REPLAY_COST_MIN_SHARE * synthesised_per_60s)

"""The judge's arithmetic: pooled percentiles, directions, grid noise, contenders, PASS/MISS."""

from __future__ import annotations

import math
from typing import Any

import pytest

from benchmarks import figures
from benchmarks.plan import Scenario
from benchmarks.results import Pooled
from tests.unit.benchmarks import factory


def _round(latencies: list[float], completed: int, window_s: float = 1.0) -> dict[str, Any]:
    return {"latencies_ms": latencies, "completed": completed, "window_s": window_s, "cpu_s": 0.5}


def test_rounds_are_pooled_not_averaged() -> None:
    # one slow round: its tail must show in the pooled p99, not be diluted by a mean of p99s
    fast = _round([1.0] * 99, completed=99)
    slow = _round([1.0] * 90 + [50.0] * 9, completed=99)
    pooled = figures.pool_rounds([fast, slow])
    assert pooled.requests == 198
    assert pooled.p50_ms == 1.0
    assert pooled.p99_ms == 50.0
    assert pooled.throughput_rps == 99.0
    assert pooled.round_p99_ms == [1.0, 50.0]


STATS = {
    "default": factory.pooled({"p99_ms": 20.0, "throughput_rps": 100.0}),
    "1/1": factory.pooled({"p99_ms": 10.0, "throughput_rps": 90.0}),
    "2/1": factory.pooled({"p99_ms": 12.0, "throughput_rps": 120.0}),
}


def test_best_follows_the_objectives_direction() -> None:
    assert figures.best_of(STATS, ["1/1", "2/1"], "latency") == ("1/1", 10.0)
    assert figures.best_of(STATS, ["1/1", "2/1"], "throughput") == ("2/1", 120.0)


@pytest.mark.parametrize(
    ("advice", "best", "objective", "ok"),
    [
        (10.4, 10.0, "latency", True),
        (10.6, 10.0, "latency", False),
        (96.0, 100.0, "throughput", True),
        (94.0, 100.0, "throughput", False),
    ],
)
def test_within_five_percent_of_best(advice: float, best: float, objective: str, ok: bool) -> None:
    assert figures.within_of_best(advice, best, objective, 0.05) is ok


def _targets(**over: Any) -> dict[str, str]:
    fields = {"objective": "latency", "quota_cpus": 1.0, "subject": "builtin"}
    fields.update(over.pop("scenario", {}))
    scenario = Scenario(concurrency=1, **fields)
    kwargs: dict[str, Any] = {
        "advice": 10.0,
        "default": 20.0,
        "best": 10.0,
        "calibrate_wall_s": 50.0,
        "grid_s": 400.0,
        "peak_rss_mib": 900.0,
        "ok_trials_per_60s": 34.0,
        "short_ran": True,
        "short_advice": 10.0,
    }
    kwargs.update(over)
    return figures.targets(scenario, **kwargs)


def test_targets_pass_and_miss_on_their_own_thresholds() -> None:
    assert set(_targets().values()) == {"PASS", "n/a"}  # the 30 s target: no-quota only
    assert _targets(advice=12.5)["1cpu_p99"] == "MISS"  # 0.625 x default
    assert _targets(advice=12.5)["near_best"] == "MISS"
    assert _targets(calibrate_wall_s=61.0)["cal_60s"] == "MISS"
    assert _targets(grid_s=150.0)["cal_25pct"] == "MISS"
    assert _targets(peak_rss_mib=1600.0)["rss"] == "MISS"
    assert _targets(ok_trials_per_60s=29.5)["trials_60s"] == "MISS"
    assert _targets(ok_trials_per_60s=None)["trials_60s"] == "MISS"


def test_the_short_sweep_is_judged_by_the_same_grid_only_where_it_ran() -> None:
    no_quota = {"quota_cpus": None}
    assert _targets(scenario=no_quota, short_ran=False, short_advice=None)["near_best_30s"] == "n/a"
    assert _targets(scenario=no_quota, short_advice=10.4)["near_best_30s"] == "PASS"
    assert _targets(scenario=no_quota, short_advice=10.6)["near_best_30s"] == "MISS"
    assert _targets(scenario=no_quota, short_advice=None)["near_best_30s"] == "MISS"


def test_the_30s_target_stays_the_done_whens_where_the_short_sweep_ran_everywhere() -> None:
    # --short-everywhere calibrates the quota and throughput scenarios with 30 s too; those are
    # compared in the budget table, the target keeps to the no-quota latency scenarios
    assert _targets(short_advice=10.6)["near_best_30s"] == "n/a"
    throughput = {"quota_cpus": None, "objective": "throughput"}
    assert _targets(scenario=throughput, short_advice=10.6)["near_best_30s"] == "n/a"


def test_targets_that_do_not_apply_say_so_and_no_advice_is_a_miss() -> None:
    other = _targets(scenario={"quota_cpus": 1.5, "subject": "wide_mlp"})
    assert other["1cpu_p99"] == "n/a"
    assert other["rss"] == "n/a"
    assert other["trials_60s"] == "n/a"
    failed = _targets(advice=None, calibrate_wall_s=None)
    assert failed["1cpu_p99"] == failed["near_best"] == failed["cal_60s"] == "MISS"


def test_grid_noise_is_two_standard_errors_of_the_difference_from_the_rounds() -> None:
    steady = factory.pooled({"round_p99_ms": [10.0, 10.0, 10.0, 10.0]})
    shaky = factory.pooled(
        {"round_p99_ms": [8.0, 12.0, 8.0, 12.0]}
    )  # mean 10, stdev 2.309, se 1.155 (11.5%)
    assert figures.grid_noise(steady, steady, "latency") == 0.0
    assert figures.grid_noise(steady, shaky, "latency") == pytest.approx(2 * 0.11547, rel=1e-3)
    both = figures.grid_noise(shaky, shaky, "latency")
    assert both == pytest.approx(2 * math.hypot(0.11547, 0.11547), rel=1e-3)
    # throughput is judged by its own rounds, and one round says nothing about noise
    rps = factory.pooled({"round_rps": [100.0, 110.0], "round_p99_ms": [1.0, 1.0]})
    assert figures.grid_noise(rps, rps, "throughput") == pytest.approx(
        2 * math.hypot(*[7.0711 / 105 / math.sqrt(2)] * 2), rel=1e-3
    )
    one_round = factory.pooled({"round_p99_ms": [10.0]})
    assert figures.grid_noise(one_round, steady, "latency") is None
    assert figures.grid_noise(factory.pooled({}), steady, "latency") is None


@pytest.mark.parametrize(
    ("objective", "expected"),
    [("latency", ["2/1", "1/2", "3/3"]), ("throughput", ["1/1", "2/2", "3/3"])],
)
def test_contenders_are_the_top_grid_settings_then_the_advice_once_each(
    objective: str, expected: list[str]
) -> None:
    def stats(p99: float, rps: float) -> Pooled:
        return factory.pooled({"p99_ms": p99, "throughput_rps": rps})

    measured = {
        "1/1": stats(9.0, 300.0),
        "1/2": stats(8.0, 250.0),
        "2/1": stats(8.0, 200.0),  # ties 1/2 on latency: the grid's order decides, as best_of
        "2/2": stats(9.5, 280.0),
        "3/3": stats(20.0, 10.0),  # the advice, not in the grid
    }
    grid = ["2/1", "1/2", "1/1", "2/2"]
    assert figures.contenders(measured, grid, objective, 2, ["3/3", "3/3"]) == expected
    top = figures.contenders(measured, grid, objective, 2)
    assert figures.contenders(measured, grid, objective, 2, [top[1]]) == top  # no repeats
    assert figures.best_of(measured, grid, objective)[0] == top[0]

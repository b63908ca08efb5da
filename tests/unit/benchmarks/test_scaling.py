"""The simulated-scaling section: the real search over the benchmark's synthetic cost model."""

from __future__ import annotations

import subprocess
import sys

import pytest

from advisor.calibrate.search import SearchSettings
from advisor.models import DEFAULT_BUDGET_S, ThreadSetting
from benchmarks import scaling
from tests.support import REPO

SIZES = (2, 4, 8, 16, 32, 64, 128, 256)


def test_cost_model_punishes_threads_past_the_quota_and_rewards_parallelism_below_it() -> None:
    model = scaling.CostModel(cpus=64, quota=4.0)
    assert model.p99_ms(4, 1) < model.p99_ms(2, 1) < model.p99_ms(1, 1)
    assert model.p99_ms(8, 1) > model.p99_ms(4, 1)
    assert model.p99_ms(*model.default_setting()) > 2 * model.best()[1]
    unlimited = scaling.CostModel(cpus=8, quota=None)
    assert unlimited.p99_ms(8, 1) < unlimited.p99_ms(4, 1)


def test_search_stays_within_its_budget_at_every_size_and_reports_each_figure() -> None:
    rows = scaling.simulate((2, 256))
    nodes = [(2, None), (256, None), (256, 4.0)]
    assert [(r.launcher, r.cpus, r.quota_cpus) for r in rows] == [
        (launcher.name, *n) for launcher in scaling.LAUNCHERS for n in nodes
    ]
    for row in rows:
        assert row.trials >= 3  # the baseline and at least two settings
        assert row.trials > row.measured  # the baseline runs again and again
        # the default budget kept, and used up to less than one more planned race trial
        plan = SearchSettings()
        trial_s = (row.overhead_s + plan.race.warmup_s + plan.race.longest_s) * plan.safety
        assert DEFAULT_BUDGET_S - trial_s <= row.simulated_s <= DEFAULT_BUDGET_S
        assert row.advice_vs_best >= 1.0  # nothing beats the model's own optimum
        intra, inter = (int(x) for x in row.advice.split("/"))
        assert 1 <= intra <= 2 * row.cpus
        assert inter >= 1


@pytest.mark.parametrize("cpus", SIZES)
def test_with_fork_start_up_every_setting_is_measured_within_the_default_budget(cpus: int) -> None:
    for quota in (None, 4.0) if cpus >= 8 else (None,):
        row = scaling.simulate_one(cpus, quota, scaling.FORK)
        assert row.candidates <= 18
        assert row.measured == row.candidates, row
        assert row.race_rounds >= 2, row
        spawn = scaling.simulate_one(cpus, quota, scaling.SPAWN)
        assert spawn.trials < row.trials  # what the fork server buys


def test_the_default_budget_is_the_smallest_that_measures_every_setting_on_every_size() -> None:
    # the floor the default is derived from (docs/benchmark.md, "The default budget"): 5 s less
    # leaves settings unmeasured
    def unmeasured(budget_s: float) -> list[tuple[int, float | None]]:
        nodes = [(c, q) for c in SIZES for q in ((None, 4.0) if c >= 8 else (None,))]
        rows = [scaling.simulate_one(c, q, scaling.FORK, budget_s) for c, q in nodes]
        return [(r.cpus, r.quota_cpus) for r in rows if r.measured < r.candidates]

    assert unmeasured(DEFAULT_BUDGET_S) == []
    assert (256, None) in unmeasured(DEFAULT_BUDGET_S - 5.0)


def test_a_request_sized_window_is_what_the_real_child_measures() -> None:
    from advisor.calibrate.spec import TrialSpec

    spec = TrialSpec(
        ThreadSetting.TF_DEFAULT, warmup_s=0.3, measure_s=0.4, min_requests=150, max_measure_s=1.5
    )
    assert scaling.window_s(spec, rps=1000.0) == 0.4  # 150 requests come in 0.15 s
    assert scaling.window_s(spec, rps=200.0) == 0.75
    assert scaling.window_s(spec, rps=10.0) == 1.5  # capped


def test_the_command_prints_both_start_ups() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "scaling"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "| spawn 3.5 s |" in done.stdout
    assert "| fork 0.3 s  |" in done.stdout

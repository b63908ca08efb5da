"""The simulated-scaling section: the real search over the benchmark's synthetic cost model."""

from __future__ import annotations

from benchmarks import scaling


def test_cost_model_punishes_threads_past_the_quota_and_rewards_parallelism_below_it() -> None:
    model = scaling.CostModel(cpus=64, quota=4.0)
    assert model.p99_ms(4, 1) < model.p99_ms(2, 1) < model.p99_ms(1, 1)
    assert model.p99_ms(8, 1) > model.p99_ms(4, 1)
    assert model.p99_ms(*model.default_setting()) > 2 * model.best()[1]
    unlimited = scaling.CostModel(cpus=8, quota=None)
    assert unlimited.p99_ms(8, 1) < unlimited.p99_ms(4, 1)


def test_search_stays_within_its_budget_at_every_size_and_reports_each_figure() -> None:
    rows = scaling.simulate((2, 256))
    assert [(r["cpus"], r["quota_cpus"]) for r in rows] == [(2, None), (256, None), (256, 4.0)]
    for row in rows:
        assert row["trials"] >= 3  # the baseline and at least two settings
        assert row["trials"] > row["candidates"]  # the baseline runs in every round
        assert 0 < row["simulated_s"] <= 60.0  # the default budget is a hard limit
        assert row["advice_vs_best"] >= 1.0  # nothing beats the model's own optimum
        intra, inter = (int(x) for x in row["advice"].split("/"))
        assert 1 <= intra <= 2 * row["cpus"]
        assert inter >= 1

"""The benchmark's plan: which scenarios run, which settings are compared, in which order."""

from __future__ import annotations

import itertools

import pytest

from benchmarks import plan, quality_args


def test_quick_keeps_the_one_cpu_latency_scenario_and_covers_every_axis() -> None:
    quick = plan.make_plan("quick", can_quota=True).scenarios
    assert 3 <= len(quick) <= 4
    assert any(s.quota_cpus == 1.0 and s.objective == "latency" for s in quick)
    assert {s.quota_cpus for s in quick} == set(plan.QUOTAS)
    assert {s.objective for s in quick} == set(plan.OBJECTIVES)
    assert {s.concurrency for s in quick} == set(plan.CONCURRENCIES)
    assert {s.subject for s in quick} == set(plan.SUBJECTS)


def test_full_is_the_whole_cross_product_without_repeats() -> None:
    full = plan.make_plan("full", can_quota=True).scenarios
    expected = itertools.product(plan.SUBJECTS, plan.QUOTAS, plan.OBJECTIVES, plan.CONCURRENCIES)
    assert {(s.subject, s.quota_cpus, s.objective, s.concurrency) for s in full} == set(expected)
    assert len({s.name for s in full}) == len(full)


@pytest.mark.parametrize("mode", ["full", "quick", "smoke"])
def test_without_cgroups_only_no_quota_scenarios_run_and_the_plan_says_so(mode: str) -> None:
    made = plan.make_plan(mode, can_quota=False, why_not="not root")
    assert made.scenarios
    assert all(s.quota_cpus is None for s in made.scenarios)
    assert any("not root" in note for note in made.notes)


def test_scenarios_differing_only_in_objective_share_a_measurement() -> None:
    a = plan.Scenario("builtin", 1.0, "latency", 1)
    b = plan.Scenario("builtin", 1.0, "throughput", 1)
    c = plan.Scenario("builtin", 1.0, "latency", 2)
    assert a.group_key == b.group_key != c.group_key
    assert a.name != b.name


def test_grid_is_intra_one_to_twice_affinity_by_inter_one_to_four() -> None:
    points = plan.grid(affinity=3)
    assert len(points) == 6 * 4
    assert min(points) == (1, 1)
    assert max(points) == (6, 4)
    assert plan.grid(affinity=3, limit=(2, 1)) == [(1, 1), (2, 1)]


@pytest.mark.parametrize(
    ("affinity", "quota", "sockets", "expected"),
    [(2, None, 1, (2, 1)), (2, 1.5, 1, (1, 1)), (64, 4.0, 2, (4, 2)), (64, 0.5, 1, (1, 1))],
)
def test_static_rule_floors_the_effective_cores_and_uses_sockets(
    affinity: int, quota: float | None, sockets: int, expected: tuple[int, int]
) -> None:
    assert plan.static_rule(affinity, quota, sockets) == expected


def test_rounds_run_every_setting_once_in_seeded_reshuffled_orders() -> None:
    keys = [f"s{i}" for i in range(12)]
    orders = plan.round_orders(keys, rounds=4, seed=6)
    assert len(orders) == 4
    assert all(sorted(o) == sorted(keys) for o in orders)
    assert len({tuple(o) for o in orders}) > 1
    assert orders == plan.round_orders(keys, rounds=4, seed=6)
    assert orders != plan.round_orders(keys, rounds=4, seed=7)


def test_budget_flag_replaces_the_advisors_default_budget_and_nothing_else() -> None:
    default = quality_args.plan_of(quality_args.parse_args(["--quick"]), "quick", None)
    assert default.effort.calibrate_budget_s is None  # calibrate runs with its own default
    args = quality_args.parse_args(["--quick", "--budget", "40"])
    chosen = quality_args.plan_of(args, "quick", None)
    assert chosen.effort.calibrate_budget_s == 40.0
    assert chosen.scenarios == default.scenarios
    assert chosen.effort.short_budget_s == default.effort.short_budget_s


def test_every_mode_takes_a_second_look_and_the_full_run_the_longest() -> None:
    efforts = {mode: plan.make_plan(mode, True).effort for mode in ("smoke", "quick", "full")}
    assert all(e.refine_rounds >= 1 and e.refine_top >= 1 for e in efforts.values())
    assert efforts["full"].refine_rounds > efforts["quick"].refine_rounds
    # the second look adds more rounds than the first had: it is there to narrow the figures
    assert efforts["full"].refine_rounds > efforts["full"].rounds


def test_the_short_sweep_runs_where_the_done_when_asks_or_everywhere_when_told() -> None:
    full = plan.make_plan("full", True)
    done_when = [s for s in full.scenarios if full.effort.short_budget_for(s)]
    assert done_when and all(s.quota_cpus is None and s.objective == "latency" for s in done_when)
    args = quality_args.parse_args(["--short-everywhere"])
    everywhere = quality_args.plan_of(args, "full", None)
    assert all(everywhere.effort.short_budget_for(s) == 30.0 for s in everywhere.scenarios)
    assert everywhere.scenarios == full.scenarios
    assert everywhere.effort.calibrate_budget_s is None  # the default budget beside it
    smoke = plan.make_plan("smoke", True)  # no short budget at all: none anywhere
    assert not any(smoke.effort.short_budget_for(s) for s in smoke.scenarios)


def test_the_networks_family_judges_each_network_under_one_cpu_first_with_longer_windows() -> None:
    full = plan.make_plan("full", can_quota=True, family="networks")
    assert {(s.subject, s.quota_cpus) for s in full.scenarios} == {
        (n, q) for n in plan.NETWORKS for q in (1.0, None)
    }
    assert all(s.objective == "latency" and s.concurrency == 1 for s in full.scenarios)
    quick = plan.make_plan("quick", can_quota=True, family="networks").scenarios
    assert [(s.subject, s.quota_cpus) for s in quick] == [(n, 1.0) for n in plan.NETWORKS]
    # a ResNet50 request takes 100-250 ms here: the shapes family's 2 s window holds too few
    shapes = plan.make_plan("full", can_quota=True).effort
    assert full.effort.window_s > shapes.window_s
    assert full.effort.refine_rounds > full.effort.rounds
    assert not full.effort.scaling_sizes  # the simulated scaling is the shapes family's
    # without cgroups the quick set still runs both networks, without a quota
    bare = plan.make_plan("quick", can_quota=False, why_not="not root", family="networks")
    assert [(s.subject, s.quota_cpus) for s in bare.scenarios] == [(n, None) for n in plan.NETWORKS]


def test_every_network_is_a_shape_the_benchmark_can_build() -> None:
    from benchmarks.shapes import SHAPES

    assert set(plan.NETWORKS) <= set(SHAPES)
    assert quality_args.parse_args(["--family", "networks"]).family == "networks"

"""Successive halving under a hard budget, with a fake clock and a cost-model trial function."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from advisor.calibrate.candidates import candidate_configs
from advisor.calibrate.objective import aggregate, choose
from advisor.calibrate.search import SearchOutcome, SearchSettings, successive_halving
from advisor.errors import CalibrationError
from advisor.models import Objective
from tests.search_fakes import FakeClock, FakeTrials, model_p99, node

SIZES = [2, 4, 8, 16, 32, 64, 128, 256]


def run(
    cpus: int,
    budget: float,
    quota: float | None = None,
    objective: Objective = "latency",
    **fake: Any,
) -> tuple[FakeTrials, FakeClock, SearchOutcome]:
    profile = node(cpus, quota=quota)
    clock = FakeClock()
    trials = FakeTrials(clock=clock, usable=profile.effective_cpus, affinity=cpus, **fake)
    outcome = successive_halving(
        candidate_configs(profile),
        objective,
        trials,
        clock=clock,
        until=clock.monotonic() + budget,
        budget_s=budget,
    )
    return trials, clock, outcome


@pytest.mark.parametrize("cpus", SIZES)
@pytest.mark.parametrize("budget", [15.0, 30.0, 60.0, 180.0, 900.0])
@pytest.mark.parametrize("overhead", [0.5, 3.0, 6.0])
def test_budget_is_never_exceeded(cpus: int, budget: float, overhead: float) -> None:
    clock_start = FakeClock().monotonic()
    try:
        fake, clock, _ = run(cpus, budget, overhead_s=overhead)
    except CalibrationError as exc:
        # only acceptable when even the baseline and one setting cannot fit
        assert "budget too small" in str(exc) or "could not be started" in str(exc)
        assert budget < 3 * (overhead + 1.5) * 1.2 or overhead > 3.5
        return
    assert clock.monotonic() <= clock_start + budget
    for _spec, deadline_s, started in fake.calls:
        assert started + deadline_s <= clock_start + budget  # not even a hung trial could overrun


def test_a_hung_trial_is_given_a_deadline_inside_the_budget() -> None:
    budget = 60.0
    _, clock, outcome = run(2, budget, quota=1.0, faults={(2, 1): "timeout"}, hang=True)
    assert clock.monotonic() <= 1000.0 + budget
    statuses = {(t.intra_op_threads, t.inter_op_threads): t.status for t in outcome.trials}
    assert statuses[(2, 1)] == "timeout"
    assert any(t.status == "ok" and not t.is_baseline for t in outcome.trials)


def test_baseline_is_measured_in_every_round_and_rounds_get_longer() -> None:
    fake, _, outcome = run(8, 120.0, quota=4.0)
    rounds = outcome.rounds
    assert rounds >= 2
    for number in range(rounds):
        specs = [spec for spec, _, _ in fake.calls if spec.round == number]
        assert any(s.intra_op_threads is None and s.inter_op_threads is None for s in specs)
    windows = [
        max(spec.measure_s for spec, _, _ in fake.calls if spec.round == number)
        for number in range(rounds)
    ]
    assert windows[1] > windows[0]
    # the field narrows: each later round keeps at most the better half (and at least two)
    sizes = [sum(1 for s, _, _ in fake.calls if s.round == n) - 1 for n in range(rounds)]
    for before, after in itertools.pairwise(sizes):
        assert after <= max(2, math.ceil(before / 2))


def test_rounds_are_interleaved_not_run_in_a_fixed_order() -> None:
    fake, _, outcome = run(16, 300.0)
    orders = [
        [(s.intra_op_threads, s.inter_op_threads) for s, _, _ in fake.calls if s.round == n]
        for n in range(outcome.rounds)
    ]
    assert len(orders) >= 3
    # the baseline opens every round (an overrun cuts candidates, never the reference)
    assert all(order[0] == (None, None) for order in orders)
    # round 0 is not simply the candidate list in its given order
    given = [(c.intra_op_threads, c.inter_op_threads) for c in candidate_configs(node(16))]
    assert orders[0][1:] != given[: len(orders[0]) - 1]
    # and the same settings meet in a different order in different rounds
    later = [order[1:] for order in orders[1:]]
    firsts = {order[0] for order in later if len(order) > 1}
    pairs = [tuple(o) for o in later if len(o) == 2]
    assert len(firsts) > 1 or len(set(pairs)) > 1, later


def test_same_seed_same_plan() -> None:
    first, _, _ = run(8, 60.0)
    second, _, _ = run(8, 60.0)
    assert [c[0] for c in first.calls] == [c[0] for c in second.calls]


@pytest.mark.parametrize(("cpus", "quota"), [(2, 1.0), (8, 2.0), (16, None), (64, 4.0)])
def test_search_finds_the_cost_models_best_setting(cpus: int, quota: float | None) -> None:
    _, _, outcome = run(cpus, 90.0, quota=quota, noise=0.02)
    choice = choose(aggregate(outcome.trials, "latency"), "latency")
    usable = node(cpus, quota=quota).effective_cpus
    candidates = candidate_configs(node(cpus, quota=quota))
    best = min(model_p99(c.intra_op_threads, c.inter_op_threads, usable) for c in candidates)
    chosen = model_p99(
        choice.chosen.intra_op_threads or 0, choice.chosen.inter_op_threads or 0, usable
    )
    assert chosen <= best * 1.10  # within noise of the true best
    assert choice.gain is not None
    assert choice.gain > 1  # the cost model's TF default oversubscribes under a quota


def test_failing_baseline_is_a_calibration_error() -> None:
    with pytest.raises(CalibrationError, match=r"baseline .*crashed: fake crashed"):
        run(4, 60.0, faults={(None, None): "crashed"})


def test_every_candidate_failing_is_a_calibration_error() -> None:
    profile = node(2, quota=1.0)
    faults = {(c.intra_op_threads, c.inter_op_threads): "oom" for c in candidate_configs(profile)}
    with pytest.raises(CalibrationError, match="no thread setting could be measured"):
        run(2, 60.0, quota=1.0, faults=faults)


def test_failed_candidate_is_dropped_and_the_sweep_goes_on() -> None:
    fake, _, outcome = run(2, 60.0, quota=1.0, faults={(1, 1): "crashed"})
    later = [s for s, _, _ in fake.calls if s.round > 0]
    assert later
    assert all((s.intra_op_threads, s.inter_op_threads) != (1, 1) for s in later)
    one_one = [t for t in outcome.trials if (t.intra_op_threads, t.inter_op_threads) == (1, 1)]
    assert [t.status for t in one_one] == ["crashed"]


def test_too_small_budget_is_refused_before_any_trial() -> None:
    clock = FakeClock()
    fake = FakeTrials(clock=clock, usable=1.0, affinity=2)
    with pytest.raises(CalibrationError, match="budget too small"):
        successive_halving(
            candidate_configs(node(2, quota=1.0)),
            "latency",
            fake,
            clock=clock,
            until=clock.monotonic() + 5.0,
            budget_s=5.0,
        )
    assert fake.calls == []


def key(spec: Any) -> tuple[int | None, int | None]:
    return (spec.intra_op_threads, spec.inter_op_threads)


def test_big_nodes_fit_the_front_of_the_list_then_zoom_in_next_to_the_best() -> None:
    fake, _, outcome = run(256, 60.0)
    first = {key(s) for s, _, _ in fake.calls if s.round == 0} - {(None, None)}
    measured = {key(s) for s, _, _ in fake.calls} - {(None, None)}
    candidates = candidate_configs(node(256))
    unmeasured = outcome.unmeasured
    assert unmeasured
    assert len(unmeasured) + len(measured) == len(candidates)
    # round 0 took the front of the list
    assert first == {key(c) for c in candidates[: len(first)]}
    # round 1 added settings round 0 had no room for, each next to round 0's best
    joined = measured - first
    assert 1 <= len(joined) <= 2
    round0 = [t for t in outcome.trials if t.round == 0 and t.status == "ok" and not t.is_baseline]
    best = min(round0, key=lambda t: t.p99_ms or 0.0)
    intras = sorted({c.intra_op_threads for c in candidates})
    for intra, inter in joined:
        assert intra is not None
        same_inter = inter == best.inter_op_threads and (
            abs(intras.index(intra) - intras.index(best.intra_op_threads or 0)) == 1
        )
        assert same_inter or intra == best.intra_op_threads


@pytest.mark.parametrize("cpus", SIZES)
def test_trial_count_and_time_grow_slowly_with_a_big_budget(cpus: int) -> None:
    fake, clock, _ = run(cpus, 3600.0)
    count = len(fake.calls)
    assert count <= 6 * math.log2(cpus) + 12
    assert clock.monotonic() - 1000.0 <= 3600.0


def test_minimum_budget_fits_baseline_and_two_settings() -> None:
    settings = SearchSettings()
    budget = settings.min_budget_s(2)
    fake, _, _ = run(2, budget, quota=1.0, overhead_s=settings.overhead_guess_s)
    round0 = [s for s, _, _ in fake.calls if s.round == 0]
    assert len(round0) == 3


@pytest.mark.parametrize("seed", range(8))
def test_when_trials_overrun_the_baseline_keeps_its_place_in_the_round(seed: int) -> None:
    profile = node(8, quota=4.0)
    clock = FakeClock()
    # round 0 teaches the plan ~3 s of start-up; then the node gets busy and trials take 9 s more
    fake = FakeTrials(clock=clock, usable=4.0, affinity=8, overhead_by_round={1: 12.0})
    lines: list[str] = []
    successive_halving(
        candidate_configs(profile),
        "latency",
        fake,
        clock=clock,
        until=clock.monotonic() + 60.0,
        budget_s=60.0,
        settings=SearchSettings(seed=seed),
        progress=lines.append,
    )
    assert clock.monotonic() <= 1060.0
    assert any("skipped" in line for line in lines)  # the overrun really cut the round short
    rounds = {spec.round for spec, _, _ in fake.calls}
    for number in rounds:
        ran = [key(spec) for spec, _, _ in fake.calls if spec.round == number]
        assert (None, None) in ran, (number, ran)


def test_round_zero_takes_everything_that_fits_when_no_longer_round_could_follow() -> None:
    fake, clock, outcome = run(2, 24.0, quota=1.0, overhead_s=2.5)
    assert outcome.rounds == 1
    assert outcome.unmeasured == []
    assert len(fake.calls) == 1 + len(candidate_configs(node(2, quota=1.0)))
    assert clock.monotonic() <= 1024.0

"""Objectives: what wins, ties within noise go to fewer threads, SLOs, gain and spread."""

from __future__ import annotations

import pytest

from advisor.calibrate.objective import TIE_RELATIVE, aggregate, choose, rank
from advisor.models import TrialResult


def trial(
    intra: int | None,
    inter: int | None,
    p99: float,
    rps: float,
    *,
    round_: int = 1,
    status: str = "ok",
) -> TrialResult:
    return TrialResult.model_validate(
        {
            "intra_op_threads": intra,
            "inter_op_threads": inter,
            "round": round_,
            "status": status,
            "p50_ms": p99 / 2,
            "p99_ms": p99,
            "throughput_rps": rps,
        }
    )


def test_latency_picks_lowest_p99_and_reports_gain_over_baseline() -> None:
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(1, 1, 30.0, 60.0),
        trial(2, 1, 10.0, 70.0),
        trial(4, 2, 20.0, 90.0),
    ]
    choice = choose(aggregate(trials, "latency"), "latency")
    assert (choice.chosen.intra_op_threads, choice.chosen.inter_op_threads) == (2, 1)
    assert choice.gain == pytest.approx(4.0)
    assert choice.baseline.is_baseline


def test_throughput_picks_highest_rps() -> None:
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(2, 1, 10.0, 70.0),
        trial(4, 2, 20.0, 100.0),
    ]
    choice = choose(aggregate(trials, "throughput"), "throughput")
    assert (choice.chosen.intra_op_threads, choice.chosen.inter_op_threads) == (4, 2)
    assert choice.gain == pytest.approx(2.0)


def test_tie_within_noise_goes_to_fewer_threads() -> None:
    slightly_better = 10.0 * (1 - TIE_RELATIVE / 2)
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(8, 2, slightly_better, 70.0),
        trial(2, 1, 10.0, 70.0),
        trial(4, 1, 10.1, 70.0),
    ]
    choice = choose(aggregate(trials, "latency"), "latency")
    assert (choice.chosen.intra_op_threads, choice.chosen.inter_op_threads) == (2, 1)
    assert any("fewer threads" in note for note in choice.notes)


def test_a_real_difference_is_not_a_tie() -> None:
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(8, 2, 8.0, 70.0),
        trial(2, 1, 10.0, 70.0),
    ]
    choice = choose(aggregate(trials, "latency"), "latency")
    assert (choice.chosen.intra_op_threads, choice.chosen.inter_op_threads) == (8, 2)
    assert choice.notes == ()


def test_noisy_leader_widens_the_tie_band() -> None:
    # 8/2 moved ~10% between rounds, so 9% behind it is within its own noise.
    trials = [
        trial(None, None, 40.0, 50.0, round_=0),
        trial(None, None, 40.0, 50.0, round_=1),
        trial(8, 2, 10.0, 70.0, round_=0),
        trial(8, 2, 9.0, 70.0, round_=1),  # median of round 1 is 9.0, spread 1/9.5
        trial(2, 1, 10.0, 70.0, round_=0),
        trial(2, 1, 9.8, 70.0, round_=1),
    ]
    stats = aggregate(trials, "latency")
    by = {(s.intra_op_threads, s.inter_op_threads): s for s in stats}
    assert by[(8, 2)].spread == pytest.approx(1.0 / 9.5)
    assert by[(8, 2)].p99_ms == pytest.approx(9.0)  # judged by its latest round
    choice = choose(stats, "latency")
    assert (choice.chosen.intra_op_threads, choice.chosen.inter_op_threads) == (2, 1)
    assert choice.spread == pytest.approx(0.2 / 9.9)


def test_only_the_last_round_competes() -> None:
    trials = [
        trial(None, None, 40.0, 50.0, round_=0),
        trial(1, 1, 5.0, 70.0, round_=0),  # looked great in a short trial, dropped later
        trial(2, 1, 12.0, 70.0, round_=0),
        trial(None, None, 40.0, 50.0, round_=1),
        trial(2, 1, 11.0, 70.0, round_=1),
    ]
    choice = choose(aggregate(trials, "latency"), "latency")
    assert (choice.chosen.intra_op_threads, choice.chosen.inter_op_threads) == (2, 1)


def test_slo_takes_highest_throughput_that_meets_the_bound() -> None:
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(1, 1, 9.0, 60.0),
        trial(2, 2, 14.0, 80.0),
        trial(8, 2, 30.0, 120.0),  # fastest, but breaks the SLO
    ]
    choice = choose(aggregate(trials, "slo"), "slo", p99_slo_ms=15.0)
    assert (choice.chosen.intra_op_threads, choice.chosen.inter_op_threads) == (2, 2)
    assert choice.slo_met is True
    assert choice.gain == pytest.approx(80.0 / 50.0)


def test_slo_nobody_meets_says_so_and_takes_lowest_p99() -> None:
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(1, 1, 19.0, 60.0),
        trial(2, 2, 24.0, 80.0),
    ]
    choice = choose(aggregate(trials, "slo"), "slo", p99_slo_ms=5.0)
    assert (choice.chosen.intra_op_threads, choice.chosen.inter_op_threads) == (1, 1)
    assert choice.slo_met is False
    assert any("no setting met p99 <= 5 ms" in note for note in choice.notes)
    assert choice.gain == pytest.approx(40.0 / 19.0)


def test_baseline_better_than_every_setting_is_stated() -> None:
    trials = [trial(None, None, 5.0, 50.0), trial(1, 1, 9.0, 60.0)]
    choice = choose(aggregate(trials, "latency"), "latency")
    assert choice.default_best
    assert choice.gain is not None
    assert choice.gain < 1
    assert any("the TF default measured best" in note for note in choice.notes)


def test_baseline_within_noise_does_not_count_as_better() -> None:
    trials = [trial(None, None, 9.8, 50.0), trial(1, 1, 10.0, 60.0)]
    choice = choose(aggregate(trials, "latency"), "latency")
    assert not choice.default_best
    assert choice.notes == ()


def test_slo_baseline_is_better_only_on_the_same_side_of_the_bound() -> None:
    # the default is faster but breaks the SLO: the setting that meets it wins
    breaking = [trial(None, None, 30.0, 200.0), trial(1, 1, 9.0, 60.0)]
    assert not choose(aggregate(breaking, "slo"), "slo", p99_slo_ms=10.0).default_best
    # the default meets it and the setting does not: keep the default
    meeting = [trial(None, None, 9.0, 50.0), trial(1, 1, 30.0, 200.0)]
    assert choose(aggregate(meeting, "slo"), "slo", p99_slo_ms=10.0).default_best


def test_failed_trials_do_not_count() -> None:
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(1, 1, 1.0, 500.0, status="crashed"),
        trial(2, 1, 10.0, 70.0),
    ]
    stats = aggregate(trials, "latency")
    assert {(s.intra_op_threads, s.inter_op_threads) for s in stats} == {(None, None), (2, 1)}


def test_choose_without_baseline_or_candidates_is_refused() -> None:
    with pytest.raises(ValueError, match="baseline"):
        choose(aggregate([trial(1, 1, 9.0, 60.0)], "latency"), "latency")
    with pytest.raises(ValueError, match="baseline"):
        choose(aggregate([trial(None, None, 9.0, 60.0)], "latency"), "latency")


def test_rank_orders_by_objective() -> None:
    stats = aggregate(
        [trial(1, 1, 9.0, 60.0), trial(2, 1, 8.0, 50.0), trial(4, 1, 7.0, 70.0)], "latency"
    )
    assert [s.intra_op_threads for s in rank(stats, "latency")] == [4, 2, 1]
    assert [s.intra_op_threads for s in rank(stats, "throughput")] == [4, 1, 2]
    assert [s.intra_op_threads for s in rank(stats, "slo", 8.5)] == [4, 2, 1]

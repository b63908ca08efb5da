"""The statistics and the choice rule: medians over trusted windows, the noise band of two
medians, the cheapest setting within noise and within the trade-off of the best, SLOs, and a gain
over TF's default that claims no more than was measured."""

from __future__ import annotations

import math
import statistics

import pytest

from advisor.calibrate.choice import TRADE_OFF, Choice, choose
from advisor.calibrate.statistics import (
    MIN_BAND,
    ConfigStats,
    aggregate,
    coefficient_of_variation,
)
from advisor.models import ObjectiveName, ThreadSetting, TrialResult
from advisor.objectives import named
from advisor.render.words import note_text

#: what TF runs by itself on the node these trials pretend to come from (8 threads)
DEFAULT = ThreadSetting(4, 4)


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


def key(stats: ConfigStats) -> tuple[int | None, int | None]:
    return (stats.setting.intra, stats.setting.inter)


def pick(
    trials: list[TrialResult],
    objective: ObjectiveName = "latency",
    slo: float | None = None,
    *,
    rounds: int = 1,
) -> Choice:
    """The choice on ``trials``, replayed over ``rounds`` race rounds (``raced``) when more than
    one: a setting replaces TF's default only on the rounds that measured both."""
    measured = trials if rounds == 1 else raced(trials, rounds)
    return choose(aggregate(measured, DEFAULT), named(objective), slo)


#: race rounds that let a setting far ahead of TF's default replace it against three challengers
#: (8 won in a row; ``statistics.paired_test``)
ROUNDS = 8


def raced(trials: list[TrialResult], rounds: int = ROUNDS) -> list[TrialResult]:
    """Each setting's windows spread over ``rounds`` race rounds, one a round, its values taken
    in turn: the same medians and spread, measured in rounds as the race measures."""
    by_setting: dict[ThreadSetting, list[TrialResult]] = {}
    for t in trials:
        by_setting.setdefault(t.setting, []).append(t)
    return [
        windows[number % len(windows)].model_copy(update={"round": number + 1})
        for windows in by_setting.values()
        for number in range(rounds)
    ]


def test_latency_picks_lowest_p99_and_reports_gain_from_medians() -> None:
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(None, None, 44.0, 50.0),
        trial(None, None, 36.0, 50.0),
        trial(1, 1, 30.0, 60.0),
        trial(2, 1, 10.0, 70.0),
        trial(4, 2, 20.0, 90.0),
    ]
    choice = pick(trials, rounds=ROUNDS)
    assert key(choice.chosen) == (2, 1)
    assert choice.gain == pytest.approx(4.0)  # median 40 / 10
    assert not choice.gain_within_noise
    assert not choice.kept_default
    assert choice.baseline.is_baseline


def test_throughput_picks_highest_rps() -> None:
    trials = [trial(None, None, 40.0, 50.0), trial(2, 1, 10.0, 70.0), trial(4, 2, 20.0, 100.0)]
    choice = pick(trials, "throughput", rounds=ROUNDS)
    assert key(choice.chosen) == (4, 2)
    assert choice.gain == pytest.approx(2.0)


def test_the_cheapest_within_the_band_is_advised_and_the_range_holds_them_all() -> None:
    slightly_better = 10.0 * (1 - MIN_BAND / 2)
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(8, 2, slightly_better, 70.0),
        trial(2, 1, 10.0, 70.0),
        trial(4, 1, 10.1, 70.0),
        trial(1, 1, 11.0, 70.0),  # 13% behind: a real difference
    ]
    choice = pick(trials, rounds=ROUNDS)
    assert key(choice.chosen) == (2, 1)
    assert key(choice.leader) == (8, 2)
    assert [key(s) for s in choice.near_best] == [(8, 2), (2, 1), (4, 1)]  # best first
    assert choice.band == MIN_BAND
    assert any("fewer threads" in note_text(note) for note in choice.notes)


def test_a_real_difference_is_not_a_tie() -> None:
    trials = [trial(None, None, 40.0, 50.0), trial(8, 2, 8.0, 70.0), trial(2, 1, 10.0, 70.0)]
    choice = pick(trials, rounds=ROUNDS)
    assert key(choice.chosen) == (8, 2)
    assert [key(s) for s in choice.near_best] == [(8, 2)]
    assert choice.notes == ()


def median_error(values: list[float]) -> float:
    """The relative standard error of a median, written out: sqrt(pi/2) * stdev / mean / sqrt(n)."""
    mean = statistics.fmean(values)
    return math.sqrt(math.pi / 2) * statistics.stdev(values) / mean / math.sqrt(len(values))


def test_the_band_is_two_standard_errors_of_the_difference_between_the_medians() -> None:
    leader_p99s = [9.0, 11.0, 10.0, 9.5]
    baseline_p99s = [36.0, 44.0, 40.0]
    trials = [trial(None, None, p, 50.0) for p in baseline_p99s]
    trials += [trial(8, 2, p, 70.0) for p in leader_p99s]
    expected = 2 * math.hypot(median_error(leader_p99s), median_error(baseline_p99s))
    assert MIN_BAND < expected < 0.25  # the case tests the formula, not the floor
    assert pick(trials).band == pytest.approx(expected, rel=1e-3)


def test_more_windows_narrow_the_band_where_one_windows_spread_would_not() -> None:
    # the same spread of single windows (CV 14%), over 2 and over 8 windows
    def band(repeats: int) -> float:
        trials = [trial(None, None, p, 50.0) for p in [38.0, 42.0] * repeats]
        trials += [trial(8, 2, p, 70.0) for p in [9.0, 11.0] * repeats]
        return pick(trials).band

    # two windows each: the medians are barely known, and the band says so (no cap hides it)
    expected = 2 * math.hypot(median_error([38.0, 42.0]), median_error([9.0, 11.0]))
    assert band(1) == pytest.approx(expected, rel=1e-3)
    assert band(1) > 0.25
    assert band(4) < band(1) / 2
    assert band(4) > MIN_BAND


def test_single_windows_give_the_narrowest_band_and_a_wide_band_gives_away_no_more() -> None:
    single = [trial(None, None, 40.0, 50.0), trial(8, 2, 10.0, 70.0)]
    assert pick(single).band == MIN_BAND
    wild = [
        trial(None, None, 40.0, 50.0),
        trial(None, None, 40.0, 50.0),
        trial(8, 2, 2.0, 70.0),
        trial(8, 2, 20.0, 70.0),
        trial(1, 1, 30.0, 70.0),
    ]
    # 8/2's windows disagree by a CV of 115%: the band is as wide as that makes it, and the
    # advice still gives up at most TRADE_OFF for fewer threads (1/1 is far behind: not advised)
    choice = pick(wild, rounds=ROUNDS)
    assert choice.band > 0.5  # twice the cap the band once had
    assert key(choice.chosen) == (8, 2)


def test_within_noise_but_beyond_the_trade_off_is_named_not_advised() -> None:
    # noisy windows: 1/1, 12% behind the leader, cannot be told apart from it (band ~20%), so it
    # is in the range; but the advice gives up at most TRADE_OFF for fewer threads
    trials = [trial(None, None, p, 50.0) for p in [36.0, 44.0, 40.0]]
    trials += [trial(8, 2, p, 70.0) for p in [8.5, 11.5, 10.0]]
    trials += [trial(4, 1, p, 70.0) for p in [8.6, 11.6, 10.3]]  # 3% behind: affordable
    trials += [trial(1, 1, p, 70.0) for p in [9.7, 13.1, 11.2]]  # 12% behind
    choice = pick(trials, rounds=ROUNDS)
    assert TRADE_OFF < 0.12 < choice.band
    assert [key(s) for s in choice.near_best] == [(8, 2), (4, 1), (1, 1)]
    assert key(choice.chosen) == (4, 1)
    assert any("not advised despite fewer threads: 1/1" in note_text(note) for note in choice.notes)


def test_the_gain_is_judged_by_the_noise_of_the_chosen_setting_and_the_baseline() -> None:
    # the leader is noisy, the chosen 2/1 and the baseline are steady: 2/1 is 8% better than the
    # default, beyond their own band (5%) though within the leader-and-baseline band
    trials = [trial(None, None, p, 50.0) for p in [10.8, 10.8, 10.8, 10.8]]
    trials += [trial(8, 2, p, 70.0) for p in [7.0, 13.0, 9.7]]
    trials += [trial(2, 1, p, 70.0) for p in [10.0, 10.0, 10.0, 10.0]]
    choice = pick(trials, rounds=ROUNDS)
    assert key(choice.leader) == (8, 2)
    assert key(choice.chosen) == (2, 1)
    assert choice.band > 0.08
    assert not choice.gain_within_noise
    assert choice.gain == pytest.approx(1.08)


def test_race_windows_are_trusted_over_screen_windows() -> None:
    trials = [
        trial(None, None, 40.0, 50.0, round_=0),
        trial(1, 1, 5.0, 70.0, round_=0),  # looked great in a short window, raced worse
        trial(2, 1, 12.0, 70.0, round_=0),
        trial(None, None, 40.0, 50.0, round_=1),
        trial(1, 1, 14.0, 70.0, round_=1),
        trial(2, 1, 11.0, 70.0, round_=1),
        trial(2, 1, 11.0, 70.0, round_=2),
        trial(4, 1, 3.0, 70.0, round_=0),  # screened only: not comparable with raced medians
    ]
    stats = {key(s): s for s in aggregate(trials, DEFAULT)}
    assert stats[(1, 1)].p99_ms == 14.0
    assert (stats[(1, 1)].raced, stats[(1, 1)].windows, stats[(1, 1)].trials) == (True, 1, 2)
    assert (stats[(4, 1)].raced, stats[(4, 1)].windows) == (False, 1)
    assert stats[(None, None)].threads == 8  # costed at what TF runs
    choice = choose(list(stats.values()), named("latency"))
    assert key(choice.leader) == (2, 1)
    # one race round measured 2/1 beside TF's default: far too few to replace it on
    assert choice.kept_default
    assert choice.evidence is not None and choice.evidence.test is not None
    assert choice.evidence.test.rounds == 1 and not choice.evidence.passed


def test_slo_takes_highest_throughput_that_meets_the_bound() -> None:
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(1, 1, 9.0, 60.0),
        trial(2, 2, 14.0, 80.0),
        trial(8, 2, 30.0, 120.0),  # fastest, but breaks the SLO
    ]
    choice = pick(trials, "slo", 15.0, rounds=ROUNDS)
    assert key(choice.chosen) == (2, 2)
    assert choice.slo_met is True
    assert choice.gain == pytest.approx(80.0 / 50.0)


def test_slo_nobody_meets_says_so_and_takes_lowest_p99() -> None:
    trials = [trial(None, None, 40.0, 50.0), trial(1, 1, 19.0, 60.0), trial(2, 2, 24.0, 80.0)]
    choice = pick(trials, "slo", 5.0, rounds=ROUNDS)
    assert key(choice.chosen) == (1, 1)
    assert choice.slo_met is False
    assert any("no setting met p99 <= 5 ms" in note_text(note) for note in choice.notes)
    assert choice.gain == pytest.approx(40.0 / 19.0)


def test_baseline_best_is_kept_with_gain_exactly_one() -> None:
    trials = [trial(None, None, 5.0, 50.0), trial(1, 1, 9.0, 60.0)]
    choice = pick(trials)
    assert choice.kept_default
    assert choice.chosen is choice.baseline
    assert (choice.gain, choice.gain_within_noise) == (1.0, True)


def test_a_cheaper_setting_within_noise_of_the_default_does_not_replace_it() -> None:
    # the default leads by 2%: the cheaper 1/1 cannot be told from it, so nothing beat the
    # incumbent (TF's default, with no stored advice) beyond noise: it stands
    trials = [trial(None, None, 9.8, 50.0), trial(1, 1, 10.0, 60.0)]
    choice = pick(trials)
    assert choice.kept_default
    assert choice.kept
    assert (choice.gain, choice.gain_within_noise) == (1.0, True)
    assert {key(s) for s in choice.near_best} == {(None, None), (1, 1)}


def test_a_cheaper_setting_within_noise_of_a_stored_incumbent_does_not_replace_it() -> None:
    # the stored advice 2/1 and a cheaper 1/1 measure 2% apart: no evidence, 2/1 stands, and
    # the gain over the default is still judged (within noise here, so 1.0)
    trials = [trial(None, None, 10.1, 50.0), trial(2, 1, 10.0, 60.0), trial(1, 1, 9.8, 60.0)]
    choice = choose(
        aggregate(trials, ThreadSetting(2, 2)), named("latency"), incumbent=ThreadSetting(2, 1)
    )
    assert key(choice.chosen) == (2, 1)
    assert choice.kept
    assert key(choice.leader) == (1, 1)
    assert choice.incumbent_band is not None
    assert any(
        "1/1 measured 2% better than the advice in force (2/1)" in note_text(n)
        for n in choice.notes
    )
    assert (choice.gain, choice.gain_within_noise) == (1.0, True)


def test_the_default_is_kept_when_it_is_the_cheapest_within_noise() -> None:
    # on a one-CPU mask TF runs 1/1 (2 threads): cheaper than 2/1 within noise of it
    trials = [trial(None, None, 10.2, 50.0), trial(2, 1, 10.0, 60.0)]
    choice = choose(aggregate(trials, ThreadSetting(1, 1)), named("latency"))
    assert choice.kept_default
    assert choice.gain == 1.0


def test_slo_baseline_is_judged_on_its_side_of_the_bound() -> None:
    # the default is faster but breaks the SLO: the setting that meets it wins, with a real gain
    breaking = pick(
        [trial(None, None, 30.0, 200.0), trial(1, 1, 9.0, 60.0)], "slo", 10.0, rounds=ROUNDS
    )
    assert not breaking.kept_default
    assert not breaking.gain_within_noise
    # the default meets it and the setting does not: keep the default
    meeting = pick(
        [trial(None, None, 9.0, 50.0), trial(1, 1, 30.0, 200.0)], "slo", 10.0, rounds=ROUNDS
    )
    assert meeting.kept_default


def test_failed_trials_do_not_count() -> None:
    trials = [
        trial(None, None, 40.0, 50.0),
        trial(1, 1, 1.0, 500.0, status="crashed"),
        trial(2, 1, 10.0, 70.0),
    ]
    stats = aggregate(trials, DEFAULT)
    assert {key(s) for s in stats} == {(None, None), (2, 1)}


def test_choose_needs_a_baseline_and_its_cost() -> None:
    with pytest.raises(ValueError, match="baseline"):
        pick([trial(1, 1, 9.0, 60.0)])
    with pytest.raises(ValueError, match="what TF runs by itself"):
        choose(aggregate([trial(None, None, 9.0, 60.0), trial(1, 1, 9.0, 60.0)]), named("latency"))
    # the baseline alone (nothing else to try) is the advice
    alone = pick([trial(None, None, 9.0, 60.0)])
    assert alone.kept_default


def test_cv_is_stdev_over_mean() -> None:
    assert coefficient_of_variation([10.0]) is None
    assert coefficient_of_variation([10.0, 10.0]) == 0.0
    assert coefficient_of_variation([9.0, 11.0]) == pytest.approx(2**0.5 / 10)


def test_rank_orders_by_objective() -> None:
    stats = aggregate(
        [trial(1, 1, 9.0, 60.0), trial(2, 1, 8.0, 50.0), trial(4, 1, 7.0, 70.0)], DEFAULT
    )
    assert [s.setting.intra for s in named("latency").rank(stats)] == [4, 2, 1]
    assert [s.setting.intra for s in named("throughput").rank(stats)] == [4, 1, 2]
    assert [s.setting.intra for s in named("slo").rank(stats, 8.5)] == [4, 2, 1]

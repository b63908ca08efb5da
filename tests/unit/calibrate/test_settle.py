"""The stopping rule: the race ends as soon as more measurement cannot change the advice by more
than its tolerance, and not before; the budget ends it where the evidence never settles, and
``spend_budget`` spends it whole. Driven by the fake clock and the cost-model trial function, and
by hand-made windows where the rule's edges need exact numbers."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.calibrate.budget import Budget
from advisor.calibrate.candidates import candidate_configs, tf_picks, with_incumbent
from advisor.calibrate.choice import beats, choose
from advisor.calibrate.rounds import focus, round_members
from advisor.calibrate.search import BASELINE, SearchOutcome, SearchSettings, race
from advisor.calibrate.settle import _behind, settlement
from advisor.calibrate.spec import TrialSpec
from advisor.calibrate.state import SearchState
from advisor.calibrate.statistics import (
    ConfigStats,
    aggregate,
    holds_in_rounds,
    noise_band,
    paired_band,
)
from advisor.models import CalibrationOptions, ThreadSetting, TrialResult
from advisor.objectives import P99, THROUGHPUT, named
from advisor.pipeline.sweep import sweep
from tests.support.search_fakes import Bursts, FakeClock, FakeTrials, node

FORK_S = 0.3
SPEND = SearchSettings(spend_budget=True)
#: what TF runs by itself on the 2-CPU node of these searches
PICKS = ThreadSetting(2, 2)


def run(
    budget: float,
    quota: float | None = 1.0,
    *,
    settings: SearchSettings | None = None,
    incumbent: ThreadSetting = BASELINE,
    lines: list[str] | None = None,
    **fake: Any,
) -> tuple[FakeTrials, float, SearchOutcome]:
    """One search on 2 CPUs (what TF runs passed, so the rule may be asked): the trials, the
    fake seconds it took, and its outcome."""
    profile = node(2, quota=quota)
    clock = FakeClock()
    fake.setdefault("overhead_s", FORK_S)
    trials = FakeTrials(clock=clock, usable=profile.effective_cpus, affinity=2, **fake)
    start = clock.monotonic()
    outcome = race(
        with_incumbent(candidate_configs(profile), incumbent),
        named("latency"),
        trials,
        clock=clock,
        until=start + budget,
        budget_s=budget,
        settings=settings,
        progress=(lambda event: lines.append(event.line)) if lines is not None else None,
        picks=tf_picks(profile),
        incumbent=incumbent,
    )
    return trials, clock.monotonic() - start, outcome


def race_windows(fake: FakeTrials, setting: ThreadSetting) -> int:
    return sum(1 for spec, _, _ in fake.calls if spec.round > 0 and spec.setting == setting)


def window(setting: ThreadSetting, p99: float, round_: int) -> TrialResult:
    return TrialResult(
        intra_op_threads=setting.intra,
        inter_op_threads=setting.inter,
        round=round_,
        status="ok",
        p50_ms=p99 * 0.8,
        p99_ms=p99,
        throughput_rps=1000 / p99,
    )


def state_of(
    trials: list[TrialResult], incumbent: ThreadSetting = BASELINE, **settings: Any
) -> SearchState:
    """A search that measured ``trials`` (its budget is not asked)."""
    state = SearchState(
        budget=Budget(
            until=100.0, clock=FakeClock(), settings=SearchSettings(**settings), budget_s=100.0
        ),
        trial_fn=lambda spec, deadline: window(spec.setting, 1.0, spec.round),
        progress=None,
        objective=named("latency"),
        p99_slo_ms=None,
        picks=PICKS,
        incumbent=incumbent,
    )
    state.outcome.trials.extend(trials)
    return state


def rounds(table: dict[ThreadSetting, list[float]]) -> list[TrialResult]:
    """Race windows, round by round: each setting's i-th value in round i + 1."""
    return [
        window(setting, p99, number + 1)
        for setting, values in table.items()
        for number, p99 in enumerate(values)
    ]


# --------------------------------------------------------------------------------------------------
# it stops


def test_a_clear_winner_settles_the_race_in_a_fraction_of_the_budget() -> None:
    # under a 1-CPU quota 1/1 is far ahead of TF's default and of every other setting
    lines: list[str] = []
    fake, took, outcome = run(300.0, noise=0.02, lines=lines)
    assert outcome.stopped == "settled"
    assert took < 300.0 / 3
    assert outcome.open == ()
    settled_at = next(
        i
        for i, line in enumerate(lines)
        if line.endswith("more windows cannot change the advice by more than its tolerance")
    )
    # each round before it said what kept the race open, none after it
    opened = [i for i, line in enumerate(lines) if "race: open after round " in line]
    assert opened and max(opened) < settled_at
    # every setting still racing had the windows the rule needs
    for setting in [*outcome.contenders, BASELINE]:
        if setting not in outcome.dropped:
            assert race_windows(fake, setting) >= SearchSettings().settle_windows
    # and the advice is the one the whole budget gives
    _, _, full = run(300.0, noise=0.02, settings=SPEND)
    assert pick(outcome) == pick(full) == ThreadSetting(1, 1)


def pick(outcome: SearchOutcome, incumbent: ThreadSetting = BASELINE) -> ThreadSetting:
    stats = aggregate(outcome.trials, PICKS)
    return choose(
        stats,
        named("latency"),
        incumbent=incumbent,
        excluded=outcome.dropped,
        favourite=outcome.favourite,
    ).chosen.setting


def test_a_tie_inside_the_trade_off_band_settles_on_the_cheaper_setting() -> None:
    # 1/2 and 1/1 within 2% of each other: whichever more windows favour, the advice is 1/1
    table = {ThreadSetting(1, 2): 10.0, ThreadSetting(1, 1): 10.2, ThreadSetting(2, 1): 13.0}
    _, took, outcome = run(300.0, quota=1.5, noise=0.01, table=table, flat_p99=16.0)
    assert outcome.stopped == "settled"
    assert took < 100.0
    assert pick(outcome) == ThreadSetting(1, 1)


def test_the_race_settles_once_the_incumbent_question_is_answered() -> None:
    # the advice in force (1/2) is 2% behind the best: kept, and nothing more to ask
    table = {ThreadSetting(1, 1): 10.0, ThreadSetting(1, 2): 10.2, ThreadSetting(2, 1): 13.0}
    held = ThreadSetting(1, 2)
    _, took, kept = run(300.0, quota=1.5, noise=0.01, table=table, flat_p99=16.0, incumbent=held)
    assert kept.stopped == "settled" and took < 100.0
    assert pick(kept, held) == held
    # a stored 2/1 that 1/1 beats by far: replaced, and settled
    _, took, replaced = run(
        300.0, quota=1.5, noise=0.01, table=table, flat_p99=16.0, incumbent=ThreadSetting(2, 1)
    )
    assert replaced.stopped == "settled" and took < 100.0
    assert pick(replaced, ThreadSetting(2, 1)) == ThreadSetting(1, 1)


def test_an_incumbent_whose_race_trial_failed_twice_is_kept_and_ends_the_race() -> None:
    # the stored 2/1 measures in the screen, then its race trials fail: retried once, it fails
    # again; no round can measure it beside a challenger, so it stays the advice and the race
    # does not wait for race windows it will never get
    held = ThreadSetting(2, 1)
    profile = node(2, quota=1.0)
    clock = FakeClock()
    fake = FakeTrials(clock=clock, usable=1.0, affinity=2, overhead_s=FORK_S, noise=0.02)

    def trials(spec: TrialSpec, deadline_s: float) -> TrialResult:
        result = fake(spec, deadline_s)
        if spec.round > 0 and spec.setting == held:
            return result.model_copy(update={"status": "crashed", "reason": "fake crash"})
        return result

    outcome = race(
        with_incumbent(candidate_configs(profile), held),
        named("latency"),
        trials,
        clock=clock,
        until=clock.monotonic() + 300.0,
        budget_s=300.0,
        picks=tf_picks(profile),
        incumbent=held,
    )
    assert held not in outcome.dropped
    assert outcome.stopped == "settled"
    assert clock.monotonic() - 1000.0 < 300.0 / 3
    failed = [t for t in outcome.trials if t.setting == held and t.round > 0]
    assert [t.round for t in failed] == [1, 1]  # retried in its round, then the race ended
    stats = aggregate(outcome.trials, tf_picks(profile))
    assert choose(stats, named("latency"), incumbent=held).chosen.setting == held
    # and by hand: a dropped setting with too few race windows is not "windows"
    a = ThreadSetting(1, 1)
    table = {BASELINE: [20.0, 20.5, 19.8], a: [10.0, 10.1, 9.9], held: [16.0]}
    state = state_of(rounds(table), incumbent=a)
    assert settlement(state, [a, held]).open == ((held, "windows"),)
    state.outcome.dropped.append(held)
    assert settlement(state, [a]).settled


# --------------------------------------------------------------------------------------------------
# it does not stop


def test_never_while_a_contender_within_noise_of_the_pick_lacks_race_windows() -> None:
    a, b = ThreadSetting(1, 1), ThreadSetting(1, 2)
    three = {BASELINE: [20.0, 20.5, 19.8], a: [10.0, 10.1, 9.9]}
    # b: one race window, 8% behind 1/1 (the advice in force, so the question is b alone): within
    # noise, not within the trade-off band
    state = state_of([*rounds(three), window(b, 10.8, 1)], incumbent=a)
    assert settlement(state, [a, b]).open == ((b, "windows"),)
    assert not settlement(state, [a, b]).settled
    # with its windows, 8% behind at this spread is beyond noise: settled
    state.outcome.trials.extend([window(b, 10.9, 2), window(b, 10.8, 3)])
    assert settlement(state, [a, b]).settled


ONE, TWO = ThreadSetting(1, 1), ThreadSetting(1, 2)


def behind_one(values: list[float]) -> tuple[SearchState, dict[ThreadSetting, ConfigStats]]:
    """1/1 the advice in force over three rounds beside TF's default, 1/2 at ``values``: the
    search state and each setting's stats."""
    table = {BASELINE: [20.0, 20.5, 19.8], ONE: [10.0, 10.8, 9.4], TWO: values}
    state = state_of(rounds(table), incumbent=ONE)
    return state, {s.setting: s for s in aggregate(state.outcome.trials, PICKS)}


def test_never_while_a_setting_within_noise_and_beyond_the_trade_off_band_stays_there() -> None:
    a, b = ONE, TWO
    # b is 8% behind 1/1 in the median round, but the rounds disagree (20% and 8% behind, 4%
    # ahead: a band of the median ratio of 16%): within noise, and at the band's better edge b is
    # 9% ahead, more than the 5% the advice may give up: more rounds could make b the advice
    state, stats = behind_one([12.0, 10.37, 10.15])
    middle, band = paired_band(stats[b], stats[a], P99)
    assert middle * (1 - band) < 0.95
    assert settlement(state, [a, b]).open == ((b, "noise"),)


def test_a_setting_behind_the_pick_and_at_most_the_tolerance_better_at_its_band_edge_settles() -> (
    None
):
    a, b = ONE, TWO
    # b is 8% behind 1/1 in the median round (16%, 0%, 8% behind): a band of 11%, wider than its
    # gap, so it is neither beaten nor tied; but at the band's better edge b is 3% ahead, within
    # the 5% the advice may give up: no more rounds can cost the advice more than its tolerance
    state, stats = behind_one([11.6, 10.8, 10.15])
    middle, band = paired_band(stats[b], stats[a], P99)
    assert 1.05 < middle < 1 + band  # behind, within noise
    assert middle * (1 - band) >= 0.95
    assert not beats(stats[a], stats[b], named("latency"))
    assert settlement(state, [a, b]).settled
    # in requests per second (higher is better) the same windows read the same way
    assert _behind(stats[b], stats[a], THROUGHPUT) and not _behind(stats[a], stats[b], THROUGHPUT)


def test_never_while_the_stability_gate_holds_a_setting() -> None:
    a, b = ThreadSetting(1, 1), ThreadSetting(2, 1)
    # 1/1 is the best by far, but its windows disagree by more than STABLE_CV
    table = {BASELINE: [20.0, 20.2, 19.9], a: [8.0, 12.0, 9.0], b: [16.0, 16.1, 15.9]}
    state = state_of(rounds(table), incumbent=a)
    assert settlement(state, [a, b]).open == ((a, "unstable"),)
    # past unstable_windows the gate lets it through (and the result reports it unstable)
    more = {a: [8.0, 12.0, 9.0, 11.5, 8.5], BASELINE: [20.0] * 5, b: [16.0] * 5}
    assert settlement(state_of(rounds(more), incumbent=a), [a, b]).settled


def test_a_search_held_by_the_gate_measures_the_unstable_setting_first() -> None:
    fake, _, outcome = run(300.0, noise=0.01, noisy={ThreadSetting(1, 1): 0.4})
    if outcome.stopped == "settled":
        assert race_windows(fake, ThreadSetting(1, 1)) >= SearchSettings().unstable_windows


def test_spend_budget_spends_it() -> None:
    _, took, outcome = run(120.0, noise=0.02, settings=SPEND)
    assert outcome.stopped == "budget"
    assert took >= 0.9 * 120.0
    profile = node(2, quota=1.0)
    for spend in (False, True):
        clock = FakeClock()
        trials = FakeTrials(clock=clock, usable=1.0, affinity=2, overhead_s=FORK_S, noise=0.02)
        result = sweep(
            CalibrationOptions(budget_s=120.0, spend_budget=spend),
            profile,
            progress=lambda event: None,
            trial_fn=trials,
            clock=clock,
        )
        assert result.stopped == ("budget" if spend else "settled")
        assert (result.elapsed_s >= 0.9 * 120.0) == spend
        assert result.setting == ThreadSetting(1, 1)


def test_a_budget_that_ends_an_open_race_says_what_kept_it_open() -> None:
    # 1/2 and 1/1 8% apart under heavy noise: within noise, beyond the trade-off band
    table = {ThreadSetting(1, 2): 10.0, ThreadSetting(1, 1): 10.8, ThreadSetting(2, 1): 14.0}
    _, _, outcome = run(45.0, quota=1.5, noise=0.2, table=table, flat_p99=16.0)
    assert outcome.stopped == "budget"
    assert outcome.open
    assert {why for _, why in outcome.open} <= {"noise", "windows", "unstable", "incumbent"}


def test_a_replacement_waits_on_its_paired_test_and_the_focus_asks_it() -> None:
    # 1/1 is 6-22% faster than the stored 2/1 in every one of four rounds: not yet the rounds
    # its test needs against two challengers (7 in a row, or a lead this uneven for longer).
    # 2/1 stays the pick, the race stays open on 1/1 ("incumbent"), and the focus measures the two
    a, held = ThreadSetting(1, 1), ThreadSetting(2, 1)
    base, fast, slow = [20.0, 20.5, 19.8, 20.1], [10.0, 10.85, 9.0, 10.6], [11.2, 11.5, 11.0, 11.3]
    state = state_of(rounds({BASELINE: base, a: fast, held: slow}), incumbent=held)
    choice = state.choose(list(state.stats().values()))
    assert choice.kept and choice.chosen.setting == held
    assert choice.evidence is not None and choice.evidence.test is not None
    assert (choice.evidence.test.rounds, choice.evidence.test.wins) == (4, 4)
    assert not choice.evidence.passed
    assert settlement(state, [a, held]).open == ((a, "incumbent"),)
    assert focus(state, [a, held], 1)[0] == [a, held]
    # the same lead in eight rounds: replaced, and nothing more is asked of it
    again = state_of(rounds({BASELINE: base * 2, a: fast * 2, held: slow * 2}), incumbent=held)
    replaced = again.choose(list(again.stats().values()))
    assert not replaced.kept and replaced.chosen.setting == a
    assert replaced.evidence is not None and replaced.evidence.passed
    assert settlement(again, [a, held]).settled


def test_a_focused_round_measures_what_the_stopping_rule_waits_on() -> None:
    # the question is 1/1 against 1/2; a setting the rule still waits on (here TF's default, in a
    # round that would skip it) is measured too, or the race could only end with the budget
    a, b = ThreadSetting(1, 1), ThreadSetting(1, 2)
    table = {
        BASELINE: [20.0, 20.5, 19.8, 20.1],
        a: [10.0, 10.5, 9.6, 10.2],
        b: [10.3, 10.8, 9.9, 10.6],
    }
    state = state_of(rounds(table), incumbent=a)
    pair, members = focus(state, [a, b], 1)
    assert pair == [a, b] and BASELINE not in members
    _, members = focus(state, [a, b], 1, [BASELINE])
    assert members == [a, b, BASELINE]


# --------------------------------------------------------------------------------------------------
# a change must hold


def test_a_pooled_win_the_rounds_do_not_reproduce_is_no_win() -> None:
    # beside a noisy neighbour: bursts hit TF's default in four of seven rounds, 1/3 in one. The
    # medians say 1/3 is far better; round by round it won three of seven.
    held, challenger = BASELINE, ThreadSetting(1, 3)
    table = {
        held: [10.0, 16.0, 10.1, 16.5, 17.0, 9.9, 16.2],
        challenger: [10.3, 10.2, 16.4, 10.4, 10.1, 10.2, 10.5],
    }
    stats = {s.setting: s for s in aggregate(rounds(table), PICKS)}
    assert stats[challenger].p99_ms < stats[held].p99_ms * (
        1 - noise_band(stats[challenger], stats[held], P99)
    )
    assert not holds_in_rounds(stats[challenger], stats[held], P99)
    assert not beats(stats[challenger], stats[held], named("latency"))
    # a challenger as far ahead in every round: a win
    steady = {
        held: [16.0, 16.0, 16.1, 16.5, 17.0, 16.2, 16.2],
        challenger: [10.3, 10.2, 10.4, 10.4, 10.1, 10.2, 10.5],
    }
    again = {s.setting: s for s in aggregate(rounds(steady), PICKS)}
    assert holds_in_rounds(again[challenger], again[held], P99)


#: the advice in force 6% behind the best (within noise at this spread, or just beyond), and TF's
#: default 4% behind it: a change either way is within the margin
WITHIN_MARGIN = (
    ({(1, 1): 10.0, (1, 2): 10.6, (2, 1): 14.0}, ThreadSetting(1, 2)),
    ({(1, 1): 10.0, (1, 2): 10.9, (2, 1): 14.0, (None, None): 10.4}, BASELINE),
)


def test_an_early_stop_rarely_replaces_an_incumbent_the_whole_budget_keeps() -> None:
    """The same trials up to the stop (same seeds): the whole budget only adds windows. A
    sequential test at a level can pass on a lucky start that more rounds undo, so "never" is
    not its property; the level bounds how often (2.5% for the screen's best: under one case in
    the 24 here). Seen: seed 2 of TF's default, where 1/1 led by 8-14% in each of its first 5
    rounds (the t test passed, e-value 44.5 against 40) and 17 more brought the lead back near
    4%."""
    discordant = []
    for table, held in WITHIN_MARGIN:
        for seed in range(12):
            common: dict[str, Any] = {"quota": 1.5, "noise": 0.12, "seed": seed, "table": table}
            _, _, early = run(
                120.0, flat_p99=16.0, incumbent=held, settings=SearchSettings(seed=seed), **common
            )
            _, _, full = run(
                120.0,
                flat_p99=16.0,
                incumbent=held,
                settings=SearchSettings(seed=seed, spend_budget=True),
                **common,
            )
            replaced = early.stopped == "settled" and pick(early, held) != held
            if replaced and pick(full, held) == held:
                discordant.append((held, seed))
    assert len(discordant) <= 1, discordant


@pytest.mark.parametrize("seed", range(12))
def test_an_early_replacement_is_by_the_setting_that_is_better(seed: int) -> None:
    # the advice in force 12% behind 1/1: the whole budget's verdict wavers with the noise at
    # this spread; an early stop replaces it by 1/1 or not at all
    table = {(1, 1): 10.0, (1, 2): 11.2, (2, 1): 14.0}
    held = ThreadSetting(1, 2)
    _, _, early = run(
        120.0,
        quota=1.5,
        noise=0.12,
        seed=seed,
        table=table,
        flat_p99=16.0,
        incumbent=held,
        settings=SearchSettings(seed=seed),
    )
    if early.stopped == "settled":
        assert pick(early, held) in (held, ThreadSetting(1, 1))


@pytest.mark.parametrize("spend", [False, True])
def test_beside_a_noisy_neighbour_a_gain_the_rounds_do_not_show_changes_nothing(
    spend: bool,
) -> None:
    """The issue's platform-team case: a process burning CPU in bursts beside the runs, and a
    setting (1/3) 3% better than TF's default. Judged by the pooled medians alone, 3 of these 10
    runs replaced TF's default, spending the budget (seeds 14, 15, 18) or not (11, 12, 15);
    judged in the rounds too, none does. The evidence never settles there: a run that may stop
    early ends with the budget and says what kept it open, or settles on TF's default."""
    table = {(1, 1): 10.0, (1, 2): 10.3, (1, 3): 9.7, (2, 1): 14.0, (None, None): 10.0}
    for seed in range(10, 20):
        clock = FakeClock()
        fake = FakeTrials(
            clock=clock,
            usable=1.5,
            affinity=2,
            overhead_s=FORK_S,
            noise=0.04,
            seed=seed,
            table=table,
        )
        result = sweep(
            CalibrationOptions(budget_s=300.0, spend_budget=spend),
            node(2, quota=1.5),
            progress=lambda event: None,
            trial_fn=Bursts(fake, clock, seed=seed),
            clock=clock,
        )
        assert result.kept_default, (seed, result.setting)
        assert result.stopped == "settled" or result.unsettled or spend


def test_a_round_short_of_budget_measures_the_best_beside_the_incumbent_first() -> None:
    # two race rounds in, 1/1 leads TF's default (the incumbent) by 40%, 1/2 and 2/1 are unstable;
    # the budget has room for hardly a trial more (this state's clock is past it): the round
    # is TF's default and 1/1, whose paired test counts only rounds that measured both, and
    # one unstable setting, not the two unstable ones
    a, b, c = ThreadSetting(1, 1), ThreadSetting(1, 2), ThreadSetting(2, 1)
    table = {BASELINE: [10.0, 10.2], a: [6.0, 6.1], b: [9.0, 13.0], c: [8.0, 12.5]}
    state = state_of(rounds(table))
    members = round_members(state, [a, b, c])
    assert members[:2] == [BASELINE, a]
    assert len(members) == 3 and members[2] in {b, c}

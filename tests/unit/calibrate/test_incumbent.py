"""Change only on evidence: the advice in force (the stored advice, else TF's default) stands
until a setting beats it beyond the noise band of the two, and the log, the result and the
report tell one story about it.

The rule is checked on hand-made medians (``choose``) and end to end through ``sweep`` with
the fake trials and clock of ``search_fakes``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from advisor.calibrate.candidates import candidate_configs
from advisor.calibrate.choice import choose
from advisor.calibrate.spec import TrialSpec
from advisor.calibrate.statistics import MIN_PAIRED_ROUNDS, aggregate
from advisor.models import (
    CalibrationOptions,
    CalibrationResult,
    Incumbent,
    IncumbentOutcome,
    Measurement,
    ObjectiveName,
    ThreadSetting,
    TrialResult,
)
from advisor.objectives import named
from advisor.pipeline.sweep import sweep
from advisor.recommend import build_recommendation, render_configmap
from advisor.render.table import text_summary
from advisor.render.words import incumbent_reason, note_text, summary_lines
from tests.support.search_fakes import FakeClock, FakeTrials, node
from tests.unit.calibrate.test_choice import key, raced, trial

DEFAULT = ThreadSetting(4, 4)

#: a budget whose race holds the rounds a replacement needs on the fakes' 2-CPU node under a 1-CPU
#: quota: its 3 s race windows fit 3 rounds in 45 s; the 7 a replacement needs took 84 s (TF's
#: default the incumbent) and 112 s (a stored 4/2)
REPLACING = 200.0


# --------------------------------------------------------------------------------------------------
# the rule, on medians


def test_a_stored_incumbent_beaten_beyond_noise_is_replaced_with_the_margin() -> None:
    trials = [trial(None, None, 30.0, 30.0), trial(4, 2, 20.0, 50.0), trial(1, 1, 10.0, 90.0)]
    choice = choose(
        aggregate(raced(trials), DEFAULT), named("latency"), incumbent=ThreadSetting(4, 2)
    )
    assert key(choice.chosen) == (1, 1)
    assert not choice.kept
    assert choice.incumbent is not None and key(choice.incumbent) == (4, 2)
    assert choice.versus_incumbent == pytest.approx(2.0)
    assert choice.incumbent_band is not None


def test_settings_that_beat_the_incumbent_give_the_cheapest_within_the_trade_off() -> None:
    trials = [
        trial(None, None, 30.0, 30.0),
        trial(4, 4, 20.0, 50.0),
        trial(2, 1, 10.0, 90.0),
        trial(1, 1, 10.3, 88.0),
    ]
    choice = choose(
        aggregate(raced(trials), DEFAULT), named("latency"), incumbent=ThreadSetting(4, 4)
    )
    assert key(choice.chosen) == (1, 1)  # 3% behind 2/1, and both beat 4/4 by far


def test_the_trade_off_never_goes_below_the_incumbent() -> None:
    # 4/1 beats the incumbent by 9%; 1/1 is within 5% of 4/1 but under 5% ahead of the
    # incumbent, short of the margin: the advice may not trade down to a setting with no evidence
    trials = [
        trial(None, None, 30.0, 30.0),
        trial(2, 2, 11.0, 50.0),
        trial(4, 1, 10.0, 90.0),
        trial(1, 1, 10.48, 88.0),
    ]
    choice = choose(
        aggregate(raced(trials), DEFAULT), named("latency"), incumbent=ThreadSetting(2, 2)
    )
    assert key(choice.chosen) == (4, 1)
    assert not choice.kept


@pytest.mark.parametrize(("best", "replaced"), [(9.7, False), (8.0, True)])
def test_tf_default_is_the_incumbent_when_nothing_is_stored(best: float, replaced: bool) -> None:
    trials = [trial(None, None, 10.0, 50.0), trial(1, 1, best, 60.0)]
    choice = choose(aggregate(raced(trials), DEFAULT), named("latency"))
    assert choice.kept is not replaced
    assert choice.kept_default is not replaced
    assert key(choice.chosen) == ((1, 1) if replaced else (None, None))


def test_an_incumbent_that_was_not_measured_cannot_stand() -> None:
    trials = [trial(None, None, 10.0, 50.0), trial(1, 1, 9.9, 60.0)]
    choice = choose(aggregate(trials, DEFAULT), named("latency"), incumbent=ThreadSetting(3, 3))
    assert choice.incumbent is None
    assert not choice.kept
    assert any("could not be measured" in note_text(note) for note in choice.notes)


def test_a_dropped_setting_is_never_advised() -> None:
    trials = [trial(None, None, 30.0, 50.0), trial(1, 1, 9.0, 60.0), trial(2, 1, 10.0, 60.0)]
    choice = choose(
        aggregate(raced(trials), DEFAULT), named("latency"), excluded=[ThreadSetting(1, 1)]
    )
    assert key(choice.chosen) == (2, 1)
    assert all(key(s) != (1, 1) for s in choice.near_best)


def test_throughput_within_noise_keeps_the_incumbent() -> None:
    trials = [trial(None, None, 10.0, 200.0), trial(2, 1, 10.0, 240.0), trial(1, 2, 10.0, 246.0)]
    choice = choose(
        aggregate(raced(trials), DEFAULT), named("throughput"), incumbent=ThreadSetting(2, 1)
    )
    assert key(choice.chosen) == (2, 1)
    assert choice.kept


def test_under_an_slo_meeting_it_beats_an_incumbent_that_misses() -> None:
    trials = [
        trial(None, None, 30.0, 100.0),
        trial(2, 1, 12.0, 300.0),  # misses 10 ms
        trial(1, 1, 9.0, 250.0),  # meets it, less throughput
    ]
    choice = choose(
        aggregate(raced(trials), DEFAULT), named("slo"), 10.0, incumbent=ThreadSetting(2, 1)
    )
    assert key(choice.chosen) == (1, 1)
    assert not choice.kept
    assert choice.evidence is not None and choice.evidence.by_bound


@pytest.mark.parametrize(
    ("mine", "held", "replaced"),
    [
        (9.0, 12.0, True),  # surely meets 10 ms (upper bound 9.45), the incumbent surely misses
        (9.8, 10.3, False),  # either side within the margin of it: the rounds decide, 4.9% < 5%
        (9.0, 10.3, True),  # the incumbent near the bound: the rounds decide, 12.6% better
        (10.6, 9.0, False),  # missing it where the incumbent meets it is never a win
    ],
)
def test_slo_membership_has_a_noise_margin(mine: float, held: float, replaced: bool) -> None:
    trials = [trial(None, None, 30.0, 100.0), trial(2, 1, held, 300.0), trial(1, 1, mine, 250.0)]
    choice = choose(
        aggregate(raced(trials), DEFAULT), named("slo"), 10.0, incumbent=ThreadSetting(2, 1)
    )
    assert choice.kept is not replaced
    if replaced:
        assert choice.evidence is not None
        assert choice.evidence.by_bound is (held > 10.0 * 1.05)


# --------------------------------------------------------------------------------------------------
# end to end through the sweep, fake trials


def simulated(
    cpus: int,
    quota: float | None,
    incumbent: tuple[int, int] | None,
    *,
    objective: ObjectiveName = "latency",
    budget: float = 45.0,
    spend: bool = False,
    **fake: Any,
) -> tuple[CalibrationResult, FakeTrials, list[str]]:
    profile = node(cpus, quota=quota)
    clock = FakeClock()
    fake.setdefault("overhead_s", 0.3)
    trials = FakeTrials(clock=clock, usable=profile.effective_cpus, affinity=cpus, **fake)
    held = (
        None
        if incumbent is None
        else Incumbent(
            intra_op_threads=incumbent[0], inter_op_threads=incumbent[1], source="the test's store"
        )
    )
    lines: list[str] = []
    result = sweep(
        CalibrationOptions(objective=objective, budget_s=budget, spend_budget=spend),
        profile,
        progress=lambda event: lines.append(event.line),
        trial_fn=trials,
        clock=clock,
        incumbent=held,
    )
    return result, trials, lines


def settings_run(fake: FakeTrials) -> list[tuple[int | None, int | None, int]]:
    return [(s.setting.intra, s.setting.inter, s.round) for s, _, _ in fake.calls]


def test_a_stored_4_2_under_a_1_cpu_quota_is_measured_raced_and_replaced() -> None:
    # 4/2 is not even on this node's list (intra is capped at twice the usable CPUs): it is
    # still the reference, screened right after the baseline and raced in every round
    assert ThreadSetting(4, 2) not in candidate_configs(node(2, quota=1.0))
    result, fake, lines = simulated(2, 1.0, (4, 2), budget=REPLACING)
    calls = settings_run(fake)
    assert calls[0][:2] == (None, None)
    assert calls[1][:2] == (4, 2)
    races = {r for *_, r in calls if r > 0}
    assert races
    for round_ in races:
        assert (4, 2, round_) in calls, f"the incumbent skipped race round {round_}"
    assert result.counts != (4, 2)
    held = result.incumbent
    assert held is not None and not held.kept and not held.setting.is_default
    assert held.counts == (4, 2)
    assert held.versus is not None and held.versus > 1.1
    assert held.reason.startswith(f"replaced by {result.setting.intra}/")
    assert "for 4/2 (" in held.reason and "% lower, noise \u00b1" in held.reason
    assert "in force before: replaced by" in lines[-1]
    assert not any("4/2 dropped" in line for line in lines)


def test_tf_default_replaced_is_compared_with_the_advice_once_in_the_last_line() -> None:
    result, _, lines = simulated(2, 1.0, None, budget=REPLACING)
    held = result.incumbent
    assert held is not None and held.setting.is_default and held.verdict == "replaced"
    assert lines[-1].startswith(
        f"advice: intra={result.setting.intra} inter={result.setting.inter} "
        f"(in force before: TF's default, replaced by {result.setting.label}; p99 "
    )
    assert lines[-1].count("for TF's default (") == 1


@pytest.mark.parametrize(
    ("cpus", "quota", "incumbent", "fake"),
    [
        (2, 1.0, None, {}),
        (2, 1.0, (4, 2), {}),
        (2, 1.5, (1, 1), {"table": {(1, 2): 10.0, (1, 1): 10.3, (None, None): 14.0}}),
        (8, 4.0, None, {"flat_p99": 10.0, "noise": 0.0}),
        (2, 1.5, (1, 1), {"table": {(1, 2): 10.0, (1, 1): 10.3}, "noise": 0.08, "flat_p99": 16.0}),
    ],
)
def test_the_stored_verdict_is_the_one_its_reason_words(
    cpus: int, quota: float, incumbent: tuple[int, int] | None, fake: dict[str, Any]
) -> None:
    result, _, _ = simulated(cpus, quota, incumbent, **fake)
    held = result.incumbent
    assert held is not None
    rival, versus, unproven = _rival_and_versus(held.reason)
    assert held.reason == incumbent_reason(held.verdict, rival, versus, unproven=unproven)


def _rival_and_versus(reason: str) -> tuple[str, str, bool]:
    """(the rival, how it compared, whether it was kept for want of the paired test's rounds)."""
    unproven = re.fullmatch(
        r"kept: the best, ([^,]+), measured beyond noise but has not won the paired test "
        r"against it \((.*)\)",
        reason,
    )
    if unproven:
        return unproven.group(1), unproven.group(2), True
    kept = re.fullmatch(r"kept: nothing beat it beyond noise \(the best, ([^:]+): (.*)\)", reason)
    replaced = re.fullmatch(r"replaced by ([^:]+): (.*)", reason)
    found = kept or replaced
    return (found.group(1), found.group(2), False) if found else ("", "", False)


@pytest.mark.parametrize(
    ("measured", "kept", "band", "verdict"),
    [
        (None, False, None, "unmeasured"),
        (Measurement(p99_ms=9.0), True, None, "best"),
        (Measurement(p99_ms=9.0), True, 0.08, "kept"),
        (Measurement(p99_ms=9.0), False, 0.08, "replaced"),
    ],
)
def test_the_incumbents_verdict_is_read_from_what_is_stored(
    measured: Measurement | None, kept: bool, band: float | None, verdict: str
) -> None:
    held = IncumbentOutcome(
        intra=2,
        inter=1,
        default=False,
        source="the test's store",
        kept=kept,
        measured=measured,
        band=band,
        reason="as stored",
    )
    assert held.verdict == verdict


def test_a_stored_incumbent_in_a_near_tie_is_kept_and_the_focus_asks_about_it() -> None:
    # 2 CPUs under 1.5: 1/2 and 1/1 within 3% of each other; the store holds 1/1. Spending the
    # budget: a tie inside the trade-off band would settle the race before any focus
    table = {(1, 2): 10.0, (1, 1): 10.3, (None, None): 14.0}
    result, _, lines = simulated(2, 1.5, (1, 1), table=table, noise=0.08, flat_p99=16.0, spend=True)
    assert result.counts == (1, 1)
    assert result.incumbent is not None and result.incumbent.kept
    assert any(re.search(r"focus on (1/2 against 1/1|1/1 against 1/2)", line) for line in lines)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(("cpus", "quota"), [(2, None), (2, 1.5), (8, 4.0)])
def test_one_story_nothing_dropped_is_advised_and_nothing_is_said_after_the_last_trial(
    seed: int, cpus: int, quota: float | None
) -> None:
    result, _, lines = simulated(cpus, quota, None, budget=30.0, noise=0.15, seed=seed)
    advised = f"{result.setting.intra}/{result.setting.inter}"
    assert not any(
        line.endswith(f"race: {advised} dropped (clearly worse than the best)") for line in lines
    )
    assert_nothing_said_after_the_last_trial(lines)


def assert_nothing_said_after_the_last_trial(lines: list[str]) -> None:
    """After the last trial's result only what happened to it may be said: a drop, the advice."""
    last = max(i for i, line in enumerate(lines) if " -> " in line)
    for line in lines[last + 1 :]:
        assert re.search(r"dropped \(|^advice: |screen pass \d: stopped|race: settled", line), line


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("budget", range(45, 56))
def test_a_focus_whose_round_never_runs_is_never_logged(seed: int, budget: int) -> None:
    """Three settings in a near tie under heavy noise: the question the advice turns on changes
    often, sometimes right when no trial fits any more (with the focus line said when asked,
    18 of these 66 sweeps logged a focus after their last trial)."""
    table = {(1, 2): 10.0, (1, 1): 10.3, (2, 1): 10.5, (None, None): 14.0}
    for spend in (False, True):
        _, _, lines = simulated(
            2,
            1.5,
            None,
            budget=budget,
            noise=0.2,
            seed=seed,
            table=table,
            flat_p99=16.0,
            spend=spend,
        )
        assert_nothing_said_after_the_last_trial(lines)


def test_kept_advice_renders_the_same_data_as_the_stored_one() -> None:
    # a first sweep writes its advice; a second with it as the incumbent on a flat node (nothing
    # can beat it) renders byte-identical data and content hash
    first, _, _ = simulated(8, 4.0, None, flat_p99=10.0, baseline_factor=3.0, seed=1)
    stored = render_configmap(build_recommendation(first, advisor_version="t"), "advice")
    second, _, _ = simulated(
        8,
        4.0,
        first.counts,
        flat_p99=10.0,
        noise=0.04,
        baseline_factor=3.0,
        seed=2,
    )
    assert second.incumbent is not None and second.incumbent.kept
    again = render_configmap(build_recommendation(second, advisor_version="t"), "advice")
    assert again["data"] == stored["data"]
    hash_key = "tf-thread-advisor.io/content-hash"
    assert again["metadata"]["annotations"][hash_key] == stored["metadata"]["annotations"][hash_key]


def test_the_summary_tells_the_incumbent_the_range_and_the_gain_in_the_objectives_terms() -> None:
    result, _, _ = simulated(2, 1.0, (4, 2), budget=REPLACING)
    lines = summary_lines(result)
    assert lines[0].startswith("advice: TF_NUM_INTRAOP_THREADS=")
    assert lines[1].startswith("in force before: 4/2 (the test's store): replaced by")
    # the range: the settings within noise of the best, or that none but the best is
    near = "within noise" if len(result.near_best) > 1 else "no other setting within noise"
    assert any(line.startswith(near) for line in lines)
    against = lines[-1]
    assert against.startswith("against TF's default: p99 ")
    assert "% lower, noise \u00b1" in against
    assert "fewer threads than TF's default (2 against 4, intra + inter)" in against or (
        "threads than TF's default" in against
    )
    assert "x the TF default" not in text_summary(result)


def test_fewer_threads_is_said_only_of_fewer_threads() -> None:
    # 1/3 has as many threads as TF's default 2/2 on two CPUs: it is not "fewer"
    table = {(1, 3): 5.0, (None, None): 10.0}
    result, _, _ = simulated(2, None, None, flat_p99=10.0, table=table, budget=REPLACING)
    assert result.counts == (1, 3)
    against = summary_lines(result)[-1]
    assert "as many threads as TF's default (4 against 4, intra + inter)" in against
    assert "fewer" not in against


@dataclass
class FailsOnce:
    """The fake trials, but the incumbent's trial of one race round fails (a budget-cut trial, a
    child that died): the trial after it succeeds again."""

    trials: FakeTrials
    setting: ThreadSetting
    round: int
    failed: list[int] = field(default_factory=list)

    def __call__(self, spec: TrialSpec, deadline_s: float) -> TrialResult:
        result = self.trials(spec, deadline_s)
        if spec.setting == self.setting and spec.round == self.round and not self.failed:
            self.failed.append(spec.round)
            return result.model_copy(
                update={"status": "timeout", "reason": "fake", "p50_ms": None, "p99_ms": None}
            )
        return result


def test_a_failed_incumbent_trial_is_retried_and_the_incumbent_kept() -> None:
    # a near tie the incumbent holds (1/2 3% ahead of it); one of its race trials fails. It is
    # measured again in that round, stays in the race, and the leader does not replace it
    # without winning the rounds against it
    profile = node(2, quota=1.5)
    clock = FakeClock()
    table = {(1, 2): 10.0, (1, 1): 10.3, (None, None): 14.0}
    fake = FakeTrials(clock=clock, usable=1.5, affinity=2, overhead_s=0.3, table=table)
    held = ThreadSetting(1, 1)
    failing = FailsOnce(fake, held, round=1)
    result = sweep(
        CalibrationOptions(budget_s=45.0),
        profile,
        progress=lambda _event: None,
        trial_fn=failing,
        clock=clock,
        incumbent=Incumbent(intra_op_threads=1, inter_op_threads=1, source="the test's store"),
    )
    assert failing.failed == [1]  # the fault happened
    runs = [(s.setting, s.round) for s, _, _ in fake.calls]
    assert runs.count((held, 1)) == 2  # retried in its round
    assert result.counts == (1, 1)
    assert result.incumbent is not None and result.incumbent.kept


def test_45_s_holds_too_few_rounds_to_replace_and_says_what_the_leader_showed() -> None:
    # under a 1-CPU quota 1/1 is far ahead of TF's default, but 45 s hold 3 race rounds of the
    # fakes' 3 s windows: short of what its test needs (half the alpha, as the screen's best of
    # three challengers: 7 won in a row for the sign test, 4 this clear for the t test). TF's
    # default stays; the race ended on the budget, the leader kept open as ahead of the advice
    # in force
    result, _, _ = simulated(2, 1.0, None)
    assert result.kept_default and result.stopped == "budget"
    assert result.unsettled
    held = result.incumbent
    assert held is not None and held.kept and held.evidence is None
    longer, _, _ = simulated(2, 1.0, None, budget=REPLACING)
    assert not longer.kept_default
    assert longer.incumbent is not None and longer.incumbent.evidence is not None
    # fewer rounds than the sign test alone could pass on (2^n >= 40): the t test carried it
    assert MIN_PAIRED_ROUNDS <= longer.incumbent.evidence.rounds < 7


def test_a_budget_that_ends_before_the_test_decides_says_what_budget_would_let_it() -> None:
    # the 45 s case above: the note projects the rounds the leader still needs at this run's
    # race pace, and a calibration given that budget does decide (the same fake node)
    result, _, _ = simulated(2, 1.0, None)
    # the kept note and the incumbent's line say why: beyond the pooled band, but the paired
    # test has not passed (not "nothing beat it beyond noise")
    assert any("beyond the" in n and "has not won the paired test" in n for n in result.notes)
    assert result.incumbent is not None
    assert result.incumbent.reason.startswith(
        "kept: the best, 1/1, measured beyond noise but has not won the paired test against it"
    )
    (said,) = [n for n in result.notes if "before the paired test could decide" in n]
    assert said.startswith("the budget ended before the paired test could decide on 1/1")
    found = re.search(r"--budget of about (\d+) s", said)
    assert found is not None
    wanted = float(found.group(1))
    assert 45.0 < wanted <= REPLACING
    decided, _, _ = simulated(2, 1.0, None, budget=wanted)
    assert not decided.kept_default and decided.setting == ThreadSetting(1, 1)
    assert not any("before the paired test could decide" in n for n in decided.notes)


@pytest.mark.parametrize("seed", range(12))
def test_no_budget_is_suggested_on_a_flat_node_whatever_its_luckiest_median(seed: int) -> None:
    # windows within ±10%, every setting alike: the budget ends the race (the bands stay wide),
    # and a leader a few percent ahead by luck is not clearly ahead, so no budget is promised
    flat, _, _ = simulated(2, None, None, flat_p99=10.0, noise=0.10, seed=seed)
    assert flat.kept_default and flat.stopped == "budget"
    assert not any("before the paired test could decide" in n for n in flat.notes)
    assert flat.incumbent is not None
    assert flat.incumbent.reason.startswith(("kept: nothing beat it beyond noise", "measured best"))

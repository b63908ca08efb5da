"""--sweep-onednn: TF_ENABLE_ONEDNN_OPTS=0 against =1 in interleaved pairs, and the advice
carries the variable only when one value wins beyond noise (fake clock, fake trials)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from advisor.calibrate import onednn
from advisor.calibrate.budget import Budget
from advisor.calibrate.search import SearchSettings
from advisor.calibrate.spec import TrialSpec
from advisor.errors import InvalidAdviceError
from advisor.models import (
    DEFAULT_BUDGET_S,
    ONEDNN,
    ONEDNN_VALUES,
    CalibrationOptions,
    PairsVerdict,
    ThreadSetting,
    TrialResult,
)
from advisor.objectives import P99
from advisor.pipeline.sweep import sweep
from advisor.recommend import build_recommendation, parse_configmap, render_configmap
from advisor.render.words import onednn_reason
from testkit.fakeapi.samples import FIXED_NOW, recommendation
from tests.support.search_fakes import FakeClock, FakeTrials, node


def _with_onednn(fake: FakeTrials, factor_for_0: float):
    """FakeTrials whose p99 is scaled by ``factor_for_0`` when the trial runs with =0."""

    def run(spec: TrialSpec, deadline_s: float) -> TrialResult:
        result = fake(spec, deadline_s)
        if result.status != "ok" or spec.onednn is None:
            return result
        scale = factor_for_0 if spec.onednn == "0" else 1.0
        return result.model_copy(
            update={"p99_ms": (result.p99_ms or 0) * scale, "onednn": spec.onednn}
        )

    return run


def _calibrate(factor_for_0: float, budget: float = 60.0, noise: float = 0.02):
    clock = FakeClock()
    fake = FakeTrials(clock=clock, usable=2.0, affinity=2, overhead_s=0.3, noise=noise)
    options = CalibrationOptions(budget_s=budget, sweep_onednn=True)
    result = sweep(options, node(2), trial_fn=_with_onednn(fake, factor_for_0), clock=clock)
    return result, fake, clock


def test_a_clear_winner_is_set_in_the_configmap() -> None:
    result, _, _ = _calibrate(0.7)
    assert result.onednn is not None and result.onednn.value == "0"
    assert result.onednn.code == "better"
    assert result.onednn.pairs >= onednn.MIN_PAIRS
    rec = build_recommendation(result, advisor_version="0.1.0", now=FIXED_NOW)
    cm = render_configmap(rec, "tf-advice", "ml")
    assert cm["data"][ONEDNN.name] == "0"
    assert parse_configmap(cm).recommendation.env[ONEDNN.name] == "0"
    assert any(note.startswith("oneDNN: TF_ENABLE_ONEDNN_OPTS=0 is") for note in result.notes)


def test_60_s_hold_enough_pairs_for_a_verdict_and_the_default_budget_says_when_not() -> None:
    result, _, _ = _calibrate(0.7, budget=60.0)
    assert result.onednn is not None and result.onednn.pairs >= onednn.MIN_PAIRS
    assert result.onednn.value == "0"
    # 45 s: too few race rounds to replace TF's default, whose slower windows then hold two
    # pairs: the variable is left unset, and the reason says to raise the budget
    short, _, _ = _calibrate(0.7, budget=DEFAULT_BUDGET_S)
    assert short.kept_default
    assert short.onednn is not None and short.onednn.pairs < onednn.MIN_PAIRS
    assert short.onednn.value is None and "raise --budget" in short.onednn.reason


def test_a_difference_within_noise_leaves_the_variable_out() -> None:
    # 1% apart with +-1% noise per window: the medians can differ by 3% at most, whatever the
    # draws, which is under the 5% floor of the band (a 2% gap with 2% noise could reach 6%)
    result, _, _ = _calibrate(0.99, noise=0.01)
    assert result.onednn is not None and result.onednn.value is None
    assert "no difference beyond noise" in result.onednn.reason
    assert result.onednn.code == "within noise"
    rec = build_recommendation(result, advisor_version="0.1.0", now=FIXED_NOW)
    assert ONEDNN.name not in render_configmap(rec, "tf-advice", "ml")["data"]


def test_pairs_alternate_their_order_on_the_advised_setting_within_the_budget() -> None:
    result, fake, clock = _calibrate(0.7)
    pairs = [spec for spec, _, _ in fake.calls if spec.onednn is not None]
    assert len(pairs) == 2 * result.onednn.pairs  # type: ignore[union-attr]
    firsts = [pairs[i].onednn for i in range(0, len(pairs), 2)]
    assert firsts[:2] == ["0", "1"]
    assert {s.setting for s in pairs} == {result.setting}
    assert all(t.onednn is None for t in result.trials)  # the thread sweep's trials stay apart
    assert len(result.onednn_trials) == len(pairs)
    # the pairs keep the search's reserve at the end of the budget too: no deadline reaches it
    end = 1000.0 + 60.0 - SearchSettings().reserve_s
    assert all(started + deadline <= end + 1e-9 for spec, deadline, started in fake.calls)
    assert clock.monotonic() <= end


@pytest.mark.parametrize("safety", [1.2, 2.0])
def test_the_pairs_are_planned_by_the_search_budget(safety: float) -> None:
    """Its safety, reserve and deadlines are the search's: a pair starts only while two usual
    trials fit before the reserve, and no deadline reaches into it (spending the budget: equal
    values would settle after SETTLE_PAIRS pairs)."""
    clock = FakeClock()
    settings = SearchSettings(overhead_guess_s=1.0, safety=safety, reserve_s=1.5, spend_budget=True)
    budget = Budget(until=clock.monotonic() + 20.0, clock=clock, settings=settings, budget_s=20.0)
    deadlines: list[float] = []

    def trial(spec: TrialSpec, deadline_s: float) -> TrialResult:
        deadlines.append(deadline_s)
        clock.advance(1.0)  # faster than planned: only the plan limits the pairs
        return TrialResult(
            intra_op_threads=2, inter_op_threads=1, status="ok", p99_ms=5.0, onednn=spec.onednn
        )

    trials, verdict = pairs_on_2_1(trial, budget)
    usual = (1.0 + onednn.WINDOW.warmup_s + onednn.WINDOW.measure_s) * safety
    # each pair starts with two usual trials left before the reserve, and takes 2 s here
    assert verdict.pairs == math.floor((20.0 - 1.5 - 2 * usual) / 2.0) + 1
    assert len(trials) == 2 * verdict.pairs
    longest = (1.0 + onednn.WINDOW.warmup_s + onednn.WINDOW.longest_s) * safety
    assert deadlines[0] == pytest.approx(max(2 * longest, longest + 10.0))
    assert all(d <= 20.0 - 1.5 - i * 1.0 + 1e-9 for i, d in enumerate(deadlines))


def test_too_few_pairs_for_a_verdict_leaves_the_variable_out() -> None:
    trials = [
        TrialResult(intra_op_threads=1, inter_op_threads=1, status="ok", p99_ms=p, onednn=v)
        for p, v in ((5.0, "0"), (9.0, "1"), (5.0, "1"), (9.0, "0"))
    ]
    verdict = onednn.verdict(trials, P99, pairs=2)
    assert verdict.value is None and "only 2 measured pair(s)" in onednn_reason(verdict)
    assert verdict.stored(onednn_reason(verdict)).code == verdict.code == "few pairs"


def test_noisy_pairs_widen_the_band() -> None:
    def trial(p99: float, value: str) -> TrialResult:
        return TrialResult(
            intra_op_threads=1, inter_op_threads=1, status="ok", p99_ms=p99, onednn=value
        )

    steady = [trial(10.0, "1"), trial(10.0, "1"), trial(10.0, "1")]
    zero = [trial(8.5, "0"), trial(8.6, "0"), trial(8.4, "0")]
    assert onednn.verdict(steady + zero, P99, 3).value == "0"  # 15% better, tight
    wild = [trial(6.0, "0"), trial(8.5, "0"), trial(12.0, "0")]
    assert onednn.verdict(steady + wild, P99, 3).value is None  # 15% on three wild windows


def test_many_pairs_tell_apart_what_one_pair_could_not() -> None:
    # each value's windows swing by a CV of about 10%, and =0's median is 10% better: over three
    # pairs that is noise, over 24 the medians are known well enough to tell (one window's
    # spread would call it noise however many pairs there were)
    def trials(pairs: int) -> list[TrialResult]:
        out = []
        for i in range(pairs):
            swing = (0.88, 1.0, 1.12)[i % 3]
            for value, p99 in (("0", 9.0 * swing), ("1", 10.0 * swing)):
                out.append(
                    TrialResult(
                        intra_op_threads=1,
                        inter_op_threads=1,
                        status="ok",
                        p99_ms=p99,
                        onednn=value,
                    )
                )
        return out

    assert onednn.verdict(trials(3), P99, 3).value is None
    many = onednn.verdict(trials(24), P99, 24)
    assert many.value == "0"
    assert many.band is not None and many.band < 0.10


@pytest.mark.parametrize("value", ["2", "true", "", " 1"])
def test_validate_rejects_values_other_than_0_or_1(value: str) -> None:
    cm = render_configmap(recommendation(), "tf-advice", "ml")
    cm["data"][ONEDNN.name] = value
    with pytest.raises(InvalidAdviceError, match=ONEDNN.name):
        parse_configmap(cm)


def test_validate_accepts_0_and_1_and_no_other_extra_key() -> None:
    cm = render_configmap(recommendation(), "tf-advice", "ml")
    for value in ("0", "1"):
        cm["data"][ONEDNN.name] = value
        # the content hash annotation no longer matches edited data: parse says so, not the value
        with pytest.raises(InvalidAdviceError) as caught:
            parse_configmap(cm)
        assert ONEDNN.name not in str(caught.value)
    cm["data"]["TF_SOMETHING_ELSE"] = "1"
    with pytest.raises(InvalidAdviceError, match="unexpected TF_SOMETHING_ELSE"):
        parse_configmap(cm)


def steady_pairs(p99: dict[str, float], spend: bool) -> PairsVerdict:
    """Pairs of steady windows (``p99`` per value) within 60 s, spending the budget or not."""
    clock = FakeClock()
    settings = SearchSettings(overhead_guess_s=0.3, spend_budget=spend)
    budget = Budget(until=clock.monotonic() + 60.0, clock=clock, settings=settings, budget_s=60)

    def trial(spec: TrialSpec, deadline_s: float) -> TrialResult:
        clock.advance(1.0)
        assert spec.onednn is not None
        return TrialResult(
            intra_op_threads=2,
            inter_op_threads=1,
            status="ok",
            p99_ms=p99[spec.onednn],
            onednn=spec.onednn,
        )

    return pairs_on_2_1(trial, budget)[1]


def pairs_on_2_1(
    trial: Callable[[TrialSpec, float], TrialResult], budget: Budget
) -> tuple[list[TrialResult], PairsVerdict]:
    """The pairs on 2/1, both values measured by ``trial``, judged by p99."""
    return onednn.measure_pairs(
        ThreadSetting(2, 1),
        dict.fromkeys(ONEDNN_VALUES, trial),
        measure=P99,
        budget=budget,
        say=lambda _line: None,
    )


@pytest.mark.parametrize(
    ("p99", "code"), [({"0": 5.0, "1": 5.0}, "within noise"), ({"0": 5.0, "1": 8.0}, "better")]
)
def test_the_pairs_end_once_their_verdict_is_settled(p99: dict[str, float], code: str) -> None:
    """Steady windows: equal values (within noise, a narrow band) or a clear winner settle after
    SETTLE_PAIRS pairs; spending the budget, the pairs go on."""
    early, spent = steady_pairs(p99, False), steady_pairs(p99, True)
    assert early.code == spent.code == code
    assert onednn.settled(early, SearchSettings().settle_band)
    assert early.pairs == onednn.SETTLE_PAIRS < spent.pairs


def test_noisy_pairs_are_not_settled() -> None:
    # the two values 6% apart, the windows spread by 20%: within noise, but a wide band
    trials = [
        TrialResult(intra_op_threads=1, inter_op_threads=1, status="ok", p99_ms=p, onednn=v)
        for i in range(6)
        for p, v in ((5.0 * (0.8 + 0.08 * i), "0"), (5.3 * (0.8 + 0.08 * i), "1"))
    ]
    verdict = onednn.verdict(trials, P99, pairs=6)
    assert verdict.code == "within noise"
    assert not onednn.settled(verdict, SearchSettings().settle_band)


def test_pairs_the_budget_ended_short_are_open_for_windows_not_noise() -> None:
    # a budget that holds too few pairs for a verdict: what kept it open was the pairs it lacked
    result, _, _ = _calibrate(1.0, budget=30.0)
    assert result.onednn is not None and result.onednn.code == "few pairs"
    assert result.stopped == "budget"
    assert result.unsettled[ONEDNN.name] == "windows"
    settle_band = SearchSettings().settle_band
    few = PairsVerdict("few pairs", None, {"0": 3.5}, 2, 2, 3, "ms p99")
    assert onednn.open_reason(few, settle_band) == "windows"
    # enough pairs, within noise but a band too wide to call: noise
    trials = [
        TrialResult(intra_op_threads=1, inter_op_threads=1, status="ok", p99_ms=p, onednn=v)
        for i in range(6)
        for p, v in ((5.0 * (0.8 + 0.08 * i), "0"), (5.3 * (0.8 + 0.08 * i), "1"))
    ]
    assert onednn.open_reason(onednn.verdict(trials, P99, pairs=6), settle_band) == "noise"
    assert onednn.open_reason(steady_pairs({"0": 5.0, "1": 8.0}, False), settle_band) is None

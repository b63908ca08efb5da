"""The production verdict from the samples Prometheus answered (recorded values, one per 5-minute
step: throttled and total CFS periods, cores, latency in seconds, load in req/s): one
after-window against the same figure on earlier days, where the windows go, and the persistence
a revert needs."""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta

import pytest

from advisor.consumers.production import (
    ALPHA,
    LOAD_SHARE,
    MIN_PERIODS,
    MIN_SAMPLES,
    MIN_STEP_PERIODS,
    THROTTLED_POINTS,
    Samples,
    Window,
    cfs_steps,
    judge,
    persisted,
    verdict,
    window_samples,
)
from advisor.consumers.production_windows import (
    DAY,
    MIN_DAYS,
    Placement,
    finite,
)
from advisor.models import Production
from advisor.models.production import REVERT_WINDOWS
from tests.unit.consumers.test_production_windows import BEGUN, CHANGED, W, placed_at

#: 100 ms CFS periods in five minutes of a container that always has work
STEP_PERIODS = 3000.0
#: a day of p99 samples as a service's histogram gives them: 100-122 ms, wobbling
RECORDED_P99 = [0.100, 0.104, 0.111, 0.122, 0.108, 0.103, 0.117, 0.109, 0.101, 0.113, 0.106, 0.119]
#: how much each earlier day's level differs from the typical one (about 3% a day)
DAY_LEVELS = [1.00, 1.03, 0.97, 1.02, 0.99, 1.04, 0.96, 1.01, 0.98]


def throttled(share: float, steps: int = 36, cpu: float = 1.0, wobble: float = 0.02) -> Window:
    """``steps`` samples around ``share`` (plus or minus ``wobble``)."""
    shares = [max(0.0, share + wobble * ((i % 5) - 2) / 2) for i in range(steps)]
    return Window(cfs=[(s * STEP_PERIODS, STEP_PERIODS) for s in shares], cpu=[cpu] * steps)


def latency(values: list[float], share: float = 0.1) -> Window:
    return Window(cfs=throttled(share, len(values)).cfs, p99=values)


def throttled_days(
    share: float, days: int = 9, spread: float = 0.02, cpu: float = 1.0
) -> list[Window]:
    return [throttled(share + spread * (level - 1) / 0.04, cpu=cpu) for level in DAY_LEVELS[:days]]


def latency_days(values: list[float], days: int = 9, share: float = 0.1) -> list[Window]:
    return [latency([v * level for v in values], share) for level in DAY_LEVELS[:days]]


@pytest.mark.parametrize(
    ("before", "after", "verdict_"),
    [
        (0.41, 0.03, "improved"),
        (0.05, 0.40, "regressed"),
        # beyond what the days vary by, but a steady 8 points is within the effect size
        (0.20, 0.20 + THROTTLED_POINTS - 0.02, "unchanged"),
        (0.20, 0.20 - THROTTLED_POINTS + 0.02, "unchanged"),
    ],
)
def test_without_p99_throttling_decides_by_the_days_and_the_points(
    before: float, after: float, verdict_: str
) -> None:
    found = judge(throttled_days(before), throttled(after))
    assert found.verdict == verdict_
    assert found.cause == "throttling"
    assert found.throttled_before == pytest.approx(before, abs=0.005)
    assert f"throttling {before:.0%} -> {after:.0%}" in str(found.reason)
    assert (found.test, found.alpha, found.days) == ("day-t", ALPHA, 9)
    # beyond the days each time: the unchanged ones moved by less than the effect size
    assert found.p_value is not None and found.p_value <= ALPHA


def test_a_large_shift_within_what_the_days_vary_by_is_unchanged() -> None:
    """Days whose throttled share swings from 5% to 65%: an after-window 15 points above their
    mean is beyond the effect size, not beyond the days."""
    days = [throttled(s) for s in (0.05, 0.65, 0.15, 0.55, 0.25, 0.45, 0.1, 0.6)]
    found = judge(days, throttled(0.50))
    assert found.throttled_after is not None and found.throttled_before is not None
    assert found.throttled_after - found.throttled_before > THROTTLED_POINTS
    assert found.verdict == "unchanged"
    assert found.p_value is not None and found.p_value > ALPHA
    assert "within what its 8 earlier days vary by (p > 0.05)" in str(found.reason)


def test_p99_decides_by_the_days_and_effect_whatever_throttling_did() -> None:
    days = latency_days(RECORDED_P99, share=0.4)
    worse = latency([v * 1.5 for v in RECORDED_P99], share=0.0)
    better = latency([v * 0.5 for v in RECORDED_P99], share=0.0)
    # 5% slower throughout: within the effect size
    within = latency([v * 1.05 for v in RECORDED_P99], share=0.0)
    found = judge(days, worse, latency=True)
    assert (found.verdict, found.cause) == ("regressed", "p99")
    assert found.p_value is not None and found.p_value <= ALPHA
    assert judge(days, better, latency=True).verdict == "improved"
    assert judge(days, within, latency=True).verdict == "unchanged"
    found = judge(days, better, latency=True)
    assert found.p99_after_ms == 54.2
    assert found.p99_before_ms == pytest.approx(108.5, abs=0.5)
    assert found.reason == "p99 54 ms vs 108 ms before: -50%"


def test_a_latency_query_empty_after_or_on_every_day_is_unknown_never_throttling() -> None:
    """A new image renamed the histogram: p99 before and none after. Throttling rose; it must
    not decide for a workload that asked to be judged by its latency."""
    found = judge(latency_days(RECORDED_P99, share=0.05), latency([], 0.40), latency=True)
    assert (found.verdict, found.cause) == ("unknown", "latency-missing")
    assert "the latency query gave no data after the advice" in str(found.reason)
    found = judge([latency([], 0.05)] * 9, latency(RECORDED_P99, 0.40), latency=True)
    assert (found.verdict, found.cause) == ("unknown", "latency-missing")
    assert "the latency query gave no data before the advice" in str(found.reason)
    short = judge(
        latency_days(RECORDED_P99), latency(RECORDED_P99[: MIN_SAMPLES - 1]), latency=True
    )
    assert f"{MIN_SAMPLES - 1} sample(s) after" in str(short.reason)


def test_too_few_earlier_days_is_unknown_saying_what_it_needs() -> None:
    for found in (
        judge(throttled_days(0.05, days=MIN_DAYS - 1), throttled(0.9)),
        judge(latency_days(RECORDED_P99, days=MIN_DAYS - 1), latency([1.0] * 12), latency=True),
    ):
        assert (found.verdict, found.cause) == ("unknown", "too-little-history")
        assert f"{MIN_DAYS - 1} earlier day(s)" in str(found.reason)
        assert f"the test needs {MIN_DAYS}" in str(found.reason)
    # a day with too few samples is no day
    days = [*throttled_days(0.05, days=MIN_DAYS - 1), throttled(0.05, steps=MIN_SAMPLES - 1)]
    assert judge(days, throttled(0.9)).cause == "too-little-history"
    assert judge(throttled_days(0.05, days=MIN_DAYS), throttled(0.9)).verdict == "regressed"


def test_load_that_changed_by_more_than_the_share_is_unknown() -> None:
    days = [Window(cfs=d.cfs, load=[100.0] * 36) for d in throttled_days(0.05)]
    doubled = Window(cfs=throttled(0.40).cfs, load=[200.0] * 36)
    found = judge(days, doubled, load=True)
    assert (found.verdict, found.cause) == ("unknown", "load-changed")
    assert str(found.reason).startswith("load changed: 100 -> 200 req/s")
    assert (found.load_before, found.load_after) == (100.0, 200.0)
    assert found.throttled_after == pytest.approx(0.40, abs=0.005)  # still shown
    same = Window(cfs=throttled(0.40).cfs, load=[100.0 * (1 + LOAD_SHARE - 0.01)] * 36)
    assert judge(days, same, load=True).verdict == "regressed"
    gone = judge(days, Window(cfs=throttled(0.4).cfs), load=True)
    assert (gone.cause, gone.reason) == (
        "load-missing",
        "the load query gave no data after the advice",
    )


@pytest.mark.parametrize(
    ("days", "after", "side"),
    [
        ([Window()] * 9, throttled(0.1), "before"),
        (throttled_days(0.1), Window(), "after"),
        (throttled_days(0.1), throttled(0.5, steps=MIN_SAMPLES - 1), "after"),
    ],
)
def test_missing_or_too_few_samples_is_unknown(
    days: list[Window], after: Window, side: str
) -> None:
    found = judge(days, after)
    assert (found.verdict, found.cause) == ("unknown", "too-little-data")
    assert f"too little data {side} the advice" in str(found.reason)


def test_cfs_steps_pair_by_time_and_leave_idle_and_non_finite_steps_out() -> None:
    throttled_ = [(0.0, 10.0), (300.0, 5.0), (600.0, 0.0), (1200.0, math.inf)]
    periods = [(0.0, 100.0), (300.0, MIN_STEP_PERIODS - 1), (600.0, 50.0), (900.0, 40.0),
               (1200.0, 60.0), (1500.0, math.nan)]  # fmt: skip
    assert cfs_steps(throttled_, periods) == [(10.0, 100.0), (0.0, 50.0)]
    assert Window(cfs=[(10.0, MIN_PERIODS - 1)]).throttled is None


def test_the_one_finite_filter_leaves_out_nan_and_both_infinities() -> None:
    points = [(1.0, 0.5), (2.0, math.nan), (3.0, math.inf), (4.0, -math.inf), (5.0, 0.0)]
    assert finite(points) == [(1.0, 0.5), (5.0, 0.0)]


def test_cpu_is_shown_never_judged() -> None:
    found = judge(throttled_days(0.2, cpu=1.0), throttled(0.2, cpu=3.9))
    assert (found.verdict, found.cpu_before, found.cpu_after) == ("unchanged", 1.0, 3.9)


def test_a_provisional_verdict_says_why() -> None:
    found = judge(throttled_days(0.05), throttled(0.40), provisional="3.0 h of the 24.0 h so far")
    assert (found.verdict, found.provisional) == ("regressed", True)
    assert str(found.reason).startswith("provisional (3.0 h of the 24.0 h so far): throttling")
    unknown = judge([Window()] * 9, throttled(0.4), provisional="x")
    assert (unknown.verdict, unknown.provisional) == ("unknown", False)


# -- persistence --------------------------------------------------------------------------------


def _judged(verdict_: str, p: float = 0.01, provisional: bool = False) -> Production:
    return Production(
        verdict=verdict_,  # type: ignore[arg-type]
        cause="throttling",
        p_value=p,
        provisional=provisional,
        reason="r",
    )


def test_persisted_counts_the_full_windows_regressed_in_a_row() -> None:
    two = persisted([_judged("regressed", 0.01), _judged("regressed", 0.03)])
    assert (two.regressed_windows, two.p_value) == (2, 0.03)
    one = persisted([_judged("unchanged", 0.4), _judged("regressed", 0.02)])
    assert (one.regressed_windows, one.p_value) == (1, 0.02)
    # the latest full window decides what is shown; a provisional one after it is not counted
    shown = persisted([_judged("regressed"), _judged("improved", provisional=True)])
    assert (shown.verdict, shown.regressed_windows) == ("regressed", 1)
    healed = persisted([_judged("regressed"), _judged("unchanged", 0.3)])
    assert (healed.verdict, healed.regressed_windows) == ("unchanged", 0)
    only = persisted([_judged("regressed", provisional=True)])
    assert (only.provisional, only.regressed_windows) == (True, None)


# -- the whole verdict over recorded series -----------------------------------------------------


def _series(
    placed: Placement, level: float, effect: float, seed: int, day_sd: float = 0.05
) -> tuple[Samples, Samples]:
    """Seeded p99 series: each day's level about ``day_sd`` from the next, autocorrelated
    5-minute noise within it; the after-windows ``effect`` times higher."""
    rng = random.Random(seed)

    def points(spans: list[tuple[datetime, datetime]], factor: float) -> list[tuple[float, float]]:
        out = []
        x = 0.0
        for start, end in sorted(set(spans)):
            day = rng.gauss(0, day_sd)
            t = start.timestamp() + 300
            while t <= end.timestamp():
                x = 0.7 * x + rng.gauss(0, 0.1 * math.sqrt(1 - 0.49))
                out.append((t, level * factor * math.exp(day + x)))
                t += 300
        return out

    days = [day for each in placed.days for day in each]
    return Samples(p99=points(days, 1.0)), Samples(p99=points(placed.after, effect))


def test_a_true_regression_is_regressed_on_both_windows_and_no_change_mostly_not() -> None:
    placed = placed_at(BEGUN + 2 * W)
    reverts = sum(
        verdict(placed, *_series(placed, 0.1, 1.3, seed), latency=True).regressed_windows
        == REVERT_WINDOWS
        for seed in range(40)
    )
    assert reverts >= 34
    regressed = sum(
        verdict(placed, *_series(placed, 0.1, 1.0, seed), latency=True).verdict == "regressed"
        for seed in range(100, 200)
    )
    assert regressed <= 10


def test_a_previous_advice_without_a_start_is_shown_not_judged() -> None:
    placed = placed_at(BEGUN + 2 * W)
    days, after = _series(placed, 0.1, 1.5, 7)
    found = verdict(placed, days, after, latency=True, previous_unknown=True)
    assert (found.verdict, found.cause, found.p_value) == ("unknown", "not-previous", None)
    assert found.p99_after_ms is not None and "not judged" in str(found.reason)
    assert verdict(placed, days, after, latency=True).verdict == "regressed"


def test_samples_cut_into_windows_by_the_step_each_point_covers() -> None:
    start = CHANGED
    at = start.timestamp()
    samples = Samples(
        cpu=[(at, 9.0), (at + 300, 1.0), (at + 600, math.nan)], p99=[(at + 300, -1.0)]
    )
    window = samples.window((start, start + timedelta(minutes=10)))
    assert (window.cpu, window.p99) == ([1.0], [])


def test_too_few_days_left_once_stale_ones_are_out_is_not_previous() -> None:
    previous = CHANGED - 12 * DAY
    placed = placed_at(BEGUN + 2 * W, previous_changed=previous)
    days, after = _series(placed, 0.1, 1.5, 3)
    stale = [(d[0].timestamp() + 600, previous.timestamp() - 60) for d in placed.days[-1][:5]]
    found = verdict(placed, days, after, earliest=stale, latency=True)
    assert (found.verdict, found.cause) == ("unknown", "not-previous")
    assert str(found.reason).startswith(
        "5 earlier day(s) had a pod started before the previous advice took effect "
        "(2026-11-08T09:00Z)"
    )
    # two stale days of eleven: nine are left, enough
    few = stale[:2]
    assert verdict(placed, days, after, earliest=few, latency=True).verdict == "regressed"


def test_a_window_shorter_than_eight_steps_is_judged_on_the_steps_a_full_one_holds() -> None:
    """A 5-minute window holds one step: each day's figure is that step, and the test is the
    same. A 24 h or an hour-long window still needs eight."""
    step = timedelta(minutes=5)
    assert window_samples(timedelta(hours=24), step) == MIN_SAMPLES
    assert window_samples(timedelta(hours=1), step) == MIN_SAMPLES
    # a full 40-minute window is 30 minutes of it: six steps
    assert window_samples(timedelta(minutes=40), step) == 6
    assert window_samples(timedelta(minutes=5), step) == 1
    one = [throttled(0.45 + 0.01 * (level - 1) / 0.04, steps=1) for level in DAY_LEVELS]
    after = throttled(0.0, steps=1)
    assert judge(one, after).cause == "too-little-data"
    found = judge(one, after, samples=1)
    assert (found.verdict, found.days) == ("improved", len(DAY_LEVELS))

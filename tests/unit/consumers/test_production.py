"""The production verdict from the samples Prometheus answered (recorded values, one per 5-minute
step: throttled and total CFS periods, cores, latency in seconds, load in req/s), and where the
two windows go."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from advisor.consumers.production import (
    ALPHA,
    DAY,
    FULL_SLACK,
    LOAD_SHARE,
    MIN_PERIODS,
    MIN_SAMPLES,
    MIN_STEP_PERIODS,
    ROLLOUT,
    THROTTLED_POINTS,
    WARM_UP,
    WEEK,
    Unknown,
    Window,
    Windows,
    cfs_steps,
    judge,
    place,
    ran_previous,
)

#: 100 ms CFS periods in five minutes of a container that always has work
STEP_PERIODS = 3000.0
#: a day of p99 samples as a service's histogram gives them: 100-122 ms, wobbling
RECORDED_P99 = [0.100, 0.104, 0.111, 0.122, 0.108, 0.103, 0.117, 0.109, 0.101, 0.113, 0.106, 0.119]


def throttled(share: float, steps: int = 36, cpu: float = 1.0, wobble: float = 0.02) -> Window:
    """``steps`` samples around ``share`` (plus or minus ``wobble``)."""
    shares = [max(0.0, share + wobble * ((i % 5) - 2) / 2) for i in range(steps)]
    return Window(cfs=[(s * STEP_PERIODS, STEP_PERIODS) for s in shares], cpu=[cpu] * steps)


def latency(values: list[float], share: float = 0.1) -> Window:
    return Window(cfs=throttled(share, len(values)).cfs, p99=values)


@pytest.mark.parametrize(
    ("before", "after", "verdict"),
    [
        (0.41, 0.03, "improved"),
        (0.05, 0.40, "regressed"),
        # a rank test alone would call a steady 1 point significant: the effect size does not
        (0.20, 0.20 + THROTTLED_POINTS - 0.02, "unchanged"),
        (0.20, 0.20 - THROTTLED_POINTS + 0.02, "unchanged"),
    ],
)
def test_without_p99_throttling_decides_by_rank_and_points(
    before: float, after: float, verdict: str
) -> None:
    found = judge(throttled(before), throttled(after))
    assert found.verdict == verdict
    assert found.cause == "throttling"
    assert found.throttled_before == pytest.approx(before, abs=0.005)
    assert f"throttling {before:.0%} -> {after:.0%}" in str(found.reason)
    # significant each time: the unchanged ones moved by less than the effect size
    assert found.p_value is not None and found.p_value < ALPHA


def test_a_large_shift_that_is_noise_is_unchanged() -> None:
    """Two windows whose shares overlap wholly (noisy, no tendency): the whole-window shares
    differ by more than the effect size, but the ranks say the samples do not differ."""
    noisy = [0.0, 0.9, 0.1, 0.8, 0.0, 0.9, 0.2, 0.7, 0.05, 0.95]
    before = Window(cfs=[(s * STEP_PERIODS, STEP_PERIODS) for s in noisy])
    # the same shares, in another order, the busiest steps longer (more periods)
    after = Window(
        cfs=[(s * STEP_PERIODS * (3 if s > 0.5 else 1), STEP_PERIODS * (3 if s > 0.5 else 1))
             for s in reversed(noisy)]
    )  # fmt: skip
    found = judge(before, after)
    assert found.throttled_after is not None and found.throttled_before is not None
    assert found.throttled_after - found.throttled_before > THROTTLED_POINTS
    assert (found.verdict, found.p_value) == ("unchanged", 1.0)
    assert "the samples do not differ (Mann-Whitney p >= 0.01)" in str(found.reason)


def test_p99_decides_by_rank_and_effect_whatever_throttling_did() -> None:
    before = latency(RECORDED_P99, share=0.4)
    worse = latency([v * 1.5 for v in RECORDED_P99], share=0.0)
    better = latency([v * 0.5 for v in RECORDED_P99], share=0.0)
    # 5% slower throughout: the ranks see it, the effect size does not count it
    within = latency([v * 1.05 for v in RECORDED_P99], share=0.0)
    found = judge(before, worse, latency=True)
    assert (found.verdict, found.cause) == ("regressed", "p99")
    assert found.p_value is not None and found.p_value < ALPHA
    assert judge(before, better, latency=True).verdict == "improved"
    assert judge(before, within, latency=True).verdict == "unchanged"
    found = judge(before, better, latency=True)
    assert (found.p99_before_ms, found.p99_after_ms) == (108.5, 54.2)
    assert found.reason == "p99 54 ms vs 108 ms before: -50%"


@pytest.mark.parametrize("side", ["before", "after"])
def test_a_latency_query_empty_on_one_side_is_unknown_never_throttling(side: str) -> None:
    """A new image renamed the histogram: p99 before and none after. Throttling rose; it must
    not decide for a workload that asked to be judged by its latency."""
    full, empty = latency(RECORDED_P99, 0.05), latency([], 0.40)
    before, after = (empty, full) if side == "before" else (full, empty)
    found = judge(before, after, latency=True)
    assert (found.verdict, found.cause) == ("unknown", "latency-missing")
    assert f"the latency query gave no data {side} the advice" in str(found.reason)
    short = judge(latency(RECORDED_P99), latency(RECORDED_P99[: MIN_SAMPLES - 1]), latency=True)
    assert f"{MIN_SAMPLES - 1} sample(s) after" in str(short.reason)


def test_load_that_changed_by_more_than_the_share_is_unknown() -> None:
    before = Window(cfs=throttled(0.05).cfs, load=[100.0] * 36)
    doubled = Window(cfs=throttled(0.40).cfs, load=[200.0] * 36)
    found = judge(before, doubled, load=True)
    assert (found.verdict, found.cause) == ("unknown", "load-changed")
    assert str(found.reason).startswith("load changed: 100 -> 200 req/s")
    assert (found.load_before, found.load_after) == (100.0, 200.0)
    assert found.throttled_after == pytest.approx(0.40, abs=0.005)  # still shown
    same = Window(cfs=throttled(0.40).cfs, load=[100.0 * (1 + LOAD_SHARE - 0.01)] * 36)
    assert judge(before, same, load=True).verdict == "regressed"
    gone = judge(before, Window(cfs=throttled(0.4).cfs), load=True)
    assert (gone.cause, gone.reason) == (
        "load-missing",
        "the load query gave no data after the advice",
    )


@pytest.mark.parametrize(
    ("before", "after", "side"),
    [
        (Window(), throttled(0.1), "before"),
        (throttled(0.1), Window(), "after"),
        (throttled(0.5, steps=MIN_SAMPLES - 1), throttled(0.0), "before"),
    ],
)
def test_missing_or_too_few_samples_is_unknown(before: Window, after: Window, side: str) -> None:
    found = judge(before, after)
    assert (found.verdict, found.cause) == ("unknown", "too-little-data")
    assert f"too little data {side} the advice" in str(found.reason)


def test_cfs_steps_pair_by_time_and_leave_idle_steps_out() -> None:
    throttled_ = [(0.0, 10.0), (300.0, 5.0), (600.0, 0.0)]
    periods = [(0.0, 100.0), (300.0, MIN_STEP_PERIODS - 1), (600.0, 50.0), (900.0, 40.0)]
    assert cfs_steps(throttled_, periods) == [(10.0, 100.0), (0.0, 50.0)]
    assert Window(cfs=[(10.0, MIN_PERIODS - 1)]).throttled is None


def test_cpu_is_shown_never_judged() -> None:
    found = judge(throttled(0.2, cpu=1.0), throttled(0.2, cpu=3.9))
    assert (found.verdict, found.cpu_before, found.cpu_after) == ("unchanged", 1.0, 3.9)


def test_a_provisional_verdict_says_why() -> None:
    found = judge(throttled(0.05), throttled(0.40), provisional="3.0 h of the 24.0 h so far")
    assert (found.verdict, found.provisional) == ("regressed", True)
    assert str(found.reason).startswith("provisional (3.0 h of the 24.0 h so far): throttling")
    unknown = judge(Window(), throttled(0.4), provisional="x")
    assert (unknown.verdict, unknown.provisional) == ("unknown", False)


# -- where the windows go -------------------------------------------------------------------------

CHANGED = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)
STARTED = CHANGED + timedelta(minutes=5)
BEGUN = STARTED + WARM_UP


def test_after_a_full_window_the_before_window_is_a_week_back_then_days_back() -> None:
    placed = place(CHANGED, [STARTED], now=CHANGED + timedelta(days=3), window=timedelta(hours=24))
    assert isinstance(placed, list)
    week, days = placed
    assert week.after == (BEGUN, BEGUN + timedelta(hours=24))
    assert week.before == (BEGUN - WEEK, BEGUN + timedelta(hours=24) - WEEK)
    # a day back would end after the change (the rollout and warm-up): two days back
    assert days.back == 2 * DAY
    assert days.before[1] <= CHANGED
    assert (week.provisional, days.provisional) == (None, None)


def test_the_same_hours_of_the_day_on_both_sides() -> None:
    placed = place(CHANGED, [STARTED], now=CHANGED + timedelta(hours=5), window=timedelta(hours=3))
    assert isinstance(placed, list)
    for windows in placed:
        (b0, b1), (a0, a1) = windows.before, windows.after
        assert (b0.time(), b1.time()) == (a0.time(), a1.time())
        assert b1 <= CHANGED and (a1 - a0) == (b1 - b0) == timedelta(hours=3)
    assert [w.back for w in placed] == [WEEK, DAY]


def test_a_short_after_window_is_provisional_and_a_very_short_one_none() -> None:
    placed = place(CHANGED, [STARTED], now=BEGUN + timedelta(hours=3), window=timedelta(hours=24))
    assert isinstance(placed, list)
    assert placed[0].provisional == "3.0 h of the 24.0 h after-window so far"
    assert placed[0].after == (BEGUN, BEGUN + timedelta(hours=3))
    none = place(CHANGED, [STARTED], now=BEGUN + timedelta(minutes=30), window=timedelta(hours=24))
    assert isinstance(none, Unknown) and none.cause == "no-after-window"
    assert "0.5 h since its pods started" in none.reason


def test_the_next_nightly_plan_sees_a_full_window_within_the_slack() -> None:
    """Advice lands after a nightly plan; the next plan, a day after that one, sees less than a
    whole day after the rollout and warm-up: within FULL_SLACK it is still a full window."""
    day = timedelta(hours=24)
    full = place(CHANGED, [STARTED], now=BEGUN + day - FULL_SLACK, window=day)
    assert isinstance(full, list) and full[0].provisional is None
    short = place(
        CHANGED, [STARTED], now=BEGUN + day - FULL_SLACK - timedelta(minutes=5), window=day
    )
    assert isinstance(short, list) and short[0].provisional is not None


def test_a_pod_added_after_the_rollout_does_not_restart_the_after_window() -> None:
    """An autoscaler's scale-up (or an eviction) hours later: the window starts after the
    rollout, whatever pods started since; pods of the rollout itself all count."""
    day = timedelta(hours=24)
    now = CHANGED + 2 * DAY
    rolled = STARTED + ROLLOUT - timedelta(minutes=1)
    placed = place(CHANGED, [STARTED, rolled, now - timedelta(hours=2)], now=now, window=day)
    assert isinstance(placed, list)
    assert placed[0].after[0] == rolled + WARM_UP and placed[0].provisional is None


def test_pods_from_before_the_change_give_no_after_window() -> None:
    found = place(CHANGED, [CHANGED - timedelta(minutes=1)], now=CHANGED + DAY, window=DAY)
    assert isinstance(found, Unknown) and "predate" in found.reason


def test_the_before_window_ran_the_previous_advice_alone() -> None:
    now = BEGUN + timedelta(hours=3)
    # the previous advice took effect 3 days before: a week back is too far, a day back is not
    placed = place(CHANGED, [STARTED], now=now, window=timedelta(hours=3),
                   previous_changed=CHANGED - 3 * DAY)  # fmt: skip
    assert isinstance(placed, list) and [w.back for w in placed] == [DAY]
    # 20 hours before: not even a day back
    found = place(CHANGED, [STARTED], now=now, window=timedelta(hours=3),
                  previous_changed=CHANGED - timedelta(hours=20))  # fmt: skip
    assert isinstance(found, Unknown) and found.cause == "hours"
    assert "ran the previous advice alone" in found.reason


def test_windows_before_is_the_after_window_moved_back() -> None:
    w = Windows((BEGUN, BEGUN + DAY), WEEK)
    assert w.before == (BEGUN - WEEK, BEGUN + DAY - WEEK)


def test_the_before_windows_pods_must_have_started_after_the_previous_advice() -> None:
    previous = CHANGED - 3 * DAY
    placed = place(CHANGED, [STARTED], now=BEGUN + timedelta(hours=3), window=timedelta(hours=3),
                   previous_changed=previous)  # fmt: skip
    assert isinstance(placed, list)
    (windows,) = placed
    assert ran_previous(windows, previous.timestamp() + 60) is None
    assert ran_previous(windows, None) is None  # no start times: not checked
    stale = ran_previous(windows, previous.timestamp() - 3600)
    assert stale is not None and stale.cause == "not-previous"
    assert "2026-11-17T08:00Z, before the previous advice took effect (2026-11-17T09:00Z)" in (
        stale.reason
    )
    unknown_previous = Windows((BEGUN, BEGUN + DAY), WEEK)
    assert ran_previous(unknown_previous, 0.0) is None


def test_an_after_window_of_a_week_is_compared_with_the_week_before() -> None:
    placed = place(CHANGED, [STARTED], now=CHANGED + 30 * DAY, window=WEEK)
    assert isinstance(placed, list)
    (windows,) = placed
    assert windows.back == 2 * WEEK  # one week back would overlap the rollout and warm-up
    assert windows.before[1] <= CHANGED

"""The production verdict from the figures Prometheus answered (recorded values: throttled and
total CFS periods, cores, latency points in seconds)."""

from __future__ import annotations

import pytest

from advisor.consumers.production import MIN_PERIODS, THROTTLED_POINTS, Window, judge

DAY_OF_PERIODS = 864000.0


def throttled(share: float, periods: float = DAY_OF_PERIODS, cpu: float | None = 1.0) -> Window:
    return Window(throttled_periods=share * periods, periods=periods, cpu=cpu)


@pytest.mark.parametrize(
    ("before", "after", "verdict"),
    [
        (0.41, 0.03, "improved"),
        (0.05, 0.40, "regressed"),
        (0.20, 0.20 + THROTTLED_POINTS - 0.01, "unchanged"),
        (0.20, 0.20 - THROTTLED_POINTS + 0.01, "unchanged"),
    ],
)
def test_without_p99_throttling_decides_by_points(
    before: float, after: float, verdict: str
) -> None:
    found = judge(throttled(before), throttled(after))
    assert found.verdict == verdict
    assert (found.throttled_before, found.throttled_after) == (round(before, 4), round(after, 4))
    assert f"throttling {before:.0%} -> {after:.0%}" in str(found.reason)


def test_p99_decides_against_the_before_spread_whatever_throttling_did() -> None:
    before = Window(throttled_periods=0.4 * DAY_OF_PERIODS, periods=DAY_OF_PERIODS,
                    p99=[0.100, 0.122, 0.110])  # fmt: skip
    worse = Window(throttled_periods=0, periods=DAY_OF_PERIODS, p99=[0.130, 0.125, 0.140])
    better = Window(throttled_periods=0, periods=DAY_OF_PERIODS, p99=[0.058, 0.060, 0.050])
    within = Window(throttled_periods=0, periods=DAY_OF_PERIODS, p99=[0.105, 0.200, 0.101, 0.106])
    assert judge(before, worse).verdict == "regressed"
    assert judge(before, better).verdict == "improved"
    assert judge(before, within).verdict == "unchanged"  # median 105.5 ms, inside 100-122
    found = judge(before, better)
    assert (found.p99_before_ms, found.p99_after_ms) == (110.0, 58.0)
    assert found.reason == "p99 58 ms is below before 100-122 ms"


def test_too_few_latency_points_fall_back_to_throttling() -> None:
    before = Window(throttled_periods=0.4 * DAY_OF_PERIODS, periods=DAY_OF_PERIODS, p99=[0.1, 0.1])
    after = Window(throttled_periods=0, periods=DAY_OF_PERIODS, p99=[0.5, 0.5, 0.5])
    assert judge(before, after).verdict == "improved"
    assert judge(before, after).p99_before_ms is None


@pytest.mark.parametrize(
    ("before", "after", "side"),
    [
        (Window(), throttled(0.1), "before"),
        (throttled(0.1), Window(), "after"),
        (throttled(0.5, periods=MIN_PERIODS - 1), throttled(0.0), "before"),
    ],
)
def test_missing_or_too_few_periods_is_unknown(before: Window, after: Window, side: str) -> None:
    found = judge(before, after)
    assert found.verdict == "unknown"
    assert f"too little data {side} the advice" in str(found.reason)


def test_a_failed_latency_query_is_unknown_even_with_throttling_known() -> None:
    found = judge(throttled(0.4), throttled(0.0), latency_problem="the latency query failed: x")
    assert (found.verdict, found.reason) == ("unknown", "the latency query failed: x")
    assert found.throttled_before == 0.4


def test_cpu_is_shown_never_judged() -> None:
    found = judge(throttled(0.2, cpu=1.0), throttled(0.2, cpu=3.9))
    assert (found.verdict, found.cpu_before, found.cpu_after) == ("unchanged", 1.0, 3.9)

"""Where production's windows go: the rollout from the history (pod turnover starts no new
window), the after-windows one after the other, the earlier days at each window's hours that ran
the previous advice alone, and the history the test needs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from advisor.consumers.production_windows import (
    DAY,
    FULL_SLACK,
    MAX_DAYS,
    MIN_DAYS,
    ROLLOUT,
    WARM_UP,
    Placement,
    Unknown,
    place,
    ran_previous,
    rollout,
)
from advisor.models.production import REVERT_WINDOWS

CHANGED = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)
STARTED = CHANGED + timedelta(minutes=5)
BEGUN = STARTED + WARM_UP
W = timedelta(hours=24)


def placed_at(now: datetime, window: timedelta = W, **kw: datetime) -> Placement:
    found = place(CHANGED, STARTED, now=now, window=window, **kw)
    assert isinstance(found, Placement), found
    return found


def test_after_windows_follow_the_rollout_and_days_lie_at_their_hours() -> None:
    placed = placed_at(BEGUN + 3 * DAY)
    # three full days since: the last REVERT_WINDOWS of them are judged
    assert len(placed.after) == REVERT_WINDOWS and placed.first == 2
    assert placed.after == [(BEGUN + DAY, BEGUN + 2 * DAY), (BEGUN + 2 * DAY, BEGUN + 3 * DAY)]
    assert placed.provisional is None
    for span, days in zip(placed.after, placed.days, strict=True):
        assert len(days) == MAX_DAYS
        for start, end in days:
            assert start.time() == span[0].time() and end - start == W and end <= CHANGED
    # a day back would end after the change: two days back is the newest
    assert placed.days[0][0] == (BEGUN - 2 * DAY, BEGUN - DAY)
    assert placed.days_span == (BEGUN - (MAX_DAYS + 1) * DAY, BEGUN - DAY)


def test_short_windows_follow_each_other_each_with_days_at_its_hours() -> None:
    three = timedelta(hours=3)
    placed = placed_at(BEGUN + 9 * three + timedelta(minutes=30), window=three)
    assert placed.after == [
        (BEGUN + 7 * three, BEGUN + 8 * three),
        (BEGUN + 8 * three, BEGUN + 9 * three),
    ]
    assert placed.first == 8
    # a day back would end after the change (09:15 > 09:00): two days back
    assert placed.days[0][0] == (BEGUN + 7 * three - 2 * DAY, BEGUN + 8 * three - 2 * DAY)
    assert placed.days[1][0] == (BEGUN + 8 * three - 2 * DAY, BEGUN + 9 * three - 2 * DAY)


def test_a_short_after_window_is_provisional_and_a_very_short_one_none() -> None:
    placed = placed_at(BEGUN + timedelta(hours=3))
    assert placed.provisional == "3.0 h of the 24.0 h after-window so far"
    assert placed.after == [(BEGUN, BEGUN + timedelta(hours=3))]
    none = place(CHANGED, STARTED, now=BEGUN + timedelta(minutes=30), window=W)
    assert isinstance(none, Unknown) and none.cause == "no-after-window"
    assert "0.5 h since its pods started" in none.reason


def test_the_next_nightly_plans_see_full_windows_within_the_slack() -> None:
    """Advice lands after a nightly plan; the next plan, a day after that one, sees less than a
    whole day after the rollout and warm-up: within FULL_SLACK it is still a full window, and
    the plan after it sees the second."""
    full = placed_at(BEGUN + W - FULL_SLACK)
    assert (full.provisional, len(full.after)) == (None, 1)
    short = placed_at(BEGUN + W - FULL_SLACK - timedelta(minutes=5))
    assert short.provisional is not None
    second = placed_at(BEGUN + 2 * W - FULL_SLACK)
    assert (second.provisional, second.first, len(second.after)) == (None, 1, 2)
    assert second.after[1] == (BEGUN + W, BEGUN + 2 * W - FULL_SLACK)


def test_the_rollout_comes_from_the_history_so_pod_turnover_starts_no_new_window() -> None:
    """kube-state-metrics' earliest start per step: the first step with every pod started after
    the change is the rollout. A node upgrade a day later replaces every pod; the live pods then
    all started late, but the windows stay where the history put them."""
    step = 300.0
    at = CHANGED.timestamp()
    old = at - 3 * 86400
    earliest = [(at + i * step, old if i < 4 else at + 100) for i in range(600)]
    upgraded = [CHANGED + DAY + timedelta(hours=3)]
    found = rollout(CHANGED, upgraded, earliest)
    assert found == CHANGED + timedelta(seconds=4 * step)
    # without the history the live pods decide, and the upgrade would move the window
    assert rollout(CHANGED, upgraded) == upgraded[0]


def test_without_history_a_pod_added_after_the_rollout_does_not_move_it() -> None:
    rolled = STARTED + ROLLOUT - timedelta(minutes=1)
    later = CHANGED + DAY
    assert rollout(CHANGED, [STARTED, rolled, later]) == rolled


def test_pods_from_before_the_change_give_no_after_window() -> None:
    found = rollout(CHANGED, [CHANGED - timedelta(minutes=1)])
    assert isinstance(found, Unknown) and "predate" in found.reason


def test_the_earlier_days_ran_the_previous_advice_alone() -> None:
    now = BEGUN + DAY
    placed = placed_at(now, previous_changed=CHANGED - 10 * DAY)
    assert len(placed.days[0]) == 9
    assert all(start >= CHANGED - 10 * DAY + WARM_UP for start, _ in placed.days[0])
    found = place(CHANGED, STARTED, now=now, window=W, previous_changed=CHANGED - 5 * DAY)
    assert isinstance(found, Unknown) and found.cause == "too-little-history"
    assert "4 earlier day(s) at the same hours since the previous advice took effect" in (
        found.reason
    )
    assert f"the test needs {MIN_DAYS}" in found.reason


def test_a_day_whose_pods_predate_the_previous_advice_is_left_out() -> None:
    previous = CHANGED - 12 * DAY
    placed = placed_at(BEGUN + DAY, previous_changed=previous)
    day = placed.days[0][-1]
    inside = day[0].timestamp() + 600
    assert ran_previous(day, [(inside, previous.timestamp() + 60)], previous)
    assert ran_previous(day, [], previous)  # no start times: not known, taken as yes
    assert not ran_previous(day, [(inside, previous.timestamp() - 3600)], previous)
    assert ran_previous(day, [(inside, 0.0)], None)


def test_a_window_shorter_than_the_slack_is_full_only_once_most_of_it_ran() -> None:
    """Twelve minutes after the change, a 5-minute window's pods have not even warmed up: no
    window lies in the future, none ends before it starts, and one is full only once three
    quarters of it ran (the slack is at most a quarter of the window)."""
    five = timedelta(minutes=5)
    early = place(CHANGED, STARTED, now=STARTED + timedelta(minutes=7), window=five)
    assert isinstance(early, Unknown) and early.cause == "no-after-window"
    now = BEGUN + 2 * five + timedelta(minutes=4)
    placed = placed_at(now, window=five)
    assert placed.after == [(BEGUN + five, BEGUN + 2 * five), (BEGUN + 2 * five, now)]
    assert placed.provisional is None
    for start, end in placed.after:
        assert start < end <= now
    short = placed_at(BEGUN + 2 * five + timedelta(minutes=3), window=five)
    assert short.after[-1][1] == BEGUN + 2 * five and short.first == 1


def test_an_hour_long_window_is_full_once_three_quarters_of_it_ran() -> None:
    hour = timedelta(hours=1)
    early = place(CHANGED, STARTED, now=BEGUN + timedelta(minutes=10), window=hour)
    assert isinstance(early, Unknown) and early.cause == "no-after-window"
    placed = placed_at(BEGUN + timedelta(minutes=45), window=hour)
    assert placed.after == [(BEGUN, BEGUN + timedelta(minutes=45))]
    assert placed.provisional is None

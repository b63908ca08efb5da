"""The retry bounds on a clock that moves only when the code sleeps: the backoff, the deadline,
the conflict loop and Retry-After."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from advisor.retry import (
    INTERACTIVE_UNREACHABLE_S,
    Conflict,
    Deadline,
    RetryPolicy,
    retry_after_seconds,
    until_no_conflict,
)
from tests.unit.cluster.fakes import FakeClock


class GaveUp(Exception):
    def __init__(self, conflicts: int, last: Conflict) -> None:
        super().__init__(f"{conflicts}: {last.message}")
        self.conflicts = conflicts
        self.last = last


def test_backoff_doubles_from_the_base_up_to_the_cap() -> None:
    policy = RetryPolicy()
    assert [policy.backoff(n) for n in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    custom = RetryPolicy(base_delay_s=0.1, max_delay_s=0.3)
    assert [custom.backoff(n) for n in range(4)] == pytest.approx([0.1, 0.2, 0.3, 0.3])


def test_interactive_gives_up_connecting_but_keeps_the_total_bound() -> None:
    policy = RetryPolicy.interactive(total_s=20.0)
    assert (policy.total_s, policy.unreachable_s) == (20.0, INTERACTIVE_UNREACHABLE_S)
    assert RetryPolicy().unreachable_s is None  # the Job's policy retries until total_s
    # the first two backoffs fit in the bound, the third does not: three attempts
    assert policy.backoff(0) + policy.backoff(1) < INTERACTIVE_UNREACHABLE_S
    assert policy.backoff(0) + policy.backoff(1) + policy.backoff(2) >= INTERACTIVE_UNREACHABLE_S


def test_the_deadline_counts_down_and_caps_each_request() -> None:
    clock = FakeClock()
    deadline = Deadline(clock.policy(total_s=30.0, request_timeout_s=10.0))
    assert (deadline.remaining(), deadline.request_timeout()) == (30.0, 10.0)
    clock.sleep(25.0)
    assert (deadline.remaining(), deadline.request_timeout()) == (5.0, 5.0)
    clock.sleep(10.0)
    # past the end: a request still gets a token timeout, never zero or negative
    assert deadline.remaining() == -5.0
    assert deadline.request_timeout() == 0.001


def test_until_no_conflict_retries_with_backoff_and_tells_each_attempt_its_count() -> None:
    clock = FakeClock()
    seen: list[int] = []
    logged: list[float] = []

    def attempt(conflicts: int) -> str | Conflict:
        seen.append(conflicts)
        return Conflict("changed") if conflicts < 3 else "written"

    result = until_no_conflict(
        attempt,
        deadline=Deadline(clock.policy()),
        give_up=GaveUp,
        on_conflict=lambda: logged.append(clock.now),
    )
    assert (result, seen) == ("written", [0, 1, 2, 3])
    assert clock.slept == [0.5, 1.0, 2.0]
    # the log line comes before each wait
    assert logged == [1000.0, 1000.5, 1001.5]


def test_until_no_conflict_gives_up_after_max_conflicts() -> None:
    clock = FakeClock()
    with pytest.raises(GaveUp) as caught:
        until_no_conflict(
            lambda n: Conflict(f"conflict {n}"),
            deadline=Deadline(clock.policy(max_conflicts=2)),
            give_up=GaveUp,
            on_conflict=lambda: None,
        )
    # two conflicts are retried; the third is one too many, raised without a wait
    assert (caught.value.conflicts, caught.value.last.message) == (3, "conflict 2")
    assert clock.slept == [0.5, 1.0]


def test_until_no_conflict_gives_up_when_the_wait_would_outlast_the_deadline() -> None:
    clock = FakeClock()
    with pytest.raises(GaveUp) as caught:
        until_no_conflict(
            lambda n: Conflict(),
            deadline=Deadline(clock.policy(total_s=2.0, max_conflicts=10)),
            give_up=GaveUp,
            on_conflict=lambda: None,
        )
    # 0.5 s and 1 s fit in 2 s; the next 2 s wait does not fit in the 0.5 s left
    assert (caught.value.conflicts, clock.slept) == (3, [0.5, 1.0])
    assert caught.value.last.message == "HTTP 409"


def test_a_first_answer_that_is_no_conflict_returns_at_once() -> None:
    clock = FakeClock()
    calls: list[int] = []
    assert (
        until_no_conflict(
            lambda n: calls.append(n) or None,
            deadline=Deadline(clock.policy()),
            give_up=GaveUp,
            on_conflict=lambda: calls.append(-1),
        )
        is None
    )
    assert (calls, clock.slept) == ([0], [])


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "3"}, 3.0),
        ({"Retry-After": " 12 "}, 12.0),
        ({"Retry-After": "0"}, 0.0),
        ({"Retry-After": "²"}, None),  # a digit to str.isdigit, not to float()
        ({"Retry-After": "-1"}, None),
        ({"Retry-After": "1.5"}, None),  # delta-seconds are whole
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": ""}, None),
        ({"Other": "3"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_in_seconds(headers: dict[str, str] | None, seconds: float | None) -> None:
    assert retry_after_seconds(headers) == seconds


def test_retry_after_as_an_http_date() -> None:
    later = datetime.now(timezone.utc) + timedelta(seconds=90)
    found = retry_after_seconds({"Retry-After": format_datetime(later, usegmt=True)})
    assert found is not None and 85.0 <= found <= 90.0  # the header has whole seconds
    earlier = datetime.now(timezone.utc) - timedelta(hours=1)
    assert retry_after_seconds({"Retry-After": format_datetime(earlier, usegmt=True)}) == 0.0

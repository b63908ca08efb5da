"""The one bounded 409 loop (advisor.retry.until_no_conflict) that the writer and the
cleanup hook share: it gives up after ``max_conflicts`` retries or at the deadline, and waits the
policy's backoff between attempts; cleanup, which used to re-read at once, now backs off too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.cluster import RetryPolicy, connect
from advisor.cluster.cleanup import AdviceDeleter
from advisor.errors import ConflictError
from advisor.recommend import render_configmap
from advisor.retry import Conflict, Deadline, until_no_conflict
from testkit.fakeapi.rbac import Rule
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer

NS, NAME = "ml", "resnet-thread-advice"


class FakeTime:
    """A clock that only the policy's sleep moves, so the test sees every wait and takes none."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def policy(time: FakeTime, *, total_s: float = 60.0, max_conflicts: int = 3) -> RetryPolicy:
    return RetryPolicy(
        total_s=total_s,
        base_delay_s=0.5,
        max_delay_s=8.0,
        max_conflicts=max_conflicts,
        sleep=time.sleep,
        clock=time.clock,
    )


def loop(deadline: Deadline, answers: list[object]) -> tuple[object, list[int], list[str]]:
    seen: list[int] = []
    logged: list[str] = []

    def attempt(conflicts: int) -> object:
        seen.append(conflicts)
        return answers.pop(0)

    result = until_no_conflict(
        attempt,
        deadline=deadline,
        give_up=lambda n, last: ConflictError(f"{n} conflicts, last: {last.message}"),
        on_conflict=lambda: logged.append("re-reading"),
    )
    return result, seen, logged


def test_conflicts_are_retried_after_the_policy_backoff_until_an_answer() -> None:
    time = FakeTime()
    result, seen, logged = loop(
        Deadline(policy(time)), [Conflict("a"), Conflict("b"), Conflict("c"), "written"]
    )
    assert result == "written"
    assert seen == [0, 1, 2, 3]  # each attempt is told how many conflicts came before
    assert time.sleeps == [0.5, 1.0, 2.0]  # RetryPolicy.backoff(0), (1), (2)
    assert logged == ["re-reading"] * 3


def test_it_gives_up_after_max_conflicts_retries_without_a_last_wait() -> None:
    time = FakeTime()
    answers: list[object] = [Conflict(f"changed {i}") for i in range(10)]
    with pytest.raises(ConflictError, match=r"^4 conflicts, last: changed 3$"):
        loop(Deadline(policy(time, max_conflicts=3)), answers)
    assert len(answers) == 6  # 1 attempt + 3 retries
    assert time.sleeps == [0.5, 1.0, 2.0]


def test_it_gives_up_when_the_wait_would_outlast_the_deadline() -> None:
    time = FakeTime()
    answers: list[object] = [Conflict() for _ in range(10)]
    with pytest.raises(ConflictError, match=r"^3 conflicts"):
        loop(Deadline(policy(time, total_s=2.0, max_conflicts=9)), answers)
    # waits of 0.5 and 1 s fit in 2 s; the third (2 s) would not
    assert time.sleeps == [0.5, 1.0]


# --------------------------------------------------------------------------------------------------
# the cleanup hook, against the fake API server


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    rules = [Rule(("",), ("configmaps",), ("get", "delete"), (NAME,))]
    with FakeApiServer(tmp_path, rules=rules) as server:
        server.put(render_configmap(recommendation(2, 1), NAME, NS))
        server.requests.clear()
        yield server


def always_changing(server: FakeApiServer) -> None:
    """Another writer (a CronJob run) updates the advice between each read and delete."""
    stored = server.get(NS, NAME)
    assert stored is not None
    stored["metadata"]["annotations"]["note"] = str(len(server.requests))
    server.put(stored)


def test_cleanup_backs_off_between_conflicts_and_gives_up_at_the_bound(
    api: FakeApiServer,
) -> None:
    time = FakeTime()
    api.before_write = always_changing
    deleter = AdviceDeleter(connect(api.kubeconfig), NAME, NS, policy=policy(time, max_conflicts=2))
    with pytest.raises(ConflictError, match="kept changing while deleting it; kept it"):
        deleter.delete_if_advice()
    assert [r.status for r in api.requests if r.method == "DELETE"] == [409, 409, 409]
    assert time.sleeps == [0.5, 1.0]  # it used to re-read at once
    assert api.get(NS, NAME) is not None


def test_cleanup_deletes_once_the_other_writer_has_finished(api: FakeApiServer) -> None:
    time = FakeTime()
    races = iter(range(2))

    def twice(server: FakeApiServer) -> None:
        if next(races, None) is not None:
            always_changing(server)

    api.before_write = twice
    outcome = AdviceDeleter(
        connect(api.kubeconfig), NAME, NS, policy=policy(time)
    ).delete_if_advice()
    assert outcome.action == "deleted"
    assert [r.status for r in api.requests if r.method == "DELETE"] == [409, 409, 200]
    assert time.sleeps == [0.5, 1.0]
    assert api.get(NS, NAME) is None

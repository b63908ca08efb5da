"""Bounded retries: a Job must finish (or fail clearly) even when the API server misbehaves.

Both outside systems the advisor talks to, the API server (``advisor.cluster``) and Prometheus
(``advisor.prometheus``), are retried under these policies, so a person waits the same bounds on
either.

Two kinds of caller wait on them. The Job's ``run`` is alone and patient: an API server that is
restarting comes back within a minute, and giving up early wastes the node it was scheduled on.
A person running ``status`` or ``cleanup`` is waiting: a kubeconfig pointing at the wrong port or
a cluster that is down will not answer in a minute either, so those commands stop after a few
seconds of failed connections, as kubectl does (``RetryPolicy.interactive``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TypeVar

T = TypeVar("T")

#: how long an interactive command keeps trying to connect: three attempts (backoff 0.5 s, 1 s)
#: fit, so a refused port ends in about 1.5 s and a blip of a second or two is still ridden out
INTERACTIVE_UNREACHABLE_S = 3.0


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying and how long one request may take.

    ``total_s`` bounds everything one operation does (all reads, writes and waits); each request
    gets at most ``request_timeout_s`` (connect and read), so a server that accepts the connection
    and never answers costs one timeout, not forever.
    """

    total_s: float = 60.0
    request_timeout_s: float = 10.0
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    max_conflicts: int = 5
    #: stop once connections have failed (refused, no route, name not resolved, connect timeout)
    #: for this long; None: retry them until ``total_s`` like any transient failure
    unreachable_s: float | None = None
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    @classmethod
    def interactive(cls, total_s: float = 60.0) -> RetryPolicy:
        """For commands a person waits on: an API server that cannot be connected to is given
        up after INTERACTIVE_UNREACHABLE_S; one that answers with 429 or 5xx is still retried
        for ``total_s`` (it is there, and busy)."""
        return cls(total_s=total_s, unreachable_s=INTERACTIVE_UNREACHABLE_S)

    def backoff(self, attempt: int) -> float:
        """Exponential: base, 2 x base, ... capped at max_delay_s (attempt counts from 0)."""
        return float(min(self.max_delay_s, self.base_delay_s * (2**attempt)))


class Deadline:
    """The time left for one operation under a policy."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.end = policy.clock() + policy.total_s

    def remaining(self) -> float:
        return self.end - self.policy.clock()

    def request_timeout(self) -> float:
        return max(0.001, min(self.policy.request_timeout_s, self.remaining()))


@dataclass(frozen=True)
class Conflict:
    """An attempt the API server answered with 409: the object changed since it was read."""

    message: str = "HTTP 409"


def until_no_conflict(
    attempt: Callable[[int], T | Conflict],
    *,
    deadline: Deadline,
    give_up: Callable[[int, Conflict], Exception],
    on_conflict: Callable[[], None],
) -> T:
    """``attempt`` (told how many conflicts came before) again until it answers anything but a
    Conflict: a 409 means someone else changed the object, so it is read and judged again.

    Each retry waits the policy's backoff first (a concurrent writer, such as a CronJob run,
    needs a moment to finish, and two clients retrying at once would collide again); past
    ``policy.max_conflicts``, or when the wait would outlast the deadline, ``give_up(conflicts,
    last)`` is raised. ``on_conflict`` runs before each wait (the caller's log line).
    """
    policy = deadline.policy
    conflicts = 0
    while True:
        outcome = attempt(conflicts)
        if not isinstance(outcome, Conflict):
            return outcome
        conflicts += 1
        delay = policy.backoff(conflicts - 1)
        if conflicts > policy.max_conflicts or delay >= deadline.remaining():
            raise give_up(conflicts, outcome)
        on_conflict()
        policy.sleep(delay)


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date), None when absent or unreadable."""
    if not headers:
        return None
    value = headers.get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # isdigit() alone passes "²": float() refuses it
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())

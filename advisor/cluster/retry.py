"""Bounded retries: a Job must finish (or fail clearly) even when the API server misbehaves."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime


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
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

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

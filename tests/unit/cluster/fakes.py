"""A clock that moves only when the code under test sleeps, and the raw answers the client's
methods return with ``_preload_content=False``: the retry loops run in microseconds and every
wait they take is recorded."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from advisor.cluster.config import Connection
from advisor.retry import RetryPolicy

#: a connection as the error messages name it; nothing here sends a request
CONNECTION = Connection(api_client=None, host="https://k8s.example:6443", source="/tmp/kubeconfig")


@dataclass
class FakeClock:
    now: float = 1000.0
    slept: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def policy(self, **fields: Any) -> RetryPolicy:
        return RetryPolicy(clock=self.clock, sleep=self.sleep, **fields)


@dataclass
class Raw:
    """What a client method returns with ``_preload_content=False``."""

    status: int
    data: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, status: int, body: Any) -> Raw:
        return cls(status, json.dumps(body).encode())

"""The Prometheus reader's own plumbing, over a client that records what it is asked: long spans
asked in pieces Prometheus answers, numbers only, and "Prometheus unavailable" said once."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from advisor.pipeline.production_source import MAX_STEPS, PrometheusSource
from advisor.prometheus import PrometheusUnavailable, Series, queries

AT = datetime(2026, 12, 1, tzinfo=timezone.utc)


@dataclass
class Settings:
    scope: tuple[Any, ...] = ()


@dataclass
class RecordingClient:
    settings: Settings = field(default_factory=Settings)
    asked: list[tuple[datetime, datetime]] = field(default_factory=list)
    down: bool = False
    instant: int = 0

    def query_range(self, expr: str, start: datetime, end: datetime, step: float) -> list[Series]:
        if self.down:
            raise PrometheusUnavailable("cannot reach Prometheus")
        self.asked.append((start, end))
        at = start.timestamp()
        points = [(at, 1.0), (at + step, math.nan), (at + 2 * step, math.inf)]
        return [Series({}, tuple(points)), Series({"pod": "b"}, ((at, 2.0),))]

    def query(self, expr: str, at: datetime) -> list[Any]:
        self.instant += 1
        if self.down:
            raise PrometheusUnavailable("cannot reach Prometheus")
        return []


def test_a_long_span_is_asked_in_pieces_prometheus_answers() -> None:
    client = RecordingClient()
    source = PrometheusSource(client, now=AT)  # type: ignore[arg-type]
    span = (AT - timedelta(days=100), AT)
    found = source._range("q", span)
    piece = timedelta(seconds=queries.STEP_S * MAX_STEPS)
    assert len(client.asked) == math.ceil((span[1] - span[0]) / piece)
    assert client.asked[0][0] == span[0] and client.asked[-1][1] == span[1]
    for (_, end), (start, _) in zip(client.asked, client.asked[1:], strict=False):
        assert start - end == timedelta(seconds=queries.STEP_S)  # no step asked twice
    assert all(end - start <= piece for start, end in client.asked)
    # summed over the series at each step, NaN and infinities left out
    assert found[0] == (span[0].timestamp(), 3.0)
    assert all(math.isfinite(v) for _, v in found)
    assert source.answered == len(client.asked)


def test_prometheus_unavailable_is_said_once() -> None:
    client = RecordingClient(down=True)
    source = PrometheusSource(client, now=AT)  # type: ignore[arg-type]
    assert source.throttling("ml") is None
    assert source.unavailable == "Prometheus unavailable: cannot reach Prometheus"
    assert source.throttling("other") is None
    assert client.instant == 1  # not asked again

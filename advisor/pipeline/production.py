"""Reading production: each consuming container's serving metrics from Prometheus, before the
advice's data last changed and after its pods started with it, judged by
``advisor.consumers.production``.

The windows: before is ``window`` up to ``data-changed-at``; after starts once every pod the API
server lists for the workload had started and ``WARM_UP`` more passed (caches, JIT, connection
pools), and lasts ``window`` or until now. A workload whose running pods started before the data
changed has no after yet: they may not run the advice.

Prometheus trouble never stops a command: a Prometheus that cannot be reached or refuses the
credentials makes every verdict ``unknown`` with the reason (asked once, then not again), and the
command logs ONE warning line at the end (``warn``); a latency query Prometheus refuses makes
that workload's verdict alone ``unknown``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from advisor.consumers.mounts import Mount
from advisor.consumers.production import Window, judge, unknown
from advisor.errors import Opt, UsageError
from advisor.models import Production
from advisor.prometheus import (
    PrometheusClient,
    PrometheusError,
    PrometheusUnavailable,
    QueryRefused,
    Settings,
    queries,
)
from advisor.recommend import ParsedAdvice
from advisor.recommend.metadata import ANNOTATION_PREFIX, parse_timestamp

log = logging.getLogger(__name__)
#: the workload annotation naming its latency query (PromQL, the p99 in seconds)
LATENCY_QUERY_ANNOTATION = ANNOTATION_PREFIX + "latency-query"
DEFAULT_WINDOW = timedelta(hours=24)
#: skipped after the last pod started with the advice
WARM_UP = timedelta(minutes=10)
#: an after-window shorter than this (or than ``window``, if shorter) is too little data
MIN_AFTER = timedelta(hours=1)
#: points the latency query is evaluated at per window
LATENCY_POINTS = 24
DEFAULT_TIMEOUT_S = 10.0


def prometheus_settings(
    url: str | None,
    *,
    token_file: Path | None = None,
    ca_file: Path | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Settings | None:
    """The checked settings (None without ``url``): bad input is a UsageError before anything
    is asked of the cluster."""
    if not url:
        if token_file or ca_file or headers:
            raise UsageError(
                Opt("prometheus_token_file"), ", ", Opt("prometheus_ca_file"), " and ",
                Opt("prometheus_header"), " need ", Opt("prometheus_url"),
            )  # fmt: skip
        return None
    if not url.startswith(("http://", "https://")):
        raise UsageError(Opt("prometheus_url"), f" {url!r}: must start with http:// or https://")
    for option, path in (("prometheus_token_file", token_file), ("prometheus_ca_file", ca_file)):
        if path is not None and not path.is_file():
            raise UsageError(Opt(option), f" {path}: no such file")
    for key in headers or {}:
        if not key or any(c in key for c in ":\r\n ") or not key.isascii():
            raise UsageError(Opt("prometheus_header"), f" {key!r}: not a header name")
    if not timeout_s > 0:
        raise UsageError(Opt("prometheus_timeout"), " must be more than 0 seconds")
    return Settings(
        url=url,
        token_file=token_file,
        ca_file=ca_file,
        headers=dict(headers or {}),
        timeout_s=timeout_s,
    )


@dataclass
class ProductionReader:
    """Verdicts for consuming containers, one Prometheus behind them."""

    client: PrometheusClient
    window: timedelta = DEFAULT_WINDOW
    now: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    #: why Prometheus answers nothing (set on the first such failure; nothing is asked after)
    unavailable: str | None = None
    #: latency queries refused, one line each, for the log
    refused: list[str] = field(default_factory=list)

    def judge(self, parsed: ParsedAdvice | None, mount: Mount) -> Production:
        """The verdict on ``mount``'s container for the advice it reads."""
        windows = self._windows(parsed, mount)
        if isinstance(windows, str):
            return unknown(windows)
        if self.unavailable is not None:
            return unknown(self.unavailable)
        changed, begun, end = windows
        workload = mount.workload
        target = queries.Container(
            namespace=workload.namespace,
            kind=workload.kind,
            workload=workload.name,
            container=mount.container_name,
            live=tuple(str((pod.get("metadata") or {}).get("name", "")) for pod in workload.pods),
        )
        template = workload.annotations.get(LATENCY_QUERY_ANNOTATION)
        latency = str(template) if template else None
        try:
            before = self._window(target, changed - self.window, changed, latency)
            after = self._window(target, begun, end, latency)
        except PrometheusUnavailable as exc:
            self.unavailable = f"Prometheus unavailable: {exc}"
            return unknown(self.unavailable)
        except _LatencyRefused as exc:
            self.refused.append(f"{workload.namespace}/{workload.ref}: {exc}")
            return judge(exc.before, Window(), latency_problem=f"the latency query failed: {exc}")
        except QueryRefused as exc:
            return unknown(f"Prometheus refused a query: {exc}")
        return judge(before, after)

    def _windows(
        self, parsed: ParsedAdvice | None, mount: Mount
    ) -> tuple[datetime, datetime, datetime] | str:
        """(data changed, after-window start, after-window end), or why there is none."""
        if parsed is None:
            return "the advice does not validate"
        changed = parsed.data_changed_at
        if changed is None:
            return "the advice records no data-changed-at (written by an older advisor)"
        starts = [_started(pod) for pod in mount.workload.pods]
        if any(start is None or start < changed for start in starts):
            return "its running pods predate the advice's data (no after-window yet)"
        begun = max([changed, *(s for s in starts if s is not None)]) + WARM_UP
        end = min(begun + self.window, self.now)
        needed = min(MIN_AFTER, self.window)
        if end - begun < needed:
            ran = max(timedelta(0), end - begun)
            return (
                f"too little data after the advice: {_hours(ran)} since its pods started "
                f"and warmed up (needs {_hours(needed)})"
            )
        return changed, begun, end

    def warn(self) -> None:
        """The one warning line for Prometheus trouble, and one per refused latency query."""
        if self.unavailable is not None:
            log.warning("%s; production verdicts are unknown", self.unavailable)
        for line in self.refused:
            log.warning("latency query of %s", line)

    def _window(
        self, target: queries.Container, start: datetime, end: datetime, latency: str | None
    ) -> Window:
        seconds = (end - start).total_seconds()
        figures = Window(
            throttled_periods=self._scalar(queries.throttled_periods(target, seconds), end),
            periods=self._scalar(queries.periods(target, seconds), end),
            cpu=self._scalar(queries.cpu_per_pod(target, seconds), end),
        )
        if latency is None:
            return figures
        step = max(60.0, seconds / LATENCY_POINTS)
        try:
            series = self.client.query_range(queries.latency(latency, target), start, end, step)
        except QueryRefused as exc:
            raise _LatencyRefused(str(exc), figures) from None
        points = [value for one in series for value in one.values]
        return Window(figures.throttled_periods, figures.periods, figures.cpu, points)

    def _scalar(self, expr: str, at: datetime) -> float | None:
        samples = [s.value for s in self.client.query(expr, at) if s.value == s.value]
        return sum(samples) if samples else None


class _LatencyRefused(PrometheusError):
    """A workload's own latency query was refused; the figures read so far go with it."""

    def __init__(self, message: str, figures: Window) -> None:
        super().__init__(message)
        self.before = figures


def _started(pod: dict[str, Any]) -> datetime | None:
    status = pod.get("status") or {}
    text = status.get("startTime") if isinstance(status, dict) else None
    return parse_timestamp(text) if isinstance(text, str) else None


def _hours(span: timedelta) -> str:
    return f"{span.total_seconds() / 3600:.1f} h"

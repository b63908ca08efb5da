"""Where production's samples come from: the ``ProductionSource`` that ``status`` and ``plan``
judge through, and the Prometheus reader that is one (``PrometheusSource``, built by
``production_source``).

For each consuming container it reads kube-state-metrics' earliest pod start (when the rollout
onto the advice was done, and whether each earlier day's pods ran the previous advice), then the
earlier days' span and the after-windows' span, sampled every ``queries.STEP``, and hands them to
``advisor.consumers.production_windows``, which places the windows, and
``advisor.consumers.production``, which holds every rule of the verdict.
A latency query must give one series (p99s do not add up).

Prometheus trouble never stops a command. A Prometheus that cannot be reached, refuses the
credentials, or answers nothing at all in time makes every verdict ``unknown`` with the reason
(asked once, then not again), and the command logs ONE warning line at the end (``warn``). One
query refused (400, 422), answered in part, or timed out while others were answered is that
consumer's ``unknown`` alone (a suggestions query's: that namespace's suggestions alone).
kube-state-metrics series that cannot be joined (no ``kube_pod_owner`` in a namespace, or its
labels renamed ``exported_namespace``) are detected once per namespace and named in one warning
line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Protocol

from advisor.consumers.mounts import Mount
from advisor.consumers.production import (
    Samples,
    refused,
    verdict,
    window_samples,
    with_missing_series,
)
from advisor.consumers.production_windows import (
    MAX_DAYS,
    WARM_UP,
    Unknown,
    finite,
    place,
    rollout,
    stride,
    unknown,
)
from advisor.keys import LATENCY_QUERY_ANNOTATION, LOAD_QUERY_ANNOTATION
from advisor.models import Production, WorkloadKind
from advisor.models.times import parse_timestamp
from advisor.prometheus import (
    PartialAnswer,
    PrometheusClient,
    PrometheusError,
    PrometheusUnavailable,
    QueryFailed,
    QueryRefused,
    QueryTimedOut,
    Settings,
    queries,
)
from advisor.prometheus.promql import Matcher
from advisor.recommend import ParsedAdvice
from advisor.recommend.previous import Previous

log = logging.getLogger(__name__)
DEFAULT_WINDOW = timedelta(hours=24)
#: consumers in a row whose queries timed out after which Prometheus counts as unavailable
TIMEOUTS_IN_A_ROW = 3
#: steps one range query asks for at most (Prometheus refuses more than 11,000 points a series)
MAX_STEPS = 10_000

#: per (pod, container): (throttled CFS periods, CFS periods) over the window
Throttling = dict[tuple[str, str], tuple[float, float]]


class ProductionSource(Protocol):
    """What ``status`` and ``plan`` ask of production, whatever holds the serving metrics."""

    window: timedelta
    now: datetime

    @property
    def unavailable(self) -> str | None:
        """Why nothing can be read (None: it can)."""

    def judge(
        self, parsed: ParsedAdvice | None, mount: Mount, previous: Previous | None = None
    ) -> Production:
        """The verdict on ``mount``'s container for the advice it reads (``previous``: the advice
        it replaced, whose start bounds the earlier days)."""

    def throttling(self, namespace: str) -> Throttling | None:
        """Every container's CFS figures over the last window in ``namespace`` (None: not
        read, and said why)."""

    def warn(self) -> None:
        """The warning lines for what went wrong while reading, once, at the end."""


def production_source(
    settings: Settings,
    window: timedelta | None = None,
    now: datetime | None = None,
    warm_up: timedelta | None = None,
) -> PrometheusSource:
    """The one reader a command builds over ``settings``."""
    return PrometheusSource(
        PrometheusClient(settings),
        window=window or DEFAULT_WINDOW,
        now=now or datetime.now(timezone.utc),
        warm_up=WARM_UP if warm_up is None else warm_up,
    )


@dataclass
class PrometheusSource:
    """Verdicts for consuming containers, one Prometheus behind them."""

    client: PrometheusClient
    window: timedelta = DEFAULT_WINDOW
    now: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    #: skipped after each rollout
    warm_up: timedelta = WARM_UP
    #: why Prometheus answers nothing (set on the first such failure; nothing is asked after)
    unavailable: str | None = None
    #: the workload's own queries refused, one line each, for the log
    refused: list[str] = field(default_factory=list)
    #: per namespace: why kube-state-metrics' owner series do not join (None: they do)
    owners: dict[str, str | None] = field(default_factory=dict)
    #: queries answered so far, and consumers in a row whose queries timed out
    answered: int = 0
    timeouts: int = 0

    @property
    def scope(self) -> Sequence[Matcher]:
        return self.client.settings.scope

    def judge(
        self, parsed: ParsedAdvice | None, mount: Mount, previous: Previous | None = None
    ) -> Production:
        if parsed is None:
            return unknown("invalid-advice", "the advice does not validate")
        changed = parsed.data_changed_at
        if changed is None:
            return unknown(
                "no-data-changed",
                "the advice records no data-changed-at (written by an older advisor)",
            )
        # a pod without a start time has not started: it runs nothing yet
        starts = [pod.started for pod in mount.workload.pods if pod.started is not None]
        live = rollout(changed, starts)
        if isinstance(live, Unknown):
            return live.production()
        if self.unavailable is not None:
            return unknown("unavailable", self.unavailable)
        workload = mount.workload
        target = queries.Container(
            namespace=workload.namespace,
            kind=workload.kind,
            workload=workload.name,
            container=mount.container_name,
            live=tuple(pod.metadata.name for pod in workload.pods),
            scope=tuple(self.scope),
        )
        own = {
            "latency": workload.annotations.get(LATENCY_QUERY_ANNOTATION),
            "load": workload.annotations.get(LOAD_QUERY_ANNOTATION),
        }
        templates = {name: str(text) for name, text in own.items() if text}
        previous_changed = None
        if previous is not None and previous.data_changed_at:
            previous_changed = parse_timestamp(previous.data_changed_at)
        try:
            self._check_owners(target)
            # as far back as the earliest day can lie
            reach = changed - (MAX_DAYS + 1) * stride(self.window)
            earliest = self._range(queries.earliest_start(target), (reach, self.now))
            rolled = rollout(changed, starts, earliest)
            if isinstance(rolled, Unknown):
                return rolled.production()
            placed = place(
                changed,
                rolled,
                now=self.now,
                window=self.window,
                previous_changed=previous_changed,
                warm_up=self.warm_up,
            )
            if isinstance(placed, Unknown):
                return placed.production()
            days, refused_days = self._samples(target, placed.days_span, templates)
            after, refused_after = self._samples(target, placed.after_span, templates)
        except PrometheusError as exc:
            return self._trouble(exc)
        self.timeouts = 0
        found = verdict(
            placed,
            days,
            after,
            earliest=earliest,
            latency="latency" in templates,
            load="load" in templates,
            previous_unknown=previous is not None and previous_changed is None,
            samples=window_samples(self.window, queries.STEP_SPAN, self.warm_up),
        )
        failed = refused_days or refused_after
        if failed is not None:
            self.refused.append(f"{workload.namespace}/{workload.ref}: {failed}")
            return refused(found, failed.name, str(failed))
        return with_missing_series(found, self.owners.get(target.namespace))

    def _trouble(self, exc: PrometheusError) -> Production:
        """The unknown verdict ``exc`` makes; whether Prometheus is asked again."""
        if isinstance(exc, QueryTimedOut):
            self.timeouts += 1
            if not self.answered or self.timeouts >= TIMEOUTS_IN_A_ROW:
                # nothing answered in time at all, or again and again: the server, not a query
                exc = PrometheusUnavailable(str(exc))
            else:
                return unknown("query-failed", f"a query timed out: {exc}")
        if isinstance(exc, PartialAnswer):
            return unknown("partial-answer", f"{exc}: not judged on part of it")
        if isinstance(exc, QueryFailed):
            return unknown("query-failed", f"Prometheus refused a query: {exc}")
        return unknown("unavailable", self._gone(exc))

    def _gone(self, exc: PrometheusError) -> str:
        """Prometheus answers nothing: said once, asked nothing more."""
        self.unavailable = f"Prometheus unavailable: {exc}"
        return self.unavailable

    def warn(self) -> None:
        if self.unavailable is not None:
            log.warning("%s; production verdicts are unknown", self.unavailable)
        for line in self.refused:
            log.warning("query of %s", line)
        problems = {ns: why for ns, why in self.owners.items() if why}
        if problems:
            log.warning(
                "kube-state-metrics: %s; pods gone before now are not counted, so verdicts "
                "there may be unknown",
                "; ".join(f"{why} (namespace {ns})" for ns, why in sorted(problems.items())),
            )

    def throttling(self, namespace: str) -> Throttling | None:
        if self.unavailable is not None:
            return None
        seconds = self.window.total_seconds()
        try:
            throttled, periods = (
                self.client.query(
                    queries.namespace_by_pod(metric, namespace, seconds, self.scope), self.now
                )
                for metric in (queries.THROTTLED, queries.PERIODS)
            )
        except QueryFailed as exc:
            # this namespace's query alone (a timeout, a 422, a partial answer): the next
            # namespace's may be answered
            log.warning("no suggestions in namespace %s: %s", namespace, exc)
            return None
        except PrometheusError as exc:
            self._gone(exc)
            return None
        totals: dict[tuple[str, str], list[float]] = {}
        for samples, index in ((throttled, 0), (periods, 1)):
            for sample in samples:
                if not finite([(0.0, sample.value)]):
                    continue
                key = (sample.labels.get("pod", ""), sample.labels.get("container", ""))
                totals.setdefault(key, [0.0, 0.0])[index] += sample.value
        return {key: (t, p) for key, (t, p) in totals.items()}

    def _check_owners(self, target: queries.Container) -> None:
        """Whether kube-state-metrics' owner series join in the target's namespace (once)."""
        if target.kind is WorkloadKind.POD or target.namespace in self.owners:
            return
        own = self._instant(queries.owner_series(target.namespace, self.scope), self.now)
        why = None
        if not own:
            renamed = self._instant(
                queries.owner_series(target.namespace, self.scope, "exported_namespace"),
                self.now,
            )
            why = (
                "kube_pod_owner's namespace label is renamed exported_namespace (scrape "
                "kube-state-metrics with honor_labels)"
                if renamed
                else "no kube_pod_owner series (is kube-state-metrics scraped?)"
            )
        self.owners[target.namespace] = why

    def _samples(
        self,
        target: queries.Container,
        span: tuple[datetime, datetime],
        templates: Mapping[str, str],
    ) -> tuple[Samples, _OwnQueryRefused | None]:
        """The CFS and CPU samples over ``span``, and the workload's own queries' (second: the
        own query refused, if one was)."""
        found = {
            "throttled": self._range(queries.throttled_periods(target), span),
            "periods": self._range(queries.periods(target), span),
            "cpu": self._range(queries.cpu_per_pod(target), span),
        }
        failed = None
        for name, template in templates.items():
            try:
                # latencies do not add up: one series per pod or cluster summed would read a
                # scale-up as a regression, so the query must aggregate them itself
                found["p99" if name == "latency" else "load"] = self._range(
                    queries.templated(template, target), span, one_series=name == "latency"
                )
            except QueryRefused as exc:
                failed = failed or _OwnQueryRefused(name, str(exc))
        return Samples(**found), failed

    def _range(
        self, expr: str, span: tuple[datetime, datetime], *, one_series: bool = False
    ) -> list[tuple[float, float]]:
        """The answer's points, summed over its series at each step, numbers only
        (``one_series``: more than one series is refused, ``QueryRefused``), asked in pieces
        Prometheus answers."""
        start, end = span
        summed: dict[float, float] = {}
        piece = timedelta(seconds=queries.STEP_S * MAX_STEPS)
        while start < end:
            until = min(end, start + piece)
            series = self.client.query_range(expr, start, until, queries.STEP_S)
            self.answered += 1
            if one_series and len(series) > 1:
                raise QueryRefused(f"the query gave {len(series)} series; it must give one")
            for one in series:
                for at, value in finite(one.points):
                    summed[at] = summed.get(at, 0.0) + value
            start = until + queries.STEP_SPAN
        return sorted(summed.items())

    def _instant(self, expr: str, at: datetime) -> list[float]:
        samples = [
            value for _, value in finite((0.0, s.value) for s in self.client.query(expr, at))
        ]
        self.answered += 1
        return samples


class _OwnQueryRefused(PrometheusError):
    """A workload's own query (latency, load) was refused (its verdict alone is unknown)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name

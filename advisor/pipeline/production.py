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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.consumers.mounts import Mount, Workload, mounts
from advisor.consumers.mounts import workloads as mounted_workloads
from advisor.consumers.production import MIN_PERIODS, Window, judge, unknown
from advisor.errors import InvalidAdviceError, Opt, UsageError
from advisor.fleet.decide import Planned, applying
from advisor.fleet.optin import OptInError, may_revert
from advisor.fleet.production import (
    DEFAULT_MAX_REVERTS,
    RevertBudget,
    Throttled,
    revert,
    suggestions,
)
from advisor.keys import LATENCY_QUERY_ANNOTATION
from advisor.models import Production, WorkloadKind, WorkloadRef
from advisor.models.kube import KubePod, mapping
from advisor.models.plan import (
    Calibrate,
    ConsumerVerdict,
    Fits,
    NotReverted,
    NotWrittenBack,
    PlanReason,
    Reverted,
    WrittenBack,
)
from advisor.models.times import parse_timestamp
from advisor.prometheus import (
    PrometheusClient,
    PrometheusError,
    PrometheusUnavailable,
    QueryRefused,
    Settings,
    queries,
)
from advisor.recommend import ParsedAdvice, parse_configmap
from advisor.recommend.previous import previous_advice, reverted_configmap
from advisor.render.plan import plan_reason_text

if TYPE_CHECKING:
    from advisor.cluster import Connection
    from advisor.cluster.inventory import Inventory
    from advisor.retry import RetryPolicy

log = logging.getLogger(__name__)
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


def check_suggest_throttled(share: float) -> None:
    """The throttled share above which a container not opted in is suggested: (0, 1]."""
    if not 0 < share <= 1:
        raise UsageError(Opt("suggest_throttled"), " must be above 0% and at most 100%")


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
            live=tuple(str(pod.metadata.raw.get("name", "")) for pod in workload.pods),
        )
        template = workload.annotations.get(LATENCY_QUERY_ANNOTATION)
        latency = str(template) if template else None
        try:
            before = self._window(target, changed - self.window, changed)
            after = self._window(target, begun, end)
            if latency is not None:
                before = self._with_p99(before, latency, target, changed - self.window, changed)
                after = self._with_p99(after, latency, target, begun, end)
        except PrometheusUnavailable as exc:
            self.unavailable = f"Prometheus unavailable: {exc}"
            return unknown(self.unavailable)
        except _LatencyRefused as exc:
            self.refused.append(f"{workload.namespace}/{workload.ref}: {exc}")
            return judge(before, after, latency_problem=f"the latency query failed: {exc}")
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
        # a pod without a start time has not started: it runs nothing yet
        starts = [s for s in map(_started, mount.workload.pods) if s is not None]
        if any(start < changed for start in starts):
            return "its running pods predate the advice's data (no after-window yet)"
        begun = max([changed, *starts]) + WARM_UP
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

    def _window(self, target: queries.Container, start: datetime, end: datetime) -> Window:
        """The CFS and CPU figures of one window, read at its end over its length."""
        seconds = (end - start).total_seconds()
        return Window(
            throttled_periods=self._scalar(queries.throttled_periods(target, seconds), end),
            periods=self._scalar(queries.periods(target, seconds), end),
            cpu=self._scalar(queries.cpu_per_pod(target, seconds), end),
        )

    def _with_p99(
        self,
        figures: Window,
        latency: str,
        target: queries.Container,
        start: datetime,
        end: datetime,
    ) -> Window:
        """``figures`` with the workload's latency query over the window (LATENCY_POINTS)."""
        step = max(60.0, (end - start).total_seconds() / LATENCY_POINTS)
        try:
            series = self.client.query_range(queries.latency(latency, target), start, end, step)
        except QueryRefused as exc:
            raise _LatencyRefused(str(exc)) from None
        points = [value for one in series for value in one.values]
        return replace(figures, p99=points)

    def _scalar(self, expr: str, at: datetime) -> float | None:
        samples = [s.value for s in self.client.query(expr, at) if s.value == s.value]
        return sum(samples) if samples else None


class _LatencyRefused(PrometheusError):
    """A workload's own latency query was refused (its verdict alone is unknown)."""


def _started(pod: KubePod) -> datetime | None:
    text = mapping(pod.raw.get("status")).get("startTime")
    return parse_timestamp(text) if isinstance(text, str) else None


def _hours(span: timedelta) -> str:
    return f"{span.total_seconds() / 3600:.1f} h"


@dataclass(frozen=True)
class PlanProduction:
    """What ``plan`` asks of production: the reader, the throttled share above which a
    container that is not opted in is suggested, and the reverts it may still decide."""

    reader: ProductionReader
    suggest_throttled: float
    budget: RevertBudget = field(default_factory=RevertBudget)


def plan_production(
    wanted: PlanProduction,
    decisions: list[Planned],
    configmaps: Mapping[str, Mapping[str, Any]],
    *,
    namespace: str,
    inventory: Inventory | None,
    apply: bool,
    write: Callable[[dict[str, Any]], bool],
) -> list[Planned]:
    """``decisions`` with each advice that fits or would be calibrated judged in production,
    once per ConfigMap from every container reading it (``revert`` where it regressed and may be
    undone, ``advisor.fleet.production``; with ``apply`` written back through ``write``, which
    answers False when the ConfigMap changed since it was read), then the ``suggested``
    containers. ``inventory`` None: the workloads and pods could not be listed, so nothing is
    judged and nothing suggested."""
    reader = wanted.reader
    if inventory is None:
        return decisions
    found = mounted_workloads(inventory.workloads, inventory.pods)
    containers = {(m.workload.ref, m.container_name): m for m in _mounts(found)}
    readers = mounts(found)
    groups: dict[str, list[int]] = {}
    for index, decision in enumerate(decisions):
        if _judged(decision) and decision.configmap in configmaps:
            groups.setdefault(str(decision.configmap), []).append(index)
    out = list(decisions)
    for name, indices in groups.items():
        obj = configmaps[name]
        planned = [decisions[i] for i in indices]
        consumers = _consumers(planned, containers, readers.get((namespace, name), []))
        if not consumers:
            continue
        try:
            parsed: ParsedAdvice | None = parse_configmap(dict(obj), "ConfigMap")
        except InvalidAdviceError:
            parsed = None
        verdicts = [
            ConsumerVerdict(m.workload.ref, m.container_name, reader.judge(parsed, m))
            for m in consumers
        ]
        opted_out, problem = _opted_out(planned, consumers)
        outcome = revert(
            verdicts,
            previous_advice(obj),
            opted_out=opted_out,
            opt_out_problem=problem,
            confounded=[c for d in planned for c in _calibrate_cause(d, "changed")],
            budget=wanted.budget,
        )
        judged = [judged_decision(d, outcome) for d in planned]
        if isinstance(outcome, Reverted) and apply:
            judged = _write_back(judged, planned, dict(obj), reader.now, write)
        for index, decision in zip(indices, judged, strict=True):
            out[index] = decision
    opted_in = {decision.workload for decision in decisions}
    return out + _suggested(wanted, namespace, inventory, opted_in)


def _judged(decision: Planned) -> bool:
    """A decision production may turn into a revert: its advice fits, or would be calibrated
    again (not one whose calibration is running or failed: that Job's outcome comes first)."""
    cause = decision.reason.cause
    return isinstance(cause, Fits) or (
        decision.verdict == "calibrate" and isinstance(cause, Calibrate)
    )


def _calibrate_cause(decision: Planned, what: str) -> tuple[str, ...]:
    """The calibration's ``differences`` or ``changed`` (none for an advice that fits)."""
    cause = decision.reason.cause
    return tuple(getattr(cause, what)) if isinstance(cause, Calibrate) else ()


def _consumers(
    planned: list[Planned],
    containers: Mapping[tuple[WorkloadRef, str], Mount],
    readers: list[Mount],
) -> list[Mount]:
    """Every container of the advice: the opted-in ones decided for (whatever they mount: the
    ConfigMap may be named by annotation), then every other container that reads it."""
    out: dict[tuple[WorkloadRef, str], Mount] = {}
    for decision in planned:
        mount = containers.get((decision.workload, decision.container or ""))
        if mount is not None:
            out.setdefault((decision.workload, decision.container or ""), mount)
    for mount in readers:
        out.setdefault((mount.workload.ref, mount.container_name), mount)
    return list(out.values())


def _opted_out(
    planned: list[Planned], consumers: list[Mount]
) -> tuple[list[WorkloadRef], str | None]:
    """The workloads among the advice's consumers that opted out of reverts, and the first
    annotation that cannot be read as allowing one (a consumer not decided for is read here)."""
    decided = {d.workload: d.revert for d in planned}
    refs: list[WorkloadRef] = []
    problem = None
    for mount in consumers:
        ref = mount.workload.ref
        if ref in refs:
            continue
        try:
            allowed = decided[ref] if ref in decided else may_revert(mount.workload.annotations)
        except OptInError as exc:
            problem = problem or f"{ref}: {exc}"
            continue
        if not allowed:
            refs.append(ref)
    return refs, problem


def judged_decision(decision: Planned, outcome: Reverted | NotReverted | None) -> Planned:
    """``decision`` as production makes it: ``revert`` (its Job left to the next plan, which
    calibrates again where it would have), a regression left as it is named in its reason, or
    the same decision."""
    if isinstance(outcome, Reverted):
        then = _calibrate_cause(decision, "differences")
        return replace(
            decision,
            verdict="revert",
            reason=PlanReason(replace(outcome, then=then)),
            job_name=None,
        )
    if isinstance(outcome, NotReverted):
        return applying(decision, outcome)
    return decision


def _write_back(
    judged: list[Planned],
    planned: list[Planned],
    obj: dict[str, Any],
    now: datetime,
    write: Callable[[dict[str, Any]], bool],
) -> list[Planned]:
    """The advice's previous one written back once, for every decision reading it; when the
    ConfigMap changed since it was read, each decision is what it was, saying so."""
    previous = previous_advice(obj)
    assert previous is not None
    reason = plan_reason_text(judged[0].reason)
    back = reverted_configmap(obj, previous, now=now, reason=reason)
    if write(back):
        return [applying(decision, WrittenBack()) for decision in judged]
    return [
        replace(
            applying(decision, NotWrittenBack(), verdict=before.verdict), job_name=before.job_name
        )
        for decision, before in zip(judged, planned, strict=True)
    ]


def _mounts(found: list[Workload]) -> list[Mount]:
    """Every container of the workloads, whatever it reads (a revert judges the container the
    plan decided for; the ConfigMap is the decision's)."""
    return [
        Mount(workload, container, "", optional=False)
        for workload in found
        for container in workload.pod_spec.containers
    ]


def _suggested(
    wanted: PlanProduction, namespace: str, inventory: Inventory, opted_in: set[WorkloadRef]
) -> list[Planned]:
    """The containers not opted in whose pods were throttled above the threshold over the last
    window (pods the API server lists now, matched by name)."""
    reader = wanted.reader
    if reader.unavailable is not None:
        return []
    seconds = reader.window.total_seconds()
    try:
        throttled = reader.client.query(
            queries.namespace_by_pod(queries.THROTTLED, namespace, seconds), reader.now
        )
        periods = reader.client.query(
            queries.namespace_by_pod(queries.PERIODS, namespace, seconds), reader.now
        )
    except PrometheusError as exc:
        reader.unavailable = f"Prometheus unavailable: {exc}"
        return []
    owner = {
        str(pod.metadata.raw.get("name")): workload
        for workload in mounted_workloads(inventory.workloads, inventory.pods)
        if workload.kind is not WorkloadKind.POD and workload.ref not in opted_in
        for pod in workload.pods
    }
    totals: dict[tuple[WorkloadRef, str], list[float]] = {}
    for samples, index in ((throttled, 0), (periods, 1)):
        for sample in samples:
            workload = owner.get(sample.labels.get("pod", ""))
            if workload is None or sample.value != sample.value:
                continue
            key = (workload.ref, sample.labels.get("container", ""))
            totals.setdefault(key, [0.0, 0.0])[index] += sample.value
    found = [
        Throttled(ref, container, share[0] / share[1])
        for (ref, container), share in totals.items()
        if share[1] >= MIN_PERIODS
    ]
    return suggestions(
        found, threshold=wanted.suggest_throttled, window=_span(reader.window), namespace=namespace
    )


def _span(window: timedelta) -> str:
    hours = window.total_seconds() / 3600
    return f"{hours:g}h"


def judged_plans(
    settings: Settings,
    decisions: list[Planned],
    configmaps: Mapping[str, Mapping[str, Mapping[str, Any]]],
    *,
    namespace: str | None,
    connection: Connection,
    policy: RetryPolicy,
    apply: bool,
    window: timedelta | None,
    suggest_throttled: float,
    now: datetime,
    max_reverts: int = DEFAULT_MAX_REVERTS,
) -> list[Planned]:
    """``plan_production`` against the cluster, for each namespace planned (``configmaps`` by
    namespace, then by name; ``namespace`` None: the decisions name theirs), in the decisions'
    order: each namespace's workloads and pods listed (a Role without them costs the verdicts,
    with one warning, never the plan), reverts written with ``apply``, and one warning line for
    Prometheus trouble, whatever the number of namespaces."""
    from advisor.cluster.inventory import list_inventory
    from advisor.cluster.revert import replace_configmap
    from advisor.errors import AdvisorError

    reader = ProductionReader(PrometheusClient(settings), window=window or DEFAULT_WINDOW, now=now)
    wanted = PlanProduction(reader, suggest_throttled, RevertBudget(max_reverts))
    by_namespace: dict[str, list[Planned]] = {}
    for decision in decisions:
        by_namespace.setdefault(decision.namespace or namespace or "", []).append(decision)
    out: list[Planned] = []
    unlisted: dict[str, str] = {}
    for where in dict.fromkeys([*by_namespace, *configmaps]):
        try:
            inventory: Inventory | None = list_inventory(connection, where, policy)
        except AdvisorError as exc:
            unlisted[where] = str(exc)
            inventory = None

        def write(obj: dict[str, Any], where: str = where) -> bool:
            return replace_configmap(connection, where, obj, policy)

        out += plan_production(
            wanted,
            by_namespace.get(where, []),
            configmaps.get(where, {}),
            namespace=where,
            inventory=inventory,
            apply=apply,
            write=write,
        )
    if unlisted:
        first = next(iter(unlisted.values()))
        log.warning(
            "production not judged in %s: the workloads and pods could not be listed (%s)",
            ", ".join(unlisted),
            first,
        )
    reader.warn()
    return out

"""Reading production: each consuming container's serving metrics from Prometheus, in a window
after its pods started with the advice and one at the same hours before the advice's data
changed (placed by ``advisor.consumers.production.place``), sampled every ``queries.STEP`` and
judged by ``advisor.consumers.production.judge``.

The before-window is tried a week back first: where Prometheus holds too little there of what
decides the verdict (the latency samples where the workload names a latency query, else the CFS
periods), the days-back placement is read instead. A latency query must give one series (p99s do
not add up); negative samples of the workload's own queries are left out.

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
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.consumers.mounts import Mount, mounts
from advisor.consumers.mounts import workloads as mounted_workloads
from advisor.consumers.production import (
    MIN_PERIODS,
    MIN_SAMPLES,
    Unknown,
    Window,
    Windows,
    cfs_steps,
    judge,
    place,
    ran_previous,
)
from advisor.errors import AdvisorError, InvalidAdviceError, Opt, UsageError
from advisor.fleet.decide import Planned, applying
from advisor.fleet.optin import OptInError, may_revert
from advisor.fleet.production import (
    DEFAULT_MAX_REVERTS,
    RevertBudget,
    Throttled,
    revert,
    suggestions,
)
from advisor.keys import LATENCY_QUERY_ANNOTATION, LOAD_QUERY_ANNOTATION
from advisor.models import Production, WorkloadKind, WorkloadRef
from advisor.models.kube import KubeWorkload, mapping
from advisor.models.plan import (
    Calibrate,
    ConsumerVerdict,
    Fits,
    NotReverted,
    NotWrittenBack,
    PlanReason,
    Reverted,
    SpecDifference,
    Unreadable,
    WrittenBack,
)
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
from advisor.prometheus.promql import Matcher, parse_matchers
from advisor.recommend import ParsedAdvice, parse_configmap
from advisor.recommend.previous import Previous, previous_advice, reverted_configmap
from advisor.render.plan import plan_reason_text

if TYPE_CHECKING:
    from advisor.cluster import Connection
    from advisor.cluster.inventory import Inventory
    from advisor.retry import RetryPolicy

log = logging.getLogger(__name__)
DEFAULT_WINDOW = timedelta(hours=24)
DEFAULT_TIMEOUT_S = 10.0
#: consumers in a row whose queries timed out after which Prometheus counts as unavailable
TIMEOUTS_IN_A_ROW = 3
#: the causes of a verdict the rank test decided
JUDGED = ("p99", "throttling")


def prometheus_settings(
    url: str | None,
    *,
    token_file: Path | None = None,
    ca_file: Path | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    selector: str | None = None,
) -> Settings | None:
    """The checked settings (None without ``url``): bad input is a UsageError before anything
    is asked of the cluster."""
    if not url:
        if token_file or ca_file or headers or selector:
            raise UsageError(
                Opt("prometheus_token_file"), ", ", Opt("prometheus_ca_file"), ", ",
                Opt("prometheus_header"), " and ", Opt("prometheus_selector"), " need ",
                Opt("prometheus_url"),
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
        scope=checked_selector(selector),
    )


def checked_selector(text: str | None) -> tuple[Matcher, ...]:
    """``--prometheus-selector``'s matchers (none for an empty value), or a UsageError."""
    if not text or not text.strip():
        return ()
    inner = text.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1]
    try:
        return parse_matchers(inner)
    except ValueError as exc:
        raise UsageError(Opt("prometheus_selector"), f" {text!r}: {exc}") from None


@dataclass
class ProductionReader:
    """Verdicts for consuming containers, one Prometheus behind them."""

    client: PrometheusClient
    window: timedelta = DEFAULT_WINDOW
    now: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
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
        """The verdict on ``mount``'s container for the advice it reads (``previous``: the
        advice it replaced, whose start bounds the before-window)."""
        placed = self._windows(parsed, mount, previous)
        if isinstance(placed, Unknown):
            return placed.production()
        if self.unavailable is not None:
            return Unknown("unavailable", self.unavailable).production()
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
        read = self._read(target, placed, templates, f"{workload.namespace}/{workload.ref}")
        if isinstance(read, Production):
            return read
        windows, before, after = read
        self.timeouts = 0
        found = judge(
            before,
            after,
            latency="latency" in templates,
            load="load" in templates,
            provisional=windows.provisional,
        )
        if previous is not None and windows.previous_changed is None and found.cause in JUDGED:
            # without the previous advice's start nothing bounds the before-window: its pods may
            # not have run the advice a revert would restore
            return found.model_copy(
                update={
                    "verdict": "unknown",
                    "cause": "not-previous",
                    "reason": f"{found.reason}; not judged: the previous advice's start is "
                    "unknown (it records no data-changed-at), so a revert may not restore what "
                    "was measured",
                    "p_value": None,
                    "provisional": False,
                }
            )
        return self._named_owners(found, target)

    def _read(
        self,
        target: queries.Container,
        placed: list[Windows],
        templates: Mapping[str, str],
        who: str,
    ) -> tuple[Windows, Window, Window] | Production:
        """The two windows' samples, or the unknown verdict Prometheus' trouble makes (``who``:
        the workload, for the log)."""
        before = after = Window()
        try:
            self._check_owners(target)
            windows, before, refused = self._before(target, placed, templates)
            if windows.previous_changed is not None:
                starts = self._range(queries.earliest_start(target), windows.before)
                stale = ran_previous(windows, min((v for _, v in starts), default=None))
                if stale is not None:
                    return stale.production()
            after, refused_after = self._window(target, windows.after, templates)
            refused = refused or refused_after
            if refused is not None:
                # raised once both windows are read: what was read is still shown
                raise refused
        except PrometheusError as exc:
            return self._trouble(exc, before, after, who)
        return windows, before, after

    def _trouble(self, exc: PrometheusError, before: Window, after: Window, who: str) -> Production:
        """The unknown verdict ``exc`` makes; whether Prometheus is asked again."""
        if isinstance(exc, QueryTimedOut):
            self.timeouts += 1
            if not self.answered or self.timeouts >= TIMEOUTS_IN_A_ROW:
                # nothing answered in time at all, or again and again: the server, not a query
                exc = PrometheusUnavailable(str(exc))
            else:
                return Unknown("query-failed", f"a query timed out: {exc}").production()
        if isinstance(exc, _OwnQueryRefused):
            self.refused.append(f"{who}: {exc}")
            # what was read is still shown; the verdict is not had without the query
            shown = judge(before, after)
            return shown.model_copy(
                update={
                    "verdict": "unknown",
                    "cause": "query-failed",
                    "reason": f"the {exc.name} query failed: {exc}",
                    "p_value": None,
                }
            )
        if isinstance(exc, PartialAnswer):
            return Unknown("partial-answer", f"{exc}: not judged on part of it").production()
        if isinstance(exc, QueryFailed):
            return Unknown("query-failed", f"Prometheus refused a query: {exc}").production()
        self.unavailable = f"Prometheus unavailable: {exc}"
        return Unknown("unavailable", self.unavailable).production()

    def _windows(
        self, parsed: ParsedAdvice | None, mount: Mount, previous: Previous | None
    ) -> list[Windows] | Unknown:
        """The placements to try, or why there is none."""
        if parsed is None:
            return Unknown("invalid-advice", "the advice does not validate")
        changed = parsed.data_changed_at
        if changed is None:
            return Unknown(
                "no-data-changed",
                "the advice records no data-changed-at (written by an older advisor)",
            )
        # a pod without a start time has not started: it runs nothing yet
        starts = [pod.started for pod in mount.workload.pods if pod.started is not None]
        before_changed = None
        if previous is not None and previous.data_changed_at:
            before_changed = parse_timestamp(previous.data_changed_at)
        return place(
            changed, starts, now=self.now, window=self.window, previous_changed=before_changed
        )

    def _before(
        self, target: queries.Container, placed: list[Windows], templates: Mapping[str, str]
    ) -> tuple[Windows, Window, _OwnQueryRefused | None]:
        """The first placement whose before-window holds enough of what decides the verdict
        (else the last one): the latency samples where a latency query is named (a container
        without a CPU limit has no CFS periods at all), else the CFS periods."""
        for i, windows in enumerate(placed):
            before, refused = self._window(target, windows.before, templates)
            if "latency" in templates:
                enough = len(before.p99) >= MIN_SAMPLES
            else:
                enough = before.periods >= MIN_PERIODS and len(before.cfs) >= MIN_SAMPLES
            if enough or refused is not None or i == len(placed) - 1:
                return windows, before, refused
        raise AssertionError("place() gives at least one placement")

    def warn(self) -> None:
        """The one warning line for Prometheus trouble, one per refused query of a workload's,
        and one for kube-state-metrics series that do not join."""
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

    def _named_owners(self, found: Production, target: queries.Container) -> Production:
        """``found`` with the kube-state-metrics problem named, where data was missing."""
        why = self.owners.get(target.namespace)
        if why is None or found.cause != "too-little-data":
            return found
        return found.model_copy(update={"reason": f"{found.reason}; {why}"})

    def _window(
        self,
        target: queries.Container,
        span: tuple[datetime, datetime],
        templates: Mapping[str, str],
    ) -> tuple[Window, _OwnQueryRefused | None]:
        """The CFS and CPU samples of one window, and the workload's own queries' (second: the
        own query refused, if one was)."""
        throttled = self._range(queries.throttled_periods(target), span)
        periods = self._range(queries.periods(target), span)
        cpu = self._range(queries.cpu_per_pod(target), span)
        found = Window(cfs=cfs_steps(throttled, periods), cpu=[v for _, v in cpu])
        try:
            for name, template in templates.items():
                found = self._with_own(found, name, template, target, span)
        except _OwnQueryRefused as exc:
            return found, exc
        return found, None

    def _with_own(
        self,
        figures: Window,
        name: str,
        template: str,
        target: queries.Container,
        span: tuple[datetime, datetime],
    ) -> Window:
        """``figures`` with the workload's own ``name`` query (latency, load) over the window."""
        try:
            # latencies do not add up: one series per pod or cluster summed would read a
            # scale-up as a regression, so the query must aggregate them itself
            points = self._range(
                queries.templated(template, target), span, one_series=name == "latency"
            )
        except QueryRefused as exc:
            raise _OwnQueryRefused(name, str(exc)) from None
        # a negative rate or latency (deriv, a counter reset) is no sample: the figures are >= 0
        values = [value for _, value in points if value >= 0]
        return replace(figures, p99=values) if name == "latency" else replace(figures, load=values)

    def _range(
        self, expr: str, span: tuple[datetime, datetime], *, one_series: bool = False
    ) -> list[tuple[float, float]]:
        """The answer's points, summed over its series at each step, finite values only
        (``one_series``: more than one series is refused, ``QueryRefused``)."""
        start, end = span
        series = self.client.query_range(expr, start, end, queries.STEP_S)
        self.answered += 1
        if one_series and len(series) > 1:
            raise QueryRefused(f"the query gave {len(series)} series; it must give one")
        summed: dict[float, float] = {}
        for one in series:
            for at, value in one.points:
                if math.isfinite(value):
                    summed[at] = summed.get(at, 0.0) + value
        return sorted(summed.items())

    def _instant(self, expr: str, at: datetime) -> list[float]:
        samples = [s.value for s in self.client.query(expr, at) if s.value == s.value]
        self.answered += 1
        return samples


class _OwnQueryRefused(PrometheusError):
    """A workload's own query (latency, load) was refused (its verdict alone is unknown)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


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
        previous = previous_advice(obj)
        verdicts = [
            ConsumerVerdict(m.workload.ref, m.container_name, reader.judge(parsed, m, previous))
            for m in consumers
        ]
        opted_out, problem = _opted_out(planned, consumers)
        outcome = revert(
            verdicts,
            previous,
            opted_out=opted_out,
            opt_out_problem=problem,
            confounded=[c for d in planned for c in _changed(d)],
            budget=wanted.budget,
        )
        judged = [judged_decision(d, outcome) for d in planned]
        if isinstance(outcome, Reverted) and apply:
            judged, written = _write_back(judged, planned, dict(obj), reader.now, write)
            if not written:
                # nothing was undone: --max-reverts bounds what is undone, so the slot is free
                wanted.budget.give_back()
        for index, decision in zip(indices, judged, strict=True):
            out[index] = decision
    opted_in = {decision.workload for decision in decisions}
    return out + _suggested(wanted, namespace, found, opted_in)


def _judged(decision: Planned) -> bool:
    """A decision production may turn into a revert: its advice fits, or would be calibrated
    again (not one whose calibration is running or failed: that Job's outcome comes first)."""
    cause = decision.reason.cause
    return isinstance(cause, Fits) or (
        decision.verdict == "calibrate" and isinstance(cause, Calibrate)
    )


def _changed(decision: Planned) -> tuple[SpecDifference, ...]:
    """How the workload's calibration spec changed since the advice (none for an advice that
    fits)."""
    cause = decision.reason.cause
    return cause.changed if isinstance(cause, Calibrate) else ()


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
) -> tuple[list[WorkloadRef], Unreadable | None]:
    """The workloads among the advice's consumers that opted out of reverts, and the first
    annotation that cannot be read as allowing one (a consumer not decided for is read here)."""
    decided = {d.workload: d.revert for d in planned}
    refs: list[WorkloadRef] = []
    problem: Unreadable | None = None
    for mount in consumers:
        ref = mount.workload.ref
        if ref in refs:
            continue
        try:
            allowed = decided[ref] if ref in decided else may_revert(mount.workload.annotations)
        except OptInError as exc:
            problem = problem or Unreadable(ref, str(exc))
            continue
        if not allowed:
            refs.append(ref)
    return refs, problem


def judged_decision(decision: Planned, outcome: Reverted | NotReverted | None) -> Planned:
    """``decision`` as production makes it: ``revert`` (its Job left to the next plan, which
    calibrates again where it would have), a regression left as it is named in its reason, or
    the same decision."""
    if isinstance(outcome, Reverted):
        cause = decision.reason.cause
        replaced = cause if isinstance(cause, Fits | Calibrate) else None
        return replace(
            decision, reason=PlanReason(replace(outcome, replaced=replaced)), job_name=None
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
) -> tuple[list[Planned], bool]:
    """The advice's previous one written back once, for every decision reading it; when the
    ConfigMap changed since it was read, or the API server refused the write (no ``update`` on
    configmaps, unreachable, 422), each decision is what it was, saying so, and the plan goes on
    with the next advice (one warning line per refused write). Second: whether it was written."""
    previous = previous_advice(obj)
    assert previous is not None
    reason = plan_reason_text(judged[0].reason)
    back = reverted_configmap(obj, previous, now=now, reason=reason)
    try:
        written = write(back)
        not_written = NotWrittenBack()
    except AdvisorError as exc:
        name = mapping(obj.get("metadata")).get("name")
        log.warning("the previous advice was not written back to ConfigMap %s: %s", name, exc)
        written, not_written = False, NotWrittenBack(refused=" ".join(str(exc).split()))
    if written:
        return [applying(decision, WrittenBack()) for decision in judged], True
    return [
        replace(applying(decision, not_written), job_name=before.job_name)
        for decision, before in zip(judged, planned, strict=True)
    ], False


def _mounts(found: list[KubeWorkload]) -> list[Mount]:
    """Every container of the workloads, whatever it reads (a revert judges the container the
    plan decided for; the ConfigMap is the decision's)."""
    return [
        Mount(workload, container, "", optional=False)
        for workload in found
        for container in workload.pod_spec.containers
    ]


def _suggested(
    wanted: PlanProduction,
    namespace: str,
    found: list[KubeWorkload],
    opted_in: set[WorkloadRef],
) -> list[Planned]:
    """The containers not opted in whose pods were throttled above the threshold over the last
    window (``found``: the namespace's workloads with the pods the API server lists now, matched
    by name)."""
    reader = wanted.reader
    if reader.unavailable is not None:
        return []
    seconds = reader.window.total_seconds()
    try:
        throttled, periods = (
            reader.client.query(
                queries.namespace_by_pod(metric, namespace, seconds, reader.scope), reader.now
            )
            for metric in (queries.THROTTLED, queries.PERIODS)
        )
    except QueryFailed as exc:
        # this namespace's query alone (a timeout, a 422, a partial answer): the next
        # namespace's may be answered
        log.warning("no suggestions in namespace %s: %s", namespace, exc)
        return []
    except PrometheusError as exc:
        reader.unavailable = f"Prometheus unavailable: {exc}"
        return []
    owner = {
        pod.metadata.name: workload
        for workload in found
        if workload.kind is not WorkloadKind.POD and workload.ref not in opted_in
        for pod in workload.pods
        if pod.metadata.name
    }
    totals: dict[tuple[WorkloadRef, str], list[float]] = {}
    for samples, index in ((throttled, 0), (periods, 1)):
        for sample in samples:
            workload = owner.get(sample.labels.get("pod", ""))
            if workload is None or sample.value != sample.value:
                continue
            key = (workload.ref, sample.labels.get("container", ""))
            totals.setdefault(key, [0.0, 0.0])[index] += sample.value
    throttled_above = [
        Throttled(ref, container, share[0] / share[1])
        for (ref, container), share in totals.items()
        if share[1] >= MIN_PERIODS
    ]
    return suggestions(
        throttled_above,
        threshold=wanted.suggest_throttled,
        window=_span(reader.window),
        namespace=namespace,
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

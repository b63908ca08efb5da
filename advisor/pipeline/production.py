"""What ``plan`` makes of production: each advice that fits or would be calibrated judged from
every container reading it (through a ``ProductionSource``), turned into a ``revert`` where it
regressed and may be undone (the rule: ``advisor.fleet.production``), written back with
``--apply`` (``advisor.pipeline.revert_write``), then the suggestions
(``advisor.pipeline.suggest``). The Prometheus flags are checked in
``advisor.pipeline.prometheus_settings``, the reading is ``advisor.pipeline.production_source``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from advisor.consumers.mounts import Mount, mounts
from advisor.consumers.mounts import workloads as mounted_workloads
from advisor.errors import AdvisorError, InvalidAdviceError
from advisor.fleet.decide import Planned, applying
from advisor.fleet.optin import OptInError, may_revert
from advisor.fleet.production import DEFAULT_MAX_REVERTS, RevertBudget, revert
from advisor.models import WorkloadRef
from advisor.models.kube import KubeWorkload
from advisor.models.plan import (
    Calibrate,
    ConsumerVerdict,
    Fits,
    NotReverted,
    PlanReason,
    Reverted,
    SpecDifference,
    Unreadable,
)
from advisor.pipeline.production_source import ProductionSource, production_source
from advisor.pipeline.revert_write import write_back
from advisor.pipeline.suggest import suggested
from advisor.prometheus import Settings
from advisor.recommend import ParsedAdvice, parse_configmap
from advisor.recommend.previous import previous_advice

if TYPE_CHECKING:
    from advisor.cluster import Connection
    from advisor.cluster.inventory import Inventory
    from advisor.retry import RetryPolicy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlanProduction:
    """What ``plan`` asks of production: the source, the throttled share above which a
    container that is not opted in is suggested, and the reverts it may still decide."""

    source: ProductionSource
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
    source = wanted.source
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
            ConsumerVerdict(m.workload.ref, m.container_name, source.judge(parsed, m, previous))
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
            judged, written = write_back(judged, planned, dict(obj), source.now, write)
            if not written:
                # nothing was undone: --max-reverts bounds what is undone, so the slot is free
                wanted.budget.give_back()
        for index, decision in zip(indices, judged, strict=True):
            out[index] = decision
    opted_in = {decision.workload for decision in decisions}
    return out + suggested(source, wanted.suggest_throttled, namespace, found, opted_in)


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


def _mounts(found: list[KubeWorkload]) -> list[Mount]:
    """Every container of the workloads, whatever it reads (a revert judges the container the
    plan decided for; the ConfigMap is the decision's)."""
    return [
        Mount(workload, container, "", optional=False)
        for workload in found
        for container in workload.pod_spec.containers
    ]


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
    warm_up: timedelta | None = None,
    max_reverts: int = DEFAULT_MAX_REVERTS,
) -> list[Planned]:
    """``plan_production`` against the cluster, for each namespace planned (``configmaps`` by
    namespace, then by name; ``namespace`` None: the decisions name theirs), in the decisions'
    order: each namespace's workloads and pods listed (a Role without them costs the verdicts,
    with one warning, never the plan), reverts written with ``apply``, and one warning line for
    Prometheus trouble, whatever the number of namespaces."""
    from advisor.cluster.inventory import list_inventory
    from advisor.cluster.revert import replace_configmap

    source = production_source(settings, window, now, warm_up)
    wanted = PlanProduction(source, suggest_throttled, RevertBudget(max_reverts))
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
    source.warn()
    return out

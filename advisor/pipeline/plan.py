"""Fleet mode: every opted-in serving workload measured in its own pod shape (``plan``).

The planner lists the namespace's opted-in Deployments and StatefulSets (a server-side label
selector), its ConfigMaps and the calibration Jobs it created before; ``advisor.fleet`` decides
for each container; with ``apply`` the Jobs to start are created, at most ``max_running`` per node
pool at once. Nothing is written without ``apply``, and a Job is created only for a decision that
validated whole (derived, named, hashed). Creating is idempotent: a Job's name carries the hash
of its derived spec, so a second ``apply`` finds it (409) and reports it pending.

With ``all_namespaces`` one planner plans every namespace labelled to opt in
(``advisor.fleet.scope``): each kind is listed once for the whole cluster (the ConfigMaps once per
namespace with opted-in workloads), each Job is created in its workload's namespace, and a node
pool's budget counts the Jobs of every namespace.

What the API server refuses about one Job (a ResourceQuota, an admission webhook or policy, an
invalid Job) is that workload's ``failed`` decision, with the server's message, and the plan goes
on; only the authorizer's 403 (a rule the planner's Role lacks, which no other Job would pass
either), or an API server that cannot be reached, stops it, and the decisions and Jobs created
until then are still returned (``stopped``). ``dry_run="server"`` asks the same of the server
with ``dryRun=All`` and creates nothing. With ``apply``, each workload acted on gets an Event
(``plan_events``).

With Prometheus, production is judged before any Job is created (``judged_plans``): a revert
takes the place of a calibration this plan would start (``advisor.fleet.production`` has the
rules), and is written first.

Kubernetes is the engine: the Jobs are scheduled on each workload's node pool with its resources,
and the next scheduled plan continues where this one stopped.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from advisor import __version__
from advisor.errors import AdvisorError, ClusterRejectedError, Opt, UsageError, usage_error
from advisor.fleet.advisor_pod import DEFAULT_STARTUP_ALLOWANCE_S
from advisor.fleet.decide import Planned, answered, applying, decide, to_create
from advisor.fleet.derive import JobSettings
from advisor.fleet.jobs import PlannedJob, planned_job
from advisor.fleet.optin import FIELD_ANNOTATION, Defaults
from advisor.fleet.production import DEFAULT_MAX_REVERTS, revert_limited
from advisor.fleet.retry import retry_failed
from advisor.fleet.scope import by_namespace, opted_in_namespaces, without_service_account
from advisor.keys import NAMESPACE_SELECTOR, OPT_IN_SELECTOR, PLANNED_SELECTOR
from advisor.models import OPTION, CalibrationOptions, PlanResult, TrialMode, plan_options
from advisor.models.kube import KubeClaim, KubeConfigMap, KubeJob, KubeWorkload, ObjectMeta
from advisor.models.plan import (
    Created,
    JobExists,
    PlanDecision,
    Refused,
    RetryUnchecked,
    Stopped,
)
from advisor.pipeline.plan_events import applied_events, failed_calibrations, record_events
from advisor.pipeline.source import (
    CLUSTER_TIMEOUT_S,
    check_cluster_timeout,
    check_names,
    namespace_to_list,
)
from advisor.recommend import annotation_key_problem
from advisor.recommend.stored import StoredAdvice, by_name
from advisor.render.plan_reasons import plan_reason_text

if TYPE_CHECKING:
    from advisor.cluster import Connection, RetryPolicy
    from advisor.prometheus import Settings

log = logging.getLogger(__name__)

#: the advisor image the Jobs run unless told: this version's local build (as kustomize's base)
DEFAULT_IMAGE = f"tf-thread-advisor:{__version__}"
__all__ = [
    "DEFAULT_IMAGE",
    "DRY_RUNS",
    "FIELD_ANNOTATION",
    "PULL_POLICIES",
    "Defaults",
    "Plan",
    "PlanRequest",
    "check_plan_request",
    "plan",
]

DEFAULT_SERVICE_ACCOUNT = "tf-thread-advisor-calibration"
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
#: kubectl's --dry-run: none (with --apply: create), client (the plan alone, what plan without
#: --apply is), server (each Job sent with dryRun=All: quotas, webhooks, Pod Security answer)
DryRun = Literal["none", "client", "server"]
DRY_RUNS: tuple[DryRun, ...] = ("none", "client", "server")


@dataclass(frozen=True)
class PlanRequest:
    """What ``plan`` looks at and may do (its flags)."""

    namespace: str | None = None
    #: every namespace labelled tf-thread-advisor.io/calibrate=true, not one
    all_namespaces: bool = False
    apply: bool = False
    max_age: timedelta | None = None
    max_running: int = 1
    image: str = DEFAULT_IMAGE
    image_pull_policy: str = "IfNotPresent"
    service_account: str = DEFAULT_SERVICE_ACCOUNT
    #: Secrets the Jobs pull the advisor image with, beside each serving pod's own
    image_pull_secrets: tuple[str, ...] = ()
    #: what each Job's deadline allows beyond its budget: scheduling, node scale-up, pulls
    startup_allowance_s: float = DEFAULT_STARTUP_ALLOWANCE_S
    #: the Jobs' pods' priorityClassName (None: the cluster's default)
    priority_class: str | None = None
    defaults: Defaults = field(default_factory=Defaults)
    #: passed on to every Job's ``run``: how trials start, the oneDNN sweep (the option table's
    #: ``job`` options, each a field of its name), extra annotations on the advice ConfigMaps
    #: (Reloader's search-mode match)
    trial_mode: TrialMode = OPTION["trial_mode"].default
    sweep_onednn: bool = OPTION["sweep_onednn"].default
    configmap_annotations: Mapping[str, str] = field(default_factory=dict)
    kubeconfig: Path | None = None
    cluster_timeout_s: float = CLUSTER_TIMEOUT_S
    dry_run: DryRun = "none"
    #: a failed calibration of the current spec is deleted and calibrated again now, not after
    #: the failed Job's TTL (with ``apply``; needs delete on jobs)
    retry_failed: bool = False
    #: with ``apply``, Events on the workloads it acted on (needs create on events)
    events: bool = True
    #: production verdicts (revert, suggested): where Prometheus is, its windows, the
    #: throttled share that makes a container not opted in ``suggested``
    prometheus: Settings | None = None
    window: timedelta | None = None
    warm_up: timedelta | None = None
    suggest_throttled: float = 0.25
    #: the most advice one plan reverts (0: none; the verdicts are still shown)
    max_reverts: int = DEFAULT_MAX_REVERTS


@dataclass(frozen=True)
class Plan:
    """The decisions, and the Jobs created (with ``apply``) or that would be."""

    #: the namespace planned (None: every opted-in namespace, ``namespaces``)
    namespace: str | None
    result: PlanResult
    #: the manifests of the Jobs created, or to create without ``apply``, as printed (with the
    #: lint annotations the created Jobs do not carry)
    jobs: list[dict[str, Any]]
    applied: bool
    #: the namespaces planned
    namespaces: tuple[str, ...] = ()
    #: what stopped ``apply`` midway (a rule the Role lacks, an API server gone): the decisions
    #: and the Jobs created before it stand, the rest were not tried
    stopped: AdvisorError | None = None
    #: the decisions whose regressed advice was not reverted for ``max_reverts``
    limited: tuple[Planned, ...] = ()

    @property
    def revert_limited(self) -> list[str]:
        """The advice ConfigMaps (NAMESPACE/NAME) that regressed and stay as they are because
        ``max_reverts`` were reverted already."""
        found = [f"{d.namespace or self.namespace or ''}/{d.configmap}" for d in self.limited]
        return list(dict.fromkeys(found))

    @property
    def failed(self) -> list[str]:
        """The workloads (NAMESPACE/kind/NAME when the plan spans namespaces, with their
        container) whose decision is ``failed``."""
        return [
            (f"{d.namespace}/" if self.namespace is None and d.namespace else "")
            + str(d.workload)
            + (f" ({d.container})" if d.container else "")
            for d in self.result.decisions
            if d.decision == "failed"
        ]


def check_plan_request(request: PlanRequest) -> None:
    """Every flag's rule, before the cluster is asked anything."""
    if request.all_namespaces and request.namespace:
        raise UsageError(Opt("namespace"), " and ", Opt("all_namespaces"), " exclude each other")
    if request.defaults.restart and request.defaults.restart_forbidden:
        raise UsageError(Opt("restart"), " and ", Opt("restart_forbidden"), " exclude each other")
    if request.max_running < 1:
        raise UsageError(Opt("max_running"), f" must be 1 or more, got {request.max_running}")
    if request.max_reverts < 0:
        raise UsageError(Opt("max_reverts"), f" must be 0 or more, got {request.max_reverts}")
    _check_job_settings(request)
    for key in request.configmap_annotations:
        if problem := annotation_key_problem(key):
            raise UsageError(Opt("configmap_annotations"), f" {key!r}: {problem}")
    check_cluster_timeout(request.cluster_timeout_s)
    if not 0 < request.suggest_throttled <= 1:  # the throttled share that suggests a container
        raise UsageError(Opt("suggest_throttled"), " must be above 0% and at most 100%")
    if request.dry_run not in DRY_RUNS:
        raise UsageError(Opt("dry_run"), f" must be one of {', '.join(DRY_RUNS)}")
    if request.prometheus is not None:
        from advisor.pipeline.prometheus_settings import check_window

        check_window(request.window, request.warm_up)
    if request.apply and request.dry_run != "none":
        raise UsageError(
            Opt("dry_run"), f"={request.dry_run} previews what ", Opt("apply"), " does: not both"
        )
    try:  # the defaults obey a calibration's rules, as every annotation does
        CalibrationOptions(**request.defaults.options)
    except ValidationError as exc:
        raise usage_error(exc) from None


def _check_job_settings(request: PlanRequest) -> None:
    """The flags that shape every Job: its image, pulls, identity, priority and deadline."""
    if not request.image.strip() or any(c.isspace() for c in request.image):
        raise UsageError(Opt("image"), f" {request.image!r} is not an image reference")
    if request.image_pull_policy not in PULL_POLICIES:
        raise UsageError(Opt("image_pull_policy"), f" must be one of {', '.join(PULL_POLICIES)}")
    check_names(service_account=request.service_account)
    for secret in request.image_pull_secrets:
        check_names(image_pull_secrets=secret)
    if request.priority_class is not None:
        check_names(priority_class=request.priority_class)
    if not 0 < request.startup_allowance_s < math.inf:
        raise UsageError(
            Opt("startup_allowance_s"),
            f" must be longer than zero, got {request.startup_allowance_s}",
        )


def run_args(request: PlanRequest) -> tuple[str, ...]:
    """The ``run`` flags every Job gets beyond the ones derived from its workload: the option
    table's ``job`` options, each only when it is not ``run``'s default (so a Job's arguments,
    and the calibration spec read from them, change only where a flag does)."""
    args = [
        arg
        for option in plan_options("job")
        if (value := getattr(request, option.field)) != option.default
        and (arg := option.run_arg(value)) is not None
    ]
    args += [
        f"--configmap-annotation={k}={v}" for k, v in sorted(request.configmap_annotations.items())
    ]
    return tuple(args)


def plan(request: PlanRequest, *, now: datetime | None = None) -> Plan:
    """Decide for every opted-in workload container of the namespace (or of every opted-in
    namespace); with ``apply``, create the Jobs it may start now."""
    from advisor.cluster import RetryPolicy, connect

    check_plan_request(request)
    connection = connect(request.kubeconfig)
    namespace = (
        None if request.all_namespaces else namespace_to_list(request.namespace, request.kubeconfig)
    )
    policy = RetryPolicy.interactive(request.cluster_timeout_s)
    listed = _list(connection, namespace, request.service_account, policy)
    settings = JobSettings(
        image=request.image,
        service_account=request.service_account,
        image_pull_policy=request.image_pull_policy,
        extra_args=run_args(request),
        image_pull_secrets=request.image_pull_secrets,
        startup_allowance_s=math.ceil(request.startup_allowance_s),
        priority_class=request.priority_class,
    )
    decided = _decide(listed, request, settings, now or datetime.now(timezone.utc))
    # the Jobs of every namespace listed count against their node pool's budget
    failed_jobs = failed_calibrations(decided, listed.jobs)
    if request.prometheus is not None:
        # before any Job is created: a revert takes the place of a calibration
        from advisor.pipeline.production import judged_plans

        decided = judged_plans(
            request.prometheus, decided, listed.configmap_objects, namespace=namespace,
            connection=connection, policy=policy, apply=request.apply, window=request.window,
            warm_up=request.warm_up, suggest_throttled=request.suggest_throttled,
            now=now or datetime.now(timezone.utc), max_reverts=request.max_reverts,
        )  # fmt: skip
    retried: dict[tuple[str, str], PlannedJob] = {}
    if request.retry_failed:
        decided, retried = retry_failed(decided, listed.jobs)
    start, decided = to_create(decided, listed.jobs, max_running=request.max_running)
    stopped: AdvisorError | None = None
    if request.apply or request.dry_run == "server":
        applied: dict[int, Planned] = {}
        dry_run = request.dry_run == "server"
        for item in start:
            try:
                applied[id(item)] = _create(
                    item, connection, _job_namespace(item), policy, dry_run=dry_run, retried=retried
                )
            except AdvisorError as exc:  # a rule the Role lacks, or no API server: none would pass
                stopped = exc
                break
        if request.apply and request.events:
            events = applied_events(applied.values(), failed_jobs, reverted=decided)
            record_events(connection, events, now=now or datetime.now(timezone.utc), policy=policy)
        untried = {id(item): applying(item, Stopped()) for item in start if id(item) not in applied}
        decided = [applied.get(id(item), untried.get(id(item), item)) for item in decided]
        start = [item for item in applied.values() if item.decision == "calibrate"]
    created = [item.job.printed for item in start if item.job is not None]
    return Plan(
        namespace=namespace,
        result=PlanResult(decisions=[worded(item) for item in decided]),
        jobs=created,
        applied=request.apply,
        namespaces=tuple(listed.workloads),
        stopped=stopped,
        limited=tuple(item for item in decided if revert_limited(item)),
    )


@dataclass(frozen=True)
class _Listed:
    """What a plan read: per namespace planned (sorted), its opted-in workloads, its ConfigMaps
    (each advice parsed once, when first asked for) and its PersistentVolumeClaims by name; the
    planner's Jobs; the namespaces holding the calibration ServiceAccount (None: not asked, one
    namespace's planner runs beside it)."""

    workloads: dict[str, list[KubeWorkload]]
    configmaps: dict[str, dict[str, StoredAdvice]]
    jobs: list[PlannedJob]
    claims: dict[str, dict[str, KubeClaim]]
    accounts: set[str] | None = None
    #: the same ConfigMaps as the dicts listed, which production's judge reads and parses again
    #: (``pipeline.production.judged_plans``: until it takes ``configmaps``, and ``decide`` is
    #: told to keep each parsed advice for it, ``keep_advice``)
    configmap_objects: dict[str, dict[str, Mapping[str, Any]]] = field(default_factory=dict)


def _list(
    connection: Connection, namespace: str | None, service_account: str, policy: RetryPolicy
) -> _Listed:
    """One namespace's lists, or (``namespace`` None) the cluster's: the opted-in Namespaces,
    then each kind once across all of them; ConfigMaps and claims only where a workload opted
    in."""
    from advisor.cluster.namespaces import list_namespaces, namespaces_with_service_account
    from advisor.cluster.plan_lists import list_claims, list_configmaps, list_jobs, list_workloads

    def planned_jobs() -> list[PlannedJob]:
        listed = list_jobs(connection, namespace, PLANNED_SELECTOR, policy)
        return [planned_job(KubeJob.read(obj)) for obj in listed]

    def workloads_in(where: str | None) -> list[KubeWorkload]:
        listed = list_workloads(connection, where, OPT_IN_SELECTOR, policy)
        return [view for obj in listed if (view := KubeWorkload.read(obj)) is not None]

    if namespace is not None:
        workloads = workloads_in(namespace)
        objects = {namespace: list_configmaps(connection, namespace, policy)}
        jobs = planned_jobs()
        claims = {namespace: _claims(list_claims(connection, namespace, policy))}
        return _Listed(
            {namespace: workloads},
            _advice(objects),
            jobs,
            claims,
            configmap_objects=_by_name(objects),
        )
    listed = list_namespaces(connection, NAMESPACE_SELECTOR, policy)
    opted_in, problems = opted_in_namespaces(ObjectMeta.read(obj.get("metadata")) for obj in listed)
    for problem in problems:  # no workload to hang a decision on: said once per run
        log.warning("%s", problem)
    grouped = by_namespace(workloads_in(None), opted_in)
    planned_in = [where for where, workloads in grouped.items() if workloads]
    objects = {
        where: list_configmaps(connection, where, policy, cluster=True) for where in planned_in
    }
    claims = {
        where: _claims(list_claims(connection, where, policy, cluster=True)) for where in planned_in
    }
    accounts = namespaces_with_service_account(connection, service_account, policy)
    return _Listed(
        grouped,
        _advice(objects),
        planned_jobs(),
        claims,
        accounts,
        configmap_objects=_by_name(objects),
    )


def _advice(objects: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, StoredAdvice]]:
    """Each namespace's listed ConfigMaps by name, each advice to be parsed once."""
    return {where: by_name(listed) for where, listed in objects.items()}


def _by_name(
    objects: dict[str, list[dict[str, Any]]],
) -> dict[str, dict[str, Mapping[str, Any]]]:
    """Each namespace's listed ConfigMaps by name, as the dicts listed."""
    return {
        where: {KubeConfigMap.read(obj).name: obj for obj in listed}
        for where, listed in objects.items()
    }


def _decide(
    listed: _Listed, request: PlanRequest, settings: JobSettings, now: datetime
) -> list[Planned]:
    """The decisions of each namespace planned, in namespace order, each decided with that
    namespace's ConfigMaps, claims and Jobs."""
    jobs_in: dict[str, list[PlannedJob]] = {}
    for job in listed.jobs:
        jobs_in.setdefault(job.namespace, []).append(job)
    decided: list[Planned] = []
    for where, workloads in listed.workloads.items():
        here = decide(
            workloads,
            listed.configmaps.get(where, {}),
            jobs_in.get(where, []),
            defaults=request.defaults,
            settings=settings,
            now=now,
            max_age=request.max_age,
            claims=listed.claims.get(where, {}),
        )
        if listed.accounts is not None and where not in listed.accounts:
            here = [without_service_account(i, where, request.service_account) for i in here]
        decided += here
    return decided


def worded(item: Planned) -> PlanDecision:
    """``item``'s decision with its typed reason put into words."""
    return PlanDecision(
        workload=item.workload,
        container=item.container,
        configmap=item.configmap,
        decision=item.decision,
        reason=plan_reason_text(item.reason),
        job=item.job_name,
        namespace=item.namespace,
    )


def _claims(objects: list[dict[str, Any]]) -> dict[str, KubeClaim]:
    """The listed PersistentVolumeClaims' views by name."""
    views = (KubeClaim.read(obj) for obj in objects)
    return {view.metadata.name: view for view in views}


def _job_namespace(item: Planned) -> str:
    """Where a Job is created: its manifest's namespace, its workload's."""
    assert item.job is not None
    return str(item.job.manifest["metadata"]["namespace"])


def _create(
    item: Planned,
    connection: Connection,
    namespace: str,
    policy: RetryPolicy,
    *,
    dry_run: bool = False,
    retried: Mapping[tuple[str, str], PlannedJob],
) -> Planned:
    """One Job created (``dry_run``: sent with dryRun=All, stored by no one): calibrate
    (created, or the server would), pending (it exists already: another plan was first) or
    failed (the API server refused it: a ResourceQuota, an admission webhook, an invalid Job;
    the others go on). A retried failed Job is deleted first. Any other error stops the plan:
    the authorizer's 403 (ForbiddenError: the planner's Role lacks the rule, and no other Job
    would be created either), an API server that cannot be reached."""
    from advisor.cluster.jobs import create_job, delete_job

    assert item.job is not None
    name = item.job.name
    retry = retried.get((namespace, name))
    try:
        if retry is not None and not dry_run:
            delete_job(connection, namespace, name, policy=policy)
        outcome = create_job(
            connection, namespace, item.job.manifest, dry_run=dry_run, policy=policy
        )
    except ClusterRejectedError as exc:
        return answered(item, Refused(str(exc)))
    warns = tuple(outcome.warnings)
    if outcome.already_exists:
        if retry is not None:  # a dry run: the failed Job is still there
            return applying(item, RetryUnchecked(warns))
        return answered(item, JobExists(name, warns))
    return applying(item, Created(name, dry_run=dry_run, warnings=warns))

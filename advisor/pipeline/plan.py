"""Fleet mode: every opted-in serving workload measured in its own pod shape (``plan``).

The planner lists the namespace's opted-in Deployments and StatefulSets (a server-side label
selector), its ConfigMaps and the calibration Jobs it created before; ``advisor.fleet`` decides
for each container; with ``apply`` the Jobs to start are created, at most ``max_running`` per node
pool at once. Nothing is written without ``apply``, and a Job is created only for a decision that
validated whole (derived, named, hashed). Creating is idempotent: a Job's name carries the hash
of its derived spec, so a second ``apply`` finds it (409) and reports it pending.

What the API server refuses about one Job (a ResourceQuota, an admission webhook or policy, an
invalid Job) is that workload's ``failed`` decision, with the server's message, and the plan goes
on; only the authorizer's 403 (a rule the planner's Role lacks, which no other Job would pass
either), or an API server that cannot be reached, stops it, and the decisions and Jobs created
until then are still returned (``stopped``).
``dry_run="server"`` asks the same of the server with ``dryRun=All`` and creates nothing. With
``apply``, each workload acted on gets an Event (``plan_events``).

Kubernetes is the engine: the Jobs are scheduled on each workload's node pool with its resources,
and the next scheduled plan continues where this one stopped.
"""

from __future__ import annotations

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
from advisor.fleet.decide import Planned, decide, to_create, with_reason
from advisor.fleet.derive import PLANNED_SELECTOR, JobSettings
from advisor.fleet.jobs import PlannedJob, planned_job
from advisor.fleet.optin import OPT_IN_SELECTOR, Defaults
from advisor.fleet.retry import retry_failed
from advisor.models import CalibrationOptions, PlanResult, TrialMode
from advisor.pipeline.plan_events import applied_events, failed_calibrations, record_events
from advisor.pipeline.source import (
    CLUSTER_TIMEOUT_S,
    check_cluster_timeout,
    check_names,
    namespace_to_list,
)
from advisor.recommend import annotation_key_problem

if TYPE_CHECKING:
    from advisor.cluster import Connection, RetryPolicy

#: the advisor image the Jobs run unless told: this version's local build (as kustomize's base)
DEFAULT_IMAGE = f"tf-thread-advisor:{__version__}"
__all__ = [
    "DEFAULT_IMAGE",
    "DRY_RUNS",
    "PULL_POLICIES",
    "Defaults",
    "Plan",
    "PlanRequest",
    "check_request",
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
    #: passed on to every Job's ``run``: how trials start, the oneDNN sweep, extra annotations
    #: on the advice ConfigMaps (Reloader's search-mode match)
    trial_mode: TrialMode = "auto"
    sweep_onednn: bool = False
    configmap_annotations: Mapping[str, str] = field(default_factory=dict)
    kubeconfig: Path | None = None
    cluster_timeout_s: float = CLUSTER_TIMEOUT_S
    dry_run: DryRun = "none"
    #: a failed calibration of the current spec is deleted and calibrated again now, not after
    #: the failed Job's TTL (with ``apply``; needs delete on jobs)
    retry_failed: bool = False
    #: with ``apply``, Events on the workloads it acted on (needs create on events)
    events: bool = True


@dataclass(frozen=True)
class Plan:
    """The decisions, and the Jobs created (with ``apply``) or that would be."""

    namespace: str
    result: PlanResult
    #: the manifests of the Jobs created, or to create without ``apply``, as printed (with the
    #: lint annotations the created Jobs do not carry)
    jobs: list[dict[str, Any]]
    applied: bool
    #: what stopped ``apply`` midway (a rule the Role lacks, an API server gone): the decisions
    #: and the Jobs created before it stand, the rest were not tried
    stopped: AdvisorError | None = None

    @property
    def failed(self) -> list[str]:
        """The workloads (with their container) whose decision is ``failed``."""
        return [
            d.workload + (f" ({d.container})" if d.container else "")
            for d in self.result.decisions
            if d.decision == "failed"
        ]


def check_request(request: PlanRequest) -> None:
    """Every flag's rule, before the cluster is asked anything."""
    if request.max_running < 1:
        raise UsageError(Opt("max_running"), f" must be 1 or more, got {request.max_running}")
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
    for key in request.configmap_annotations:
        if problem := annotation_key_problem(key):
            raise UsageError(Opt("configmap_annotations"), f" {key!r}: {problem}")
    check_cluster_timeout(request.cluster_timeout_s)
    if request.dry_run not in DRY_RUNS:
        raise UsageError(Opt("dry_run"), f" must be one of {', '.join(DRY_RUNS)}")
    if request.apply and request.dry_run != "none":
        raise UsageError(
            Opt("dry_run"), f"={request.dry_run} previews what ", Opt("apply"), " does: not both"
        )
    defaults = request.defaults
    try:  # the defaults obey a calibration's rules, as every annotation does
        CalibrationOptions(
            objective=defaults.objective,
            concurrency=defaults.concurrency,
            batch_size=defaults.batch_size,
            p99_slo_ms=defaults.p99_ms,
            budget_s=defaults.budget_s,
        )
    except ValidationError as exc:
        raise usage_error(exc) from None


def run_args(request: PlanRequest) -> tuple[str, ...]:
    """The ``run`` flags every Job gets beyond the ones derived from its workload."""
    args = [] if request.trial_mode == "auto" else [f"--trial-mode={request.trial_mode}"]
    if request.sweep_onednn:
        args.append("--sweep-onednn")
    args += [
        f"--configmap-annotation={k}={v}" for k, v in sorted(request.configmap_annotations.items())
    ]
    return tuple(args)


def plan(request: PlanRequest, *, now: datetime | None = None) -> Plan:
    """Decide for every opted-in workload container of the namespace; with ``apply``, create the
    Jobs it may start now."""
    from advisor.cluster import RetryPolicy, connect
    from advisor.cluster.claims import list_claims
    from advisor.cluster.jobs import list_configmaps, list_jobs, list_workloads

    check_request(request)
    connection = connect(request.kubeconfig)
    namespace = namespace_to_list(request.namespace, request.kubeconfig)
    policy = RetryPolicy.interactive(request.cluster_timeout_s)
    workloads = list_workloads(connection, namespace, OPT_IN_SELECTOR, policy)
    configmaps = {
        str((obj.get("metadata") or {}).get("name")): obj
        for obj in list_configmaps(connection, namespace, policy)
    }
    jobs = [planned_job(obj) for obj in list_jobs(connection, namespace, PLANNED_SELECTOR, policy)]
    claims = {
        str((obj.get("metadata") or {}).get("name")): obj
        for obj in list_claims(connection, namespace, policy)
    }
    settings = JobSettings(
        image=request.image,
        service_account=request.service_account,
        image_pull_policy=request.image_pull_policy,
        extra_args=run_args(request),
        image_pull_secrets=request.image_pull_secrets,
        startup_allowance_s=math.ceil(request.startup_allowance_s),
        priority_class=request.priority_class,
    )
    decided = decide(
        workloads,
        configmaps,
        jobs,
        defaults=request.defaults,
        settings=settings,
        now=now or datetime.now(timezone.utc),
        max_age=request.max_age,
        claims=claims,
    )
    failed_jobs = failed_calibrations(decided, jobs)
    retried: dict[str, PlannedJob] = {}
    if request.retry_failed:
        decided, retried = retry_failed(decided, jobs)
    start, decided = to_create(decided, jobs, max_running=request.max_running)
    stopped: AdvisorError | None = None
    if request.apply or request.dry_run == "server":
        applied: dict[int, Planned] = {}
        dry_run = request.dry_run == "server"
        for item in start:
            try:
                applied[id(item)] = _create(
                    item, connection, namespace, policy, dry_run=dry_run, retried=retried
                )
            except AdvisorError as exc:  # a rule the Role lacks, or no API server: none would pass
                stopped = exc
                break
        if request.apply and request.events:
            events = applied_events(applied.values(), failed_jobs)
            record_events(connection, events, now=now or datetime.now(timezone.utc), policy=policy)
        untried = {
            id(item): with_reason(
                item,
                reason=f"{item.decision.reason}; not created: the plan stopped (the error line "
                "says why)",
            )
            for item in start
            if id(item) not in applied
        }
        decided = [applied.get(id(item), untried.get(id(item), item)) for item in decided]
        start = [item for item in applied.values() if item.verdict == "calibrate"]
    created = [item.job.printed for item in start if item.job is not None]
    return Plan(
        namespace=namespace,
        result=PlanResult(decisions=[item.decision for item in decided]),
        jobs=created,
        applied=request.apply,
        stopped=stopped,
    )


def _create(
    item: Planned,
    connection: Connection,
    namespace: str,
    policy: RetryPolicy,
    *,
    dry_run: bool = False,
    retried: Mapping[str, PlannedJob],
) -> Planned:
    """One Job created (``dry_run``: sent with dryRun=All, stored by no one): calibrate
    (created, or the server would), pending (it exists already: another plan was first) or
    failed (the API server refused it: a ResourceQuota, an admission webhook, an invalid Job;
    the others go on). A retried failed Job is deleted first. Any other error stops the plan:
    the authorizer's 403 (ForbiddenError: the planner's Role lacks the rule, and no other Job
    would be created either), an API server that cannot be reached.

    The Job goes to its own namespace (its manifest's), the plan's when it names none."""
    from advisor.cluster.jobs import create_job, delete_job

    assert item.job is not None
    name = item.job.name
    where = str((item.job.manifest.get("metadata") or {}).get("namespace") or namespace)
    try:
        if name in retried and not dry_run:
            delete_job(connection, retried[name].namespace or where, name, policy=policy)
        outcome = create_job(connection, where, item.job.manifest, dry_run=dry_run, policy=policy)
    except ClusterRejectedError as exc:
        return with_reason(item, reason=str(exc), verdict="failed")
    warns = "".join(f"; the API server warns: {text}" for text in outcome.warnings)
    if outcome.already_exists:
        if name in retried:  # a dry run: the failed Job is still there
            return with_reason(
                item,
                reason=f"{item.decision.reason}; the server checks the new Job only once the "
                f"failed one is deleted (--apply){warns}",
            )
        return with_reason(
            item,
            reason=f"Job {name} exists already (created by an earlier plan){warns}",
            verdict="pending",
        )
    did = "the API server would create" if dry_run else "created"
    return with_reason(item, reason=f"{item.decision.reason}; {did} Job {name}{warns}")

"""Fleet mode: every opted-in serving workload measured in its own pod shape (``plan``).

The planner lists the namespace's opted-in Deployments and StatefulSets (a server-side label
selector), its ConfigMaps and the calibration Jobs it created before; ``advisor.fleet`` decides
for each container; with ``apply`` the Jobs to start are created, at most ``max_running`` per node
pool at once. Nothing is written without ``apply``, and a Job is created only for a decision that
validated whole (derived, named, hashed). Creating is idempotent: a Job's name carries the hash
of its derived spec, so a second ``apply`` finds it (409) and reports it pending.

Kubernetes is the engine: the Jobs are scheduled on each workload's node pool with its resources,
and the next scheduled plan continues where this one stopped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from advisor import __version__
from advisor.errors import ClusterRejectedError, Opt, UsageError, usage_error
from advisor.fleet.decide import Planned, decide, to_create, with_reason
from advisor.fleet.derive import PLANNED_SELECTOR, JobSettings
from advisor.fleet.jobs import planned_job
from advisor.fleet.optin import OPT_IN_SELECTOR, Defaults
from advisor.models import CalibrationOptions, PlanResult, TrialMode
from advisor.pipeline.source import (
    CLUSTER_TIMEOUT_S,
    check_cluster_timeout,
    check_names,
    namespace_to_list,
)
from advisor.recommend import annotation_key_problem

if TYPE_CHECKING:
    from advisor.cluster import Connection, RetryPolicy
    from advisor.prometheus import Settings

#: the advisor image the Jobs run unless told: this version's local build (as kustomize's base)
DEFAULT_IMAGE = f"tf-thread-advisor:{__version__}"
__all__ = [
    "DEFAULT_IMAGE",
    "PULL_POLICIES",
    "Defaults",
    "Plan",
    "PlanRequest",
    "check_request",
    "plan",
]

DEFAULT_SERVICE_ACCOUNT = "tf-thread-advisor-calibration"
PULL_POLICIES = ("Always", "IfNotPresent", "Never")


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
    defaults: Defaults = field(default_factory=Defaults)
    #: passed on to every Job's ``run``: how trials start, the oneDNN sweep, extra annotations
    #: on the advice ConfigMaps (Reloader's search-mode match)
    trial_mode: TrialMode = "auto"
    sweep_onednn: bool = False
    configmap_annotations: Mapping[str, str] = field(default_factory=dict)
    kubeconfig: Path | None = None
    cluster_timeout_s: float = CLUSTER_TIMEOUT_S
    #: production verdicts (revert, suggested): where Prometheus is, its windows, the
    #: throttled share that makes a container not opted in ``suggested``
    prometheus: Settings | None = None
    window: timedelta | None = None
    suggest_throttled: float = 0.25


@dataclass(frozen=True)
class Plan:
    """The decisions, and the Jobs created (with ``apply``) or that would be."""

    namespace: str
    result: PlanResult
    #: the manifests of the Jobs created, or to create without ``apply``
    jobs: list[dict[str, Any]]
    applied: bool


def check_request(request: PlanRequest) -> None:
    """Every flag's rule, before the cluster is asked anything."""
    if request.max_running < 1:
        raise UsageError(Opt("max_running"), f" must be 1 or more, got {request.max_running}")
    if not request.image.strip() or any(c.isspace() for c in request.image):
        raise UsageError(Opt("image"), f" {request.image!r} is not an image reference")
    if request.image_pull_policy not in PULL_POLICIES:
        raise UsageError(Opt("image_pull_policy"), f" must be one of {', '.join(PULL_POLICIES)}")
    check_names(service_account=request.service_account)
    for key in request.configmap_annotations:
        if problem := annotation_key_problem(key):
            raise UsageError(Opt("configmap_annotations"), f" {key!r}: {problem}")
    check_cluster_timeout(request.cluster_timeout_s)
    if not 0 < request.suggest_throttled <= 1:
        raise UsageError(Opt("suggest_throttled"), " must be above 0% and at most 100%")
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
    settings = JobSettings(
        image=request.image,
        service_account=request.service_account,
        image_pull_policy=request.image_pull_policy,
        extra_args=run_args(request),
    )
    decided = decide(
        workloads,
        configmaps,
        jobs,
        defaults=request.defaults,
        settings=settings,
        now=now or datetime.now(timezone.utc),
        max_age=request.max_age,
    )
    start, decided = to_create(decided, jobs, max_running=request.max_running)
    if request.apply:
        applied = {id(item): _create(item, connection, namespace, policy) for item in start}
        decided = [applied.get(id(item), item) for item in decided]
        start = [item for item in applied.values() if item.verdict == "calibrate"]
    created = [item.job.manifest for item in start if item.job is not None]
    decisions = [item.decision for item in decided]
    if request.prometheus is not None:
        from advisor.pipeline.production import judged_plan

        decisions = judged_plan(
            request.prometheus, decisions, configmaps, connection=connection,
            namespace=namespace, policy=policy, apply=request.apply, window=request.window,
            suggest_throttled=request.suggest_throttled, now=now or datetime.now(timezone.utc),
        )  # fmt: skip
    return Plan(
        namespace=namespace,
        result=PlanResult(decisions=decisions),
        jobs=created,
        applied=request.apply,
    )


def _create(item: Planned, connection: Connection, namespace: str, policy: RetryPolicy) -> Planned:
    """One Job created: calibrate (created), pending (it exists already: another plan was
    first) or failed (the API server refused it; the others go on). A 403 stops the plan: the
    planner's Role lacks the rule, and no other Job would be created either."""
    from advisor.cluster.jobs import create_job

    assert item.job is not None
    name = item.job.name
    try:
        outcome = create_job(connection, namespace, item.job.manifest, policy=policy)
    except ClusterRejectedError as exc:
        return with_reason(
            item, reason=f"the API server refused Job {name}: {exc}", verdict="failed"
        )
    if outcome.already_exists:
        return with_reason(
            item,
            reason=f"Job {name} exists already (created by an earlier plan)",
            verdict="pending",
        )
    return with_reason(item, reason=f"{item.decision.reason}; created Job {name}")

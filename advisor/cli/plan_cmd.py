"""``tf-thread-advisor plan``: fleet mode. Which opted-in workloads need a calibration, and (with
``--apply``) the Jobs that measure each in its own pod shape (``advisor.pipeline.plan``)."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

from advisor.cli._args import (
    add_kubeconfig,
    add_prometheus,
    default_of,
    duration,
    pairs,
    prometheus_settings,
)
from advisor.cli._output import add_format, emit
from advisor.errors import DecisionsFailedError, RevertsLimitedError
from advisor.models import RESTART, Option, plan_options
from advisor.models.times import format_age
from advisor.pipeline import Instruments
from advisor.pipeline.plan import (
    DRY_RUNS,
    FIELD_ANNOTATION,
    PULL_POLICIES,
    Defaults,
    PlanRequest,
    plan,
)
from advisor.pipeline.source import CLUSTER_TIMEOUT_S
from advisor.render import formats
from advisor.render.plan import PlanView, jobs_yaml, revert_limit_text


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="fleet mode: decide which opted-in workloads need a calibration (--apply: start it)",
        description="List the Deployments and StatefulSets labelled "
        "tf-thread-advisor.io/calibrate=true in a namespace and decide for each serving "
        "container, with a one-line reason: calibrate (no advice, or it was measured for another "
        "CPU limit or request, node pool, model path, serving image, objective, concurrency or "
        "batch, or another calibration spec: node affinity, tolerations, runtime class, "
        "resources, budget, trial mode; or is older than --max-age), fits, pending (its "
        "calibration Job has not finished), failed (the last one failed) or skipped (it cannot "
        "be calibrated). Each "
        "calibration Job is derived from the workload's pod template: its resources, node pool "
        "and tolerations, the model copied out of the serving image. Nothing is written without "
        "--apply. The flags below are the defaults a workload's tf-thread-advisor.io/* "
        "annotations override. A Job the API server refuses (a quota, an admission webhook, an "
        "invalid Job) is that workload's failed decision and the plan goes on; only a rule its "
        "Role lacks stops it (exit 8). Any failed decision makes it exit 17 after printing them "
        "all. Needs get/list on deployments, statefulsets, configmaps, persistentvolumeclaims "
        "and jobs, and create on "
        "jobs (and events) with --apply. With --prometheus-url, an advice that made its "
        "serving pods worse in production and helped none of its consumers is revert, even "
        "where it would be calibrated again unless the workload's spec changed since (--apply "
        "writes the advice it replaced back, at most --max-reverts a plan, and records an "
        "AdviceReverted Event; needs list on pods and daemonsets and update on configmaps; a "
        'workload annotated tf-thread-advisor.io/revert: "false" opts out), and containers not '
        "opted in that are throttled above --suggest-throttled are suggested.",
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--namespace",
        metavar="NS",
        help="namespace to plan (default: $TFTA_POD_NAMESPACE, then the kubeconfig context's)",
    )
    scope.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="plan every namespace labelled tf-thread-advisor.io/calibrate=true (its workloads "
        "still opt in one by one); each Job runs in its workload's namespace as the "
        "--service-account there, --max-running counts every namespace's Jobs. Needs a "
        "ClusterRole: get/list on deployments, statefulsets, configmaps, "
        "persistentvolumeclaims and jobs, list on "
        "namespaces and serviceaccounts, create on jobs with --apply",
    )
    add_format(parser, PlanView, "table")
    parser.add_argument(
        "--print-jobs",
        action="store_true",
        help="print the Jobs it would create (with --apply: created) as YAML, not the decisions, "
        "with the reasoned checkov skip annotations a lint of them needs (the Jobs created carry "
        "none)",
    )
    parser.add_argument(
        "--apply", action="store_true", help="create the calibration Jobs it decided on"
    )
    parser.add_argument(
        "--dry-run",
        choices=DRY_RUNS,
        default=default_of(PlanRequest, "dry_run"),
        help="server: send each Job to create as a server-side dry run (dryRun=All), so "
        "quotas, admission webhooks and Pod Security admission answer (and warn) before "
        "anything is created; client: the plan alone, as without --apply (default %(default)s; "
        "not with --apply)",
    )
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="with --apply, delete the failed calibration Job of a workload's current spec and "
        "create it again now, instead of waiting for the failed Job's TTL (a day); needs delete "
        "on jobs",
    )
    parser.add_argument(
        "--no-events",
        dest="events",
        action="store_false",
        help="with --apply, record no Events on the workloads (by default each gets one when "
        "its Job is created or refused, or its calibration failed; needs create on events)",
    )
    parser.add_argument(
        "--max-age",
        metavar="DURATION",
        type=duration,
        default=None,
        help="calibrate again advice older than this, e.g. 30d (default: no age limit)",
    )
    parser.add_argument(
        "--max-running",
        metavar="N",
        type=int,
        default=default_of(PlanRequest, "max_running"),
        help="calibrations running at once per node pool, counting those already running "
        "(default %(default)s): the next plan starts the rest",
    )
    jobs = parser.add_argument_group("the calibration Jobs")
    jobs.add_argument(
        "--image",
        metavar="IMAGE",
        default=default_of(PlanRequest, "image"),
        help="the advisor image the Jobs run (default %(default)s)",
    )
    jobs.add_argument(
        "--image-pull-policy",
        choices=PULL_POLICIES,
        default=default_of(PlanRequest, "image_pull_policy"),
        help="the advisor image's pull policy (default %(default)s)",
    )
    jobs.add_argument(
        "--service-account",
        metavar="NAME",
        default=default_of(PlanRequest, "service_account"),
        help="the ServiceAccount the Jobs' advisor runs as: it writes the advice ConfigMaps "
        "(default %(default)s)",
    )
    jobs.add_argument(
        "--image-pull-secret",
        metavar="NAME",
        action="append",
        default=[],
        help="a Secret the Jobs pull the advisor image with (repeatable), beside the serving "
        "pod's own imagePullSecrets, which each Job keeps for the serving image",
    )
    allowance = timedelta(seconds=default_of(PlanRequest, "startup_allowance_s"))
    jobs.add_argument(
        "--startup-allowance",
        metavar="DURATION",
        type=duration,
        default=allowance,
        help="what each Job's deadline allows beyond its budget for scheduling, a node "
        "scale-up, cold image pulls, the model copy and TensorFlow's start-up, e.g. 30m "
        f"(default {format_age(allowance)})",
    )
    jobs.add_argument(
        "--priority-class",
        metavar="NAME",
        default=None,
        help="the Jobs' pods' priorityClassName (default: the cluster's default priority)",
    )
    for option in plan_options("job"):
        jobs.add_argument(option.flag, **_plan_flag(option))
    jobs.add_argument(
        "--configmap-annotation",
        metavar="K=V",
        action="append",
        default=[],
        help="the Jobs put this annotation on the advice ConfigMaps (repeatable), e.g. "
        "reloader.stakater.com/match=true",
    )
    defaults = parser.add_argument_group(
        "defaults", "what a workload's tf-thread-advisor.io/* annotations leave unsaid"
    )
    for option in plan_options("workload"):
        defaults.add_argument(option.flag, **_plan_flag(option))
    defaults.add_argument(
        RESTART.plan_flag,
        action="store_true",
        help='tf-thread-advisor.io/restart: restart a workload on new advice (default: "false")',
    )
    defaults.add_argument(
        RESTART.plan_forbidden_flag,
        action="store_true",
        help="the calibration ServiceAccount may not patch workloads: a workload annotated "
        'tf-thread-advisor.io/restart: "true" is skipped, saying so',
    )
    add_kubeconfig(parser)
    parser.add_argument(
        "--cluster-timeout",
        metavar="S",
        type=float,
        default=CLUSTER_TIMEOUT_S,
        help=f"bound on all API retries of one cluster operation, seconds "
        f"(default {CLUSTER_TIMEOUT_S:g})",
    )
    add_prometheus(parser)
    parser.add_argument(
        "--max-reverts",
        metavar="N",
        type=int,
        default=default_of(PlanRequest, "max_reverts"),
        help="with --prometheus-url: revert at most N regressed advice in this plan (default "
        "%(default)s; 0: none, the verdicts still shown); the rest say so and plan exits 19: "
        "many at once may be a change under every workload (a node-pool upgrade), not bad advice",
    )
    parser.add_argument(
        "--suggest-throttled",
        metavar="PCT",
        type=_percent,
        default=25.0,
        help="with --prometheus-url: list the containers not opted in whose pods were throttled "
        "in more than PCT%% of their CFS periods over --window as suggested (default 25, "
        "kube-prometheus' CPUThrottlingHigh level)",
    )
    parser.set_defaults(func=run)


def _plan_flag(option: Option) -> dict[str, Any]:
    """argparse's keywords for ``plan``'s flag of ``option``: a number is read as a plain number,
    and ``check_request`` holds it to the model's rules, as it does a workload's annotation."""
    assert option.plan is not None
    kwargs: dict[str, Any] = {
        "help": option.plan.help.format(annotation=FIELD_ANNOTATION.get(option.field))
    }
    if option.parse == "switch":
        kwargs["action"] = "store_true"
        return kwargs
    kwargs["default"] = option.plan_default
    if option.metavar is not None:
        kwargs["metavar"] = option.metavar
    if option.parse == "choice":
        kwargs["choices"] = option.allowed
    elif option.parse in ("int", "float"):
        kwargs["type"] = int if option.parse == "int" else float
    if option.repeat is not None:
        kwargs["action"] = "append"
    return kwargs


def _percent(text: str) -> float:
    try:
        return float(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage") from None


def run(args: argparse.Namespace, _instruments: Instruments) -> int:
    request = PlanRequest(
        namespace=args.namespace,
        all_namespaces=args.all_namespaces,
        apply=args.apply,
        max_age=args.max_age,
        max_running=args.max_running,
        image=args.image,
        image_pull_policy=args.image_pull_policy,
        service_account=args.service_account,
        image_pull_secrets=tuple(args.image_pull_secret),
        startup_allowance_s=args.startup_allowance.total_seconds(),
        priority_class=args.priority_class,
        defaults=Defaults(
            restart=args.restart,
            restart_forbidden=args.restart_forbidden,
            **{o.field: o.from_flag(getattr(args, o.dest)) for o in plan_options("workload")},
        ),
        **{o.field: o.from_flag(getattr(args, o.dest)) for o in plan_options("job")},
        configmap_annotations=pairs(args.configmap_annotation, "--configmap-annotation"),
        kubeconfig=args.kubeconfig,
        cluster_timeout_s=args.cluster_timeout,
        dry_run=args.dry_run,
        retry_failed=args.retry_failed,
        events=args.events,
        prometheus=prometheus_settings(args),
        window=args.window,
        warm_up=args.warm_up,
        suggest_throttled=args.suggest_throttled / 100,
        max_reverts=args.max_reverts,
    )
    result = plan(request)
    if args.print_jobs:
        emit(jobs_yaml(result.jobs))
    else:
        view = PlanView(
            result.result,
            namespace=result.namespace,
            applied=result.applied,
            namespaces=result.namespaces,
            revert_limited=result.revert_limited,
        )
        emit(formats.render(view, args.format))
    if result.stopped is not None:
        raise result.stopped
    if failed := result.failed:
        raise DecisionsFailedError(
            f"{len(failed)} decision(s) failed: {', '.join(failed)} (the reasons above say why)"
        )
    if limited := result.revert_limited:
        raise RevertsLimitedError(revert_limit_text(limited))
    return 0

"""``tf-thread-advisor run``: probe, calibrate, publish, restart (the Job's entry point).

Only flags live here: what the command does, and in which order it checks, writes and restarts,
is ``advisor.pipeline.run``, which a Python caller uses the same way.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, get_args

from advisor.cli._args import add_host_root, add_kubeconfig, default_of, pairs
from advisor.cli._output import emit
from advisor.cli._parser import Sections
from advisor.cli._progress import log_summary, progress_reporter
from advisor.cli._sweep_flags import add_sweep_flags, options_from_args
from advisor.models import RESTART, CpuFrom, ServingTarget, WorkloadRef
from advisor.pipeline import POD_NAMESPACE_ENV, Instruments, RunRequest


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="probe, calibrate and publish the advice (the Job's entry point)",
        description="Measure thread settings on this node and publish them: as a ConfigMap in the "
        "cluster (--configmap/--namespace), as ConfigMap YAML (--output), as an env file "
        "(--env-file), in any combination; with none of them the ConfigMap YAML goes to stdout. "
        "Names, output paths and cluster access are checked before the sweep. An existing advice "
        "measured with a bigger --budget is kept (exit 13) unless --force.",
    )
    add_sweep_flags(parser)
    publish = parser.add_argument_group("publishing")
    publish.add_argument("--configmap", metavar="NAME", help="write the advice to this ConfigMap")
    publish.add_argument(
        "--namespace",
        metavar="NS",
        help=f"namespace of the ConfigMap (default: ${POD_NAMESPACE_ENV}, set by the Job); "
        "only with --configmap",
    )
    publish.add_argument(
        "--output", metavar="FILE", help="write the ConfigMap YAML to FILE ('-' for stdout)"
    )
    publish.add_argument(
        "--env-file", metavar="FILE", type=Path, help="write KEY=VALUE lines (docker --env-file)"
    )
    publish.add_argument(
        "--force",
        action="store_true",
        default=default_of(RunRequest, "force"),
        help="replace a stored advice even if it was measured with a bigger budget or not by us",
    )
    publish.add_argument(
        "--node-label",
        metavar="K=V",
        action="append",
        default=[],
        help="record a node label in the provenance (repeatable; reading Node objects would need "
        "cluster-wide RBAC)",
    )
    publish.add_argument(
        "--node-selector",
        metavar="K=V",
        action="append",
        default=[],
        help="record a pair of this Job's nodeSelector in the provenance (repeatable; also a "
        "node label): status reports consumers not pinned to the same node pool "
        "(node-pool-differs); the chart passes its target's",
    )
    publish.add_argument(
        "--configmap-annotation",
        metavar="K=V",
        action="append",
        default=[],
        help="also put this annotation on the ConfigMap (repeatable), e.g. "
        "reloader.stakater.com/match=true for Stakater Reloader's search mode",
    )
    publish.add_argument(
        RESTART.run_flag,
        metavar="KIND/NAME",
        action="append",
        default=[],
        type=_workload,
        help="after the ConfigMap write, restart this deployment/NAME or statefulset/NAME in "
        "its namespace by setting its pod template's tf-thread-advisor.io/advice-hash annotation "
        "to the advice's content hash (unchanged advice: no rollout); repeatable; each is "
        "checked before the sweep",
    )
    add_kubeconfig(publish)
    _add_target_arguments(parser)
    timeout = default_of(RunRequest, "cluster_timeout_s")
    parser.add_argument(
        "--cluster-timeout",
        metavar="S",
        type=float,
        default=timeout,
        help=f"bound on all API retries of one cluster operation, seconds (default {timeout:g})",
    )
    add_host_root(parser)
    parser.set_defaults(func=run)


def _add_target_arguments(parser: Sections) -> None:
    """The serving container the advice is measured for, recorded in its provenance (fleet
    mode's calibration Jobs pass them; ``plan`` and ``status`` read them back)."""
    target = parser.add_argument_group(
        "serving target",
        "record which serving container the advice is for; --for-workload and --for-container "
        "go together, the others need them",
    )
    target.add_argument(
        "--for-workload",
        metavar="KIND/NAME",
        help="the deployment/NAME or statefulset/NAME whose container the advice is measured "
        "for (kubectl's short names too; recorded as deployment/NAME)",
    )
    target.add_argument("--for-container", metavar="NAME", help="that workload's serving container")
    target.add_argument("--serving-image", metavar="IMAGE", help="the serving container's image")
    target.add_argument(
        "--serving-model-path",
        metavar="PATH",
        help="the model's path inside the serving container",
    )
    cpu_from = ServingTarget.model_fields["cpu_from"].default
    target.add_argument(
        "--cpu-from",
        choices=get_args(CpuFrom),
        help="what this run's CPU quota stands for: the container's CPU limit, or its CPU "
        "request (a container without a limit; the Job's limits.cpu is then that request); "
        f"status compares consumers with it (default {cpu_from})",
    )
    target.add_argument(
        "--spec-hash",
        metavar="HASH",
        help="hash of the calibration spec the Job was derived from (plan compares it)",
    )
    target.add_argument(
        "--spec-field",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="one field of that calibration spec, recorded with the advice so plan can name "
        "what changed since (repeatable; plan's Jobs pass them)",
    )


def _workload(text: str) -> Any:
    try:
        return WorkloadRef.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} {exc}") from None


def run(args: argparse.Namespace, instruments: Instruments) -> int:
    from advisor.pipeline import prepare_run, serving_target

    request = RunRequest(
        options=options_from_args(args),
        configmap=args.configmap,
        # the Downward API's namespace fills in for --configmap only; an explicit --namespace
        # without it is refused by the pipeline, before the sweep
        namespace=args.namespace
        or (os.environ.get(POD_NAMESPACE_ENV) if args.configmap else None)
        or None,
        output=args.output,
        env_file=args.env_file,
        node_labels=pairs(args.node_label, "--node-label"),
        node_selector=pairs(args.node_selector, "--node-selector"),
        annotations=pairs(args.configmap_annotation, "--configmap-annotation"),
        restart=tuple(args.restart),
        target=serving_target(
            for_workload=args.for_workload,
            for_container=args.for_container,
            serving_image=args.serving_image,
            serving_model_path=args.serving_model_path,
            cpu_from=args.cpu_from,
            spec_hash=args.spec_hash,
            spec_fields=pairs(args.spec_field, "--spec-field"),
        ),
        force=args.force,
        kubeconfig=args.kubeconfig,
        cluster_timeout_s=args.cluster_timeout,
        host_root=args.host_root,
    )
    prepared = prepare_run(request, instruments)
    with progress_reporter(log_format=args.log_format) as progress:
        result = prepared.measure(progress)
    published = prepared.publish(result)
    log_summary(result)
    if request.prints:
        emit(published.text)
    return 0

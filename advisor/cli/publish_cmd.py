"""``run`` (probe, calibrate, publish, restart: the Job's entry point), ``validate`` and ``check``.

Only flags live here: what the commands do, and in which order they check, write and restart, is
``advisor.pipeline``, which a Python caller uses the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from advisor.cli._args import add_host_root
from advisor.cli._output import emit
from advisor.errors import CheckMismatchError, UsageError
from advisor.pipeline.source import POD_NAMESPACE_ENV


def register(subparsers: Any) -> None:
    from advisor.cli.calibrate_cmd import add_calibration_arguments

    run_parser = subparsers.add_parser(
        "run",
        help="probe, calibrate and publish the advice (the Job's entry point)",
        description="Measure thread settings on this node and publish them: as a ConfigMap in the "
        "cluster (--configmap/--namespace), as ConfigMap YAML (--output), as an env file "
        "(--env-file), in any combination; with none of them the ConfigMap YAML goes to stdout. "
        "Names, output paths and cluster access are checked before the sweep. An existing advice "
        "measured with a bigger --budget is kept (exit 13) unless --force.",
    )
    add_calibration_arguments(run_parser)
    publish = run_parser.add_argument_group("publishing")
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
        "--restart",
        metavar="KIND/NAME",
        action="append",
        default=[],
        type=_workload,
        help="after the ConfigMap write, restart this deployment/NAME or statefulset/NAME in "
        "its namespace by setting its pod template's tf-thread-advisor.io/advice-hash annotation "
        "to the advice's content hash (unchanged advice: no rollout); repeatable; each is "
        "checked before the sweep",
    )
    add_cluster_arguments(publish)
    run_parser.add_argument(
        "--cluster-timeout",
        metavar="S",
        type=float,
        default=60.0,
        help="bound on all API retries of one cluster operation, seconds (default 60)",
    )
    add_host_root(run_parser)
    run_parser.set_defaults(func=run)

    validate_parser = subparsers.add_parser(
        "validate",
        help="check a ConfigMap (file, stdin or in the cluster) against the advice model",
        description="Exit 0 and print 'ok: ...' when the ConfigMap holds a valid advice (env "
        "names and values, provenance, content hash); otherwise exit 6 with one line.",
    )
    validate_parser.add_argument("file", nargs="?", metavar="FILE|-", help="ConfigMap YAML")
    validate_parser.add_argument("--configmap", metavar="NAME", help="fetch this ConfigMap")
    validate_parser.add_argument("--namespace", metavar="NS", help="namespace of --configmap")
    add_cluster_arguments(validate_parser)
    validate_parser.set_defaults(func=validate)

    check_parser = subparsers.add_parser(
        "check",
        help="compare this node with the one the advice was measured on",
        description="Probe this node and compare it with the advice's provenance (from "
        "--configmap-file or --configmap) and with the advice env of this process: CPUs, "
        "quota, CPU model, TF version, thread counts. Differences are warnings on stderr; with "
        "--strict they exit 11.",
    )
    source = check_parser.add_mutually_exclusive_group()
    source.add_argument("--configmap-file", metavar="FILE", help="ConfigMap YAML ('-' = stdin)")
    source.add_argument("--configmap", metavar="NAME", help="fetch this ConfigMap")
    check_parser.add_argument("--namespace", metavar="NS", help="namespace of --configmap")
    check_parser.add_argument("--strict", action="store_true", help="exit 11 on any difference")
    add_cluster_arguments(check_parser)
    add_host_root(check_parser)
    check_parser.set_defaults(func=check)


def add_cluster_arguments(parser: Any) -> None:
    """``--kubeconfig`` (every command that talks to a cluster)."""
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        type=Path,
        help="kubeconfig to use (default: in-cluster ServiceAccount, else $KUBECONFIG)",
    )


def _workload(text: str) -> Any:
    from advisor.cluster.workloads import parse_workload

    try:
        return parse_workload(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} {exc}") from None


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    """``K=V`` words as a dict; the keys and values are checked by the pipeline."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"{flag} {item!r}: must be KEY=VALUE")
        pairs[key] = value
    return pairs


# --------------------------------------------------------------------------------------------------
# run


def run(args: argparse.Namespace) -> int:
    from advisor.cli.calibrate_cmd import log_summary, options_from_args, progress_reporter
    from advisor.pipeline import RunRequest, prepare_run

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
        node_labels=_pairs(args.node_label, "--node-label"),
        node_selector=_pairs(args.node_selector, "--node-selector"),
        annotations=_pairs(args.configmap_annotation, "--configmap-annotation"),
        restart=tuple(args.restart),
        force=args.force,
        kubeconfig=args.kubeconfig,
        cluster_timeout_s=args.cluster_timeout,
        host_root=args.host_root,
    )
    prepared = prepare_run(request)
    with progress_reporter(log_format=args.log_format) as progress:
        result = prepared.measure(progress)
    published = prepared.publish(result)
    log_summary(result)
    if request.output == "-" or request.writes_nothing:
        emit(published.text)
    return 0


# --------------------------------------------------------------------------------------------------
# validate and check: reading an advice back


def _read(args: argparse.Namespace, flag: str, path: str | None) -> Any:
    from advisor.pipeline import read_advice_file, read_cluster_advice

    if args.configmap is not None:
        return read_cluster_advice(args.configmap, args.namespace, args.kubeconfig)
    assert path is not None
    return read_advice_file(path, flag)


def validate(args: argparse.Namespace) -> int:
    from advisor.recommend import describe

    if (args.file is None) == (args.configmap is None):
        raise UsageError("validate needs exactly one of FILE|- or --configmap NAME")
    if args.file is not None and (args.namespace or args.kubeconfig):
        raise UsageError("--namespace and --kubeconfig only apply with --configmap")
    emit(f"ok: {describe(_read(args, 'validate', args.file))}\n")
    return 0


def check(args: argparse.Namespace) -> int:
    from advisor.pipeline import drift
    from advisor.pipeline.drift import has_advice_env
    from advisor.probe import probe_node
    from advisor.recommend import describe

    if args.configmap is None and (args.namespace or args.kubeconfig):
        raise UsageError("--namespace and --kubeconfig only apply with --configmap")
    parsed = None
    if args.configmap_file is not None or args.configmap is not None:
        parsed = _read(args, "--configmap-file", args.configmap_file)
    elif not has_advice_env(os.environ):
        from advisor.models import ADVICE_ENV_NAMES

        raise UsageError(
            "nothing to check: give --configmap-file, --configmap, or run with the advice env "
            f"({', '.join(ADVICE_ENV_NAMES)})"
        )
    differences = drift(parsed, probe_node(args.host_root), os.environ)
    subject = describe(parsed) if parsed is not None else "the advice env of this process"
    if not differences:
        emit(f"ok: this node matches {subject}\n")
        return 0
    if args.strict:
        raise CheckMismatchError(
            f"{len(differences)} difference(s) from {subject}: " + "; ".join(differences)
        )
    for line in differences:
        print(f"warning: {line}", file=sys.stderr)
    emit(f"ok with {len(differences)} warning(s): {subject}\n")
    return 0

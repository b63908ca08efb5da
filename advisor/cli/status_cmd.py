"""``tf-thread-advisor status``: every advice ConfigMap and the containers that read it, as a
table, JSON, YAML, CSV, Markdown or HTML (``advisor.render.status``).

Read-only: it lists ConfigMaps by the advisor's labels, and the workloads and pods of the same
namespace to find their consumers (get/list on configmaps, list on deployments, statefulsets,
daemonsets and pods; see deploy/examples/advice-reader.yaml for the Role a person or a dashboard
uses).
"""

from __future__ import annotations

import argparse
from typing import Any

from advisor.cli._args import add_kubeconfig, add_prometheus, duration, prometheus_settings
from advisor.cli._output import add_format, emit
from advisor.errors import ProblemsFoundError
from advisor.pipeline import Instruments
from advisor.pipeline.source import CLUSTER_TIMEOUT_S
from advisor.render import formats
from advisor.render.status import StatusView, problems_line


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status",
        help="list every advice ConfigMap: what it advises, what it was measured on, if stale",
        description="List the advice ConfigMaps (found by the advisor's labels) in a namespace "
        "or in all of them: the thread settings, the node pool and CPUs they were measured on, "
        "the range of settings within noise (where known), the gain over TF's default, trials, "
        "budget, TF version, age, and whether the advice is stale (the advisor or TensorFlow "
        "changed since, or it is older than --max-age). Then the containers of Deployments, "
        "StatefulSets, DaemonSets and bare Pods that read each advice, with their CPU limit and "
        "problems (cpu-limit-differs, cpu-request-differs, no-cpu-limit, node-pool-differs, "
        "advice-overridden, resize-restarts-nothing, pods-predate-advice, advice-missing); an "
        "advice nobody reads "
        "is unused; and the newest "
        "calibration Job plan created for each advice, with its state. Needs get/list on "
        "configmaps and list on deployments, statefulsets, daemonsets and pods (and list on "
        "jobs for the calibration Jobs). With --prometheus-url, each consumer's production "
        "verdict (improved, unchanged, regressed or unknown) from its serving pods' throttling, "
        "CPU and, where its workload names a latency query, p99, before the advice's data "
        "changed and after its pods started with it.",
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--namespace",
        metavar="NS",
        help="namespace to list (default: $TFTA_POD_NAMESPACE, then the kubeconfig context's)",
    )
    scope.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="list every namespace (needs the ClusterRole of deploy/examples/advice-reader.yaml)",
    )
    add_format(parser, StatusView, "table")
    parser.add_argument(
        "--max-age",
        metavar="DURATION",
        type=duration,
        default=None,
        help="call advice older than this stale, e.g. 30d, 12h, 1d12h (default: no age limit)",
    )
    consumers = parser.add_mutually_exclusive_group()
    consumers.add_argument(
        "--fail-on-problems",
        action="store_true",
        help="after the output, exit 16 if any consumer has a problem (for CI and alerting)",
    )
    consumers.add_argument(
        "--no-consumers",
        action="store_true",
        help="list the advice only, without their consumers (needs get/list on configmaps only)",
    )
    add_kubeconfig(parser)
    parser.add_argument(
        "--cluster-timeout",
        metavar="S",
        type=float,
        default=CLUSTER_TIMEOUT_S,
        help=f"bound on all API retries of the listing, seconds (default {CLUSTER_TIMEOUT_S:g}); "
        "an API server that cannot be connected to is given up after about 3 s",
    )
    add_prometheus(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, _instruments: Instruments) -> int:
    from advisor.pipeline import cluster_status

    found = cluster_status(
        args.namespace,
        all_namespaces=args.all_namespaces,
        kubeconfig=args.kubeconfig,
        max_age=args.max_age,
        cluster_timeout_s=args.cluster_timeout,
        consumers=not args.no_consumers,
        prometheus=prometheus_settings(args),
        window=args.window,
        warm_up=args.warm_up,
    )
    emit(formats.render(StatusView(found), args.format))
    if args.fail_on_problems and found.problems:
        raise ProblemsFoundError(problems_line(found.rows))
    return 0

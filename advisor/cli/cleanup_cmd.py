"""``tf-thread-advisor cleanup``: delete advice ConfigMaps, e.g. from the chart's uninstall hook.

Only the ConfigMaps named on the command line, and of those only the ones carrying the advisor's
labels: a ConfigMap of the same name that someone else wrote is kept and reported
(``advisor.pipeline.cleanup``).
"""

from __future__ import annotations

import argparse
from typing import Any

from advisor.cli._args import add_kubeconfig
from advisor.cli._output import emit
from advisor.pipeline import Instruments, cleanup


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cleanup",
        help="delete advice ConfigMaps written by tf-thread-advisor (the uninstall hook)",
        description="Delete each --configmap in --namespace if it carries tf-thread-advisor's "
        "labels (app.kubernetes.io/name and app.kubernetes.io/managed-by = tf-thread-advisor); "
        "one that does not is kept and reported, one that is gone already is fine. Needs get "
        "and delete on those ConfigMaps, nothing else.",
    )
    parser.add_argument(
        "--configmap",
        metavar="NAME",
        action="append",
        required=True,
        help="an advice ConfigMap to delete (repeatable)",
    )
    parser.add_argument(
        "--namespace", metavar="NS", required=True, help="namespace of the ConfigMaps"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="ask the API server what would be deleted (dryRun=All); change nothing",
    )
    add_kubeconfig(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, _instruments: Instruments) -> int:
    outcomes = cleanup(
        args.configmap, args.namespace, kubeconfig=args.kubeconfig, dry_run=args.dry_run
    )
    emit("".join(f"{o.action}: {o.where}{f' ({o.why})' if o.why else ''}\n" for o in outcomes))
    return 0

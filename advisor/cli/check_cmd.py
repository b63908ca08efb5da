"""``tf-thread-advisor check``: compare this node with the one an advice was measured on
(``advisor.pipeline.check``); differences are warnings, or exit 11 with ``--strict``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from advisor.cli._args import add_host_root, add_kubeconfig
from advisor.cli._output import emit
from advisor.pipeline import Instruments


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="compare this node with the one the advice was measured on",
        description="Probe this node and compare it with the advice's provenance (from "
        "--configmap-file or --configmap) and with the advice env of this process: CPUs, "
        "quota, CPU model, TF version, thread counts. Differences are warnings on stderr; with "
        "--strict they exit 11.",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--configmap-file", metavar="FILE", help="ConfigMap YAML ('-' = stdin)")
    source.add_argument("--configmap", metavar="NAME", help="fetch this ConfigMap")
    parser.add_argument("--namespace", metavar="NS", help="namespace of --configmap")
    parser.add_argument("--strict", action="store_true", help="exit 11 on any difference")
    add_kubeconfig(parser)
    add_host_root(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, instruments: Instruments) -> int:
    from advisor.pipeline import check_node

    outcome = check_node(
        configmap_file=args.configmap_file,
        configmap=args.configmap,
        namespace=args.namespace,
        kubeconfig=args.kubeconfig,
        strict=args.strict,
        host_root=args.host_root,
        instruments=instruments,
    )
    if not outcome.differences:
        emit(f"ok: this node matches {outcome.subject}\n")
        return 0
    for line in outcome.differences:
        print(f"warning: {line}", file=sys.stderr)
    emit(f"ok with {len(outcome.differences)} warning(s): {outcome.subject}\n")
    return 0

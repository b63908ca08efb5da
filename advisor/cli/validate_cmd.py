"""``tf-thread-advisor validate``: check a ConfigMap against the advice model, as every write does
(``advisor.pipeline.source.validate_advice``)."""

from __future__ import annotations

import argparse
from typing import Any

from advisor.cli._args import add_kubeconfig
from advisor.cli._output import emit
from advisor.pipeline import Instruments, validate_advice


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check a ConfigMap (file, stdin or in the cluster) against the advice model",
        description="Exit 0 and print 'ok: ...' when the ConfigMap holds a valid advice (env "
        "names and values, provenance, content hash); otherwise exit 6 with one line.",
    )
    parser.add_argument("file", nargs="?", metavar="FILE|-", help="ConfigMap YAML")
    parser.add_argument("--configmap", metavar="NAME", help="fetch this ConfigMap")
    parser.add_argument("--namespace", metavar="NS", help="namespace of --configmap")
    add_kubeconfig(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, _instruments: Instruments) -> int:
    described = validate_advice(
        args.file, configmap=args.configmap, namespace=args.namespace, kubeconfig=args.kubeconfig
    )
    emit(f"ok: {described}\n")
    return 0

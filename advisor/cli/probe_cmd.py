"""``tf-thread-advisor probe``: print what a TF process started here really has to run on."""

from __future__ import annotations

import argparse
from typing import Any

from advisor.cli._args import add_host_root
from advisor.cli._output import add_format, emit
from advisor.pipeline import Instruments, profile_node
from advisor.render import formats
from advisor.render.summaries import NodeView


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "probe",
        help="show affinity, CFS quota and topology, and the effective CPU count",
        description="Profile this process's CPUs: affinity mask, the tightest cgroup CPU quota "
        "of its group and every ancestor, topology and ISA flags. Nothing is written.",
    )
    add_format(parser, NodeView, "text")
    add_host_root(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, instruments: Instruments) -> int:
    profile = profile_node(args.host_root, instruments)
    emit(formats.render(NodeView(profile), args.format))
    return 0

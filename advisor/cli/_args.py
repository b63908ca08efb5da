"""Flags more than one subcommand takes, defined once."""

from __future__ import annotations

import argparse
from pathlib import Path


def _host_root_dir(value: str) -> Path:
    # A mistyped --host-root would otherwise read as "nothing readable" (a probe error, exit 3)
    # and send people looking at the node instead of at the flag.
    path = Path(value)
    if not path.is_dir():
        problem = "is not a directory" if path.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"{value}: {problem}")
    return path


def add_host_root(parser: argparse.ArgumentParser) -> None:
    """``--host-root``: where the probe reads /proc and /sys (fixture trees in tests)."""
    parser.add_argument(
        "--host-root",
        type=_host_root_dir,
        default=Path("/"),
        metavar="DIR",
        help="read /proc and /sys below DIR instead of / (for fixture trees; default /)",
    )


def add_global_flags(parser: argparse.ArgumentParser, *, in_command: bool) -> None:
    """``--debug``, ``--log-format``, ``--log-level``: before the subcommand or after it.

    Each subcommand parser defines them again, because argparse reads a flag only in the parser
    whose words it is parsing. There the default is SUPPRESS: a subcommand's parsed values are
    copied over the top-level ones, and an absent flag must not reset one given before it.
    """
    group = parser.add_argument_group("global options") if in_command else parser

    def default(value: object) -> object:
        return argparse.SUPPRESS if in_command else value

    group.add_argument(
        "--debug",
        action="store_true",
        default=default(False),
        help="print full tracebacks for unexpected errors",
    )
    group.add_argument(
        "--log-format",
        choices=["text", "json"],
        default=default("text"),
        help="log lines on stderr as plain text (default) or one JSON object per line",
    )
    group.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        default=default("info"),
        help="least severe log lines shown on stderr (default info; results go to stdout)",
    )


def add_kubeconfig(parser: argparse.ArgumentParser) -> None:
    """``--kubeconfig``: which cluster to talk to (advisor.cluster.connect's order otherwise)."""
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        type=Path,
        help="kubeconfig to use (default: in-cluster ServiceAccount, else $KUBECONFIG)",
    )

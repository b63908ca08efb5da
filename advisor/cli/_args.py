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

"""``--format`` from the registry of output formats, and the result on stdout."""

from __future__ import annotations

import argparse
import sys

from advisor.errors import OutputError
from advisor.render import formats
from advisor.render.document import View


def add_format(parser: argparse.ArgumentParser, view: type[View], default: str) -> None:
    """``--format``: every registered format that fits what the command shows (``view``)."""
    parser.add_argument(
        "--format",
        choices=formats.names(view),
        default=default,
        help=f"output format (default: {default})",
    )


def emit(text: str) -> None:
    """The command's result on stdout, flushed now: a full disk or a closed pipe behind
    ``> file`` is an OutputError (exit 12), not an internal error or a silent exit 120."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise  # the reader left (``| head``): main() exits quietly
    except OSError as exc:
        raise OutputError(f"stdout: cannot write the result ({exc.strerror or exc})") from None

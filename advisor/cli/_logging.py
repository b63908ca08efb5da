"""Log lines for people (TTY or ``kubectl logs``) or for log pipelines (``--log-format json``)."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import sys
import time

from advisor.cli._args import flag
from advisor.errors import Opt


def _timestamp(created: float) -> str:
    msecs = int((created - int(created)) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{msecs:03d}Z"


def _spelled(record: logging.LogRecord) -> logging.LogRecord:
    """The record with its ``Opt`` arguments spelled as flags: log lines name options as the
    command line does. A copy: other handlers (an embedder's) see the record as it was."""
    args = record.args
    if not isinstance(args, tuple) or not any(isinstance(a, Opt) for a in args):
        return record
    spelled = copy.copy(record)
    spelled.args = tuple(flag(a) if isinstance(a, Opt) else a for a in args)
    return spelled


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return super().format(_spelled(record))


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record = _spelled(record)
        entry = {
            "time": _timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        return json.dumps(entry, ensure_ascii=False)


def error_json(message: str, exit_code: int) -> str:
    """The CLI's final one-line error as a log pipeline wants it (``--log-format json``)."""
    entry = {
        "time": _timestamp(time.time()),
        "level": "error",
        "logger": "advisor",
        "message": message,
        "exit_code": exit_code,
    }
    return json.dumps(entry, ensure_ascii=False)


def flush() -> None:
    """Push out what the ``advisor`` handlers hold, before a final error line follows them."""
    for handler in logging.getLogger("advisor").handlers:
        # a handler left by an earlier in-process call may hold a closed stream (as shutdown())
        with contextlib.suppress(OSError, ValueError):
            handler.flush()


def configure(log_format: str, level: str) -> None:
    """Send the ``advisor`` loggers to stderr; stdout stays for the command's result."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(
            _TextFormatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%dT%H:%M:%S")
        )
    root = logging.getLogger("advisor")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False

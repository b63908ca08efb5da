"""What one side of a command gave, what is taken out of it before the two sides are compared, and
how a difference is shown.

Taken out, because it varies from run to run or from server to server and says nothing about the
code: the time at the start of each text log line and the ``time`` of each JSON log line (the
log's clock is the real one), the port of a fake server on 127.0.0.1, the folder a fake
server's kubeconfig is in (a command that writes runs against one fresh server per side) and the
checkout's own folder.
Nothing else is: a duration the advisor prints would show as a difference (none of the compared
commands prints one; see ``--self-check``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

#: the start of a text log line (``%(asctime)s``, testkit's TZ is UTC)
_LOG_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?Z? ", re.MULTILINE)
#: the time of a JSON log line (``--log-format json``)
_JSON_TIME = re.compile(r'"time": "[^"]*"')
_PORT = re.compile(r"(127\.0\.0\.1|localhost):\d+")


@dataclass(frozen=True)
class Outcome:
    """One side's answer: exit code, stdout, stderr and, for a command that writes, what the
    fake API server holds after it (``objects``, see harness.snapshot)."""

    code: int
    stdout: str
    stderr: str
    objects: str = ""


@dataclass(frozen=True)
class Normalizer:
    """Takes out what varies between runs and sides: each of ``folders`` (a scene's, a
    checkout's) is replaced by its word, in their order."""

    folders: tuple[tuple[str, str], ...] = field(default=())

    def __call__(self, text: str, *, log: bool = False) -> str:
        for folder, word in self.folders:
            text = text.replace(folder, word)
        text = _PORT.sub(r"\1:<port>", text)
        if log:
            text = _LOG_TIME.sub("<time> ", text)
            text = _JSON_TIME.sub('"time": "<time>"', text)
        return text

    def outcome(self, outcome: Outcome) -> Outcome:
        return Outcome(
            outcome.code,
            self(outcome.stdout),
            self(outcome.stderr, log=True),
            self(outcome.objects),
        )


def differences(base: Outcome, branch: Outcome, *, limit: int = 30) -> list[str]:
    """The first ``limit`` lines of a unified diff of each part that differs (exit code, stdout,
    stderr, the server's objects); empty when the two are byte-identical."""
    lines: list[str] = []
    if base.code != branch.code:
        lines.append(f"exit code: base {base.code}, branch {branch.code}")
    for part in ("stdout", "stderr", "objects"):
        a, b = getattr(base, part), getattr(branch, part)
        if a != b:
            lines += _diff(part, a, b)
    return lines[:limit]


def _diff(part: str, a: str, b: str) -> Iterable[str]:
    diff = difflib.unified_diff(
        a.splitlines(keepends=True),
        b.splitlines(keepends=True),
        fromfile=f"base {part}",
        tofile=f"branch {part}",
    )
    for line in diff:
        if line.endswith("\n"):
            yield line[:-1]
        else:  # the last line without a newline: say so, or a missing newline shows as nothing
            yield line + "  [no newline at end]"

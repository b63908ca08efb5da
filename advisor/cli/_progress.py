"""What ``calibrate`` and ``run`` print while they measure and when they are done.

The sweep's ``Progress`` events are drawn as a bar on a terminal, from the elapsed and budget
numbers they carry; anywhere else the sweep logs them as plain lines. The run's short story (the
advice, the incumbent, the gain) follows as log lines.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
from collections.abc import Iterator
from typing import TextIO

from advisor.models import CalibrationResult, Progress, ProgressFn
from advisor.render.words import summary_lines

_BAR_CELLS = 20


def bar_line(event: Progress) -> str:
    """A progress line with its elapsed/budget drawn as a bar (other events: their text)."""
    if event.elapsed_s is None or event.budget_s is None:
        return event.text
    # whole seconds, rounded as the plain log line shows them
    elapsed, budget = round(event.elapsed_s), round(event.budget_s)
    filled = min(_BAR_CELLS, round(_BAR_CELLS * elapsed / budget)) if budget > 0 else _BAR_CELLS
    bar = "#" * filled + "." * (_BAR_CELLS - filled)
    return f"[{bar}] {elapsed:>3}/{budget} s  {event.text}"


class _Bar:
    """One line rewritten in place (\\r) on a terminal: the latest event, fitted to its width."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = False

    def __call__(self, event: Progress) -> None:
        width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
        line = bar_line(event)
        text = line if len(line) <= width else line[: width - 1] + "\u2026"
        self.stream.write("\r" + text.ljust(width))
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


@contextlib.contextmanager
def progress_reporter(
    stream: TextIO | None = None, *, log_format: str = "text"
) -> Iterator[ProgressFn | None]:
    """A progress bar on a terminal; None otherwise (calibrate then logs plain lines), and
    always None under ``--log-format json``, whose stderr lines must each be a JSON object.

    The runner's own per-trial info lines are held back (unless --log-level debug): the
    search's progress lines already carry the same numbers, and on a terminal they would tear
    the bar.
    """
    stream = stream if stream is not None else sys.stderr
    runner_log = logging.getLogger("advisor.trials.runner")
    level = runner_log.level
    if runner_log.getEffectiveLevel() == logging.INFO:
        runner_log.setLevel(logging.WARNING)
    bar = _Bar(stream) if stream.isatty() and log_format != "json" else None
    try:
        yield bar
    finally:
        runner_log.setLevel(level)
        if bar is not None:
            bar.finish()


def log_summary(result: CalibrationResult) -> None:
    """The run's short story on stderr, after the progress bar: the advice, the incumbent and
    whether it was kept, the range within noise, the gain (as log lines, so ``--log-format json``
    keeps every stderr line a JSON object)."""
    summary = logging.getLogger("advisor.summary")
    for line in summary_lines(result):
        summary.info("%s", line)

"""One ``plan`` in a fresh process, as a person or the nightly CronJob runs it, timed by part:
``python -m benchmarks.fleet_child REPORT -- PLAN ARGS``. ``benchmarks/fleet.py`` starts it and
times the whole process from outside; this writes to REPORT (JSON) what the parts took:

- ``imports``: the CLI, plan's pipeline and the kubernetes client package it connects with (the
  command's own module is imported as the command line is parsed: counted with the rest);
- ``listing``: every list the planner reads (``pipeline.plan._list``): HTTP, JSON, the views;
- ``deciding``: what it decides over them (``pipeline.plan._decide``): deriving each Job, parsing
  each advice, comparing each spec;
- ``total``: from the child's first line to the decisions printed (the rest is connecting,
  wording and printing them); the process's start before that is the parent's figure less this.

Its stdout (the plan) goes nowhere: only the time to make it counts.
"""

from __future__ import annotations

import time

START = time.perf_counter()

import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402


def timed(parts: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, adding the seconds each call takes to ``parts[name]``."""

    def call(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            parts[name] = parts.get(name, 0.0) + time.perf_counter() - began

    return call


def main(argv: list[str]) -> int:
    report, separator, *plan_args = argv
    if separator != "--":
        raise SystemExit("usage: python -m benchmarks.fleet_child REPORT -- PLAN ARGS")
    import kubernetes  # noqa: F401  (what connecting imports, counted with the imports)

    from advisor.cli import main as cli
    from advisor.pipeline import plan as pipeline

    parts: dict[str, float] = {"imports": time.perf_counter() - START}
    decisions: list[str] = []
    decide = timed(parts, "deciding", pipeline._decide)

    def deciding(*args: Any, **kwargs: Any) -> Any:
        decided = decide(*args, **kwargs)
        decisions.extend(item.decision for item in decided)
        return decided

    pipeline._list = timed(parts, "listing", pipeline._list)
    pipeline._decide = deciding
    # run as the program is (``main`` without argv), not as a caller in a process of its own
    sys.argv = ["tf-thread-advisor", "plan", *plan_args]
    with Path(os.devnull).open("w") as nowhere, contextlib.redirect_stdout(nowhere):
        code = cli()
    parts["total"] = time.perf_counter() - START
    answer = {"code": code, "parts": parts, "decisions": decisions}
    Path(report).write_text(json.dumps(answer), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

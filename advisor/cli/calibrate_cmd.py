"""``tf-thread-advisor calibrate``: measure thread settings here and print the advice.

Flags are checked before anything starts (no probe, no TensorFlow child): a budget that cannot
measure anything or an SLO objective without its bound is a usage error in milliseconds, not after
a minute of trials. ``add_calibration_arguments`` and ``options_from_args`` are shared with ``run``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from advisor.cli._args import add_host_root
from advisor.cli._output import FORMATS, emit, render
from advisor.errors import UsageError, first_error
from advisor.models import DEFAULT_BUDGET_S, CalibrationOptions, CalibrationResult
from advisor.objectives import DEFAULT_OBJECTIVE, OBJECTIVES, bounded_names
from advisor.pipeline.calibrate import calibrate
from advisor.pipeline.files import check_output_path
from advisor.probe import probe_node
from advisor.render.report import write_report
from advisor.render.table import text_summary
from advisor.render.words import summary_lines

#: The smallest --budget accepted, in seconds: inspecting the model (one child: TF start-up and a
#: model load, ~4-5 s here) plus the baseline and two settings at the screen's longest trial, as
#: spawned trials (the fallback) cost them: 3.5 s of start-up + 0.2 s warm-up + a 1.2 s window,
#: planned with 20% headroom: 5 + 3 x 5.9 = 22.6, rounded up with room for a slow inspection.
#: Anything less cannot compare even two settings with the TF default.
MIN_BUDGET_S = 25.0

#: CalibrationOptions fields whose flag is not simply the field name with dashes
_FLAG_OF_FIELD = {"model_path": "--model", "budget_s": "--budget", "p99_slo_ms": "--p99-ms"}


def _positive_int(name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be a whole number, got {text!r}"
            ) from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{name} must be at least 1, got {value}")
        return value

    return parse


def _positive_float(name: str, unit: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(
                f"{name} must be a positive number of {unit}, got {text!r}"
            )
        return value

    return parse


def _bounded() -> str:
    """``slo``: the objectives ``--p99-ms`` applies to."""
    return " or ".join(bounded_names())


def add_calibration_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that describe a calibration (``calibrate`` and ``run`` share them)."""
    group = parser.add_argument_group("calibration")
    group.add_argument(
        "--model",
        metavar="PATH",
        default=None,
        help="SavedModel directory or .keras file to measure (default: a built-in CNN workload)",
    )
    group.add_argument(
        "--signature",
        metavar="NAME",
        default="serving_default",
        help="SavedModel signature to call (default: serving_default)",
    )
    group.add_argument(
        "--batch-size",
        metavar="N",
        type=_positive_int("--batch-size"),
        default=1,
        help="fills unknown batch dimensions of the inputs (default: 1)",
    )
    group.add_argument(
        "--concurrency",
        metavar="N",
        type=_positive_int("--concurrency"),
        default=1,
        help="requests kept in flight, as a server would (default: 1)",
    )
    group.add_argument(
        "--objective",
        choices=list(OBJECTIVES),
        default=DEFAULT_OBJECTIVE,
        help="; ".join(
            f"{name}: {objective.help}" + (" (default)" if name == DEFAULT_OBJECTIVE else "")
            for name, objective in OBJECTIVES.items()
        ),
    )
    group.add_argument(
        "--p99-ms",
        metavar="X",
        type=_positive_float("--p99-ms", "milliseconds"),
        default=None,
        help=f"the p99 bound for --objective {_bounded()}, in milliseconds",
    )
    group.add_argument(
        "--budget",
        metavar="S",
        type=_positive_float("--budget", "seconds"),
        default=DEFAULT_BUDGET_S,
        help=f"hard wall-clock limit for the whole calibration, seconds (default "
        f"{DEFAULT_BUDGET_S:g}, at least {MIN_BUDGET_S:g})",
    )
    group.add_argument(
        "--sweep-onednn",
        action="store_true",
        help="also measure TF_ENABLE_ONEDNN_OPTS=0 against =1 on the advised setting (a third "
        "of the budget); the advice sets it only when one value wins beyond noise",
    )
    group.add_argument(
        "--trial-mode",
        choices=("auto", "fork", "spawn"),
        default="auto",
        help="how trial processes start: fork (from one process that imported TensorFlow "
        "once; fast), spawn (a new process each; slow), auto (fork, falling back to spawn if "
        "forking fails; default)",
    )


def options_from_args(args: argparse.Namespace) -> CalibrationOptions:
    """CalibrationOptions from parsed flags; UsageError (one line) for combinations that make
    no sense."""
    objective = OBJECTIVES.get(args.objective)  # an unknown one fails the options' validation
    bounded = objective is not None and objective.bounded_by is not None
    if bounded and args.p99_ms is None:
        raise UsageError(
            f"--objective {args.objective} needs --p99-ms X (the p99 bound in milliseconds)"
        )
    if not bounded and args.p99_ms is not None:
        raise UsageError(f"--p99-ms only applies to --objective {_bounded()}")
    if args.budget < MIN_BUDGET_S:
        raise UsageError(
            f"--budget {args.budget:g} s is too small to measure anything: at least "
            f"{MIN_BUDGET_S:g} s are needed for the model check, the TF default and two settings"
        )
    if args.model is not None and not str(args.model).strip():
        raise UsageError("--model must not be empty")
    try:
        return CalibrationOptions(
            model_path=args.model,
            signature=args.signature,
            batch_size=args.batch_size,
            concurrency=args.concurrency,
            objective=args.objective,
            p99_slo_ms=args.p99_ms,
            budget_s=args.budget,
            trial_mode=args.trial_mode,
            sweep_onednn=args.sweep_onednn,
        )
    except ValidationError as exc:
        raise UsageError(first_error(exc, where=_flag_of)) from None


def _flag_of(loc: tuple[int | str, ...]) -> str:
    """The flag that set a CalibrationOptions field (none for the model as a whole)."""
    if not loc:
        return ""
    field = str(loc[0])
    return _FLAG_OF_FIELD.get(field, "--" + field.replace("_", "-"))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="measure TF thread settings on this node and print the advice",
        description="Run a short, budgeted sweep of TF_NUM_INTRAOP_THREADS / "
        "TF_NUM_INTEROP_THREADS on the model (each trial its own process, the TF default "
        "measured as the baseline) and print the setting that serves the objective best.",
    )
    add_calibration_arguments(parser)
    parser.add_argument(
        "--incumbent",
        metavar="FILE",
        default=None,
        help="a ConfigMap YAML holding the advice in force ('-' = stdin): it is raced as a "
        "named arm and stays the advice unless a setting beats it beyond noise (default: TF's "
        "default is the incumbent; `run` reads the advice it will replace by itself)",
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    parser.add_argument(
        "--report",
        metavar="FILE",
        type=Path,
        default=None,
        help="also write a report with an intra x inter heatmap: HTML, or SVG if FILE ends .svg",
    )
    add_host_root(parser)
    parser.set_defaults(func=run)


def _check_report_path(path: Path | None) -> None:
    """Refuse an unwritable --report before the sweep, not after it."""
    if path is not None:
        check_output_path("--report", path)


#: the "[ 11/60 s] ..." prefix the search puts on its progress lines
_ELAPSED = re.compile(r"^\[\s*(\d+)/(\d+) s\]\s*")
_BAR_CELLS = 20


def bar_line(line: str) -> str:
    """A progress line with its elapsed/budget prefix drawn as a bar."""
    match = _ELAPSED.match(line)
    if match is None:
        return line
    elapsed, budget = int(match.group(1)), int(match.group(2))
    filled = min(_BAR_CELLS, round(_BAR_CELLS * elapsed / budget)) if budget > 0 else _BAR_CELLS
    bar = "#" * filled + "." * (_BAR_CELLS - filled)
    return f"[{bar}] {elapsed:>3}/{budget} s  {line[match.end() :]}"


class _Bar:
    """One line rewritten in place (\\r) on a terminal: the latest event, fitted to its width."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = False

    def __call__(self, line: str) -> None:
        width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
        line = bar_line(line)
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
) -> Iterator[Callable[[str], None] | None]:
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


def run(args: argparse.Namespace) -> int:
    from advisor.pipeline.incumbent import read_incumbent

    options = options_from_args(args)
    _check_report_path(args.report)
    node = probe_node(args.host_root)
    incumbent = None
    if args.incumbent is not None:
        held = read_incumbent(args.incumbent, node, options)
        for note in held.notes:
            logging.getLogger("advisor.calibrate").warning("%s", note)
        incumbent = held.incumbent
    with progress_reporter(log_format=args.log_format) as progress:
        result = calibrate(options, node, progress=progress, incumbent=incumbent)
    if args.report is not None:
        write_report(result, args.report)
        logging.getLogger("advisor.calibrate").info("report written to %s", args.report)
    if args.format != "text":  # the text output ends with the same lines
        log_summary(result)
    emit(render(result, args.format, text_summary) + "\n")
    return 0

"""The flags that describe a sweep (``CalibrationOptions``), shared by ``calibrate`` and ``run``.

Their defaults and choices are read from ``CalibrationOptions``, and every rule about their
values (the budget floor, the SLO bound) is the model's: a flag here only parses a word. What the
model refuses becomes one usage line naming the flag.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import get_args

from pydantic import ValidationError

from advisor.cli._args import default_of
from advisor.cli._parser import Sections
from advisor.errors import usage_error
from advisor.models import MIN_BUDGET_S, CalibrationOptions, TrialMode
from advisor.objectives import DEFAULT_OBJECTIVE, OBJECTIVES, bounded_names


def objective_names() -> tuple[str, ...]:
    """The objectives ``--objective`` offers: the one place the CLI reads them from."""
    return tuple(OBJECTIVES)


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


def add_sweep_flags(parser: Sections) -> None:
    """The flags that describe a sweep (``calibrate`` and ``run`` share them)."""

    def default(field: str) -> object:
        return default_of(CalibrationOptions, field)

    budget = default("budget_s")
    group = parser.add_argument_group("calibration")
    group.add_argument(
        "--model",
        metavar="PATH",
        default=default("model_path"),
        help="SavedModel directory or .keras file to measure (default: a built-in CNN workload)",
    )
    group.add_argument(
        "--signature",
        metavar="NAME",
        default=default("signature"),
        help=f"SavedModel signature to call (default: {default('signature')})",
    )
    group.add_argument(
        "--batch-size",
        metavar="N",
        type=_positive_int("--batch-size"),
        default=default("batch_size"),
        help=f"fills unknown batch dimensions of the inputs (default: {default('batch_size')})",
    )
    group.add_argument(
        "--concurrency",
        metavar="N",
        type=_positive_int("--concurrency"),
        default=default("concurrency"),
        help=f"requests kept in flight, as a server would (default: {default('concurrency')})",
    )
    group.add_argument(
        "--objective",
        choices=objective_names(),
        default=default("objective"),
        help="; ".join(
            f"{name}: {objective.help}" + (" (default)" if name == DEFAULT_OBJECTIVE else "")
            for name, objective in OBJECTIVES.items()
        ),
    )
    group.add_argument(
        "--p99-ms",
        metavar="X",
        type=_positive_float("--p99-ms", "milliseconds"),
        default=default("p99_slo_ms"),
        help=f"the p99 bound for --objective {bounded_names()}, in milliseconds",
    )
    group.add_argument(
        "--budget",
        metavar="S",
        type=_positive_float("--budget", "seconds"),
        default=budget,
        help=f"hard wall-clock limit for the whole calibration, seconds (default "
        f"{budget:g}, at least {MIN_BUDGET_S:g})",
    )
    group.add_argument(
        "--sweep-onednn",
        action="store_true",
        default=default("sweep_onednn"),
        help="also measure TF_ENABLE_ONEDNN_OPTS=0 against =1 on the advised setting (a third "
        "of the budget); the advice sets it only when one value wins beyond noise",
    )
    group.add_argument(
        "--trial-mode",
        choices=get_args(TrialMode),
        default=default("trial_mode"),
        help="how trial processes start: fork (from one process that imported TensorFlow "
        "once; fast), spawn (a new process each; slow), auto (fork, falling back to spawn if "
        "forking fails; default)",
    )


def options_from_args(args: argparse.Namespace) -> CalibrationOptions:
    """CalibrationOptions from parsed flags; what the model refuses is a UsageError (one line,
    naming the flag)."""
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
        raise usage_error(exc) from None

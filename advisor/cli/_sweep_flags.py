"""The flags that describe a sweep (``CalibrationOptions``), shared by ``calibrate`` and ``run``.

Each is a row of the option table (``advisor.models.option_table``: its flag, default, choices
and help), and every rule about their values (the budget floor, the SLO bound) is the model's: a
flag here only parses a word. What the model refuses becomes one usage line naming the flag.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from advisor.cli._parser import Sections
from advisor.errors import usage_error
from advisor.models import OPTIONS, CalibrationOptions, Option


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


def _flag_kwargs(option: Option) -> dict[str, Any]:
    """argparse's keywords for ``calibrate``'s and ``run``'s flag of ``option``: each word is
    parsed strictly, so a value the model refuses is refused naming the flag."""
    kwargs: dict[str, Any] = {"default": option.default, "help": option.help_text}
    if option.metavar is not None:
        kwargs["metavar"] = option.metavar
    if option.parse == "int":
        kwargs["type"] = _positive_int(option.flag)
    elif option.parse == "float":
        kwargs["type"] = _positive_float(option.flag, option.unit)
    elif option.parse == "choice":
        kwargs["choices"] = option.allowed
    elif option.parse == "switch":
        kwargs["action"] = "store_true"
    if option.repeat is not None:
        kwargs["action"] = "append"
    return kwargs


def add_sweep_flags(parser: Sections) -> None:
    """The flags that describe a sweep (``calibrate`` and ``run`` share them): one per row of
    the option table."""
    group = parser.add_argument_group("calibration")
    for option in OPTIONS:
        group.add_argument(option.flag, **_flag_kwargs(option))


def options_from_args(args: argparse.Namespace) -> CalibrationOptions:
    """CalibrationOptions from parsed flags; what the model refuses is a UsageError (one line,
    naming the flag)."""
    try:
        return CalibrationOptions(**{o.field: o.from_flag(getattr(args, o.dest)) for o in OPTIONS})
    except ValidationError as exc:
        raise usage_error(exc) from None

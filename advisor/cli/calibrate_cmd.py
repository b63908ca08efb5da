"""``tf-thread-advisor calibrate``: measure thread settings here and print the advice.

Flags are checked before anything starts (no probe, no TensorFlow child): a budget that cannot
measure anything or an SLO objective without its bound is a usage error in milliseconds, not after
a minute of trials (the rules are ``CalibrationOptions``'; the stages are
``advisor.pipeline.calibration``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from advisor.cli._args import add_host_root
from advisor.cli._output import add_format, emit
from advisor.cli._progress import log_summary, progress_reporter
from advisor.cli._sweep_flags import add_sweep_flags, options_from_args
from advisor.pipeline import Instruments
from advisor.render import formats
from advisor.render.summaries import CalibrationView


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="measure TF thread settings on this node and print the advice",
        description="Run a short, budgeted sweep of TF_NUM_INTRAOP_THREADS / "
        "TF_NUM_INTEROP_THREADS on the model (each trial its own process, the TF default "
        "measured as the baseline) and print the setting that serves the objective best.",
    )
    add_sweep_flags(parser)
    parser.add_argument(
        "--incumbent",
        metavar="FILE",
        default=None,
        help="a ConfigMap YAML holding the advice in force ('-' = stdin): it is raced as a "
        "named arm and stays the advice unless a setting beats it beyond noise (default: TF's "
        "default is the incumbent; `run` reads the advice it will replace by itself)",
    )
    add_format(parser, CalibrationView, "text")
    parser.add_argument(
        "--report",
        metavar="FILE",
        type=Path,
        default=None,
        help="also write a report with an intra x inter heatmap: HTML, or SVG if FILE ends .svg",
    )
    add_host_root(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, instruments: Instruments) -> int:
    from advisor.pipeline import CalibrateRequest, prepare_calibration

    request = CalibrateRequest(
        options=options_from_args(args),
        incumbent=args.incumbent,
        report=args.report,
        host_root=args.host_root,
    )
    prepared = prepare_calibration(request, instruments)
    with progress_reporter(log_format=args.log_format) as progress:
        result = prepared.measure(progress)
    prepared.write_report(result)
    if args.format != "text":  # the text output ends with the same lines
        log_summary(result)
    emit(formats.render(CalibrationView(result), args.format))
    return 0

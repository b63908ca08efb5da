"""The quality run's flags (``python -m benchmarks quality --help``), and the plan they make of the
mode's plan (``benchmarks.plan``): a budget, the short sweep everywhere, serving kinds, no replay
cost."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from benchmarks import plan, serving
from benchmarks.plan import Plan
from testkit.serving_models import KINDS as SERVING_KINDS

#: the first line of the quality run's own docstring (benchmarks/advice_quality.py)
DESCRIPTION = (
    "How good is the advice, and what does it cost? Defaults vs the static rule vs the advisor vs "
    "the exhaustive grid, under real cgroup v1 quotas, measured by the benchmark's own harness."
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks quality", description=DESCRIPTION)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="reduced set, under 10 min here")
    mode.add_argument("--smoke", action="store_true", help="one tiny scenario: plumbing only")
    parser.add_argument(
        "--family",
        choices=plan.FAMILIES,
        default="shapes",
        help="which scenarios: the built-in network and the benchmark's shapes (default), "
        "TF Serving models of five signature kinds, each replaying its warmup requests, or "
        "networks (Keras' MobileNetV2 and ResNet50, random weights)",
    )
    parser.add_argument(
        "--kind",
        action="append",
        choices=list(SERVING_KINDS),
        help="serving family: only this kind (repeatable; default: all five)",
    )
    parser.add_argument(
        "--no-replay-cost",
        action="store_true",
        help="serving family: skip the replay's cost against synthesis (two calibrations)",
    )
    parser.add_argument(
        "--serving-path",
        choices=serving.SERVING_PATHS,
        default="version",
        help="serving family: give calibrate the model's version directory (default) or its "
        "TF Serving base path",
    )
    parser.add_argument("--json", type=Path, help="also write the full report as JSON here")
    parser.add_argument("--seed", type=int, default=6, help="seed of the round orders")
    parser.add_argument("--no-scaling", action="store_true", help="skip the simulated scaling")
    parser.add_argument(
        "--budget",
        type=float,
        metavar="S",
        help="calibrate with --budget S instead of the advisor's default (to find the smallest "
        "budget that meets the targets)",
    )
    parser.add_argument(
        "--spend-budget",
        action="store_true",
        help="calibrate with --spend-budget: race until the budget is spent, as before the "
        "stopping rule (the before of a before/after comparison of time to settle)",
    )
    parser.add_argument(
        "--short-everywhere",
        action="store_true",
        help="calibrate every scenario a second time with the short budget, not only the no-quota"
        " latency ones: the default budget against a short one, side by side",
    )
    parser.add_argument(
        "--write-docs",
        type=Path,
        metavar="MD",
        help="also put the tables into MD's LATEST section (e.g. docs/benchmark.md)",
    )
    args = parser.parse_args(argv)
    if args.kind and args.family != "serving":
        parser.error("--kind chooses among the serving family's models: add --family serving")
    return args


def plan_of(args: argparse.Namespace, mode: str, why_not: str | None) -> Plan:
    """The mode's plan, with ``--budget`` in place of the advisor's default when given, the
    short sweep on every scenario with ``--short-everywhere``, only the serving kinds given with
    ``--kind`` and no replay cost with ``--no-replay-cost``."""
    kinds = tuple(args.kind) if args.kind else None
    the_plan = plan.make_plan(mode, why_not is None, why_not, args.family, kinds)
    effort = the_plan.effort
    if args.budget is not None:
        effort = dataclasses.replace(effort, calibrate_budget_s=args.budget)
    if args.short_everywhere:
        effort = dataclasses.replace(effort, short_everywhere=True)
    if args.spend_budget:
        effort = dataclasses.replace(effort, spend_budget=True)
    if args.no_replay_cost:
        effort = dataclasses.replace(effort, replay_cost=False)
    return dataclasses.replace(the_plan, effort=effort)

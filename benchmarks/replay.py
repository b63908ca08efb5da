"""Replay the advisor's choice on a benchmark run's recorded trials; judge it by that run's grid.

    python -m benchmarks replay full.json

Why: a full benchmark run takes about 70 minutes on a 2-core machine, and the rule that turns a
sweep's windows into advice (``advisor.calibrate.choice``) is pure. Given the trials a run
recorded (``calibrate.windows``), the current rule's advice can be compared with what the run
advised and with the grid's best, in a second. It checks the choice alone: which settings were
raced, and how often, depended on the rule that ran, so a replay never replaces a full run.

The recorded windows carry no p50; none of the objectives ranks by it, so the replay fills it
with the p99.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.calibrate.choice import choose
from advisor.calibrate.statistics import aggregate
from advisor.models import ThreadSetting, TrialResult
from advisor.objectives import named
from benchmarks import figures, report
from benchmarks.results import Run, ScenarioResult


def trials_of(windows: list[list[Any]]) -> list[TrialResult]:
    """The recorded ``[intra, inter, round, status, p99, rps]`` rows as TrialResults."""
    out = []
    for intra, inter, round_, status, p99, rps in windows:
        ok = status == "ok"
        out.append(
            TrialResult(
                setting=ThreadSetting(intra, inter),
                round=round_,
                status=status,
                p50_ms=p99 if ok else None,
                p99_ms=p99 if ok else None,
                throughput_rps=rps if ok else None,
            )
        )
    return out


@dataclass(frozen=True)
class Replayed:
    """One scenario's replay: what the run advised, what the current rule advises, and how the
    run's grid rates each (None: the grid did not measure the replayed setting)."""

    scenario: str
    ran: str | None
    ran_vs_best: float | None
    replayed: str
    replayed_vs_best: float | None
    band: float
    within: bool | None


def replay(scenario: ScenarioResult, affinity: int) -> Replayed | None:
    """The current rule's advice on ``scenario``'s recorded trials, and how the grid rates it;
    None when the scenario recorded no trials (a failed calibrate, or a run from before)."""
    windows = scenario.calibrate.windows
    if not windows:
        return None
    objective = named(scenario.objective)
    choice = choose(aggregate(trials_of(windows), ThreadSetting.tf_picks(affinity)), objective)
    chosen = choice.chosen
    # a kept default is advised spelled out (intra = inter = the affinity count), and the run
    # measured it that way too
    key = f"{affinity}/{affinity}" if chosen.is_baseline else chosen.label
    measured = scenario.settings.get(key)
    value = None if measured is None else figures.objective_value(measured, scenario.objective)
    best = scenario.grid_best.value
    return Replayed(
        scenario=scenario.scenario,
        ran=scenario.advice.setting if scenario.advice else None,
        ran_vs_best=scenario.ratios.advice_vs_grid_best,
        replayed=key,
        replayed_vs_best=None if value is None else round(value / best, 3),
        band=round(choice.band, 3),
        within=None
        if value is None
        else figures.within_of_best(value, best, scenario.objective, figures.GRID_BEST_TOLERANCE),
    )


def table(rows: list[Replayed]) -> str:
    headers = ["scenario", "ran", "ran/best", "replayed", "replayed/best", "band"]
    body = [
        [
            r.scenario,
            r.ran or "-",
            "-" if r.ran_vs_best is None else f"{r.ran_vs_best:.2f}",
            r.replayed,
            "not in the grid" if r.replayed_vs_best is None else f"{r.replayed_vs_best:.2f}",
            f"{r.band:.0%}",
        ]
        for r in rows
    ]
    return report.markdown_table(headers, body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks replay", description=__doc__.splitlines()[0]
    )
    parser.add_argument("report", type=Path, help="a benchmark run's --json output")
    args = parser.parse_args(argv)
    run = Run.model_validate_json(args.report.read_text())
    if run.host is None:
        print(f"{args.report}: no host section (the affinity the choice needs)", file=sys.stderr)
        return 1
    rows = [r for r in (replay(s, run.host.affinity) for s in run.scenarios) if r is not None]
    if not rows:
        print(f"{args.report}: no recorded trials to replay", file=sys.stderr)
        return 1
    print(table(rows))
    judged = [r for r in rows if r.within is not None]
    near = sum(1 for r in judged if r.within)
    unjudged = len(rows) - len(judged)
    tail = f" ({unjudged} replayed setting(s) the grid did not measure)" if unjudged else ""
    print(
        f"\nreplayed advice within {figures.GRID_BEST_TOLERANCE:.0%} of the grid's best: "
        f"{near} of {len(judged)}{tail}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How well does the benchmark's grid agree with itself? Two or more full runs, side by side.

    python -m benchmarks repeatability benchmarks/runs/*.json

Why: "advice within 5% of the grid's best" is only a fair target where the grid repeats to
better than 5%. The grid is the judge: every setting of every scenario measured in pooled rounds
by the harness. Measuring the same setting of the same scenario in two runs of the benchmark
should give the same figure; how far apart the runs are is the judge's own noise, and the grid's
best is the minimum (or maximum) over 17 such figures, so it inherits that noise.

Per group of scenarios (quota x objective) this prints, over every setting measured in all the
runs: the median and the 75th percentile of max/min across runs (1.00 = identical, whichever
way the objective points), and the share of settings whose runs differ by more than
``TOLERANCE``. Per scenario it prints which setting each run found best.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from benchmarks import figures, report
from benchmarks.results import Run, ScenarioResult

#: the near-best target's own tolerance: a judge that moves by more cannot referee it
TOLERANCE = figures.GRID_BEST_TOLERANCE


def _group(scenario: ScenarioResult) -> str:
    quota = scenario.quota_cpus
    where = "no quota" if quota is None else f"{quota:g} CPU"
    return f"{where}, {scenario.objective}"


def matched(runs: Sequence[Run]) -> list[list[ScenarioResult]]:
    """Per scenario that every run has (in the first run's order), its result from each run."""
    by_name = [{s.scenario: s for s in run.scenarios} for run in runs]
    return [
        [run[name] for run in by_name]
        for name in by_name[0]
        if all(name in other for other in by_name[1:])
    ]


def spreads(runs: Sequence[Run]) -> dict[str, list[float]]:
    """max/min across runs of every (scenario, setting) that all runs measured, by group."""
    if len(runs) < 2:
        raise ValueError("repeatability needs at least two runs")
    out: dict[str, list[float]] = {}
    for scenarios in matched(runs):
        objective = scenarios[0].objective
        settings = set.intersection(*(set(s.settings) for s in scenarios))
        for setting in sorted(settings):
            values = [figures.objective_value(s.settings[setting], objective) for s in scenarios]
            if min(values) <= 0:
                continue
            out.setdefault(_group(scenarios[0]), []).append(max(values) / min(values))
    return out


def bests(runs: Sequence[Run]) -> list[tuple[str, list[str]]]:
    """(scenario, the grid's best setting in each run) for scenarios every run has."""
    return [
        (scenarios[0].scenario, [s.grid_best.setting for s in scenarios])
        for scenarios in matched(runs)
    ]


def summary(runs: Sequence[Run]) -> str:
    """Both tables as markdown."""
    groups = spreads(runs)
    rows = []
    for group, unsorted in sorted(groups.items()):
        ratios = sorted(unsorted)
        p75 = ratios[min(len(ratios) - 1, int(0.75 * len(ratios)))]
        beyond = sum(r > 1 + TOLERANCE for r in ratios) / len(ratios)
        rows.append(
            [
                group,
                str(len(ratios)),
                f"{statistics.median(ratios):.3f}",
                f"{p75:.3f}",
                f"{beyond:.0%}",
            ]
        )
    first = report.markdown_table(
        [
            "scenarios",
            "settings",
            "median max/min",
            "p75 max/min",
            f"runs differ > {TOLERANCE:.0%}",
        ],
        rows,
    )
    best_rows = []
    for name, settings in bests(runs):
        best_rows.append([name, " ".join(settings), "yes" if len(set(settings)) == 1 else "no"])
    second = report.markdown_table(["scenario", "grid best per run", "same"], best_rows)
    return f"{first}\n\n{second}"


def load(paths: Sequence[Path]) -> list[Run]:
    """The runs at ``paths``; at least two, as ``spreads`` needs, counted before any is read as a
    run (a file of another benchmark given alone says that)."""
    raw = [json.loads(path.read_text()) for path in paths]
    if len(raw) < 2:
        raise ValueError("repeatability needs at least two runs")
    return [Run.model_validate(run) for run in raw]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks repeatability", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("runs", nargs="+", type=Path, help="full-run JSON files (--json)")
    args = parser.parse_args(argv)
    try:
        print(summary(load(args.runs)))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        print(f"repeatability: not a benchmark run: {where}: {first['msg']}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"repeatability: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

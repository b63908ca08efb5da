"""``python -m benchmarks settle-replay RESULT.json ...``: the stopping rule asked again, round by
round, on a recorded calibration's own trials.

A calibration that ran to its budget says at the end which settings kept it open; this says it
for every race round, with the pick and each open setting's paired figure against it (the
median ratio of the rounds that measured both, and its noise band), and the round the rule
would have settled at. It runs the search's own pieces (``contenders`` on the screen's windows,
``retire`` and ``settlement`` after each round), so a rule changed since the run was recorded is
asked on the same windows: the figures are the run's, the verdicts today's code. Input: the JSON
of ``tf-thread-advisor calibrate --format json`` (benchmarks/runs/settle/*.json).

Not replayed: a setting dropped because its trial failed (it stays in the race here).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.calibrate.budget import Budget, SearchSettings, SystemClock
from advisor.calibrate.candidates import tf_picks
from advisor.calibrate.rounds import contenders, retire
from advisor.calibrate.settle import settlement
from advisor.calibrate.state import BASELINE, SearchState
from advisor.calibrate.statistics import SCREEN_ROUND, paired_band
from advisor.models import CalibrationResult, ThreadSetting, open_text
from advisor.objectives import named


@dataclass(frozen=True)
class Round:
    """What the rule says after one race round."""

    number: int
    pick: ThreadSetting
    #: each open setting's words (``open_text``), "" when settled
    open: str
    #: label -> (median ratio against the pick, its noise band) for every other raced setting
    figures: dict[str, tuple[float, float]]

    @property
    def settled(self) -> bool:
        return not self.open


def replay(result: CalibrationResult) -> list[Round]:
    """The rule after each race round of ``result``, in order (empty: no race ran)."""
    trials = result.trials
    state = SearchState(
        budget=Budget(
            until=float("inf"),
            clock=SystemClock(),
            settings=SearchSettings(),
            budget_s=result.budget_s,
        ),
        trial_fn=lambda spec, deadline: trials[0],  # never called: nothing is measured here
        progress=None,
        objective=named(result.objective),
        p99_slo_ms=result.p99_slo_ms,
        picks=tf_picks(result.node),
        incumbent=result.incumbent.setting if result.incumbent is not None else BASELINE,
    )
    state.outcome.trials = [t for t in trials if t.round == SCREEN_ROUND]
    alive = contenders(state)
    state.outcome.favourite = next((k for k in alive if k != state.incumbent), None)
    out = []
    for number in sorted({t.round for t in trials if t.round > SCREEN_ROUND}):
        state.outcome.trials = [t for t in trials if t.round <= number]
        retire(state, alive)
        settled = settlement(state, alive)
        stats = state.stats()
        choice = state.choose(list(stats.values()))
        pick = choice.chosen
        figures = {
            s.setting.label: paired_band(s, pick, choice.measure)
            for s in stats.values()
            if s.raced and s is not pick and s.setting not in state.outcome.dropped
        }
        words = open_text([(k.label, why) for k, why in settled.open])
        out.append(Round(number, pick.setting, words, figures))
    return out


def render(path: str, result: CalibrationResult, rounds: Sequence[Round]) -> str:
    recorded = f"recorded: {result.stopped or 'not said'} after {max(r.number for r in rounds)}"
    at = next((r.number for r in rounds if r.settled), None)
    lines = [
        f"{path}: {recorded} race rounds in {result.elapsed_s:.0f} s; the rule today: "
        + (f"settled after round {at}" if at is not None else "never settled")
    ]
    for r in rounds:
        figures = ", ".join(f"{k} {m:.2f} ±{b:.0%}" for k, (m, b) in r.figures.items())
        state = "settled" if r.settled else f"open: {r.open}"
        lines.append(f"  round {r.number}: pick {r.pick.label} ({figures}); {state}")
        if r.settled:
            break
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks settle-replay",
        description="The stopping rule, round by round, on recorded calibrations' trials.",
    )
    parser.add_argument("results", nargs="+", type=Path, help="calibrate --format json output")
    args = parser.parse_args(argv)
    for path in args.results:
        try:
            result = CalibrationResult.model_validate(json.loads(path.read_text()))
        except (OSError, ValueError) as exc:
            print(f"{path}: not a calibration result: {str(exc).splitlines()[0]}", file=sys.stderr)
            return 1
        rounds = replay(result)
        print(render(str(path), result, rounds) if rounds else f"{path}: no race rounds")
    return 0

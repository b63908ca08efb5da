"""settle-replay asks the search's own stopping rule on a recorded calibration's windows: on the
recorded real-network runs it agrees with the search that made them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.models import CalibrationResult
from benchmarks import settle_replay

RUNS = sorted(
    Path(__file__).parents[3].joinpath("benchmarks/runs/settle").glob("realnet-*quota1*.json")
)


def load(path: Path) -> CalibrationResult:
    return CalibrationResult.model_validate(json.loads(path.read_text()))


@pytest.mark.parametrize(
    "path", [p for p in RUNS if load(p).stopped == "settled"], ids=lambda p: p.name
)
def test_a_recorded_run_that_settled_settles_at_its_own_last_round(path: Path) -> None:
    result = load(path)
    rounds = settle_replay.replay(result)
    last = max(t.round for t in result.trials)
    assert [r.number for r in rounds] == sorted({t.round for t in result.trials if t.round > 0})
    assert rounds[-1].number == last and rounds[-1].settled
    assert not any(r.settled for r in rounds[:-1])  # the search would have stopped there
    assert rounds[-1].pick == result.chosen_setting


def test_a_run_the_budget_ended_says_what_held_each_round_open() -> None:
    budget = [p for p in RUNS if load(p).stopped == "budget"]
    assert budget
    for path in budget:
        result = load(path)
        rounds = settle_replay.replay(result)
        for r in rounds:
            assert r.settled or r.open
        text = settle_replay.render(path.name, result, rounds)
        assert text.splitlines()[0].startswith(f"{path.name}: recorded: budget after ")
        assert "open: " in text

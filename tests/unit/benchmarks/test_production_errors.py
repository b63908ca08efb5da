"""The production benchmark's generator and its two rules, seeded: the series vary as the
docstring says, a true +30% is reverted by the new rule and found by the old, and the table is
printed for each history."""

from __future__ import annotations

import itertools
import math
import random
from datetime import timedelta
from statistics import fmean, median, stdev

import pytest

from benchmarks import production_errors as bench


def test_the_series_move_from_day_to_day_and_within_the_day_slowly() -> None:
    points = bench.series(random.Random(1), 10, 1.0, history=10)
    assert len(points) == 10 * bench.STEPS_A_DAY
    logs = [math.log(v) for _, v in points]
    days = [median(logs[d * 288 : (d + 1) * 288]) for d in range(10)]
    assert 0.01 < stdev(days) < 0.15
    # within the day, less the diurnal curve and the day's own level: AR(1) 0.7 a step
    noise = []
    for d in range(10):
        day = [
            v - 0.2 * math.sin(2 * math.pi * i / 288) for i, v in enumerate(logs[d * 288 :][:288])
        ]
        level = fmean(day)
        noise += [v - level for v in day]
    lag = sum(a * b for a, b in itertools.pairwise(noise)) / sum(a * a for a in noise)
    assert 0.6 < lag < 0.8


def test_the_effect_starts_at_the_rollout() -> None:
    rolled = bench.ROLLED_OUT.timestamp()
    flat = bench.series(random.Random(2), 9, 1.0, history=8)
    worse = bench.series(random.Random(2), 9, 1.3, history=8)
    for (t, a), (_, b) in zip(flat, worse, strict=True):
        assert b == pytest.approx(a * (1.3 if t > rolled else 1.0))


def test_a_true_regression_is_reverted_and_the_old_rule_finds_it_too() -> None:
    rng = random.Random(3)
    outcomes = [bench.one(rng, 1.3, 9) for _ in range(8)]
    assert sum(o.reverted for o in outcomes) >= 6
    assert sum(o.old_reverted for o in outcomes) >= 6
    assert all(o.first.window == 1 and o.second.window in (1, 2) for o in outcomes)


def test_too_little_history_is_unknown_never_reverted() -> None:
    outcome = bench.one(random.Random(4), 1.5, 6)
    assert (outcome.first.verdict, outcome.first.cause) == ("unknown", "too-little-history")
    assert not outcome.reverted


def test_the_old_rule_needs_a_week_back() -> None:
    points = bench.series(random.Random(5), 9, 1.0, history=6)
    night = bench.CHANGED + timedelta(hours=23)
    assert bench.old_rule(points, night) == "unknown"


def test_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--series", "3", "--history", "9"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("9d")]
    assert [row[1] for row in rows] == ["+0%", "+30%"]
    assert all(len(row) == 10 for row in rows)
    assert "a revert needs 8" in out

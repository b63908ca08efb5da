"""The benchmark judge's second look: which settings it measures again, and how the rounds add up.

The measuring children are replaced by a recorder (the real ones run in the smoke test); the
rounds, the bookkeeping and the first look's figures are the real code's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from benchmarks import figures, measure
from benchmarks.plan import EFFORT
from benchmarks.pool import Arm
from benchmarks.results import Pooled
from tests.unit.benchmarks import factory


class RecordingPool:
    """Answers every measurement with one request of ``latency_ms[setting]``."""

    def __init__(self, latency_ms: dict[str, float]) -> None:
        self.latency_ms = latency_ms
        self.calls: list[tuple[str, float, float, int]] = []

    def measure(
        self, setting: Arm, window_s: float, warmup_s: float, concurrency: int
    ) -> dict[str, Any]:
        self.calls.append((setting.key, window_s, warmup_s, concurrency))
        value = self.latency_ms[setting.key]
        return {"latencies_ms": [value], "completed": 1, "window_s": window_s, "cpu_s": 0.0}


def _first_rounds(keys: list[str], rounds: int, value: float) -> dict[str, list[dict[str, Any]]]:
    one = {"latencies_ms": [value], "completed": 1, "window_s": 1.0, "cpu_s": 0.0}
    return {k: [dict(one) for _ in range(rounds)] for k in keys}


def test_the_second_look_measures_only_the_contenders_the_effort_says_more_rounds() -> None:
    settings = [Arm.of(1, 1), Arm.of(1, 2), Arm.of(2, 1), Arm.of(2, 2)]
    samples = _first_rounds([s.key for s in settings], 5, 10.0)
    pool = RecordingPool({"1/1": 9.0, "1/2": 11.0, "2/1": 12.0, "2/2": 13.0})
    effort = dataclasses.replace(EFFORT["full"], refine_rounds=3)
    second = measure.refine(
        pool,
        settings,
        samples,
        [["1/1", "1/2"], ["1/2", "2/1"]],  # two scenarios sharing this measurement
        effort=effort,
        concurrency=2,
        group=None,
        seed=1,
    )
    assert second.settings == ["1/1", "1/2", "2/1"]
    assert second.rounds == 3
    measured = [key for key, *_ in pool.calls]
    assert sorted(measured) == sorted(["1/1", "1/2", "2/1"] * 3)
    assert {(w, u, c) for _, w, u, c in pool.calls} == {(effort.window_s, effort.warmup_s, 2)}
    assert {k: len(v) for k, v in samples.items()} == {"1/1": 8, "1/2": 8, "2/1": 8, "2/2": 5}
    # the figures pool both looks: 1/1's p99 over five 10 ms and three 9 ms requests
    pooled = figures.pool_rounds(samples["1/1"])
    assert pooled.rounds == 8
    assert pooled.p50_ms == 10.0 and min(pooled.round_p99_ms) == 9.0


def test_the_held_out_figures_are_the_second_looks_rounds_alone() -> None:
    settings = [Arm.of(1, 1), Arm.of(1, 2), Arm.of(2, 1)]
    # first rounds: 1/2 looked best (8 ms); on the second look it is 11 ms and 1/1 is 9 ms
    samples = _first_rounds(["1/1", "2/1"], 5, 10.0) | _first_rounds(["1/2"], 5, 8.0)
    pool = RecordingPool({"1/1": 9.0, "1/2": 11.0, "2/1": 12.0})
    held: dict[str, Pooled] = {}
    measure.refine(
        pool,
        settings,
        samples,
        [["1/2", "1/1"]],
        effort=dataclasses.replace(EFFORT["full"], refine_rounds=3),
        concurrency=1,
        group=None,
        seed=1,
        held_out=held,
    )
    assert set(held) == {"1/2", "1/1"}  # 2/1 had no second look
    assert held["1/1"].rounds == 3 and held["1/1"].p99_ms == 9.0
    assert held["1/2"].p99_ms == 11.0
    # judged there, the best is 1/1 (2/1 is a grid setting the held-out rounds did not measure)
    look = measure.first_look(held, ["1/1", "1/2", "2/1"], "latency", (1, 2))
    assert look.grid_best.dump() == {"setting": "1/1", "value": 9.0}
    assert look.advice_vs_grid_best == round(11.0 / 9.0, 3)
    assert look.rounds == 3
    # an advice the held-out rounds did not measure has no held-out figure
    assert measure.first_look(held, ["1/1"], "latency", (2, 1)).advice_value is None


def test_no_second_look_when_the_effort_has_none() -> None:
    settings = [Arm.of(1, 1)]
    samples = _first_rounds(["1/1"], 2, 10.0)
    pool = RecordingPool({"1/1": 9.0})
    effort = dataclasses.replace(EFFORT["smoke"], refine_rounds=0)
    second = measure.refine(
        pool,
        settings,
        samples,
        [["1/1"]],
        effort=effort,
        concurrency=1,
        group=None,
        seed=1,
    )
    assert second.dump() == {"rounds": 0, "settings": [], "measure_s": 0.0}
    assert pool.calls == [] and len(samples["1/1"]) == 2


def test_the_first_look_keeps_the_best_and_ratio_before_the_second() -> None:
    stats = {
        "1/1": factory.pooled({"p99_ms": 12.0, "throughput_rps": 90.0, "rounds": 5}),
        "1/2": factory.pooled({"p99_ms": 10.0, "throughput_rps": 100.0, "rounds": 5}),
    }
    first = measure.first_look(stats, ["1/1", "1/2"], "latency", (1, 1))
    assert first.dump() == {
        "grid_best": {"setting": "1/2", "value": 10.0},
        "advice_vs_grid_best": 1.2,
        "advice_value": 12.0,
        "rounds": 5,
    }
    rps = measure.first_look(stats, ["1/1", "1/2"], "throughput", (1, 1))
    assert rps.advice_vs_grid_best == 0.9
    assert measure.first_look(stats, ["1/1"], "latency", None).advice_vs_grid_best is None

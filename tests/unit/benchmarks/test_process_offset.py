"""The process-offset benchmark's analysis: process x round, a permutation test, seeded data."""

from __future__ import annotations

import math
import random

import pytest

from benchmarks.process_offset import anova


def windows(
    offset_sd: float, noise_sd: float, seed: int, k: int = 6, m: int = 8
) -> list[list[float]]:
    """Log figures of ``k`` processes over ``m`` rounds: a drift shared within each round, an
    offset per process, and window noise."""
    rng = random.Random(seed)
    rounds = [rng.gauss(0, 0.2) for _ in range(m)]
    offsets = [rng.gauss(0, offset_sd) for _ in range(k)]
    base = math.log(20)
    return [
        [base + rounds[j] + offsets[i] + rng.gauss(0, noise_sd) for j in range(m)] for i in range(k)
    ]


def test_an_offset_per_process_is_found_and_its_size_estimated() -> None:
    found = [anova(windows(0.10, 0.05, seed), permutations=400, seed=seed) for seed in range(10)]
    assert sum(r.p < 0.05 for r in found) >= 9
    estimates = sorted(r.offset_sd for r in found)
    assert 0.05 < estimates[len(estimates) // 2] < 0.16
    assert all(r.residual_sd == pytest.approx(0.05, rel=0.5) for r in found)


def test_without_an_offset_the_test_holds_its_level_and_the_shared_drift_is_no_offset() -> None:
    # the drift (sd 0.2 a round) is four times the noise: a one-way analysis would see it in
    # every process's spread; the rounds take it out
    nulls = [anova(windows(0.0, 0.05, seed), permutations=200, seed=seed) for seed in range(40)]
    assert sum(r.p < 0.05 for r in nulls) <= 5
    assert sorted(r.offset_sd for r in nulls)[20] < 0.03


def test_it_needs_two_processes_and_two_rounds_every_process_in_every_round() -> None:
    with pytest.raises(ValueError):
        anova([[1.0, 2.0]])
    with pytest.raises(ValueError):
        anova([[1.0, 2.0], [1.0]])

"""The Mann-Whitney U test: ranks with ties, and p-values checked against scipy's asymptotic
test (scipy is a test dependency only) on recorded and generated samples."""

from __future__ import annotations

import random

import pytest

from benchmarks.ranktest import mann_whitney, ranks

#: p99 seconds, one per 5 minutes, as a serving workload recorded them before and after
BEFORE = [0.100, 0.104, 0.111, 0.122, 0.108, 0.103, 0.117, 0.109, 0.101, 0.113, 0.106, 0.119]
AFTER = [0.180, 0.185, 0.190, 0.112, 0.181, 0.188, 0.183, 0.190, 0.186, 0.184, 0.189, 0.182]


def test_ranks_share_ties() -> None:
    assert ranks([3.0, 1.0, 3.0, 2.0]) == [3.5, 1.0, 3.5, 2.0]


def test_recorded_samples() -> None:
    assert mann_whitney(BEFORE, AFTER) < 0.001
    assert mann_whitney(BEFORE, list(reversed(BEFORE))) == 1.0


def test_all_equal_is_no_difference() -> None:
    assert mann_whitney([0.2] * 10, [0.2] * 8) == 1.0


def test_an_empty_side_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        mann_whitney([], [1.0])


def test_agrees_with_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(39)
    samples = [(BEFORE, AFTER)]
    for _ in range(200):
        shift = rng.choice([0.0, 0.3, 1.0])
        a = [round(rng.gauss(0, 1), 1) for _ in range(rng.randint(2, 40))]
        b = [round(rng.gauss(shift, 1), 1) for _ in range(rng.randint(2, 40))]
        samples.append((a, b))
    for a, b in samples:
        theirs = stats.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic")
        assert mann_whitney(a, b) == pytest.approx(theirs.pvalue, rel=1e-9, abs=1e-12)

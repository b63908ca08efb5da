"""The day test's arithmetic: Student's t tail against tabled quantiles, the prediction
statistic, Holm's procedure, and (seeded) its error rates on days that vary independently."""

from __future__ import annotations

import math
import random

import pytest

from advisor.consumers.daytest import beta_regularized, day_test, holm, t_tail


@pytest.mark.parametrize(
    ("t", "df", "tail"),
    [
        # two-sided tables' quantiles: t_{0.975, 6}, t_{0.95, 3}, t_{0.995, 10}, t_{0.9, 1}
        (2.447, 6, 0.025),
        (2.353, 3, 0.05),
        (3.169, 10, 0.005),
        (3.078, 1, 0.1),
        (0.0, 4, 0.5),
        (-2.447, 6, 0.975),
    ],
)
def test_t_tail_matches_tabled_quantiles(t: float, df: int, tail: float) -> None:
    assert t_tail(t, df) == pytest.approx(tail, abs=2e-4)


def test_t_tail_of_one_degree_is_the_cauchy_tail() -> None:
    for t in (0.3, 1.0, 4.0):
        assert t_tail(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, abs=1e-12)


def test_beta_regularized_at_its_edges_and_symmetry() -> None:
    assert (beta_regularized(0.0, 2, 3), beta_regularized(1.0, 2, 3)) == (0.0, 1.0)
    # I_x(1, 1) = x, and I_x(a, b) = 1 - I_{1-x}(b, a)
    assert beta_regularized(0.37, 1, 1) == pytest.approx(0.37, abs=1e-12)
    assert beta_regularized(0.8, 2.5, 0.5) == pytest.approx(
        1 - beta_regularized(0.2, 0.5, 2.5), abs=1e-12
    )


def test_the_statistic_is_the_prediction_t() -> None:
    days = [1.0, 2.0, 3.0, 4.0]
    found = day_test(days, 5.0)
    s = math.sqrt(sum((d - 2.5) ** 2 for d in days) / 3)
    assert found.days == 4
    assert found.difference == 2.5
    assert found.t == pytest.approx(2.5 / (s * math.sqrt(1 + 1 / 4)))
    assert found.above + found.below == pytest.approx(1.0)
    assert found.above == pytest.approx(t_tail(found.t, 3))


def test_days_that_never_varied() -> None:
    same = day_test([0.2] * 7, 0.2)
    assert (same.above, same.below) == (0.5, 0.5)
    higher = day_test([0.2] * 7, 0.3)
    assert (higher.above, higher.below) == (0.0, 1.0)
    with pytest.raises(ValueError, match="at least two"):
        day_test([0.2], 0.3)


def test_holm_steps_down_and_stops_at_the_first_kept() -> None:
    # 0.01 <= 0.05/3; 0.03 > 0.05/2 stops there, so 0.04 is kept too though <= 0.05
    assert holm([0.03, 0.01, 0.04], 0.05) == [False, True, False]
    assert holm([0.01, 0.02, 0.03], 0.05) == [True, True, True]
    assert holm([0.2], 0.05) == [False]
    assert holm([], 0.05) == []


def test_each_direction_errs_at_its_level_on_independent_days() -> None:
    """Seeded: 4,000 after-windows drawn like their 7 earlier days; each one-sided p-value is
    uniform, so about 5% fall at or below 0.05 each way (binomial sd 0.34%)."""
    rng = random.Random(48)
    above = below = 0
    trials = 4000
    for _ in range(trials):
        days = [rng.gauss(0, 0.05) for _ in range(7)]
        found = day_test(days, rng.gauss(0, 0.05))
        above += found.above <= 0.05
        below += found.below <= 0.05
    assert 0.04 <= above / trials <= 0.06
    assert 0.04 <= below / trials <= 0.06


def test_a_shift_of_five_day_spreads_is_found() -> None:
    rng = random.Random(49)
    found = sum(
        day_test([rng.gauss(0, 0.05) for _ in range(10)], 0.25 + rng.gauss(0, 0.05)).above <= 0.05
        for _ in range(500)
    )
    assert found / 500 > 0.95

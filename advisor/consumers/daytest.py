"""The production test: one after-window's figure against the same figure on earlier days, each
day one sample (docs/deploy.md, "Did it help? Reading production").

A p99 series moves slowly (5-minute autocorrelation 0.5-0.8) and a day's traffic mix or
neighbours move its level as a whole (3-8% from day to day), so the 5-minute samples of a window
are not independent and the unit of replication is the window itself. The test therefore takes
one figure per window (the window's median p99, on the log scale, or its throttled share) on
``n`` earlier days at the same hours, and asks whether the after-window's figure lies outside
what those days vary by: the prediction t-test, ``t = (after - mean) / (s * sqrt(1 + 1/n))``
with ``n - 1`` degrees of freedom. Under no change and days that vary independently and about
normally, each direction's p-value is uniform, so a level ``alpha`` per direction is the false
alarm rate per window and per direction; the within-day dependence is inside each day's figure
and costs nothing. Pure and small, so that no statistics library is a runtime dependency
(tests/unit/consumers/test_daytest.py checks the t distribution against tabled quantiles).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean, stdev

#: continued-fraction terms and the precision the incomplete beta function stops at
_TERMS = 300
_EPSILON = 1e-14


@dataclass(frozen=True)
class DayTest:
    """``days``: the earlier days compared with; ``difference``: the after-window's figure less
    their mean; ``t``: the statistic (infinite where the days did not vary at all and the
    after-window differs); ``above``/``below``: one-sided p-values, the after-window higher or
    lower than the days predict."""

    days: int
    difference: float
    t: float
    above: float
    below: float


def day_test(days: Sequence[float], after: float) -> DayTest:
    """The test of ``after`` against ``days`` (ValueError with fewer than two days)."""
    n = len(days)
    if n < 2:
        raise ValueError("the test needs at least two earlier days")
    mean = fmean(days)
    spread = stdev(days, mean) * math.sqrt(1 + 1 / n)
    difference = after - mean
    if spread <= 0 or not math.isfinite(spread):
        # every day the same: any difference at all lies outside them
        t = 0.0 if difference == 0 else math.copysign(math.inf, difference)
    else:
        t = difference / spread
    above = t_tail(t, n - 1)
    return DayTest(n, difference, t, above, 1.0 - above if math.isfinite(t) else t_tail(-t, n - 1))


def t_tail(t: float, df: int) -> float:
    """P(T >= t) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    half = 0.5 * beta_regularized(df / (df + t * t), df / 2, 0.5)
    return half if t >= 0 else 1.0 - half


def beta_regularized(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    # the fraction converges fast below the mean; above it, by I_x(a,b) = 1 - I_1-x(b,a)
    if x < (a + 1) / (a + b + 2):
        return front * _fraction(x, a, b) / a
    return 1.0 - front * _fraction(1 - x, b, a) / b


def _fraction(x: float, a: float, b: float) -> float:
    """Lentz's evaluation of the incomplete beta function's continued fraction."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    out = d
    for m in range(1, _TERMS):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            out *= c * d
        if abs(c * d - 1) < _EPSILON:
            break
    return out


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Which of the hypotheses Holm's step-down procedure rejects at family-wise level
    ``alpha``: the smallest p against ``alpha / m``, the next against ``alpha / (m - 1)``, ...,
    stopping at the first that is not below."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [False] * m
    for rank, index in enumerate(order):
        if p_values[index] > alpha / (m - rank):
            break
        out[index] = True
    return out

"""The Mann-Whitney U test (Wilcoxon rank-sum), two-sided, by the normal approximation with the
tie correction and a continuity correction, as Kayenta's canary judge uses it: do two windows'
samples come from the same distribution? (scipy's ``mannwhitneyu(..., method="asymptotic")``
gives the same p-value: tests/unit/benchmarks/test_ranktest.py checks it where scipy is there.)

The production verdict used it on the 5-minute samples of a window as if they were independent;
it no longer does (``advisor.consumers.daytest``). It is kept here for the benchmark's contrast:
``benchmarks/production_errors.py`` measures that old rule on the same series as the new one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    at = 0
    while at < len(order):
        end = at
        while end + 1 < len(order) and values[order[end + 1]] == values[order[at]]:
            end += 1
        mean = (at + end) / 2 + 1
        for i in order[at : end + 1]:
            out[i] = mean
        at = end + 1
    return out


def mann_whitney(before: Sequence[float], after: Sequence[float]) -> float:
    """The two-sided p-value on two non-empty samples (ValueError if either is empty)."""
    n1, n2 = len(before), len(after)
    if not n1 or not n2:
        raise ValueError("each side needs at least one sample")
    pooled = [*before, *after]
    ranked = ranks(pooled)
    u_after = sum(ranked[n1:]) - n2 * (n2 + 1) / 2
    n = n1 + n2
    counts: dict[float, int] = {}
    for value in pooled:
        counts[value] = counts.get(value, 0) + 1
    ties = sum(t**3 - t for t in counts.values())
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    mean = n1 * n2 / 2
    if variance <= 0:
        return 1.0
    z = (abs(u_after - mean) - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))

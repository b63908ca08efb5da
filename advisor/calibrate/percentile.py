"""What a percentile of measured latencies is: one definition for every figure the project writes.

The trial child's p50/p90/p99, the benchmark's judge (its pooled rounds) and the benchmark's report
all call ``percentile``, so "p99" means the same number wherever it is printed or compared.

Nearest rank: the smallest sample with at least q% of the samples at or below it. A p99 is then a
latency one request really had, never a value between two that nobody saw; on 50 samples it is
their maximum, on 200 the third-largest (two requests were slower). Interpolating between ranks
(numpy's default) would smooth a short window's tail by a fraction of one sample's gap, which
hides nothing the windows' spread does not already show, and it would make a p99 depend on how
a library interpolates. Pure: no imports, so the trial child and the benchmark may use it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 < q <= 100) of ``ordered``, sorted ascending."""
    if not ordered:
        raise ValueError("no samples")
    if not 0 < q <= 100:
        raise ValueError(f"percentile {q!r} is not in (0, 100]")
    # q * n / 100, not q / 100 * n: 0.99 * n can land a hair above an integer and skip a rank
    rank = max(1, math.ceil(q * len(ordered) / 100))
    return float(ordered[rank - 1])

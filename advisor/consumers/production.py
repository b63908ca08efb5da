"""Did the advice help in production? The verdict on one consuming container from its serving
pods' figures before the advice's data changed and after its pods started with it.

The rule (docs/deploy.md, "Did it help? Reading production"):

- With the workload's latency query answered on both sides (at least ``MIN_P99_POINTS`` points
  each), p99 decides: ``regressed`` when the after-window's median is above the highest value
  the before-window saw (beyond its own spread), ``improved`` when it is below the lowest,
  ``unchanged`` otherwise.
- Without p99, throttling decides: ``regressed`` when the throttled share of CFS periods rose by
  more than ``THROTTLED_POINTS`` percentage points, ``improved`` when it fell by more,
  ``unchanged`` otherwise; a side with fewer than ``MIN_PERIODS`` CFS periods counts as no data.
- Otherwise ``unknown``, with what was missing. CPU is shown, never judged: using more of a
  limit is what a better thread setting may do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

from advisor.models import Production

#: percentage points of throttled periods that count as a change (a fraction: 0.10)
THROTTLED_POINTS = 0.10
#: fewer CFS periods than this on a side (10 s of runnable time at the default 100 ms): no data
MIN_PERIODS = 100.0
#: fewer latency points than this on a side: p99 not judged
MIN_P99_POINTS = 3


@dataclass(frozen=True)
class Window:
    """What Prometheus answered for one window (None: no series)."""

    throttled_periods: float | None = None
    periods: float | None = None
    cpu: float | None = None
    #: the latency query's values over the window, seconds
    p99: list[float] = field(default_factory=list)

    @property
    def throttled(self) -> float | None:
        if self.periods is None or self.periods < MIN_PERIODS or self.throttled_periods is None:
            return None
        return min(1.0, max(0.0, self.throttled_periods / self.periods))

    @property
    def p99_median(self) -> float | None:
        return median(self.p99) if len(self.p99) >= MIN_P99_POINTS else None


def unknown(reason: str) -> Production:
    """A verdict nothing could be judged for."""
    return Production(verdict="unknown", reason=reason)


def judge(before: Window, after: Window, *, latency_problem: str | None = None) -> Production:
    """The verdict for one container; ``latency_problem``: why its latency query gave nothing
    (a refused query makes the verdict unknown: throttling alone must not overrule a p99 the
    workload asked to be judged by)."""
    figures = {
        "throttled_before": _round(before.throttled, 4),
        "throttled_after": _round(after.throttled, 4),
        "cpu_before": _round(before.cpu, 3),
        "cpu_after": _round(after.cpu, 3),
        "p99_before_ms": _ms(before.p99_median),
        "p99_after_ms": _ms(after.p99_median),
    }
    if latency_problem is not None:
        return Production(verdict="unknown", reason=latency_problem, **figures)
    p99_before, p99_after = before.p99_median, after.p99_median
    if p99_before is not None and p99_after is not None:
        low, high = min(before.p99), max(before.p99)
        spread = f"before {low * 1000:.0f}-{high * 1000:.0f} ms"
        if p99_after > high:
            verdict, why = "regressed", f"p99 {p99_after * 1000:.0f} ms is above {spread}"
        elif p99_after < low:
            verdict, why = "improved", f"p99 {p99_after * 1000:.0f} ms is below {spread}"
        else:
            verdict, why = "unchanged", f"p99 {p99_after * 1000:.0f} ms is within {spread}"
        return Production(verdict=verdict, reason=why, **figures)
    throttled_before, throttled_after = before.throttled, after.throttled
    if throttled_before is None or throttled_after is None:
        side = "before" if throttled_before is None else "after"
        return Production(
            verdict="unknown",
            reason=f"too little data {side} the advice (no CFS periods"
            f"{'' if before.p99 or after.p99 else ' and no latency query'})",
            **figures,
        )
    points = (throttled_after - throttled_before) * 100
    limit = THROTTLED_POINTS * 100
    change = f"throttling {throttled_before:.0%} -> {throttled_after:.0%}"
    if points > limit:
        verdict, why = "regressed", f"{change}: rose by more than {limit:g} points"
    elif points < -limit:
        verdict, why = "improved", f"{change}: fell by more than {limit:g} points"
    else:
        verdict, why = "unchanged", f"{change}: within {limit:g} points"
    return Production(verdict=verdict, reason=why, **figures)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)

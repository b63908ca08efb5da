"""Did the advice help in production? Every rule of the verdict on one consuming container from
its serving pods' samples in the windows ``advisor.consumers.production_windows`` places (the
reading is ``advisor.pipeline.production_source``; docs/deploy.md, "Did it help? Reading
production").

The verdict on one after-window (``judge``), against its earlier days:

- A load query configured (requests per second): a side without load samples is unknown, and so
  is a load that changed by more than ``LOAD_SHARE`` from the earlier days' mean.
- A latency query configured: p99 decides, each window's figure its median on the log scale,
  and a window without ``MIN_SAMPLES`` latency samples is no data (a renamed histogram must not
  hand the verdict to throttling). ``regressed`` or ``improved`` only where the day test
  (``advisor.consumers.daytest``) puts the after-window beyond the earlier days at ``ALPHA``
  in that direction AND the figure moved by more than ``P99_SHARE`` from their typical value;
  otherwise ``unchanged``.
- No latency query: the window's throttled share decides the same way, the effect being more
  than ``THROTTLED_POINTS``; a window with fewer than ``MIN_SAMPLES`` steps or ``MIN_PERIODS``
  CFS periods is no data. Fewer than ``MIN_DAYS`` earlier days with data: unknown.

The verdict shown (``persisted``) is the latest full after-window's (else the provisional one's),
with how many full windows in a row were regressed up to it: ``plan`` reverts only after
``REVERT_WINDOWS``. CPU is shown, never judged: using more of a limit is what a better thread
setting may do.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from statistics import fmean, median
from typing import Any

from advisor.consumers.daytest import DayTest, day_test
from advisor.consumers.production_windows import (
    MIN_DAYS,
    WARM_UP,
    Placement,
    Points,
    Span,
    Unknown,
    finite,
    ran_previous,
    slack,
    stamp,
    unknown,
)
from advisor.models import Production, ProductionVerdict, VerdictCause
from advisor.render.production_text import rate

#: percentage points of the throttled share that count as a change (a fraction: 0.10)
THROTTLED_POINTS = 0.10
#: relative change of the median p99 that counts as a change
P99_SHARE = 0.10
#: relative change of the mean load beyond which the windows are not comparable
LOAD_SHARE = 0.20
#: the day test's level in each direction: the false-alarm rate of one regressed (or improved)
#: verdict when nothing changed (benchmarks/production_errors.py measures it)
ALPHA = 0.05
#: fewer samples (steps) than this in a window: too little data. A ``--window`` too short to
#: hold that many steps needs as many as a full one of it holds (``window_samples``)
MIN_SAMPLES = 8
#: fewer CFS periods than this in a window (10 s of runnable time at the default 100 ms): no data
MIN_PERIODS = 100.0
#: a step with fewer CFS periods than this (the container idle) gives no throttled share
MIN_STEP_PERIODS = 10.0


@dataclass(frozen=True)
class Window:
    """What Prometheus answered for one window, one sample per step (empty: no series)."""

    #: per step: (throttled periods, periods), steps with too few periods left out
    cfs: list[tuple[float, float]] = field(default_factory=list)
    #: per step: cores one pod used
    cpu: list[float] = field(default_factory=list)
    #: per step: the latency query's value, seconds
    p99: list[float] = field(default_factory=list)
    #: per step: the load query's value, requests per second
    load: list[float] = field(default_factory=list)

    @property
    def periods(self) -> float:
        return sum(periods for _, periods in self.cfs)

    @property
    def throttled(self) -> float | None:
        """The whole window's throttled share (None: too few CFS periods)."""
        if self.periods < MIN_PERIODS:
            return None
        return min(1.0, max(0.0, sum(t for t, _ in self.cfs) / self.periods))


def pooled(windows: Sequence[Window]) -> Window:
    """The windows' samples together (the earlier days' figures as one before-side)."""
    return Window(
        cfs=[s for w in windows for s in w.cfs],
        cpu=[s for w in windows for s in w.cpu],
        p99=[s for w in windows for s in w.p99],
        load=[s for w in windows for s in w.load],
    )


def cfs_steps(throttled: Points, periods: Points) -> list[tuple[float, float]]:
    """(throttled, periods) per step where both were answered and the container ran."""
    by_time = dict(finite(throttled))
    return [
        (by_time[at], total)
        for at, total in finite(periods)
        if at in by_time and total >= MIN_STEP_PERIODS
    ]


@dataclass(frozen=True)
class Samples:
    """What Prometheus answered over a span, points (unix seconds, value) per query: cut into
    windows by ``window``."""

    throttled: Points = ()
    periods: Points = ()
    cpu: Points = ()
    p99: Points = ()
    load: Points = ()

    def __post_init__(self) -> None:
        # numbers only, in time order, once: each of up to 28 windows is then cut by bisection
        for name in ("throttled", "periods", "cpu", "p99", "load"):
            object.__setattr__(self, name, sorted(finite(getattr(self, name))))

    def window(self, span: Span) -> Window:
        """The samples in ``span``: a point covers the step before it, so (start, end]."""
        start, end = span[0].timestamp(), span[1].timestamp()

        def cut(points: Points) -> Points:
            return points[
                bisect_right(points, (start, math.inf)) : bisect_right(points, (end, math.inf))
            ]

        return Window(
            cfs=cfs_steps(cut(self.throttled), cut(self.periods)),
            cpu=[v for _, v in cut(self.cpu)],
            # a negative rate or latency (deriv, a counter reset) is no sample
            p99=[v for _, v in cut(self.p99) if v >= 0],
            load=[v for _, v in cut(self.load) if v >= 0],
        )


def window_samples(window: timedelta, step: timedelta, warm_up: timedelta = WARM_UP) -> int:
    """The steps a window is judged on at least: ``MIN_SAMPLES``, or as many as a full window
    this short holds (at least one: a 5-minute window's figure is its one step)."""
    full = window - slack(window, warm_up)
    return min(MIN_SAMPLES, max(1, math.floor(full / step)))


def verdict(
    placement: Placement,
    days: Samples,
    after: Samples,
    *,
    earliest: Points = (),
    latency: bool = False,
    load: bool = False,
    previous_unknown: bool = False,
    samples: int = MIN_SAMPLES,
) -> Production:
    """The verdict shown for one container: each of ``placement``'s after-windows judged on its
    own against the earlier days (``days``' samples, those whose pods ran the previous advice,
    ``earliest``), then ``persisted``. ``previous_unknown``: the advice replaced one whose start
    is not recorded, so nothing bounds the earlier days: shown, never judged. ``samples``: the
    steps a window needs (``window_samples``)."""
    judged = []
    for i, span in enumerate(placement.after):
        ran = [ran_previous(day, earliest, placement.previous_changed) for day in placement.days[i]]
        found = judge(
            [days.window(day) for day, kept in zip(placement.days[i], ran, strict=True) if kept],
            after.window(span),
            latency=latency,
            load=load,
            provisional=placement.provisional if span is placement.after[-1] else None,
            samples=samples,
        )
        if sum(ran) < MIN_DAYS and not all(ran):
            found = _stale_days(found, len(ran) - sum(ran), placement.previous_changed)
        judged.append(found.model_copy(update={"window": placement.first + i}))
    found = persisted(judged)
    if previous_unknown and found.cause in JUDGED:
        return not_previous(found)
    return found


#: the causes of a verdict the test decided
JUDGED = ("p99", "throttling")


def _stale_days(found: Production, stale: int, previous_changed: datetime | None) -> Production:
    """``found`` not judged: too few earlier days are left once those whose pods started before
    the previous advice took effect are left out."""
    assert previous_changed is not None
    return unknown(
        "not-previous",
        f"{stale} earlier day(s) had a pod started before the previous advice took effect "
        f"({stamp(previous_changed)}): they may not have run it, so a revert may not restore "
        f"what was measured, and fewer than the {MIN_DAYS} days the test needs are left",
        **figures_of(found),
    )


def not_previous(found: Production) -> Production:
    """``found`` not judged: the previous advice's start is unknown, so its earlier days may not
    have run what a revert would restore."""
    return unknown(
        "not-previous",
        f"{found.reason}; not judged: the previous advice's start is unknown (it records no "
        "data-changed-at), so a revert may not restore what was measured",
        **figures_of(found),
    )


def persisted(judged: Sequence[Production]) -> Production:
    """The latest full window's verdict (else the provisional one's), with the full windows in a
    row regressed up to it."""
    full = [p for p in judged if not p.provisional]
    if not full:
        return judged[-1]
    latest = full[-1]
    if latest.cause not in JUDGED:
        return latest
    run = 0
    for one in reversed(full):
        if one.verdict != "regressed":
            break
        run += 1
    if latest.verdict == "regressed":
        # a revert needs every window of the run: the largest p-value is the run's evidence
        p = max(one.p_value or 0.0 for one in full[len(full) - run :])
        return latest.model_copy(update={"regressed_windows": run, "p_value": p})
    return latest.model_copy(update={"regressed_windows": 0})


def judge(
    days: Sequence[Window],
    after: Window,
    *,
    latency: bool = False,
    load: bool = False,
    provisional: str | None = None,
    samples: int = MIN_SAMPLES,
) -> Production:
    """The verdict on one after-window against the earlier ``days``. ``latency``/``load``: the
    workload names that query (then its samples must be there); ``provisional``: why the
    after-window is short; ``samples``: the steps a window needs."""
    before = pooled(days)
    figures = {
        "throttled_before": _round(_mean([d.throttled for d in days]), 4),
        "throttled_after": _round(after.throttled, 4),
        "cpu_before": _round(_mean(before.cpu), 3),
        "cpu_after": _round(_mean(after.cpu), 3),
        "p99_before_ms": _ms(_typical([_median(d.p99) for d in days])),
        "p99_after_ms": _ms(_median(after.p99)),
        "load_before": _round(_mean(before.load), 3),
        "load_after": _round(_mean(after.load), 3),
    }
    blocked = _not_comparable(before, after, load=load)
    if blocked is not None:
        return unknown(blocked.cause, blocked.reason, **figures)
    decided = _p99(days, after, samples) if latency else _throttling(days, after, samples)
    if isinstance(decided, Unknown):
        return unknown(decided.cause, decided.reason, **figures)
    found, why, test, cause = decided
    if provisional is not None:
        why = f"provisional ({provisional}): {why}"
    p = test.above if found == "regressed" else test.below if found == "improved" else None
    return Production(
        verdict=found,
        reason=why,
        cause=cause,
        provisional=provisional is not None,
        p_value=float(f"{min(test.above, test.below) if p is None else p:.3g}"),
        test="day-t",
        alpha=ALPHA,
        days=test.days,
        **figures,
    )


def figures_of(found: Production) -> dict[str, Any]:
    """The before and after figures of ``found``, for a verdict built from it."""
    return {k: v for k, v in found.model_dump().items() if k.endswith(("_before", "_after", "_ms"))}


def with_missing_series(found: Production, why: str | None) -> Production:
    """``found`` with why kube-state-metrics' series do not join (``why``; None: they do) named,
    where data was missing: the pods gone before now are not counted then."""
    if why is None or found.cause not in ("too-little-data", "too-little-history"):
        return found
    return found.model_copy(update={"reason": f"{found.reason}; {why}"})


def refused(shown: Production, name: str, error: str) -> Production:
    """The verdict when the workload's own ``name`` query (latency, load) was refused: what was
    read is still shown; the verdict is not had without the query."""
    return unknown("query-failed", f"the {name} query failed: {error}", **figures_of(shown))


def _not_comparable(before: Window, after: Window, *, load: bool) -> Unknown | None:
    if load:
        for side, window in (("before", before), ("after", after)):
            if not window.load:
                return Unknown("load-missing", f"the load query gave no data {side} the advice")
        was, now = fmean(before.load), fmean(after.load)
        if abs(now - was) > LOAD_SHARE * max(was, 0.0) or (was <= 0 < now):
            return Unknown(
                "load-changed",
                f"load changed: {rate(was)} -> {rate(now)} req/s "
                f"(more than {LOAD_SHARE:.0%}: the windows are not comparable)",
            )
    return None


#: (verdict, reason, the test, what decided)
Decided = tuple[ProductionVerdict, str, DayTest, VerdictCause]


def _tested(test: DayTest, effect: float, limit: float) -> ProductionVerdict:
    """The one rule both deciding figures follow: a change only where the day test puts the
    after-window beyond the earlier days in that direction and the effect is beyond its size,
    upwards a regression."""
    if test.above <= ALPHA and effect > limit:
        return "regressed"
    if test.below <= ALPHA and effect < -limit:
        return "improved"
    return "unchanged"


def _not_significant(test: DayTest) -> str:
    return f"within what its {test.days} earlier days vary by (p > {ALPHA:g})"


def _history(days: int) -> Unknown:
    return Unknown(
        "too-little-history",
        f"too little history to judge against: {days} earlier day(s) at the same hours with "
        f"data that ran the previous advice alone (the test needs {MIN_DAYS})",
    )


def _p99(days: Sequence[Window], after: Window, samples: int) -> Decided | Unknown:
    if len(after.p99) < samples:
        got = "no data" if not after.p99 else f"{len(after.p99)} sample(s)"
        return Unknown(
            "latency-missing",
            f"the latency query gave {got} after the advice (needs {samples}; "
            "throttling alone does not judge a workload that names one)",
        )
    logs = [math.log(m) for d in days if len(d.p99) >= samples if (m := median(d.p99)) > 0]
    if not days or not any(d.p99 for d in days):
        return Unknown(
            "latency-missing",
            "the latency query gave no data before the advice (throttling alone does not judge "
            "a workload that names one)",
        )
    if len(logs) < MIN_DAYS:
        return _history(len(logs))
    now = median(after.p99)
    if now <= 0:
        return Unknown("latency-missing", "the latency query gave no positive p99 after it")
    test = day_test(logs, math.log(now))
    was = math.exp(math.log(now) - test.difference)
    change = now / was - 1
    figures = f"p99 {now * 1000:.0f} ms vs {was * 1000:.0f} ms before"
    found = _tested(test, change, P99_SHARE)
    if found != "unchanged":
        return found, f"{figures}: {change:+.0%}", test, "p99"
    within = f"within {P99_SHARE:.0%}" if abs(change) <= P99_SHARE else _not_significant(test)
    return "unchanged", f"{figures}: {within}", test, "p99"


def _throttling(days: Sequence[Window], after: Window, samples: int) -> Decided | Unknown:
    if after.throttled is None or len(after.cfs) < samples:
        return Unknown(
            "too-little-data",
            # throttling decides only without a latency query
            "too little data after the advice (no CFS periods and no latency query)"
            if after.throttled is None
            else f"too little data after the advice ({len(after.cfs)} step(s) the "
            f"container ran; needs {samples})",
        )
    shares = [s for d in days if len(d.cfs) >= samples if (s := d.throttled) is not None]
    if not any(d.throttled is not None for d in days):
        return Unknown(
            "too-little-data",
            "too little data before the advice (no CFS periods and no latency query)",
        )
    if len(shares) < MIN_DAYS:
        return _history(len(shares))
    now = after.throttled
    test = day_test(shares, now)
    was = now - test.difference
    points = test.difference
    change = f"throttling {was:.0%} -> {now:.0%}"
    limit = f"{THROTTLED_POINTS * 100:g} points"
    found = _tested(test, points, THROTTLED_POINTS)
    if found != "unchanged":
        moved = "rose" if found == "regressed" else "fell"
        return found, f"{change}: {moved} by more than {limit}", test, "throttling"
    within = f"within {limit}" if abs(points) <= THROTTLED_POINTS else _not_significant(test)
    return "unchanged", f"{change}: {within}", test, "throttling"


def _mean(values: Iterable[float | None]) -> float | None:
    numbers = [v for v in values if v is not None and math.isfinite(v)]
    return fmean(numbers) if numbers else None


def _median(values: list[float]) -> float | None:
    return median(values) if values else None


def _typical(medians: Iterable[float | None]) -> float | None:
    """The earlier days' typical p99: the geometric mean of their medians, as the test sees it."""
    logs = [math.log(m) for m in medians if m is not None and m > 0]
    return math.exp(fmean(logs)) if logs else None


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)

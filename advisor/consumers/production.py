"""Did the advice help in production? Where the two windows go, and the verdict on one consuming
container from its serving pods' samples in them.

The windows (``place``): **after** starts once the rollout onto the advice is done (the pods that
started within ``ROLLOUT`` of the first pod started with it: a pod an autoscaler or an eviction adds
later does not restart the window) and ``WARM_UP`` passed, and lasts ``window`` or until now;
shorter than ``MIN_AFTER`` it is no after-window yet, shorter than ``window`` less ``FULL_SLACK``
its verdict is ``provisional`` (shown, never acted on). **before** covers the same hours: the
after-window a week back where the history allows (``WEEK``), else the fewest whole days back that
end it before the data changed. It must lie wholly after the previous advice took effect (its own
data-changed time and ``WARM_UP``), so that what it measured is what a revert restores; where no
such placement exists the verdict is unknown.

The verdict (``judge``; docs/deploy.md, "Did it help? Reading production"):

- A load query configured (requests per second): a side without load samples is unknown, and so
  is a load that changed by more than ``LOAD_SHARE`` between the windows: nothing else is
  comparable then.
- A latency query configured: p99 decides, and a side without ``MIN_SAMPLES`` latency samples is
  unknown (a renamed histogram must not hand the verdict to throttling). ``regressed`` or
  ``improved`` only where the samples differ by the Mann-Whitney U test (p below ``ALPHA``,
  ``advisor.consumers.ranktest``) AND the median moved by more than ``P99_SHARE``; otherwise
  ``unchanged``.
- No latency query: the per-step throttled shares decide the same way, the effect being the
  whole window's throttled share moving by more than ``THROTTLED_POINTS``; a side with fewer
  than ``MIN_SAMPLES`` steps or ``MIN_PERIODS`` CFS periods is too little data.

CPU is shown, never judged: using more of a limit is what a better thread setting may do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from statistics import fmean, median

from advisor.consumers.ranktest import mann_whitney
from advisor.models import Production, ProductionVerdict, VerdictCause

#: percentage points of the throttled share that count as a change (a fraction: 0.10)
THROTTLED_POINTS = 0.10
#: relative change of the median p99 that counts as a change
P99_SHARE = 0.10
#: relative change of the mean load beyond which the windows are not comparable
LOAD_SHARE = 0.20
#: the rank test's significance level (two-sided)
ALPHA = 0.01
#: fewer samples (steps) than this on a side: too little data
MIN_SAMPLES = 8
#: fewer CFS periods than this on a side (10 s of runnable time at the default 100 ms): no data
MIN_PERIODS = 100.0
#: a step with fewer CFS periods than this (the container idle) gives no throttled share
MIN_STEP_PERIODS = 10.0
#: skipped after the last pod started with an advice
WARM_UP = timedelta(minutes=10)
#: an after-window shorter than this (or than ``window``, if shorter) is too little data
MIN_AFTER = timedelta(hours=1)
#: pods started later than this after the first one started with the advice are not its rollout
#: (an autoscaler's scale-up, an eviction): they do not move the after-window's start
ROLLOUT = timedelta(minutes=30)
#: an after-window this much shorter than ``window`` is still a full one: advice lands some
#: time after a nightly plan and its pods roll out and warm up, so the next plan never sees a
#: whole window after it; without the slack a regression would never be reverted the next night
FULL_SLACK = WARM_UP + timedelta(hours=1)
WEEK = timedelta(days=7)
DAY = timedelta(days=1)

Points = Sequence[tuple[float, float]]


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

    @property
    def shares(self) -> list[float]:
        return [min(1.0, max(0.0, t / p)) for t, p in self.cfs]


def cfs_steps(throttled: Points, periods: Points) -> list[tuple[float, float]]:
    """(throttled, periods) per step where both were answered and the container ran."""
    by_time = dict(throttled)
    return [
        (by_time[at], total)
        for at, total in periods
        if at in by_time and math.isfinite(total) and math.isfinite(by_time[at])
        and total >= MIN_STEP_PERIODS
    ]  # fmt: skip


@dataclass(frozen=True)
class Unknown:
    """No verdict can be had: what is missing or different."""

    cause: VerdictCause
    reason: str

    def production(self) -> Production:
        return Production(verdict="unknown", cause=self.cause, reason=self.reason)


@dataclass(frozen=True)
class Windows:
    """One placement: the after-window, and the before-window ``back`` earlier."""

    after: tuple[datetime, datetime]
    back: timedelta
    #: why the verdict can only be provisional (None: a full after-window)
    provisional: str | None = None
    #: when the previous advice's data changed (None: not known): the before-window's pods
    #: must have started after it
    previous_changed: datetime | None = None

    @property
    def before(self) -> tuple[datetime, datetime]:
        start, end = self.after
        return start - self.back, end - self.back


def place(
    changed: datetime,
    starts: Sequence[datetime],
    *,
    now: datetime,
    window: timedelta,
    previous_changed: datetime | None = None,
) -> list[Windows] | Unknown:
    """The placements to try, best first (a week back, then days back), or why there is none.
    ``starts``: the start times of the pods the API server lists for the workload."""
    if any(start < changed for start in starts):
        return Unknown(
            "no-after-window", "its running pods predate the advice's data (no after-window yet)"
        )
    first = min(starts, default=changed)
    rollout = [start for start in starts if start <= first + ROLLOUT]
    begun = max([changed, *rollout]) + WARM_UP
    end = min(begun + window, now)
    needed = min(MIN_AFTER, window)
    if end - begun < needed:
        ran = max(timedelta(0), end - begun)
        return Unknown(
            "no-after-window",
            f"too little data after the advice: {_hours(ran)} since its pods started "
            f"and warmed up (needs {_hours(needed)})",
        )
    provisional = None
    if end - begun < max(needed, window - FULL_SLACK):
        provisional = f"{_hours(end - begun)} of the {_hours(window)} after-window so far"
    floor = None if previous_changed is None else previous_changed + WARM_UP
    days = max(1, math.ceil((end - changed) / DAY))
    # an after-window of a week or more: whole weeks back, still the same hours of the week
    weeks = max(1, math.ceil((end - changed) / WEEK))
    backs = [weeks * WEEK] + ([days * DAY] if days * DAY < WEEK else [])
    found = [
        Windows((begun, end), back, provisional, previous_changed)
        for back in backs
        if end - back <= changed and (floor is None or begun - back >= floor)
    ]
    if found:
        return found
    # without a floor the days back always end before the data changed: found is never empty
    assert floor is not None
    return Unknown(
        "hours",
        f"no before-window at the same hours ran the previous advice alone: it took effect "
        f"{_stamp(floor)}, {days} day(s) back starts {_stamp(begun - days * DAY)}",
    )


def ran_previous(windows: Windows, earliest_start: float | None) -> Unknown | None:
    """Why the before-window's pods may not have run the previous advice: one of them started
    before its data changed (``earliest_start``, unix seconds; None: not known, not checked)."""
    changed = windows.previous_changed
    if changed is None or earliest_start is None or earliest_start >= changed.timestamp():
        return None
    started = datetime.fromtimestamp(earliest_start, tz=changed.tzinfo)
    return Unknown(
        "not-previous",
        f"a pod of the before-window started {_stamp(started)}, before the previous advice "
        f"took effect ({_stamp(changed)}): it may not have run it, so a revert may not restore "
        "what was measured",
    )


def judge(
    before: Window,
    after: Window,
    *,
    latency: bool = False,
    load: bool = False,
    provisional: str | None = None,
) -> Production:
    """The verdict for one container. ``latency``/``load``: the workload names that query (then
    its samples must be there on both sides); ``provisional``: why the after-window is short."""
    figures = {
        "throttled_before": _round(before.throttled, 4),
        "throttled_after": _round(after.throttled, 4),
        "cpu_before": _round(_mean(before.cpu), 3),
        "cpu_after": _round(_mean(after.cpu), 3),
        "p99_before_ms": _ms(_median(before.p99)),
        "p99_after_ms": _ms(_median(after.p99)),
        "load_before": _round(_mean(before.load), 3),
        "load_after": _round(_mean(after.load), 3),
    }
    blocked = _not_comparable(before, after, latency=latency, load=load)
    if blocked is not None:
        return Production(verdict="unknown", cause=blocked.cause, reason=blocked.reason, **figures)
    decided = _p99(before.p99, after.p99) if latency else _throttling(before, after)
    if isinstance(decided, Unknown):
        return Production(verdict="unknown", cause=decided.cause, reason=decided.reason, **figures)
    verdict, why, p, cause = decided
    if provisional is not None:
        why = f"provisional ({provisional}): {why}"
    return Production(
        verdict=verdict,
        reason=why,
        cause=cause,
        provisional=provisional is not None,
        p_value=float(f"{p:.3g}"),
        **figures,
    )


def _not_comparable(before: Window, after: Window, *, latency: bool, load: bool) -> Unknown | None:
    if load:
        for side, window in (("before", before), ("after", after)):
            if not window.load:
                return Unknown("load-missing", f"the load query gave no data {side} the advice")
        was, now = fmean(before.load), fmean(after.load)
        if abs(now - was) > LOAD_SHARE * max(was, 0.0) or (was <= 0 < now):
            return Unknown(
                "load-changed",
                f"load changed: {_rate(was)} -> {_rate(now)} req/s "
                f"(more than {LOAD_SHARE:.0%}: the windows are not comparable)",
            )
    if latency:
        for side, window in (("before", before), ("after", after)):
            if len(window.p99) < MIN_SAMPLES:
                got = "no data" if not window.p99 else f"{len(window.p99)} sample(s)"
                return Unknown(
                    "latency-missing",
                    f"the latency query gave {got} {side} the advice (needs {MIN_SAMPLES}; "
                    "throttling alone does not judge a workload that names one)",
                )
    return None


_NOT_SIGNIFICANT = f"the samples do not differ (Mann-Whitney p >= {ALPHA:g})"
#: (verdict, reason, p-value, what decided)
Decided = tuple[ProductionVerdict, str, float, VerdictCause]


def _ranked(p: float, effect: float, limit: float) -> ProductionVerdict:
    """The one rule both deciding figures follow: a change only where the rank test says the
    windows differ and the effect is beyond its size, upwards a regression."""
    if p < ALPHA and effect > limit:
        return "regressed"
    if p < ALPHA and effect < -limit:
        return "improved"
    return "unchanged"


def _p99(before: list[float], after: list[float]) -> Decided:
    test = mann_whitney(before, after)
    was, now = median(before), median(after)
    change = (now - was) / was if was > 0 else math.inf if now > was else 0.0
    figures = f"p99 {now * 1000:.0f} ms vs {was * 1000:.0f} ms before"
    # the p-value is the verdict's own field: a plan reason words several consumers in one line
    verdict = _ranked(test.p, change, P99_SHARE)
    if verdict != "unchanged":
        return verdict, f"{figures}: {change:+.0%}", test.p, "p99"
    within = f"within {P99_SHARE:.0%}" if abs(change) <= P99_SHARE else _NOT_SIGNIFICANT
    return "unchanged", f"{figures}: {within}", test.p, "p99"


def _throttling(before: Window, after: Window) -> Decided | Unknown:
    for side, window in (("before", before), ("after", after)):
        if window.throttled is None or len(window.cfs) < MIN_SAMPLES:
            return Unknown(
                "too-little-data",
                # throttling decides only without a latency query
                f"too little data {side} the advice (no CFS periods and no latency query)"
                if window.throttled is None
                else f"too little data {side} the advice ({len(window.cfs)} step(s) the "
                f"container ran; needs {MIN_SAMPLES})",
            )
    was, now = before.throttled, after.throttled
    assert was is not None and now is not None
    test = mann_whitney(before.shares, after.shares)
    points = now - was
    change = f"throttling {was:.0%} -> {now:.0%}"
    limit = f"{THROTTLED_POINTS * 100:g} points"
    verdict = _ranked(test.p, points, THROTTLED_POINTS)
    if verdict != "unchanged":
        moved = "rose" if verdict == "regressed" else "fell"
        return verdict, f"{change}: {moved} by more than {limit}", test.p, "throttling"
    within = f"within {limit}" if abs(points) <= THROTTLED_POINTS else _NOT_SIGNIFICANT
    return "unchanged", f"{change}: {within}", test.p, "throttling"


def _mean(values: list[float]) -> float | None:
    finite = [v for v in values if math.isfinite(v)]
    return fmean(finite) if finite else None


def _median(values: list[float]) -> float | None:
    return median(values) if values else None


def _rate(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 10 else f"{value:.2g}"


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def _hours(span: timedelta) -> str:
    return f"{span.total_seconds() / 3600:.1f} h"


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%MZ")

"""Where production's windows go (docs/deploy.md, "The windows"): the rollout onto an advice,
the after-windows from it, and for each the earlier days at its hours that ran the previous
advice alone. The verdict over them is ``advisor.consumers.production``.

The after-windows start once the rollout is done and the warm-up (``WARM_UP`` unless told)
passed, one after the other, each ``window`` long. The rollout is read from kube-state-metrics'
pod start times: the first step at which every pod of the workload had started after the
advice's data changed. Later pods (an autoscaler's, a node upgrade's) do not move it, so the
windows are fixed by the history and each is judged on its own data, whenever and however often
it is read. Without those series it is the live pods' rollout (the pods that started within
``ROLLOUT`` of the first), which pod turnover does move. An after-window within ``slack`` of its
end is full; the one still short is provisional (shown, never acted on), and one shorter than
``MIN_AFTER`` is none.

The earlier days of each after-window: its hours on up to ``MAX_DAYS`` days (``stride``: whole
days, as many as the window spans) before the advice's data changed, wholly after the previous
advice took effect (its data-changed time and ``WARM_UP``, its pods all started after it).
Fewer than ``MIN_DAYS``: unknown, never revertable, saying so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from advisor.models import Production, VerdictCause
from advisor.models.production import REVERT_WINDOWS

#: earlier days the test needs: fewer leave too few degrees of freedom to catch a 30% regression
#: on days that vary by 3-8% (measured: 7 days catch it in 9 of 10 advice over two windows)
MIN_DAYS = 7
#: earlier days it reads at most: two weeks, within Prometheus' default 15-day retention
MAX_DAYS = 14
#: skipped after the rollout onto an advice unless told (``--warm-up``): a model server's caches,
#: its first requests' graph building
WARM_UP = timedelta(minutes=10)
#: an after-window shorter than this (or than ``window``, if shorter) is too little data
MIN_AFTER = timedelta(hours=1)
#: without kube-state-metrics' start times: pods started later than this after the first one
#: started with the advice are not its rollout (an autoscaler's scale-up, an eviction)
ROLLOUT = timedelta(minutes=30)
#: the part of the slack beyond the warm-up: a nightly plan's hour
_PLAN_SLACK = timedelta(hours=1)
#: an after-window this much shorter than ``window`` is still a full one: advice lands some
#: time after a nightly plan and its pods roll out and warm up, so a nightly plan never sees
#: whole windows after it; without the slack a regression would be reverted a night later.
#: A window is never full with less than three quarters of it (``slack``): a shorter
#: ``--window`` than the slack would otherwise be "full" before it began
FULL_SLACK = WARM_UP + _PLAN_SLACK
DAY = timedelta(days=1)

Points = Sequence[tuple[float, float]]
Span = tuple[datetime, datetime]


def finite(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points whose value is a number: NaN and infinities are no sample."""
    return [(at, value) for at, value in points if math.isfinite(value)]


def unknown(cause: VerdictCause, reason: str, **figures: Any) -> Production:
    """The verdict when none can be had: what is missing or different (``figures``: what was
    read all the same)."""
    return Production(verdict="unknown", cause=cause, reason=reason, **figures)


@dataclass(frozen=True)
class Unknown:
    """Why no placement or verdict can be had."""

    cause: VerdictCause
    reason: str

    def production(self) -> Production:
        return unknown(self.cause, self.reason)


def slack(window: timedelta, warm_up: timedelta = WARM_UP) -> timedelta:
    """How much shorter than ``window`` an after-window may be and still be full."""
    return min(warm_up + _PLAN_SLACK, window / 4)


def stride(window: timedelta) -> timedelta:
    """The whole days between one earlier day and the next: each then lies at an after-window's
    hours."""
    return DAY * max(1, math.ceil(window / DAY))


def rollout(
    changed: datetime, starts: Sequence[datetime], earliest: Points | None = None
) -> datetime | Unknown:
    """When the workload's pods had all started with the advice. ``starts``: the live pods'
    start times; ``earliest``: kube-state-metrics' earliest start of the workload's pods at each
    step (unix seconds; None or empty: not known, the live pods decide)."""
    if any(start < changed for start in starts):
        return Unknown(
            "no-after-window", "its running pods predate the advice's data (no after-window yet)"
        )
    at = changed.timestamp()
    for step, first in finite(earliest or ()):
        if step >= at and first >= math.floor(at):
            return datetime.fromtimestamp(step, tz=changed.tzinfo or timezone.utc)
    first_start = min(starts, default=changed)
    return max([changed, *(s for s in starts if s <= first_start + ROLLOUT)])


@dataclass(frozen=True)
class Placement:
    """The after-windows to judge, oldest first (the last ``REVERT_WINDOWS`` full ones, else the
    short one), and for each the earlier days at its hours, newest first."""

    after: list[Span]
    #: the number of the first of ``after`` (1: the first window after the rollout)
    first: int
    #: why the last of ``after`` is short (None: every one is full)
    provisional: str | None
    days: list[list[Span]]
    #: when the previous advice's data changed (None: not known): the earlier days' pods must
    #: have started after it
    previous_changed: datetime | None = None

    @property
    def days_span(self) -> Span:
        every = [day for days in self.days for day in days]
        return min(d[0] for d in every), max(d[1] for d in every)

    @property
    def after_span(self) -> Span:
        return self.after[0][0], self.after[-1][1]


def place(
    changed: datetime,
    rolled_out: datetime,
    *,
    now: datetime,
    window: timedelta,
    previous_changed: datetime | None = None,
    warm_up: timedelta = WARM_UP,
) -> Placement | Unknown:
    """The windows since ``rolled_out`` and ``warm_up``, one after the other, or why there are
    none yet."""
    begun = rolled_out + warm_up
    needed = min(MIN_AFTER, window)
    full: list[Span] = []
    while begun + (len(full) + 1) * window - slack(window, warm_up) <= now:
        start = begun + len(full) * window
        full.append((start, min(start + window, now)))
    start = begun + len(full) * window
    short = (start, min(start + window, now)) if now - start >= needed else None
    if not full and short is None:
        ran = max(timedelta(0), now - begun)
        return Unknown(
            "no-after-window",
            f"too little data after the advice: {_hours(ran)} since its pods started "
            f"and warmed up (needs {_hours(needed)})",
        )
    after = full[-REVERT_WINDOWS:]
    provisional = None
    if not after:
        assert short is not None
        provisional = f"{_hours(short[1] - short[0])} of the {_hours(window)} after-window so far"
        after = [short]
    floor = None if previous_changed is None else previous_changed + warm_up
    days = [_days(span, changed, floor) for span in after]
    if len(days[-1]) < MIN_DAYS:
        had = "" if floor is None else f" since the previous advice took effect {stamp(floor)}"
        return Unknown(
            "too-little-history",
            f"too little history to judge against: {len(days[-1])} earlier day(s) at the same "
            f"hours{had} (the test needs {MIN_DAYS})",
        )
    first = len(full) - len(after) + 1 if full else len(full) + 1
    return Placement(after, first, provisional, days, previous_changed)


def _days(after: Span, changed: datetime, floor: datetime | None) -> list[Span]:
    """The earlier days at ``after``'s hours that end before the data changed and start after
    ``floor``, newest first, ``MAX_DAYS`` at most."""
    step = stride(after[1] - after[0])
    found: list[Span] = []
    back = math.ceil((after[1] - changed) / step)
    while len(found) < MAX_DAYS:
        day = (after[0] - back * step, after[1] - back * step)
        if floor is not None and day[0] < floor:
            break
        found.append(day)
        back += 1
    return found


def ran_previous(day: Span, earliest: Points, previous_changed: datetime | None) -> bool:
    """Whether every pod serving in ``day`` started after the previous advice took effect
    (``earliest``: kube-state-metrics' earliest start per step; none in the day: not known,
    taken as yes)."""
    if previous_changed is None:
        return True
    start, end = day[0].timestamp(), day[1].timestamp()
    floor = math.floor(previous_changed.timestamp())
    return all(first >= floor for at, first in finite(earliest) if start < at <= end)


def _hours(span: timedelta) -> str:
    return f"{span.total_seconds() / 3600:.1f} h"


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%MZ")

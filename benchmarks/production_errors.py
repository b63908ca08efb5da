"""``python -m benchmarks production``: the production verdict's error rates on generated series.

Each series is one opted-in workload's p99 as a platform team's Prometheus holds it, one sample
per 5 minutes: a diurnal curve, a level that moves from day to day by 3-8% (the sd, drawn per
workload), and within the day autocorrelated noise (AR(1), 0.7 from one 5-minute step to the
next). Under the null the advice changes nothing; under the alternative it makes p99 30% worse
from the rollout on. Each series is judged as the product judges it
(``advisor.consumers.production``: the windows placed from the rollout, every earlier day's
samples cut out of the series, the day test, the persistence ``plan`` needs before a revert,
``advisor.fleet.production.persistent``) on the two nightly plans after the rollout, and by the
rule it replaced, for contrast: the after-window's 5-minute samples against the week before's
by a Mann-Whitney test at 0.01 and a 10% effect (``benchmarks/ranktest.py``), reverted on its
first ``regressed``.

What it reports, for each history length (days of series before the advice's data changed):
P(regressed) and P(improved) on the first full window under the null, P(revert) by the second
nightly plan under the null, P(revert) by the second plan under +30% (the power), and the share
of ``unknown`` verdicts with the reason.
"""

from __future__ import annotations

import argparse
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from statistics import median

from advisor.consumers.production import P99_SHARE, Samples, verdict
from advisor.consumers.production_windows import FULL_SLACK, MIN_DAYS, WARM_UP, Unknown, place
from advisor.fleet.production import persistent
from advisor.models import Production
from benchmarks.ranktest import mann_whitney

STEP_S = 300
STEPS_A_DAY = 86400 // STEP_S
WINDOW = timedelta(hours=24)
CHANGED = datetime(2026, 11, 20, 2, 0, tzinfo=timezone.utc)
#: the advice lands this long after the nightly plan, and its pods roll out then
ROLLED_OUT = CHANGED + timedelta(minutes=5)
#: the old rule's level and effect
OLD_ALPHA = 0.01


@dataclass(frozen=True)
class Outcome:
    """One series judged: the first nightly plan's verdict, the second's, and whether each
    rule reverted by the second plan."""

    first: Production
    second: Production
    reverted: bool
    old_first: str
    old_reverted: bool


def series(
    rng: random.Random, days: int, effect: float, *, history: int
) -> list[tuple[float, float]]:
    """``days`` days of 5-minute p99 samples (unix seconds, seconds) from ``history`` days before
    the change on; the samples after the rollout ``effect`` times higher."""
    day_sd = rng.uniform(0.03, 0.08)
    phi, within = 0.7, 0.15
    start = CHANGED.timestamp() - history * 86400
    rolled = ROLLED_OUT.timestamp()
    out = []
    x = 0.0
    for day in range(days):
        level = rng.gauss(0, day_sd)
        for step in range(STEPS_A_DAY):
            x = phi * x + rng.gauss(0, within * math.sqrt(1 - phi * phi))
            at = start + (day * STEPS_A_DAY + step + 1) * STEP_S
            diurnal = 0.2 * math.sin(2 * math.pi * step / STEPS_A_DAY)
            value = 0.05 * math.exp(level + x + diurnal) * (effect if at > rolled else 1.0)
            out.append((at, value))
    return out


def judged(points: Sequence[tuple[float, float]], now: datetime) -> Production:
    """The product's verdict as a plan at ``now`` would have it."""
    placed = place(CHANGED, ROLLED_OUT, now=now, window=WINDOW)
    if isinstance(placed, Unknown):
        return placed.production()
    samples = Samples(p99=points)
    return verdict(placed, samples, samples, latency=True)


def old_rule(points: Sequence[tuple[float, float]], now: datetime) -> str:
    """The replaced verdict: the after-window against the same hours a week back, sample by
    sample."""
    begun = (ROLLED_OUT + WARM_UP).timestamp()
    end = min(begun + WINDOW.total_seconds(), now.timestamp())
    week = 7 * 86400
    after = [v for t, v in points if begun < t <= end]
    before = [v for t, v in points if begun - week < t <= end - week]
    if len(before) < 8 or len(after) < 8:
        return "unknown"
    p = mann_whitney(before, after)
    change = median(after) / median(before) - 1
    if p < OLD_ALPHA and change > P99_SHARE:
        return "regressed"
    if p < OLD_ALPHA and change < -P99_SHARE:
        return "improved"
    return "unchanged"


def one(rng: random.Random, effect: float, history: int) -> Outcome:
    # the nightly plans a day and two days after the one that started the calibration
    nights = [CHANGED + k * WINDOW - timedelta(minutes=30) for k in (1, 2)]
    points = series(rng, history + 3, effect, history=history)
    first, second = (judged(points, night) for night in nights)
    old = [old_rule(points, night) for night in nights]
    return Outcome(
        first=first,
        second=second,
        reverted=persistent(first) or persistent(second),
        old_first=old[0],
        old_reverted="regressed" in old,
    )


def report(outcomes: Sequence[Outcome], effect: float) -> dict[str, float]:
    n = len(outcomes)
    return {
        "regressed": sum(o.first.verdict == "regressed" for o in outcomes) / n,
        "improved": sum(o.first.verdict == "improved" for o in outcomes) / n,
        "unknown": sum(o.first.verdict == "unknown" for o in outcomes) / n,
        "reverted": sum(o.reverted for o in outcomes) / n,
        "old_regressed": sum(o.old_first == "regressed" for o in outcomes) / n,
        "old_improved": sum(o.old_first == "improved" for o in outcomes) / n,
        "old_reverted": sum(o.old_reverted for o in outcomes) / n,
        "effect": effect,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks production", description=__doc__)
    parser.add_argument("--series", type=int, default=1000, help="series per case (default 1000)")
    parser.add_argument("--seed", type=int, default=48)
    parser.add_argument(
        "--history",
        type=int,
        nargs="+",
        default=[6, 8, 9, 15],
        help="days of series before the change (default 6 8 9 15: too little, the least a "
        "revert needs, a platform team's 9 days, Prometheus' default retention)",
    )
    args = parser.parse_args(argv)
    print(
        f"production verdicts on generated p99 series ({args.series} a case, seed {args.seed}): "
        "day-to-day sd 3-8%, 5-minute AR(1) 0.7, 24 h windows, plans 1 and 2 nights after"
    )
    print(
        f"{'history':>8} {'effect':>7} {'regressed':>10} {'improved':>9} {'unknown':>8} "
        f"{'reverted':>9} | {'old regr.':>9} {'old impr.':>9} {'old revert':>10}"
    )
    for history in args.history:
        for effect in (1.0, 1.3):
            rng = random.Random(f"{args.seed}-{history}-{effect}")
            outcomes = [one(rng, effect, history) for _ in range(args.series)]
            r = report(outcomes, effect)
            print(
                f"{history:>7}d {effect - 1:>+7.0%} {r['regressed']:>10.1%} {r['improved']:>9.1%} "
                f"{r['unknown']:>8.1%} {r['reverted']:>9.1%} | {r['old_regressed']:>9.1%} "
                f"{r['old_improved']:>9.1%} {r['old_reverted']:>10.1%}"
            )
            causes = Counter(str(o.first.cause) for o in outcomes if o.first.verdict == "unknown")
            if causes:
                print(f"{'':>8} unknown: " + ", ".join(f"{c} {k}" for c, k in causes.items()))
    print(
        f"a plan sees a full window within {FULL_SLACK} of its end; the first window's "
        f"{MIN_DAYS} earlier days need {MIN_DAYS} days of series before the change, the "
        "second's one more (its day just before ends after the change): a revert needs "
        f"{MIN_DAYS + 1}"
    )
    return 0

"""``--sweep-onednn``: TF_ENABLE_ONEDNN_OPTS=0 against =1 on the advised thread setting.

TF reads the variable once, at ``import tensorflow``, so each value needs processes (and a trial
server) of its own; the caller hands in one TrialFn per value. The two are measured in
interleaved pairs, the order alternating, so that drift on a shared node hits both alike, and the
advice carries the variable only when one value wins beyond the noise both showed: a ConfigMap
key that changes nothing measurable is one more thing to wonder about. The two are judged by what
the thread setting was chosen by (``Choice.measure``): under an SLO no setting met, that is p99,
not the objective's throughput.

Planned as the search is, by its ``Budget`` (``advisor.calibrate.budget``), and ended as early:
once the verdict is settled (``settled``: at least ``SETTLE_PAIRS`` pairs, and one value ahead by
more than twice the band, or the two within a band of at most the search's ``settle_band``
together with their difference), unless the search spends its budget (``spend_budget``). Pure:
time from the budget's Clock, trials from TrialFns, like the search.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping

from advisor.calibrate.budget import Budget, TrialFn, Window, result_text
from advisor.calibrate.statistics import (
    coefficient_of_variation,
    median_error,
    noise_band_of_errors,
)
from advisor.models import (
    ONEDNN_VALUES,
    OnednnValue,
    OpenReason,
    PairsVerdict,
    ThreadSetting,
    TrialResult,
)
from advisor.objectives import Measure

#: a verdict needs at least this many pairs; fewer and the advice leaves the variable alone
MIN_PAIRS = 3

#: the share of the budget the pairs get (the thread sweep gets the rest): two servers' imports
#: and at least MIN_PAIRS pairs of a small model within the default budget (45 s: 3 pairs in the
#: tests' fake-clock model, 4 at 60 s)
BUDGET_SHARE = 1 / 3

#: pairs a verdict must rest on before it may end the pairs early (the budget ends them otherwise)
SETTLE_PAIRS = 5

#: shorter windows than the race's: the verdict rests on the median over pairs, not on one window
WINDOW = Window(warmup_s=0.3, measure_s=0.5, min_requests=200, max_measure_s=2.0)


def measure_pairs(
    setting: ThreadSetting,
    trial_fns: Mapping[OnednnValue, TrialFn],
    *,
    measure: Measure,
    budget: Budget,
    say: Callable[[str], None],
) -> tuple[list[TrialResult], PairsVerdict]:
    """Pairs of trials (one per value, alternating order) while ``budget`` (the search's plan:
    its safety, its reserve at the end, its deadlines) fits another pair and the verdict is not
    ``settled``; the verdict."""
    trials: list[TrialResult] = []
    pairs = 0
    took: list[float] = []
    while budget.remaining() >= 2 * _planned(budget, took):
        if not budget.settings.spend_budget and settled(
            verdict(trials, measure, pairs), budget.settings.settle_band
        ):
            say(f"oneDNN: settled after {pairs} pairs")
            break
        order = ONEDNN_VALUES if pairs % 2 == 0 else ONEDNN_VALUES[::-1]
        for onednn in order:
            spec = WINDOW.spec(setting, pairs, onednn=onednn)
            # planned with the usual window (most end there); the deadline allows the longest
            deadline = budget.deadline(WINDOW)
            began = budget.now()
            result = trial_fns[onednn](spec, deadline)
            took.append(budget.now() - began)
            say(f"oneDNN pair {pairs + 1}: TF_ENABLE_ONEDNN_OPTS={onednn} -> {result_text(result)}")
            trials.append(result)
        pairs += 1
    return trials, verdict(trials, measure, pairs)


def settled(decided: PairsVerdict, settle_band: float) -> bool:
    """More pairs would not change ``decided``: it rests on SETTLE_PAIRS pairs, and one value is
    ahead by more than twice the band, or the two are within noise with the band and their
    difference together at most ``settle_band``."""
    if decided.counted < SETTLE_PAIRS or decided.band is None:
        return False
    if decided.code == "better":
        return decided.margin > 2 * decided.band
    return decided.margin + decided.band <= settle_band


def open_reason(decided: PairsVerdict, settle_band: float) -> OpenReason | None:
    """Why the pairs kept the calibration open (None: ``settled``): ``windows`` while they rest
    on fewer than SETTLE_PAIRS counted pairs (or too few for a band: "few pairs"), since more
    pairs were all they lacked; ``noise`` when they had the pairs and the two values still differ
    within a band too wide to call."""
    if settled(decided, settle_band):
        return None
    if decided.counted < SETTLE_PAIRS or decided.band is None:
        return "windows"
    return "noise"


def _planned(budget: Budget, took: list[float]) -> float:
    """A trial's planned cost: the usual window's, or what the slowest of the last two really
    took (a slow model's windows run to their request count, far past the planned seconds)."""
    return max([budget.usual_cost(WINDOW), *took[-2:]])


def verdict(trials: list[TrialResult], measure: Measure, pairs: int) -> PairsVerdict:
    """Which value wins beyond noise by ``measure``: the medians differ by more than the thread
    search's noise band for two medians (two standard errors of their difference, 5-25%)."""
    by_value: dict[str, list[float]] = {v: [] for v in ONEDNN_VALUES}
    for trial in trials:
        if trial.status == "ok" and trial.onednn is not None:
            by_value[trial.onednn].append(measure.value(trial))
    counted = min(len(v) for v in by_value.values())
    unit = measure.named_unit
    if counted < MIN_PAIRS:
        medians = {k: statistics.median(v) for k, v in by_value.items() if v}
        return PairsVerdict("few pairs", None, medians, pairs, counted, MIN_PAIRS, unit)
    medians = {k: statistics.median(v) for k, v in by_value.items()}
    band = noise_band_of_errors(*(_error(v) for v in by_value.values()))
    lower = measure.lower_is_better
    best = min(medians, key=medians.__getitem__) if lower else max(medians, key=medians.__getitem__)
    other = "1" if best == "0" else "0"
    margin = (
        (medians[other] - medians[best]) / medians[other]
        if lower
        else ((medians[best] - medians[other]) / medians[other])
    )
    if margin > band:
        chosen: OnednnValue = "0" if best == "0" else "1"
        return PairsVerdict(
            "better", chosen, medians, pairs, counted, MIN_PAIRS, unit, band, margin
        )
    return PairsVerdict(
        "within noise", None, medians, pairs, counted, MIN_PAIRS, unit, band, margin
    )


def _error(values: list[float]) -> float:
    """The relative standard error of the median of ``values``."""
    return median_error(coefficient_of_variation(values) or 0.0, len(values))

"""How sure the sweep can be of what it measured: each setting's statistics and the noise band
that tells two settings apart (what "best" means for each objective is ``advisor.objectives``; the
advice taken from these numbers is ``advisor.calibrate.choice``).

Trials are noisy (a shared node, a CFS period that lands mid-request, a short window whose p99 is
nearly its maximum), so one number per setting is not a ranking. A setting is judged by the median
of its trusted windows: the race's longer windows if it was raced, else the screen's. How much its
windows disagree is their coefficient of variation (CV = stdev / mean of the objective's value).

How far apart two medians must be to be told apart is not one window's spread: each median rests
on several windows, so its own uncertainty is its standard error, ``sqrt(pi/2) * CV / sqrt(n)``
for ``n`` windows (the standard error of a median). Two medians are a tie when they differ by less
than ``Z`` (2) standard errors of their difference, ``Z * sqrt(e1**2 + e2**2)``: the noise band
(``band`` wherever the code holds one), at least ``MIN_BAND`` and at most ``MAX_BAND``.

A median can be moved by a few windows that a burst on the node hit: the pooled figure says
"37% better" when the bursts fell on the other setting's windows. The race measures its settings
in rounds, each setting once per round, close together in time, so a real difference shows in
the rounds too: ``holds_in_rounds`` is whether one setting beat the other in at least
``HOLDS_SHARE`` of the race rounds that measured both, and beyond the noise band in the median
round (with fewer than ``MIN_PAIRED_ROUNDS`` of them there is nothing to reproduce it with, and
the pooled figure decides alone).

A percentile of one window's latencies is ``advisor.calibrate.percentile``, apart from these: it
imports nothing, so the trial child and the benchmark share it without the models.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from advisor.models import Measurement, ThreadSetting, TrialResult
from advisor.objectives import Measure

#: the narrowest noise band: two medians within 5% of each other are a tie even on a quiet node
MIN_BAND = 0.05

#: the widest: a leader whose windows disagree by more must not make every setting a "tie" and
#: hand the win to the fewest threads regardless of the numbers
MAX_BAND = 0.25

#: standard errors of the difference between two medians that make them different (about 95%)
Z = 2.0

#: the standard error of a median is this times stdev / sqrt(n) (sqrt(pi/2), normal windows)
MEDIAN_ERROR = 1.2533

#: a setting whose windows' CV is above this is unstable (perf_analyzer's stability criterion):
#: the search measures it again rather than trust or drop it
STABLE_CV = 0.10

#: the share of the race rounds measuring both in which a setting must beat another for its win
#: to hold (3 of 3, 3 of 4, 4 of 5, 5 of 6, ... 8 of 10): a burst may cost a round, not the verdict
HOLDS_SHARE = 0.75

#: race rounds measuring both that a win must be reproduced in before the rounds are asked
MIN_PAIRED_ROUNDS = 3

#: trials of this round are screen windows (short, one or two per setting); later rounds are race
#: windows, which a raced setting is judged by
SCREEN_ROUND = 0


@dataclass(frozen=True)
class ConfigStats:
    """One setting's numbers: medians over its trusted windows and how much those disagree."""

    setting: ThreadSetting
    #: judged by race windows (else by screen windows)
    raced: bool
    #: the latest round it was measured in
    round: int
    p50_ms: float
    p99_ms: float
    throughput_rps: float
    #: trusted windows behind the medians
    windows: int
    #: successful trials of any phase
    trials: int
    #: intra + inter; for the baseline what TF runs (0 when the caller did not say)
    threads: int
    #: the trusted windows themselves, for the spread of whatever measure is asked
    trusted: tuple[TrialResult, ...] = dataclasses.field(repr=False)
    #: median over the trusted windows that recorded it; None when none did (older results).
    #: Shown, never ranked by: it tells why a setting is slow, the objective says whether it is
    switches_per_request: float | None = None

    @property
    def is_baseline(self) -> bool:
        return self.setting.is_default

    @property
    def label(self) -> str:
        return self.setting.label

    def cv(self, measure: Measure) -> float | None:
        """The CV of ``measure`` over the trusted windows."""
        return coefficient_of_variation([measure.read(t) or 0.0 for t in self.trusted])

    def error(self, measure: Measure) -> float | None:
        """The relative standard error of the median of ``measure``; None with fewer than two
        windows (no spread to judge by)."""
        cv = self.cv(measure)
        if cv is None or self.windows < 2:
            return None
        return median_error(cv, self.windows)

    def measurement(self) -> Measurement:
        return Measurement(
            p50_ms=self.p50_ms, p99_ms=self.p99_ms, throughput_rps=self.throughput_rps
        )


def usable(trial: TrialResult) -> bool:
    """A trial that produced every number the objectives need."""
    return (
        trial.status == "ok"
        and trial.p50_ms is not None
        and trial.p99_ms is not None
        and trial.throughput_rps is not None
    )


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """stdev / mean (sample stdev); None with fewer than two values or a mean of zero."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean <= 0:
        return None
    return statistics.stdev(values) / mean


def aggregate(
    trials: Iterable[TrialResult], picks: ThreadSetting | None = None
) -> list[ConfigStats]:
    """Per setting: medians and CVs over its trusted windows (race windows if it has any, else
    screen windows), in the order settings were first measured.

    ``picks`` is what TF runs for the baseline (``candidates.tf_picks``): it costs the
    baseline's threads when the cheapest setting within noise is picked (0 without it).
    """
    by_config: dict[ThreadSetting, list[TrialResult]] = {}
    for trial in trials:
        if usable(trial):
            by_config.setdefault(trial.setting, []).append(trial)
    result = []
    for setting, runs in by_config.items():
        race = [t for t in runs if t.round > SCREEN_ROUND]
        trusted = race or runs
        runs_as = picks if setting.is_default else setting
        threads = runs_as.threads if runs_as is not None and runs_as.threads is not None else 0
        result.append(
            ConfigStats(
                setting=setting,
                raced=bool(race),
                round=max(t.round for t in runs),
                p50_ms=statistics.median(t.p50_ms or 0.0 for t in trusted),
                p99_ms=statistics.median(t.p99_ms or 0.0 for t in trusted),
                throughput_rps=statistics.median(t.throughput_rps or 0.0 for t in trusted),
                windows=len(trusted),
                trials=len(runs),
                threads=threads,
                trusted=tuple(trusted),
                switches_per_request=_median_of(
                    t.involuntary_switches_per_request for t in trusted
                ),
            )
        )
    return result


def _median_of(values: Iterable[float | None]) -> float | None:
    """The median of the values that are known, None when none is."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def within(a: float, b: float, tolerance: float) -> bool:
    """a is within ``tolerance`` (relative to b) of b."""
    if b == 0:
        return a == 0
    return abs(a - b) <= tolerance * abs(b)


def noise_band(one: ConfigStats, other: ConfigStats, measure: Measure) -> float:
    """The band within which ``one``'s and ``other``'s medians are a tie: ``Z`` standard errors of
    their difference, between MIN_BAND and MAX_BAND.

    A setting with a single window has no error of its own; it is taken to be as noisy as the
    other (two single windows: MIN_BAND, as a quiet node would give).
    """
    errors = [one.error(measure), other.error(measure)]
    known = [e for e in errors if e is not None]
    if not known:
        return MIN_BAND
    mine, theirs = (e if e is not None else known[0] for e in errors)
    return noise_band_of_errors(mine, theirs)


def median_error(cv: float, windows: int) -> float:
    """The relative standard error of a median over ``windows`` windows whose spread is ``cv``."""
    return MEDIAN_ERROR * cv / math.sqrt(windows)


def noise_band_of_errors(*errors: float) -> float:
    """``Z * sqrt(sum of squared relative errors)``, between MIN_BAND and MAX_BAND."""
    return min(MAX_BAND, max(MIN_BAND, Z * math.sqrt(sum(e * e for e in errors))))


def paired_rounds(
    mine: ConfigStats, theirs: ConfigStats, measure: Measure
) -> list[tuple[float, float]]:
    """(mine, theirs) in every race round that measured both, in round order: the same stretch
    of time, so a burst on the node hits both or neither more often than not."""
    theirs_by_round = {t.round: measure.read(t) for t in theirs.trusted if t.round > SCREEN_ROUND}
    out = []
    for trial in sorted(mine.trusted, key=lambda t: t.round):
        if trial.round <= SCREEN_ROUND or trial.round not in theirs_by_round:
            continue
        a, b = measure.read(trial), theirs_by_round[trial.round]
        if a is not None and b is not None:
            out.append((a, b))
    return out


def holds_in_rounds(
    mine: ConfigStats, theirs: ConfigStats, measure: Measure, band: float = 0.0
) -> bool:
    """``mine`` beat ``theirs`` in at least HOLDS_SHARE of the race rounds that measured both,
    and by more than ``band`` in the median round (the median of the per-round ratios: a burst
    that hits both in one round cancels out, where it moves the pooled medians of windows taken
    at different times); True with fewer than MIN_PAIRED_ROUNDS of them (nothing to reproduce
    the win in)."""
    pairs = paired_rounds(mine, theirs, measure)
    if len(pairs) < MIN_PAIRED_ROUNDS:
        return True
    lower = measure.lower_is_better
    wins = sum(1 for a, b in pairs if (a < b if lower else a > b))
    if wins < math.ceil(HOLDS_SHARE * len(pairs)):
        return False
    ratios = [a / b for a, b in pairs if b > 0]
    if not ratios:
        return False
    middle = statistics.median(ratios)
    return middle < 1 - band if lower else middle > 1 + band


def ratio(mine: ConfigStats, theirs: ConfigStats, measure: Measure) -> float | None:
    """How much better ``mine`` is than ``theirs`` as a ratio of medians (>1 = better)."""
    a, b = measure.value(mine), measure.value(theirs)
    if measure.lower_is_better:
        return b / a if a > 0 else None
    return a / b if b > 0 else None

"""How sure the sweep can be about what is best, and the advice it gives (what "best" means for
each objective is ``advisor.objectives``).

Trials are noisy (a shared node, a CFS period that lands mid-request, a short window whose p99 is
nearly its maximum), so one number per setting is not a ranking. A setting is judged by the median
of its trusted windows: the race's longer windows if it was raced, else the screen's. How much its
windows disagree is their coefficient of variation (CV = stdev / mean of the objective's value).

How far apart two medians must be to be told apart is not one window's spread: each median rests
on several windows, so its own uncertainty is its standard error, ``sqrt(pi/2) * CV / sqrt(n)``
for ``n`` windows (the standard error of a median). Two medians are a tie when they differ by less
than ``Z`` (2) standard errors of their difference, ``Z * sqrt(e1**2 + e2**2)``: the noise band,
at least ``MIN_BAND`` and at most ``MAX_BAND``. Every setting within the band of the best (the
leader and the baseline set it) is ``near_best``, like a VPA's lower and upper bound: the
measurement cannot tell them apart.

The advice is the cheapest of them whose median is also within ``TRADE_OFF`` (5%) of the best:
the fewest intra + inter threads throttle less under a quota, cost less memory and leave CPU to
the pod's neighbours, and 5% is what the advice may give up for that. Within noise but further
behind is not given away: on a noisy node the band can be 15-25%, and "cannot tell apart" is not
"as good" (the benchmark measured advice 10-18% behind the best when it was).

TF's default (the baseline) competes like any other setting, costed at the threads TF really runs
(both pools at the affinity count). When it is the pick, the advice spells it out and claims no
gain; when the advice is within the band of it, the gain is reported as 1.0 with
``gain_within_noise``: a 3% "gain" inside a 5% band is noise, not a result. That band is the
chosen setting's and the baseline's own.

Change only on evidence: the advice in force (the incumbent: the stored advice, else TF's default)
stands until a setting beats it beyond the noise band of the two (at least MIN_BAND). Without that
rule the pick among settings within noise moves with the noise from run to run, and every move is
a rollout of every consumer for a difference the measurement itself calls no difference. When
settings do beat it, the advice is the cheapest of those that are also within TRADE_OFF of the
best, so the usual trade of a little speed for fewer threads never goes below the incumbent.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from advisor.models import Measurement, ThreadSetting, TrialResult
from advisor.objectives import Measure, Objective

#: the narrowest noise band: two medians within 5% of each other are a tie even on a quiet node
MIN_BAND = 0.05

#: the widest: a leader whose windows disagree by more must not make every setting a "tie" and
#: hand the win to the fewest threads regardless of the numbers
MAX_BAND = 0.25

#: the most of the objective the advice gives up for fewer threads: a cheaper setting within noise
#: but more than this behind the best is not advised
TRADE_OFF = 0.05

#: standard errors of the difference between two medians that make them different (about 95%)
Z = 2.0

#: the standard error of a median is this times stdev / sqrt(n) (sqrt(pi/2), normal windows)
MEDIAN_ERROR = 1.2533

#: a setting whose windows' CV is above this is unstable (perf_analyzer's stability criterion):
#: the search measures it again rather than trust or drop it
STABLE_CV = 0.10

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


@dataclass(frozen=True)
class Choice:
    """The pick, the settings it could not be told apart from, and how it compares with TF's
    default."""

    chosen: ConfigStats
    baseline: ConfigStats
    #: the best by the objective alone, before the cheapest within noise is taken
    leader: ConfigStats
    #: every setting within ``band`` of the leader, best first (the leader and the pick included;
    #: the pick is the cheapest of those also within TRADE_OFF)
    near_best: tuple[ConfigStats, ...]
    band: float
    #: chosen vs baseline as a ratio of medians (>1 = better); 1.0 when within their own band
    gain: float | None
    gain_within_noise: bool
    #: the CV of the chosen setting's windows (of the value the objective ranks by)
    spread: float | None
    #: whether a setting met the objective's bound (None: it has none)
    slo_met: bool | None
    #: what the settings were ranked by: the objective's measure, or its bound's when none met it
    measure: Measure
    notes: tuple[str, ...]
    #: the advice in force as measured here (None: it could not be measured, so it cannot stand)
    incumbent: ConfigStats | None = None
    #: the incumbent is still the advice: nothing beat it beyond the noise of the two
    kept: bool = False
    #: replaced: the advice against the incumbent as a ratio of medians (>1 = better)
    versus_incumbent: float | None = None
    #: the noise band the incumbent was judged with (the advice's, or the leader's when kept)
    incumbent_band: float | None = None
    #: the noise band of the advice and the baseline (the +- of ``gain``)
    gain_band: float | None = None

    @property
    def kept_default(self) -> bool:
        return self.chosen.is_baseline


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
    trials: Iterable[TrialResult], default: ThreadSetting | None = None
) -> list[ConfigStats]:
    """Per setting: medians and CVs over its trusted windows (race windows if it has any, else
    screen windows), in the order settings were first measured.

    ``default`` is what TF runs for the baseline (``candidates.tf_default``): it costs the
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
        runs_as = default if setting.is_default else setting
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
    return difference_band(mine, theirs)


def median_error(cv: float, windows: int) -> float:
    """The relative standard error of a median over ``windows`` windows whose spread is ``cv``."""
    return MEDIAN_ERROR * cv / math.sqrt(windows)


def difference_band(*errors: float) -> float:
    """``Z * sqrt(sum of squared relative errors)``, between MIN_BAND and MAX_BAND."""
    return min(MAX_BAND, max(MIN_BAND, Z * math.sqrt(sum(e * e for e in errors))))


def beats(
    mine: ConfigStats,
    theirs: ConfigStats,
    objective: Objective,
    p99_slo_ms: float | None = None,
) -> bool:
    """``mine`` is better than ``theirs`` beyond the noise band of the two (so by at least
    MIN_BAND). Under an objective's bound (an SLO), meeting it where ``theirs`` does not is a win
    by itself, and missing it where ``theirs`` meets it never is."""
    met = objective.admits(mine, p99_slo_ms)
    if met != objective.admits(theirs, p99_slo_ms):
        return met
    measure = objective.measure(met)
    band = noise_band(mine, theirs, measure)
    a, b = measure.value(mine), measure.value(theirs)
    return a < b * (1 - band) if measure.lower_is_better else a > b * (1 + band)


def choose(
    stats: Sequence[ConfigStats],
    objective: Objective,
    p99_slo_ms: float | None = None,
    *,
    incumbent: ThreadSetting = ThreadSetting.TF_DEFAULT,
    excluded: Collection[ThreadSetting] = (),
) -> Choice:
    """The advice: the incumbent unless settings beat it beyond noise, else the cheapest of those
    within TRADE_OFF of the best; the range (within noise) of the best, and the gain over TF's
    default.

    Settings judged by the longest windows compete (the raced ones, when a race ran: a setting
    that was only screened was more than the race's band behind); the baseline and the incumbent
    always compete; ``excluded`` settings (dropped in the race, or failed) never do, so a setting
    the log called dropped is never advised. ``incumbent`` is the advice in force, TF's default
    (the baseline) when none is stored; one that was not measured (or is excluded) cannot stand.
    Raises ValueError without a baseline, without the bound the objective needs, or when the
    baseline's thread cost is unknown while other settings compete (it could not be compared on
    cost); the caller turns that into the user-facing error.
    """
    baseline, field, held = _field(stats, incumbent, excluded)
    notes: list[str] = []
    slo_met: bool | None = None
    bound = objective.bounded_by
    if bound is not None:
        if p99_slo_ms is None:
            raise ValueError(f"objective {objective.name!r} needs its p99 bound")
        meeting = [s for s in field if objective.admits(s, p99_slo_ms)]
        slo_met = bool(meeting)
        if meeting:
            field = meeting
        else:
            notes.append(
                f"no setting met {bound.limit(p99_slo_ms)}; picked the {bound.best} {bound.what} "
                "instead"
            )
    measure = objective.measure(slo_met is not False)
    ordered = objective.rank(field, p99_slo_ms)
    leader = ordered[0]
    band = noise_band(leader, baseline, measure)
    lead_value = measure.value(leader)
    near = tuple(s for s in ordered if within(measure.value(s), lead_value, band))
    trade = min(band, TRADE_OFF)
    affordable = [s for s in near if within(measure.value(s), lead_value, trade)]
    # Change only on evidence: only settings that beat the incumbent beyond noise may replace it.
    challengers = (
        ordered
        if held is None
        else [s for s in ordered if s is not held and beats(s, held, objective, p99_slo_ms)]
    )
    pool = [s for s in affordable if s in challengers] or challengers[:1]
    kept = held is not None and not pool
    chosen = (
        held
        if kept and held is not None
        else min(pool, key=lambda s: (s.threads, ordered.index(s)))
    )
    if not kept:
        if chosen is not leader:
            notes.append(
                f"{chosen.label} is within {trade:.0%} of {leader.label}; took the one with "
                "fewer threads"
            )
        passed = [s for s in near if s.threads < chosen.threads and s not in affordable]
        if passed:
            notes.append(
                f"within noise ({band:.0%}) of {leader.label} but more than {trade:.0%} behind "
                f"it, so not advised despite fewer threads: {', '.join(s.label for s in passed)}"
            )
    versus, judged = _judge_incumbent(
        held, chosen, leader, measure=measure, notes=notes, incumbent=incumbent
    )
    gain, noise, apart = _gain(
        chosen,
        baseline,
        measure=measure,
        same_side=objective.admits(baseline, p99_slo_ms) == (slo_met is not False),
        notes=notes,
    )
    return Choice(
        chosen=chosen,
        baseline=baseline,
        leader=leader,
        near_best=near,
        band=band,
        gain=gain,
        gain_within_noise=noise,
        spread=chosen.cv(measure),
        slo_met=slo_met,
        measure=measure,
        notes=tuple(notes),
        incumbent=held,
        kept=kept,
        versus_incumbent=versus,
        incumbent_band=judged,
        gain_band=apart,
    )


def _field(
    stats: Sequence[ConfigStats], incumbent: ThreadSetting, excluded: Collection[ThreadSetting]
) -> tuple[ConfigStats, list[ConfigStats], ConfigStats | None]:
    """The baseline, the settings that compete, and the incumbent among them (if measured)."""
    baselines = [s for s in stats if s.is_baseline]
    if not baselines:
        raise ValueError("need a measured baseline (TF default)")
    baseline = baselines[0]
    candidates = [s for s in stats if not s.is_baseline and s.setting not in excluded]
    if candidates and baseline.threads <= 0:
        raise ValueError("the baseline's thread counts (what TF runs by itself) are needed")
    raced = any(s.raced for s in candidates)
    field = [s for s in candidates if s.raced == raced or s.setting == incumbent] + [baseline]
    return baseline, field, next((s for s in field if s.setting == incumbent), None)


def _judge_incumbent(
    held: ConfigStats | None,
    chosen: ConfigStats,
    leader: ConfigStats,
    *,
    measure: Measure,
    notes: list[str],
    incumbent: ThreadSetting,
) -> tuple[float | None, float | None]:
    """(the advice against the incumbent as a ratio, the band it was judged with); a note says
    why an incumbent that is not the best was kept, or that it could not stand."""
    if held is None:
        notes.append(
            f"the advice in force ({incumbent.label}) could not be measured in this run, so it "
            "cannot stand"
        )
        return None, None
    if chosen is not held:
        return ratio(chosen, held, measure), noise_band(chosen, held, measure)
    if leader is held:
        return None, None
    judged = noise_band(leader, held, measure)
    notes.append(
        f"{leader.label} measured {_percent(leader, held, measure)} than the advice in "
        f"force ({held.label}), inside the {judged:.0%} noise band of the two: {held.label} kept"
    )
    return None, judged


def _gain(
    chosen: ConfigStats,
    baseline: ConfigStats,
    *,
    measure: Measure,
    same_side: bool,
    notes: list[str],
) -> tuple[float | None, bool, float | None]:
    """(gain over TF's default, within noise of it, the band of the two); 1.0 within noise.

    A baseline on the other side of the objective's bound (not ``same_side``) is never "within
    noise": meeting the bound is the difference the advice makes."""
    if chosen is baseline:
        return 1.0, True, None  # the default itself: no gain, by definition
    gain = ratio(chosen, baseline, measure)
    theirs = measure.value(baseline)
    apart = noise_band(chosen, baseline, measure)
    noise = same_side and within(measure.value(chosen), theirs, apart)
    if noise:
        measured = "" if gain is None else f" (ratio {gain:.2f})"
        notes.append(
            f"{chosen.label} and the TF default measured within the {apart:.0%} noise band of "
            f"each other{measured}: no measurable gain"
        )
        gain = 1.0
    return gain, noise, apart


def _percent(mine: ConfigStats, theirs: ConfigStats, measure: Measure) -> str:
    """``7% better`` (or worse): how ``mine``'s median compares with ``theirs``, in words."""
    r = ratio(mine, theirs, measure)
    if r is None:
        return "differently"
    change = 1 - 1 / r if measure.lower_is_better else r - 1
    return f"{abs(change):.0%} {'better' if change >= 0 else 'worse'}"


def ratio(mine: ConfigStats, theirs: ConfigStats, measure: Measure) -> float | None:
    """How much better ``mine`` is than ``theirs`` as a ratio of medians (>1 = better)."""
    a, b = measure.value(mine), measure.value(theirs)
    if measure.lower_is_better:
        return b / a if a > 0 else None
    return a / b if b > 0 else None

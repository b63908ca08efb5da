"""The choice rule: which measured setting is the advice (the numbers it weighs, and the noise
band, are ``advisor.calibrate.statistics``).

Every setting within the noise band of the best (the leader and the baseline set it) is
``near_best``, like a VPA's lower and upper bound: the measurement cannot tell them apart. The
advice is the cheapest of them whose median is also within ``TRADE_OFF`` (5%) of the best: the
fewest intra + inter threads throttle less under a quota, cost less memory and leave CPU to the
pod's neighbours, and 5% is what the advice may give up for that. Within noise but further behind
is not given away: on a noisy node the band can be 15-25%, and "cannot tell apart" is not "as
good" (the benchmark measured advice 10-18% behind the best when it was).

TF's default (the baseline) competes like any other setting, costed at the threads TF really runs
(both pools at the affinity count). When it is the pick, the advice spells it out and claims no
gain; when the advice is within the band of it, the gain is reported as 1.0 with
``gain_within_noise``: a 3% "gain" inside a 5% band is noise, not a result. That band is the
chosen setting's and the baseline's own.

Change only on evidence: the advice in force (the incumbent: the stored advice, else TF's default)
stands until a setting wins the sequential paired test against it (``statistics.paired_test``): in
the race rounds that measured both, it was better by more than TRADE_OFF in enough of them that
the chance of that, for a setting no more than TRADE_OFF better, is below ``REPLACE_ALPHA`` split
over the challengers, at whichever round it is asked. The pooled medians and their noise band do
not decide it: beside a noisy neighbour a few bursts on the incumbent's windows move its median,
and the machine's drift moves every window, where the two windows of a round share both. Without
the rule the pick among settings within noise moves with the noise from run to run, and every
move is a rollout of every consumer for a difference the measurement itself calls no difference.
Under an objective's bound (an SLO), a setting that surely meets it (the upper bound of its p99
median, ``statistics.bounds``, within it) replaces an incumbent that surely misses it (the lower
bound beyond), with no test of the rounds; one that misses it where the incumbent meets it never
replaces it; otherwise the rounds decide, on the bound's measure unless both meet it.
When settings do pass, the advice is the cheapest of those that are also within TRADE_OFF of the
best, so the usual trade of a little speed for fewer threads never goes below the incumbent.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from advisor.calibrate.statistics import (
    ConfigStats,
    PairedEvidence,
    bounds,
    holds_in_rounds,
    noise_band,
    paired_band,
    paired_test,
    ratio,
    rounds_to_pass,
    within,
)
from advisor.models import ThreadSetting
from advisor.models.notes import (
    BudgetShort,
    FewerThreads,
    IncumbentKept,
    IncumbentUnmeasured,
    NoGain,
    Note,
    PassedOver,
    SloMissed,
)
from advisor.objectives import Measure, Objective

#: the most of the objective the advice gives up for fewer threads: a cheaper setting within noise
#: but more than this behind the best is not advised
TRADE_OFF = 0.05


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
    #: the noise band of the leader and the baseline: ``near_best``'s reach
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
    #: what a reader should know (``advisor.render.words.note_text`` words each)
    notes: tuple[Note, ...]
    #: the advice in force as measured here (None: it could not be measured, so it cannot stand)
    incumbent: ConfigStats | None = None
    #: the incumbent is still the advice: no setting won the paired test against it
    kept: bool = False
    #: replaced: the advice against the incumbent as a ratio of medians (>1 = better)
    versus_incumbent: float | None = None
    #: the noise band the incumbent was judged with (the advice's, or the leader's when kept)
    incumbent_band: float | None = None
    #: the noise band of the advice and the baseline (the +- of ``gain``)
    gain_band: float | None = None
    #: replaced: the evidence the advice replaced the incumbent on; kept: the leader's against it
    #: (None: the incumbent led, or was not measured)
    evidence: Replacement | None = None

    @property
    def kept_default(self) -> bool:
        return self.chosen.is_baseline


@dataclass(frozen=True)
class Replacement:
    """Whether a challenger may replace the incumbent, and on what evidence."""

    passed: bool
    #: the paired test of the rounds (None: the objective's bound decided alone)
    test: PairedEvidence | None = None
    #: decided by the bound: the challenger surely meets it and the incumbent surely misses it
    by_bound: bool = False


def side(stats: ConfigStats, objective: Objective, p99_slo_ms: float | None) -> bool | None:
    """Whether ``stats`` surely meets the objective's bound (True: its median's worse bound is
    within it), surely misses it (False: its better bound is beyond), or neither (None; also
    with one window, whose spread is unknown). Every setting meets an objective without one."""
    measure = objective.bounded_by
    if measure is None:
        return True
    found = bounds(stats, measure)
    if p99_slo_ms is None or found is None:
        return None
    low, high = found
    if measure.lower_is_better:
        meets, misses = high <= p99_slo_ms, low > p99_slo_ms
    else:
        meets, misses = low >= p99_slo_ms, high < p99_slo_ms
    return True if meets else False if misses else None


def replaces(
    mine: ConfigStats,
    held: ConfigStats,
    objective: Objective,
    p99_slo_ms: float | None = None,
    *,
    challengers: int = 1,
    favourite: ThreadSetting | None = None,
) -> Replacement:
    """Whether ``mine`` may replace the incumbent ``held``: it wins the paired test by more than
    TRADE_OFF at REPLACE_ALPHA over ``challengers`` (``statistics.paired_test``); under a bound,
    surely meeting it where ``held`` surely misses it is a win by itself, and missing it where
    ``held`` meets it never is one."""
    if objective.bounded_by is not None:
        if side(mine, objective, p99_slo_ms) is True and side(held, objective, p99_slo_ms) is False:
            return Replacement(passed=True, by_bound=True)
        mine_meets = objective.admits(mine, p99_slo_ms)
        held_meets = objective.admits(held, p99_slo_ms)
        if held_meets and not mine_meets:
            return Replacement(passed=False)
        measure = objective.measure(mine_meets and held_meets)
    else:
        measure = objective.ranks_by
    favoured = None if favourite is None else mine.setting == favourite
    test = paired_test(
        mine, held, measure, margin=TRADE_OFF, challengers=challengers, favoured=favoured
    )
    return Replacement(passed=test.passed, test=test)


def beats(
    mine: ConfigStats,
    theirs: ConfigStats,
    objective: Objective,
    p99_slo_ms: float | None = None,
) -> bool:
    """``mine`` is better than ``theirs`` in the race rounds that measured both: beyond the noise
    band of their median ratio (``statistics.paired_band``, at least MIN_BAND) and in most of
    them (``holds_in_rounds``): the stopping rule's test of a setting that lost to the pick.
    Under an objective's bound (an SLO), surely meeting it where ``theirs`` surely misses it is a
    win by itself, and the reverse never is; otherwise they are compared by the bound's measure
    unless both meet it."""
    mine_side, their_side = side(mine, objective, p99_slo_ms), side(theirs, objective, p99_slo_ms)
    if mine_side is not None and their_side is not None and mine_side != their_side:
        return mine_side
    measure = objective.measure(
        objective.admits(mine, p99_slo_ms) and objective.admits(theirs, p99_slo_ms)
    )
    middle, band = paired_band(mine, theirs, measure)
    ahead = middle < 1 - band if measure.lower_is_better else middle > 1 + band
    return ahead and holds_in_rounds(mine, theirs, measure, band)


def choose(
    stats: Sequence[ConfigStats],
    objective: Objective,
    p99_slo_ms: float | None = None,
    *,
    incumbent: ThreadSetting = ThreadSetting.TF_DEFAULT,
    excluded: Collection[ThreadSetting] = (),
    favourite: ThreadSetting | None = None,
) -> Choice:
    """The advice: the incumbent unless settings win the paired test against it, else the
    cheapest of those within TRADE_OFF of the best; the range (within noise) of the best, and the
    gain over TF's default.

    Settings judged by the longest windows compete (the raced ones, when a race ran: a setting
    that was only screened was more than the race's band behind); the baseline and the incumbent
    always compete; ``excluded`` settings (dropped in the race, or failed) never do, so a setting
    the log called dropped is never advised. ``incumbent`` is the advice in force, TF's default
    (the baseline) when none is stored; one that was not measured (or is excluded) cannot stand.
    ``favourite`` is the challenger the screen ranked best (the race's first contender): its paired
    test gets half of the alpha (``statistics.paired_test``); None splits it evenly.
    Raises ValueError without a baseline, without the bound the objective needs, or when the
    baseline's thread cost is unknown while other settings compete (it could not be compared on
    cost); the caller turns that into the user-facing error.
    """
    baseline, field, held = _field(stats, incumbent, excluded)
    notes: list[Note] = []
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
            notes.append(SloMissed(bound, p99_slo_ms))
    measure = objective.measure(slo_met is not False)
    ordered = objective.rank(field, p99_slo_ms)
    leader = ordered[0]
    band = noise_band(leader, baseline, measure)
    lead_value = measure.value(leader)
    near = tuple(s for s in ordered if within(measure.value(s), lead_value, band))
    trade = min(band, TRADE_OFF)
    affordable = [s for s in near if within(measure.value(s), lead_value, trade)]
    # Change only on evidence: only settings that win the paired test against it may replace it,
    # at a level split over every setting that raced it (the dropped ones too: they were tested)
    evidence = (
        {}
        if held is None
        else {
            s.setting: replaces(
                s,
                held,
                objective,
                p99_slo_ms,
                challengers=_challengers(stats, held),
                favourite=favourite if favourite != held.setting else None,
            )
            for s in ordered
            if s is not held
        }
    )
    challengers = (
        ordered
        if held is None
        else [s for s in ordered if s is not held and evidence[s.setting].passed]
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
            notes.append(FewerThreads(chosen.setting, leader.setting, trade))
        passed = [s for s in near if s.threads < chosen.threads and s not in affordable]
        if passed:
            notes.append(PassedOver(leader.setting, band, trade, tuple(s.setting for s in passed)))
    versus, incumbent_band = _judge_incumbent(
        held, chosen, leader, measure=measure, notes=notes, incumbent=incumbent
    )
    gain, gain_within_noise, gain_band = _gain(
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
        gain_within_noise=gain_within_noise,
        spread=chosen.cv(measure),
        slo_met=slo_met,
        measure=measure,
        notes=tuple(notes),
        incumbent=held,
        kept=kept,
        versus_incumbent=versus,
        incumbent_band=incumbent_band,
        gain_band=gain_band,
        evidence=evidence.get((leader if kept else chosen).setting),
    )


def _challengers(stats: Sequence[ConfigStats], held: ConfigStats) -> int:
    """How many settings were tested against the incumbent: every other one the race measured
    (the screen's alone when no race ran)."""
    raced = [s for s in stats if s.raced and s is not held]
    return len(raced) or len([s for s in stats if s is not held])


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
    notes: list[Note],
    incumbent: ThreadSetting,
) -> tuple[float | None, float | None]:
    """(the advice against the incumbent as a ratio, the band it was judged with); a note says
    why an incumbent that is not the best was kept, or that it could not stand."""
    if held is None:
        notes.append(IncumbentUnmeasured(incumbent))
        return None, None
    if chosen is not held:
        return ratio(chosen, held, measure), noise_band(chosen, held, measure)
    if leader is held:
        return None, None
    band = noise_band(leader, held, measure)
    notes.append(
        IncumbentKept(leader.setting, held.setting, measure, ratio(leader, held, measure), band)
    )
    return None, band


def _gain(
    chosen: ConfigStats,
    baseline: ConfigStats,
    *,
    measure: Measure,
    same_side: bool,
    notes: list[Note],
) -> tuple[float | None, bool, float | None]:
    """(gain over TF's default, within noise of it, the band of the two); 1.0 within noise.

    A baseline on the other side of the objective's bound (not ``same_side``) is never "within
    noise": meeting the bound is the difference the advice makes."""
    if chosen is baseline:
        return 1.0, True, None  # the default itself: no gain, by definition
    gain = ratio(chosen, baseline, measure)
    theirs = measure.value(baseline)
    band = noise_band(chosen, baseline, measure)
    within_noise = same_side and within(measure.value(chosen), theirs, band)
    if within_noise:
        notes.append(NoGain(chosen.setting, band, gain))
        gain = 1.0
    return gain, within_noise, band


def budget_short(
    choice: Choice, *, spent_s: float, round_s: float | None, safety: float
) -> BudgetShort | None:
    """The note for a budget that ended before the paired test decided: the advice in force kept
    while the leader is ahead of it beyond the margin and beyond the rounds' noise band
    (``paired_band``: a lucky median on a flat node is not), and would pass after more rounds
    like its median one (``rounds_to_pass``); the budget suggested is what was spent plus those
    rounds at the race rounds' pace (``round_s``, None: no race round ran), times ``safety``,
    rounded up to 10 s. None when nothing was waiting on the test."""
    found = choice.evidence
    held = choice.incumbent
    if not choice.kept or held is None or found is None or found.test is None or round_s is None:
        return None
    test = found.test
    if test.passed or not _clearly_ahead(choice.leader, held, choice.measure, test.margin):
        return None
    more = rounds_to_pass(choice.leader, held, choice.measure, margin=test.margin, level=test.level)
    if more is None:
        return None
    wanted = spent_s + more * round_s * safety
    return BudgetShort(
        leader=choice.leader.setting,
        held=held.setting,
        measure=choice.measure,
        ratio=test.median_ratio,
        rounds=test.rounds,
        more=more,
        budget_s=10.0 * math.ceil(wanted / 10.0),
    )


def _clearly_ahead(mine: ConfigStats, held: ConfigStats, measure: Measure, margin: float) -> bool:
    """``mine`` ahead of ``held`` by more than ``margin`` plus the noise band of the rounds that
    measured both (the pooled medians' with fewer of them)."""
    middle, band = paired_band(mine, held, measure)
    if measure.lower_is_better:
        return middle < 1 - margin - band
    return middle > 1 + margin + band


def unproven(choice: Choice) -> bool:
    """The advice in force was kept although the best measured beyond the noise band of the two
    (``incumbent_band``): kept for want of the paired test's rounds, not for a tie."""
    held, band = choice.incumbent, choice.incumbent_band
    if not choice.kept or held is None or band is None or choice.leader is held:
        return False
    found = ratio(choice.leader, held, choice.measure)
    if found is None:
        return False
    change = 1 - 1 / found if choice.measure.lower_is_better else found - 1
    return change > band

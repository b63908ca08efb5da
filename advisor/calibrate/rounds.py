"""Who runs in each round of the race: the contenders after the screen, the ones dropped as
clearly worse, the members of a round, and the comparison a focused round asks about (the rules
are the search's: ``advisor.calibrate.search``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.calibrate.state import BASELINE, SearchState
from advisor.calibrate.statistics import (
    MIN_BAND,
    STABLE_CV,
    ConfigStats,
    noise_band,
)
from advisor.models import ThreadSetting
from advisor.objectives import Measure


def unstable(stats: ConfigStats | None, measure: Measure) -> bool:
    cv = None if stats is None else stats.cv(measure)
    return cv is not None and cv > STABLE_CV


def measure_of(state: SearchState, stats: Sequence[ConfigStats]) -> Measure:
    """What values are ranked by (the bound's measure when none of ``stats`` meets the
    objective's bound), as ``choose`` will."""
    return state.objective.measure(state.objective.met(stats, state.p99_slo_ms))


def _behind(mine: float, lead: float, by: float, lower: bool) -> bool:
    """``mine`` is more than ``by`` (relative to ``lead``) on the worse side of ``lead``."""
    return mine > lead * (1 + by) if lower else mine < lead * (1 - by)


def contenders(state: SearchState) -> list[ThreadSetting]:
    """The settings within ``contender_margin`` of the best screen value (2..5 of them).

    An unstable setting is judged by its value one CV better: it may well be near the best, and
    it must not be dropped as worse on a measurement that does not hold still.
    """
    settings = state.settings
    stats = [s for s in state.stats().values() if not s.is_baseline]
    ordered = state.objective.rank(stats, state.p99_slo_ms)
    if not ordered:
        return []
    met = state.objective.met(ordered, state.p99_slo_ms)
    measure = state.objective.measure(met)
    lower = measure.lower_is_better
    lead = measure.value(ordered[0])
    margin = settings.contender_margin

    def near(s: ConfigStats) -> bool:
        if met and not state.objective.admits(s, state.p99_slo_ms, slack=margin):
            return False  # beyond the bound by more than the margin: no contender, however fast
        cv = (s.cv(measure) or 0.0) if unstable(s, measure) else 0.0
        mine = measure.value(s)
        optimistic = mine * (1 - cv) if lower else mine * (1 + cv)
        return not _behind(optimistic, lead, margin, lower)

    chosen = [s for s in ordered if near(s)]
    chosen += [s for s in ordered if s not in chosen][
        : max(0, settings.min_contenders - len(chosen))
    ]
    chosen.sort(key=ordered.index)
    keys = [s.setting for s in chosen[: settings.max_contenders]]
    held = state.incumbent
    if held != BASELINE and held not in keys and any(s.setting == held for s in ordered):
        keys.append(held)  # the incumbent is raced whatever its screen value: it is the reference
    return keys


def drop(state: SearchState, alive: list[ThreadSetting]) -> list[ThreadSetting]:
    """The contenders clearly worse than the leader: beyond the noise band of the two, after
    ``drop_after`` race windows, and stable (or unstable past ``unstable_windows``)."""
    settings = state.settings
    stats = state.stats()
    raced = [stats[k] for k in alive if k in stats and stats[k].raced]
    if len(raced) < 2:
        return []
    objective, bound = state.objective, state.p99_slo_ms
    ordered = objective.rank(raced, bound)
    met = objective.met(ordered, bound)
    measure = objective.measure(met)
    leader = ordered[0]
    lead = measure.value(leader)
    lower = measure.lower_is_better
    out = []
    for s in ordered[1:]:
        if s.windows < settings.drop_after or s.setting == state.incumbent:
            continue  # the incumbent is a reference, like the baseline: never dropped
        if unstable(s, measure) and s.windows < settings.unstable_windows:
            continue  # measured again first; not "worse" on numbers that do not hold still
        # behind beyond the noise of the two medians, and never by less than twice the
        # narrowest band: a contender is dropped only when it clearly lost
        band = max(2 * MIN_BAND, noise_band(leader, s, measure))
        worse = _behind(measure.value(s), lead, band, lower)
        if met and not objective.admits(s, bound):
            # judged by how far it misses the bound
            worse = not objective.admits(s, bound, slack=band)
        if worse:
            out.append(s.setting)
    return out


def retire(state: SearchState, alive: list[ThreadSetting]) -> list[ThreadSetting]:
    """Take the contenders ``drop`` names out of ``alive`` and into the outcome's dropped, as the
    race does after every round (and a replay of it must, to ask the rule the same question);
    returns them."""
    losers = drop(state, alive)
    for key in losers:
        alive.remove(key)
        state.outcome.dropped.append(key)
    return losers


def round_members(state: SearchState, alive: Sequence[ThreadSetting]) -> list[ThreadSetting]:
    """Who runs in the next round: the baseline and the contenders; when not all fit at full
    length, the baseline, the incumbent and the best setting if it is not the incumbent (the
    paired test that may replace it counts only the rounds that measured both: measured without
    it, an unstable setting took the short budget's last rounds from it), then unstable ones,
    then those with the fewest race windows (a contender never raced could not be compared with
    the raced ones), then the best."""
    settings = state.settings
    stats = state.stats()
    measure = measure_of(state, list(stats.values()))
    ranked = state.objective.rank([stats[k] for k in alive if k in stats], state.p99_slo_ms)
    order = [s.setting for s in ranked] + [k for k in alive if k not in stats]

    def wants_more(key: ThreadSetting) -> bool:
        s = stats.get(key)
        return unstable(s, measure) and (s is None or s.windows < settings.unstable_windows)

    def race_windows(key: ThreadSetting) -> int:
        s = stats.get(key)
        return s.windows if s is not None and s.raced else 0

    order.sort(key=lambda k: (not wants_more(k), race_windows(k)))
    fit = math.floor(state.budget.remaining() / state.budget.cost(settings.race))
    # the incumbent's question first: its paired test needs rounds that measured both
    fixed = [BASELINE] + [k for k in order if k == state.incumbent]
    fixed += [k for k in order if k == _challenger(state, list(stats.values()))]
    rest = [k for k in order if k not in fixed]
    return [*fixed, *rest[: max(1, fit - len(fixed))]]


def _challenger(state: SearchState, stats: Sequence[ConfigStats]) -> ThreadSetting | None:
    """The best setting when it is not the advice in force: the one whose paired test against
    the incumbent may change the advice (None: the incumbent leads, or nothing can be chosen)."""
    try:
        choice = state.choose(stats)
    except ValueError:
        return None
    held, leader = choice.incumbent, choice.leader
    return None if held is None or leader is held else leader.setting


def _question(state: SearchState, stats: Sequence[ConfigStats]) -> list[ThreadSetting]:
    """The two settings the advice turns on now (see the module's docstring), or none."""
    try:
        choice = state.choose(stats)
    except ValueError:
        return []
    leader, chosen, held = choice.leader, choice.chosen, choice.incumbent
    if held is not None and choice.kept and leader is not held:
        return [leader.setting, held.setting]  # does the best win the paired test against it?
    if chosen is not leader:
        return [leader.setting, chosen.setting]
    others = [s for s in choice.near_best if s is not leader]
    cheaper = [s for s in others if s.threads < leader.threads]
    rivals = cheaper or others  # near_best is best first: the closest one
    return [leader.setting, rivals[0].setting] if rivals else []


def focus(
    state: SearchState,
    alive: Sequence[ThreadSetting],
    focused: int,
    held_open: Sequence[ThreadSetting] = (),
) -> tuple[list[ThreadSetting], list[ThreadSetting]]:
    """The question's pair and the members of a focused round; ([], []) while the race is not
    ready to focus. ``held_open`` are the settings the stopping rule still waits on
    (``settle.settlement(...).open``): measured too, or a focus that left one out (the incumbent,
    a third contender within noise) would keep the race open until the budget ends it."""
    settings = state.settings
    if settings.focus_after is None or state.picks is None:
        return [], []
    stats = state.stats()
    ready = all(
        k in stats and stats[k].raced and stats[k].windows >= settings.focus_after for k in alive
    )
    if not ready:
        return [], []
    measured = list(stats.values())
    pair = _question(state, measured)
    if not pair:
        return [], []
    measure = measure_of(state, measured)
    unsettled = [
        k
        for k in alive
        if k not in pair
        and unstable(stats[k], measure)
        and stats[k].windows < settings.unstable_windows
    ]
    members = [*pair, *unsettled, *(k for k in held_open if k not in pair and k not in unsettled)]
    if BASELINE not in members and focused % 2 == 0:
        members.append(BASELINE)
    # Not cut to what fits at full length: the shuffled round runs until the budget ends it,
    # so the end of the budget does not always go to the same one of the two.
    return pair, members

"""The budgeted search: screen every setting once, then race the few near the best.

The budget is a hard wall-clock limit: every trial is planned at its start-up, warm-up and longest
window, and starts only if that fits in what is left (``advisor.calibrate.budget``). Who runs in
each round of the race is ``advisor.calibrate.rounds``; this module runs the screen and the rounds.

- **Screen** (round 0): the baseline (TF's default) first, then every candidate once with short
  windows, in the candidates' order (most promising first), the baseline measured again every
  ``baseline_every`` trials so drift on a shared node shows up in the reference too. The screen is
  planned to take ``screen_share`` of the budget, but its first pass goes on until every setting
  is measured unless that would leave the race less than ``race_min_share``: a setting never
  measured cannot be advised, however good. A second pass (best first) runs if the screen share
  still has room for it.
- **Race** (rounds 1, 2, ...): the contenders are the settings within ``contender_margin`` of the
  best screen value (an unstable one counts by its value one CV better), 2 to 5 of them. Each round
  measures them and the baseline once, with longer windows, in an order shuffled per round (seeded:
  reproducible, but no setting is always first or always right after the baseline). A contender
  clearly worse than the leader (beyond the noise of the two medians, and at least 10%) after
  ``drop_after`` windows is dropped. Rounds go on until the answer is settled (below) or the
  budget is spent; when a full trial no longer fits, the last ones get shorter windows. When not
  every contender fits in a round, the baseline, the incumbent and the best setting run first
  (the incumbent's question needs rounds that measured both).
- **Focus** (once every contender has ``focus_after`` race windows): the advice turns on one
  comparison, so the rest of the budget goes to it. The current pick (``choose``, as the result
  will make it) names the question: the leader and the pick when they differ (is the pick really
  within TRADE_OFF of it?); else the leader and the best cheaper setting within noise of it (passed
  over for being more than TRADE_OFF behind: is it?); else the leader and its runner-up within
  noise (is the leader the leader?). Each focused round measures those two, shuffled, plus any
  setting the stability gate still wants or the stopping rule still waits on (below), and the
  baseline every second round, so the gain over TF's default keeps a reference from the same
  stretch of time. The question is asked again after every round. With nothing within noise of
  the leader the race goes on as before.
- **Incumbent**: the advice in force (the stored advice; TF's default, the baseline, when none is
  stored) is a named arm like the baseline: screened right after it, always a contender, in every
  round, never dropped (a failed trial of it is run again), and the first question of the focus
  is whether the best setting wins the paired test against it (``choose``'s rule: change only on
  evidence).
- **Stability gate** (like perf_analyzer's): a setting whose windows disagree by a CV above
  ``STABLE_CV`` is measured first in the next round and is never dropped before
  ``unstable_windows`` windows; one still unstable when the budget ends is reported.

- **Settled** (the stopping rule, asked after every race round): the race ends as soon as more
  measurement cannot change the advice by more than its tolerance (``advisor.calibrate.settle``):

  1. every setting still in the race (the contenders not dropped, the baseline, the incumbent;
     one whose trial failed is dropped, never the incumbent: its failed trial is run once more,
     and it stays the reference; failing again, it is kept and the race ends, as no round can
     measure it beside a challenger) has at least ``settle_windows`` race windows, so none
     within noise of the pick is unmeasured;
  2. every one of them is through the stability gate (stable, or unstable past
     ``unstable_windows``);
  3. every one but the pick is within ``TRADE_OFF`` of it with a noise band of the two no wider
     than ``settle_band`` (a choice among them costs less than the advice's tolerance, and the
     windows know it), or beaten by it beyond their noise band and in at least ``HOLDS_SHARE``
     of the rounds that measured both (``choice.beats``), or behind it (worse, and at the better
     edge of the band no more than ``TRADE_OFF`` better: ``settle._behind``); "within", "noise
     band", "beaten" and "behind" judged on the race rounds that measured both
     (``statistics.paired_band``: the median of their ratios and its band, where the machine's
     drift cancels);
  4. the incumbent question is answered: kept (by 3, nothing beats it beyond noise and nothing
     is more than the tolerance better), or replaced by a setting that won the sequential paired
     test against it (``choice.replaces``). That test holds its error rate at whichever round
     it is asked, so a replacement the stopping rule ends on is as sure as one the full budget
     would make; nothing more is asked of it.

  Where the evidence never settles (a noisy neighbour, a tie wider than the tolerance) the
  budget ends it as before, and the outcome says which settings kept it open and why.
  ``--spend-budget`` (``spend_budget``) never ends it early. A win counts only where the rounds
  reproduce it (``choice``): bursts that hit one setting's windows move its pooled median, not
  its place in the round-by-round comparison, so an early stop never rests on a claimed gain the
  interleaved rounds do not show.

Pure: time comes from a ``Clock``, trials from a ``TrialFn``; tests drive both with fakes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from advisor.calibrate.budget import (
    Budget,
    Clock,
    SearchSettings,
    SystemClock,
    TrialFn,
    Window,
    result_text,
)
from advisor.calibrate.rounds import (
    contenders,
    focus,
    measure_of,
    retire,
    round_members,
    unstable,
)
from advisor.calibrate.settle import settlement
from advisor.calibrate.state import BASELINE, SearchOutcome, SearchState
from advisor.calibrate.statistics import SCREEN_ROUND, aggregate
from advisor.errors import CalibrationError, Opt
from advisor.models import ProgressFn, ThreadSetting, TrialResult, open_text
from advisor.objectives import Objective

__all__ = [
    "BASELINE",
    "Clock",
    "SearchOutcome",
    "SearchSettings",
    "SystemClock",
    "TrialFn",
    "Window",
    "race",
]


def _trial(
    state: SearchState, setting: ThreadSetting, window: Window, round_: int, place: tuple[int, int]
) -> TrialResult:
    """Run one trial (the caller checked that it fits) and record it."""
    spec = window.spec(setting, round_)
    deadline_s = state.budget.deadline(window)
    if state.progress is not None:
        for event in state.pending:
            state.progress(event)
    state.pending.clear()
    state.say(
        f"round {round_} trial {place[0]}/{place[1]}: {setting.label} "
        f"({'screen' if round_ == SCREEN_ROUND else 'race'}, {window.min_requests} requests in "
        f"{window.measure_s:.1f}-{window.longest_s:.1f} s)"
    )
    began = state.budget.now()
    result = state.trial_fn(spec, deadline_s)
    took = state.budget.now() - began
    state.budget.ran(spec, result, took)
    if result.status == "ok":
        state.outcome.overhead_s = state.budget.overhead()
    state.say(f"round {round_}: {setting.label} -> {result_text(result)}")
    state.outcome.trials.append(result)
    state.outcome.rounds = max(state.outcome.rounds, round_ + 1)
    return result


def _retry_incumbent(state: SearchState, round_: int, place: tuple[int, int]) -> bool | None:
    """The advice in force failed a trial: measured once more in the same round if a trial still
    fits. It is the reference, so a failure (a budget-cut window, a child that died) neither drops
    it nor lets a setting replace it without winning the rounds against it (``choice``). Whether
    the second trial measured it (None: none fitted)."""
    settings = state.settings
    window = settings.screen if round_ == SCREEN_ROUND else state.budget.fitting(settings.race)
    fits = window is not None and state.budget.cost(window) <= state.budget.remaining()
    if window is None or not fits or len(state.outcome.trials) >= settings.max_trials:
        state.say(f"round {round_}: {state.incumbent.label} (the advice in force) failed")
        return None
    state.say(f"round {round_}: {state.incumbent.label} (the advice in force) failed; again")
    return _trial(state, state.incumbent, window, round_, place).status == "ok"


def _with_baselines(settings: Sequence[ThreadSetting], every: int) -> list[ThreadSetting]:
    """``settings`` with the baseline again after every ``every`` of them (not at the end)."""
    plan: list[ThreadSetting] = []
    for index, setting in enumerate(settings):
        if index and index % every == 0:
            plan.append(BASELINE)
        plan.append(setting)
    return plan


def _screen_baseline(state: SearchState) -> None:
    """The first trial: the reference. Without it there is nothing to compare with, so a failure
    ends the sweep before it spends the budget."""
    screen = state.settings.screen
    one, left = state.budget.cost(screen), state.budget.remaining()
    if left < 2 * one:
        raise CalibrationError(
            f"budget too small: {max(0.0, left):.1f} s left cannot fit the baseline "
            f"and one setting at ~{one:.1f} s per trial; raise ",
            Opt("budget_s"),
        )
    baseline = _trial(state, BASELINE, screen, SCREEN_ROUND, (1, 1))
    if baseline.status != "ok":
        raise CalibrationError(
            f"the baseline (TF defaults) trial {baseline.status}: {baseline.reason or 'no reason'}"
        )


def _screen_pass(
    state: SearchState, order: Sequence[ThreadSetting], share: float, number: int
) -> int:
    """One screening pass over ``order`` (baselines interleaved) while trials end within
    ``share`` of the budget; returns how many candidates were tried."""
    settings = state.settings
    plan = _with_baselines(order, settings.baseline_every)
    tried = 0
    for index, setting in enumerate(plan):
        if len(state.outcome.trials) >= settings.max_trials:
            break
        window = settings.screen
        if state.budget.cost(window) > min(
            state.budget.remaining(), state.budget.share_left(share)
        ):
            state.say(
                f"screen pass {number}: stopped with {len(order) - tried} of "
                f"{len(order)} settings left (~{state.budget.cost(window):.1f} s per trial)"
            )
            break
        result = _trial(state, setting, window, SCREEN_ROUND, (index + 1, len(plan)))
        if result.status != "ok" and setting == state.incumbent:
            _retry_incumbent(state, SCREEN_ROUND, (index + 1, len(plan)))
        tried += setting != BASELINE
    return tried


def _screen(state: SearchState, candidates: Sequence[ThreadSetting]) -> None:
    """Round 0: the baseline, every candidate once, and a second pass if the share allows."""
    settings = state.settings
    _screen_baseline(state)
    keys = list(candidates)
    if not keys:
        return
    # The first pass may overrun the screen's share to measure everything: an unmeasured setting
    # cannot be advised, however good. The race keeps its minimum share.
    state.announce(f"screen: {len(keys)} settings, then the ones near the best raced")
    tried = _screen_pass(state, keys, 1 - settings.race_min_share, 1)
    if not any(t.status == "ok" and not t.is_baseline for t in state.outcome.trials):
        # Nothing to race with: the race's share goes to the settings not tried yet.
        tried += _screen_pass(state, keys[tried:], 1.0, 1)
    state.outcome.screen_passes = 1
    state.outcome.unmeasured = list(candidates[tried:])
    ok = [t for t in state.outcome.trials if t.status == "ok" and not t.is_baseline]
    if not ok:
        first = next((t for t in state.outcome.trials if not t.is_baseline), None)
        if first is None:
            raise CalibrationError(
                f"budget too small: trials took ~{state.budget.overhead():.1f} s of start-up "
                "each, more than planned, and no thread setting fitted after the baseline; raise ",
                Opt("budget_s"),
            )
        raise CalibrationError(
            f"no thread setting could be measured (first: {first.status}: {first.reason})"
        )
    if state.outcome.unmeasured:
        return
    stats = state.stats()
    ranked = state.objective.rank((stats[k] for k in keys if k in stats), state.p99_slo_ms)
    second = [s.setting for s in ranked]
    trials = len(_with_baselines(second, settings.baseline_every))
    planned = state.budget.cost(settings.screen) * trials
    if planned <= state.budget.share_left(settings.screen_share):
        state.announce("screen: a second pass, best first")
        _screen_pass(state, second, settings.screen_share, 2)
        state.outcome.screen_passes = 2


def _failed(
    state: SearchState,
    setting: ThreadSetting,
    alive: list[ThreadSetting],
    number: int,
    place: tuple[int, int],
) -> bool:
    """A race trial of ``setting`` failed: a contender is dropped (it cannot be advised), the
    incumbent measured again. Whether the race ends: the incumbent failed twice in a row, so no
    round will measure it beside a challenger and none can win against it; it stays the advice,
    and more trials cannot change that."""
    if setting != state.incumbent:
        if setting in alive:
            alive.remove(setting)
            state.outcome.dropped.append(setting)
            state.say(f"race: {setting.label} dropped (its trial failed)")
        return False
    if _retry_incumbent(state, number, place) is not False:
        return False  # measured, or no trial fitted: the reference is never dropped
    state.outcome.stopped = "settled"
    state.say(
        f"race: {setting.label} (the advice in force) failed twice: kept, "
        "nothing can be compared with it"
    )
    return True


def _race(state: SearchState) -> None:
    """Rounds 1, 2, ...: the contenders and the baseline, shuffled, until the answer is settled
    or the budget is spent."""
    settings = state.settings
    alive = contenders(state)
    state.outcome.contenders = list(alive)
    state.outcome.favourite = next((k for k in alive if k != state.incumbent), None)
    if not alive:
        state.outcome.stopped = "settled"  # nothing to race: TF's default is the only setting
        return
    held = state.incumbent
    against = "the TF default" + (
        "" if held == BASELINE else f" and the advice in force ({held.label})"
    )
    racing = ", ".join(k.label for k in alive if k != held) or "the advice in force alone"
    state.announce(f"race: {racing} against {against}")
    number = 1
    focused = 0
    asked: list[ThreadSetting] = []
    shuffler = random.Random(settings.seed)  # reproducible, but every round in its own order
    while alive and len(state.outcome.trials) < settings.max_trials:
        waiting = [k for k, _ in settlement(state, alive).open]
        pair, members = focus(state, alive, focused, waiting)
        if members:
            if pair != asked:
                asked = pair
                state.announce(
                    f"race: focus on {pair[0].label} against {pair[1].label}, "
                    "the comparison the advice turns on"
                )
            focused += 1
        else:
            members = round_members(state, alive)
        shuffler.shuffle(members)
        ran = 0
        for index, setting in enumerate(members):
            window = state.budget.fitting(settings.race)
            if window is None or len(state.outcome.trials) >= settings.max_trials:
                break
            place = (index + 1, len(members))
            result = _trial(state, setting, window, number, place)
            ran += 1
            if result.status != "ok" and _failed(state, setting, alive, number, place):
                return
        if ran == 0:
            break
        for key in retire(state, alive):
            state.say(f"race: {key.label} dropped (clearly worse than the best)")
        number += 1
        if not settings.spend_budget and _settled(state, alive, number - 1):
            return
    state.outcome.open = settlement(state, alive).open


def _settled(state: SearchState, alive: Sequence[ThreadSetting], number: int) -> bool:
    """Whether the race is settled after round ``number`` (the outcome says so); if not, what the
    next round is for, said before it runs: a race that goes on to the budget says why round by
    round, not only at its end."""
    settled = settlement(state, alive)
    if settled.settled:
        state.outcome.stopped = "settled"
        state.say(
            f"race: settled after {len(state.outcome.trials)} trials, "
            f"{state.budget.elapsed():.0f} of {state.budget.budget_s:.0f} s: more windows "
            "cannot change the advice by more than its tolerance"
        )
        return True
    if settled.open:
        state.announce(
            f"race: open after round {number}: "
            + open_text([(k.label, why) for k, why in settled.open])
        )
    return False


def race(
    candidates: Sequence[ThreadSetting],
    objective: Objective,
    trial_fn: TrialFn,
    *,
    clock: Clock,
    until: float,
    budget_s: float,
    p99_slo_ms: float | None = None,
    settings: SearchSettings | None = None,
    progress: ProgressFn | None = None,
    picks: ThreadSetting | None = None,
    incumbent: ThreadSetting = BASELINE,
) -> SearchOutcome:
    """Screen the baseline and the candidates, then race the best few until the answer is settled
    or the budget (ending at ``until`` on ``clock``) is spent.

    ``picks`` is what TF runs for the baseline (``candidates.tf_picks``); without it the race
    never focuses, since the pick it would focus on weighs the baseline's threads. ``incumbent``
    is the advice in force, one of ``candidates`` (BASELINE: TF's default is the incumbent); the
    caller puts it first so the screen measures it right after the baseline.

    Raises CalibrationError when not even the baseline and one candidate fit, when the baseline
    fails, or when no candidate succeeds in the screen. With no candidates at all (a one-CPU mask:
    TF's default is the only setting) only the baseline is measured.
    """
    state = SearchState(
        budget=Budget(
            until=until, clock=clock, settings=settings or SearchSettings(), budget_s=budget_s
        ),
        trial_fn=trial_fn,
        progress=progress,
        objective=objective,
        p99_slo_ms=p99_slo_ms,
        picks=picks,
        incumbent=incumbent,
    )
    state.outcome.incumbent = incumbent
    began = state.budget.now()
    _screen(state, candidates)
    screened = state.budget.now()
    _race(state)
    state.outcome.screen_s = screened - began
    state.outcome.race_s = state.budget.now() - screened
    final = list(aggregate(state.outcome.trials))
    measure = measure_of(state, final)
    raced = any(s.raced for s in final if not s.is_baseline)
    state.outcome.unstable = [
        s.setting for s in final if (s.raced == raced or s.is_baseline) and unstable(s, measure)
    ]
    return state.outcome

"""The budgeted search: screen every setting once, then race the few near the best.

The budget is a hard wall-clock limit. Every trial pays a start-up (a fork from a warm server,
about 0.3 s; a fresh process that imports TensorFlow, about 3.5 s) before it measures anything, so
the plan counts it: a guess before the first trial, then the median the finished trials showed (or
the last one, if slower: a node that gets busier must not make the plan overrun). A trial starts
only if its planned cost (start-up + warm-up + its longest window, times ``safety``) fits in what
is left, and its deadline never reaches past the budget, so a hung child cannot overrun it either.

Windows are sized by requests, not seconds: a p99 of 50 requests is their maximum, so a window lasts
its ``measure_s`` and until ``min_requests`` have completed, capped at ``max_measure_s``.

- **Screen** (round 0): the baseline (TF's default) first, then every candidate once with short
  windows, in the candidates' order (most promising first), the baseline measured again every
  ``baseline_every`` trials so drift on a shared node shows up in the reference too. The screen is
  planned to take ``screen_share`` of the budget, but its first pass goes on until every setting
  is measured unless that would leave the race less than ``race_min_share``: a setting never
  measured cannot be advised, however good. A second pass (best first) runs if the screen share
  still has room for it.
- **Race** (rounds 1, 2, ...): the contenders are the settings within ``contender_band`` of the best
  screen value (an unstable one counts by its value one CV better), 2 to 5 of them. Each round
  measures them and the baseline once, with longer windows, in an order shuffled per round (seeded:
  reproducible, but no setting is always first or always right after the baseline). A contender
  clearly worse than the leader (beyond the noise of the two medians, and at least 10%) after
  ``drop_after`` windows is dropped. Rounds go on until the budget is spent; when a full trial no
  longer fits, the last ones get shorter windows, so the budget is not left unused.
- **Focus** (once every contender has ``focus_after`` race windows): the advice turns on one
  comparison, so the rest of the budget goes to it. The current pick (``choose``, as the result
  will make it) names the question: the leader and the pick when they differ (is the pick really
  within TRADE_OFF of it?); else the leader and the best cheaper setting within noise of it (passed
  over for being more than TRADE_OFF behind: is it?); else the leader and its runner-up within
  noise (is the leader the leader?). Each focused round measures those two, shuffled, plus any
  setting the stability gate still wants, and the baseline every second round, so the gain over
  TF's default keeps a reference from the same stretch of time. The question is asked again after
  every round. With nothing within noise of the leader the race goes on as before.
- **Incumbent**: the advice in force (the stored advice; TF's default, the baseline, when none is
  stored) is a named arm like the baseline: screened right after it, always a contender, in every
  round, never dropped, and the first question of the focus is whether the best setting beats it
  beyond noise (``choose``'s rule: change only on evidence).
- **Stability gate** (like perf_analyzer's): a setting whose windows disagree by a CV above
  ``STABLE_CV`` is measured first in the next round and is never dropped before
  ``unstable_windows`` windows; one still unstable when the budget ends is reported.

Pure: time comes from a ``Clock``, trials from a ``TrialFn``; tests drive both with fakes.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from advisor.calibrate.candidates import Candidate
from advisor.calibrate.objective import (
    MIN_BAND,
    SCREEN_ROUND,
    STABLE_CV,
    Choice,
    ConfigStats,
    Setting,
    aggregate,
    choose,
    label,
    noise_band,
)
from advisor.calibrate.spec import TrialSpec
from advisor.errors import CalibrationError, Opt
from advisor.models import Progress, ProgressFn, TrialResult
from advisor.objectives import Measure, Objective


class Clock(Protocol):
    """Where the search reads the time; a fake one in tests, ``time.monotonic`` otherwise."""

    def monotonic(self) -> float: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()


#: runs one trial: (what to run, seconds it may take at most) -> its result; never raises for a
#: trial that fails (it returns a non-ok TrialResult instead).
TrialFn = Callable[[TrialSpec, float], TrialResult]

BASELINE: Setting = (None, None)


@dataclass(frozen=True)
class Window:
    """How one trial measures: a warm-up, then a window sized by completed requests."""

    warmup_s: float
    measure_s: float
    min_requests: int
    max_measure_s: float

    @property
    def longest_s(self) -> float:
        return max(self.measure_s, self.max_measure_s)

    def spec(self, setting: Setting, round_: int) -> TrialSpec:
        return TrialSpec(
            intra_op_threads=setting[0],
            inter_op_threads=setting[1],
            warmup_s=self.warmup_s,
            measure_s=self.measure_s,
            round=round_,
            min_requests=self.min_requests,
            max_measure_s=self.max_measure_s,
        )


@dataclass(frozen=True)
class SearchSettings:
    """The knobs of the plan; the defaults are what the CLI uses."""

    #: screen windows: 100 requests tell a good setting from a clearly bad one; capped so that
    #: every setting fits in the screen
    screen: Window = Window(warmup_s=0.2, measure_s=0.3, min_requests=100, max_measure_s=1.2)
    #: race windows: twice the requests (a p99 on 200 is its 2nd-largest sample, not the
    #: maximum), and the advice rests on the median of several of them, interleaved with the
    #: baseline; longer windows would buy fewer repeats (measured: 300-request windows gave 20
    #: trials a minute under a 1-CPU quota, 200 give about 30)
    race: Window = Window(warmup_s=0.3, measure_s=0.6, min_requests=200, max_measure_s=3.0)
    #: per-trial start-up (process start or fork, model load) before the first trial showed it
    overhead_guess_s: float = 3.5
    #: the planned cost of a trial is inflated by this much so noise does not push it over
    safety: float = 1.2
    #: kept free at the end: assembling and writing the result, closing the trial server, and the
    #: process's own start and exit, which a budget counted from the first trial does not see
    #: (with 0.5 s, 2 of 24 full-benchmark runs took 60.0 and 60.3 s of a 60 s budget)
    reserve_s: float = 1.5
    #: the screen's planned share of the budget: a second screening pass only within it
    screen_share: float = 0.45
    #: the race keeps at least this share: the first screening pass stops short of it
    race_min_share: float = 0.25
    #: the baseline is screened again after this many candidates (drift shows in the reference)
    baseline_every: int = 5
    #: contenders: within this of the best screen value
    contender_band: float = 0.25
    min_contenders: int = 2
    max_contenders: int = 5
    #: race windows a contender needs before it may be dropped as clearly worse
    drop_after: int = 3
    #: windows after which an unstable setting is reported rather than preferred again
    unstable_windows: int = 5
    #: race windows every contender has before the rounds focus on the comparison the advice
    #: turns on (None: never focus); one more than ``drop_after``, so a clearly worse contender
    #: has had its chance to be dropped first
    focus_after: int | None = 4
    #: a bound on the loop whatever the clock says (a trial function that takes no time at all)
    max_trials: int = 1000
    seed: int = 0

    def min_budget_s(self, candidates: int = 1) -> float:
        """Enough for the baseline and ``candidates`` settings at the screen's longest trial."""
        one = self.overhead_guess_s + self.screen.warmup_s + self.screen.longest_s
        # + 1 µs: the plan compares the same sum computed another way, and floats round
        return (candidates + 1) * one * self.safety + self.reserve_s + 1e-6


@dataclass
class SearchOutcome:
    trials: list[TrialResult] = field(default_factory=list)
    #: distinct rounds run: the screen (round 0) and each race round
    rounds: int = 0
    screen_passes: int = 0
    overhead_s: float | None = None
    #: candidates never tried because the budget could not fit them
    unmeasured: list[Candidate] = field(default_factory=list)
    #: the settings raced, in the order they were chosen (best screen value first)
    contenders: list[Setting] = field(default_factory=list)
    #: contenders dropped as clearly worse than the leader (or failing) during the race
    dropped: list[Setting] = field(default_factory=list)
    #: settings whose trusted windows still disagree by more than STABLE_CV at the end
    unstable: list[Setting] = field(default_factory=list)
    #: the advice in force, measured as a named arm (BASELINE: TF's default is the incumbent)
    incumbent: Setting = (None, None)


@dataclass
class _State:
    until: float
    clock: Clock
    settings: SearchSettings
    trial_fn: TrialFn
    progress: ProgressFn | None
    budget_s: float
    started: float
    objective: Objective
    p99_slo_ms: float | None
    #: what TF runs for the baseline, so ``stats()`` costs it as ``choose`` will (no focus without)
    default: tuple[int, int] | None = None
    #: the advice in force (BASELINE when TF's default is the incumbent)
    incumbent: Setting = (None, None)
    #: said once, just before the next trial runs (never about trials that do not happen)
    pending: list[Progress] = field(default_factory=list)
    outcome: SearchOutcome = field(default_factory=SearchOutcome)
    overheads: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.clock.monotonic()

    def remaining(self) -> float:
        return self.until - self.now() - self.settings.reserve_s

    def share_left(self, share: float) -> float:
        """Seconds until ``share`` of the budget is used."""
        return self.started + share * self.budget_s - self.now()

    def overhead(self) -> float:
        """Start-up cost per trial: the median so far, or the last one if it was slower (a node
        that gets busier mid-sweep must not make the plan overrun the budget)."""
        if self.overheads:
            return max(statistics.median(self.overheads), self.overheads[-1])
        return self.settings.overhead_guess_s

    def cost(self, window: Window) -> float:
        return (self.overhead() + window.warmup_s + window.longest_s) * self.settings.safety

    def fitting(self, window: Window, within_s: float | None = None) -> Window | None:
        """``window`` if a trial of it fits (in the budget, and in ``within_s`` if given), else
        the same window cut to what is left, if that still holds the screen's shortest window."""
        room = min(self.remaining(), within_s if within_s is not None else math.inf)
        if self.cost(window) <= room:
            return window
        longest = room / self.settings.safety - self.overhead() - window.warmup_s
        if longest < self.settings.screen.measure_s:
            return None
        return Window(
            warmup_s=window.warmup_s,
            measure_s=min(window.measure_s, longest),
            min_requests=window.min_requests,
            max_measure_s=longest,
        )

    def stats(self) -> dict[Setting, ConfigStats]:
        return {s.key: s for s in aggregate(self.outcome.trials, self.default)}

    def event(self, text: str) -> Progress:
        """``text`` with the budget spent so far (a log line's ``[ 11/60 s]``, a terminal's bar)."""
        return Progress(
            text=text, elapsed_s=max(0.0, self.now() - self.started), budget_s=self.budget_s
        )

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(self.event(text))

    def announce(self, text: str) -> None:
        """Say ``text`` before the next trial, and not at all if none runs: the log never tells
        of a round, a race or a focus that the budget then leaves out."""
        self.pending.append(self.event(text))

    def choose(self, stats: Sequence[ConfigStats]) -> Choice:
        """The pick as the result will make it: the incumbent, the dropped left out."""
        return choose(
            stats,
            self.objective,
            self.p99_slo_ms,
            incumbent=self.incumbent,
            excluded=self.outcome.dropped,
        )


def _trial(
    state: _State, setting: Setting, window: Window, round_: int, place: tuple[int, int]
) -> TrialResult:
    """Run one trial (the caller checked that it fits) and record it."""
    expected = state.cost(window)
    spec = window.spec(setting, round_)
    # Generous for a slow start, but never past the budget: a hung child is killed in time.
    deadline_s = min(state.remaining(), max(2 * expected, expected + 10.0))
    if state.progress is not None:
        for event in state.pending:
            state.progress(event)
    state.pending.clear()
    state.say(
        f"round {round_} trial {place[0]}/{place[1]}: {label(*setting)} "
        f"({'screen' if round_ == SCREEN_ROUND else 'race'}, {window.min_requests} requests in "
        f"{window.measure_s:.1f}-{window.longest_s:.1f} s)"
    )
    began = state.now()
    result = state.trial_fn(spec, deadline_s)
    took = state.now() - began
    if result.status == "ok":
        measured = result.measure_s if result.measure_s is not None else spec.measure_s
        state.overheads.append(max(0.0, took - spec.warmup_s - measured))
        state.outcome.overhead_s = state.overhead()
        detail = (
            f"p50 {result.p50_ms or 0:.1f} ms, p99 {result.p99_ms or 0:.1f} ms, "
            f"{result.throughput_rps or 0:.1f} req/s"
        )
    else:
        detail = f"{result.status}: {result.reason or 'no reason given'}"
    state.say(f"round {round_}: {label(*setting)} -> {detail}")
    state.outcome.trials.append(result)
    state.outcome.rounds = max(state.outcome.rounds, round_ + 1)
    return result


def _with_baselines(settings: Sequence[Setting], every: int) -> list[Setting]:
    """``settings`` with the baseline again after every ``every`` of them (not at the end)."""
    plan: list[Setting] = []
    for index, setting in enumerate(settings):
        if index and index % every == 0:
            plan.append(BASELINE)
        plan.append(setting)
    return plan


def _screen_baseline(state: _State) -> None:
    """The first trial: the reference. Without it there is nothing to compare with, so a failure
    ends the sweep before it spends the budget."""
    screen = state.settings.screen
    one = state.cost(screen)
    if state.remaining() < 2 * one:
        raise CalibrationError(
            f"budget too small: {max(0.0, state.remaining()):.1f} s left cannot fit the baseline "
            f"and one setting at ~{one:.1f} s per trial; raise ",
            Opt("budget_s"),
        )
    baseline = _trial(state, BASELINE, screen, SCREEN_ROUND, (1, 1))
    if baseline.status != "ok":
        raise CalibrationError(
            f"the baseline (TF defaults) trial {baseline.status}: {baseline.reason or 'no reason'}"
        )


def _screen_pass(state: _State, order: Sequence[Setting], share: float, number: int) -> int:
    """One screening pass over ``order`` (baselines interleaved) while trials end within
    ``share`` of the budget; returns how many candidates were tried."""
    settings = state.settings
    plan = _with_baselines(order, settings.baseline_every)
    tried = 0
    for index, setting in enumerate(plan):
        if len(state.outcome.trials) >= settings.max_trials:
            break
        window = settings.screen
        if state.cost(window) > min(state.remaining(), state.share_left(share)):
            state.say(
                f"screen pass {number}: stopped with {len(order) - tried} of "
                f"{len(order)} settings left (~{state.cost(window):.1f} s per trial)"
            )
            break
        _trial(state, setting, window, SCREEN_ROUND, (index + 1, len(plan)))
        tried += setting != BASELINE
    return tried


def _screen(state: _State, candidates: Sequence[Candidate]) -> None:
    """Round 0: the baseline, every candidate once, and a second pass if the share allows."""
    settings = state.settings
    _screen_baseline(state)
    keys = [(c.intra_op_threads, c.inter_op_threads) for c in candidates]
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
                f"budget too small: trials took ~{state.overhead():.1f} s of start-up each, more "
                "than planned, and no thread setting fitted after the baseline; raise ",
                Opt("budget_s"),
            )
        raise CalibrationError(
            f"no thread setting could be measured (first: {first.status}: {first.reason})"
        )
    if state.outcome.unmeasured:
        return
    stats = state.stats()
    ranked = state.objective.rank((stats[k] for k in keys if k in stats), state.p99_slo_ms)
    second = [s.key for s in ranked]
    trials = len(_with_baselines(second, settings.baseline_every))
    if state.cost(settings.screen) * trials <= state.share_left(settings.screen_share):
        state.announce("screen: a second pass, best first")
        _screen_pass(state, second, settings.screen_share, 2)
        state.outcome.screen_passes = 2


def _unstable(stats: ConfigStats | None, measure: Measure) -> bool:
    cv = None if stats is None else stats.cv(measure)
    return cv is not None and cv > STABLE_CV


def _measure(state: _State, stats: Sequence[ConfigStats]) -> Measure:
    """What values are ranked by (the bound's measure when none of ``stats`` meets the
    objective's bound), as ``choose`` will."""
    return state.objective.measure(state.objective.met(stats, state.p99_slo_ms))


def _behind(mine: float, lead: float, band: float, lower: bool) -> bool:
    """``mine`` is more than ``band`` (relative to ``lead``) on the worse side of ``lead``."""
    return mine > lead * (1 + band) if lower else mine < lead * (1 - band)


def _contenders(state: _State) -> list[Setting]:
    """The settings within ``contender_band`` of the best screen value (2..5 of them).

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
    band = settings.contender_band

    def near(s: ConfigStats) -> bool:
        if met and not state.objective.admits(s, state.p99_slo_ms, slack=band):
            return False  # beyond the bound by more than the band: no contender, however fast
        cv = (s.cv(measure) or 0.0) if _unstable(s, measure) else 0.0
        mine = measure.value(s)
        optimistic = mine * (1 - cv) if lower else mine * (1 + cv)
        return not _behind(optimistic, lead, band, lower)

    chosen = [s for s in ordered if near(s)]
    chosen += [s for s in ordered if s not in chosen][
        : max(0, settings.min_contenders - len(chosen))
    ]
    chosen.sort(key=ordered.index)
    keys = [s.key for s in chosen[: settings.max_contenders]]
    held = state.incumbent
    if held != BASELINE and held not in keys and any(s.key == held for s in ordered):
        keys.append(held)  # the incumbent is raced whatever its screen value: it is the reference
    return keys


def _drop(state: _State, alive: list[Setting]) -> list[Setting]:
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
        if s.windows < settings.drop_after or s.key == state.incumbent:
            continue  # the incumbent is a reference, like the baseline: never dropped
        if _unstable(s, measure) and s.windows < settings.unstable_windows:
            continue  # measured again first; not "worse" on numbers that do not hold still
        # behind beyond the noise of the two medians, and never by less than twice the
        # narrowest band: a contender is dropped only when it clearly lost
        band = max(2 * MIN_BAND, noise_band(leader, s, measure))
        worse = _behind(measure.value(s), lead, band, lower)
        if met and not objective.admits(s, bound):
            # judged by how far it misses the bound
            worse = not objective.admits(s, bound, slack=band)
        if worse:
            out.append(s.key)
    return out


def _round_members(state: _State, alive: Sequence[Setting]) -> list[Setting]:
    """Who runs in the next round: the baseline and the contenders; when not all fit at full
    length, unstable ones first, then those with the fewest race windows (a contender never raced
    could not be compared with the raced ones), then the best."""
    settings = state.settings
    stats = state.stats()
    measure = _measure(state, list(stats.values()))
    ranked = state.objective.rank([stats[k] for k in alive if k in stats], state.p99_slo_ms)
    order = [s.key for s in ranked] + [k for k in alive if k not in stats]

    def wants_more(key: Setting) -> bool:
        s = stats.get(key)
        return _unstable(s, measure) and (s is None or s.windows < settings.unstable_windows)

    def race_windows(key: Setting) -> int:
        s = stats.get(key)
        return s.windows if s is not None and s.raced else 0

    order.sort(key=lambda k: (not wants_more(k), race_windows(k)))
    fit = math.floor(state.remaining() / state.cost(settings.race))
    fixed = [BASELINE] + [k for k in order if k == state.incumbent]
    rest = [k for k in order if k not in fixed]
    return [*fixed, *rest[: max(1, fit - len(fixed))]]


def _question(state: _State, stats: Sequence[ConfigStats]) -> list[Setting]:
    """The two settings the advice turns on now (see the module's docstring), or none."""
    try:
        choice = state.choose(stats)
    except ValueError:
        return []
    leader, chosen, held = choice.leader, choice.chosen, choice.incumbent
    if held is not None and choice.kept and leader is not held:
        return [leader.key, held.key]  # does the best beat the advice in force beyond noise?
    if held is not None and not choice.kept and _close(choice):
        return [chosen.key, held.key]  # it did, but not by much: does it really?
    if chosen is not leader:
        return [leader.key, chosen.key]
    others = [s for s in choice.near_best if s is not leader]
    cheaper = [s for s in others if s.threads < leader.threads]
    rivals = cheaper or others  # near_best is best first: the closest one
    return [leader.key, rivals[0].key] if rivals else []


def _close(choice: Choice) -> bool:
    """The advice beat the incumbent by less than twice the band it was judged with: a few more
    windows could still undo the replacement."""
    if choice.versus_incumbent is None or choice.incumbent_band is None:
        return False
    return abs(choice.versus_incumbent - 1) < 2 * choice.incumbent_band


def _focus(
    state: _State, alive: Sequence[Setting], focused: int
) -> tuple[list[Setting], list[Setting]]:
    """The question's pair and the members of a focused round; ([], []) while the race is not
    ready to focus."""
    settings = state.settings
    if settings.focus_after is None or state.default is None:
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
    measure = _measure(state, measured)
    unsettled = [
        k
        for k in alive
        if k not in pair
        and _unstable(stats[k], measure)
        and stats[k].windows < settings.unstable_windows
    ]
    members = [*pair, *unsettled]
    if BASELINE not in members and focused % 2 == 0:
        members.append(BASELINE)
    # Not cut to what fits at full length: the shuffled round runs until the budget ends it,
    # so the end of the budget does not always go to the same one of the two.
    return pair, members


def _race(state: _State) -> None:
    """Rounds 1, 2, ...: the contenders and the baseline, shuffled, until the budget is spent."""
    settings = state.settings
    alive = _contenders(state)
    state.outcome.contenders = list(alive)
    if not alive:
        return
    held = state.incumbent
    against = "the TF default" + (
        "" if held == BASELINE else f" and the advice in force ({label(*held)})"
    )
    racing = ", ".join(label(*k) for k in alive if k != held) or "the advice in force alone"
    state.announce(f"race: {racing} against {against}")
    number = 1
    focused = 0
    asked: list[Setting] = []
    shuffler = random.Random(settings.seed)  # reproducible, but every round in its own order
    while alive and len(state.outcome.trials) < settings.max_trials:
        pair, members = _focus(state, alive, focused)
        if members:
            if pair != asked:
                asked = pair
                state.announce(
                    f"race: focus on {label(*pair[0])} against {label(*pair[1])}, "
                    "the comparison the advice turns on"
                )
            focused += 1
        else:
            members = _round_members(state, alive)
        shuffler.shuffle(members)
        ran = 0
        for index, setting in enumerate(members):
            window = state.fitting(settings.race)
            if window is None or len(state.outcome.trials) >= settings.max_trials:
                break
            result = _trial(state, setting, window, number, (index + 1, len(members)))
            ran += 1
            if result.status != "ok" and setting in alive:
                alive.remove(setting)  # a setting that fails cannot be advised
                state.outcome.dropped.append(setting)
                state.say(f"race: {label(*setting)} dropped (its trial failed)")
        if ran == 0:
            break
        for key in _drop(state, alive):
            alive.remove(key)
            state.outcome.dropped.append(key)
            state.say(f"race: {label(*key)} dropped (clearly worse than the best)")
        number += 1


def race(
    candidates: Sequence[Candidate],
    objective: Objective,
    trial_fn: TrialFn,
    *,
    clock: Clock,
    until: float,
    budget_s: float,
    p99_slo_ms: float | None = None,
    settings: SearchSettings | None = None,
    progress: ProgressFn | None = None,
    default: tuple[int, int] | None = None,
    incumbent: Setting = BASELINE,
) -> SearchOutcome:
    """Screen the baseline and the candidates, then race the best few until the budget (ending at
    ``until`` on ``clock``) is spent.

    ``default`` is what TF runs for the baseline (``candidates.tf_default``); without it the race
    never focuses, since the pick it would focus on weighs the baseline's threads. ``incumbent``
    is the advice in force, one of ``candidates`` (BASELINE: TF's default is the incumbent); the
    caller puts it first so the screen measures it right after the baseline.

    Raises CalibrationError when not even the baseline and one candidate fit, when the baseline
    fails, or when no candidate succeeds in the screen. With no candidates at all (a one-CPU mask:
    TF's default is the only setting) only the baseline is measured.
    """
    state = _State(
        until=until,
        clock=clock,
        settings=settings or SearchSettings(),
        trial_fn=trial_fn,
        progress=progress,
        budget_s=budget_s,
        started=until - budget_s,
        objective=objective,
        p99_slo_ms=p99_slo_ms,
        default=default,
        incumbent=incumbent,
    )
    state.outcome.incumbent = incumbent
    _screen(state, candidates)
    _race(state)
    final = list(aggregate(state.outcome.trials))
    measure = _measure(state, final)
    raced = any(s.raced for s in final if not s.is_baseline)
    state.outcome.unstable = [
        s.key for s in final if (s.raced == raced or s.is_baseline) and _unstable(s, measure)
    ]
    return state.outcome

"""Budgeted successive halving over thread settings: short trials for all, longer for the best.

The budget is a hard wall-clock limit. Every trial is one child process that pays TensorFlow's
start-up (about 3 s here) before it measures anything, so the plan counts that overhead: a guess
before the first trial, then the median overhead the finished trials really showed. A trial is
started only if it can finish before the budget ends, and each one is given a deadline that ends
before the budget does, so a hung child cannot overrun it either.

Rounds:
- round 0: a short trial for the baseline (TF defaults) first, then as many candidates as fit in
  about 60% of the remaining budget (planned with the baseline's real start-up time), taken from
  the front of the candidate list (most promising first);
- later rounds: the best half (at least two) of the last round's survivors, with longer trials,
  the remaining budget split evenly over the rounds still planned; round 1 also takes up to two
  settings round 0 had no room for, next to its best (zooming in where the best was found);
  the final pair may be measured again (up to ``final_repeats`` times) while budget allows.
The baseline runs first in every round (so an overrunning round loses candidates, never the
reference); the candidates run in a shuffled order per round (seeded, so runs are reproducible)
so that drift on a shared node does not favour whichever setting would always run first.

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
from advisor.calibrate.objective import aggregate, rank
from advisor.calibrate.runner import TrialSpec
from advisor.errors import CalibrationError
from advisor.models import Objective, TrialResult


class Clock(Protocol):
    """Where the search reads the time; a fake one in tests, ``time.monotonic`` otherwise."""

    def monotonic(self) -> float: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()


#: runs one trial: (what to run, seconds it may take at most) -> its result; never raises for a
#: trial that fails (it returns a non-ok TrialResult instead).
TrialFn = Callable[[TrialSpec, float], TrialResult]

#: receives one human-readable line per event (trial started/finished, round planned).
ProgressFn = Callable[[str], None]


@dataclass(frozen=True)
class SearchSettings:
    """The knobs of the plan; the defaults are what the CLI uses."""

    #: round 0 trials: shortest that still gives a p99 over a few hundred requests of a small model
    first_warmup_s: float = 0.5
    first_measure_s: float = 1.0
    #: later rounds warm up longer (their measurements are the ones the advice rests on)
    later_warmup_s: float = 1.0
    #: longer windows mostly re-measure the same thing; spend the rest on repeats instead
    max_measure_s: float = 15.0
    #: per-trial overhead (process start, import tensorflow, model load) before one is measured
    overhead_guess_s: float = 3.5
    #: the planned cost of a trial is inflated by this much so noise does not push it over
    safety: float = 1.2
    #: kept free at the end for assembling and writing the result
    reserve_s: float = 0.5
    #: the share of the budget round 0 may use; the rest goes to longer trials of the best
    first_round_share: float = 0.6
    #: how often the final pair is measured again when budget is left (more rounds, surer spread)
    final_repeats: int = 2
    #: unmeasured settings next to round 0's best that join round 1 (when round 0 could not
    #: fit every setting)
    max_neighbours: int = 2
    seed: int = 0

    def min_budget_s(self, candidates: int = 2) -> float:
        """Enough for the baseline and ``candidates`` settings at the shortest trial."""
        one = self.overhead_guess_s + self.first_warmup_s + self.first_measure_s
        return (candidates + 1) * one * self.safety + self.reserve_s


@dataclass
class SearchOutcome:
    trials: list[TrialResult] = field(default_factory=list)
    rounds: int = 0
    overhead_s: float | None = None
    #: candidates never measured because the budget could not fit them in round 0
    unmeasured: list[Candidate] = field(default_factory=list)


@dataclass
class _State:
    until: float
    clock: Clock
    settings: SearchSettings
    trial_fn: TrialFn
    progress: ProgressFn | None
    budget_s: float
    started: float
    outcome: SearchOutcome = field(default_factory=SearchOutcome)
    overheads: list[float] = field(default_factory=list)
    done: int = 0

    def remaining(self) -> float:
        return self.until - self.clock.monotonic() - self.settings.reserve_s

    def overhead(self) -> float:
        """Start-up cost per trial: the median so far, or the last one if it was slower (a node
        that gets busier mid-sweep must not make the plan overrun the budget)."""
        if self.overheads:
            return max(statistics.median(self.overheads), self.overheads[-1])
        return self.settings.overhead_guess_s

    def cost(self, warmup_s: float, measure_s: float) -> float:
        return (self.overhead() + warmup_s + measure_s) * self.settings.safety

    def say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    def bar(self) -> str:
        """``[ 11/60 s]``: elapsed of the budget; a terminal turns it into a drawn bar."""
        elapsed = max(0.0, self.clock.monotonic() - self.started)
        return f"[{elapsed:3.0f}/{self.budget_s:.0f} s]"


def _label(intra: int | None, inter: int | None) -> str:
    return "TF default" if intra is None and inter is None else f"intra={intra} inter={inter}"


def _run_round(
    state: _State,
    number: int,
    configs: Sequence[tuple[int | None, int | None]],
    warmup_s: float,
    measure_s: float,
) -> list[TrialResult]:
    """One round: the baseline first, then the candidates in shuffled order; trials that no longer
    fit the budget are not started.

    The baseline goes first because a round without it has nothing to compare its candidates
    with, and trials that overrun their plan (a node getting busier) cut a round short from the
    end. The candidates are shuffled with a per-round seed so none is always measured first.
    """
    baseline = [c for c in configs if c == (None, None)]
    order = [c for c in configs if c != (None, None)]
    random.Random(state.settings.seed * 1000 + number).shuffle(order)
    order = baseline + order
    state.outcome.rounds = number + 1
    results: list[TrialResult] = []
    for index, (intra, inter) in enumerate(order):
        expected = state.cost(warmup_s, measure_s)
        remaining = state.remaining()
        if expected > remaining:
            state.say(
                f"{state.bar()} round {number}: {_label(intra, inter)} skipped "
                f"(needs ~{expected:.1f} s, {max(0.0, remaining):.1f} s left)"
            )
            continue
        spec = TrialSpec(
            intra_op_threads=intra,
            inter_op_threads=inter,
            warmup_s=warmup_s,
            measure_s=measure_s,
            round=number,
        )
        # Generous for a slow start, but never past the budget: a hung child is killed in time.
        deadline_s = min(remaining, max(2 * expected, expected + 10.0))
        state.say(
            f"{state.bar()} round {number} trial {index + 1}/{len(order)}: {_label(intra, inter)} "
            f"({measure_s:.1f} s window)"
        )
        began = state.clock.monotonic()
        result = state.trial_fn(spec, deadline_s)
        took = state.clock.monotonic() - began
        if result.status == "ok":
            state.overheads.append(max(0.0, took - warmup_s - measure_s))
            state.outcome.overhead_s = state.overhead()
            detail = (
                f"p50 {result.p50_ms or 0:.1f} ms, p99 {result.p99_ms or 0:.1f} ms, "
                f"{result.throughput_rps or 0:.1f} req/s"
            )
        else:
            detail = f"{result.status}: {result.reason or 'no reason given'}"
        state.done += 1
        state.say(f"{state.bar()} round {number}: {_label(intra, inter)} -> {detail}")
        results.append(result)
        state.outcome.trials.append(result)
    return results


def _baseline_ok(results: Sequence[TrialResult]) -> TrialResult | None:
    for result in results:
        if result.is_baseline:
            return result
    return None


def _halving_sizes(survivors: int) -> list[int]:
    """Round sizes from here: halve (rounding up) down to a final pair (or the single one left)."""
    if survivors <= 2:
        return [survivors]
    sizes = [math.ceil(survivors / 2)]
    while sizes[-1] > 2:
        sizes.append(math.ceil(sizes[-1] / 2))
    return sizes


def _plan_next(state: _State, survivors: int, extra: int = 0) -> tuple[int, float] | None:
    """(how many to keep, measure window) for the next round, or None when nothing more fits.

    ``extra`` settings measured for the first time join the round on top of the ones kept.
    """
    settings = state.settings
    sizes = _halving_sizes(survivors)
    # Last resort, only when no halving round fits: the leader alone against the baseline.
    plans = [(keep, len(sizes) - i) for i, keep in enumerate(sizes)] + [(1, 1)]
    for keep, rounds_left in plans:
        per_round = state.remaining() / rounds_left
        per_trial = per_round / (keep + extra + 1) / settings.safety
        measure = per_trial - state.overhead() - settings.later_warmup_s
        if measure >= settings.first_measure_s:
            return keep, min(measure, settings.max_measure_s)
        # cannot afford this round: go straight to the smaller ones
    return None


def _neighbours(
    leader: tuple[int, int], candidates: Sequence[Candidate], unmeasured: Sequence[Candidate]
) -> list[Candidate]:
    """Unmeasured settings next to the leader: the adjacent intra-op values (same inter-op),
    then the adjacent inter-op values (same intra-op).

    Round 0 spreads thin when it cannot fit every setting; this zooms in where it found the best.
    """
    intras = sorted({c.intra_op_threads for c in candidates})
    inters = sorted({c.inter_op_threads for c in candidates})
    intra, inter = leader
    near: list[tuple[int, int]] = []
    i, j = intras.index(intra), inters.index(inter)
    near += [(intras[k], inter) for k in (i - 1, i + 1) if 0 <= k < len(intras)]
    near += [(intra, inters[k]) for k in (j - 1, j + 1) if 0 <= k < len(inters)]
    waiting = {(c.intra_op_threads, c.inter_op_threads): c for c in unmeasured}
    return [waiting[k] for k in near if k in waiting]


def _first_round(state: _State, candidates: Sequence[Candidate]) -> list[TrialResult]:
    """Round 0: the baseline, then the front of the candidate list as far as the budget goes."""
    settings = state.settings
    # Round 0, baseline first: it is the reference (if it fails there is nothing to compare with,
    # so stop before spending the budget), and its start-up time replaces the overhead guess.
    one = state.cost(settings.first_warmup_s, settings.first_measure_s)
    round_start = state.remaining()
    if round_start < 2 * one:
        raise CalibrationError(
            f"budget too small: {max(0.0, round_start):.1f} s left cannot fit the baseline and "
            f"one setting at ~{one:.1f} s per trial; raise --budget"
        )
    results = _run_round(
        state, 0, [(None, None)], settings.first_warmup_s, settings.first_measure_s
    )
    baseline = _baseline_ok(results)
    if baseline is None:
        raise CalibrationError("the baseline (TF defaults) trial could not be started in budget")
    if baseline.status != "ok":
        raise CalibrationError(
            f"the baseline (TF defaults) trial {baseline.status}: {baseline.reason or 'no reason'}"
        )

    # Then as many candidates as fit in round 0's share, from the front of the list, shuffled;
    # all that fit, when what the share leaves could not pay for a longer round anyway.
    one = state.cost(settings.first_warmup_s, settings.first_measure_s)
    remaining = state.remaining()
    share_left = round_start * settings.first_round_share - (round_start - remaining)
    fit_all = math.floor(remaining / one)
    count = min(len(candidates), max(math.floor(share_left / one), min(2, fit_all)))
    next_round = (min(2, count) + 1) * state.cost(settings.later_warmup_s, settings.first_measure_s)
    if remaining - count * one < next_round:
        count = min(len(candidates), fit_all)
    if count < 1:
        raise CalibrationError(
            f"budget too small: trials take ~{one:.1f} s here (start-up included) and no thread "
            f"setting fits in the {max(0.0, remaining):.1f} s left after the baseline; "
            "raise --budget"
        )
    measured = list(candidates[:count])
    state.outcome.unmeasured = list(candidates[count:])
    state.say(
        f"{state.bar()} round 0: {count} of {len(candidates)} settings, "
        f"{settings.first_measure_s:.1f} s each"
    )
    configs = [(c.intra_op_threads, c.inter_op_threads) for c in measured]
    results += _run_round(state, 0, configs, settings.first_warmup_s, settings.first_measure_s)
    if not any(r.status == "ok" and not r.is_baseline for r in results):
        first = next((r for r in results if not r.is_baseline), None)
        if first is None:
            raise CalibrationError(
                f"budget too small: trials took ~{state.overhead():.1f} s of start-up each, more "
                "than planned, and no thread setting fitted after the baseline; raise --budget"
            )
        raise CalibrationError(
            f"no thread setting could be measured (first: {first.status}: {first.reason})"
        )

    return results


def successive_halving(
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
) -> SearchOutcome:
    """Measure the baseline and the candidates within the budget (ends at ``until`` on ``clock``).

    Raises CalibrationError when not even the baseline and one candidate fit, when the baseline
    fails in round 0, or when no candidate succeeds there.
    """
    settings = settings or SearchSettings()
    if not candidates:
        raise CalibrationError("no thread settings to try for this node")
    state = _State(
        until=until,
        clock=clock,
        settings=settings,
        trial_fn=trial_fn,
        progress=progress,
        budget_s=budget_s,
        started=until - budget_s,
    )

    results = _first_round(state, candidates)
    survivors = [
        s for s in rank(aggregate(results, objective), objective, p99_slo_ms) if not s.is_baseline
    ]
    leader = survivors[0]
    extra = _neighbours(
        (leader.intra_op_threads or 1, leader.inter_op_threads or 1),
        candidates,
        state.outcome.unmeasured,
    )[: settings.max_neighbours]
    number = 1
    finals = 0
    while survivors and finals <= settings.final_repeats:
        plan = _plan_next(state, len(survivors), len(extra)) if extra else None
        if plan is None:
            extra = []
            plan = _plan_next(state, len(survivors))
        if plan is None:
            break
        keep, measure = plan
        survivors = survivors[:keep]
        joining = f" + {len(extra)} next to the best" if extra else ""
        state.say(
            f"{state.bar()} round {number}: baseline + best {keep}{joining}, {measure:.1f} s each"
        )
        later: list[tuple[int | None, int | None]] = [(None, None)]
        later += [(s.intra_op_threads, s.inter_op_threads) for s in survivors]
        later += [(c.intra_op_threads, c.inter_op_threads) for c in extra]
        state.outcome.unmeasured = [c for c in state.outcome.unmeasured if c not in extra]
        extra = []
        results = _run_round(state, number, later, settings.later_warmup_s, measure)
        ranked = rank(aggregate(results, objective), objective, p99_slo_ms)
        ok = [s for s in ranked if not s.is_baseline]
        if not ok:
            break  # keep what earlier rounds measured
        if keep <= 2:
            finals += 1
        survivors = ok
        number += 1
    return state.outcome

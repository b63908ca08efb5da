"""The budget plan of the search and of the oneDNN pairs: how a trial measures (``Window``), the
knobs of the plan (``SearchSettings``), and what is left and what a trial costs (``Budget``).

The budget is a hard wall-clock limit. Every trial pays a start-up (a fork from a warm server,
about 0.3 s; a fresh process that imports TensorFlow, about 3.5 s) before it measures anything, so
the plan counts it: a guess before the first trial, then the median the finished trials showed (or
the last one, if slower: a node that gets busier must not make the plan overrun). A trial starts
only if its planned cost (start-up + warm-up + its longest window, times ``safety``) fits in what
is left, and its deadline never reaches past the budget, so a hung child cannot overrun it either.

Windows are sized by requests, not seconds: a p99 of 50 requests is their maximum, so a window lasts
its ``measure_s`` and until ``min_requests`` have completed, capped at ``max_measure_s``.

Pure: time comes from a ``Clock``; tests drive it with a fake one.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from advisor.calibrate.spec import TrialSpec
from advisor.models import OnednnValue, ThreadSetting, TrialResult


class Clock(Protocol):
    """Where the search reads the time; a fake one in tests, ``time.monotonic`` otherwise."""

    def monotonic(self) -> float: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()


#: runs one trial: (what to run, seconds it may take at most) -> its result; never raises for a
#: trial that fails (it returns a non-ok TrialResult instead).
TrialFn = Callable[[TrialSpec, float], TrialResult]


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

    def spec(
        self, setting: ThreadSetting, round_: int, onednn: OnednnValue | None = None
    ) -> TrialSpec:
        return TrialSpec(
            setting=setting,
            warmup_s=self.warmup_s,
            measure_s=self.measure_s,
            round=round_,
            min_requests=self.min_requests,
            max_measure_s=self.max_measure_s,
            onednn=onednn,
        )


@dataclass(frozen=True)
class SearchSettings:
    """The knobs of the plan; the defaults are what the CLI uses."""

    #: screen windows: 100 requests tell a good setting from a clearly bad one; capped so that
    #: every setting fits in the screen
    screen: Window = Window(warmup_s=0.2, measure_s=0.3, min_requests=100, max_measure_s=1.2)
    #: race windows: twice the requests (a nearest-rank p99 of 200 is their 198th, the
    #: third-largest: two requests were slower, so it is not the maximum), and the advice rests
    #: on the median of several of them, interleaved with the baseline; longer windows would buy
    #: fewer repeats (measured: 300-request windows gave 20 trials a minute under a 1-CPU quota,
    #: 200 give about 30)
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
    #: contenders: within this of the best screen value (a cut of the screen, not a noise band)
    contender_margin: float = 0.25
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
    #: race windows every setting still in the race needs before the race may end settled
    #: (perf_analyzer's three windows); the noise band of fewer is wide enough to keep it open
    settle_windows: int = 3
    #: two settings within TRADE_OFF of each other are a settled tie only once the noise band of
    #: the two is at most this: close medians over few or spread windows (a band of 15-25%) can
    #: still be 15% apart
    settle_band: float = 0.10
    #: never end settled: race until the budget is spent (``--spend-budget``)
    spend_budget: bool = False
    #: a bound on the loop whatever the clock says (a trial function that takes no time at all)
    max_trials: int = 1000
    seed: int = 0

    def min_budget_s(self, candidates: int = 1) -> float:
        """Enough for the baseline and ``candidates`` settings at the screen's longest trial."""
        one = self.overhead_guess_s + self.screen.warmup_s + self.screen.longest_s
        # + 1 µs: the plan compares the same sum computed another way, and floats round
        return (candidates + 1) * one * self.safety + self.reserve_s + 1e-6


@dataclass
class Budget:
    """What is left of the budget and what a trial costs, as the trials so far showed it."""

    #: when the budget ends, on ``clock``
    until: float
    clock: Clock
    settings: SearchSettings
    #: the seconds it plans in (it started at ``until - budget_s``)
    budget_s: float
    #: start-up per trial so far: what a trial took beyond its warm-up and window
    overheads: list[float] = field(default_factory=list)

    @property
    def started(self) -> float:
        return self.until - self.budget_s

    def now(self) -> float:
        return self.clock.monotonic()

    def elapsed(self) -> float:
        return max(0.0, self.now() - self.started)

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
        """What a trial of ``window`` is planned at: start-up, warm-up and its longest window,
        times ``safety``."""
        return (self.overhead() + window.warmup_s + window.longest_s) * self.settings.safety

    def usual_cost(self, window: Window) -> float:
        """What a trial of ``window`` costs when it ends at its ``measure_s``, as most do."""
        return (self.overhead() + window.warmup_s + window.measure_s) * self.settings.safety

    def deadline(self, window: Window) -> float:
        """What a trial of ``window`` may take: generous for a slow start, but never past the
        budget, so a hung child is killed in time."""
        expected = self.cost(window)
        return min(self.remaining(), max(2 * expected, expected + 10.0))

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

    def ran(self, spec: TrialSpec, result: TrialResult, took: float) -> None:
        """Learn a trial's start-up from one that measured: what it took beyond its window."""
        if result.status == "ok":
            measured = result.measure_s if result.measure_s is not None else spec.measure_s
            self.overheads.append(max(0.0, took - spec.warmup_s - measured))


def result_text(result: TrialResult) -> str:
    """A finished trial in a progress line: its numbers, or its status and why."""
    if result.status != "ok":
        return f"{result.status}: {result.reason or 'no reason given'}"
    return (
        f"p50 {result.p50_ms or 0:.1f} ms, p99 {result.p99_ms or 0:.1f} ms, "
        f"{result.throughput_rps or 0:.1f} req/s"
    )

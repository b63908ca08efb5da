"""What a search knows as it runs: its budget, the trials so far and what they say, what it has
told, and the outcome it hands back (``SearchOutcome``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from advisor.calibrate.budget import Budget, SearchSettings, TrialFn
from advisor.calibrate.choice import Choice, choose
from advisor.calibrate.statistics import ConfigStats, aggregate
from advisor.models import (
    OpenReason,
    Progress,
    ProgressFn,
    StopReason,
    ThreadSetting,
    TrialResult,
)
from advisor.objectives import Objective

#: TF's default: the baseline arm, the reference every setting is compared with
BASELINE = ThreadSetting.TF_DEFAULT


@dataclass
class SearchOutcome:
    """What the search hands back: every trial, and which settings it raced, dropped or left."""

    trials: list[TrialResult] = field(default_factory=list)
    #: distinct rounds run: the screen (round 0) and each race round
    rounds: int = 0
    screen_passes: int = 0
    overhead_s: float | None = None
    #: candidates never tried because the budget could not fit them
    unmeasured: list[ThreadSetting] = field(default_factory=list)
    #: the settings raced, in the order they were chosen (best screen value first)
    contenders: list[ThreadSetting] = field(default_factory=list)
    #: contenders dropped as clearly worse than the leader (or failing) during the race
    dropped: list[ThreadSetting] = field(default_factory=list)
    #: settings whose trusted windows still disagree by more than STABLE_CV at the end
    unstable: list[ThreadSetting] = field(default_factory=list)
    #: the advice in force, measured as a named arm (BASELINE: TF's default is the incumbent)
    incumbent: ThreadSetting = BASELINE
    #: settled: the stopping rule ended the race; budget: the budget (or the trial bound) did
    stopped: StopReason = "budget"
    #: ended by the budget: each setting that kept the race open, and why
    open: tuple[tuple[ThreadSetting, OpenReason], ...] = ()
    #: the challenger the screen ranked best (the first contender not the incumbent): its test
    #: against the incumbent gets half of the alpha (None: no race)
    favourite: ThreadSetting | None = None
    #: seconds the screen and the race took (the trials' start-up included)
    screen_s: float = 0.0
    race_s: float = 0.0


@dataclass
class SearchState:
    """One search as it runs: the budget it plans in, how it measures and judges, what it has
    measured (``outcome``) and what it will say before the next trial."""

    budget: Budget
    trial_fn: TrialFn
    progress: ProgressFn | None
    objective: Objective
    p99_slo_ms: float | None
    #: what TF runs for the baseline, so ``stats()`` costs it as ``choose`` will (no focus without)
    picks: ThreadSetting | None = None
    #: the advice in force (BASELINE when TF's default is the incumbent)
    incumbent: ThreadSetting = BASELINE
    #: said once, just before the next trial runs (never about trials that do not happen)
    pending: list[Progress] = field(default_factory=list)
    outcome: SearchOutcome = field(default_factory=SearchOutcome)

    @property
    def settings(self) -> SearchSettings:
        return self.budget.settings

    def stats(self) -> dict[ThreadSetting, ConfigStats]:
        return {s.setting: s for s in aggregate(self.outcome.trials, self.picks)}

    def event(self, text: str) -> Progress:
        """``text`` with the budget spent so far (a log line's ``[ 11/60 s]``, a terminal's bar)."""
        return Progress(text=text, elapsed_s=self.budget.elapsed(), budget_s=self.budget.budget_s)

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
            favourite=self.outcome.favourite,
        )

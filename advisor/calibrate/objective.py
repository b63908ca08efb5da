"""What "best" means for each objective, and how sure the sweep can be about it.

Trials are noisy (a shared node, a CFS period that lands mid-request, a 1 s window whose p99 is
nearly its max), so two settings whose numbers differ by a few percent are a tie, not a ranking.
A tie goes to the setting with fewer threads (intra + inter): it throttles less under a quota,
costs less memory and leaves CPU to the pod's neighbours, and the measurement could not tell them
apart anyway.

The tie threshold is ``max(TIE_RELATIVE, spread of the leader)``: 5% by default, wider when the
leading setting's own numbers moved more than that between rounds. The spread of a setting is
``(max - min) / median`` of its objective value over its successful trials in every round.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from advisor.models import Measurement, Objective, TrialResult

#: two values within this ratio of each other are a tie (measurement noise on a shared node).
TIE_RELATIVE = 0.05

#: spreads above this are capped when widening the tie band: a wildly noisy leader must not make
#: every other setting a "tie" and hand the win to the fewest threads regardless of the numbers.
MAX_TIE_RELATIVE = 0.25


@dataclass(frozen=True)
class ConfigStats:
    """One setting's numbers from its most trusted round (the latest it was measured in)."""

    intra_op_threads: int | None
    inter_op_threads: int | None
    round: int
    p50_ms: float
    p99_ms: float
    throughput_rps: float
    trials: int
    spread: float | None

    @property
    def is_baseline(self) -> bool:
        return self.intra_op_threads is None and self.inter_op_threads is None

    @property
    def threads(self) -> int:
        return (self.intra_op_threads or 0) + (self.inter_op_threads or 0)

    @property
    def label(self) -> str:
        if self.is_baseline:
            return "TF default"
        return f"{self.intra_op_threads}/{self.inter_op_threads}"

    def measurement(self) -> Measurement:
        return Measurement(
            p50_ms=self.p50_ms, p99_ms=self.p99_ms, throughput_rps=self.throughput_rps
        )


@dataclass(frozen=True)
class Choice:
    """The pick, how it compares with the baseline, and what the user should know about it."""

    chosen: ConfigStats
    baseline: ConfigStats
    gain: float | None
    spread: float | None
    slo_met: bool | None
    notes: tuple[str, ...]
    #: the baseline beat every candidate beyond noise (the caller should keep TF's default)
    default_best: bool = False


def lower_is_better(objective: Objective, slo_met: bool = True) -> bool:
    """Latency, and an SLO nobody meets (then the lowest p99 wins), are minimised."""
    return objective == "latency" or (objective == "slo" and not slo_met)


def value(stats: ConfigStats | TrialResult, objective: Objective, slo_met: bool = True) -> float:
    """The number the objective ranks by: p99 when minimising latency, else requests/s."""
    if lower_is_better(objective, slo_met):
        return stats.p99_ms if stats.p99_ms is not None else float("inf")
    return stats.throughput_rps if stats.throughput_rps is not None else 0.0


def _usable(trial: TrialResult) -> bool:
    return (
        trial.status == "ok"
        and trial.p50_ms is not None
        and trial.p99_ms is not None
        and trial.throughput_rps is not None
    )


def _relative_spread(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    middle = statistics.median(values)
    if middle <= 0:
        return None
    return (max(values) - min(values)) / middle


def aggregate(trials: Iterable[TrialResult], objective: Objective) -> list[ConfigStats]:
    """Per setting: the median of its latest-round trials, and its spread across all rounds.

    Later rounds ran longer trials, so they are what a setting is judged by; earlier rounds still
    count towards the spread, which is how sure the numbers are.
    """
    by_config: dict[tuple[int | None, int | None], list[TrialResult]] = {}
    for trial in trials:
        if _usable(trial):
            by_config.setdefault((trial.intra_op_threads, trial.inter_op_threads), []).append(trial)
    result = []
    for (intra, inter), runs in by_config.items():
        last = max(t.round for t in runs)
        latest = [t for t in runs if t.round == last]
        result.append(
            ConfigStats(
                intra_op_threads=intra,
                inter_op_threads=inter,
                round=last,
                p50_ms=statistics.median(t.p50_ms or 0.0 for t in latest),
                p99_ms=statistics.median(t.p99_ms or 0.0 for t in latest),
                throughput_rps=statistics.median(t.throughput_rps or 0.0 for t in latest),
                trials=len(runs),
                spread=_relative_spread([value(t, objective) for t in runs]),
            )
        )
    return result


def meets_slo(stats: ConfigStats, p99_slo_ms: float | None) -> bool:
    return p99_slo_ms is not None and stats.p99_ms <= p99_slo_ms


def rank(
    stats: Iterable[ConfigStats], objective: Objective, p99_slo_ms: float | None = None
) -> list[ConfigStats]:
    """Best first by the objective alone (no tie handling): what successive halving keeps."""
    items = list(stats)
    if objective == "slo":
        meeting = [s for s in items if meets_slo(s, p99_slo_ms)]
        missing = [s for s in items if not meets_slo(s, p99_slo_ms)]
        return sorted(meeting, key=lambda s: (-s.throughput_rps, s.threads)) + sorted(
            missing, key=lambda s: (s.p99_ms, s.threads)
        )
    if objective == "throughput":
        return sorted(items, key=lambda s: (-s.throughput_rps, s.threads))
    return sorted(items, key=lambda s: (s.p99_ms, s.threads))


def _within(a: float, b: float, tolerance: float) -> bool:
    """a is within ``tolerance`` (relative to b) of b."""
    if b == 0:
        return a == 0
    return abs(a - b) <= tolerance * abs(b)


def choose(
    stats: Sequence[ConfigStats], objective: Objective, p99_slo_ms: float | None = None
) -> Choice:
    """The advice among the candidates measured furthest (ties -> fewer threads), vs the baseline.

    Only settings that reached the last round compete: they were measured longest. The baseline
    is not a candidate (the advice must be concrete numbers); when it beats the pick beyond
    noise, ``default_best`` says so and the caller spells the default out instead.
    Raises ValueError if there is no baseline or no candidate; the caller turns that into the
    user-facing error.
    """
    baselines = [s for s in stats if s.is_baseline]
    candidates = [s for s in stats if not s.is_baseline]
    if not baselines or not candidates:
        raise ValueError("need a measured baseline and at least one measured candidate")
    baseline = baselines[0]
    last = max(s.round for s in candidates)
    finalists = [s for s in candidates if s.round == last]

    notes: list[str] = []
    slo_met: bool | None = None
    if objective == "slo":
        meeting = [s for s in finalists if meets_slo(s, p99_slo_ms)]
        slo_met = bool(meeting)
        if meeting:
            finalists = meeting
        else:
            notes.append(f"no setting met p99 <= {p99_slo_ms:g} ms; picked the lowest p99 instead")
    ordered = rank(finalists, objective, p99_slo_ms)
    leader = ordered[0]
    met = slo_met is not False
    tolerance = min(MAX_TIE_RELATIVE, max(TIE_RELATIVE, leader.spread or 0.0))
    lead_value = value(leader, objective, met)
    tied = [s for s in ordered if _within(value(s, objective, met), lead_value, tolerance)]
    chosen = min(tied, key=lambda s: (s.threads, ordered.index(s)))
    if chosen is not leader:
        notes.append(
            f"{chosen.label} is within {tolerance:.0%} of {leader.label} (noise); "
            "took the one with fewer threads"
        )

    # The baseline runs in every round, so its latest numbers share the finalists' round and drift.
    mine = value(chosen, objective, met)
    theirs = value(baseline, objective, met)
    gain: float | None = None
    if lower_is_better(objective, met):
        gain = theirs / mine if mine > 0 else None
    else:
        gain = mine / theirs if theirs > 0 else None
    # Advising a setting measured clearly worse than doing nothing would be wrong: say so, and
    # let the caller spell the default out instead.
    default_best = False
    if rank([chosen, baseline], objective, p99_slo_ms)[0] is baseline:
        same_side = objective != "slo" or (
            meets_slo(chosen, p99_slo_ms) == meets_slo(baseline, p99_slo_ms)
        )
        default_best = not (same_side and _within(theirs, mine, tolerance))
    if default_best:
        notes.append(
            f"the TF default measured best ({baseline.label}: {theirs:.1f} vs {chosen.label}: "
            f"{mine:.1f}); no explicit setting beat it"
        )
    return Choice(
        chosen=chosen,
        baseline=baseline,
        gain=gain,
        spread=chosen.spread,
        slo_met=slo_met,
        notes=tuple(notes),
        default_best=default_best,
    )

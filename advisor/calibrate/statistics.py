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
(``band`` wherever the code holds one), at least ``MIN_BAND``.

A median can be moved by a few windows that a burst on the node hit: the pooled figure says
"37% better" when the bursts fell on the other setting's windows. The race measures its settings
in rounds, each setting once per round, close together in time, so a real difference shows in
the rounds too: ``holds_in_rounds`` is whether one setting beat the other in at least
``HOLDS_SHARE`` of the race rounds that measured both, and beyond the noise band in the median
round; with fewer than ``MIN_PAIRED_ROUNDS`` of them there is nothing to reproduce it with, and
the win does not hold.

Replacing the advice in force asks more (``paired_test``): a sequential test on the rounds that
measured both. A round is won when the challenger beat the incumbent in it by more than the
tolerance (the margin: 5% lower p99, 5% more throughput); the drift of the machine is common to the
two windows of a round and cancels in their ratio. Where the challenger is no more than the margin
better, a round is won at most half the time, whatever the windows' distribution, bursts
included, so the product over the rounds of ``2p`` for a win and ``2(1-p)`` for a loss, mixed over
a few alternatives ``p`` (``SIGN_MIX``), is a nonnegative supermartingale starting at 1: by Ville's
inequality it ever reaches ``1/level`` with a chance of at most ``level``, however often it is
looked at. The level is ``REPLACE_ALPHA`` split over the challengers (Bonferroni), so the chance
that any setting replaces an incumbent it is not TRADE_OFF better than is at most
``REPLACE_ALPHA`` per run.

A sign test that holds whatever the distribution cannot pass before ``2**n >= 1/level`` (n wins
in a row are that likely for two equal settings): 6-9 rounds, more than a short budget holds
beside a noisy neighbour. A clear gain says more than its signs: the t test (``t_e_value``) weighs
how far beyond the margin the rounds' log ratios lie against their spread, and 4 rounds 5x faster
pass it. The statistic is the average of the two e-processes, ``T_SHARE`` for the t test's
(an average of e-processes is one, valid at every look); weighted so that the sign test's rounds
won in a row stay what they were at most levels. The t test's own guarantee assumes normal log
ratios; the false-change benchmark measures the average on drift and bursts (heavy symmetric
tails), where it holds the level (``docs/how-it-measures.md``).

A percentile of one window's latencies is ``advisor.calibrate.percentile``, apart from these: it
imports nothing, so the trial child and the benchmark share it without the models.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from advisor.models import Measurement, ThreadSetting, TrialResult
from advisor.objectives import Measure

#: the narrowest noise band: two medians within 5% of each other are a tie even on a quiet node
MIN_BAND = 0.05

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

#: race rounds measuring both that a win must be reproduced in: with fewer it does not hold
MIN_PAIRED_ROUNDS = 3

#: the chance per run, at most, that the advice in force is replaced by a setting that is not
#: better than it by more than the margin (``paired_test``), split over the challengers
REPLACE_ALPHA = 0.05

#: the sign test's alternatives: the share of rounds a better challenger wins by more than the
#: margin, and each one's weight. Mostly near 1 (a real gain wins nearly every round: 6 in a row
#: pass against one challenger), with some weight lower so that a burst costing one round costs
#: four more rounds, not the verdict
SIGN_MIX = ((0.95, 0.5), (0.85, 0.3), (0.7, 0.2))

#: the t test's alternatives: how far beyond the margin a better challenger's mean per-round log
#: ratio lies, in standard deviations of those log ratios (the effect size), and each one's weight
T_MIX = ((1.0, 1 / 3), (2.0, 1 / 3), (4.0, 1 / 3))

#: the t test's weight in the average of the two e-processes: a quarter leaves the sign test's
#: rounds won in a row as they were at most levels (7 at 2.5%, 8 at 1.25%), where a half costs
#: one more each; measured: as much power at 45 s beside bursts as a half (52% against 50.5%
#: of the runs, ``benchmarks false-change``)
T_SHARE = 0.25

#: the name the result and the ConfigMap give the test
PAIRED_TEST = "paired sign and t tests, sequential"

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
    their difference, at least MIN_BAND.

    Not capped: a wide band no longer decides a replacement (``paired_test`` does), and the advice
    gives up at most TRADE_OFF for fewer threads however wide it is (``choice.choose``), so a
    band says what the windows know and no more.

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
    """``Z * sqrt(sum of squared relative errors)``, at least MIN_BAND."""
    return max(MIN_BAND, Z * math.sqrt(sum(e * e for e in errors)))


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
    at different times); False with fewer than MIN_PAIRED_ROUNDS of them (nothing reproduced
    the win)."""
    pairs = paired_rounds(mine, theirs, measure)
    if len(pairs) < MIN_PAIRED_ROUNDS:
        return False
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


@dataclass(frozen=True)
class PairedEvidence:
    """The sequential sign test of a challenger against the incumbent (``paired_test``)."""

    #: race rounds that measured both
    rounds: int
    #: of them, the rounds the challenger won by more than ``margin``
    wins: int
    #: the test's statistic: the average of the sign test's (the mixed likelihood ratio of the wins
    #: and losses) and the t test's (``t_e_value``), T_SHARE for the latter; 1 before any round
    e_value: float
    #: the level it is held to: its share of REPLACE_ALPHA among ``challengers``
    level: float
    challengers: int
    #: the screen's best challenger, given half of the alpha (None: the alpha split evenly)
    favoured: bool | None
    margin: float
    #: the median over the rounds of the challenger's figure against the incumbent's (>1 = better)
    median_ratio: float | None

    @property
    def passed(self) -> bool:
        # never on fewer than MIN_PAIRED_ROUNDS: the t test's statistic can grow fast on a few
        # close rounds, and a replacement is reproduced in at least that many
        return self.rounds >= MIN_PAIRED_ROUNDS and self.e_value * self.level >= 1.0


def share(alpha: float, challengers: int, favoured: bool | None) -> float:
    """A challenger's share of ``alpha`` (``paired_test``)."""
    if challengers <= 1:
        return alpha
    if favoured is None:
        return alpha / challengers
    return alpha / 2 if favoured else alpha / (2 * (challengers - 1))


def sign_e_value(wins: int, rounds: int) -> float:
    """The sign test's statistic after ``wins`` of ``rounds``: a mixture over SIGN_MIX of the
    likelihood ratios of a win share ``p`` against one half."""
    losses = rounds - wins
    return sum(w * (2 * p) ** wins * (2 * (1 - p)) ** losses for p, w in SIGN_MIX)


def _log_moment(n: int, a: float, points: int = 100) -> float:
    """``log of the integral over v > 0 of v**(n-1) * exp(-v*v/2 + a*v)`` (Simpson's rule over
    the 10 units either side of the integrand's peak, where all but a negligible part of it is)."""
    peak = (a + math.sqrt(a * a + 4 * (n - 1))) / 2
    low, high = max(0.0, peak - 10.0), peak + 10.0
    step = (high - low) / points
    logs = []
    for i in range(points + 1):
        v = low + i * step
        if v <= 0.0 and n > 1:
            continue  # the integrand is 0 there
        value = a * v - v * v / 2 + ((n - 1) * math.log(v) if n > 1 else 0.0)
        weight = 1 if i in (0, points) else 4 if i % 2 else 2
        logs.append(value + math.log(weight))
    top = max(logs)
    return top + math.log(sum(math.exp(x - top) for x in logs) * step / 3)


def t_e_value(excess: Sequence[float]) -> float:
    """``_t_e_value`` (the sweep asks the same rounds again after every round: computed once)."""
    return _t_e_value(tuple(excess))


@functools.lru_cache(maxsize=4096)
def _t_e_value(excess: tuple[float, ...]) -> float:
    """The t test's statistic over the rounds' log ratios beyond the margin (``excess``): a
    mixture over T_MIX of Bayes factors of a mean ``delta`` standard deviations above 0 against
    a mean of 0, the unknown deviation integrated out with the scale-invariant (right Haar) prior
    1/sigma. It depends on the rounds only through their t statistic, so it is the likelihood
    ratio of that statistic's distributions: a nonnegative martingale when the log ratios are
    normal with a mean of 0 (the challenger exactly the margin better), whatever their spread."""
    n = len(excess)
    total, squares = sum(excess), sum(x * x for x in excess)
    if n == 0 or squares <= 0.0:
        return 1.0
    r = total / math.sqrt(squares)
    null = _log_moment(n, 0.0)
    return sum(w * math.exp(_log_moment(n, d * r) - null - n * d * d / 2) for d, w in T_MIX)


def paired_test(
    mine: ConfigStats,
    theirs: ConfigStats,
    measure: Measure,
    *,
    margin: float,
    challengers: int,
    favoured: bool | None = None,
    alpha: float = REPLACE_ALPHA,
) -> PairedEvidence:
    """Whether ``mine`` is better than ``theirs`` by more than ``margin``, on the race rounds that
    measured both, at its share of ``alpha`` among ``challengers`` (see the module's docstring):
    valid however many rounds it is asked after, and whatever the windows' distribution.

    ``favoured`` weighs the shares (a weighted Bonferroni): the challenger the screen ranked best
    (True) gets half of ``alpha``, the others (False) share the other half; None splits it evenly.
    The screen's windows come before every race round, so a weight chosen from them leaves each
    challenger's statistic a supermartingale under its null, and the shares still sum to
    ``alpha``. The likely winner then needs a round fewer."""
    pairs = paired_rounds(mine, theirs, measure)
    lower = measure.lower_is_better
    ratios = [(b / a if lower else a / b) for a, b in pairs if a > 0 and b > 0]
    # a round is won beyond the margin as ``within`` reads a tolerance: relative to the incumbent
    wins = sum(1 for a, b in pairs if (a < b * (1 - margin) if lower else a > b * (1 + margin)))
    edge = -math.log(1 - margin) if lower else math.log(1 + margin)
    sign = sign_e_value(wins, len(pairs))
    t = t_e_value([math.log(r) - edge for r in ratios])
    return PairedEvidence(
        rounds=len(pairs),
        wins=wins,
        e_value=(1 - T_SHARE) * sign + T_SHARE * t,
        level=share(alpha, challengers, favoured),
        challengers=max(1, challengers),
        favoured=None if challengers <= 1 else favoured,
        margin=margin,
        median_ratio=statistics.median(ratios) if ratios else None,
    )


def rounds_to_pass(
    mine: ConfigStats,
    theirs: ConfigStats,
    measure: Measure,
    *,
    margin: float,
    level: float,
    most: int = 30,
) -> int | None:
    """How many more race rounds ``mine`` needs against ``theirs``, each one won by its median
    round so far, before ``paired_test`` passes at ``level``: what a budget that ended first was
    short of. None without a paired round, when the median round does not clear ``margin``
    (more rounds like it never pass), or beyond ``most``. A projection, not a promise: the
    rounds to come are noisy too."""
    pairs = paired_rounds(mine, theirs, measure)
    lower = measure.lower_is_better
    ratios = [(b / a if lower else a / b) for a, b in pairs if a > 0 and b > 0]
    if not ratios:
        return None
    edge = -math.log(1 - margin) if lower else math.log(1 + margin)
    excess = [math.log(r) - edge for r in ratios]
    typical = statistics.median(excess)
    if typical <= 0.0:
        return None
    wins = sum(1 for x in excess if x > 0.0)
    for more in range(1, most + 1):
        rounds = len(excess) + more
        e = (1 - T_SHARE) * sign_e_value(wins + more, rounds) + T_SHARE * t_e_value(
            [*excess, *([typical] * more)]
        )
        if rounds >= MIN_PAIRED_ROUNDS and e * level >= 1.0:
            return more
    return None


def bounds(stats: ConfigStats, measure: Measure) -> tuple[float, float] | None:
    """The median of ``measure``'s lower and upper bound: ``Z`` standard errors of it (at least
    MIN_BAND) either side; None with fewer than two windows (no spread to bound it by)."""
    error = stats.error(measure)
    if error is None:
        return None
    spread = max(MIN_BAND, Z * error)
    value = measure.value(stats)
    return value * (1 - spread), value * (1 + spread)


def paired_band(mine: ConfigStats, theirs: ConfigStats, measure: Measure) -> tuple[float, float]:
    """(the median over the race rounds that measured both of ``mine``'s figure against
    ``theirs``, the noise band of that ratio): ``Z`` standard errors of the median of the rounds'
    log ratios, at least MIN_BAND. The machine's drift is common to a round's two windows, so
    this band is narrower than the pooled medians' (``noise_band``) wherever the node drifts.
    With fewer than MIN_PAIRED_ROUNDS rounds: the pooled medians' ratio and band."""
    pairs = [(a, b) for a, b in paired_rounds(mine, theirs, measure) if a > 0 and b > 0]
    if len(pairs) < MIN_PAIRED_ROUNDS:
        a, b = measure.value(mine), measure.value(theirs)
        return (a / b if b > 0 else math.inf), noise_band(mine, theirs, measure)
    logs = [math.log(a / b) for a, b in pairs]
    error = MEDIAN_ERROR * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(statistics.median(logs)), max(MIN_BAND, Z * error)

"""What a calibration measured and decided: every trial, the statistics and verdict of every
setting, the advice, and how it compares with TF's default and the advice in force (filled by
``advisor.calibrate`` and the sweep; ``advisor.render`` formats it as it is, recomputing nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, ClassVar, Literal

from pydantic import Field, field_serializer, field_validator

from advisor.models.base import StrictModel
from advisor.models.fed_input import FedInput
from advisor.models.node import NodeProfile
from advisor.models.options import ObjectiveName
from advisor.models.setting import ThreadSetting
from advisor.models.stored_setting import FlatSetting, MeasuredSetting, SpelledSetting
from advisor.models.tf_env import OnednnValue

#: which loader a model needs (``format_of`` names it, ``advisor.trials.modelfile`` checks it
#: on disk, the child loads it)
ModelFormat = Literal["builtin", "savedmodel", "keras"]
#: what a model path ends with when it is one file Keras loads (Keras 3 loads both)
KERAS_SUFFIXES = (".keras", ".h5")
TrialStatus = Literal["ok", "failed", "timeout", "crashed", "oom", "skipped"]
#: where replayed requests come from: the SavedModel's own
#: ``assets.extra/tf_serving_warmup_requests``, or the file ``--requests`` names
RequestsOrigin = Literal["warmup", "file"]
#: where a calibration's inputs come from: synthesised from the signature, or requests replayed
InputsKind = Literal["synthesised", "warmup", "file"]


class InputsSource(StrictModel):
    """Where the inputs a calibration fed the model came from; ``advisor.render.words`` words it
    (``warmup file (12 requests, batch sizes 1-8)``)."""

    kind: InputsKind
    file: str | None = Field(default=None, description="the request file replayed")
    requests: int | None = Field(default=None, ge=1, description="distinct requests replayed")
    batch_sizes: tuple[int, int] | None = Field(
        default=None, description="the fewest and most examples (rows) of one replayed request"
    )
    detail: str | None = Field(
        default=None, description="synthesised: what synthesis read from the model, in words"
    )


def format_of(path: str | None) -> ModelFormat:
    """The format a model path names, by its name alone: no path is the built-in model, a
    Keras suffix (any case) a Keras file, anything else a SavedModel directory."""
    if path is None:
        return "builtin"
    if PurePath(path).suffix.lower() in KERAS_SUFFIXES:
        return "keras"
    return "savedmodel"


class SubjectInfo(StrictModel):
    """The subject, the model under test: which one was measured (the built-in network or a
    user's SavedModel or .keras file) and how it was fed, so a ConfigMap says what its numbers
    are about. Stored and printed under the key ``workload`` (kept for compatibility)."""

    model_format: ModelFormat = Field(
        alias="kind", description="its format, the loader it needs: builtin, savedmodel or keras"
    )
    path: str | None = Field(default=None, description="model path as given; null for builtin")
    signature: str | None = Field(default=None, description="SavedModel signature used")
    signature_digest: str | None = Field(
        default=None, description="sha256 of the input/output specs (names, dtypes, shapes)"
    )
    inputs: dict[str, FedInput] = Field(
        default_factory=dict,
        description="input name -> dtype[shape] as fed (replayed requests: a dimension that "
        "varies is its range, 1-8)",
    )
    batch_size: int = Field(default=1, ge=1)
    concurrency: int = Field(default=1, ge=1)
    tf_version: str | None = Field(default=None, description="TensorFlow that loaded the model")
    inputs_source: InputsSource | None = Field(
        default=None, description="where the inputs came from; null: synthesised (older results)"
    )


class Measurement(StrictModel):
    """The headline numbers of one configuration."""

    p50_ms: float | None = Field(default=None, ge=0)
    p99_ms: float | None = Field(default=None, ge=0)
    throughput_rps: float | None = Field(default=None, ge=0)


class TrialResult(FlatSetting):
    """One trial: one child process with one setting, measured for a fixed time.

    Stored (and answered by the trial child's parent) as ``intra_op_threads``/``inter_op_threads``,
    null for TF's default (the baseline)."""

    setting_keys: ClassVar[tuple[str, str]] = ("intra_op_threads", "inter_op_threads")

    round: int = Field(
        default=0, ge=0, description="0: the screen (short windows); 1, 2, ...: race rounds"
    )
    status: TrialStatus
    reason: str | None = Field(default=None, description="why a trial did not succeed")
    measure_s: float | None = Field(default=None, ge=0, description="measured window, seconds")
    requests: int | None = Field(default=None, ge=0, description="requests completed in the window")
    p50_ms: float | None = Field(default=None, ge=0)
    p90_ms: float | None = Field(default=None, ge=0)
    p99_ms: float | None = Field(default=None, ge=0)
    max_ms: float | None = Field(default=None, ge=0)
    throughput_rps: float | None = Field(default=None, ge=0)
    cpu_time_s: float | None = Field(default=None, ge=0, description="user+system CPU of the child")
    threads: int | None = Field(default=None, ge=0, description="thread count of the child process")
    nr_throttled: int | None = Field(default=None, ge=0, description="throttled periods in window")
    throttled_time_ms: float | None = Field(default=None, ge=0)
    involuntary_switches_per_request: float | None = Field(
        default=None,
        ge=0,
        description="involuntary context switches of the child's threads in the window (all of "
        "them, getrusage), per request: a thread preempted while it still had work, as when "
        "more threads are runnable than CPUs or quota allow. A symptom, not a verdict: TF's "
        "intra-op pool shows them whenever it has 2+ threads, also where it is not slower; "
        "null: older results",
    )
    peak_rss_mib: float | None = Field(
        default=None,
        ge=0,
        description="the child's peak resident memory over its life, model load included, MiB "
        "(VmHWM). Compare settings of one run: a forked child does not count "
        "what the trial server faulted in and it did not touch; null: older results",
    )
    onednn: OnednnValue | None = Field(
        default=None, description="TF_ENABLE_ONEDNN_OPTS the trial ran with; null: not set by us"
    )

    @property
    def is_baseline(self) -> bool:
        return self.setting.is_default


#: why a calibration ended. settled: more measurement could not change the advice by more than
#: its tolerance (the stopping rule of ``advisor.calibrate.search``); budget: the budget did
StopReason = Literal["settled", "budget"]

#: why a setting kept the race open when the budget ended it. noise: within the noise band of the
#: pick and further from it than the trade-off band, or within the trade-off band but with a noise
#: band of the two wider than ``settle_band``; incumbent: better than the advice in force by more
#: than the trade-off, its paired test against it not (yet) passed; unstable:
#: the stability gate held it; windows: fewer race windows (or, for the oneDNN pairs, fewer pairs)
#: than the rule needs
OpenReason = Literal["noise", "incumbent", "unstable", "windows"]

#: what kept a race open, in words: the result's stop line and the race's log say it alike
OPEN_WORDS: dict[OpenReason, str] = {
    "noise": "still within noise",
    "incumbent": "ahead of the advice in force, not yet in enough paired rounds",
    "unstable": "unstable",
    "windows": "short of race windows",
}


def open_text(open_: Sequence[tuple[str, OpenReason]]) -> str:
    """``1/2 and 2/1 still within noise; TF default unstable``: the settings (labels) that keep a
    race open, grouped by why, in the order they first appear."""
    grouped: dict[OpenReason, list[str]] = {}
    for label, why in open_:
        grouped.setdefault(why, []).append(label)
    return "; ".join(f"{_and_list(labels)} {OPEN_WORDS[why]}" for why, labels in grouped.items())


def _and_list(labels: Sequence[str]) -> str:
    """``1/2``, ``1/2 and 2/1``, ``1/2, 2/1 and 2/2``."""
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


class TimeSplit(StrictModel):
    """Where a calibration's time went, seconds: the parts before anything is measured, and the
    measuring (the trials' own start-up is inside ``screen_s`` and ``race_s``)."""

    startup_s: float | None = Field(
        default=None,
        ge=0,
        description="until the trial server was ready: TensorFlow's import "
        "(null: trials spawned, each importing it itself)",
    )
    inspect_s: float | None = Field(
        default=None,
        ge=0,
        description="inspecting the model: one child loads it and serves one "
        "request (null: no child inspected it)",
    )
    screen_s: float = Field(default=0.0, ge=0, description="the screen: every setting once")
    race_s: float = Field(default=0.0, ge=0, description="the race of the few near the best")
    onednn_s: float | None = Field(
        default=None, ge=0, description="with --sweep-onednn: the 0/1 pairs"
    )
    other_s: float = Field(
        default=0.0, ge=0, description="the rest: probing the model's file, choosing, writing"
    )


#: what the oneDNN pairs decided. few pairs: too few measured pairs to judge, left unset;
#: better: one value beat the other beyond noise, the advice sets it; within noise: no difference
#: beyond noise, left unset
OnednnCode = Literal["few pairs", "better", "within noise"]


class OnednnVerdict(StrictModel):
    """TF_ENABLE_ONEDNN_OPTS=0 against =1 on the advised thread setting, measured in pairs.

    ``reason`` is ``code`` in words (``advisor.render.words.onednn_reason``), stored for readers
    of the JSON."""

    value: OnednnValue | None = Field(
        description="the value that won beyond noise (the advice sets it); null: neither did"
    )
    medians: dict[str, float] = Field(
        default_factory=dict, description="value -> median of the objective over its trials"
    )
    pairs: int = Field(ge=0, description="interleaved 0/1 pairs measured")
    #: the one noise band (``advisor.calibrate.statistics``), of the two values' medians
    band: float | None = Field(default=None, ge=0, description="the noise band used, relative")
    reason: str = Field(description="one line: what was measured and why this verdict")

    @property
    def code(self) -> OnednnCode:
        """What was decided, from what is stored: a band is set only once enough pairs counted."""
        if self.value is not None:
            return "better"
        return "few pairs" if self.band is None else "within noise"


@dataclass(frozen=True)
class PairsVerdict:
    """What the pairs decided (``code``) and the figures its words need; ``stored`` is the
    result's ``OnednnVerdict`` with those words (``advisor.render.words.onednn_reason``): made by
    ``advisor.calibrate.onednn``."""

    code: OnednnCode
    value: OnednnValue | None
    medians: dict[str, float]
    pairs: int
    #: the pairs that produced numbers for both values, and how many a verdict needs
    counted: int
    needed: int
    #: the measure's unit as a figure names it (``ms p99``, ``req/s``)
    unit: str
    band: float | None = None
    #: how much better the winner's median is, relative to the other's
    margin: float = 0.0

    def stored(self, reason: str) -> OnednnVerdict:
        return OnednnVerdict(
            value=self.value, medians=self.medians, pairs=self.pairs, band=self.band, reason=reason
        )


class NearBest(MeasuredSetting):
    """One setting measured within the noise band of the best (the advice is the cheapest).

    Stored as ``intra``/``inter`` (the counts it ran with: TF's default spelled out) and
    ``default`` (it is TF's own default, the baseline)."""

    p99_ms: float | None = Field(default=None, ge=0, description="median over its windows")
    throughput_rps: float | None = Field(default=None, ge=0, description="median, req/s")
    cv: float | None = Field(
        default=None, ge=0, description="stdev/mean of the objective's value over its windows"
    )
    windows: int = Field(default=0, ge=0, description="windows behind the medians")


class Incumbent(SpelledSetting):
    """The advice in force, which a setting must beat in the paired test to replace.

    Read from the stored advice before the sweep (the ConfigMap ``run`` will write, the file it
    will replace, or ``--incumbent``), and measured in the race as a named arm beside TF's default.
    Without one, TF's default is the incumbent: a tool that publishes into running pods must be
    boring when nothing changed. Its ``setting`` is spelled out, as the stored advice's
    ``intra_op_threads``/``inter_op_threads``.
    """

    setting_keys: ClassVar[tuple[str, str]] = ("intra_op_threads", "inter_op_threads")

    onednn: OnednnValue | None = Field(
        default=None, description="TF_ENABLE_ONEDNN_OPTS the stored advice sets, if any"
    )
    source: str = Field(min_length=1, description="where it was read, for people")


#: what became of the advice in force. unmeasured: it could not be measured, so it was replaced;
#: best: it measured best, kept; kept: no setting won the paired test against it; replaced: the
#: advice did
IncumbentVerdict = Literal["unmeasured", "best", "kept", "replaced"]


class ReplacementEvidence(StrictModel):
    """What a replacement of the advice in force rested on (``advisor.calibrate.choice``): the
    sequential paired sign and t tests over the race rounds that measured both, or the
    objective's bound (the new advice surely meets the p99 bound the incumbent surely misses)."""

    #: "paired sign test, sequential": what replacements before the t test joined it name
    test: Literal[
        "paired sign and t tests, sequential", "paired sign test, sequential", "p99 bound"
    ]
    rounds: int = Field(ge=0, description="race rounds that measured both")
    wins: int = Field(ge=0, description="of them, the rounds the new advice won by the margin")
    margin: float = Field(ge=0, description="how much better a round must be to count, relative")
    e_value: float | None = Field(
        default=None, ge=0, description="the test's statistic; it passes at 1/level or more"
    )
    level: float = Field(gt=0, le=1, description="this challenger's share of the run's alpha")
    alpha: float = Field(
        gt=0, le=1, description="the run's chance, at most, of a change no setting earned"
    )
    challengers: int = Field(ge=1, description="settings tested against the incumbent")
    favoured: bool | None = Field(
        default=None,
        description="the screen's best challenger, given half of the alpha; false: one of the "
        "others, sharing the other half; null: the alpha split evenly",
    )


class IncumbentOutcome(MeasuredSetting):
    """How the advice in force fared against this run's measurement.

    Stored as ``intra``/``inter`` (the counts it ran with) and ``default`` (required: the
    incumbent is TF's own default, nothing stored or the stored advice spells TF's default out).
    """

    default_when_missing: ClassVar[bool | None] = None

    source: str = Field(min_length=1, description="where the incumbent was read")
    kept: bool = Field(
        description="confirmed: no setting won the paired test against it (better by more "
        "than 5% in enough race rounds: ``evidence``), so its values are published again "
        "unchanged"
    )
    onednn: OnednnValue | None = Field(default=None, description="its TF_ENABLE_ONEDNN_OPTS")
    measured: Measurement | None = Field(
        default=None, description="its medians in this run; null when it could not be measured"
    )
    versus: float | None = Field(
        default=None,
        description="replaced: the new advice against it as a ratio of medians (>1 = better)",
    )
    #: the one noise band (``advisor.calibrate.statistics``): ``Choice.incumbent_band``
    band: float | None = Field(
        default=None, ge=0, description="the noise band of the two it was judged with, relative"
    )
    reason: str = Field(description="one line: why it was kept or replaced")
    evidence: ReplacementEvidence | None = Field(
        default=None, description="replaced: the test it was replaced on, its level and rounds"
    )

    @property
    def verdict(self) -> IncumbentVerdict:
        """What became of it, from what is stored: a kept incumbent has a band only when a
        setting other than itself measured best (the band of the two)."""
        if self.measured is None:
            return "unmeasured"
        if not self.kept:
            return "replaced"
        return "best" if self.band is None else "kept"


#: what became of a setting in the sweep. chosen: the advice (TF's default when it was kept);
#: baseline: TF's default, not chosen; within noise: not told apart from the best; raced: judged
#: on the race's windows, behind the best beyond noise; dropped: left out of the race as clearly
#: worse than the best (or failing), never advised; screened: measured in the screen only;
#: failed: no trial of it produced numbers
SettingVerdict = Literal[
    "chosen", "baseline", "within noise", "raced", "dropped", "screened", "failed"
]


class SettingStats(FlatSetting):
    """One setting as the sweep judged it: the medians it was decided on, how much its windows
    disagree, and its verdict. A renderer shows these as they are. Stored as ``intra``/``inter``,
    null for TF's default."""

    verdict: SettingVerdict
    best: bool = Field(default=False, description="the best measured value by the objective")
    within_noise: bool = Field(
        default=False, description="within the noise band of the best (it is in near_best)"
    )
    unstable: bool = Field(default=False, description="its windows still disagree by a CV over 10%")
    raced: bool = Field(default=False, description="judged by race windows (else the screen's)")
    windows: int = Field(default=0, ge=0, description="trusted windows behind the medians")
    trials: int = Field(default=0, ge=0, description="trials that produced numbers, any phase")
    threads: int | None = Field(
        default=None, ge=0, description="intra + inter as run (TF's default: what TF runs)"
    )
    p50_ms: float | None = Field(default=None, ge=0, description="median over its windows")
    p99_ms: float | None = Field(default=None, ge=0, description="median over its windows")
    throughput_rps: float | None = Field(default=None, ge=0, description="median, req/s")
    cv: float | None = Field(
        default=None, ge=0, description="stdev/mean of the value it was ranked by, its windows"
    )
    switches_per_request: float | None = Field(
        default=None, ge=0, description="median involuntary switches per request (null: none)"
    )
    nr_throttled: int | None = Field(
        default=None, ge=0, description="the most throttled periods in one of its windows"
    )
    status: TrialStatus = Field(default="ok", description="failed: its last trial's status")
    reason: str | None = Field(default=None, description="failed: its last trial's reason")


class CalibrationResult(SpelledSetting):
    """The outcome of a sweep: the advice, the baseline it beat, and every trial behind it.

    ``setting`` is the advice, spelled out (TF's default as the counts TF runs), stored as
    ``intra_op_threads``/``inter_op_threads``."""

    setting_keys: ClassVar[tuple[str, str]] = ("intra_op_threads", "inter_op_threads")

    objective: ObjectiveName
    p99_slo_ms: float | None = Field(default=None, gt=0)
    baseline: Measurement
    chosen: Measurement
    gain: float | None = Field(
        default=None,
        description="objective improvement over the baseline, as a ratio of medians (>1 = "
        "better); exactly 1.0 when the advice is the default or within noise of it",
    )
    gain_within_noise: bool = Field(
        default=False,
        description="the advice measured within the noise band of the TF default: no measurable "
        "gain (the advice may still be cheaper)",
    )
    spread: float | None = Field(
        default=None,
        ge=0,
        description="coefficient of variation (stdev/mean) of the chosen setting's objective "
        "over its windows",
    )
    #: the one noise band (``advisor.calibrate.statistics``) of the best and the baseline:
    #: ``Choice.band``; the stored name stays ``noise_band``
    noise_band: float | None = Field(
        default=None,
        ge=0,
        description="relative band within which a setting's median cannot be told from the "
        "best's: two standard errors of the difference of the best's and the baseline's "
        "medians, 5-25%",
    )
    #: the one noise band (``advisor.calibrate.statistics``) of the advice and the baseline:
    #: ``Choice.gain_band``
    gain_band: float | None = Field(
        default=None,
        ge=0,
        description="the noise band of the advice and TF's default, relative: the +- of the gain",
    )
    incumbent: IncumbentOutcome | None = Field(
        default=None,
        description="the advice in force before this run (TF's default when none was stored) "
        "and whether it was kept",
    )
    near_best: list[NearBest] = Field(
        default_factory=list,
        description="every setting within the noise band of the best, best first (the advice "
        "is the cheapest of them within 5% of the best)",
    )
    unstable: list[ThreadSetting] = Field(
        default_factory=list,
        description="settings whose windows still disagree by a CV over 10%, stored as their "
        "labels (intra/inter, or 'TF default')",
    )
    slo_met: bool | None = Field(
        default=None, description="objective 'slo': whether the chosen setting met the p99 bound"
    )
    rounds: int = Field(
        default=0, ge=0, description="rounds run: the screen (round 0) and each race round"
    )
    kept_default: bool = Field(
        default=False,
        description="the TF default was the pick (best, or the cheapest within noise and 5% of "
        "the best); the advice spells it out (intra = inter = the affinity count, what TF picks by "
        "itself) and its gain is 1.0",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="what a reader should know: ties broken, SLO missed, settings left unmeasured",
    )
    trials: list[TrialResult]
    subject: SubjectInfo = Field(alias="workload")
    budget_s: float = Field(gt=0, description="the ceiling: the most the calibration may take, s")
    elapsed_s: float = Field(ge=0, description="what it took, s")
    stopped: StopReason | None = Field(
        default=None,
        description="settled: ended as soon as more measurement could not change the advice; "
        "budget: the budget ended it (--spend-budget, or evidence that never settled); null: "
        "older results",
    )
    unsettled: dict[str, OpenReason] = Field(
        default_factory=dict,
        description="stopped by the budget: each setting that kept the race open (its label) "
        "and why (noise: within noise of the pick; incumbent: a narrow replacement; unstable; "
        "windows: too few race windows, or oneDNN pairs)",
    )
    time_split: TimeSplit | None = Field(
        default=None, description="where the time went (older results: none)"
    )
    tf_version: str | None = None
    trial_mode: Literal["fork", "spawn"] | None = Field(
        default=None, description="how the trials were started (after any fallback)"
    )
    onednn: OnednnVerdict | None = Field(
        default=None, description="with --sweep-onednn: the TF_ENABLE_ONEDNN_OPTS verdict"
    )
    onednn_trials: list[TrialResult] = Field(
        default_factory=list,
        description="with --sweep-onednn: the 0/1 pairs on the advised setting (not in trials)",
    )
    settings: list[SettingStats] = Field(
        default_factory=list,
        description="every setting tried, as judged: best first by the objective, failed ones "
        "last (older results: none)",
    )
    node: NodeProfile

    @field_validator("unstable", mode="before")
    @classmethod
    def _read_labels(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        return [ThreadSetting.from_label(v) if isinstance(v, str) else v for v in value]

    @field_serializer("unstable")
    def _write_labels(self, value: list[ThreadSetting]) -> list[str]:
        return [setting.label for setting in value]

    @property
    def chosen_setting(self) -> ThreadSetting:
        """The setting that was picked: TF's default when it was kept, else the advice."""
        return ThreadSetting.TF_DEFAULT if self.kept_default else self.setting

    @property
    def tf_picks(self) -> ThreadSetting:
        """The counts TF runs by itself on the node measured (``ThreadSetting.tf_picks``)."""
        return ThreadSetting.tf_picks(len(self.node.affinity_cpus))

"""Figures in the objective's own terms, with their noise, and the short summary a run ends with.

Gains are stated as "p99 5.97 ms against 8.14 ms for TF's default (27% lower, noise ±9%)": a
ratio such as "1.36x" reads as slower for a latency. The same sentences end ``run`` and
``calibrate`` and fill the report, so they are written once, here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from advisor.keys import APP_NAME
from advisor.models import (
    ONEDNN,
    TENSORFLOW,
    CalibrationResult,
    IncumbentOutcome,
    IncumbentVerdict,
    Measurement,
    NearBestRange,
    PairsVerdict,
    ReplacementEvidence,
    StopReason,
    SubjectInfo,
    ThreadSetting,
    open_text,
)
from advisor.objectives import Measure, named

if TYPE_CHECKING:
    from advisor.models.notes import (
        AdviceIgnored,
        BadThreadValue,
        IncumbentNote,
        Note,
        StoredAdviceNote,
    )


def near_best_line(result: CalibrationResult) -> str | None:
    """``within noise: intra 2-3, inter 1-2 (3 settings)``, or None without a range. The range
    holds the best itself, so a range of one says that nothing else is near it."""
    bounds = NearBestRange.of(result.near_best, result.noise_band)
    if bounds is None:
        return None
    band = "" if result.noise_band is None else f" ({result.noise_band:.0%})"
    if bounds.settings == 1:
        return f"no other setting within noise{band} of the best"
    return f"within noise{band} of the best: {bounds.describe()}"


def number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def ranked_by(result: CalibrationResult) -> Measure:
    """What the advice was chosen by: the objective's measure, or its bound's when no setting
    met the bound."""
    return named(result.objective).measure(result.slo_met is not False)


def figure_text(measure: Measure, m: Measurement) -> str:
    """``p99 3.34 ms`` or ``throughput 283 req/s``: one measurement in the measure's terms."""
    return f"{measure.what} {number(measure.read(m), measure.digits)} {measure.unit}"


def compare_text(
    measure: Measure, mine: Measurement, theirs: Measurement, whose: str, band: float | None
) -> str:
    """``p99 5.97 ms against 8.14 ms for TF's default (27% lower, noise ±9%)``: two medians in
    the measure's own terms, which way they differ, and the noise band they were judged with."""
    a, b = measure.read(mine), measure.read(theirs)
    if a is None or b is None or b <= 0:
        return f"{figure_text(measure, mine)}; no comparable figure for {whose}"
    noise = "" if band is None else f", noise \u00b1{band:.0%}"
    lower, digits, unit = measure.lower_is_better, measure.digits, measure.unit
    better = a <= b if lower else a >= b
    word = ("lower" if lower else "higher") if better else ("higher" if lower else "lower")
    return (
        f"{measure.what} {a:.{digits}f} {unit} against {b:.{digits}f} {unit} for {whose} "
        f"({abs(a - b) / b:.0%} {word}{noise})"
    )


def _threads_versus_default(result: CalibrationResult) -> str:
    """``fewer threads (2 against 4)``: intra + inter of the advice against TF's default's."""
    affinity = len(result.node.affinity_cpus)
    mine, theirs = result.setting.cost(affinity), result.tf_picks.cost(affinity)
    word = "fewer threads than" if mine < theirs else "more threads than"
    if mine == theirs:
        word = "as many threads as"
    return f"{word} TF's default ({mine} against {theirs}, intra + inter)"


def advice_line(result: CalibrationResult) -> str:
    """The one line a person acts on: the env values and the objective they were chosen for."""
    env = " ".join(
        f"{name}={value}" for name, value in TENSORFLOW.setting_env(result.setting).items()
    )
    if result.onednn is not None and result.onednn.value is not None:
        env += f" {ONEDNN.name}={result.onednn.value}"
    what = result.objective + (
        f", p99 <= {result.p99_slo_ms:g} ms" if result.p99_slo_ms is not None else ""
    )
    if result.kept_default:
        return f"advice: keep TF's default, spelled out: {env} ({what})"
    return f"advice: {env} ({what})"


def incumbent_line(result: CalibrationResult) -> str | None:
    """``in force before: 4/2 (configmaps/x in namespace ml): replaced by 1/1: ...``."""
    held = result.incumbent
    if held is None:
        return None
    name = "TF's default" if held.setting.is_default else held.setting.label
    return f"in force before: {name} ({held.source}): {held.reason}"


def incumbent_reason(
    verdict: IncumbentVerdict,
    rival: str = "",
    versus: str = "",
    evidence: str = "",
    *,
    unproven: bool = False,
) -> str:
    """The incumbent's ``verdict`` in one line (``IncumbentOutcome.reason``): ``rival`` is the
    best (kept) or the advice (replaced), ``versus`` how it compares with the incumbent,
    ``evidence`` what a replacement rested on (``evidence_text``); ``unproven``: kept although
    the best measured beyond noise, its paired test not passed (``choice.unproven``)."""
    if verdict == "unmeasured":
        return "could not be measured in this run: replaced"
    if verdict == "best":
        return "measured best: kept"
    if verdict == "kept" and unproven:
        return (
            f"kept: the best, {rival}, measured beyond noise but has not won the paired test "
            f"against it ({versus})"
        )
    if verdict == "kept":
        return f"kept: nothing beat it beyond noise (the best, {rival}: {versus})"
    return f"replaced by {rival}: {versus}" + (f"; {evidence}" if evidence else "")


def evidence_text(evidence: ReplacementEvidence) -> str:
    """What a replacement rested on, in a few words: ``paired sign and t tests, sequential: won
    8 of 8 rounds by more than 5% (e-value 153 >= 40, level 2.50%: half of 5% for the screen's
    best of 3 challengers)``."""
    if evidence.e_value is None:
        return "it surely meets the p99 bound the advice in force surely misses"
    many = evidence.challengers
    if evidence.favoured is True:
        share = f"half of {evidence.alpha:.0%} for the screen's best of {many} challengers"
    elif evidence.favoured is False:
        share = f"{evidence.alpha / 2:.1%} shared by the {many - 1} after the screen's best"
    else:
        share = f"{evidence.alpha:.0%} over {many} challenger{'s' if many != 1 else ''}"
    return (
        f"{evidence.test}: won {evidence.wins} of {evidence.rounds} rounds by more than "
        f"{evidence.margin:.0%} (e-value {evidence.e_value:g} >= {1 / evidence.level:g}, level "
        f"{evidence.level:.2%}: {share})"
    )


def onednn_reason(verdict: PairsVerdict) -> str:
    """The oneDNN pairs' ``code`` in one line with its figures (``OnednnVerdict.reason``)."""
    if verdict.code == "few pairs":
        return (
            f"only {verdict.counted} measured pair(s), {verdict.needed} needed: left unset "
            "(raise --budget)"
        )
    medians, band = verdict.medians, verdict.band or 0.0
    figures = (
        f"=0: {medians['0']:.2f}, =1: {medians['1']:.2f} {verdict.unit} over {verdict.counted} "
        "pairs"
    )
    if verdict.code == "better":
        return (
            f"{ONEDNN.name}={verdict.value} is {verdict.margin:.0%} better ({figures}; "
            f"noise {band:.0%}): the advice sets it"
        )
    return f"no difference beyond noise ({figures}; noise {band:.0%}): left unset"


def note_text(note: Note) -> str:
    """A calibration's note (``advisor.models.notes``) in one line (``CalibrationResult.notes``)."""
    # the notes' classes are imported where notes are worded: ``plan`` and ``status`` word none,
    # and their thirty-odd dataclasses make one of the dearest of the advisor's modules to import
    from advisor.models.notes import (
        BudgetShort,
        DefaultKept,
        FewerThreads,
        HighestVersion,
        IncumbentKept,
        IncumbentUnmeasured,
        NoGain,
        OnlyDefault,
        PassedOver,
        SloMissed,
        Unmeasured,
        Unstable,
    )

    match note:
        case SloMissed(bound, slo):
            text = (
                f"no setting met {bound.limit(slo)}; picked the {bound.best} {bound.what} instead"
            )
        case FewerThreads(chosen, leader, trade):
            text = (
                f"{chosen.label} is within {trade:.0%} of {leader.label}; took the one with "
                "fewer threads"
            )
        case PassedOver(leader, band, trade, passed):
            text = (
                f"within noise ({band:.0%}) of {leader.label} but more than {trade:.0%} behind "
                f"it, so not advised despite fewer threads: {_labels(passed)}"
            )
        case IncumbentUnmeasured() | IncumbentKept() | BudgetShort():
            text = _incumbent_note(note)
        case NoGain(chosen, band, ratio):
            measured = "" if ratio is None else f" (ratio {ratio:.2f})"
            text = (
                f"{chosen.label} and the TF default measured within the {band:.0%} noise band of "
                f"each other{measured}: no measurable gain"
            )
        case OnlyDefault(picks):
            text = (
                f"TF's default ({picks.label}) is the only setting for one CPU in the "
                "affinity mask; only it was measured"
            )
        case DefaultKept(picks):
            text = f"advice keeps TF's default, spelled out: intra = inter = {picks.intra}"
        case Unmeasured(settings):
            text = f"not measured for lack of budget (intra/inter): {_labels(settings)}"
        case Unstable(settings, cv):
            text = (
                f"unstable (its windows disagree by a CV over {cv:.0%}; its numbers are less "
                f"sure than the others'): {_labels(settings)}"
            )
        case HighestVersion(base_path, version, path):
            text = (
                f"{base_path} is a TF Serving base path: its highest version, {version}, was "
                f"measured ({path}), the one TF Serving serves by default"
            )
        case _:
            text = _stored_advice_note(note)
    return text


def _incumbent_note(note: IncumbentNote) -> str:
    """The notes on the advice in force: unmeasured, kept, or kept for want of budget."""
    from advisor.models.notes import BudgetShort, IncumbentKept, IncumbentUnmeasured

    match note:
        case IncumbentUnmeasured(incumbent):
            return (
                f"the advice in force ({incumbent.label}) could not be measured in this run, so "
                "it cannot stand"
            )
        case IncumbentKept(leader, held, measure, ratio, band):
            # kept inside the band, or beyond it on medians the paired rounds do not yet show
            where = (
                f"beyond the {band:.0%} noise band of the two, but it has not won the paired "
                "test against it"
                if ratio is not None and abs(_change(ratio, measure)) > band
                else f"inside the {band:.0%} noise band of the two"
            )
            return (
                f"{leader.label} measured {_percent(ratio, measure)} than the advice in "
                f"force ({held.label}), {where}: {held.label} kept"
            )
        case BudgetShort(leader, held, measure, ratio, rounds, more, budget_s):
            return (
                f"the budget ended before the paired test could decide on {leader.label} "
                f"({_percent(ratio, measure)} than the advice in force, {held.label}, over "
                f"{rounds} paired round{'s' if rounds != 1 else ''}): {more} more like those "
                f"would, so a --budget of about {budget_s:.0f} s would let it decide"
            )


def _stored_advice_note(note: StoredAdviceNote) -> str:
    """Why the stored advice is or is not the incumbent, in one line."""
    from advisor.models.notes import (
        AdviceIgnored,
        BadThreadValue,
        Forced,
        NoProvenance,
        UndoneInProduction,
    )

    match note:
        case AdviceIgnored() | BadThreadValue():
            text = f"{_why_ignored(note)}: {_IGNORED}"
        case NoProvenance(source):
            text = (
                f"{source} carries no provenance: only its values were checked against this node "
                "(use --output or --configmap for the full check)"
            )
        case UndoneInProduction():
            text = "the stored advice was undone in production: TF's default is the incumbent"
        case Forced():
            text = "--force: the stored advice is not the incumbent; TF's default is"
        case _:
            assert_never(note)
    return text


#: the end of every note about a stored advice that is not used
_IGNORED = "not used as the advice in force; TF's default is the incumbent"


def _why_ignored(note: AdviceIgnored | BadThreadValue) -> str:
    """Why the stored advice at the note's source is not the incumbent, in words."""
    from advisor.models.notes import BadThreadValue

    if isinstance(note, BadThreadValue):
        problem = (
            "missing"
            if note.value is None
            else f"{note.value!r}, not a thread count up to {note.cap}"
        )
        return f"{note.source}: {note.name} is {problem}"
    source, detail = note.source, note.detail
    why = note.why
    match why:
        case "not ours":
            return f"{source} was not written by {APP_NAME}"
        case "elsewhere":
            return f"{source} was measured for something else ({detail})"
        case "invalid":
            return f"the stored advice does not validate ({detail})"
        case "unusable":
            return f"{source}: cannot use it ({detail})"
        case "unreadable":
            return f"{source}: cannot read it ({detail})"
        case _:
            assert_never(why)


def _labels(settings: tuple[ThreadSetting, ...]) -> str:
    return ", ".join(s.label for s in settings)


def _change(ratio: float, measure: Measure) -> float:
    """A ratio of medians (>1 = better) as the share better (negative: worse)."""
    return 1 - 1 / ratio if measure.lower_is_better else ratio - 1


def _percent(ratio: float | None, measure: Measure) -> str:
    """``7% better`` (or worse): a ratio of medians (>1 = better) in words."""
    if ratio is None:
        return "differently"
    change = _change(ratio, measure)
    return f"{abs(change):.0%} {'better' if change >= 0 else 'worse'}"


def sweep_done_line(result: CalibrationResult) -> str:
    """``advice: intra=2 inter=1 (in force before: ...; p99 ... for TF's default (...)), settled
    after 14 trials in 38.2 s``: the sweep's last progress line."""
    held = result.incumbent
    before = "" if held is None else f"in force before: {_held_verdict(result, held)}; "
    return (
        f"advice: intra={result.setting.intra} inter={result.setting.inter} "
        f"({before}{versus_default(result)}), {stop_text(result)}"
    )


def stop_text(result: CalibrationResult) -> str:
    """Why the calibration ended: ``settled after 14 trials in 38.2 s``, or ``budget spent after
    40 trials in 58.2 s, 1/2 and 2/1 still within noise`` (older results: ``after ...``)."""
    took = f"after {len(result.trials)} trials in {result.elapsed_s:.1f} s"
    if result.stopped is None:
        return took
    if result.stopped == "settled":
        return f"settled {took}"
    open_ = open_text(list(result.unsettled.items()))
    return f"budget spent {took}" + (f", {open_}" if open_ else "")


def took_text(elapsed_s: float, stopped: StopReason | None) -> str:
    """``38 s, settled``: what a calibration took and why it ended, from its provenance (older
    advice: the seconds alone)."""
    return f"{elapsed_s:.0f} s" + ("" if stopped is None else f", {stopped}")


def time_split_line(result: CalibrationResult) -> str | None:
    """``time: 2.9 s TF start, 1.1 s model load, 11.8 s screen, 20.4 s race, 0.6 s other``
    (older results: None)."""
    split = result.time_split
    if split is None:
        return None
    parts = [
        (split.startup_s, "TF start"),
        (split.inspect_s, "model load"),
        (split.screen_s, "screen"),
        (split.race_s, "race"),
        (split.onednn_s, "oneDNN pairs"),
        (split.other_s, "other"),
    ]
    return "time: " + ", ".join(f"{s:.1f} s {what}" for s, what in parts if s is not None)


def _held_verdict(result: CalibrationResult, held: IncumbentOutcome) -> str:
    """The incumbent's verdict beside the gain: TF's default replaced is compared with the advice
    once, by the gain over TF's default that follows it."""
    if held.setting.is_default and held.verdict == "replaced":
        return f"TF's default, replaced by {result.setting.label}"
    return held.reason


def gain_line(result: CalibrationResult) -> str:
    """``against TF's default: p99 ... (27% lower, noise ±9%); fewer threads ...``."""
    line = f"against TF's default: {versus_default(result)}"
    if not result.kept_default:
        line += f"; {_threads_versus_default(result)}"
    return line


def inputs_text(subject: SubjectInfo) -> str:
    """Where the inputs came from: ``warmup file (12 requests, batch sizes 1-8)``, ``requests
    file FILE (...)``, ``synthesised`` (with what synthesis read, where it says)."""
    source = subject.inputs_source
    if source is None or source.kind == "synthesised":
        detail = None if source is None else source.detail
        shown = "synthesised" if not detail else f"synthesised ({detail})"
        if subject.model_format != "builtin":
            shown += f", batch size {subject.batch_size}"
        return shown
    counted = []
    if source.requests is not None:
        counted.append(f"{source.requests} request{'s' if source.requests != 1 else ''}")
    if source.batch_sizes is not None:
        low, high = source.batch_sizes
        counted.append(f"batch size {low}" if low == high else f"batch sizes {low}-{high}")
    what = "warmup file" if source.kind == "warmup" else f"requests file {source.file}"
    return f"{what} ({', '.join(counted)})" if counted else what


def rate_label(subject: SubjectInfo) -> str:
    """The throughput column's unit: replayed requests each carry their own batch, so their
    throughput counts examples (rows) per second; synthesised ones are requests per second."""
    source = subject.inputs_source
    return "req/s" if source is None or source.kind == "synthesised" else "ex/s"


def summary_lines(result: CalibrationResult) -> list[str]:
    """The short story of a run, the same for ``calibrate`` and ``run``: the advice, the
    incumbent and whether it was kept, the range within noise, and the gain."""
    lines = [advice_line(result)]
    held = incumbent_line(result)
    if held is not None:
        lines.append(held)
    near = near_best_line(result)
    if near is not None:
        lines.append(near)
    lines.append(gain_line(result))
    return lines


def versus_default(result: CalibrationResult) -> str:
    """How the advice compares with TF's default, in the objective's terms and with its noise,
    claiming no more than measured."""
    measure = ranked_by(result)
    if result.kept_default:
        figure = figure_text(measure, result.baseline)
        return f"the advice is TF's default ({figure}): no gain claimed"
    text = compare_text(measure, result.chosen, result.baseline, "TF's default", result.gain_band)
    if result.gain_within_noise:
        return f"{text}: no measurable gain"
    return text

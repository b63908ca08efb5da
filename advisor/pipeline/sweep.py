"""``sweep()``: inspect the model under test, run the budgeted search, pick the advice.

The advice is always concrete numbers: when TF's default is the pick, they are what TF runs by
itself (``tf_picks``), its gain is exactly 1.0 and nothing claims it beat the default.

The advice in force (``incumbent``; TF's default when none is given) is measured as a named arm and
stays the advice unless a setting wins the sequential paired test against it (``choice.choose``),
so a run on an unchanged node republishes the same values and rolls no consumer; a replacement
names that test's evidence in the result (``IncumbentOutcome.evidence``).

The budget starts when ``sweep`` is called, so inspecting the model (a child process that pays
TensorFlow's start-up too) counts against it: ``--budget 60`` means the command is done in 60 s.
A caller may pass its own ``trial_fn`` (the benchmark's synthetic cost model, tests); then no
child is started for inspection either, and the model is described from the options alone.
Or its own ``programs`` (the tests' fake trial children, a faulty trial server): real processes,
supervised as the real ones are.

Progress is a stream of ``Progress`` events for the caller's ``progress``; without one they are
logged as plain lines.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace

from advisor.calibrate import onednn
from advisor.calibrate.budget import Budget, Clock, SearchSettings, SystemClock, TrialFn
from advisor.calibrate.candidates import (
    candidate_configs,
    incumbent_key,
    tf_picks,
    with_incumbent,
)
from advisor.calibrate.choice import Choice, budget_short, choose, unproven
from advisor.calibrate.search import race
from advisor.calibrate.spec import SubjectSpec
from advisor.calibrate.state import SearchOutcome
from advisor.calibrate.statistics import (
    PAIRED_TEST,
    REPLACE_ALPHA,
    STABLE_CV,
    ConfigStats,
    aggregate,
)
from advisor.calibrate.verdicts import judged_settings, near_best
from advisor.errors import CalibrationError
from advisor.models import (
    ONEDNN,
    ONEDNN_VALUES,
    CalibrationOptions,
    CalibrationResult,
    Incumbent,
    IncumbentOutcome,
    NodeProfile,
    OnednnValue,
    OnednnVerdict,
    PairsVerdict,
    Progress,
    ProgressFn,
    ReplacementEvidence,
    SubjectInfo,
    ThreadSetting,
    TimeSplit,
    TrialResult,
    format_of,
)
from advisor.models.notes import DefaultKept, Note, OnlyDefault, Unmeasured, Unstable
from advisor.objectives import Measure, Objective, named
from advisor.render.words import (
    compare_text,
    evidence_text,
    incumbent_reason,
    note_text,
    onednn_reason,
    sweep_done_line,
)
from advisor.trials.environment import trial_env
from advisor.trials.launch import Launcher, TrialPrograms

log = logging.getLogger("advisor.calibrate")

#: inspection loads the model once; a model that takes longer than this to load cannot be swept
#: in any sensible budget anyway.
MAX_INSPECT_S = 120.0


def _subject_from_options(options: CalibrationOptions) -> SubjectInfo:
    """What the model under test is, as far as the options say (used when no child inspects it)."""
    model_format = format_of(options.model_path)
    return SubjectInfo.model_validate(
        {
            "model_format": model_format,
            "path": options.model_path,
            "signature": options.signature if model_format == "savedmodel" else None,
            "batch_size": options.batch_size,
            "concurrency": options.concurrency,
        }
    )


def _log_progress(event: Progress) -> None:
    log.info("%s", event.line)


def _launcher(
    options: CalibrationOptions, programs: TrialPrograms | None, say: Callable[[str], None]
) -> Launcher:
    """What runs the trials: forked from a trial server (unless spawning), or spawned. It kills
    its own children when the sweep is left by an exception (used as a context manager)."""
    subject = SubjectSpec(
        model_path=options.model_path,
        signature=options.signature,
        batch_size=options.batch_size,
        input_shape=options.input_shape,
        concurrency=options.concurrency,
        requests=options.requests,
    )
    say(f"inspecting the model ({options.model_path or 'built-in'})")
    return Launcher(subject, options.trial_mode, programs=programs)


def _with_overhead(
    settings: SearchSettings | None,
    launcher: Launcher,
    inspected_s: float,
    say: Callable[[str], None],
) -> SearchSettings:
    guess = _overhead_guess(launcher, inspected_s)
    say(f"trials start by {launcher.used} (~{guess:.1f} s each before measuring)")
    return replace(settings or SearchSettings(), overhead_guess_s=guess)


def _overhead_guess(launcher: Launcher, inspected_s: float) -> float:
    """A trial's start-up before it measures, guessed from what inspection paid.

    Inspection did what a trial does before measuring (start, load the model, one request). A
    forked inspection child paid no TF import; a spawned one did, and a spawned trial never costs
    less than the 3.5 s it takes here.
    """
    if launcher.used == "fork":
        return max(0.3, launcher.inspect_s or inspected_s)
    return max(SearchSettings().overhead_guess_s, inspected_s)


def _onednn_phase(
    options: CalibrationOptions,
    setting: ThreadSetting,
    measure: Measure,
    *,
    launcher: Launcher | None,
    trial_fn: TrialFn,
    budget: Budget,
    say: Callable[[str], None],
) -> tuple[list[TrialResult], PairsVerdict]:
    """--sweep-onednn on the advised setting: one trial server per value (TF reads the variable
    at import), or the caller's TrialFn for both (the spec carries the value)."""
    say(f"oneDNN: TF_ENABLE_ONEDNN_OPTS=0 vs =1 at intra={setting.intra} inter={setting.inter}")
    servers: dict[OnednnValue, Launcher] = {}
    fns: dict[OnednnValue, TrialFn] = dict.fromkeys(ONEDNN_VALUES, trial_fn)
    try:
        # interrupted: each server's launcher kills its children and itself on the way out
        with ExitStack() as owned:
            if launcher is not None:
                servers = {
                    value: owned.enter_context(
                        Launcher(
                            launcher.subject,
                            options.trial_mode,
                            programs=launcher.programs,
                            server_env=trial_env(ThreadSetting.TF_DEFAULT, onednn=value),
                        )
                    )
                    for value in ONEDNN_VALUES
                }
                fns = dict(servers)
            # both import TensorFlow at once (a core each on two cores), then the pairs start
            for server in servers.values():
                server.launch(launcher.load_timeout_s if launcher is not None else 0.0)
            for server in servers.values():
                server.ready(max(1.0, budget.remaining()))
            return onednn.measure_pairs(setting, fns, measure=measure, budget=budget, say=say)
    finally:
        notes = launcher.notes if launcher is not None else []
        for server in servers.values():
            notes.extend(n for n in server.notes if n not in notes)


def sweep(
    options: CalibrationOptions,
    node: NodeProfile,
    *,
    progress: ProgressFn | None = None,
    trial_fn: TrialFn | None = None,
    clock: Clock | None = None,
    settings: SearchSettings | None = None,
    incumbent: Incumbent | None = None,
    programs: TrialPrograms | None = None,
) -> CalibrationResult:
    """Measure thread settings for this node within ``options.budget_s`` and pick the advice.

    ``incumbent`` is the advice in force (checked by the caller to be for this node, model and
    objective); without one, TF's default is the incumbent.

    Raises ModelError (from inspection, before any trial) when the model cannot be used, and
    CalibrationError when the budget is too small, the baseline fails or no setting succeeds.
    """
    clock = clock or SystemClock()
    if options.spend_budget:
        settings = replace(settings or SearchSettings(), spend_budget=True)
    started = clock.monotonic()
    until = started + options.budget_s
    emit = progress or _log_progress

    def say(text: str) -> None:
        emit(Progress(text=text))

    launcher: Launcher | None = None
    picks = tf_picks(node)
    objective = named(options.objective)

    # Interrupted (SIGTERM/SIGINT) or failed: the launcher kills every child it started
    # (inspection or trial) and its server on the way out, so none outlives the sweep.
    with ExitStack() as owned:
        if trial_fn is None:
            launcher = owned.enter_context(_launcher(options, programs, say))
            # the trial server starts, then the model is inspected in a child (ModelError before
            # any trial); the trials then run as its children (or spawned ones)
            info = launcher.inspect(min(MAX_INSPECT_S, options.budget_s))
            trial_fn = launcher
            # Inspection paid what every trial pays before it measures (start, load the model,
            # one request): a far better first guess than a constant for a big model, whose
            # trials would otherwise get deadlines sized for a small one.
            settings = _with_overhead(settings, launcher, clock.monotonic() - started, say)
        else:
            info = _subject_from_options(options)

        held = incumbent_key(incumbent, picks)
        candidates = _candidates(node, options, held, picks, say)
        # --sweep-onednn keeps the end of the budget for its pairs on the advised setting
        reserved = onednn.BUDGET_SHARE * options.budget_s if options.sweep_onednn else 0.0
        outcome = race(
            candidates,
            objective,
            trial_fn,
            clock=clock,
            until=until - reserved,
            budget_s=options.budget_s - reserved,
            p99_slo_ms=options.p99_slo_ms,
            settings=settings,
            progress=emit,
            picks=picks,
            incumbent=held,
        )

    searched_at = clock.monotonic()
    stats, choice = _choose(outcome, objective, options, picks, held)
    affinity = len(node.affinity_cpus)
    advice = choice.chosen.setting.spelled_out(affinity)
    notes = [
        note_text(note)
        for note in (
            *choice.notes,
            *_notes(choice, outcome, picks, advice, not candidates),
            *_budget_short(choice, outcome, options.budget_s, settings or SearchSettings()),
        )
    ]
    outcome_of_incumbent = _incumbent_outcome(choice, incumbent, held, picks, options)
    verdict: OnednnVerdict | None = None
    decided_onednn: PairsVerdict | None = None
    onednn_trials: list[TrialResult] = []
    if options.sweep_onednn:
        searched = settings or SearchSettings()
        onednn_trials, decided_onednn = _onednn_phase(
            options,
            advice,
            # judged as the setting was chosen: by p99 under an SLO no setting met
            choice.measure,
            launcher=launcher,
            trial_fn=trial_fn,
            # the search's plan over the whole budget: its safety, its deadlines, and its reserve
            # at the end (the process's start and exit, the result); each trial's start-up as
            # the search's trials showed it
            budget=Budget(
                until=until,
                clock=clock,
                settings=replace(
                    searched, overhead_guess_s=outcome.overhead_s or searched.overhead_guess_s
                ),
                budget_s=options.budget_s,
            ),
            say=say,
        )
        verdict = decided_onednn.stored(onednn_reason(decided_onednn))
        notes.append(f"oneDNN: {verdict.reason}")
    onednn_s = None if verdict is None else clock.monotonic() - searched_at
    stopped, unsettled = outcome.stopped, {key.label: why for key, why in outcome.open}
    pairs_open = (
        None
        if decided_onednn is None
        else onednn.open_reason(decided_onednn, (settings or SearchSettings()).settle_band)
    )
    if pairs_open is not None:
        stopped = "budget"  # the pairs ran until the budget ended them
        unsettled[ONEDNN.name] = pairs_open
    if launcher is not None:
        notes.extend(launcher.notes)
    elapsed = clock.monotonic() - started
    split = _time_split(outcome, launcher, elapsed, onednn_s)
    result = CalibrationResult(
        setting=advice,
        objective=options.objective,
        p99_slo_ms=options.p99_slo_ms,
        baseline=choice.baseline.measurement(),
        chosen=choice.chosen.measurement(),
        gain=choice.gain,
        gain_within_noise=choice.gain_within_noise,
        spread=choice.spread,
        noise_band=choice.band,
        gain_band=choice.gain_band,
        incumbent=outcome_of_incumbent,
        near_best=[near_best(s, choice.measure, affinity) for s in choice.near_best],
        unstable=list(outcome.unstable),
        slo_met=choice.slo_met,
        rounds=outcome.rounds,
        kept_default=choice.kept_default,
        notes=notes,
        trials=outcome.trials,
        subject=info,
        budget_s=options.budget_s,
        elapsed_s=max(0.0, elapsed),
        stopped=stopped,
        unsettled=unsettled,
        time_split=split,
        tf_version=info.tf_version,
        trial_mode=None if launcher is None else launcher.used_overall,
        onednn=verdict,
        onednn_trials=onednn_trials,
        settings=judged_settings(
            outcome.trials,
            objective.rank(stats, options.p99_slo_ms),
            choice,
            dropped=outcome.dropped,
            unstable=outcome.unstable,
        ),
        node=node,
    )
    say(sweep_done_line(result))
    return result


def _time_split(
    outcome: SearchOutcome, launcher: Launcher | None, elapsed: float, onednn_s: float | None
) -> TimeSplit:
    """Where ``elapsed`` went: the trial server's start, the model's inspection, the screen, the
    race, the oneDNN pairs, and the rest."""
    startup = None if launcher is None else launcher.startup_s
    inspect = None if launcher is None else launcher.inspect_s
    parts = [startup, inspect, outcome.screen_s, outcome.race_s, onednn_s]
    other = elapsed - sum(p for p in parts if p is not None)
    return TimeSplit(
        startup_s=startup,
        inspect_s=inspect,
        screen_s=outcome.screen_s,
        race_s=outcome.race_s,
        onednn_s=onednn_s,
        other_s=max(0.0, other),
    )


def _choose(
    outcome: SearchOutcome,
    objective: Objective,
    options: CalibrationOptions,
    picks: ThreadSetting,
    held: ThreadSetting,
) -> tuple[list[ConfigStats], Choice]:
    """Every setting's statistics, and the pick among them."""
    stats = aggregate(outcome.trials, picks)
    try:
        choice = choose(
            stats,
            objective,
            options.p99_slo_ms,
            incumbent=held,
            excluded=outcome.dropped,
            favourite=outcome.favourite,
        )
    except ValueError as exc:
        raise CalibrationError(f"nothing to advise on: {exc}") from None
    return stats, choice


def _candidates(
    node: NodeProfile,
    options: CalibrationOptions,
    held: ThreadSetting,
    picks: ThreadSetting,
    say: Callable[[str], None],
) -> list[ThreadSetting]:
    """The node's candidates, the incumbent among them (a stored 4/2 on a 1-CPU pod is not),
    without the settings production undid for this target."""
    candidates = with_incumbent(candidate_configs(node, options.concurrency), held)
    if options.rejected:
        say(f"left out, undone in production: {', '.join(s.label for s in options.rejected)}")
        candidates = [c for c in candidates if c not in options.rejected]
    say(
        f"{len(candidates)} settings for {node.effective_cpus:g} usable CPUs "
        f"({len(node.affinity_cpus)} in the affinity mask) and TF's default "
        f"({picks.label}) as the baseline, budget {options.budget_s:g} s"
    )
    return candidates


def _incumbent_outcome(
    choice: Choice,
    incumbent: Incumbent | None,
    held: ThreadSetting,
    picks: ThreadSetting,
    options: CalibrationOptions,
) -> IncumbentOutcome:
    """How the advice in force fared, in one line a person reads."""
    stored = picks if incumbent is None or held.is_default else incumbent.setting
    name = "TF's default" if held.is_default else stored.label
    source = incumbent.source if incumbent is not None else "none stored: TF's default"
    measured = choice.incumbent
    evidence: ReplacementEvidence | None = None
    if measured is None:
        reason = incumbent_reason("unmeasured")
    elif choice.kept and choice.leader is measured:
        reason = incumbent_reason("best")
    else:
        # kept: how close the best came; replaced: by how much the advice beat it
        other = choice.leader if choice.kept else choice.chosen
        versus = compare_text(
            choice.measure,
            other.measurement(),
            measured.measurement(),
            name,
            choice.incumbent_band,
        )
        evidence = None if choice.kept else _evidence(choice)
        reason = incumbent_reason(
            "kept" if choice.kept else "replaced",
            other.label,
            versus,
            "" if evidence is None else evidence_text(evidence),
            unproven=unproven(choice),
        )
    return IncumbentOutcome(
        setting=held,
        runs=stored,
        source=source,
        kept=choice.kept,
        onednn=incumbent.onednn if incumbent is not None else None,
        measured=None if measured is None else measured.measurement(),
        versus=choice.versus_incumbent,
        band=choice.incumbent_band,
        reason=reason,
        evidence=evidence,
    )


def _evidence(choice: Choice) -> ReplacementEvidence | None:
    """What the replacement rested on, as the result and the ConfigMap record it."""
    found = choice.evidence
    if found is None or not found.passed:
        return None
    test = found.test
    if test is None:
        return ReplacementEvidence(
            test="p99 bound",
            rounds=0,
            wins=0,
            margin=0.0,
            level=REPLACE_ALPHA,
            alpha=REPLACE_ALPHA,
            challengers=1,
        )
    return ReplacementEvidence(
        test=PAIRED_TEST,
        rounds=test.rounds,
        wins=test.wins,
        margin=test.margin,
        e_value=round(test.e_value, 1),
        level=round(test.level, 4),
        alpha=REPLACE_ALPHA,
        challengers=test.challengers,
        favoured=test.favoured,
    )


def _budget_short(
    choice: Choice, outcome: SearchOutcome, budget_s: float, settings: SearchSettings
) -> list[Note]:
    """The budget ended before the paired test decided (``choice.budget_short``), with the pace
    of this run's race rounds (the screen is round 0 of ``outcome.rounds``)."""
    if outcome.stopped != "budget":
        return []
    race_rounds = outcome.rounds - 1
    round_s = outcome.race_s / race_rounds if race_rounds > 0 else None
    note = budget_short(choice, spent_s=budget_s, round_s=round_s, safety=settings.safety)
    return [] if note is None else [note]


def _notes(
    choice: Choice,
    outcome: SearchOutcome,
    picks: ThreadSetting,
    advice: ThreadSetting,
    nothing_to_try: bool,
) -> list[Note]:
    """What a reader should know beyond the choice's own notes: the default kept, the settings
    never measured (never the advice: it was measured), the ones that would not hold still."""
    notes: list[Note] = []
    if nothing_to_try:
        notes.append(OnlyDefault(picks))
    if choice.kept_default:
        notes.append(DefaultKept(picks))
    left = tuple(c for c in outcome.unmeasured if c != advice)
    if left:
        notes.append(Unmeasured(left))
    if outcome.unstable:
        notes.append(Unstable(tuple(outcome.unstable), STABLE_CV))
    return notes

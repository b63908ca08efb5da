"""Why each ``plan`` decision is what it is, in words: its typed reason (``PlanReason``: the cause,
then what applying or judging it added) as the one line the table, the logs and the Events show,
and the AdviceReverted Event's message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from advisor.errors import one_line
from advisor.keys import ANN_CONFIGMAP, ANN_REVERT
from advisor.models import Production
from advisor.models.plan import (
    Applied,
    Calibrate,
    Cause,
    CompletedUnfit,
    Confounded,
    ConsumerVerdict,
    Corrected,
    Created,
    Difference,
    EarlierRunning,
    Fits,
    ForeignConfigMap,
    HandWritten,
    Helped,
    InvalidAdvice,
    JobExists,
    JobFailed,
    NoAdvice,
    NoPrevious,
    NoServiceAccount,
    NotCalibrated,
    NotReverted,
    NotWrittenBack,
    NotYet,
    OptedOut,
    OptionChanged,
    OtherContainer,
    Overridden,
    PlanReason,
    PoolSelected,
    PoolUnpinned,
    QuotaChanged,
    Refused,
    Retried,
    RetryUnchecked,
    Reverted,
    RevertLimit,
    Running,
    SharedDiffers,
    Skipped,
    SpecChanged,
    SpecDifference,
    Stopped,
    Suggested,
    TargetChanged,
    TooOld,
    Unreadable,
    Waits,
    WrittenBack,
)
from advisor.models.times import duration_text
from advisor.render.production_text import changes, evidence
from advisor.render.words import took_text

#: a reason's longest line: reasons end up in tables, logs and Events. A shared advice's
#: regression names each consumer's verdict and the evidence of those that decide (about 110
#: characters each): three consumers and what applying added fit
REASON_LIMIT = 700


def plan_reason_text(reason: PlanReason) -> str:
    """A decision's reason in one line (``PlanDecision.reason``): its cause, then each thing
    applying it added after a ``;``, clipped to ``REASON_LIMIT`` as each was added."""
    text = one_line(_cause_text(reason.cause), REASON_LIMIT)
    for part in reason.added:
        text = one_line(f"{text}; {_applied_text(part)}", REASON_LIMIT)
    return text


#: what a container that is not opted in is told
OPT_IN_HINT = "label it tf-thread-advisor.io/calibrate=true to calibrate it"

#: what to install in a namespace so that its calibration Jobs can run
CALIBRATION_RBAC_HINT = (
    "list the namespace in the chart's planner.namespaces, or apply deploy/components/fleet there"
)


def _cause_text(cause: Cause) -> str:
    match cause:
        case Skipped() | NotCalibrated() | ForeignConfigMap() | Overridden():
            return _skipped_text(cause)
        case JobExists() | Refused():
            return _answer_text(cause)
        case Running() | JobFailed() | EarlierRunning() | CompletedUnfit():
            return _job_text(cause)
        case Reverted() | Suggested():
            return _production_text(cause)
        case Calibrate() | Fits() | SharedDiffers() | NoServiceAccount():
            return _advice_text(cause)
        case _:
            assert_never(cause)


def _skipped_text(cause: Skipped | NotCalibrated | ForeignConfigMap | Overridden) -> str:
    """Why it cannot be calibrated."""
    match cause:
        case Skipped():
            return cause.text
        case NotCalibrated():
            return f"a {cause.kind} is not calibrated"
        case ForeignConfigMap():
            return (
                f"ConfigMap {cause.configmap} was not written by tf-thread-advisor and is never "
                f"replaced: name a new one with annotation {ANN_CONFIGMAP}"
            )
        case Overridden():
            return "the advice would be overridden: " + "; ".join(p.message for p in cause.problems)
        case _:
            assert_never(cause)


def _answer_text(cause: JobExists | Refused) -> str:
    """The API server's answer about the Job."""
    match cause:
        case JobExists():
            warns = _warns(cause.warnings)
            return f"Job {cause.job} exists already (created by an earlier plan){warns}"
        case Refused():
            return cause.message
        case _:
            assert_never(cause)


def _production_text(cause: Reverted | Suggested) -> str:
    """What production's verdicts decide."""
    match cause:
        case Reverted():
            then = _calibrated_next(cause.replaced)
            return (
                f"{_regression(cause.verdicts)}; back to the previous advice ({cause.previous})"
                f"{then}"
            )
        case Suggested():
            return (
                f"throttled in {cause.throttled:.0%} of its CFS periods over the last "
                f"{cause.window} (above {cause.threshold:.0%}); {OPT_IN_HINT}"
            )
        case _:
            assert_never(cause)


def _calibrated_next(replaced: Fits | Calibrate | None) -> str:
    """What a revert leaves to the next plan: the calibration the decision would have started."""
    match replaced:
        case Calibrate(differences=differences) if differences:
            return f"; calibrated by the next plan ({differences_text(differences)})"
        case Calibrate() | Fits() | None:
            return ""
        case _:
            assert_never(replaced)


def _job_text(cause: Running | JobFailed | EarlierRunning | CompletedUnfit) -> str:
    """Why the calibration Jobs already there decide it."""
    match cause:
        case Running():
            return f"calibration Job {cause.job} for this spec has not finished"
        case JobFailed():
            return f"calibration Job {cause.job} failed: {cause.why}"
        case EarlierRunning():
            return (
                f"calibration Job {cause.job}, for its earlier spec, is still running; the next "
                f"plan calibrates the new one ({differences_text(cause.differences)})"
            )
        case CompletedUnfit():
            return (
                f"calibration Job {cause.job} for this spec completed, but the advice does not "
                f"fit ({differences_text(cause.differences)}); it is calibrated again once the "
                "Job is deleted"
            )
        case _:
            assert_never(cause)


def _advice_text(cause: Calibrate | Fits | SharedDiffers | NoServiceAccount) -> str:
    """Why the advice (or the namespace it would be calibrated in) decides it."""
    match cause:
        case Calibrate():
            return differences_text(cause.differences)
        case Fits():
            exclusive = ", exclusive CPUs" if cause.exclusive else ""
            took = (
                "" if cause.took_s is None else f"; took {took_text(cause.took_s, cause.stopped)}"
            )
            return (
                f"advice {cause.intra}/{cause.inter} in {cause.configmap} was measured for it: "
                f"CPU {cause.cpu_from} {cause.cpu:g}{exclusive}, {cause.pool}, "
                f"{cause.objective}{took}"
            )
        case SharedDiffers():
            return (
                f"it shares ConfigMap {cause.configmap} with {cause.owner}, which is calibrated "
                f"for its own shape, and its own differs ({differences_text(cause.differences)}): "
                f"give it its own ConfigMap with annotation {ANN_CONFIGMAP}"
            )
        case NoServiceAccount():
            return (
                f"namespace {cause.namespace} has no ServiceAccount {cause.service_account} for "
                f"its calibration Job to run as: {CALIBRATION_RBAC_HINT} (it would calibrate: "
                f"{plan_reason_text(cause.would)})"
            )
        case _:
            assert_never(cause)


def differences_text(differences: Sequence[Difference]) -> str:
    """Differences of an advice from the container now, one after the other."""
    return "; ".join(difference_text(d) for d in differences)


def difference_text(difference: Difference) -> str:
    """How a stored advice differs from the container now, in a sentence."""
    d = difference
    match d:
        case NoAdvice():
            return f"no advice yet: ConfigMap {d.configmap} does not exist"
        case InvalidAdvice():
            return f"the advice in {d.configmap} does not validate ({d.error})"
        case HandWritten():
            return (
                f"the advice in {d.configmap} was measured by a hand-written target, not for "
                "this workload"
            )
        case OtherContainer():
            return f"the advice was measured for {d.workload} container {d.container}"
        case TooOld():
            return f"older than the maximum age ({duration_text(d.age, 'days')} old)"
        case (
            QuotaChanged()
            | PoolUnpinned()
            | PoolSelected()
            | TargetChanged()
            | OptionChanged()
            | SpecChanged()
        ):
            return _spec_difference_text(d)
        case _:
            assert_never(d)


def _spec_difference_text(difference: SpecDifference) -> str:
    """How the workload's calibration spec changed since the advice was measured."""
    d = difference
    match d:
        case QuotaChanged():
            return _quota_text(d)
        case PoolUnpinned():
            return d.problem.message
        case PoolSelected():
            shown = ", ".join(f"{k}={v}" for k, v in d.recorded) or "no node selector"
            extra = ", ".join(f"{k}={v}" for k, v in d.extra)
            return f"measured on {shown}, its pods now select {extra}"
        case TargetChanged():
            return f"{d.what} was {d.was}, is now {d.now}"
        case OptionChanged():
            return f"{d.what} was {_show(d.was)}, is now {_show(d.now)}"
        case SpecChanged(readable=True):
            return f"{d.label} changed ({d.was or 'none'} -> {d.now or 'none'})"
        case SpecChanged():
            return f"its {d.label} changed since the advice was measured"
        case _:
            assert_never(d)


def _quota_text(change: QuotaChanged) -> str:
    """The CPU quota measured under against the container's now."""
    before, after = change.before, change.after
    if before is None:
        return (
            f"measured without a CPU quota, the container's CPU {after.cpu_from} is {after.cpu:g}"
        )
    measured = f"measured under a CPU {before.cpu_from} of {before.cpu:g}"
    if before.cpu_from == after.cpu_from:
        return f"{measured}, the container's is now {after.cpu:g}"
    if after.cpu_from == "limit":
        return f"{measured}, the container now has a CPU limit of {after.cpu:g}"
    return f"{measured}, the container now has no CPU limit (request {after.cpu:g})"


def _show(value: str | float | None) -> str:
    if value is None:
        return "none"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _applied_text(part: Applied) -> str:
    match part:
        case Waits():
            return (
                f"waits: {part.busy} calibration(s) already running on node pool {part.pool} "
                f"(max running {part.max_running})"
            )
        case Retried():
            return f"retried: Job {part.job} is deleted and created again"
        case Created():
            did = "the API server would create" if part.dry_run else "created"
            return f"{did} Job {part.job}{_warns(part.warnings)}"
        case NotReverted():
            return _not_reverted_text(part)
        case RetryUnchecked():
            return (
                "the server checks the new Job only once the failed one is deleted (--apply)"
                + _warns(part.warnings)
            )
        case Stopped():
            return "not created: the plan stopped (the error line says why)"
        case WrittenBack():
            return "written back"
        case NotWrittenBack(refused=None):
            return (
                "not written: the ConfigMap changed since it was read (the next plan judges the "
                "new advice)"
            )
        case NotWrittenBack():
            return (
                f"not written: {part.refused} (the advice is kept; the next plan judges it again)"
            )
        case _:
            assert_never(part)


def _regression(verdicts: Sequence[ConsumerVerdict]) -> str:
    """What production said of an advice: one consumer's reason, or each consumer's verdict."""
    if len(verdicts) == 1:
        return f"production regressed on this advice: {_said(verdicts[0].production)}"
    worse = [_consumer(v) for v in verdicts if v.production.verdict == "regressed"]
    each = "; ".join(
        # the evidence of the verdicts that decide: an unchanged consumer's would crowd them
        f"{_consumer(v)} {v.production.verdict} "
        f"({_said(v.production) if v.production.verdict != 'unchanged' else v.production.reason})"
        for v in verdicts
    )
    return (
        f"production regressed on this advice for {', '.join(worse)} of its {len(verdicts)} "
        f"consumers: {each}"
    )


def _said(production: Production) -> str:
    """A verdict's reason, then the evidence that decided it."""
    said = evidence(production)
    return f"{production.reason}; {said}" if said else str(production.reason)


def _consumer(verdict: ConsumerVerdict) -> str:
    return f"{verdict.workload} ({verdict.container})"


def _not_reverted_text(part: NotReverted) -> str:
    """A regression left as it is, and why."""
    said = _regression(part.verdicts)
    why = part.why
    match why:
        case NoPrevious():
            return f"{said}, but no previous advice is kept"
        case Helped():
            better = [_consumer(v) for v in part.verdicts if v.production.verdict == "improved"]
            return f"{said}; kept: it improved for {', '.join(better)}"
        case OptedOut(problem=Unreadable() as problem, workloads=()):
            return f"{said}; not reverted: {problem.workload}: {problem.error}"
        case OptedOut():
            names = ", ".join(str(ref) for ref in why.workloads)
            return f'{said}; not reverted: {names} opts out with annotation {ANN_REVERT}: "false"'
        case Confounded():
            return (
                f"{said}; not reverted: its calibration spec changed since the advice "
                f"({differences_text(why.differences)}), so before and after are not "
                "comparable: it is calibrated instead"
            )
        case RevertLimit():
            return f"{said}; not reverted: --max-reverts {why.limit} reached"
        case NotYet():
            return (
                f"{said}; not reverted yet: regressed in {why.windows} full after-window(s) in "
                f"a row, a revert needs {why.needed}"
            )
        case Corrected():
            return (
                f"{said}; not reverted: corrected for judging {why.consumers} consumers (Holm, "
                f"level {why.alpha:g}) no regression stays significant"
            )
        case _:
            assert_never(why)


def revert_event_text(reason: PlanReason) -> str:
    """The AdviceReverted Event's message: what was written back, and each consumer's figures
    before and after the advice that decided it."""
    cause = reason.cause
    assert isinstance(cause, Reverted)
    figures = "; ".join(
        f"{_consumer(v)}: {_figures(v.production)}: {v.production.verdict} ({_said(v.production)})"
        for v in cause.verdicts
    )
    return f"advice reverted to the previous one ({cause.previous}): {figures}"


def _figures(production: Production) -> str:
    """Before -> after: throttled share, p99 and CPU, each where known."""
    return ", ".join(changes(production, "cpu")) or "no figures"


def _warns(warnings: tuple[str, ...]) -> str:
    return "".join(f"; the API server warns: {text}" for text in warnings)

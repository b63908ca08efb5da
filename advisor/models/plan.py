"""Fleet mode's plan: every opted-in workload container and what ``plan`` does about its advice
(filled by ``advisor.pipeline.plan``), and why, typed: each cause, difference and applied part a
decision's reason can hold, and the rule from a reason to its decision.

One module, though over 500 lines: it is one vocabulary of small frozen dataclasses and the
closed unions over them (``Cause``, ``Difference``, ``Applied``), which ``PlanReason.decision``
here and ``advisor.render.plan_reasons`` match exhaustively (``assert_never``); a new kind of
reason is added to its union and both matches in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal, assert_never

from pydantic import Field

from advisor.models.base import StrictModel
from advisor.models.calibration import StopReason
from advisor.models.consumers import Problem
from advisor.models.options import Measured
from advisor.models.production import Production
from advisor.models.recommendation import CpuFrom
from advisor.models.workload import WorkloadKind, WorkloadRef

#: what ``plan`` decides for one opted-in workload container (a production judgement is its
#: ``verdict``: ``Production.verdict``)
Decision = Literal["calibrate", "fits", "pending", "failed", "skipped", "revert", "suggested"]


class PlanDecision(StrictModel):
    """One opted-in workload container and what ``plan`` does about its advice."""

    workload: WorkloadRef = Field(description="kubectl's name: deployment/NAME")
    container: str | None = Field(default=None, description="the serving container")
    configmap: str | None = Field(default=None, description="the advice ConfigMap it reads")
    decision: Decision = Field(
        description="calibrate: its advice is missing or was measured for another shape; fits: "
        "the advice matches it; pending: a calibration Job for it has not finished; failed: the "
        "last calibration Job for this spec failed; skipped: it cannot be calibrated; revert: "
        "its serving pods did worse in production on this advice (Prometheus), so the advice "
        "it replaced is written back; suggested: not opted in, but throttled in production "
        "above --suggest-throttled"
    )
    reason: str = Field(min_length=1, description="one line: why")
    job: str | None = Field(
        default=None, description="the calibration Job created, to create, running or failed"
    )
    namespace: str | None = Field(
        default=None, description="the workload's namespace (where its calibration Job runs)"
    )


@dataclass(frozen=True)
class Waits:
    """Not started by this plan: ``busy`` calibrations already run on its node pool, the most
    ``max_running`` allows."""

    busy: int
    pool: str
    max_running: int


@dataclass(frozen=True)
class Retried:
    """``--retry-failed``: the failed ``job`` of this spec is deleted and created again."""

    job: str


@dataclass(frozen=True)
class Created:
    """The ``job`` was created (``dry_run``: the API server would create it), with what the API
    server warned about it."""

    job: str
    dry_run: bool = False
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class RetryUnchecked:
    """A dry run of a retried Job: the failed one still holds its name, so the server checked
    nothing (with what it warned)."""

    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stopped:
    """Not created: the plan stopped before this Job (the error line says why)."""


@dataclass(frozen=True)
class WrittenBack:
    """A revert applied: the previous advice is written back."""


@dataclass(frozen=True)
class NotWrittenBack:
    """A revert not applied: the ConfigMap changed since it was read, or (``refused``: the API
    server's words) the write was refused or not answered."""

    refused: str | None = None


@dataclass(frozen=True)
class ConsumerVerdict:
    """The production verdict on one container reading the advice."""

    workload: WorkloadRef
    container: str
    production: Production


@dataclass(frozen=True)
class NoPrevious:
    """The ConfigMap keeps no previous advice to go back to."""


@dataclass(frozen=True)
class Unreadable:
    """The ``workload``'s ``tf-thread-advisor.io/revert`` annotation cannot be read as allowing a
    revert (``error``: the annotation reader's words)."""

    workload: WorkloadRef
    error: str


@dataclass(frozen=True)
class OptedOut:
    """These ``workloads`` reading the advice say ``tf-thread-advisor.io/revert: "false"`` (or
    one cannot be read as allowing it: ``problem``)."""

    workloads: tuple[WorkloadRef, ...]
    problem: Unreadable | None = None


@dataclass(frozen=True)
class RevertLimit:
    """``--max-reverts`` advice were reverted by this plan already."""

    limit: int


@dataclass(frozen=True)
class Confounded:
    """The workload's calibration spec changed after the advice (``differences``): before and
    after differ by more than the advice, so it is calibrated, not reverted."""

    differences: tuple[SpecDifference, ...]


@dataclass(frozen=True)
class Helped:
    """The advice improved production for at least one of its consumers: it is kept."""


@dataclass(frozen=True)
class NotYet:
    """Regressed on fewer full after-windows in a row than a revert needs (``windows``: how
    many so far; ``needed``: how many it needs)."""

    windows: int
    needed: int


@dataclass(frozen=True)
class Corrected:
    """Regressed for some consumers, but none stays significant once corrected for testing
    ``consumers`` of them (Holm's procedure at ``alpha``)."""

    consumers: int
    alpha: float


#: why a regressed advice is not reverted
NotRevertedWhy = NoPrevious | OptedOut | RevertLimit | Confounded | Helped | NotYet | Corrected


@dataclass(frozen=True)
class NotReverted:
    """Production regressed on the advice for some of its consumers (``verdicts``: every
    consumer judged), but it is not reverted, for ``why``."""

    verdicts: tuple[ConsumerVerdict, ...]
    why: NotRevertedWhy = NoPrevious()


#: what applying (or judging in production) a decision added to its reason, in that order
Applied = (
    Waits
    | Retried
    | Created
    | RetryUnchecked
    | Stopped
    | WrittenBack
    | NotWrittenBack
    | NotReverted
)


@dataclass(frozen=True)
class JobExists:
    """The API server answered that ``job`` exists already (an earlier plan created it)."""

    job: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refused:
    """The API server refused the Job: its ``message`` (a quota, a webhook, an invalid Job)."""

    message: str


# ------------------------------------------------------------------------------------------------
# how a stored advice differs from the container now: what differs, as it was and as it is; put
# into words by ``advisor.render.plan_reasons.difference_text``


@dataclass(frozen=True)
class NoAdvice:
    """No advice yet: ``configmap`` does not exist."""

    configmap: str


@dataclass(frozen=True)
class InvalidAdvice:
    """The advice in ``configmap`` does not validate (``error``: the validation's own words)."""

    configmap: str
    error: str


@dataclass(frozen=True)
class HandWritten:
    """The advice in ``configmap`` was measured by a hand-written target, not for a workload."""

    configmap: str


@dataclass(frozen=True)
class OtherContainer:
    """The advice was measured for another ``workload``'s (or another) ``container``."""

    workload: WorkloadRef
    container: str


@dataclass(frozen=True)
class TooOld:
    """The advice is older than ``--max-age``: ``age``."""

    age: timedelta


@dataclass(frozen=True)
class Quota:
    """A CPU quota: ``cpu`` CPUs, the container's CPU limit or (no limit) its request."""

    cpu_from: CpuFrom
    cpu: float


@dataclass(frozen=True)
class QuotaChanged:
    """Measured under ``before`` (None: without a CPU quota), the container's is ``after``."""

    before: Quota | None
    after: Quota


@dataclass(frozen=True)
class PoolUnpinned:
    """The pods may run outside the node pool the advice was measured on: ``problem``, the one
    ``status`` reports for it (which of the recorded pairs nothing the pods require pins)."""

    problem: Problem


@dataclass(frozen=True)
class PoolSelected:
    """Measured on the node selector ``recorded`` (its pairs sorted), the pods now select
    ``extra`` pairs besides (sorted as ``key=value``)."""

    recorded: tuple[tuple[str, str], ...]
    extra: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class TargetChanged:
    """The serving container's ``what`` was ``was``, is now ``now``."""

    what: Literal["model path", "serving image"]
    was: str | None
    now: str | None


@dataclass(frozen=True)
class OptionChanged:
    """The calibration option ``what`` the advice was measured for was ``was``, is now
    ``now``."""

    what: Measured
    was: str | float | int | None
    now: str | float | int | None


@dataclass(frozen=True)
class SpecChanged:
    """A field of the recorded calibration spec (``key``, named ``label``) was ``was``, is now
    ``now`` (None: not set); ``readable``: neither is kept as a hash, so both can be shown."""

    key: str
    label: str
    was: str | None
    now: str | None
    readable: bool = True


#: how the workload's own calibration spec changed since the advice was measured
SpecDifference = (
    QuotaChanged | PoolUnpinned | PoolSelected | TargetChanged | OptionChanged | SpecChanged
)

#: why a stored advice does not fit the container as it is now
Difference = NoAdvice | InvalidAdvice | HandWritten | OtherContainer | TooOld | SpecDifference


@dataclass(frozen=True)
class Calibrate:
    """Calibrate: how the stored advice differs from the container now (the first may be that
    there is no advice yet)."""

    differences: tuple[Difference, ...]
    #: those of ``differences`` that are changes of the workload's own calibration spec since
    #: the advice was measured (its CPU, pool, model, image, objective, Job fields): a
    #: production comparison across them does not judge the advice alone
    changed: tuple[SpecDifference, ...] = ()


@dataclass(frozen=True)
class Fits:
    """The advice ``intra``/``inter`` in ``configmap`` was measured for the container as it is:
    under its CPU ``cpu_from`` of ``cpu`` (``exclusive`` CPUs), on node ``pool``, for
    ``objective``."""

    intra: int
    inter: int
    configmap: str
    cpu_from: str
    cpu: float
    exclusive: bool
    pool: str
    objective: str
    #: what its calibration took, s, and why it ended (older advice: None)
    took_s: float | None = None
    stopped: StopReason | None = None


@dataclass(frozen=True)
class Running:
    """The calibration ``job`` of this spec has not finished."""

    job: str


@dataclass(frozen=True)
class JobFailed:
    """The calibration ``job`` of this spec failed, for the Job's own reason ``why``."""

    job: str
    why: str


@dataclass(frozen=True)
class EarlierRunning:
    """The calibration ``job`` of an earlier spec still runs; the next plan calibrates the new
    spec, which has these ``differences``."""

    job: str
    differences: tuple[Difference, ...]


@dataclass(frozen=True)
class CompletedUnfit:
    """The calibration ``job`` of this spec completed, but its advice has these
    ``differences``."""

    job: str
    differences: tuple[Difference, ...]


@dataclass(frozen=True)
class SharedDiffers:
    """The container shares ``configmap`` with ``owner``, calibrated for its own shape, and the
    container's own shape has these ``differences``."""

    configmap: str
    owner: WorkloadRef
    differences: tuple[Difference, ...]


@dataclass(frozen=True)
class NoServiceAccount:
    """``namespace`` has no ``service_account`` for the calibration Job to run as; the
    calibration it ``would`` start."""

    namespace: str
    service_account: str
    would: PlanReason


@dataclass(frozen=True)
class Skipped:
    """It cannot be calibrated: ``text``, a sentence about its opt-in, pod template, storage or
    advice ConfigMap (the error that refused it)."""

    text: str


@dataclass(frozen=True)
class NotCalibrated:
    """A workload of a ``kind`` the advisor does not calibrate."""

    kind: WorkloadKind


@dataclass(frozen=True)
class ForeignConfigMap:
    """The advice ``configmap`` exists and tf-thread-advisor did not write it: it is never
    replaced."""

    configmap: str


@dataclass(frozen=True)
class Overridden:
    """The container keeps the advice's values from TensorFlow: each of ``problems`` says how."""

    problems: tuple[Problem, ...]


@dataclass(frozen=True)
class Reverted:
    """Production regressed on the advice and improved for none of its consumers (``verdicts``:
    every consumer judged): back to the ``previous`` advice (its summary). ``replaced``: the
    decision production turned into this revert (a calibration it would have started is left to
    the next plan, and the decision is that again where the revert is not written); None: the
    advice's outcome, not yet any decision's."""

    verdicts: tuple[ConsumerVerdict, ...]
    previous: str
    replaced: Fits | Calibrate | None = None


@dataclass(frozen=True)
class Suggested:
    """Not opted in, but ``throttled`` (a share of its CFS periods) over the last ``window``,
    above ``threshold``."""

    throttled: float
    window: str
    threshold: float


#: why a decision is what it is, before anything is applied: fleet's own decision, or the API
#: server's answer about its Job
Cause = (
    Calibrate
    | Fits
    | Running
    | JobFailed
    | EarlierRunning
    | CompletedUnfit
    | SharedDiffers
    | NoServiceAccount
    | Skipped
    | NotCalibrated
    | ForeignConfigMap
    | Overridden
    | Reverted
    | Suggested
    | JobExists
    | Refused
)


@dataclass(frozen=True)
class PlanReason:
    """Why a decision is what it is: its ``cause`` (fleet's decision, or the API server's answer
    that replaced it) and what applying it (or judging it in production) ``added``; put into
    words, once, by ``advisor.render.plan_reasons.plan_reason_text`` (``PlanDecision.reason``). The
    decision follows from it (``decision``): no one pairs a decision with a cause by hand."""

    cause: Cause
    added: tuple[Applied, ...] = ()

    def plus(self, part: Applied) -> PlanReason:
        return PlanReason(self.cause, (*self.added, part))

    @property
    def decision(self) -> Decision:
        """The decision this reason makes: its cause's, unless what was applied changed it."""
        decision = cause_decision(self.cause)
        for part in self.added:
            match part:
                case Retried():
                    # the failed Job is deleted and the spec calibrated again
                    decision = "calibrate"
                case NotWrittenBack():
                    # nothing was reverted: the decision is the one the revert replaced
                    match self.cause:
                        case Reverted(replaced=Fits() | Calibrate() as replaced):
                            decision = cause_decision(replaced)
                        case _:
                            pass
                case (
                    Waits()
                    | Created()
                    | RetryUnchecked()
                    | Stopped()
                    | WrittenBack()
                    | NotReverted()
                ):
                    pass
                case _:
                    assert_never(part)
        return decision


def cause_decision(cause: Cause) -> Decision:
    """What ``plan`` decides for a cause, before anything is applied."""
    match cause:
        case Calibrate():
            return "calibrate"
        case Fits():
            return "fits"
        case Running() | EarlierRunning() | JobExists():
            return "pending"
        case JobFailed() | CompletedUnfit() | Refused():
            return "failed"
        case (
            SharedDiffers()
            | NoServiceAccount()
            | Skipped()
            | NotCalibrated()
            | ForeignConfigMap()
            | Overridden()
        ):
            return "skipped"
        case Reverted():
            return "revert"
        case Suggested():
            return "suggested"
        case _:
            assert_never(cause)


class PlanResult(StrictModel):
    """Every opted-in workload container of a namespace (or of every opted-in namespace) with its
    decision (``plan``)."""

    decisions: list[PlanDecision] = Field(default_factory=list)

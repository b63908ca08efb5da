"""A plan's decision follows from its reason: the cause decides it, and only a retry
(calibrate again) or a revert not written (the decision it replaced) changes it afterwards."""

from __future__ import annotations

from typing import get_args

from advisor.models import Decision, Production, WorkloadKind, WorkloadRef
from advisor.models.plan import (
    Applied,
    Calibrate,
    Cause,
    CompletedUnfit,
    ConsumerVerdict,
    Created,
    EarlierRunning,
    Fits,
    ForeignConfigMap,
    JobExists,
    JobFailed,
    NoAdvice,
    NoServiceAccount,
    NotCalibrated,
    NotReverted,
    NotWrittenBack,
    Overridden,
    PlanReason,
    Refused,
    Retried,
    RetryUnchecked,
    Reverted,
    Running,
    SharedDiffers,
    Skipped,
    Stopped,
    Suggested,
    Waits,
    WrittenBack,
    cause_decision,
)

WEB = WorkloadRef.parse("deployment/web")
WORSE = ConsumerVerdict(WEB, "server", Production(verdict="regressed", reason="p99 up"))
FITS = Fits(4, 2, "advice", "limit", 2.0, False, "any pool", "latency")
CALIBRATE = Calibrate((NoAdvice("advice"),))

#: one cause of every kind, with the decision it makes
DECISIONS: dict[Cause, Decision] = {
    CALIBRATE: "calibrate",
    FITS: "fits",
    Running("j"): "pending",
    EarlierRunning("j", (NoAdvice("advice"),)): "pending",
    JobExists("j"): "pending",
    JobFailed("j", "exit 4"): "failed",
    CompletedUnfit("j", (NoAdvice("advice"),)): "failed",
    Refused("forbidden"): "failed",
    SharedDiffers("advice", WEB, (NoAdvice("advice"),)): "skipped",
    NoServiceAccount("ml", "tfta", PlanReason(CALIBRATE)): "skipped",
    Skipped("no container"): "skipped",
    NotCalibrated(WorkloadKind.POD): "skipped",
    ForeignConfigMap("theirs"): "skipped",
    Overridden(()): "skipped",
    Reverted((WORSE,), "intra=4 inter=2", FITS): "revert",
    Suggested(0.5, "24h", 0.25): "suggested",
}


def test_every_cause_makes_its_decision() -> None:
    assert {type(cause) for cause in DECISIONS} == set(get_args(Cause))
    for cause, decision in DECISIONS.items():
        assert cause_decision(cause) == decision, cause
        assert PlanReason(cause).decision == decision, cause


def test_what_is_applied_keeps_the_decision_but_a_retry_and_a_revert_not_written() -> None:
    kept: tuple[Applied, ...] = (
        Waits(1, "pool", 1),
        Created("j"),
        RetryUnchecked(),
        Stopped(),
        WrittenBack(),
        NotReverted((WORSE,)),
    )
    for part in kept:
        assert PlanReason(CALIBRATE, (part,)).decision == "calibrate", part
        assert PlanReason(FITS, (part,)).decision == "fits", part
    # --retry-failed: a failed calibration is calibrated again (and stays so, created or not)
    failed = PlanReason(JobFailed("j", "exit 4"))
    assert failed.decision == "failed"
    assert failed.plus(Retried("j")).decision == "calibrate"
    assert failed.plus(Retried("j")).plus(RetryUnchecked()).decision == "calibrate"
    # a revert that was not written leaves the decision it replaced
    for replaced, decision in ((FITS, "fits"), (CALIBRATE, "calibrate")):
        reverted = PlanReason(Reverted((WORSE,), "intra=4 inter=2", replaced))
        assert reverted.decision == "revert"
        assert reverted.plus(WrittenBack()).decision == "revert"
        assert reverted.plus(NotWrittenBack()).decision == decision
        assert reverted.plus(NotWrittenBack(refused="forbidden")).decision == decision

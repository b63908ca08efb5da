"""``plan --retry-failed``'s decision: which failed decisions are calibrated again, and which Job
goes first."""

from __future__ import annotations

from advisor.fleet.decide import Planned
from advisor.fleet.retry import retry_failed
from advisor.models.plan import PlanReason, Retried
from advisor.render.plan_reasons import plan_reason_text
from tests.unit.fleet.test_decide import _job, deployment, only, plan

FAILED = {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}
COMPLETE = {"conditions": [{"type": "Complete", "status": "True"}]}


def first(name: str = "web") -> Planned:
    return only(plan([deployment(name, limits={"cpu": "1"})]))


def test_a_failed_job_of_the_current_spec_is_calibrated_again_after_its_deletion() -> None:
    planned = first()
    failed_job = _job(planned, **FAILED)
    decided = plan([deployment(limits={"cpu": "1"})], jobs=[failed_job])
    assert only(decided).decision == "failed"
    out, to_delete = retry_failed(decided, [failed_job])
    (item,) = out
    assert item.decision == "calibrate"
    assert item.job is not None and item.job.name == failed_job.name
    assert item.reason == PlanReason(only(decided).reason.cause, (Retried(failed_job.name),))
    reason = plan_reason_text(item.reason)
    assert "DeadlineExceeded" in reason  # why it failed stays said
    assert f"retried: Job {failed_job.name} is deleted and created again" in reason
    assert to_delete == {(failed_job.namespace, failed_job.name): failed_job}


def test_a_completed_job_whose_advice_does_not_fit_is_retried_too() -> None:
    planned = first()
    done = _job(planned, **COMPLETE)
    decided = plan([deployment(limits={"cpu": "1"})], jobs=[done])
    assert only(decided).decision == "failed"
    out, to_delete = retry_failed(decided, [done])
    assert only(out).decision == "calibrate" and set(to_delete) == {(done.namespace, done.name)}


def test_running_jobs_other_specs_and_other_decisions_are_left_alone() -> None:
    planned = first()
    running = _job(planned, active=1)
    decided = plan([deployment(limits={"cpu": "1"})], jobs=[running])
    assert only(decided).decision == "pending"
    assert retry_failed(decided, [running]) == (decided, {})
    # a failed Job of an earlier spec (another CPU limit) does not block the new spec at all
    old = _job(planned, **FAILED)
    decided = plan([deployment(limits={"cpu": "2"})], jobs=[old])
    assert only(decided).decision == "calibrate"
    assert retry_failed(decided, [old]) == (decided, {})
    # another workload's failed Job is not this one's
    other = _job(first("other"), **FAILED)
    decided = plan([deployment(limits={"cpu": "1"})], jobs=[other])
    assert retry_failed(decided, [other]) == (decided, {})

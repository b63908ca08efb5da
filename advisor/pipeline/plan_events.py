"""The Events ``plan --apply`` records on each workload it acted on, so ``kubectl describe
deployment`` tells the story: CalibrationStarted (Normal) when it created a Job,
CalibrationRefused (Warning) when the API server refused the Job, CalibrationFailed (Warning)
when the Job of the current spec failed, AdviceReverted (Warning) when it wrote the previous
advice back, with the production figures that decided it (on each opted-in workload reading the
advice).

A failed Job is reported once: its Event is named after the Job, so the next plan's create of it
is 409 AlreadyExists (while the API server keeps Events: its event TTL, an hour by default; a
planner scheduled more often than that reports a failed Job once per TTL, a nightly one once, as
the failed Job's own TTL of a day ends before the second night's plan sees it again). Started and
refused are each that plan's own act, named afresh.

An Event that cannot be written (a Role without ``create events``) is a warning line: the plan
itself stands.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from advisor.errors import AdvisorError, ClusterUnreachableError, ForbiddenError
from advisor.fleet.decide import Planned
from advisor.fleet.jobs import PlannedJob
from advisor.fleet.retry import decision_key, job_key
from advisor.models import WorkloadKind, WorkloadRef
from advisor.models.plan import WrittenBack
from advisor.render.plan_reasons import plan_reason_text, revert_event_text

if TYPE_CHECKING:
    from advisor.cluster import Connection, RetryPolicy
    from advisor.cluster.events import EventType, WorkloadEvent

log = logging.getLogger(__name__)


def applied_events(
    attempted: Iterable[Planned],
    failed_jobs: Iterable[Planned],
    *,
    reverted: Iterable[Planned] = (),
) -> list[WorkloadEvent]:
    """The Events for the decisions whose advice was written back (among ``reverted``), whose
    Job the plan tried to create (as it went) and for those whose current spec's Job failed."""
    events: list[WorkloadEvent] = []
    for item in reverted:
        written = any(isinstance(part, WrittenBack) for part in item.reason.added)
        if item.decision == "revert" and written:
            text = revert_event_text(item.reason)
            events += _event(item, "AdviceReverted", "Warning", message=text)
    for after in attempted:
        if after.decision == "calibrate":
            events += _event(after, "CalibrationStarted", "Normal")
        elif after.decision == "failed":
            events += _event(after, "CalibrationRefused", "Warning")
    for item in failed_jobs:
        assert item.job is not None
        events += _event(item, "CalibrationFailed", "Warning", f"{item.job.name}.failed")
    return events


def failed_calibrations(planned: Iterable[Planned], jobs: Iterable[PlannedJob]) -> list[Planned]:
    """The decisions ``failed`` because the Job of their current spec failed."""
    failed = {job_key(job) for job in jobs if job.state == "failed"}
    return [item for item in planned if item.decision == "failed" and decision_key(item) in failed]


def record_events(
    connection: Connection, events: list[WorkloadEvent], *, now: datetime, policy: RetryPolicy
) -> None:
    """Create each Event; one that cannot be written is a warning line (and when the Role may
    not create events, or the API server cannot be reached, the rest are not tried)."""
    from advisor.cluster.events import record_event

    for event in events:
        try:
            record_event(connection, event, now=now, policy=policy)
        except (ForbiddenError, ClusterUnreachableError) as exc:
            log.warning("no Events recorded: %s", exc)
            return
        except AdvisorError as exc:
            log.warning("Event %s on %s not recorded: %s", event.reason, _ref(event), exc)


def _event(
    item: Planned,
    reason: str,
    kind: EventType,
    name: str | None = None,
    *,
    message: str | None = None,
) -> list[WorkloadEvent]:
    """The Event about ``item``'s workload, which its Job's ownerReference names (with its uid);
    none when the Job has no owner to name."""
    from advisor.cluster.events import WorkloadEvent

    if item.job is None:
        return []
    meta = item.job.manifest.get("metadata") or {}
    owners = meta.get("ownerReferences") or []
    if not owners or not meta.get("namespace"):
        return []
    owner = owners[0]
    involved = {
        "apiVersion": str(owner["apiVersion"]),
        "kind": str(owner["kind"]),
        "name": str(owner["name"]),
        "namespace": str(meta["namespace"]),
        "uid": str(owner["uid"]),
    }
    container = f" (container {item.container})" if item.container else ""
    said = f"{message or plan_reason_text(item.reason)}{container}"
    return [WorkloadEvent(involved, reason, said, kind, name)]


def _ref(event: WorkloadEvent) -> WorkloadRef:
    return WorkloadRef(WorkloadKind(event.involved["kind"]), event.involved["name"])

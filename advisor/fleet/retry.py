"""``plan --retry-failed``: a failed calibration of the current spec is tried again now.

Without it a failed Job blocks its spec until the Job's TTL removes it (a day), so a broken spec
is not retried every night. With it, each such ``failed`` decision becomes ``calibrate`` again:
the Job of the same name (it carries the spec's hash) must go first, and the planner deletes it
before creating the new one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from advisor.fleet.decide import Planned, with_reason
from advisor.fleet.jobs import PlannedJob


def retry_failed(
    planned: Sequence[Planned], jobs: Iterable[PlannedJob]
) -> tuple[list[Planned], dict[str, PlannedJob]]:
    """(the decisions, each failed calibration of the current spec turned ``calibrate``; the
    failed Jobs to delete first, by name). A failure that is not a finished Job of the current
    spec (a refusal, a skipped workload) is left as it is."""
    finished = {
        (job.workload, job.container, job.name): job for job in jobs if job.state != "running"
    }
    out: list[Planned] = []
    to_delete: dict[str, PlannedJob] = {}
    for item in planned:
        decision = item.decision
        failed = None
        if item.verdict == "failed" and item.job is not None:
            failed = finished.get((decision.workload, decision.container or "", item.job.name))
        if failed is None:
            out.append(item)
            continue
        to_delete[failed.name] = failed
        out.append(
            with_reason(
                item,
                reason=f"{decision.reason}; retried: Job {failed.name} is deleted and created "
                "again",
                verdict="calibrate",
            )
        )
    return out, to_delete

"""``plan --retry-failed``: a failed calibration of the current spec is tried again now.

Without it a failed Job blocks its spec until the Job's TTL removes it (a day), so a broken spec
is not retried every night. With it, each such ``failed`` decision becomes ``calibrate`` again:
the Job of the same name (it carries the spec's hash) must go first, and the planner deletes it
before creating the new one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from advisor.fleet.decide import Planned, applying
from advisor.fleet.jobs import PlannedJob
from advisor.models import WorkloadRef
from advisor.models.plan import Retried

#: a calibration Job as a decision names it: namespace, workload, container, Job name
JobKey = tuple[str, WorkloadRef | None, str, str]


def job_key(job: PlannedJob) -> JobKey:
    return (job.namespace, job.workload, job.container, job.name)


def decision_key(item: Planned) -> JobKey | None:
    """The key of the Job of ``item``'s current spec (None: it has none)."""
    if item.job is None:
        return None
    namespace = item.namespace or str(item.job.manifest["metadata"]["namespace"])
    return (namespace, item.workload, item.container or "", item.job.name)


def retry_failed(
    planned: Sequence[Planned], jobs: Iterable[PlannedJob]
) -> tuple[list[Planned], dict[tuple[str, str], PlannedJob]]:
    """(the decisions, each failed calibration of the current spec turned ``calibrate``; the
    failed Jobs to delete first, by namespace and name). A failure that is not a finished Job of
    the current spec (a refusal, a skipped workload) is left as it is."""
    finished = {job_key(job): job for job in jobs if job.state != "running"}
    out: list[Planned] = []
    to_delete: dict[tuple[str, str], PlannedJob] = {}
    for item in planned:
        key = decision_key(item) if item.decision == "failed" else None
        failed = finished.get(key) if key is not None else None
        if failed is None:
            out.append(item)
            continue
        to_delete[(failed.namespace, failed.name)] = failed
        out.append(applying(item, Retried(failed.name)))
    return out, to_delete

"""Where a calibration Job stands, read from its status as the Job controller writes it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from advisor.errors import EXIT_CODES, one_line
from advisor.fleet.naming import ADVISOR_CONTAINER, COPY_CONTAINER
from advisor.keys import (
    ANN_CONFIGMAP,
    ANN_CONTAINER,
    ANN_JOB_POOL,
    ANN_JOB_WORKLOAD,
    LABEL_POOL_HASH,
    LABEL_SPEC_HASH,
)
from advisor.models import JobState, WorkloadRef
from advisor.models.kube import JobCondition, KubeJob

#: the Job controller's podFailurePolicy message names the container and its exit code:
#: "Container advisor for pod ml/x-abcde failed with exit code 4 matching FailJob rule at index 0"
_CONTAINER_EXIT = re.compile(
    r"Container (?P<container>\S+) for pod \S+ failed with exit code (?P<code>\d+)"
)
_EXIT_KINDS = {code: kind for kind, code in EXIT_CODES.items()}


@dataclass(frozen=True)
class PlannedJob:
    """A calibration Job the planner created earlier, as listed."""

    name: str
    namespace: str
    #: None: its annotation names no workload
    workload: WorkloadRef | None
    container: str
    configmap: str
    spec_hash: str
    pool: str
    pool_hash: str
    state: JobState
    #: why it failed (empty otherwise)
    reason: str
    created: datetime | None


def planned_job(job: KubeJob) -> PlannedJob:
    """The listed Job as the planner reads it (labels and annotations it set, its state)."""
    meta = job.metadata
    labels, annotations = meta.labels, meta.annotations
    state, reason = job_state(job)
    return PlannedJob(
        name=meta.name or "?",
        namespace=meta.namespace,
        workload=WorkloadRef.read(str(annotations.get(ANN_JOB_WORKLOAD, ""))),
        container=str(annotations.get(ANN_CONTAINER, "")),
        configmap=str(annotations.get(ANN_CONFIGMAP, "")),
        spec_hash=str(labels.get(LABEL_SPEC_HASH, "")),
        pool=str(annotations.get(ANN_JOB_POOL, "")),
        pool_hash=str(labels.get(LABEL_POOL_HASH, "")),
        state=state,
        reason=reason,
        created=meta.created,
    )


def job_state(job: KubeJob) -> tuple[JobState, str]:
    """running, complete or failed, with the failure's reason in one line.

    A Job is finished when its Complete or Failed condition is True; from Kubernetes 1.31 the
    controller first sets SuccessCriteriaMet or FailureTarget while the last pods terminate,
    which already says how it ends.
    """
    for condition in job.conditions:
        if condition.status != "True":
            continue
        kind = condition.type
        if kind in ("Complete", "SuccessCriteriaMet"):
            return "complete", ""
        if kind in ("Failed", "FailureTarget"):
            return "failed", _failure(condition, job.metadata.name or "?")
    return "running", ""


def _failure(condition: JobCondition, job: str) -> str:
    reason = condition.reason or "Failed"
    message = condition.message
    text = f"{reason}: {message}" if message else reason
    match = _CONTAINER_EXIT.search(message)
    if match and match["container"] == COPY_CONTAINER:
        # the controller's message says no more than the exit code: cp's own words are its log
        return one_line(
            f"model copy failed: the serving image's cp exited with code {match['code']} "
            f"(kubectl logs job/{job} -c {COPY_CONTAINER} says why)"
        )
    if match and match["container"] == ADVISOR_CONTAINER:
        code = int(match["code"])
        if kind := _EXIT_KINDS.get(code):
            text += f" (exit {code}: {kind}; the Job's logs say more)"
    return one_line(text)

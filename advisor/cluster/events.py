"""Kubernetes Events about a workload (core/v1, which ``kubectl describe`` shows): what ``plan
--apply`` did about it, so its story is told where its owners look.

One create per Event. An Event given a name of its own is recorded once: a second create of that
name is 409 AlreadyExists, an outcome and not an error (the Event is there already, or was until
the API server's event TTL, an hour by default, expired it). Otherwise the name is the object's
and the time in hex nanoseconds, as client-go's recorder names Events.

Needs in the namespace: create on events (core).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from advisor.cluster.config import Connection
from advisor.cluster.http import Target, create, final_error
from advisor.cluster.planner_role import rule
from advisor.cluster.rest import Resource
from advisor.errors import one_line
from advisor.models.times import timestamp
from advisor.retry import RetryPolicy

#: who the Events say recorded them (``kubectl describe``'s From column)
REPORTING_COMPONENT = "tf-thread-advisor"
#: the longest message a new-style Event may carry; kept for the old style too
MESSAGE_LIMIT = 1024

EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True)
class WorkloadEvent:
    """One Event about a workload: ``involved`` is its reference (apiVersion, kind, name,
    namespace, uid); ``name`` None gives the Event a fresh name."""

    involved: dict[str, str]
    reason: str
    message: str
    type: EventType = "Normal"
    name: str | None = None


def event_manifest(event: WorkloadEvent, now: datetime) -> dict[str, Any]:
    """The core/v1 Event (the old style, with first and last timestamps and a count: what
    ``kubectl describe`` reads on every version)."""
    involved = event.involved
    stamp = timestamp(now)
    name = event.name or f"{involved['name']}.{int(now.timestamp() * 1e9):x}"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": involved["namespace"]},
        "involvedObject": dict(involved),
        "reason": event.reason,
        "message": one_line(event.message, MESSAGE_LIMIT),
        "type": event.type,
        "source": {"component": REPORTING_COMPONENT},
        "reportingComponent": REPORTING_COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def record_event(
    connection: Connection,
    event: WorkloadEvent,
    *,
    now: datetime,
    policy: RetryPolicy | None = None,
) -> bool:
    """Create the Event; False when one of its name is there already. ForbiddenError when the
    Role may not create events, ClusterRejectedError for any other refusal."""
    policy = policy or RetryPolicy()
    manifest = event_manifest(event, now)
    namespace = manifest["metadata"]["namespace"]
    attempt = f"create events/{manifest['metadata']['name']} in namespace {namespace}"
    resp = create(
        connection,
        policy,
        attempt,
        Resource("v1", "events"),
        namespace=namespace,
        body=manifest,
    )
    if resp.status in (200, 201, 202):
        return True
    if resp.status == 409 and resp.reason == "AlreadyExists":
        return False
    target = Target("events", namespace, rule("create", "events", ""))
    raise final_error(resp, "create", attempt, connection, target)

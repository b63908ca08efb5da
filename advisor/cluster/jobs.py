"""Creating and deleting ``plan``'s calibration Jobs (what it lists is ``plan_lists``).

Thin over the official client like the rest of this package: every call goes through
``http.request`` (bounded retries, one deadline per operation), every final answer becomes a typed
advisor error whose 403 names the Role rule that is missing (``planner_role.rule``). Creating a
Job is idempotent by name: a 409 AlreadyExists is an outcome, not an error, so a second ``plan
--apply`` (or two planners racing) creates nothing twice.

Needs in the namespace: create on jobs (batch); delete on jobs to retry a failed calibration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from advisor.cluster.config import Connection
from advisor.cluster.http import Target, create, final_error, namespace_missing, request
from advisor.cluster.planner_role import rule
from advisor.cluster.rest import Resource, send
from advisor.retry import Deadline, RetryPolicy

JOBS = Resource("batch/v1", "jobs")


@dataclass(frozen=True)
class CreateOutcome:
    """One Job create: ``created`` (stored; ``job`` is what the server stored), ``would
    create`` (a dry run the server validated and authorized; ``job`` is what it would store) or
    ``exists`` (the name is taken: a Job planned before, or by another planner); ``warnings``:
    what the API server warned about (Pod Security admission warns on a Job whose pods it would
    refuse)."""

    name: str
    action: Literal["created", "would create", "exists"]
    job: dict[str, Any] | None = None
    warnings: tuple[str, ...] = ()

    @property
    def created(self) -> bool:
        return self.action == "created"

    @property
    def already_exists(self) -> bool:
        return self.action == "exists"


def create_job(
    connection: Connection,
    namespace: str,
    manifest: dict[str, Any],
    *,
    dry_run: bool = False,
    policy: RetryPolicy | None = None,
) -> CreateOutcome:
    """Create the Job ``manifest`` in ``namespace`` (with ``dry_run``: validated and authorized
    by the server, not stored). A taken name is ``exists``; the authorizer's 403 is a
    ForbiddenError naming the rule; anything else the server refuses (a ResourceQuota's or an
    admission webhook's 403, 422 invalid, 400, a missing namespace) a ClusterRejectedError with
    the server's message. The server's warnings come with the outcome.

    Sent with ``fieldValidation=Strict``: a field the server does not know is refused, where by
    default it would be dropped and the Job would run without it."""
    policy = policy or RetryPolicy()
    name = str((manifest.get("metadata") or {}).get("name") or "")
    extra: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
    attempt = f"create jobs/{name} in namespace {namespace}" + (" (dry run)" if dry_run else "")
    resp = create(
        connection,
        policy,
        attempt,
        JOBS,
        namespace=namespace,
        body=manifest,
        field_validation="Strict",
        **extra,
    )
    if resp.status in (200, 201, 202):
        action: Literal["created", "would create"] = "would create" if dry_run else "created"
        return CreateOutcome(name, action, resp.body, resp.warnings)
    if resp.status == 409 and resp.reason == "AlreadyExists":
        return CreateOutcome(name, "exists", warnings=resp.warnings)
    target = Target("jobs", namespace, rule("create", "jobs", "batch"))
    raise final_error(resp, "create", attempt, connection, target)


def delete_job(
    connection: Connection, namespace: str, name: str, *, policy: RetryPolicy | None = None
) -> bool:
    """Delete the Job ``name`` and, in the background, its pods (batch/v1's default would
    orphan them); False when it was gone already. The name is free at once: a Job has no
    finalizer of its own."""
    policy = policy or RetryPolicy()
    attempt = f"delete jobs/{name} in namespace {namespace}"
    resp = request(
        connection,
        policy,
        Deadline(policy),
        attempt,
        lambda timeout: send(
            connection.api_client,
            "DELETE",
            JOBS.path(namespace, name),
            query={"propagationPolicy": "Background"},
            timeout=timeout,
        ),
    )
    if resp.status in (200, 202):
        return True
    if resp.status == 404 and not namespace_missing(resp):
        return False
    target = Target(f"jobs/{name}", namespace, rule("delete", "jobs", "batch"))
    raise final_error(resp, "delete", attempt, connection, target)

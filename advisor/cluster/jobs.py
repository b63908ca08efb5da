"""What ``plan`` reads and writes in one namespace: the opted-in Deployments and StatefulSets, the
ConfigMaps that may hold their advice, the calibration Jobs already there, and creating one.

Thin over the official client like the rest of this package: every call goes through
``http.request`` (bounded retries, one deadline per operation), lists are paged, every final
answer becomes a typed advisor error whose 403 names the Role rule that is missing. Creating a Job
is idempotent by name: a 409 AlreadyExists is an outcome, not an error, so a second ``plan
--apply`` (or two planners racing) creates nothing twice.

Needs in the namespace (deploy/components/fleet binds such a Role to the ServiceAccount
tf-thread-advisor-planner): get, list on deployments and statefulsets (apps); get, list on
configmaps; get, list, create on jobs (batch).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from advisor.cluster import listing
from advisor.cluster.config import Connection
from advisor.cluster.http import PAGE_SIZE, Target, final_error, list_all, list_method, request
from advisor.retry import Deadline, RetryPolicy

PLANNER_SERVICE_ACCOUNT = "tf-thread-advisor-planner"
PLANNER_RBAC = "deploy/components/fleet"
#: the kinds a planner calibrates, and their API group and resource
PLANNED_KINDS = {"Deployment": ("apps", "deployments"), "StatefulSet": ("apps", "statefulsets")}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CreateOutcome:
    """One Job create: ``created`` (stored; ``job`` is what the server stored), ``would
    create`` (a dry run the server validated and authorized; ``job`` is what it would store) or
    ``exists`` (the name is taken: a Job planned before, or by another planner)."""

    name: str
    action: Literal["created", "would create", "exists"]
    job: dict[str, Any] | None = None

    @property
    def created(self) -> bool:
        return self.action == "created"

    @property
    def already_exists(self) -> bool:
        return self.action == "exists"


def rule(verbs: str, resource: str, group: str) -> str:
    """What a 403 tells the user to grant: ``create jobs (batch)`` and where the Role is."""
    return (
        f"plan needs a Role allowing {verbs} {resource} ({group or 'core'}); {PLANNER_RBAC} "
        f"binds one to the ServiceAccount {PLANNER_SERVICE_ACCOUNT}"
    )


def list_jobs(
    connection: Connection,
    namespace: str,
    selector: str,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
) -> list[dict[str, Any]]:
    """The Jobs of ``namespace`` matching the label ``selector``, with apiVersion and kind."""
    from kubernetes import client

    policy = policy or RetryPolicy()
    items = list_all(
        connection,
        policy,
        Deadline(policy),
        f"list jobs in namespace {namespace}",
        list_method(client.BatchV1Api(connection.api_client), "Job"),
        namespace,
        target=Target("jobs", namespace, rule("list", "jobs", "batch")),
        page_size=page_size,
        label_selector=selector,
    )
    return [{"apiVersion": "batch/v1", "kind": "Job", **item} for item in items]


def list_workloads(
    connection: Connection,
    namespace: str,
    selector: str,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
) -> list[dict[str, Any]]:
    """The Deployments, then the StatefulSets, of ``namespace`` matching the label
    ``selector``, each with apiVersion and kind (a list's items have neither), within one
    deadline."""
    from kubernetes import client

    policy = policy or RetryPolicy()
    deadline = Deadline(policy)
    apps = client.AppsV1Api(connection.api_client)
    found: list[dict[str, Any]] = []
    for kind, (group, resource) in PLANNED_KINDS.items():
        items = list_all(
            connection,
            policy,
            deadline,
            f"list {resource} in namespace {namespace}",
            list_method(apps, kind),
            namespace,
            target=Target(f"{resource}.{group}", namespace, rule("list", resource, group)),
            page_size=page_size,
            label_selector=selector,
        )
        found += [{"apiVersion": f"{group}/v1", "kind": kind, **item} for item in items]
    return found


def list_configmaps(
    connection: Connection,
    namespace: str,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
) -> list[dict[str, Any]]:
    """Every ConfigMap of ``namespace`` as a full object (the planner reads the advice in
    them, and needs to see a name taken by a ConfigMap that is not advice)."""
    return listing.list_configmaps(
        connection, namespace, policy, rule=rule("list", "configmaps", ""), page_size=page_size
    )


def create_job(
    connection: Connection,
    namespace: str,
    manifest: dict[str, Any],
    *,
    dry_run: bool = False,
    policy: RetryPolicy | None = None,
) -> CreateOutcome:
    """Create the Job ``manifest`` in ``namespace`` (with ``dry_run``: validated and authorized
    by the server, not stored). A taken name is ``exists``; a 403 is a ForbiddenError naming the
    rule, anything else the server refuses (422 invalid, 400, a missing namespace) a
    ClusterRejectedError with the server's message.

    Sent with ``fieldValidation=Strict``: a field the server does not know is refused, where by
    default it would be dropped and the Job would run without it."""
    from kubernetes import client

    policy = policy or RetryPolicy()
    name = str((manifest.get("metadata") or {}).get("name") or "")
    create = _unvalidated_create(client.BatchV1Api(connection.api_client))
    extra: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
    attempt = f"create jobs/{name} in namespace {namespace}" + (" (dry run)" if dry_run else "")
    resp = request(
        connection,
        policy,
        Deadline(policy),
        attempt,
        lambda timeout: create(
            namespace,
            manifest,
            field_validation="Strict",
            _preload_content=False,
            _request_timeout=timeout,
            **extra,
        ),
    )
    warning = resp.headers.get("Warning")
    if warning:
        log.warning("%s: the API server warns: %s", attempt, warning)
    if resp.status in (200, 201, 202):
        return CreateOutcome(name, "would create" if dry_run else "created", resp.body)
    if resp.status == 409 and resp.reason == "AlreadyExists":
        return CreateOutcome(name, "exists")
    target = Target("jobs", namespace, rule("create", "jobs", "batch"))
    raise final_error(resp, "create", attempt, connection, target)


def _unvalidated_create(batch: Any) -> Callable[..., Any]:
    """``create_namespaced_job`` without the client's own check of the body: recent clients
    validate a dict against their generated models before sending it, and refuse what their
    models do not know (a field added in a newer Kubernetes than the client, copied from the
    workload's pod template). The API server is the judge of a Job: its 422 names the field."""
    method = type(batch).create_namespaced_job
    unchecked = getattr(method, "__wrapped__", None)
    if unchecked is None:  # an older client sends a dict as it is
        bound: Callable[..., Any] = batch.create_namespaced_job
        return bound
    return functools.partial(unchecked, batch)

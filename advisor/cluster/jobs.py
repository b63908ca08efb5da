"""What ``plan`` reads and writes in one namespace: the opted-in Deployments and StatefulSets, the
ConfigMaps that may hold their advice, the calibration Jobs already there, and creating one.

Thin over the official client like the rest of this package: every call goes through
``http.request`` (bounded retries, one deadline per operation), lists are paged, every final
answer becomes a typed advisor error whose 403 names the Role rule that is missing. Creating a Job
is idempotent by name: a 409 AlreadyExists is an outcome, not an error, so a second ``plan
--apply`` (or two planners racing) creates nothing twice.

Needs in the namespace (deploy/components/fleet binds such a Role to the ServiceAccount
tf-thread-advisor-planner): get, list on deployments and statefulsets (apps); get, list on
configmaps; get, list, create on jobs (batch); delete on jobs to retry a failed calibration.
``plan --all-namespaces`` lists the workloads and Jobs of every namespace at once (a namespace of
None), which only a ClusterRole allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from advisor.cluster import listing
from advisor.cluster.config import Connection
from advisor.cluster.http import (
    PAGE_SIZE,
    Target,
    create,
    final_error,
    list_all,
    list_method,
    namespace_missing,
    request,
)
from advisor.models import CALIBRATED_KINDS
from advisor.retry import Deadline, RetryPolicy

PLANNER_SERVICE_ACCOUNT = "tf-thread-advisor-planner"
PLANNER_RBAC = "deploy/components/fleet"


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


def rule(verbs: str, resource: str, group: str, *, cluster: bool = False) -> str:
    """What a 403 tells the user to grant: ``create jobs (batch)`` and where the Role is (with
    ``cluster``: the ClusterRole ``plan --all-namespaces`` needs)."""
    if cluster:
        return (
            f"plan --all-namespaces needs a ClusterRole (bound with a ClusterRoleBinding) "
            f"allowing {verbs} {resource} ({group or 'core'}); the chart's planner.scope=cluster "
            "grants one to its planner"
        )
    return (
        f"plan needs a Role allowing {verbs} {resource} ({group or 'core'}); {PLANNER_RBAC} "
        f"binds one to the ServiceAccount {PLANNER_SERVICE_ACCOUNT}"
    )


def _where(namespace: str | None) -> str:
    return f"namespace {namespace}" if namespace else "all namespaces"


def list_jobs(
    connection: Connection,
    namespace: str | None,
    selector: str,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
) -> list[dict[str, Any]]:
    """The Jobs of ``namespace`` (None: of every namespace) matching the label ``selector``,
    with apiVersion and kind."""
    from kubernetes import client

    policy = policy or RetryPolicy()
    everywhere = namespace is None
    items = list_all(
        connection,
        policy,
        Deadline(policy),
        f"list jobs in {_where(namespace)}",
        list_method(client.BatchV1Api(connection.api_client), "Job", everywhere),
        *((namespace,) if namespace else ()),
        target=Target(
            "jobs", namespace or "(all)", rule("list", "jobs", "batch", cluster=everywhere)
        ),
        page_size=page_size,
        label_selector=selector,
    )
    return [{"apiVersion": "batch/v1", "kind": "Job", **item} for item in items]


def list_workloads(
    connection: Connection,
    namespace: str | None,
    selector: str,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
) -> list[dict[str, Any]]:
    """The Deployments, then the StatefulSets, of ``namespace`` (None: of every namespace, one
    paged list each) matching the label ``selector``, each with apiVersion and kind (a list's
    items have neither), within one deadline."""
    from kubernetes import client

    policy = policy or RetryPolicy()
    deadline = Deadline(policy)
    apps = client.AppsV1Api(connection.api_client)
    found: list[dict[str, Any]] = []
    everywhere = namespace is None
    for kind in CALIBRATED_KINDS:
        group, resource = kind.group, kind.resource
        items = list_all(
            connection,
            policy,
            deadline,
            f"list {resource} in {_where(namespace)}",
            list_method(apps, kind, everywhere),
            *((namespace,) if namespace else ()),
            target=Target(
                f"{resource}.{group}",
                namespace or "(all)",
                rule("list", resource, group, cluster=everywhere),
            ),
            page_size=page_size,
            label_selector=selector,
        )
        found += [{"apiVersion": kind.api_version, "kind": kind.value, **item} for item in items]
    return found


def list_configmaps(
    connection: Connection,
    namespace: str,
    policy: RetryPolicy | None = None,
    *,
    page_size: int = PAGE_SIZE,
    cluster: bool = False,
) -> list[dict[str, Any]]:
    """Every ConfigMap of ``namespace`` as a full object (the planner reads the advice in
    them, and needs to see a name taken by a ConfigMap that is not advice); ``cluster``: asked
    by ``plan --all-namespaces``, whose ClusterRole allows it."""
    return listing.list_core(
        connection,
        "ConfigMap",
        namespace,
        policy,
        rule=rule("list", "configmaps", "", cluster=cluster),
        page_size=page_size,
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
    by the server, not stored). A taken name is ``exists``; the authorizer's 403 is a
    ForbiddenError naming the rule; anything else the server refuses (a ResourceQuota's or an
    admission webhook's 403, 422 invalid, 400, a missing namespace) a ClusterRejectedError with
    the server's message. The server's warnings come with the outcome.

    Sent with ``fieldValidation=Strict``: a field the server does not know is refused, where by
    default it would be dropped and the Job would run without it."""
    from kubernetes import client

    policy = policy or RetryPolicy()
    name = str((manifest.get("metadata") or {}).get("name") or "")
    extra: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
    attempt = f"create jobs/{name} in namespace {namespace}" + (" (dry run)" if dry_run else "")
    batch = client.BatchV1Api(connection.api_client)
    resp = create(
        connection,
        policy,
        attempt,
        (batch, "create_namespaced_job"),
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
    from kubernetes import client

    policy = policy or RetryPolicy()
    batch = client.BatchV1Api(connection.api_client)
    attempt = f"delete jobs/{name} in namespace {namespace}"
    resp = request(
        connection,
        policy,
        Deadline(policy),
        attempt,
        lambda timeout: batch.delete_namespaced_job(
            name,
            namespace,
            propagation_policy="Background",
            _preload_content=False,
            _request_timeout=timeout,
        ),
    )
    if resp.status in (200, 202):
        return True
    if resp.status == 404 and not namespace_missing(resp):
        return False
    target = Target(f"jobs/{name}", namespace, rule("delete", "jobs", "batch"))
    raise final_error(resp, "delete", attempt, connection, target)

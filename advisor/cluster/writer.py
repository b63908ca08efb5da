"""Reading and server-side-applying the advice ConfigMap, with bounded retries.

The writer only GETs and PATCHes (server-side apply) one named ConfigMap: that is what lets the
Role restrict every verb, create included, to that one name (deploy/rbac.yaml explains why). The
ConfigMap is written exactly once, after the whole Recommendation validated; a failure before or
during that write leaves the stored object as it was (an apply either happens whole or not at all).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from advisor.cluster.config import Connection
from advisor.cluster.http import Response, Target, final_error, request
from advisor.cluster.rest import Resource, send
from advisor.errors import (
    AdviceKeptError,
    AdvisorError,
    ConflictError,
    InvalidAdviceError,
    Opt,
)
from advisor.keys import APP_NAME, FIELD_MANAGER, LABEL_MANAGED_BY
from advisor.recommend import keep_data_changed_at, parse_configmap
from advisor.recommend.previous import keep_previous
from advisor.retry import Conflict, Deadline, RetryPolicy, until_no_conflict

APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
CONFIGMAPS = Resource("v1", "configmaps")
ROLE_HINT = "Role tf-thread-advisor (deploy/rbac.yaml)"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PublishOutcome:
    action: Literal["created", "updated", "unchanged"]
    resource_version: str | None
    conflicts_retried: int = 0


class ConfigMapWriter:
    """One ConfigMap in one namespace, as the advisor's ServiceAccount sees it."""

    #: what a 403 tells the user to grant (a subclass with other verbs names its own Role)
    role_hint = ROLE_HINT
    required_verbs = "get, patch, create"

    def __init__(
        self,
        connection: Connection,
        name: str,
        namespace: str,
        *,
        policy: RetryPolicy | None = None,
        field_manager: str = FIELD_MANAGER,
    ) -> None:
        self.connection = connection
        self.name = name
        self.namespace = namespace
        self.policy = policy or RetryPolicy()
        self.field_manager = field_manager

    @property
    def path(self) -> str:
        return CONFIGMAPS.path(self.namespace, self.name)

    @property
    def where(self) -> str:
        return f"configmaps/{self.name} in namespace {self.namespace}"

    # ---------------------------------------------------------------------------------------------
    # public operations

    def read(self, deadline: Deadline | None = None) -> dict[str, Any] | None:
        """The stored ConfigMap, or None when there is none."""
        deadline = deadline or Deadline(self.policy)
        resp = self._request(
            "get",
            deadline,
            lambda timeout: send(self.connection.api_client, "GET", self.path, timeout=timeout),
        )
        if resp.status == 200:
            return resp.body
        if resp.status == 404:
            return None
        raise self._error("get", resp)

    def preflight(self, *, budget_s: float, force: bool) -> dict[str, Any] | None:
        """Before the sweep: prove the namespace exists and the Role allows the write (a
        server-side dry-run apply), and that the budget guard will not refuse the result.
        Returns the stored ConfigMap (or None)."""
        deadline = Deadline(self.policy)
        existing = self.read(deadline)
        self._guard(existing, budget_s=budget_s, force=force)
        probe_body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {LABEL_MANAGED_BY: APP_NAME},
            },
        }
        resp = self._apply(probe_body, deadline, dry_run=True)
        if resp.status not in (200, 201):
            raise self._error("patch", resp, dry_run=True)
        return existing

    def publish(
        self, configmap: Mapping[str, Any], *, budget_s: float, force: bool
    ) -> PublishOutcome:
        """Apply ``configmap`` (already validated) with optimistic concurrency: the apply carries
        the resourceVersion just read, so a concurrent change gives 409 and a re-read, bounded by
        ``policy.max_conflicts`` and ``policy.total_s``. Unchanged data keeps the stored
        data-changed time (``keep_data_changed_at``); changed data keeps the replaced advice
        (``keep_previous``)."""
        deadline = Deadline(self.policy)

        def attempt(conflicts: int) -> PublishOutcome | Conflict:
            existing = self.read(deadline)
            self._guard(existing, budget_s=budget_s, force=force)
            body = keep_previous(keep_data_changed_at(configmap, existing), existing)
            metadata = body.setdefault("metadata", {})
            metadata["namespace"] = self.namespace
            old_rv = None
            if existing is not None:
                old_rv = existing.get("metadata", {}).get("resourceVersion")
                metadata["resourceVersion"] = old_rv
            # Take fields over from other managers only from an object the guard has seen (or
            # under --force): one created by someone else since the read answers 409, and the
            # re-read shows it to the guard instead of being overwritten unseen.
            take_over = existing is not None or force
            resp = self._apply(body, deadline, dry_run=False, take_over=take_over)
            if resp.status in (200, 201):
                new_rv = (resp.body or {}).get("metadata", {}).get("resourceVersion")
                action: Literal["created", "updated", "unchanged"] = (
                    "created"
                    if existing is None
                    else "unchanged"
                    if new_rv == old_rv
                    else "updated"
                )
                return PublishOutcome(action, new_rv, conflicts)
            if resp.status != 409:
                raise self._error("patch", resp)
            return Conflict(resp.message or resp.reason or "HTTP 409")

        return until_no_conflict(
            attempt,
            deadline=deadline,
            give_up=lambda conflicts, last: ConflictError(
                f"{self.where} kept changing while writing ({conflicts} conflicts, last: "
                f"{last.message}); nothing was written"
            ),
            on_conflict=lambda: log.warning(
                "%s changed since it was read (409); re-reading", self.where
            ),
        )

    # ---------------------------------------------------------------------------------------------
    # the guard

    def _guard(self, existing: dict[str, Any] | None, *, budget_s: float, force: bool) -> None:
        """Keep a stored advice that was measured longer (or is not ours) unless ``force``."""
        if existing is None or force:
            return
        try:
            parsed = parse_configmap(existing, self.where)
        except InvalidAdviceError as exc:
            labels = existing.get("metadata", {}).get("labels") or {}
            if labels.get(LABEL_MANAGED_BY) != APP_NAME:
                raise AdviceKeptError(
                    f"{self.where} exists and was not written by tf-thread-advisor; kept it (pass ",
                    Opt("force=True"),
                    " to replace it)",
                ) from None
            log.warning("replacing the stored advice, which does not validate: %s", exc)
            return
        stored_budget = parsed.recommendation.provenance.budget_s
        if stored_budget > budget_s:
            raise AdviceKeptError(
                f"{self.where} holds advice measured with a {stored_budget:g}s budget, more than "
                f"this run's {budget_s:g}s; kept it (pass ",
                Opt("force=True"),
                " to replace it)",
            )

    # ---------------------------------------------------------------------------------------------
    # HTTP

    def _apply(
        self, body: dict[str, Any], deadline: Deadline, *, dry_run: bool, take_over: bool = True
    ) -> Response:
        query = {
            "dryRun": "All" if dry_run else None,
            "fieldManager": self.field_manager,
            "force": take_over,
        }
        return self._request(
            "patch",
            deadline,
            lambda timeout: send(
                self.connection.api_client,
                "PATCH",
                self.path,
                query=query,
                content_type=APPLY_CONTENT_TYPE,
                body=body,
                timeout=timeout,
            ),
        )

    def _request(self, verb: str, deadline: Deadline, call: Callable[[float], Any]) -> Response:
        return request(self.connection, self.policy, deadline, f"{verb} {self.where}", call)

    def _error(self, verb: str, resp: Response, *, dry_run: bool = False) -> AdvisorError:
        """The typed error for a final (non-retryable) answer."""
        attempt = f"{verb} {self.where}" + (" (dry run)" if dry_run else "")
        target = Target(
            f"configmaps/{self.name}",
            self.namespace,
            f"the {self.role_hint} bound to the advisor's ServiceAccount must allow verbs "
            f"{self.required_verbs} on configmaps with resourceNames [{self.name}] "
            f"in {self.namespace}",
        )
        return final_error(resp, verb, attempt, self.connection, target)

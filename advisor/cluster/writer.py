"""Reading and server-side-applying the advice ConfigMap, with bounded retries.

The writer only GETs and PATCHes (server-side apply) one named ConfigMap: that is what lets the
Role restrict every verb, create included, to that one name (deploy/rbac.yaml explains why). The
ConfigMap is written exactly once, after the whole Recommendation validated; a failure before or
during that write leaves the stored object as it was (an apply either happens whole or not at all).
"""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from advisor.cluster.config import Connection
from advisor.cluster.retry import Deadline, RetryPolicy, retry_after_seconds
from advisor.errors import (
    AdviceKeptError,
    AdvisorError,
    ClusterRejectedError,
    ClusterUnreachableError,
    ConflictError,
    ForbiddenError,
    InvalidAdviceError,
)
from advisor.recommend import (
    APP_NAME,
    LABEL_MANAGED_BY,
    parse_configmap,
)

FIELD_MANAGER = "tf-thread-advisor"
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
ROLE_HINT = "Role tf-thread-advisor (deploy/rbac.yaml)"
#: a retry is only started when at least this share of a request timeout is left
MIN_ATTEMPT_FRACTION = 0.25

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Response:
    status: int
    body: dict[str, Any] | None
    headers: Mapping[str, str]

    @property
    def message(self) -> str:
        if self.body and isinstance(self.body.get("message"), str):
            return str(self.body["message"])
        return ""

    @property
    def reason(self) -> str:
        if self.body and isinstance(self.body.get("reason"), str):
            return str(self.body["reason"])
        return ""


@dataclass(frozen=True)
class PublishOutcome:
    action: Literal["created", "updated", "unchanged"]
    resource_version: str | None
    conflicts_retried: int = 0


def _json(data: bytes | str | None) -> dict[str, Any] | None:
    if not data:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


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
        from kubernetes import client

        self.connection = connection
        self.name = name
        self.namespace = namespace
        self.policy = policy or RetryPolicy()
        self.field_manager = field_manager
        self._core = client.CoreV1Api(connection.api_client)

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
            lambda timeout: self._core.read_namespaced_config_map(
                self.name, self.namespace, _preload_content=False, _request_timeout=timeout
            ),
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
        ``policy.max_conflicts`` and ``policy.total_s``."""
        deadline = Deadline(self.policy)
        conflicts = 0
        while True:
            existing = self.read(deadline)
            self._guard(existing, budget_s=budget_s, force=force)
            body = copy.deepcopy(dict(configmap))
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
            conflicts += 1
            delay = self.policy.backoff(conflicts - 1)
            if conflicts > self.policy.max_conflicts or delay >= deadline.remaining():
                raise ConflictError(
                    f"{self.where} kept changing while writing ({conflicts} conflicts, last: "
                    f"{resp.message or resp.reason or 'HTTP 409'}); nothing was written"
                )
            log.warning("%s changed since it was read (409); re-reading", self.where)
            self.policy.sleep(delay)

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
                    f"{self.where} exists and was not written by tf-thread-advisor; kept it "
                    "(pass --force to replace it)"
                ) from None
            log.warning("replacing the stored advice, which does not validate: %s", exc)
            return
        stored_budget = parsed.recommendation.provenance.budget_s
        if stored_budget > budget_s:
            raise AdviceKeptError(
                f"{self.where} holds advice measured with a {stored_budget:g}s budget, more than "
                f"this run's {budget_s:g}s; kept it (pass --force to replace it)"
            )

    # ---------------------------------------------------------------------------------------------
    # HTTP

    def _apply(
        self, body: dict[str, Any], deadline: Deadline, *, dry_run: bool, take_over: bool = True
    ) -> Response:
        extra: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
        return self._request(
            "patch",
            deadline,
            lambda timeout: self._core.patch_namespaced_config_map(
                self.name,
                self.namespace,
                body,
                field_manager=self.field_manager,
                force=take_over,
                _content_type=APPLY_CONTENT_TYPE,
                _preload_content=False,
                _request_timeout=timeout,
                **extra,
            ),
        )

    def _request(self, verb: str, deadline: Deadline, call: Callable[[float], Any]) -> Response:
        """One API call, retried on connection errors, timeouts, 429 and 5xx until the deadline.
        Any other answer (2xx, 4xx) is returned for the caller to judge."""
        import urllib3
        from kubernetes.client.exceptions import ApiException

        attempt = 0
        while True:
            timeout = deadline.request_timeout()
            delay: float | None = None
            try:
                raw = call(timeout)
                return Response(raw.status, _json(raw.data), raw.headers or {})
            except ApiException as exc:
                status = int(exc.status or 0)
                resp = Response(status, _json(exc.body), exc.headers or {})
                if status and status != 429 and status < 500:
                    return resp
                if status == 429:
                    delay = retry_after_seconds(resp.headers)
                last = f"HTTP {status} {resp.reason or exc.reason or ''}".strip()
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                last = _transport_problem(exc, timeout)
            attempt += 1
            wait = delay if delay is not None else self.policy.backoff(attempt - 1)
            # an attempt squeezed into the last moments would only time out: stop instead
            if wait + self.policy.request_timeout_s * MIN_ATTEMPT_FRACTION >= deadline.remaining():
                asked = f" (server asked to retry after {delay:g}s)" if delay is not None else ""
                raise ClusterUnreachableError(
                    f"{verb} {self.where} at {self.connection.host}: gave up after {attempt} "
                    f"attempt(s) within {self.policy.total_s:g}s; last: {last}{asked}"
                )
            log.warning("%s %s: %s; retrying in %.1fs", verb, self.where, last, wait)
            self.policy.sleep(wait)

    def _error(self, verb: str, resp: Response, *, dry_run: bool = False) -> AdvisorError:
        """The typed error for a final (non-retryable) answer."""
        attempt = f"{verb} {self.where}" + (" (dry run)" if dry_run else "")
        if resp.status == 401:
            return ForbiddenError(
                f"{attempt}: the API server at {self.connection.host} rejected the credentials "
                f"(401 Unauthorized; from {self.connection.source})"
            )
        if resp.status == 403:
            match = re.search(r"cannot (\w+) resource", resp.message)
            denied = match.group(1) if match else verb
            return ForbiddenError(
                f"forbidden: cannot {denied} configmaps/{self.name} in namespace "
                f"{self.namespace}; the {self.role_hint} bound to the advisor's ServiceAccount "
                f"must allow verbs {self.required_verbs} on configmaps with resourceNames "
                f"[{self.name}] in {self.namespace}"
            )
        details = (resp.body or {}).get("details") or {}
        if resp.status == 404 and details.get("kind") == "namespaces":
            return ClusterRejectedError(f"{attempt}: namespace {self.namespace} not found")
        text = resp.message or resp.reason or "no message"
        return ClusterRejectedError(f"{attempt}: refused with HTTP {resp.status}: {text}")


def _transport_problem(exc: Exception, timeout: float) -> str:
    import urllib3

    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return f"no answer within {timeout:.1f}s"
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return f"cannot connect ({exc.__class__.__name__}: {' '.join(str(exc).split())[-120:]})"
    return f"{exc.__class__.__name__}: {' '.join(str(exc).split())[-160:]}"

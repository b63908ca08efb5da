"""One API call with bounded retries, shared by everything that talks to the API server; and a
list read page by page, each page such a call.

Transient trouble (refused or dropped connections, timeouts, 429, 5xx) is retried with backoff
until the operation's deadline; every other answer (2xx, 4xx) is returned for the caller to judge,
because only the caller knows what a 404 or a 409 means for its object.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from advisor.cluster.config import Connection
from advisor.cluster.rest import Resource, send, wire_name
from advisor.errors import (
    AdvisorError,
    ClusterRejectedError,
    ClusterUnreachableError,
    ForbiddenError,
)
from advisor.retry import Deadline, RetryPolicy, retry_after_seconds

#: a retry is only started when at least this share of a request timeout is left
MIN_ATTEMPT_FRACTION = 0.25
#: kubectl's page size
PAGE_SIZE = 500
#: how the authorizer words its denial (the API server's forbiddenMessage): a 403 without it is
#: not about the Role but about the object (a ResourceQuota, an admission webhook's denial)
_AUTHORIZER_DENIAL = re.compile(r'User "[^"]*" cannot [^ ]+ (resource|path) "')
#: one warning of a ``Warning`` header (RFC 7234: code, agent, quoted text), as the API server
#: sends them; several arrive as several headers, which the client joins with ", "
_WARNING = re.compile(r'\d{3} [^ ]+ "((?:[^"\\]|\\.)*)"')

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

    @property
    def warnings(self) -> tuple[str, ...]:
        """The texts of the API server's ``Warning`` headers (Pod Security admission warns on a
        Job it would refuse as a pod; a dropped unknown field; a deprecated API)."""
        header = self.headers.get("Warning") or ""
        return tuple(re.sub(r"\\(.)", r"\1", match.group(1)) for match in _WARNING.finditer(header))

    @property
    def authorizer_denied(self) -> bool:
        """A 403 of the authorizer (RBAC: the Role lacks a rule), not of admission. A 403
        without a Status body came from before the API server's handlers (a proxy): the
        credentials', too."""
        if self.status != 403:
            return False
        return self.body is None or bool(_AUTHORIZER_DENIAL.search(self.message))


def parse_json(data: bytes | str | None) -> dict[str, Any] | None:
    if not data:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def request(
    connection: Connection,
    policy: RetryPolicy,
    deadline: Deadline,
    what: str,
    call: Callable[[float], Any],
) -> Response:
    """``call(timeout)`` (a ``rest.send``), retried on connection errors, timeouts, 429 and 5xx
    until ``deadline``; ``what`` ("patch deployments/web in namespace ml") names the attempt in
    logs and in the final error."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    attempt = 0
    #: when the current run of failed connections began (None: the last attempt got through)
    unreachable_since: float | None = None
    while True:
        timeout = deadline.request_timeout()
        delay: float | None = None
        started = policy.clock()
        try:
            raw = call(timeout)
            return Response(raw.status, parse_json(raw.data), raw.headers or {})
        except ApiException as exc:
            status = int(exc.status or 0)
            resp = Response(status, parse_json(exc.body), exc.headers or {})
            if status and status != 429 and status < 500:
                return resp
            if status == 429:
                delay = retry_after_seconds(resp.headers)
            last = f"HTTP {status} {resp.reason or exc.reason or ''}".strip()
            unreachable_since = None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            last = _transport_problem(exc, timeout)
            if not _cannot_connect(exc):
                unreachable_since = None
            elif unreachable_since is None:
                unreachable_since = started
        attempt += 1
        wait = delay if delay is not None else policy.backoff(attempt - 1)
        if _give_up_connecting(policy, unreachable_since, wait):
            assert unreachable_since is not None
            spent = policy.clock() - unreachable_since
            raise ClusterUnreachableError(
                f"{what} at {connection.host}: cannot reach the API server, gave up after "
                f"{attempt} attempt(s) in {spent:.1f}s; last: {last}"
            )
        # an attempt squeezed into the last moments would only time out: stop instead
        if wait + policy.request_timeout_s * MIN_ATTEMPT_FRACTION >= deadline.remaining():
            asked = f" (server asked to retry after {delay:g}s)" if delay is not None else ""
            raise ClusterUnreachableError(
                f"{what} at {connection.host}: gave up after {attempt} "
                f"attempt(s) within {policy.total_s:g}s; last: {last}{asked}"
            )
        log.warning("%s: %s; retrying in %.1fs", what, last, wait)
        policy.sleep(wait)


@dataclass(frozen=True)
class Target:
    """One object as the error messages name it: ``configmaps/x`` in a namespace, and the Role
    rule that would allow working on it (a 403 says what to add)."""

    resource_name: str
    namespace: str
    #: the rule to add, as message parts (it may name an option: ``errors.Opt``)
    rule: str | tuple[str, ...]
    #: the message for a 404 about the object itself (None: a plain refusal)
    not_found: str | None = None


def final_error(
    resp: Response, verb: str, attempt: str, connection: Connection, target: Target
) -> AdvisorError:
    """The typed error for a final (non-retryable) answer to ``attempt`` ("patch ... (dry
    run)"): 401 and the authorizer's 403 are ForbiddenError (the credentials; the Role, with
    the rule it lacks); a missing namespace and everything else ClusterRejectedError, with the
    server's own message: a 403 of admission (an exceeded ResourceQuota, an admission webhook's
    denial) is the object's refusal, which no Role rule would change."""
    if resp.status == 401:
        return ForbiddenError(
            f"{attempt}: the API server at {connection.host} rejected the credentials "
            f"(401 Unauthorized; from {connection.source})"
        )
    if resp.authorizer_denied:
        match = re.search(r"cannot (\w+) resource", resp.message)
        denied = match.group(1) if match else verb
        rule = (target.rule,) if isinstance(target.rule, str) else target.rule
        return ForbiddenError(
            f"forbidden: cannot {denied} {target.resource_name} in namespace {target.namespace}; ",
            *rule,
        )
    if namespace_missing(resp):
        return ClusterRejectedError(f"{attempt}: namespace {target.namespace} not found")
    if resp.status == 404 and target.not_found is not None:
        return ClusterRejectedError(target.not_found)
    text = resp.message or resp.reason or "no message"
    return ClusterRejectedError(f"{attempt}: refused with HTTP {resp.status}: {text}")


def list_all(
    connection: Connection,
    policy: RetryPolicy,
    deadline: Deadline,
    attempt: str,
    method: Callable[..., Any],
    *scope: Any,
    target: Target,
    page_size: int = PAGE_SIZE,
    **params: Any,
) -> list[dict[str, Any]]:
    """Every item of ``method``'s list (``rest.lister``'s; ``scope``: its namespace, if
    any), page by page as kubectl asks (``limit``/``continue``), so a namespace with thousands of
    objects costs several answers of bounded size, not one huge one. Each page is retried within
    ``deadline``; a final answer other than 200 is ``final_error`` about ``target``. Items come as
    the server sends them: without apiVersion and kind."""
    params = {key: value for key, value in params.items() if value is not None}
    found: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page = dict(params, limit=page_size, _preload_content=False)
        if token:
            page["_continue"] = token

        def call(timeout: float, page: dict[str, Any] = page) -> Any:
            return method(*scope, **page, _request_timeout=timeout)

        resp = request(connection, policy, deadline, attempt, call)
        if resp.status != 200:
            raise final_error(resp, "list", attempt, connection, target)
        body = resp.body or {}
        found += [item for item in body.get("items") or [] if isinstance(item, dict)]
        token = (body.get("metadata") or {}).get("continue") or None
        if token is None:
            return found


def with_kind(items: list[dict[str, Any]], api_version: str, kind: str) -> list[dict[str, Any]]:
    """Listed ``items`` with their ``apiVersion`` and ``kind`` put back (a list's items carry
    neither; the views and the advice's parser read them)."""
    return [{"apiVersion": api_version, "kind": kind, **item} for item in items]


def create(
    connection: Connection,
    policy: RetryPolicy,
    attempt: str,
    resource: Resource,
    *,
    namespace: str,
    body: dict[str, Any],
    **params: Any,
) -> Response:
    """POST ``body`` to ``resource`` in ``namespace`` (``params``: the create's query parameters,
    ``dry_run``, ``field_validation``), unchecked by the client, retried within one deadline; the
    answer for the caller to judge."""
    query = {wire_name(key): value for key, value in params.items()}
    return request(
        connection,
        policy,
        Deadline(policy),
        attempt,
        lambda timeout: send(
            connection.api_client,
            "POST",
            resource.path(namespace),
            query=query,
            body=body,
            timeout=timeout,
        ),
    )


def namespace_missing(resp: Response) -> bool:
    """A 404 about the namespace, not about the object."""
    details = (resp.body or {}).get("details") or {}
    return resp.status == 404 and details.get("kind") == "namespaces"


def _cannot_connect(exc: Exception) -> bool:
    """No connection was made (refused, no route, unknown host, connect timeout): unlike a
    dropped connection or a slow answer, nothing suggests a server is there at all."""
    import urllib3

    return isinstance(
        exc, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)
    )


def _give_up_connecting(policy: RetryPolicy, since: float | None, wait: float) -> bool:
    """Whether the next attempt would start after the policy's ``unreachable_s`` of failed
    connections (an interactive command's bound; the Job's policy has none)."""
    if since is None or policy.unreachable_s is None:
        return False
    return policy.clock() + wait - since >= policy.unreachable_s


def _transport_problem(exc: Exception, timeout: float) -> str:
    import urllib3

    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return f"no answer within {timeout:.1f}s"
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return f"cannot connect ({exc.__class__.__name__}: {' '.join(str(exc).split())[-120:]})"
    return f"{exc.__class__.__name__}: {' '.join(str(exc).split())[-160:]}"

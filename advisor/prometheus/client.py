"""Reading Prometheus: a thin client over the HTTP API's ``/api/v1/query`` and
``/api/v1/query_range``, with typed answers.

It speaks to anything that serves that API (Prometheus, Thanos, Mimir, Cortex,
VictoriaMetrics): a bearer token read from a file (a projected ServiceAccount token rotates, so it
is read for every request), a CA file, extra headers (``X-Scope-OrgID`` for a Mimir or Cortex
tenant), a timeout per request. Queries are POSTed as a form, so a long query with many pod
names never meets a URL length limit.

Transient trouble (refused or dropped connections, timeouts, 429, 5xx) is retried with backoff
under the same ``RetryPolicy`` the API server's calls use; everything else ends the call at once.
Whole answers only: every query asks for no partial response (``partial_response=false``, which
Thanos reads), and an answer that says it is not whole (Thanos' or Prometheus' ``warnings``,
VictoriaMetrics' ``isPartial``) is no answer; Prometheus' own notes on the query in ``warnings``
(``PromQL info: ...``, ``PromQL warning: ...``) are not about its wholeness and only logged at
debug level.

Two kinds of error. ``QueryFailed`` is this one query's: Prometheus refused it (``QueryRefused``:
400, 422, a bad query, a range too long), answered part of it (``PartialAnswer``), or gave no
answer in time while the connection was made (``QueryTimedOut``, also Prometheus' own 503
``timeout``), so other queries may still be asked. ``PrometheusUnavailable`` is everything that
makes every query fail (cannot connect, 401/403, 5xx past the retries, an answer that is not the
Prometheus API).
"""

from __future__ import annotations

import dataclasses
import errno
import http.client
import json
import logging
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from advisor.models.kube import mapping
from advisor.prometheus.promql import Matcher
from advisor.retry import Deadline, RetryPolicy, retry_after_seconds

log = logging.getLogger(__name__)
#: characters of an error body quoted in a message
QUOTED = 160
#: asked with every query: Thanos answers an error rather than part of the stores' data
WHOLE = {"partial_response": "false"}


class PrometheusError(Exception):
    """A query that got no answer; the message says why in one line."""


class QueryFailed(PrometheusError):
    """This one query got no whole answer: others may still be answered."""


class QueryRefused(QueryFailed):
    """Prometheus refused this query (HTTP 400 or 422)."""


class PartialAnswer(QueryFailed):
    """The answer says it is partial (``warnings``, ``isPartial``): a store or a shard missing."""


class QueryTimedOut(QueryFailed):
    """The query was sent and no answer came in time (a heavy query, or a stalled server: the
    caller tells them apart by what else was answered)."""


class PrometheusUnavailable(PrometheusError):
    """No query will be answered: unreachable, not authorized, failing or not Prometheus."""


@dataclass(frozen=True)
class Settings:
    """Where Prometheus is and how to authenticate; ``timeout_s`` bounds one request."""

    url: str
    token_file: Path | None = None
    ca_file: Path | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 10.0
    #: label matchers added to every selector the advisor writes (``--prometheus-selector``)
    scope: tuple[Matcher, ...] = ()


@dataclass(frozen=True)
class Sample:
    """One series of an instant query's answer: its labels and its value."""

    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class Series:
    """One series of a range query's answer: its labels and (unix seconds, value) points."""

    labels: Mapping[str, str]
    #: as answered, NaN and infinities too (``advisor.consumers.production_windows.finite``
    #: leaves them out, the one place that does)
    points: tuple[tuple[float, float], ...]


#: sends one request with a timeout, answers (status, body, headers); raises OSError
Transport = Callable[[urllib.request.Request, float], tuple[int, bytes, Mapping[str, str]]]


class PrometheusClient:
    """Instant and range queries against one Prometheus, each retried under ``policy``."""

    def __init__(self, settings: Settings, policy: RetryPolicy | None = None) -> None:
        self.settings = settings
        base = policy or RetryPolicy.interactive(total_s=settings.timeout_s * 3)
        self.policy = dataclasses.replace(base, request_timeout_s=settings.timeout_s)
        self._transport: Transport = _Urllib(settings.ca_file)

    @property
    def where(self) -> str:
        return self.settings.url

    def query(self, expr: str, at: datetime) -> list[Sample]:
        """``expr`` evaluated at ``at``: a vector (a scalar answer is one sample, no labels)."""
        data = self._call("query", {"query": expr, "time": _unix(at), **WHOLE})
        kind, result = data.get("resultType"), data.get("result")
        if kind == "scalar":
            return [Sample({}, _number(result))]
        if kind != "vector" or not isinstance(result, list):
            raise PrometheusUnavailable(f"{self.where}: answered a {kind} for an instant query")
        return [Sample(_labels(item), _number(mapping(item).get("value"))) for item in result]

    def query_range(self, expr: str, start: datetime, end: datetime, step_s: float) -> list[Series]:
        """``expr`` evaluated every ``step_s`` from ``start`` to ``end``: a matrix."""
        params = {
            "query": expr,
            "start": _unix(start),
            "end": _unix(end),
            "step": f"{max(1.0, step_s):g}",
            **WHOLE,
        }
        data = self._call("query_range", params)
        result = data.get("result")
        if data.get("resultType") != "matrix" or not isinstance(result, list):
            raise PrometheusUnavailable(f"{self.where}: answered no matrix for a range query")
        return [
            Series(
                _labels(item),
                tuple(
                    (float(_pair(point)[0]), _number(point))
                    for point in mapping(item).get("values") or []
                ),
            )
            for item in result
        ]

    def _call(self, endpoint: str, params: dict[str, str]) -> dict[str, Any]:
        """The ``data`` of a successful answer to ``endpoint``, retried under the policy."""
        request = self._request(endpoint, params)
        deadline = Deadline(self.policy)
        attempt = 0
        unreachable_since: float | None = None
        while True:
            timeout = deadline.request_timeout()
            started = self.policy.clock()
            wait: float | None = None
            timed_out = False
            try:
                status, body, headers = self._transport(request, timeout)
            except TimeoutError:
                last, unreachable_since = f"no answer within {timeout:.1f}s", None
                timed_out = True
            except OSError as exc:
                last = _transport_problem(exc)
                if not _cannot_connect(exc):
                    unreachable_since = None
                elif unreachable_since is None:
                    unreachable_since = started
            else:
                if status < 400:
                    return self._data(body)
                # Prometheus' own query timeout (503 "timeout"): the same query would time out
                # again
                if (status != 429 and status < 500) or _error_type(body) == "timeout":
                    raise self._refusal(status, body)
                last, unreachable_since = f"HTTP {status}: {_error_text(body)}", None
                if status == 429:
                    wait = retry_after_seconds(headers)
            attempt += 1
            wait = self.policy.backoff(attempt - 1) if wait is None else wait
            if self._gave_up_connecting(unreachable_since, wait):
                raise PrometheusUnavailable(
                    f"cannot reach Prometheus at {self.where} (gave up after {attempt} "
                    f"attempt(s); last: {last})"
                )
            if wait + timeout / 4 >= deadline.remaining():
                if timed_out:
                    raise QueryTimedOut(
                        f"Prometheus at {self.where} gave no answer within "
                        f"{self.policy.total_s:g}s ({attempt} attempt(s); last: {last})"
                    )
                raise PrometheusUnavailable(
                    f"Prometheus at {self.where} gave no answer within "
                    f"{self.policy.total_s:g}s ({attempt} attempt(s); last: {last})"
                )
            log.debug("prometheus %s: %s; retrying in %.1fs", endpoint, last, wait)
            self.policy.sleep(wait)

    def _gave_up_connecting(self, since: float | None, wait: float) -> bool:
        """Whether the next attempt would start after the policy's ``unreachable_s`` of
        failed connections."""
        bound = self.policy.unreachable_s
        if since is None or bound is None:
            return False
        return self.policy.clock() + wait - since >= bound

    def _request(self, endpoint: str, params: dict[str, str]) -> urllib.request.Request:
        url = self.settings.url.rstrip("/") + "/api/v1/" + endpoint
        headers = {
            "Accept": "application/json",
            "Content-Type": "application/x-www-form-urlencoded",
            **self.settings.headers,
        }
        if self.settings.token_file is not None:
            try:
                token = self.settings.token_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise PrometheusUnavailable(
                    f"cannot read the Prometheus token file {self.settings.token_file}: "
                    f"{exc.strerror or exc}"
                ) from None
            headers["Authorization"] = f"Bearer {token}"
        data = urllib.parse.urlencode(params).encode()
        return urllib.request.Request(url, data=data, headers=headers, method="POST")

    def _data(self, body: bytes) -> dict[str, Any]:
        answer = _json(body)
        if answer is None or answer.get("status") != "success":
            raise PrometheusUnavailable(
                f"{self.where} did not answer as the Prometheus API does "
                f"({_error_text(body) or 'empty answer'})"
            )
        said_all = answer.get("warnings")
        listed = said_all if isinstance(said_all, list) else [said_all] if said_all else []
        # Prometheus also puts its PromQL notes there ("PromQL info: metric might not be a
        # counter", "PromQL warning: ..."): about the query, not a store missing
        notes = [w for w in listed if str(w).startswith("PromQL ")]
        if notes:
            log.debug("Prometheus notes on a query: %s", "; ".join(map(str, notes)))
        warnings = [w for w in listed if not str(w).startswith("PromQL ")]
        if answer.get("isPartial") is True or warnings:
            said = "; ".join(map(str, warnings))
            raise PartialAnswer(
                "Prometheus answered part of the data only"
                + (f" ({' '.join(said.split())[:QUOTED]})" if said else " (isPartial)")
            )
        return mapping(answer.get("data"))

    def _refusal(self, status: int, body: bytes) -> PrometheusError:
        text = _error_text(body)
        if status in (401, 403):
            word = "rejected the credentials" if status == 401 else "refused access"
            return PrometheusUnavailable(f"Prometheus at {self.where} {word} (HTTP {status})")
        if status in (400, 422):
            return QueryRefused(f"Prometheus refused the query (HTTP {status}): {text}")
        if status >= 500:
            return QueryTimedOut(f"Prometheus timed out the query (HTTP {status}): {text}")
        return PrometheusUnavailable(f"Prometheus at {self.where} answered HTTP {status}: {text}")


class _Urllib:
    """The real transport: urllib with the CA file's context; an HTTP error is an answer."""

    def __init__(self, ca_file: Path | None) -> None:
        self.context = ssl.create_default_context(cafile=None if ca_file is None else ca_file)

    def __call__(
        self, request: urllib.request.Request, timeout: float
    ) -> tuple[int, bytes, Mapping[str, str]]:
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self.context) as resp:
                return int(resp.status), resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read(), dict(exc.headers or {})
        except http.client.HTTPException as exc:  # a dropped or garbled answer: transient
            raise OSError(f"{exc.__class__.__name__}: {exc}") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, ssl.SSLCertVerificationError):
                # a certificate that does not verify will not verify on a retry either
                raise PrometheusUnavailable(
                    f"Prometheus at {request.full_url.split('/api/v1/')[0]}: TLS certificate "
                    f"not trusted ({reason.verify_message}; --prometheus-ca-file names the CA)"
                ) from None
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise TimeoutError(str(reason)) from None
            if isinstance(reason, OSError):
                raise reason from None
            raise OSError(str(reason)) from None


def _cannot_connect(exc: OSError) -> bool:
    """No connection was made (refused, no route, unknown host): unlike a dropped connection,
    nothing suggests a server is there at all."""
    unreachable = (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH)
    return isinstance(exc, socket.gaierror) or exc.errno in unreachable


def _transport_problem(exc: OSError) -> str:
    text = " ".join(str(exc).split())[-QUOTED:]
    return f"cannot connect ({exc.__class__.__name__}: {text})"


def _json(body: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _error_text(body: bytes) -> str:
    """Prometheus's ``error`` field, else the start of the body, on one line."""
    answer = _json(body)
    if answer is not None and isinstance(answer.get("error"), str):
        text = answer["error"]
    else:
        text = body.decode("utf-8", "replace")
    return " ".join(text.split())[:QUOTED]


def _error_type(body: bytes) -> str | None:
    answer = _json(body)
    kind = None if answer is None else answer.get("errorType")
    return kind if isinstance(kind, str) else None


def _labels(item: Any) -> dict[str, str]:
    metric = mapping(mapping(item).get("metric"))
    return {str(key): str(value) for key, value in metric.items()}


def _pair(point: Any) -> list[Any]:
    if not isinstance(point, list) or len(point) != 2:
        raise PrometheusUnavailable(f"a sample is not [time, value]: {str(point)[:QUOTED]}")
    return point


def _number(point: Any) -> float:
    """The value of a ``[time, "value"]`` pair (Prometheus sends values as strings)."""
    try:
        return float(_pair(point)[1])
    except (TypeError, ValueError):
        raise PrometheusUnavailable(f"a sample's value is no number: {point!r:.80}") from None


def _unix(when: datetime) -> str:
    return f"{when.timestamp():.3f}"

"""A request as the fake API server received and recorded it (tests assert on them), and the
checks every request gets before its resource's handler sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from testkit.fakeapi.errors import ApiError

#: the query parameters the advisor's requests may carry; any other is 400, as strict as a server
ALLOWED_QUERY = {
    "dryRun",
    "fieldManager",
    "force",
    "pretty",
    "fieldValidation",
    "labelSelector",
    "fieldSelector",
    "limit",
    "continue",
    "propagationPolicy",
    "gracePeriodSeconds",
}


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    content_type: str | None
    body: Any
    status: int | None = None
    accept: str | None = None


def check_query(request: Recorded) -> None:
    unknown = set(request.query) - ALLOWED_QUERY
    if unknown:
        raise ApiError(400, "BadRequest", f"unknown query parameters: {sorted(unknown)}")
    dry_run = request.query.get("dryRun")
    if dry_run not in (None, "All"):
        raise ApiError(400, "BadRequest", f'dryRun: Unsupported value: "{dry_run}"')


def require_json(request: Recorded) -> None:
    # no Content-Type is JSON, the server's first media type (the official client sends none)
    if request.content_type not in (None, "application/json"):
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format: {request.content_type}",
        )

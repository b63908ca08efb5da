"""The one RFC 3339 time format: what the advisor writes (its annotations, its Events, the
``status`` report) and how it reads a time back, its own or the API server's.

Written times are UTC to the second with a ``Z`` (``2026-11-21T08:00:00Z``): the form the API
server writes and ``kubectl`` shows, and one a shell's ``date -d`` reads.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any


def timestamp(when: datetime) -> str:
    """``when`` in UTC, RFC 3339 to the second (``2026-11-21T08:00:00Z``)."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> datetime | None:
    """An RFC 3339 time as the advisor writes it (``Z`` or an offset); None otherwise, also for
    one without a zone (the advisor never writes that, so it is not one of ours)."""
    when = _parse(text)
    return when if when is not None and when.tzinfo is not None else None


def kube_time(value: Any) -> datetime | None:
    """A time as the API server writes it (``creationTimestamp``, a container's ``startedAt``)
    as an aware datetime (one without a zone is UTC, as the API server means it); None for
    anything else."""
    when = _parse(value) if isinstance(value, str) else None
    if when is None:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _parse(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None

"""Times as the API server writes them (``creationTimestamp``, a container's ``startedAt``)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any


def kube_time(value: Any) -> datetime | None:
    """An RFC 3339 time as an aware datetime (one without a zone is UTC, as the API server
    means it); None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)

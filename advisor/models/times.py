"""The one RFC 3339 time format: what the advisor writes (its annotations, its Events, the
``status`` report) and how it reads a time back, its own or the API server's; and the one
duration format, as the flags take it (``1d12h``) and the outputs show an age (``3d4h``), with the
few other ways a span is worded, each for what it is (``duration_text``).

Written times are UTC to the second with a ``Z`` (``2026-11-21T08:00:00Z``): the form the API
server writes and ``kubectl`` shows, and one a shell's ``date -d`` reads.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any, Literal


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


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> timedelta:
    """``90s``, ``45m``, ``12h``, ``30d``, ``2w`` or combinations (``1d12h``); ValueError else."""
    compact = text.strip().lower()
    parts = _DURATION.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ValueError("must be a duration like 90m, 12h, 30d or 1d12h")
    seconds = sum(float(n) * _UNIT_S[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError("must be longer than zero")
    return timedelta(seconds=seconds)


#: how a span of time is worded, by what it is:
#: - ``age``: kubectl's, the largest unit or two (``3d4h``, ``25m``, ``40s``): an age, a default
#: - ``hours``: to a tenth of an hour (``3.2 h``): spans a reason compares (production's windows)
#: - ``flag``: in hours as ``--window`` takes them (``24h``, ``1.5h``)
#: - ``days``: from a day up in days (``1.5 days``), else in hours (``20.0 hours``): how old an
#:   advice is beside the maximum age
DurationWording = Literal["age", "hours", "flag", "days"]


def duration_text(span: timedelta, wording: DurationWording = "age") -> str:
    """``span`` in words, the ``wording`` way (``DurationWording``)."""
    hours = span.total_seconds() / 3600
    if wording == "hours":
        return f"{hours:.1f} h"
    if wording == "flag":
        return f"{hours:g}h"
    if wording == "days":
        days = span.total_seconds() / 86400
        return f"{days:.1f} days" if days >= 1 else f"{hours:.1f} hours"
    return format_age(span)


def format_age(age: timedelta) -> str:
    """kubectl's style: the largest unit or two (``3d4h``, ``25m``, ``40s``)."""
    seconds = max(0, int(age.total_seconds()))
    for unit, size, smaller, small_size in (
        ("d", 86400, "h", 3600),
        ("h", 3600, "m", 60),
        ("m", 60, "s", 1),
    ):
        if seconds >= size:
            whole, rest = divmod(seconds, size)
            tail = rest // small_size if whole < 10 else 0
            return f"{whole}{unit}" + (f"{tail}{smaller}" if tail else "")
    return f"{seconds}s"

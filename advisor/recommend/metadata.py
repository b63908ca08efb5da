"""What names the advice's ConfigMap and what its metadata carries: its default name, the rule
for extra annotations (its keys are ``advisor.keys``), the API server's size limit on them, and
the one time format they are written in.
"""

from __future__ import annotations

from datetime import datetime, timezone

from advisor.keys import PREFIX
from advisor.kubenames import qualified_key_problem

#: the ConfigMap name when none is given (also the name deploy/rbac.yaml allows)
DEFAULT_CONFIGMAP_NAME = "tf-thread-advice"

#: the API server refuses an object whose annotations together exceed this many bytes
ANNOTATIONS_LIMIT_BYTES = 256 * 1024


def annotation_key_problem(key: str) -> str | None:
    """Why ``key`` cannot be an extra annotation of the advice ConfigMap, or None when it can.
    Our own prefix is refused: those annotations carry the provenance and the content hash."""
    if key.startswith(PREFIX):
        return f"annotation keys under {PREFIX} are the advisor's own"
    return qualified_key_problem(key, "annotation")


def timestamp(when: datetime) -> str:
    """``when`` in UTC, RFC 3339 to the second (``2026-11-21T08:00:00Z``)."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> datetime | None:
    """An RFC 3339 UTC time as written by ``timestamp`` (``Z`` or an offset); None otherwise."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None
